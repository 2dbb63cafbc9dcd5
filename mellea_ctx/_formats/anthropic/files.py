"""Anthropic transcript files: telling one from OpenAI messages, and reading its JSON.

The command line reads any transcript (``transcripts.read_any``); these are
its Anthropic half. :func:`detect` says whether parsed JSON is an
Anthropic Messages transcript (an array of turns, or an object with
``system`` and ``messages``) rather than OpenAI Chat messages, and
:func:`read` reads it, keeping an object's other keys (a request
body's ``model``, ``max_tokens``...) as the envelope written back around it.
"""

from __future__ import annotations

from typing import Any, Final

from ..._core.components import Component
from ..._core.exceptions import InvalidContextError
from ..files import body_units
from ..locate import array_labels
from .read import read_turns

#: Content block types only the Anthropic Messages API has.
_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)


def _text(value: object) -> bool:
    return isinstance(value, str)


def detect(data: object) -> bool:
    """Return whether parsed JSON is an Anthropic transcript rather than OpenAI messages.

    An object is one when it has a ``messages`` list and either a ``system``
    field or no message with an OpenAI-only role; an array is one when a
    message holds an Anthropic-only block, or an assistant message holds a
    list of blocks (OpenAI assistants send strings).
    """
    if isinstance(data, dict):
        return _body_looks_anthropic(data)
    if not isinstance(data, list):
        return False
    return any(_message_looks_anthropic(message) for message in data)


def _body_looks_anthropic(data: dict[Any, Any]) -> bool:
    """A body: a ``messages`` list, with a ``system`` field or no OpenAI-only role."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        return False
    if "system" in data:
        return True
    roles = {m.get("role") for m in messages if isinstance(m, dict) and _text(m.get("role"))}
    return bool(messages) and not roles & {"system", "tool", "developer"}


def _message_looks_anthropic(message: object) -> bool:
    """A message with blocks: an assistant's (OpenAI assistants send strings), or one holding
    an Anthropic-only block."""
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return False
    if message.get("role") == "assistant" and content:
        return True
    return any(
        isinstance(b, dict) and _text(b.get("type")) and b["type"] in _ANTHROPIC_BLOCKS
        for b in content
    )


def read(
    data: object, source: str, text: str | None = None
) -> tuple[list[Component], list[str], dict[str, Any] | None]:
    """Read an Anthropic transcript's parsed JSON: its components, their locations, its envelope.

    Args:
        data: The file's JSON value: an array of turns, or an object with
            ``messages`` (and ``system``).
        source: The file's name, for error messages.
        text: The file's text, to label an array's turns by line.

    Returns:
        The components, where each was read (``message 3``), and the object's
        other keys (``None`` for an array), written back around the turns.

    Raises:
        InvalidContextError: When ``data`` is neither shape, or a turn is bad.
    """
    locations: list[str] = []
    if isinstance(data, dict):
        if not isinstance(data.get("messages"), list):
            msg = (
                f"{source}: holds a JSON object without a 'messages' list; an Anthropic "
                'transcript is a JSON array of turns or {"system": ..., "messages": [...]}'
            )
            raise InvalidContextError(msg)
        components = read_turns(
            data["messages"], data.get("system"), source=source, locations=locations
        )
        envelope = {k: v for k, v in data.items() if k != "messages" and k != "system"}
        if data.get("system", 0) is None:
            envelope["system"] = None  # an explicit null, written back as such
        return components, locations, envelope
    elif isinstance(data, list):
        labels = array_labels(text, len(data))
        components = read_turns(data, source=source, locations=locations, labels=labels)
    else:
        msg = (
            f"{source}: holds a JSON {type(data).__name__}; an Anthropic transcript is a JSON "
            'array of turns or {"system": ..., "messages": [...]}'
        )
        raise InvalidContextError(msg)
    return components, locations, None


def units(document: Any) -> list[Any]:
    """A document's turns: a bare array, or a body's ``messages``."""
    return body_units(document, "messages")
