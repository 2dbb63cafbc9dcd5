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
from collections.abc import Iterable, Mapping
from typing import Any

from .._core.checkpoint import Checkpoint
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

__all__ = [
    "component_from_record",
    "component_to_record",
    "components_from_json",
    "components_to_json",
]


def _calls(calls: Iterable[ToolCall]) -> list[dict[str, str]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]


def component_to_record(component: Component) -> dict[str, Any]:
    """Return a JSON-able record of ``component`` that reads back into an equal value.

    Raises:
        InvalidComponentError: For a component kind this module does not know.

    Examples:
        >>> component_to_record(Message("user", "hi"))
        {'kind': 'message', 'role': 'user', 'content': 'hi'}
    """
    if type(component) is Message:
        record: dict[str, Any] = {
            "kind": "message",
            "role": component.role,
            "content": component.content,
        }
        if component.tool_calls:
            record["tool_calls"] = _calls(component.tool_calls)
        if component.images:
            record["images"] = list(component.images)
        if component.name is not None:
            record["name"] = component.name
        return record
    if type(component) is ToolMessage:
        record = {
            "kind": "tool",
            "content": component.content,
            "tool_call_id": component.tool_call_id,
        }
        if component.name is not None:
            record["name"] = component.name
        return record
    if type(component) is ModelOutputThunk:
        record = {"kind": "output", "value": component.value}
        if component.tool_calls:
            record["tool_calls"] = _calls(component.tool_calls)
        if component.usage is not None:
            usage = component.usage
            record["usage"] = [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens]
        return record
    if type(component) is CBlock:
        return {"kind": "cblock", "value": component.value}
    if type(component) is ReactInitiator:
        return {"kind": "goal", "goal": component.goal}
    if type(component) is Checkpoint:
        return checkpoint_to_record(component, component_to_record)
    msg = (
        f"cannot store a {type(component).__name__}: only mellea-ctx's own component kinds "
        "have records; convert yours to a Message before storing"
    )
    raise InvalidComponentError(msg)


def _tool_calls(record: Mapping[str, Any]) -> list[ToolCall]:
    return [ToolCall(c["id"], c["name"], c["arguments"]) for c in record.get("tool_calls", ())]


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
        if kind == "message":
            return Message(
                record["role"],
                record["content"],
                tool_calls=_tool_calls(record),
                images=record.get("images", ()),
                name=record.get("name"),
            )
        if kind == "tool":
            return ToolMessage(
                record["content"], tool_call_id=record["tool_call_id"], name=record.get("name")
            )
        if kind == "output":
            usage = record.get("usage")
            return ModelOutputThunk(
                record["value"],
                tool_calls=_tool_calls(record),
                usage=Usage(*usage) if usage is not None else None,
            )
        if kind == "cblock":
            return CBlock(record["value"])
        if kind == "goal":
            return ReactInitiator(record["goal"])
        if kind == "checkpoint":
            return checkpoint_from_record(record, component_from_record)
    except (KeyError, TypeError) as exc:
        msg = f"component record {short_repr(record, 120)} is damaged: missing or bad {exc}"
        raise InvalidComponentError(msg) from exc
    kind = short_repr(record.get("kind"))
    msg = f"component record has kind={kind}; expected one of mellea-ctx's kinds"
    raise InvalidComponentError(msg)


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
