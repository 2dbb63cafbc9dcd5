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

from ._components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from ._exceptions import InvalidContextError

__all__ = ["from_anthropic", "to_anthropic", "tool_references_text"]

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


def _text(content: Any, where: str) -> str:
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
        return "\n".join(
            block.get("text", "")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    msg = f"{where}: content={content!r} must be a string or a list of blocks"
    raise InvalidContextError(msg)


def from_anthropic(
    messages: Sequence[Mapping[str, Any]], *, system: str | None = None
) -> list[Component]:
    """Return the components for Messages API turns (and an optional system prompt).

    Text blocks of one message are joined by a blank line; ``thinking`` blocks
    and the ``is_error`` flag of a tool result have no place in our components
    and are dropped. An assistant turn with tool calls and no text becomes a
    :class:`~mellea_ctx.ModelOutputThunk` with ``value=None``.

    Raises:
        InvalidContextError: For a turn that is not a user or assistant
            message with string or block content.
    """
    out: list[Component] = []
    if system:
        out.append(Message("system", system))
    for index, raw in enumerate(messages):
        where = f"message {index}"
        if not isinstance(raw, Mapping):
            msg = f"{where}: {raw!r} is not an object with role and content"
            raise InvalidContextError(msg)
        role, content = raw.get("role"), raw.get("content")
        if role not in ("user", "assistant"):
            msg = f"{where}: role={role!r} must be 'user' or 'assistant' in the Messages API"
            raise InvalidContextError(msg)
        if isinstance(content, str):
            out.append(Message(role, content))
            continue
        if not isinstance(content, list):
            msg = f"{where}: content={content!r} must be a string or a list of blocks"
            raise InvalidContextError(msg)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "tool_use":
                calls.append(
                    ToolCall(
                        block["id"],
                        block["name"],
                        json.dumps(block.get("input", {}), ensure_ascii=False),
                    )
                )
            elif kind == "tool_result":
                result = _text(block.get("content", ""), where)
                out.append(ToolMessage(result, tool_call_id=block["tool_use_id"]))
        if role == "assistant":
            if texts:
                out.append(Message("assistant", "\n\n".join(texts), tool_calls=calls))
            elif calls:
                out.append(ModelOutputThunk(None, tool_calls=calls))
        elif texts:
            out.append(Message("user", "\n\n".join(texts)))
    return out
