"""Anthropic Messages API turns out: the inverse of ``anthropic_read``.

Consecutive components of one role form one turn (tool results first), as
the API itself merges them, unless a reader noted that a new turn started
there. Parts go back as the blocks they were read from, ``extra`` keys
included; parts of other providers that the Messages API cannot hold (OpenAI
audio, refusals, ``reasoning_content`` thinking without a signature, opaque
OpenAI parts) are left out and reported, and tool ids outside
``^[a-zA-Z0-9_-]+$`` are mapped to valid ones, the same way every time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from ..._core import parts as pt
from ..._core.components import Component, ModelOutputThunk, ToolCall, ToolMessage
from ..notes import carried_keys, note, report_losses, writable

#: The pattern Anthropic requires of ``tool_use`` ids.
TOOL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]+$")
_SYSTEM_ROLES: Final = ("system", "developer")

#: The keys each Messages API element defines beside the ones we model (the
#: SDK's ``TextBlockParam``, ``ImageBlockParam``, ... ``MessageParam``). The API
#: refuses any other key, so the writer carries only these and reports the rest
#: (another provider's ``index``, ``annotations``, ``thoughtSignature``...).
KEYS: Final = {
    "text": frozenset({"cache_control", "citations"}),
    "image": frozenset({"source", "cache_control", "transformations"}),
    "document": frozenset({"source", "cache_control", "citations", "context", "title"}),
    "thinking": frozenset({"signature"}),
    "redacted_thinking": frozenset(),
    "tool_use": frozenset({"cache_control", "caller", "toolset_name"}),
    "tool_result": frozenset({"cache_control", "is_error", "toolset_name"}),
    "message": frozenset(),
}


def anthropic_id(call_id: str) -> str:
    """Return ``call_id`` if Anthropic accepts it, else a valid id derived from it.

    The mapping is deterministic (the same id always maps to the same one, so
    a call and its result still match) and keeps distinct ids distinct: the
    invalid characters become ``_`` and eight hex digits of the id's SHA-256
    are appended.

    Examples:
        >>> anthropic_id("toolu_01A"), anthropic_id("functions.ls:0")
        ('toolu_01A', 'functions_ls_0_dd50e5a0')
    """
    if TOOL_ID.match(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{re.sub(r'[^a-zA-Z0-9_-]', '_', call_id)}_{digest}"


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


def _with_source(
    kind: str, source: dict[str, Any], extra: dict[str, Any], title: str | None = None
) -> dict[str, Any]:
    source.update(extra.pop("source", None) or {})
    block: dict[str, Any] = {"type": kind, "source": source}
    if title is not None:
        block["title"] = title
    return {**block, **extra}


def _image(part: pt.ImagePart, extra: dict[str, Any]) -> dict[str, Any]:
    if part.data is not None:
        media = part.media_type or "application/octet-stream"
        source: dict[str, Any] = {"type": "base64", "media_type": media, "data": part.data}
    elif part.url is not None:
        match = pt.DATA_URI.fullmatch(part.url)
        if match:
            source = {"type": "base64", "media_type": match["media"], "data": match["data"]}
        else:
            source = {"type": "url", "url": part.url}
    else:
        source = {"type": "file", "file_id": part.file_id}
    return _with_source("image", source, extra)


def _document(part: pt.DocumentPart, extra: dict[str, Any]) -> dict[str, Any] | None:
    if part.data is not None:
        media = part.media_type or "application/pdf"
        source: dict[str, Any] = {"type": "base64", "media_type": media, "data": part.data}
    elif part.text is not None:
        media = part.media_type or "text/plain"
        source = {"type": "text", "media_type": media, "data": part.text}
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    elif part.file_id is not None:
        source = {"type": "file", "file_id": part.file_id}
    else:
        return None
    return _with_source("document", source, extra, part.name)


#: The parts written as a block of their own, whose keys ``KEYS[cls.kind]`` lists.
_BLOCKS: Final = (
    pt.TextPart,
    pt.ThinkingPart,
    pt.RedactedThinkingPart,
    pt.ImagePart,
    pt.DocumentPart,
)


def _carried(part: pt.Part, where: str, lost: list[str]) -> dict[str, Any]:
    """The keys of ``part``'s ``extra`` its block defines (the others reported)."""
    for cls in _BLOCKS:
        if isinstance(part, cls):
            return carried_keys(part.extra, where, lost, allowed=KEYS[cls.kind])
    return {}  # not written as a block of its own


def part_block(part: pt.Part, where: str, lost: list[str]) -> dict[str, Any] | None:
    """Return the block for ``part``, or ``None`` (and a line in ``lost``) when it has none."""
    extra = _carried(part, where, lost)
    match part:
        case pt.TextPart():
            return {"type": "text", "text": part.text, **extra}
        case pt.ThinkingPart():
            return _thinking(part, extra, where, lost)
        case pt.RedactedThinkingPart():
            return {"type": "redacted_thinking", "data": part.data, **extra}
        case pt.ImagePart():
            return _image(part, extra)
        case pt.DocumentPart():
            document = _document(part, extra)
            if document is None:
                lost.append(f"{where}: a document with no data, text, url or file id")
            return document
        case pt.OpaquePart():
            return _opaque(part, where, lost)
        case pt.RefusalPart():
            lost.append(f"{where}: a refusal (no Messages API block holds one)")
            return None
        case pt.AudioPart():
            lost.append(f"{where}: an audio part (the Messages API takes no audio)")
            return None
        case _:
            pt.assert_never(part)


def _thinking(
    part: pt.ThinkingPart, extra: dict[str, Any], where: str, lost: list[str]
) -> dict[str, Any] | None:
    """A thinking block; another provider's thinking without a signature is lost."""
    if part.signature is None and part.provider != "anthropic":
        lost.append(f"{where}: a thinking part from {part.provider!r} (no signature)")
        return None
    block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
    if part.signature is not None:
        block["signature"] = part.signature
    return {**block, **extra}


def _opaque(part: pt.OpaquePart, where: str, lost: list[str]) -> dict[str, Any] | None:
    """An Anthropic block we do not model, as it was read; another provider's is lost."""
    if part.provider == "anthropic":
        return pt.thaw_json(part.block)  # type: ignore[no-any-return]
    lost.append(f"{where}: an opaque {part.provider} block of type {part.type!r}")
    return None


def _tool_use(call: ToolCall, ids: list[str], where: str) -> dict[str, Any]:
    extra = carried_keys(call.extra, where, ids, allowed=KEYS["tool_use"])
    block: dict[str, Any] = {"type": "tool_use", "id": _id(call.id, ids), "name": call.name}
    if note(call.extra, "input") != "absent":
        try:
            value = json.loads(call.arguments)
        except ValueError:
            value = None
        # tool_use.input must be an object; keep what the model wrote, unparsed.
        block["input"] = value if isinstance(value, dict) else {"arguments": call.arguments}
    return {**block, **extra}


def _id(call_id: str, ids: list[str]) -> str:
    mapped = anthropic_id(call_id)
    if mapped != call_id:
        ids.append(f"tool id {call_id!r} sent as {mapped!r}")
    return mapped


def _parts_blocks(parts: Iterable[pt.Part], where: str, lost: list[str]) -> list[dict[str, Any]]:
    blocks = (part_block(part, where, lost) for part in parts)
    return [block for block in blocks if block is not None]


def _result(component: Component, where: str, lost: list[str]) -> dict[str, Any]:
    assert component.tool_call_id is not None
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": _id(component.tool_call_id, lost),
    }
    extra = carried_keys(component.extra, where, lost, allowed=KEYS["tool_result"])
    parts = component.parts
    if isinstance(component, ToolMessage) and not parts and not component.structured:
        pass  # no content key at all
    elif component.structured:
        block["content"] = _parts_blocks(parts, where, lost)
    else:
        text = component.content
        block["content"] = _tool_references(text) or text
    if component.is_error:
        block["is_error"] = True
    return {**block, **extra}


def _blocks(component: Component, where: str, lost: list[str]) -> tuple[str, Any]:
    """Return the Anthropic role and content (blocks, or a string) for one component."""
    if component.tool_call_id is not None:
        return "user", [_result(component, where, lost)]
    if component.role in _SYSTEM_ROLES:
        return "user", _late_system(component)
    role = "assistant" if component.role == "assistant" else "user"
    parts = component.parts
    if not component.structured:  # a plain "" (or only whitespace) is no block at all
        parts = tuple(p for p in parts if not _blank_plain(p))
        if not component.tool_calls and (plain := _plain_content(parts)) is not None:
            return role, plain
    return role, _content_blocks(component, parts, where, lost)


def _late_system(component: Component) -> list[dict[str, Any]]:
    """A system message after the start: user text marked ``[system]`` (blank: nothing)."""
    if not component.content.strip():
        return []  # nothing to send
    return [{"type": "text", "text": f"[system] {component.content}"}]


def _plain_content(parts: Sequence[pt.Part]) -> str | list[dict[str, Any]] | None:
    """A plain message's content without calls: ``[]`` for nothing to send, its text for
    one text part, ``None`` when it needs blocks."""
    if not parts or (len(parts) == 1 and type(parts[0]) is pt.TextPart and not parts[0].text):
        return []  # nothing to send
    if len(parts) == 1 and type(parts[0]) is pt.TextPart:
        return parts[0].text
    return None


def _content_blocks(
    component: Component, parts: Sequence[pt.Part], where: str, lost: list[str]
) -> list[dict[str, Any]]:
    """The blocks of ``parts`` and the calls: parts first, unless an assistant turn's read
    order was noted (``anthropic_blocks``), which puts them back in that order."""
    calls = component.tool_calls
    if isinstance(component, ModelOutputThunk) or component.role == "assistant":
        layout = note(component.extra, "anthropic_blocks")
        if isinstance(layout, str) and layout.count("t") == len(calls):
            return _in_read_order(layout, parts, calls, where, lost)
    blocks = _parts_blocks(parts, where, lost)
    blocks += [_tool_use(call, lost, where) for call in calls]
    return blocks


def _blank_plain(part: pt.Part) -> bool:
    """Whether ``part`` is plain text with nothing but whitespace (the API refuses it)."""
    return type(part) is pt.TextPart and not part.text.strip() and not part.extra


def _system(items: list[Component], where: list[str], lost: list[str]) -> Any:
    # A plain system message with only whitespace sends nothing: Anthropic
    # answers 400 to a blank system prompt ("text content blocks must contain
    # non-whitespace text"), and "\n\n" would be what joining two empty ones gives.
    kept = [
        (item, label)
        for item, label in zip(items, where, strict=True)
        if item.structured or item.content.strip()
    ]
    if not kept:
        return None
    if not any(item.structured for item, _ in kept):
        return "\n\n".join(item.content for item, _ in kept)
    blocks: list[dict[str, Any]] = []
    for item, label in kept:
        blocks += _parts_blocks(item.parts, label, lost)
    return blocks


def _in_read_order(
    layout: str, parts: Sequence[pt.Part], calls: Sequence[ToolCall], where: str, lost: list[str]
) -> list[dict[str, Any]]:
    """The blocks of ``parts`` and ``calls`` in the order ``layout`` noted (``t``: a call)."""
    part_blocks = iter(_parts_blocks(parts, where, lost))
    call_blocks = iter(_tool_use(call, lost, where) for call in calls)
    ordered = [next(call_blocks if c == "t" else part_blocks, None) for c in layout]
    ordered += list(part_blocks)
    return [block for block in ordered if block is not None]


def turns(
    components: Iterable[Component], *, opener: bool, lost: list[str] | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    """Return ``(system, turns)``; ``opener`` puts a user turn before a leading assistant."""
    items = [writable(component, index) for index, component in enumerate(components)]
    found: list[str] = []
    leading = 0
    while leading < len(items) and items[leading].role in _SYSTEM_ROLES:
        leading += 1
    labels = [f"component {index}" for index in range(len(items))]
    system = _system(items[:leading], labels[:leading], found)
    messages: list[dict[str, Any]] = []
    for index in range(leading, len(items)):
        _place(messages, items[index], labels[index], found)
    if opener and messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": "(earlier conversation)"})
    report_losses(lost, found, "to_anthropic")
    return system, messages


def _place(
    messages: list[dict[str, Any]], component: Component, label: str, lost: list[str]
) -> None:
    """Add ``component`` to ``messages``: a turn of its own, or joined to the last turn
    when that has its role and no reader noted a boundary between them."""
    role, content = _blocks(component, label, lost)
    if _sends_nothing(component, content):
        return
    new = _starts_turn(component, label, lost)
    if messages and messages[-1]["role"] == role and not new:
        _join(messages[-1], content)
        return
    if component.tool_call_id is None:  # a result's keys went into its block
        carried_keys(component.extra, label, lost, allowed=KEYS["message"])
    messages.append({"role": role, "content": content})


def _sends_nothing(component: Component, content: Any) -> bool:
    """Whether a component with ``content`` is left out: a blank system message after the
    start, or empty content where no reader noted a turn of its own."""
    if component.role in _SYSTEM_ROLES and not content:
        return True
    return not content and not (component.structured or note(component.extra, "anthropic_turn"))


def _starts_turn(component: Component, label: str, lost: list[str]) -> bool:
    """Whether a reader noted that ``component`` opened a turn of its own (the turn's
    keys, which ``MessageParam`` has no place for, are reported)."""
    turn_extra = note(component.extra, "anthropic_turn_extra") or {}
    for key in turn_extra:
        lost.append(f"{label}: the turn key {key!r} (MessageParam has none)")
    return note(component.extra, "anthropic_turn") == "new" or bool(turn_extra)


def _join(turn: dict[str, Any], content: Any) -> None:
    """Add ``content`` to ``turn`` (a component of the same role, in the same turn)."""
    merged = _as_list(turn["content"]) + _as_list(content)
    # tool_result blocks must open a user message
    merged.sort(key=lambda block: block.get("type") != "tool_result")
    turn["content"] = merged


def _as_list(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def to_anthropic(
    components: Iterable[Component], *, lost: list[str] | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    """Return ``(system, messages)`` for the Messages API.

    The leading system (and developer) messages become ``system``: a string,
    or a list of blocks when any of them was read from one; a system message
    later in the history has no place in this API and is sent as user text
    marked ``[system]``. Consecutive components of one role form one turn,
    tool results first, unless a reader noted a turn boundary there; a
    history that starts with the assistant gets a short user turn in front,
    since the API wants user first. A component read with
    :func:`~mellea_ctx.from_anthropic` is written back as it was read.

    What the Messages API cannot hold (an OpenAI refusal or audio part,
    thinking without a signature) is left out, and tool ids outside
    ``^[a-zA-Z0-9_-]+$`` are mapped (:func:`anthropic_id`); each such change
    is appended to ``lost`` or, without it, reported in one
    :class:`~mellea_ctx.LossyConversionWarning`.

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
    return turns(components, opener=True, lost=lost)


def anthropic_document(
    components: Iterable[Component],
    *,
    envelope: dict[str, Any] | None = None,
    lost: list[str] | None = None,
) -> list[Any] | dict[str, Any]:
    """Return a transcript in the Messages API's shape, as a file holds it.

    Without a system prompt or ``envelope`` (the other keys of a request body
    the file held) the transcript is the list of turns; otherwise an object
    ``{"system": ..., "messages": [...], ...}``. As for :func:`to_anthropic`,
    a history that starts with the assistant gets a user turn in front, and
    what the format cannot carry goes to ``lost`` (or a warning).
    """
    system, messages = turns(components, opener=True, lost=lost)
    if system is None and envelope is None:
        return messages
    document: dict[str, Any] = dict(envelope or {})
    if system is not None:
        document["system"] = system
    else:
        document.pop("system", None)
    document["messages"] = messages
    return document
