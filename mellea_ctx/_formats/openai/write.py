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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..._core import parts as pt
from ..._core.checks import require_bool
from ..._core.components import Component, ToolCall
from ..._core.exceptions import InvalidComponentError
from ..notes import carried_keys, note, report_losses, writable
from .read import REASONING_KEYS

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


#: With ``extensions=False``, the only keys carried from ``extra``, by element: what OpenAI's
#: own API defines (its SDK's request types) beyond the fields written from the component,
#: and, for an object nested under one of them, the keys that object takes.
DEFINED: Final = {
    "part": frozenset({"prompt_cache_breakpoint", "image_url", "input_audio", "file"}),
    "call": frozenset({"function"}),
    "result": frozenset(),
    "message": frozenset({"audio", "function_call"}),
}
_DEFINED_INNER: Final = {
    "image_url": frozenset({"url", "detail"}),
    "input_audio": frozenset({"data", "format"}),
    "file": frozenset({"file_data", "file_id", "filename"}),
    "function": frozenset({"name", "arguments"}),
}


class _Keys:
    """Which keys of ``extra`` a write carries: a compatible server's too, or OpenAI's only."""

    __slots__ = ("extensions",)

    def __init__(self, extensions: bool) -> None:
        self.extensions = extensions

    def carried(self, extra: Any, element: str, where: str, lost: list[str]) -> dict[str, Any]:
        if self.extensions:
            return carried_keys(extra, where, lost, refused=REFUSED[element])
        return carried_keys(extra, where, lost, allowed=DEFINED[element])

    def inner(
        self, extra: dict[str, Any], key: str, fields: dict[str, Any], where: str, lost: list[str]
    ) -> dict[str, Any]:
        """The object under ``key``: the component's ``fields``, then what ``extra`` adds."""
        inner = {name: value for name, value in fields.items() if value is not None}
        for name, value in (extra.pop(key, None) or {}).items():
            if self.extensions or name in _DEFINED_INNER[key]:
                inner[name] = value
            else:
                lost.append(f"{where}: the key {key}.{name!r} (the target API does not define it)")
        return inner


def _file(
    part: pt.DocumentPart, extra: dict[str, Any], keys: _Keys, where: str, lost: list[str]
) -> dict[str, Any] | None:
    data = part.data
    if data is not None and part.media_type is not None and note(part.extra, "file_data") != "raw":
        data = f"data:{part.media_type};base64,{data}"
    if data is None and part.file_id is None:
        return None
    fields = {"file_data": data, "file_id": part.file_id, "filename": part.name}
    return {"type": "file", "file": keys.inner(extra, "file", fields, where, lost), **extra}


def _image_url(
    part: pt.ImagePart, extra: dict[str, Any], keys: _Keys, where: str, lost: list[str]
) -> dict[str, Any] | None:
    """An ``image_url`` part, by url or data URI; an image given only by file id is lost."""
    url = part.url if part.url is not None else part.data_uri
    if url is None:
        lost.append(f"{where}: an image given only by file id {part.file_id!r}")
        return None
    inner = keys.inner(extra, "image_url", {"url": url, "detail": part.detail}, where, lost)
    return {"type": "image_url", "image_url": inner, **extra}


def _input_audio(
    part: pt.AudioPart, extra: dict[str, Any], keys: _Keys, where: str, lost: list[str]
) -> dict[str, Any] | None:
    """An ``input_audio`` part; audio given only by id is lost."""
    if part.data is None:
        lost.append(f"{where}: an audio part given only by id {part.id!r}")
        return None
    fields = {"data": part.data, "format": part.format}
    inner = keys.inner(extra, "input_audio", fields, where, lost)
    return {"type": "input_audio", "input_audio": inner, **extra}


def _opaque(part: pt.OpaquePart, keys: _Keys, where: str, lost: list[str]) -> dict[str, Any] | None:
    """A Chat block we do not model, as it was read (with extensions); any other is lost."""
    if part.provider == "openai" and keys.extensions:
        return pt.thaw_json(part.block)  # type: ignore[no-any-return]
    lost.append(f"{where}: an opaque {part.provider} block of type {part.type!r}")
    return None


def _document(
    part: pt.DocumentPart, extra: dict[str, Any], keys: _Keys, where: str, lost: list[str]
) -> dict[str, Any] | None:
    """A ``file`` part; a document with neither data nor a file id is lost."""
    block = _file(part, extra, keys, where, lost)
    if block is None:
        lost.append(
            f"{where}: a document with no data or file id (Chat Completions has no "
            "text or URL documents)"
        )
    return block


def part_dict(part: pt.Part, where: str, lost: list[str], keys: _Keys) -> dict[str, Any] | None:
    """Return the content part for ``part``, or ``None`` (noted in ``lost``) when it has none."""
    if isinstance(part, pt.OpaquePart):  # verbatim, or lost: it has no extra of its own
        return _opaque(part, keys, where, lost)
    extra = keys.carried(part.extra, "part", where, lost)
    match part:
        case pt.TextPart():
            return {"type": "text", "text": part.text, **extra}
        case pt.RefusalPart():
            return {"type": "refusal", "refusal": part.text, **extra}
        case pt.ImagePart():
            return _image_url(part, extra, keys, where, lost)
        case pt.AudioPart():
            return _input_audio(part, extra, keys, where, lost)
        case pt.DocumentPart():
            return _document(part, extra, keys, where, lost)
        case pt.ThinkingPart() | pt.RedactedThinkingPart():
            kind = "redacted thinking" if isinstance(part, pt.RedactedThinkingPart) else "thinking"
            lost.append(f"{where}: a {kind} part from {part.provider!r}")
            return None
        case _:
            pt.assert_never(part)


#: The content part types each role takes, where not every type (the SDK's
#: ``ChatCompletionToolMessageParam`` and its siblings); a user message takes all.
_PART_TYPES: Final = {
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "tool": frozenset({"text"}),
    "assistant": frozenset({"text", "refusal"}),
}


def _call(call: ToolCall, where: str, lost: list[str], keys: _Keys) -> dict[str, Any]:
    extra = keys.carried(call.extra, "call", where, lost)
    fields = {"name": call.name, "arguments": call.arguments}
    function = keys.inner(extra, "function", fields, where, lost)
    out: dict[str, Any] = {"id": call.id}
    if note(call.extra, "type") != "absent":
        out["type"] = "function"
    out["function"] = function
    return {**out, **extra}


def _side_keys(
    parts: tuple[pt.Part, ...], structured: bool, where: str, lost: list[str], policy: _Keys
) -> Any:
    """Split ``parts``: content parts, and message keys (``reasoning_content``, ``refusal``)."""
    content: list[pt.Part] = []
    keys: dict[str, str] = {}
    for part in parts:
        if isinstance(part, pt.ThinkingPart) and part.provider == "openai" and policy.extensions:
            key = note(part.extra, "key")
            keys[key if key in REASONING_KEYS else "reasoning_content"] = part.text
        elif isinstance(part, (pt.ThinkingPart, pt.RedactedThinkingPart)):
            part_dict(part, where, lost, policy)  # reports it
        elif isinstance(part, pt.RefusalPart) and (
            note(part.extra, "key") == "refusal" or not structured
        ):
            keys["refusal"] = part.text
        else:
            content.append(part)
    return content, keys


def _message_dict(component: Component, index: int, lost: list[str], keys: _Keys) -> dict[str, Any]:
    writable(component, index)
    _check_tool_role(component, index)
    role = component.role
    call_id = component.tool_call_id
    where = f"component {index}"
    parts, side = _side_keys(component.parts, component.structured, where, lost, keys)
    extra = keys.carried(component.extra, "message" if call_id is None else "result", where, lost)
    message: dict[str, Any] = {"role": role}
    message.update(_content(component, parts, bool(side), extra, where, lost, keys))
    message.update(_name(component, where, lost, keys))
    if component.tool_calls:
        message["tool_calls"] = [_call(call, where, lost, keys) for call in component.tool_calls]
    if call_id is not None:
        message["tool_call_id"] = call_id
    if component.is_error:
        lost.append(f"{where}: the is_error flag of the result for {call_id!r}")
    message.update(side)
    message.update(extra)
    return message


def _check_tool_role(component: Component, index: int) -> None:
    """A tool result has role ``tool`` and the id of its call; other components neither."""
    role = component.role
    call_id = component.tool_call_id
    if (role == "tool") != (call_id is not None):
        msg = (
            f"component {index}: role={role!r} with tool_call_id={call_id!r}; a tool result "
            "needs both role 'tool' and the id of its call, other components neither"
        )
        raise InvalidComponentError(msg)


def _is_plain(component: Component, parts: Sequence[pt.Part]) -> bool:
    """Whether the content is written as a string: a plain message of at most one bare text."""
    if component.structured:
        return False
    return not parts or (len(parts) == 1 and type(parts[0]) is pt.TextPart and not parts[0].extra)


def _content(
    component: Component,
    parts: Sequence[pt.Part],
    side: bool,
    extra: Mapping[str, Any],
    where: str,
    lost: list[str],
    keys: _Keys,
) -> dict[str, Any]:
    """The message's ``content`` (``{}``: none, as it was read): its parts, its one text,
    or for no text ``""``, or ``None`` where an assistant's calls or side keys allow it."""
    if not _is_plain(component, parts):
        return {"content": _content_parts(component.role, parts, where, lost, keys)}
    if parts:
        (text,) = parts
        assert type(text) is pt.TextPart  # what _is_plain allows
        return {"content": text.text}
    if note(component.extra, "content") == "absent":
        return {}
    may_be_null = component.role == "assistant" and (
        component.tool_calls or side or {"audio", "function_call"} & set(extra)
    )
    return {"content": None if may_be_null else ""}


def _content_parts(
    role: str, parts: Sequence[pt.Part], where: str, lost: list[str], keys: _Keys
) -> list[dict[str, Any]]:
    """The content parts of ``parts`` that a ``role`` message takes (the others reported)."""
    written = [(part, part_dict(part, where, lost, keys)) for part in parts]
    pairs = [(part, block) for part, block in written if block is not None]
    takes = _PART_TYPES.get(role)
    if takes is not None:  # e.g. an image in a tool result: Chat takes only text there
        pairs = _taken(pairs, takes, role, where, lost, keys)
    return [block for _, block in pairs]


def _taken(
    pairs: list[tuple[pt.Part, dict[str, Any]]],
    takes: frozenset[str],
    role: str,
    where: str,
    lost: list[str],
    keys: _Keys,
) -> list[tuple[pt.Part, dict[str, Any]]]:
    """The ``(part, block)`` pairs whose type ``takes`` has; the others reported."""
    # A block read from a Chat file is that file's own: it goes back as it came.
    allowed = [
        (part, block)
        for part, block in pairs
        if block.get("type") in takes
        or (isinstance(part, pt.OpaquePart) and part.provider == "openai" and keys.extensions)
    ]
    for part, block in pairs:
        if (part, block) not in allowed:
            lost.append(f"{where}: a {block.get('type')!r} part (a {role} message takes none)")
    return allowed


def _name(component: Component, where: str, lost: list[str], keys: _Keys) -> dict[str, Any]:
    """The message's ``name``; a result's only when read from a server that sends one."""
    if component.name is None:
        return {}
    read_with_name = note(component.extra, "name")
    if component.tool_call_id is None or (read_with_name and keys.extensions):
        return {"name": component.name}
    if read_with_name:
        lost.append(f"{where}: the name of the result (a Chat tool message takes none)")
    return {}


def to_openai(
    components: Iterable[Component], *, lost: list[str] | None = None, extensions: bool = True
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

    Many servers speak Chat Completions, some with keys of their own:
    DeepSeek, Kimi and vLLM send ``reasoning_content`` (DeepSeek and Kimi
    refuse a tool loop continued without it), streamed tool calls carry an
    ``index``. These are written as they were read, for the server that sent
    them. ``extensions=False`` writes only what OpenAI's own API defines (its
    SDK's request types) and reports the rest: a request for OpenAI itself,
    or for a server that refuses unknown keys (Mistral answers 422
    ``extra_forbidden`` to ``reasoning_content``).

    Args:
        components: The components, oldest first (a ``ChatContext`` works).
        lost: A list to receive one line per thing that could not be written.
        extensions: Whether keys that only compatible servers define are written.

    Returns:
        New dicts, ready for ``json.dumps`` or an SDK's ``messages=``.

    Raises:
        InvalidComponentError: For an item that is not a ``Component``, or one
            whose ``role`` is ``"tool"`` without a ``tool_call_id`` (or the
            other way round).
        InvalidArgumentError: For an ``extensions`` that is not True or False.

    Examples:
        >>> from mellea_ctx import CBlock, ModelOutputThunk
        >>> to_openai([CBlock("Hi"), ModelOutputThunk("Hello!")])
        [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello!'}]
    """
    if extensions is not True and extensions is not False:
        require_bool("to_openai", "extensions", extensions)
    found: list[str] = []
    keys = _Keys(extensions)
    out = [
        _message_dict(component, index, found, keys) for index, component in enumerate(components)
    ]
    report_losses(lost, found, "to_openai")
    return out
