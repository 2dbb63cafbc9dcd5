"""OpenAI Chat Completions messages out: the inverse of ``openai_read``.

Each component is written from what it tells a provider (``role``,
``parts``, ``structured``, ``name``, ``tool_calls``, ``tool_call_id``,
``extra``), so your own component classes work too. What Chat Completions
cannot hold (Anthropic thinking and redacted thinking, opaque Anthropic
blocks, a tool result's ``is_error``, a plain-text document) is left out and
reported, never dropped silently. So are the keys other providers define
that Chat Completions does not (:data:`REFUSED`: Anthropic's
``cache_control``, Responses' ``annotations``, Gemini's ``thoughtSignature``...):
the API refuses unknown fields. A key no provider defines (a compatible
server's own, such as ``reasoning_content``) is carried as it was read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from .._core.components import Component, ToolCall
from .._core.exceptions import InvalidComponentError
from .._core.parts import (
    AudioPart,
    DocumentPart,
    ImagePart,
    OpaquePart,
    Part,
    RedactedThinkingPart,
    RefusalPart,
    TextPart,
    ThinkingPart,
    thaw_json,
)
from .notes import carried_keys, note, report_losses, writable
from .openai_read import REASONING_KEYS

__all__ = ["REFUSED", "to_openai"]

_ANTHROPIC_BLOCK: Final = frozenset({"cache_control", "citations", "toolset_name", "caller"})
_GEMINI_PART: Final = frozenset(
    {"thoughtSignature", "thought", "videoMetadata", "partMetadata", "mediaResolution"}
)

#: The keys another provider defines (the Messages API, Responses, Gemini)
#: that Chat Completions does not, by element: never sent, each one reported.
REFUSED: Final = {
    "part": _ANTHROPIC_BLOCK
    | _GEMINI_PART
    | {"context", "title", "source", "transformations", "signature"}  # Anthropic
    | {"annotations", "logprobs"}  # Responses output_text
    | {"inlineData", "fileData"},  # Gemini
    "call": _ANTHROPIC_BLOCK
    | _GEMINI_PART
    | {"type", "id", "status", "namespace"}  # Responses function_call / custom_tool_call
    | {"functionCall"},  # Gemini
    "result": _ANTHROPIC_BLOCK
    | _GEMINI_PART
    | {"is_error"}  # Anthropic tool_result
    | {"type", "id", "status"}  # Responses function_call_output
    | {"functionResponse"},  # Gemini
    "message": _ANTHROPIC_BLOCK | {"type", "id", "status", "phase"},  # Responses message
}


def _inner(extra: dict[str, Any], key: str, fields: dict[str, Any]) -> dict[str, Any]:
    inner = {name: value for name, value in fields.items() if value is not None}
    inner.update(extra.pop(key, None) or {})
    return inner


def _file(part: DocumentPart, extra: dict[str, Any]) -> dict[str, Any] | None:
    data = part.data
    if data is not None and part.media_type is not None and note(part.extra, "file_data") != "raw":
        data = f"data:{part.media_type};base64,{data}"
    if data is None and part.file_id is None:
        return None
    fields = {"file_data": data, "file_id": part.file_id, "filename": part.name}
    return {"type": "file", "file": _inner(extra, "file", fields), **extra}


def part_dict(part: Part, where: str, lost: list[str]) -> dict[str, Any] | None:
    """Return the content part for ``part``, or ``None`` (noted in ``lost``) when it has none."""
    if isinstance(part, OpaquePart):
        if part.provider == "openai":
            return thaw_json(part.block)  # type: ignore[no-any-return]
        lost.append(f"{where}: an opaque {part.provider} block of type {part.type!r}")
        return None
    extra = carried_keys(part.extra, where, lost, refused=REFUSED["part"])
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text, **extra}
    if isinstance(part, RefusalPart):
        return {"type": "refusal", "refusal": part.text, **extra}
    if isinstance(part, ImagePart):
        url = part.url if part.url is not None else part.data_uri
        if url is None:
            lost.append(f"{where}: an image given only by file id {part.file_id!r}")
            return None
        inner = _inner(extra, "image_url", {"url": url, "detail": part.detail})
        return {"type": "image_url", "image_url": inner, **extra}
    if isinstance(part, AudioPart):
        if part.data is None:
            lost.append(f"{where}: an audio part given only by id {part.id!r}")
            return None
        inner = _inner(extra, "input_audio", {"data": part.data, "format": part.format})
        return {"type": "input_audio", "input_audio": inner, **extra}
    if isinstance(part, DocumentPart):
        block = _file(part, extra)
        if block is None:
            lost.append(
                f"{where}: a document with no data or file id (Chat Completions has no "
                "text or URL documents)"
            )
        return block
    kind = "redacted thinking" if isinstance(part, RedactedThinkingPart) else "thinking"
    lost.append(f"{where}: a {kind} part from {getattr(part, 'provider', None)!r}")
    return None


#: The content part types each role takes, where not every type (the SDK's
#: ``ChatCompletionToolMessageParam`` and its siblings); a user message takes all.
_PART_TYPES: Final = {
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "tool": frozenset({"text"}),
    "assistant": frozenset({"text", "refusal"}),
}


def _call(call: ToolCall, where: str, lost: list[str]) -> dict[str, Any]:
    extra = carried_keys(call.extra, where, lost, refused=REFUSED["call"])
    function = {
        "name": call.name,
        "arguments": call.arguments,
        **(extra.pop("function", None) or {}),
    }
    out: dict[str, Any] = {"id": call.id}
    if note(call.extra, "type") != "absent":
        out["type"] = "function"
    out["function"] = function
    return {**out, **extra}


def _side_keys(parts: tuple[Part, ...], structured: bool, where: str, lost: list[str]) -> Any:
    """Split ``parts``: content parts, and message keys (``reasoning_content``, ``refusal``)."""
    content: list[Part] = []
    keys: dict[str, str] = {}
    for part in parts:
        if isinstance(part, ThinkingPart) and part.provider == "openai":
            key = note(part.extra, "key")
            keys[key if key in REASONING_KEYS else "reasoning_content"] = part.text
        elif isinstance(part, (ThinkingPart, RedactedThinkingPart)):
            part_dict(part, where, lost)  # reports it
        elif isinstance(part, RefusalPart) and (
            note(part.extra, "key") == "refusal" or not structured
        ):
            keys["refusal"] = part.text
        else:
            content.append(part)
    return content, keys


def _message_dict(component: Component, index: int, lost: list[str]) -> dict[str, Any]:
    writable(component, index)
    role = component.role
    call_id = component.tool_call_id
    if (role == "tool") != (call_id is not None):
        msg = (
            f"component {index}: role={role!r} with tool_call_id={call_id!r}; a tool result "
            "needs both role 'tool' and the id of its call, other components neither"
        )
        raise InvalidComponentError(msg)
    where = f"component {index}"
    parts, keys = _side_keys(component.parts, component.structured, where, lost)
    refused = REFUSED["message" if call_id is None else "result"]
    extra = carried_keys(component.extra, where, lost, refused=refused)
    message: dict[str, Any] = {"role": role}
    plain = not component.structured and (
        not parts or (len(parts) == 1 and type(parts[0]) is TextPart and not parts[0].extra)
    )
    if not plain:
        written = [(part, part_dict(part, where, lost)) for part in parts]
        pairs = [(part, block) for part, block in written if block is not None]
        takes = _PART_TYPES.get(role)
        if takes is not None:  # e.g. an image in a tool result: Chat takes only text there
            # A block read from a Chat file is that file's own: it goes back as it came.
            allowed = [
                (part, block)
                for part, block in pairs
                if block.get("type") in takes
                or (isinstance(part, OpaquePart) and part.provider == "openai")
            ]
            for part, block in pairs:
                if (part, block) not in allowed:
                    lost.append(
                        f"{where}: a {block.get('type')!r} part (a {role} message takes none)"
                    )
            pairs = allowed
        message["content"] = [block for _, block in pairs]
    elif parts:
        message["content"] = parts[0].text
    elif note(component.extra, "content") != "absent":
        may_be_null = role == "assistant" and (
            component.tool_calls or keys or {"audio", "function_call"} & set(extra)
        )
        message["content"] = None if may_be_null else ""
    if component.name is not None and (call_id is None or note(component.extra, "name")):
        message["name"] = component.name
    if component.tool_calls:
        message["tool_calls"] = [_call(call, where, lost) for call in component.tool_calls]
    if call_id is not None:
        message["tool_call_id"] = call_id
    if component.is_error:
        lost.append(f"{where}: the is_error flag of the result for {call_id!r}")
    message.update(keys)
    message.update(extra)
    return message


def to_openai(
    components: Iterable[Component], *, lost: list[str] | None = None
) -> list[dict[str, Any]]:
    """Return OpenAI Chat Completions messages for ``components``.

    A component read by :func:`~mellea_ctx.from_openai` is written back as it
    was read: a string stays a string, a content-part array an array, unknown
    keys come back from ``extra``. Otherwise ``content`` is a string for one
    plain text, an array of parts for anything more, and ``null`` only for an
    assistant message that calls tools (or refuses): an assistant message
    with no content and no calls is written with ``""``, which OpenAI accepts
    where it rejects ``null``. A :class:`~mellea_ctx.CBlock` or
    :class:`~mellea_ctx.ReactInitiator` is a user message.

    What Chat Completions cannot hold (Anthropic thinking, opaque Anthropic
    blocks, ``is_error``, text documents, images by file id) is left out;
    each loss is appended to ``lost`` or, without it, reported in one
    :class:`~mellea_ctx.LossyConversionWarning`.

    Args:
        components: The components, oldest first (a ``ChatContext`` works).
        lost: A list to receive one line per thing that could not be written.

    Returns:
        New dicts, ready for ``json.dumps`` or an SDK's ``messages=``.

    Raises:
        InvalidComponentError: For an item that is not a ``Component``, or one
            whose ``role`` is ``"tool"`` without a ``tool_call_id`` (or the
            other way round).

    Examples:
        >>> from mellea_ctx import CBlock, ModelOutputThunk
        >>> to_openai([CBlock("Hi"), ModelOutputThunk("Hello!")])
        [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello!'}]
    """
    found: list[str] = []
    out = [_message_dict(component, index, found) for index, component in enumerate(components)]
    report_losses(lost, found, "to_openai")
    return out
