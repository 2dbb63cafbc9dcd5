"""Anthropic Messages API turns in and out.

The Messages API differs from Chat Completions in four ways that matter here:
the system prompt travels apart from the messages; roles must alternate
between ``user`` and ``assistant``; a tool call is a ``tool_use`` block inside
the assistant's content; and its result is a ``tool_result`` block inside the
next user message, before any text. :func:`to_anthropic` produces that shape
(merging consecutive same-role messages, as the API requires) and
:func:`from_anthropic` reads it back into components.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._core.components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from .._core.exceptions import InvalidArgumentError, InvalidContextError
from .._core.reprs import short_repr

__all__ = [
    "anthropic_document",
    "from_anthropic",
    "read_turns",
    "to_anthropic",
    "tool_references_text",
]

_DATA_URI = re.compile(r"^data:(?P<media>[\w/+.-]+);base64,(?P<data>.*)$", re.S)


def _image_block(image: str) -> dict[str, Any]:
    match = _DATA_URI.match(image)
    if match:
        source = {"type": "base64", "media_type": match["media"], "data": match["data"]}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": image}}


def _tool_input(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    # tool_use.input must be an object; keep what the model wrote, unparsed.
    return {"arguments": call.arguments}


def tool_references_text(names: Iterable[str]) -> str:
    """Return a tool result that loads deferred tools: JSON ``tool_reference`` blocks.

    :func:`to_anthropic` sends such a result as the blocks themselves, which
    is how a client-side tool search answers on Anthropic; every other
    result stays text.

    Examples:
        >>> tool_references_text(["read_file"])
        '[{"type": "tool_reference", "tool_name": "read_file"}]'
    """
    return json.dumps([{"type": "tool_reference", "tool_name": name} for name in names])


def _tool_references(content: str) -> list[dict[str, Any]] | None:
    """Return the blocks of a :func:`tool_references_text` result, else ``None``."""
    if not content.startswith('[{"type": "tool_reference"'):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    if isinstance(value, list) and all(
        isinstance(block, dict)
        and set(block) == {"type", "tool_name"}
        and block["type"] == "tool_reference"
        and isinstance(block["tool_name"], str)
        for block in value
    ):
        return value
    return None


def _blocks(component: Component) -> tuple[str, list[dict[str, Any]]]:
    """Return the Anthropic role and content blocks for one component."""
    call_id = component.tool_call_id
    if call_id is not None:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
        block["content"] = _tool_references(component.content) or component.content
        return "user", [block]
    blocks: list[dict[str, Any]] = []
    if component.role == "system":
        blocks.append({"type": "text", "text": f"[system] {component.content}"})
        return "user", blocks
    if component.content:
        blocks.append({"type": "text", "text": component.content})
    blocks += [_image_block(image) for image in component.images]
    for call in component.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)}
        )
    role = "assistant" if component.role == "assistant" else "user"
    return role, blocks


def to_anthropic(components: Iterable[Component]) -> tuple[str | None, list[dict[str, Any]]]:
    """Return ``(system, messages)`` for the Messages API.

    The leading system messages become ``system`` (joined by blank lines); a
    system message later in the history has no place in this API and is sent
    as user text marked ``[system]``. Consecutive messages of one role are
    merged, tool results first, and a history that starts with the assistant
    gets a short user turn in front, since the API wants user first.

    Examples:
        >>> from mellea_ctx import Message, ToolCall, ToolMessage
        >>> system, messages = to_anthropic([
        ...     Message("system", "Be brief."),
        ...     Message("user", "List files."),
        ...     Message("assistant", "", tool_calls=[ToolCall("t1", "ls", {"path": "."})]),
        ...     ToolMessage("a.py", tool_call_id="t1"),
        ... ])
        >>> system, [m["role"] for m in messages], messages[2]["content"][0]["type"]
        ('Be brief.', ['user', 'assistant', 'user'], 'tool_result')
    """
    items = list(components)
    leading = 0
    while leading < len(items) and items[leading].role == "system":
        leading += 1
    system = "\n\n".join(c.content for c in items[:leading]) or None
    messages: list[dict[str, Any]] = []
    for component in items[leading:]:
        role, blocks = _blocks(component)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            merged = messages[-1]["content"] + blocks
            # tool_result blocks must open a user message
            merged.sort(key=lambda block: block["type"] != "tool_result")
            messages[-1]["content"] = merged
        else:
            messages.append({"role": role, "content": blocks})
    if messages and messages[0]["role"] == "assistant":
        opener = {"type": "text", "text": "(earlier conversation)"}
        messages.insert(0, {"role": "user", "content": [opener]})
    return system, messages


def _short(value: object, limit: int = 80) -> str:
    """Return ``repr(value)``, cut to ``limit`` characters so an error stays one line."""
    return short_repr(value, limit)


def _result_text(content: Any, where: str) -> str:
    """Return a ``tool_result`` block's content as text (text blocks joined with newlines)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        names = [
            block["tool_name"]
            for block in content
            if isinstance(block, Mapping)
            and block.get("type") == "tool_reference"
            and isinstance(block.get("tool_name"), str)
        ]
        if names and len(names) == len(content):
            return tool_references_text(names)
        texts: list[str] = []
        for index, block in enumerate(content):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind != "text" or not isinstance(block.get("text"), str):
                msg = (
                    f"{where}: content[{index}]={_short(block)} is not a text block; "
                    "a tool result here holds a string or a list of text blocks"
                )
                raise InvalidContextError(msg)
            texts.append(block["text"])
        return "\n".join(texts)
    msg = f"{where}: content={_short(content)} must be a string or a list of text blocks"
    raise InvalidContextError(msg)


def _image_url(block: Mapping[str, Any], where: str) -> str:
    """Return the URL or data URI of an ``image`` block."""
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "url":
        url = source.get("url")
        if isinstance(url, str) and url:
            return url
    if isinstance(source, Mapping) and source.get("type") == "base64":
        media, data = source.get("media_type"), source.get("data")
        if isinstance(media, str) and isinstance(data, str) and media:
            return f"data:{media};base64,{data}"
    msg = (
        f"{where}: source={_short(source)} must be {{'type': 'url', 'url': ...}} or "
        "{'type': 'base64', 'media_type': ..., 'data': ...}"
    )
    raise InvalidContextError(msg)


def _nonempty(block: Mapping[str, Any], field: str, where: str) -> str:
    value = block.get(field)
    if isinstance(value, str) and value:
        return value
    msg = f"{where}: {field}={_short(value)} must be a non-empty string"
    raise InvalidContextError(msg)


#: Block types read and then dropped: our components have no place for them.
_DROPPED_BLOCKS = ("thinking", "redacted_thinking")


def _turn(raw: object, where: str) -> list[Component]:
    """Return the components for one Messages API turn; ``where`` prefixes errors."""
    if not isinstance(raw, Mapping):
        msg = f"{where}: {_short(raw)} is not a message; expected an object with role and content"
        raise InvalidContextError(msg)
    role, content = raw.get("role"), raw.get("content")
    if role not in ("user", "assistant"):
        fix = (
            "put the system prompt in the top-level 'system' field"
            if role == "system"
            else "use 'user' or 'assistant'"
        )
        msg = f"{where}: role={_short(role)} is not one of ('user', 'assistant'); {fix}"
        raise InvalidContextError(msg)
    if isinstance(content, str):
        return [Message(role, content)]
    if not isinstance(content, list):
        msg = f"{where}: content={_short(content)} must be a string or a list of content blocks"
        raise InvalidContextError(msg)
    out: list[Component] = []
    texts: list[str] = []
    images: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(content):
        here = f"{where}: content[{index}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if not isinstance(block, Mapping):
            msg = f"{here}: {_short(block)} is not a content block; expected an object with a type"
            raise InvalidContextError(msg)
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise InvalidContextError(f"{here}: text={_short(text)} must be a string")
            texts.append(text)
        elif kind in _DROPPED_BLOCKS:
            continue
        elif kind == "image" and role == "user":
            images.append(_image_url(block, here))
        elif kind == "tool_use" and role == "assistant":
            call_id = _nonempty(block, "id", here)
            name = _nonempty(block, "name", here)
            arguments = block.get("input", {})
            if not isinstance(arguments, Mapping):
                msg = f"{here}: input={_short(arguments)} must be an object (the tool's arguments)"
                raise InvalidContextError(msg)
            try:
                text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as exc:
                msg = f"{here}: input={_short(arguments)} is not JSON; pass the tool's arguments"
                raise InvalidContextError(msg) from exc
            calls.append(ToolCall(call_id, name, text))
        elif kind == "tool_result" and role == "user":
            call_id = _nonempty(block, "tool_use_id", here)
            result = _result_text(block.get("content", ""), here)
            out.append(ToolMessage(result, tool_call_id=call_id))
        elif kind in ("image", "tool_result", "tool_use"):
            allowed = "assistant" if kind == "tool_use" else "user"
            msg = f"{here}: a {kind} block is only allowed in {allowed} turns, not role={role!r}"
            raise InvalidContextError(msg)
        else:
            msg = (
                f"{here}: type={_short(kind)} is not supported; expected 'text', 'image', "
                "'tool_use', 'tool_result' or 'thinking'"
            )
            raise InvalidContextError(msg)
    if role == "assistant":
        if texts:
            out.append(Message("assistant", "\n\n".join(texts), tool_calls=calls))
        elif calls:
            out.append(ModelOutputThunk(None, tool_calls=calls))
    elif texts or images:
        out.append(Message("user", "\n\n".join(texts), images=images))
    return out


def _system_text(system: object, where: str) -> str | None:
    """Return the text of a top-level ``system`` field (a string or a list of text blocks)."""
    if system is None or isinstance(system, str):
        return system or None
    if isinstance(system, list) and all(
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        for block in system
    ):
        return "\n\n".join(block["text"] for block in system) or None
    msg = f"{where}: system={_short(system)} must be a string or a list of text blocks"
    raise InvalidContextError(msg)


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
        msg = f"{prefix}messages={_short(messages)} must be a list of turns".strip()
        raise InvalidContextError(msg)
    out: list[Component] = []
    text = _system_text(system, f"{source}".strip() or "system")
    if text:
        out.append(Message("system", text))
        if locations is not None:
            locations.append("system")
    for index, raw in enumerate(messages):
        label = labels[index] if labels is not None else f"message {index}"
        turn = _turn(raw, f"{prefix}{label}")
        out += turn
        if locations is not None:
            locations += [label] * len(turn)
    return out


def from_anthropic(
    messages: Sequence[Mapping[str, Any]], *, system: str | None = None
) -> list[Component]:
    """Return the components for Messages API turns (and an optional system prompt).

    A user turn becomes its tool results (:class:`~mellea_ctx.ToolMessage`,
    in block order) followed by one user :class:`~mellea_ctx.Message` with its
    text blocks (joined by a blank line) and images (``url`` sources as URLs,
    ``base64`` ones as ``data:`` URIs). An assistant turn becomes one
    ``Message`` with its text and :class:`~mellea_ctx.ToolCall` values, or a
    :class:`~mellea_ctx.ModelOutputThunk` with ``value=None`` when it has only
    tool calls. ``system`` may be a string or a list of text blocks.

    Not kept, since our components have no place for them: ``thinking`` and
    ``redacted_thinking`` blocks, the ``is_error`` flag of a tool result,
    ``cache_control`` and other extra keys, and the boundaries between text
    blocks of one turn.

    Raises:
        InvalidContextError: For a turn that is not a user or assistant
            message, or a block of an unknown type or with a bad field; the
            error names the turn, the block and the field.

    Examples:
        >>> from_anthropic([{"role": "user", "content": "hi"}], system="Be brief.")
        ... # doctest: +NORMALIZE_WHITESPACE
        [Message(role='system', content='Be brief.'), Message(role='user', content='hi')]
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        msg = f"from_anthropic: messages={_short(messages)} must be a list of turns"
        raise InvalidArgumentError(msg)
    return read_turns(list(messages), system)


def anthropic_document(components: Iterable[Component]) -> list[Any] | dict[str, Any]:
    """Return a transcript in the Messages API's shape, as a file holds it.

    The turns are :func:`to_anthropic`'s, except that a user turn of one text
    block is written as a plain string, as clients send it. Without a system
    prompt the transcript is the list of turns; with one, an object
    ``{"system": ..., "messages": [...]}``.
    """
    system, messages = to_anthropic(components)
    for message in messages:
        blocks = message["content"]
        if message["role"] == "user" and len(blocks) == 1 and blocks[0]["type"] == "text":
            message["content"] = blocks[0]["text"]
    if system is None:
        return messages
    return {"system": system, "messages": messages}
