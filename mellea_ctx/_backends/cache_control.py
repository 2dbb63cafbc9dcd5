"""Anthropic prompt-cache breakpoints: where a Messages request marks ``cache_control``.

Anthropic caches a prompt prefix only up to a block marked
``"cache_control": {"type": "ephemeral"}``, and reads it back on a later
request that repeats the prefix exactly (tools, then system, then messages).
:func:`place_breakpoints` marks up to three places, each one optional:

* ``"tools"``: the last tool definition (the definitions rarely change);
* ``"system"``: the system prompt (it becomes one text block);
* ``"history"``: the last block of the last message, so the next request,
  which repeats the whole history and adds to it, reads it all from cache.

Marks already in the history (Claude Code's transcripts carry them) are
kept as they are and count: with them, ours are placed only while the
request stays within the API's limit of four breakpoints, the history mark
first (it caches the most), then the system and the tools marks. Ours are
5-minute marks, and "cache entries with longer TTL must appear before
shorter TTLs" (the prompt-caching docs, on mixing TTLs; the order is tools,
system, messages), so none of ours goes ahead of a ``"ttl": "1h"`` mark:
that mark already caches everything before it. A block that already has a
mark is never given another. Thinking blocks cannot carry a breakpoint, so
the last other block is marked.
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


#: The API's limit of ``cache_control`` breakpoints in one request.
LIMIT = 4


def _marks(value: Any) -> list[Any]:
    """Every ``cache_control`` value in ``value`` (blocks, nested ones too), in request order."""
    found: list[Any] = []
    if isinstance(value, dict):
        if "cache_control" in value:
            found.append(value["cache_control"])
        for key, inner in value.items():
            if key != "cache_control" and isinstance(inner, (list, dict)):
                found += _marks(inner)
    elif isinstance(value, list):
        for item in value:
            found += _marks(item)
    return found


def _long(marks: list[Any]) -> bool:
    return any(isinstance(mark, dict) and mark.get("ttl") == "1h" for mark in marks)


def _last_markable(blocks: list[Any]) -> int | None:
    for index in range(len(blocks) - 1, -1, -1):
        block = blocks[index]
        if isinstance(block, dict) and block.get("type") not in _UNMARKABLE:
            return index
    return None


def _marked_last(blocks: list[Any]) -> list[Any] | None:
    """``blocks`` with the last markable one marked, or ``None`` (none, or it has a mark)."""
    index = _last_markable(blocks)
    if index is None or "cache_control" in blocks[index]:
        return None
    return [*blocks[:index], {**blocks[index], "cache_control": _MARK}, *blocks[index + 1 :]]


def _as_blocks(content: Any) -> list[Any] | None:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else None
    return list(content) if isinstance(content, list) else None


def place_breakpoints(
    places: Collection[str],
    system: str | Sequence[dict[str, Any]] | None,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """Return ``(system, messages, tools)`` with ``cache_control`` marks at ``places``.

    ``system`` is a string or a list of blocks (as :func:`~mellea_ctx.to_anthropic`
    gives it). The marks already there count towards the limit of four, and
    none is moved or overwritten (see the module docstring). The inputs are
    not modified: what gains a mark is copied.

    Examples:
        >>> system, messages, tools = place_breakpoints(
        ...     {"system", "history"}, "Be brief.", [{"role": "user", "content": "hi"}], []
        ... )
        >>> system
        [{'type': 'text', 'text': 'Be brief.', 'cache_control': {'type': 'ephemeral'}}]
        >>> messages[-1]["content"]
        [{'type': 'text', 'text': 'hi', 'cache_control': {'type': 'ephemeral'}}]
    """
    sent_system: str | list[dict[str, Any]] | None = (
        system if system is None or isinstance(system, str) else list(system)
    )
    sent_tools = list(tools)
    sent = list(messages)
    system_marks, history_marks = _marks(sent_system), _marks(sent)
    room = LIMIT - len(_marks(sent_tools)) - len(system_marks) - len(history_marks)
    if "history" in places and sent and room > 0:
        last = sent[-1]
        blocks = _as_blocks(last.get("content"))
        marked = _marked_last(blocks) if blocks is not None else None
        if marked is not None:
            sent[-1] = {**last, "content": marked}
            room -= 1
    if "system" in places and sent_system and room > 0 and not _long(history_marks):
        blocks = _as_blocks(sent_system)
        marked = _marked_last(blocks) if blocks is not None else None
        if marked is not None:
            sent_system = marked
            room -= 1
    ahead = system_marks + history_marks
    if (
        "tools" in places
        and sent_tools
        and room > 0
        and not _long(ahead)
        and "cache_control" not in sent_tools[-1]
    ):
        sent_tools[-1] = {**sent_tools[-1], "cache_control": _MARK}
    return sent_system, sent, sent_tools
