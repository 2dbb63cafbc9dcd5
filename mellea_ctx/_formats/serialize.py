"""Lossless JSON records for components, for session stores and anything durable.

The provider wire formats lose what is ours (a ``Checkpoint`` becomes user
text, a ``ReactInitiator`` becomes a user message), so stores keep components
as these records instead: plain JSON objects with a ``kind`` tag, read back
into the very same values. A checkpoint's record carries the span it replaced,
so a restored session can still recall it; the chain of checkpoints it folded
in is written as a flat table (:mod:`.checkpoint_records`), so no depth of
compaction makes a record unwritable or unreadable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
from pyrsistent import PMap

from .._core import parts as pt
from .._core.checkpoint import Checkpoint
from .._core.checks import is_plain
from .._core.cleared import ClearedToolResult
from .._core.components import (
    CBlock,
    Component,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    ToolCall,
    ToolMessage,
    Usage,
)
from .._core.exceptions import InvalidComponentError
from .._core.reprs import short_repr
from .checkpoint_records import checkpoint_from_record, checkpoint_to_record


def _calls(calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for call in calls:
        record: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
        if call.extra:
            record["extra"] = pt.thaw_json(call.extra)
        out.append(record)
    return out


#: A part's record ``"part"`` is its class's ``kind`` (one vocabulary), and back.
_PART_KINDS: Final[dict[type, str]] = {cls: cls.kind for cls in pt.PART_TYPES}
_PART_CLASSES: Final = {kind: cls for cls, kind in _PART_KINDS.items()}


def part_to_record(part: pt.Part) -> dict[str, Any]:
    """Return a JSON-able record of one content part (its fields that are set).

    Examples:
        >>> from mellea_ctx import ThinkingPart
        >>> part_to_record(ThinkingPart("hmm", signature="s1"))
        {'part': 'thinking', 'text': 'hmm', 'signature': 's1'}
    """
    record: dict[str, Any] = {"part": _PART_KINDS[type(part)]}
    for field in attrs.fields(type(part)):
        value = getattr(part, field.name)
        if value is None or (field.name == "extra" and not value):
            continue
        record[field.name] = pt.thaw_json(value) if isinstance(value, PMap) else value
    return record


def part_from_record(record: Mapping[str, Any]) -> pt.Part:
    """Return the part a :func:`part_to_record` record describes."""
    fields = {key: value for key, value in record.items() if key != "part"}
    cls = _PART_CLASSES[record["part"]]
    if cls is pt.OpaquePart:
        return pt.OpaquePart(fields["provider"], fields["block"])
    if cls in (pt.TextPart, pt.RefusalPart, pt.ThinkingPart):
        return cls(fields.pop("text"), **fields)
    if cls is pt.RedactedThinkingPart:
        return pt.RedactedThinkingPart(fields.pop("data"), **fields)
    return cls(**fields)  # type: ignore[no-any-return]


def _content(record: dict[str, Any], component: Component) -> None:
    """Record ``component``'s parts: as ``content`` text when plain, else as ``parts``."""
    parts = component.parts
    plain = len(parts) == 1 and type(parts[0]) is pt.TextPart and not parts[0].extra
    if plain:
        record["content"] = component.content
    else:
        record["parts"] = [part_to_record(part) for part in parts]
    if component.structured != (not is_plain(parts)):  # what the constructor would choose
        record["structured"] = component.structured
    if component.extra:
        record["extra"] = pt.thaw_json(component.extra)


def _parts(record: Mapping[str, Any], key: str = "content") -> Any:
    """The content of a record: its ``parts``, or (older records) its text."""
    if "parts" in record:
        return [part_from_record(part) for part in record["parts"]]
    return record[key]


def _options(record: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {"extra": record.get("extra")}
    if "structured" in record:
        options["structured"] = record["structured"]
    return options


def component_to_record(component: Component) -> dict[str, Any]:
    """Return a JSON-able record of ``component`` that reads back into an equal value.

    Raises:
        InvalidComponentError: For a component kind this module does not know.

    Examples:
        >>> component_to_record(Message("user", "hi"))
        {'kind': 'message', 'role': 'user', 'content': 'hi'}
    """
    write = _RECORD_WRITERS.get(type(component))
    if write is None:
        msg = (
            f"cannot store a {type(component).__name__}: only mellea-ctx's own component kinds "
            "have records; convert yours to a Message before storing"
        )
        raise InvalidComponentError(msg)
    return write(component)


def _message_record(component: Message) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "message", "role": component.role}
    _content(record, component)
    if component.tool_calls:
        record["tool_calls"] = _calls(component.tool_calls)
    if component.name is not None:
        record["name"] = component.name
    return record


def _tool_record(component: ToolMessage | ClearedToolResult) -> dict[str, Any]:
    # A cleared result is stored as the placeholder it reads as (its handles stay in memory).
    record: dict[str, Any] = {"kind": "tool", "tool_call_id": component.tool_call_id}
    _content(record, component)
    if component.name is not None:
        record["name"] = component.name
    if component.is_error:
        record["is_error"] = True
    return record


def _output_record(component: ModelOutputThunk) -> dict[str, Any]:
    """A model output: its value, and what differs from what the value alone reads as."""
    record: dict[str, Any] = {"kind": "output", "value": component.value}
    if component.parts != ((pt.TextPart(component.value),) if component.value else ()):
        record["parts"] = [part_to_record(part) for part in component.parts]
    if component.structured != (not is_plain(component.parts)):
        record["structured"] = component.structured
    if component.extra:
        record["extra"] = pt.thaw_json(component.extra)
    if component.tool_calls:
        record["tool_calls"] = _calls(component.tool_calls)
    if component.usage is not None:
        record["usage"] = _usage_record(component.usage)
    return record


#: The record writer of each component kind we store, by its exact type.
_RECORD_WRITERS: Final[dict[type, Callable[[Any], dict[str, Any]]]] = {
    Message: _message_record,
    ToolMessage: _tool_record,
    ClearedToolResult: _tool_record,
    ModelOutputThunk: _output_record,
    CBlock: lambda component: {"kind": "cblock", "value": component.value},
    ReactInitiator: lambda component: {"kind": "goal", "goal": component.goal},
    Checkpoint: lambda component: checkpoint_to_record(component, component_to_record),
}


def _usage_record(usage: Usage) -> list[int | None]:
    """``[prompt, completion, total]``, then the cache reads and writes when either is known."""
    counts: list[int | None] = [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens]
    if usage.cache_read_tokens is not None or usage.cache_write_tokens is not None:
        counts += [usage.cache_read_tokens, usage.cache_write_tokens]
    return counts


def _usage(counts: Sequence[Any]) -> Usage:
    """The :class:`Usage` of a record's counts (records before the cache fields hold three)."""
    if not isinstance(counts, list) or len(counts) not in (3, 5):
        msg = f"usage={short_repr(counts)} must be a list of 3 or 5 counts"
        raise InvalidComponentError(msg)
    prompt, completion, total, *cache = counts
    read, write = (*cache, None, None)[:2]
    return Usage(prompt, completion, total, cache_read_tokens=read, cache_write_tokens=write)


def _tool_calls(record: Mapping[str, Any]) -> list[ToolCall]:
    return [
        ToolCall(c["id"], c["name"], c["arguments"], extra=c.get("extra"))
        for c in record.get("tool_calls", ())
    ]


def component_from_record(record: Mapping[str, Any]) -> Component:
    """Return the component a record made by :func:`component_to_record` describes.

    Raises:
        InvalidComponentError: For a record that is not one of ours or is damaged.

    Examples:
        >>> component_from_record({"kind": "goal", "goal": "Fix the bug"})
        ReactInitiator(goal='Fix the bug')
    """
    if not isinstance(record, Mapping):
        msg = f"component record {short_repr(record)} is damaged: expected a JSON object"
        raise InvalidComponentError(msg)
    try:
        kind = record["kind"]
        read = _RECORD_READERS.get(kind) if isinstance(kind, str) else None
        if read is not None:
            return read(record)
    except (KeyError, TypeError, InvalidComponentError) as exc:
        msg = f"component record {short_repr(record, 120)} is damaged: missing or bad {exc}"
        raise InvalidComponentError(msg) from exc
    kind = short_repr(record.get("kind"))
    msg = f"component record has kind={kind}; expected one of mellea-ctx's kinds"
    raise InvalidComponentError(msg)


def _message_from(record: Mapping[str, Any]) -> Component:
    return Message(
        record["role"],
        _parts(record),
        tool_calls=_tool_calls(record),
        images=record.get("images", ()),  # records before parts kept images apart
        name=record.get("name"),
        **_options(record),
    )


def _tool_from(record: Mapping[str, Any]) -> Component:
    return ToolMessage(
        _parts(record),
        tool_call_id=record["tool_call_id"],
        name=record.get("name"),
        is_error=record.get("is_error", False),
        **_options(record),
    )


def _output_from(record: Mapping[str, Any]) -> Component:
    usage = record.get("usage")
    parts = _parts(record, "-") if "parts" in record else None
    return ModelOutputThunk(
        record["value"],
        parts=parts,
        tool_calls=_tool_calls(record),
        usage=_usage(usage) if usage is not None else None,
        **_options(record),
    )


#: The reader of each record kind, by its ``kind``.
_RECORD_READERS: Final[dict[str, Callable[[Mapping[str, Any]], Component]]] = {
    "message": _message_from,
    "tool": _tool_from,
    "output": _output_from,
    "cblock": lambda record: CBlock(record["value"]),
    "goal": lambda record: ReactInitiator(record["goal"]),
    "checkpoint": lambda record: checkpoint_from_record(record, component_from_record),
}


def components_to_json(components: Iterable[Component]) -> str:
    """Return the components as one compact JSON array of records."""
    records = [component_to_record(c) for c in components]
    return json.dumps(records, ensure_ascii=False, separators=(",", ":"))


def components_from_json(text: str) -> list[Component]:
    """Return the components of a JSON array made by :func:`components_to_json`."""
    try:
        records = json.loads(text)
    except ValueError as exc:
        msg = f"stored components are not valid JSON ({exc})"
        raise InvalidComponentError(msg) from exc
    except RecursionError as exc:
        msg = "stored components nest too deeply to read; they are damaged"
        raise InvalidComponentError(msg) from exc
    if not isinstance(records, list):
        msg = f"stored components must be a JSON array, got {type(records).__name__}"
        raise InvalidComponentError(msg)
    return [component_from_record(record) for record in records]
