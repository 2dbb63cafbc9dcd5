"""Anthropic Messages API turns in: every block to a typed part, nothing dropped.

A user turn becomes its ``tool_result`` blocks as
:class:`~mellea_ctx.ToolMessage` values and each run of other blocks as a user
:class:`~mellea_ctx.Message`, in block order; an assistant turn becomes one
component holding its parts and its ``tool_use`` blocks as calls. Block types
we do not model (``compaction``, ``server_tool_use``, ``web_search_tool_result``,
``search_result``, ...) become :class:`~mellea_ctx.OpaquePart` values, verbatim.
Keys we do not model go to ``extra``; where a turn's shape cannot be told from
its components, a note records it (:mod:`.notes`). ``anthropic_write`` reverses
all of it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, ParamSpec, TypeVar

from ..._core.components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from ..._core.exceptions import InvalidArgumentError, InvalidComponentError, InvalidContextError
from ..._core.parts import (
    DocumentPart,
    ImagePart,
    OpaquePart,
    Part,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from ..._core.reprs import short_repr
from ..notes import with_notes
from ..reading import invalid, other_keys

P = ParamSpec("P")
R = TypeVar("R")

PROVIDER: Final = "anthropic"


def _str(block: Mapping[str, Any], field: str, where: str, *, empty: bool = True) -> str:
    value = block.get(field)
    if isinstance(value, str) and (empty or value):
        return value
    expected = "a string" if empty else "a non-empty string"
    raise invalid(where, f"{field}={short_repr(value)} must be {expected}")


def _source(block: Mapping[str, Any], kinds: Sequence[str]) -> Mapping[str, Any] | None:
    """Return the block's ``source`` when it is one of ``kinds`` with string fields."""
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") not in kinds:
        return None
    fields = {"base64": ("media_type", "data"), "url": ("url",), "file": ("file_id",)}
    fields["text"] = ("media_type", "data")
    if all(isinstance(source.get(name), str) for name in fields[source["type"]]):
        return source
    return None


def _extra(block: Mapping[str, Any], source: Mapping[str, Any], known: Sequence[str]) -> Any:
    extra = other_keys(block, "type", "source", *known)
    inner = other_keys(source, "type", "media_type", "data", "url", "file_id")
    if inner:
        extra["source"] = inner  # unmodelled keys of the source object
    return extra


def _image(block: Mapping[str, Any]) -> Part:
    source = _source(block, ("base64", "url", "file"))
    if source is None:
        return OpaquePart(PROVIDER, block)
    extra = _extra(block, source, ())
    if source["type"] == "base64":
        return ImagePart(data=source["data"], media_type=source["media_type"], extra=extra)
    if source["type"] == "url":
        return ImagePart(url=source["url"], extra=extra)
    return ImagePart(file_id=source["file_id"], extra=extra)


def _document(block: Mapping[str, Any]) -> Part:
    source = _source(block, ("base64", "text", "url", "file"))
    title = block.get("title")
    if source is None or not (title is None or (isinstance(title, str) and title)):
        return OpaquePart(PROVIDER, block)  # a content source, or a title we cannot hold
    extra = _extra(block, source, ("title",))
    name = title
    if source["type"] == "base64":
        media = source["media_type"]
        return DocumentPart(data=source["data"], media_type=media, name=name, extra=extra)
    if source["type"] == "text":
        media = source["media_type"]
        return DocumentPart(text=source["data"], media_type=media, name=name, extra=extra)
    if source["type"] == "url":
        return DocumentPart(url=source["url"], name=name, extra=extra)
    return DocumentPart(file_id=source["file_id"], name=name, extra=extra)


def read_part(block: object, where: str) -> Part:
    """Return the part for one content block that is not ``tool_use`` / ``tool_result``."""
    if not isinstance(block, Mapping):
        raise invalid(where, f"{short_repr(block)} is not a content block; expected an object")
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        raise invalid(where, f"type={short_repr(kind)} must be a block type such as 'text'")
    read = _BLOCK_READERS.get(kind)
    return read(block, where) if read is not None else OpaquePart(PROVIDER, block)


def _text(block: Mapping[str, Any], where: str) -> Part:
    return TextPart(_str(block, "text", where), extra=other_keys(block, "type", "text"))


def _thinking(block: Mapping[str, Any], where: str) -> Part:
    """A thinking block; a ``signature: null`` is kept as given."""
    text = _str(block, "thinking", where)
    signature = block.get("signature")
    if signature is not None and not isinstance(signature, str):
        raise invalid(where, f"signature={short_repr(signature)} must be a string")
    extra = other_keys(block, "type", "thinking", "signature")
    if "signature" in block and signature is None:
        extra["signature"] = None
    return ThinkingPart(text, signature=signature, provider=PROVIDER, extra=extra)


def _redacted_thinking(block: Mapping[str, Any], where: str) -> Part:
    data = _str(block, "data", where)
    return RedactedThinkingPart(data, provider=PROVIDER, extra=other_keys(block, "type", "data"))


#: The readers of the block types we model, by ``type``; any other stays opaque.
_BLOCK_READERS: Final[dict[str, Callable[[Mapping[str, Any], str], Part]]] = {
    "text": _text,
    "thinking": _thinking,
    "redacted_thinking": _redacted_thinking,
    "image": lambda block, _where: _image(block),
    "document": lambda block, _where: _document(block),
}


def _tool_call(block: Mapping[str, Any], where: str) -> ToolCall:
    call_id = _str(block, "id", where, empty=False)
    name = _str(block, "name", where, empty=False)
    arguments = block.get("input", {})
    if not isinstance(arguments, Mapping):
        raise invalid(
            where, f"input={short_repr(arguments)} must be an object (the tool's arguments)"
        )
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise invalid(where, f"input={short_repr(arguments)} is not JSON") from exc
    extra = other_keys(block, "type", "id", "name", "input")
    if "input" not in block:
        extra = with_notes(extra, input="absent")
    return ToolCall(call_id, name, text, extra=extra)


def _legacy_references(content: list[Any]) -> str | None:
    """A list of bare ``tool_reference`` blocks reads as the text ``tool_search`` writes."""
    if content and all(
        isinstance(block, Mapping)
        and set(block) == {"type", "tool_name"}
        and block["type"] == "tool_reference"
        and isinstance(block["tool_name"], str)
        for block in content
    ):
        from .write import tool_references_text

        return tool_references_text(block["tool_name"] for block in content)
    return None


def _tool_result(block: Mapping[str, Any], where: str) -> ToolMessage:
    call_id = _str(block, "tool_use_id", where, empty=False)
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        raise invalid(where, f"is_error={short_repr(is_error)} must be true or false")
    extra = other_keys(block, "type", "tool_use_id", "content", "is_error")
    if "is_error" in block and not is_error:
        extra["is_error"] = False  # written back as sent
    content = block.get("content")
    if "content" not in block:
        return ToolMessage(None, tool_call_id=call_id, is_error=is_error, extra=extra)
    if isinstance(content, str):
        parts: tuple[Part, ...] = (TextPart(content),)
        structured = False
    elif isinstance(content, list):
        legacy = _legacy_references(content)
        if legacy is not None:
            return ToolMessage(legacy, tool_call_id=call_id, is_error=is_error, extra=extra)
        parts = tuple(read_part(b, f"{where}: content[{i}]") for i, b in enumerate(content))
        structured = True
    else:
        raise invalid(where, f"content={short_repr(content)} must be a string or a list of blocks")
    return ToolMessage(
        parts, tool_call_id=call_id, is_error=is_error, extra=extra, structured=structured
    )


def _assistant(content: list[Any], where: str, extra: dict[str, Any]) -> Component:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    layout = ""
    for index, block in enumerate(content):
        here = f"{where}: content[{index}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_use":
            calls.append(_tool_call(block, here))
            layout += "t"
        elif kind == "tool_result":
            msg = "a tool_result block is only allowed in user turns, not role='assistant'"
            raise invalid(here, msg)
        else:
            parts.append(read_part(block, here))
            layout += "p"
    if "tp" in layout:  # a block after a tool_use: record the order
        extra = with_notes(extra, anthropic_blocks=layout)
    if not parts and calls:
        return ModelOutputThunk(None, tool_calls=calls, extra=extra, structured=False)
    return Message("assistant", parts, tool_calls=calls, extra=extra, structured=True)


def _user(content: list[Any], where: str) -> list[Component]:
    out: list[Component] = []
    run: list[Part] = []
    for index, block in enumerate(content):
        here = f"{where}: content[{index}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_result":
            if run:
                out.append(Message("user", run, structured=True))
                run = []
            out.append(_tool_result(block, here))
        elif kind == "tool_use":
            msg = "a tool_use block is only allowed in assistant turns, not role='user'"
            raise invalid(here, msg)
        else:
            run.append(read_part(block, here))
    if run or not out:
        out.append(Message("user", run, structured=True))
    return out


def _turn(raw: object, where: str) -> list[Component]:
    """Return the components for one Messages API turn; ``where`` prefixes errors."""
    if not isinstance(raw, Mapping):
        msg = f"{short_repr(raw)} is not a message; expected an object with role and content"
        raise invalid(where, msg)
    role, content = _turn_role(raw, where), raw.get("content")
    turn_extra = other_keys(raw, "role", "content")
    if isinstance(content, str):
        return [Message(role, content, extra=turn_extra, structured=False)]
    if not isinstance(content, list):
        msg = f"content={short_repr(content)} must be a string or a list of content blocks"
        raise invalid(where, msg)
    try:
        if role == "assistant":
            return [_assistant(content, where, turn_extra)]
        out = _user(content, where)
    except InvalidComponentError as exc:
        raise invalid(where, str(exc)) from exc
    if turn_extra:
        out[0] = _with_turn_extra(out, turn_extra)
    return out


def _turn_role(raw: Mapping[str, Any], where: str) -> Any:
    """The turn's role, which must be ``user`` or ``assistant``."""
    role = raw.get("role")
    if role not in ("user", "assistant"):
        fix = (
            "put the system prompt in the top-level 'system' field"
            if role == "system"
            else "use 'user' or 'assistant'"
        )
        raise invalid(where, f"role={short_repr(role)} is not one of ('user', 'assistant'); {fix}")
    return role


def _with_turn_extra(out: list[Component], turn_extra: dict[str, Any]) -> Component:
    """The user turn's first component, carrying the turn's other keys: as its own extra
    when the turn is one message, else as a note that writes the turn back."""
    first = out[0]
    if isinstance(first, Message) and len(out) == 1:
        return Message("user", first.parts, extra=turn_extra, structured=True)
    return _noted(first, anthropic_turn_extra=turn_extra)


def _noted(component: Component, **notes: Any) -> Component:
    """Return ``component`` with ``notes`` added to its ``extra``."""
    import attrs

    from ..notes import NOTES

    extra = dict(component.extra)
    held = dict(extra.get(NOTES, {}))
    held.update(notes)
    extra[NOTES] = held
    return attrs.evolve(component, extra=extra)  # type: ignore[call-arg]


def _system(system: object, where: str) -> Message | None:
    """Return the top-level ``system`` field as a system message (``None`` when absent)."""
    if system is None:
        return None
    if isinstance(system, str):
        return Message("system", system, structured=False)
    if isinstance(system, list):
        parts = [read_part(block, f"{where}[{index}]") for index, block in enumerate(system)]
        return Message("system", parts, structured=True)
    raise invalid(where, f"system={short_repr(system)} must be a string or a list of text blocks")


def _json_values_only(read: Callable[P, R]) -> Callable[P, R]:
    """``read``, with a non-JSON value in a kept key turned into a context error."""

    @functools.wraps(read)
    def reading(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return read(*args, **kwargs)
        except InvalidComponentError as exc:  # a key we keep verbatim holds a non-JSON value
            msg = f"{exc}; a transcript holds only JSON values"
            raise InvalidContextError(msg) from exc

    return reading


@_json_values_only
def read_turns(
    messages: object,
    system: object = None,
    *,
    source: str = "",
    locations: list[str] | None = None,
    labels: Sequence[str] | None = None,
) -> list[Component]:
    """Return the components for Messages API turns; errors start with ``source``.

    ``labels`` names each turn in errors (default ``"message N"``). When
    ``locations`` is given, it receives one entry per component: the label
    of the turn it was read from, for later error messages.
    """
    prefix = f"{source} " if source else ""
    if not isinstance(messages, list):
        msg = f"{prefix}messages={short_repr(messages)} must be a list of turns".strip()
        raise InvalidContextError(msg)
    out: list[Component] = []
    prompt = _system(system, f"{source} system".strip())
    if prompt is not None:
        out.append(prompt)
        if locations is not None:
            locations.append("system")
    previous: str | None = None
    for index, raw in enumerate(messages):
        label = labels[index] if labels is not None else f"message {index}"
        turn = _turn(raw, f"{prefix}{label}")
        role = "assistant" if turn[0].role == "assistant" else "user"
        if previous == role:  # the writer would merge it into the turn before
            turn[0] = _noted(turn[0], anthropic_turn="new")
        previous = role
        out += turn
        if locations is not None:
            locations += [label] * len(turn)
    return out


def from_anthropic(
    messages: Iterable[Mapping[str, Any]], *, system: object = None
) -> list[Component]:
    """Return the components for Messages API turns (and an optional system prompt).

    A user turn becomes its tool results (:class:`~mellea_ctx.ToolMessage`,
    with their parts, ``is_error`` and extra keys) and a user
    :class:`~mellea_ctx.Message` for each run of other blocks, in block order.
    An assistant turn becomes one ``Message`` with its parts (text, thinking
    with its signature, redacted thinking, images, documents, opaque blocks)
    and :class:`~mellea_ctx.ToolCall` values, or a
    :class:`~mellea_ctx.ModelOutputThunk` with ``value=None`` when it has only
    ``tool_use`` blocks. ``system`` may be a string or a list of blocks.
    Nothing is dropped: :func:`~mellea_ctx.to_anthropic` writes back the same
    JSON (docs/formats.md lists how each block is held).

    Args:
        messages: The ``messages`` of a Messages API request, as parsed JSON.
        system: The request's top-level ``system`` field, if any.

    Returns:
        The components, oldest first; a system prompt comes first.

    Raises:
        InvalidArgumentError: When ``messages`` is not a list of turns.
        InvalidContextError: For a turn that is not a user or assistant
            message, or a block with a bad field; the error names the turn,
            the block and the field.

    Examples:
        >>> from_anthropic([{"role": "user", "content": "hi"}], system="Be brief.")
        ... # doctest: +NORMALIZE_WHITESPACE
        [Message(role='system', content='Be brief.'), Message(role='user', content='hi')]
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        msg = f"from_anthropic: messages={short_repr(messages)} must be a list of turns"
        raise InvalidArgumentError(msg)
    return read_turns(list(messages), system)
