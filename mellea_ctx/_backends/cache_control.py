"""Anthropic prompt-cache breakpoints: where a Messages request marks ``cache_control``.

Anthropic caches a prompt prefix only up to a block marked
``"cache_control": {"type": "ephemeral"}``, and reads it back on a later
request that repeats the prefix exactly (tools, then system, then messages).
:func:`place_breakpoints` marks up to three places, each one optional:

* ``"tools"``: the last tool definition (the definitions rarely change);
* ``"system"``: the system prompt (it becomes one text block);
* ``"history"``: the last block of the last message, so the next request,
  which repeats the whole history and adds to it, reads it all from cache.

That stays within the API's limit of four breakpoints per request. Thinking
blocks cannot carry a breakpoint, so the last other block is marked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from .._core.exceptions import InvalidArgumentError

__all__ = ["BREAKPOINTS", "place_breakpoints", "validate_breakpoints"]

#: Every place a breakpoint can go, and the default: all of them.
BREAKPOINTS = ("tools", "system", "history")

_MARK = {"type": "ephemeral"}
_UNMARKABLE = {"thinking", "redacted_thinking"}


def validate_breakpoints(owner: str, value: object) -> frozenset[str]:
    """Return ``value`` as a set of places, or raise naming what is wrong.

    Examples:
        >>> sorted(validate_breakpoints("AnthropicBackend", ["system"]))
        ['system']
    """
    if isinstance(value, str) or not isinstance(value, Collection):
        msg = (
            f"{owner}: cache_breakpoints={value!r} must be a collection of places from "
            f"{BREAKPOINTS}; pass () to send no breakpoints"
        )
        raise InvalidArgumentError(msg)
    unknown = [place for place in value if place not in BREAKPOINTS]
    if unknown:
        msg = (
            f"{owner}: cache_breakpoints holds {unknown!r}; the places are {BREAKPOINTS}, "
            "or () for none"
        )
        raise InvalidArgumentError(msg)
    return frozenset(value)


def _marked_last(blocks: list[Any]) -> list[Any] | None:
    for index in range(len(blocks) - 1, -1, -1):
        block = blocks[index]
        if isinstance(block, dict) and block.get("type") not in _UNMARKABLE:
            return [*blocks[:index], {**block, "cache_control": _MARK}, *blocks[index + 1 :]]
    return None


def place_breakpoints(
    places: Collection[str],
    system: str | None,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """Return ``(system, messages, tools)`` with ``cache_control`` marks at ``places``.

    The inputs are not modified: what gains a mark is copied.

    Examples:
        >>> system, messages, tools = place_breakpoints(
        ...     {"system", "history"}, "Be brief.", [{"role": "user", "content": "hi"}], []
        ... )
        >>> system
        [{'type': 'text', 'text': 'Be brief.', 'cache_control': {'type': 'ephemeral'}}]
        >>> messages[-1]["content"]
        [{'type': 'text', 'text': 'hi', 'cache_control': {'type': 'ephemeral'}}]
    """
    sent_system: str | list[dict[str, Any]] | None = system
    if "system" in places and system:
        sent_system = [{"type": "text", "text": system, "cache_control": _MARK}]
    sent_tools = list(tools)
    if "tools" in places and sent_tools:
        sent_tools[-1] = {**sent_tools[-1], "cache_control": _MARK}
    sent = list(messages)
    if "history" in places and sent:
        last = sent[-1]
        content = last.get("content")
        blocks: list[Any] | None
        if isinstance(content, str):
            blocks = (
                [{"type": "text", "text": content, "cache_control": _MARK}] if content else None
            )
        elif isinstance(content, list):
            blocks = _marked_last(content)
        if blocks is not None:
            sent[-1] = {**last, "content": blocks}
    return sent_system, sent, sent_tools
