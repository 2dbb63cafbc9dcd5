"""Anthropic prompt-cache breakpoints: where a Messages request marks ``cache_control``.

Anthropic caches a prompt prefix only up to a block marked
``"cache_control": {"type": "ephemeral"}``, and reads it back on a later
request that repeats the prefix exactly (tools, then system, then messages).
:func:`place_breakpoints` marks up to three places, each one optional:

* ``"tools"``: the last tool definition (the definitions rarely change);
* ``"system"``: the system prompt (it becomes one text block);
* ``"history"``: the last block of the last message, so the next request,
  which repeats the whole history and adds to it, reads it all from cache;
  and the last block before the last assistant message (where the request
  before this one ended). A read is found at most 20 blocks before a mark
  ("add an additional explicit breakpoint" before more, the prompt-caching
  page), and one agent step with many parallel tool calls adds more than
  20: without that second mark, its next request would read no more than
  the tools and system. It costs nothing: the cache writes only past the
  prefix it read.

Marks already in the history (Claude Code's transcripts carry them) are
kept as they are and count: with them, ours are placed only while the
request stays within the API's limit of four breakpoints, the history mark
first (it caches the most), then the system and the tools marks, then the
previous request's end. Ours are
5-minute marks, and "cache entries with longer TTL must appear before
shorter TTLs" (the prompt-caching docs, on mixing TTLs; the order is tools,
system, messages), so none of ours goes ahead of a ``"ttl": "1h"`` mark:
that mark already caches everything before it. A block that already has a
mark is never given another. Thinking blocks cannot carry a breakpoint, so
the last other block is marked.

:func:`predict_cache` says, for each request of a run, what those marks make
the cache read and write under Anthropic's documented rules (see its docs).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs

from .._core.checks import require_int
from .._core.exceptions import InvalidArgumentError
from .._core.tokens import default_counter

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
    if "history" in places and sent and room > 0 and _mark_message(sent, len(sent) - 1):
        room -= 1
    if "system" in places and sent_system and room > 0 and not _long(history_marks):
        marked = _marked_end(sent_system)
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
        room -= 1
    previous = _previous_end(sent)
    if "history" in places and previous is not None and room > 0 and not _long(history_marks):
        _mark_message(sent, previous)
    return sent_system, sent, sent_tools


def _marked_end(content: Any) -> list[dict[str, Any]] | None:
    """``content`` as blocks with its last one marked, or ``None`` when it cannot take a mark."""
    blocks = _as_blocks(content)
    return _marked_last(blocks) if blocks is not None else None


def _mark_message(messages: list[dict[str, Any]], index: int) -> bool:
    """Mark the end of ``messages[index]`` (a copy in its place); whether it took the mark."""
    marked = _marked_end(messages[index].get("content"))
    if marked is None:
        return False
    messages[index] = {**messages[index], "content": marked}
    return True


def _previous_end(messages: Sequence[dict[str, Any]]) -> int | None:
    """The message before the last assistant message, when something follows that one."""
    if not messages or messages[-1].get("role") == "assistant":
        return None  # a prefilled answer: the request before ended elsewhere
    for index in range(len(messages) - 2, 0, -1):
        if messages[index].get("role") == "assistant":
            return index - 1
    return None


@attrs.define(frozen=True, slots=True)
class CacheUse:
    """One request's prompt, as the cache bills it: tokens read, written, and neither.

    ``read`` is Anthropic's ``cache_read_input_tokens``, ``write`` its
    ``cache_creation_input_tokens`` and ``uncached`` its ``input_tokens``.
    """

    read: int
    write: int
    uncached: int


def _block_tokens(block: Mapping[str, Any]) -> int:
    return default_counter().count_text(json.dumps(block, sort_keys=True))


def _request_blocks(request: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``request``'s blocks in the order the cache reads them: tools, system, messages."""
    out: list[tuple[str, Mapping[str, Any]]] = [("tools", t) for t in request.get("tools") or ()]
    for where, content in [("system", request.get("system"))] + [
        (f"{i}:{m.get('role')}", m.get("content")) for i, m in enumerate(request["messages"])
    ]:
        out += [(where, block) for block in _as_blocks(content) or ()]
    return out


def predict_cache(
    requests: Iterable[Mapping[str, Any]],
    count: Callable[[Mapping[str, Any]], int] | None = None,
    *,
    minimum: int = 1_024,
    lookback: int = 20,
) -> list[CacheUse]:
    """Return what the prompt cache reads and writes for each of ``requests``, in order.

    ``requests`` are Messages request bodies as a run sent them (what
    :meth:`AnthropicBackend.request <mellea_ctx.AnthropicBackend.request>`
    builds), to one cache that starts empty. The rules, from Anthropic's
    prompt-caching page: a marked block caches the whole prefix up to it,
    tools, system and messages in that order (the marks themselves are not
    part of it), when that prefix has at least ``minimum`` tokens (1,024 for
    most models; 2,048 or 4,096 for some, see the page's table). A request
    reads the longest prefix an earlier request cached that ends at one of the
    ``lookback`` block boundaries up to one of its marks, and writes from there
    to its last cached mark; the rest is uncached input. This is the planner's
    cache model (the next request reads what the last one cached and writes
    the rest; after a compaction, the pinned prefix) at the provider's grain:
    blocks and marks, not whole messages. Entries never expire here (no
    clock: a run inside the cache's lifetime). Not modelled: the top-level
    ``cache_control`` of automatic caching (the backend does not send it),
    and a change of ``tool_choice`` or ``thinking``, which the page says
    invalidates the cached messages.

    ``count`` gives one block's tokens (a ``dict`` without its
    ``cache_control``); by default the default counter on its JSON.

    Examples:
        >>> mark = {"type": "ephemeral"}
        >>> request = {
        ...     "model": "claude-sonnet-4-5",
        ...     "system": [{"type": "text", "text": "x" * 1_500, "cache_control": mark}],
        ...     "messages": [{"role": "user", "content": "hi"}],
        ... }
        >>> letters = lambda block: len(block["text"])  # one token a character
        >>> predict_cache([request, request], letters)
        [CacheUse(read=0, write=1500, uncached=2), CacheUse(read=1500, write=0, uncached=2)]
    """
    require_int("predict_cache", "minimum", minimum, unit="tokens")
    require_int("predict_cache", "lookback", lookback, minimum=1, about="block boundaries")
    size = count or _block_tokens
    cached: set[bytes] = set()  # the digests of the prefixes written so far
    uses: list[CacheUse] = []
    for request in requests:
        found = _request_blocks(request)
        marks = [i for i, (_, block) in enumerate(found) if "cache_control" in block]
        ends: list[int] = []  # ends[i]: tokens up to and including block i
        keys: list[bytes] = []  # keys[i]: the digest of that prefix, behind the model
        chain = hashlib.sha256(str(request.get("model")).encode())
        for where, block in found:
            bare = {k: v for k, v in block.items() if k != "cache_control"}
            ends.append((ends[-1] if ends else 0) + size(bare))
            chain.update(json.dumps([where, bare], sort_keys=True).encode() + b"\n")
            keys.append(chain.copy().digest())
        hit = next(
            (
                i
                for mark in reversed(marks)
                for i in range(mark, max(mark - lookback, -1), -1)
                if keys[i] in cached
            ),
            -1,
        )
        read = ends[hit] if hit >= 0 else 0
        new = [i for i in marks if i > hit and ends[i] >= minimum]
        cached.update(keys[i] for i in new)
        write = ends[new[-1]] - read if new else 0
        uses.append(CacheUse(read, write, (ends[-1] if ends else 0) - read - write))
    return uses
