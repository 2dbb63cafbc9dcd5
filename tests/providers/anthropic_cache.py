"""Anthropic's prompt cache, counted by the loopback server from the docs alone.

The test side's own reading of the prompt-caching rules, written without the
package's code (``mellea_ctx._backends.cache_control.predict_cache`` is what a
test holds up against it). Source: "Prompt caching",
https://platform.claude.com/docs/en/build-with-claude/prompt-caching:

* "Prompt caching references the entire prompt - tools, system, and messages
  (in that order) up to and including the block designated with
  cache_control." A prefix is the key, so here the key is the exact JSON of
  every block up to the marked one (``cache_control`` itself left out: moving
  the mark down a growing conversation reads the prefix an earlier request
  marked) behind the request's model.
* Each marked block whose prefix reaches the model's minimum cacheable length
  is written; a shorter one "will not be cached", without an error.
* Reads: "the system automatically checks for cache hits at all previous
  content block boundaries", at most "20 blocks before each explicit
  breakpoint"; when none of them was written, it moves on to the breakpoint
  before. The longest prefix found is read.
* Usage: ``cache_read_input_tokens`` is the prefix read,
  ``cache_creation_input_tokens`` the tokens from there to the last written
  breakpoint, ``input_tokens`` what follows it ("tokens after the last cache
  breakpoint").

Tokens are the server's own unit: by default one per 4 characters of a
block's JSON, at least one (``count`` replaces it). Entries do not expire
(a test runs well inside the 5-minute lifetime), and ``tool_choice`` or
``thinking`` changes, which the docs say invalidate the message cache, are
not modelled.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LOOKBACK", "PromptCache", "blocks", "json_tokens", "minimum_tokens"]

#: How many block boundaries before a breakpoint are checked for an earlier entry.
LOOKBACK = 20

# "Minimum cacheable prompt length" (same page), by model name prefix, the first match.
_MINIMUMS = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
    ("claude-haiku-3", 2048),
)


def minimum_tokens(model: str) -> int:
    """The shortest prefix ``model`` caches: 1,024 unless the table says otherwise."""
    for prefix, minimum in _MINIMUMS:
        if model.startswith(prefix):
            return minimum
    return 1024


def json_tokens(block: Mapping[str, Any]) -> int:
    """The server's token count of one block: a token per 4 characters of its JSON."""
    return max(1, len(json.dumps(block, sort_keys=True)) // 4)


def _bare(block: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key != "cache_control"}


def blocks(body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The request's blocks in cache order, each with where it sits: tools, system, messages."""
    found: list[tuple[str, Mapping[str, Any]]] = [
        ("tools", tool) for tool in body.get("tools") or ()
    ]
    system = body.get("system")
    if isinstance(system, str):
        found.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        found += [("system", block) for block in system]
    for index, message in enumerate(body.get("messages") or ()):
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        where = f"messages.{index}.{message.get('role')}"
        found += [(where, block) for block in parts or ()]
    return found


class PromptCache:
    """The cache entries one server holds, and the usage each request is billed.

    Args:
        count: Tokens of one block (default: :func:`json_tokens`).
    """

    def __init__(self, count: Callable[[Mapping[str, Any]], int] = json_tokens) -> None:
        self.count = count
        self._entries: set[str] = set()
        self._lock = threading.Lock()
        #: Per completion request: ``(input_tokens, cache_read, cache_written)``.
        self.reports: list[tuple[int, int, int]] = []

    def bill(self, body: Mapping[str, Any]) -> tuple[int, int, int]:
        """Serve ``body`` from the cache, write its breakpoints, return its usage."""
        found = blocks(body)
        keys: list[str] = []  # keys[i]: the prefix ending with block i
        sizes: list[int] = []  # sizes[i]: its tokens
        chain = hashlib.sha256(json.dumps(str(body.get("model"))).encode())
        total = 0
        for where, block in found:
            chain.update(json.dumps([where, _bare(block)], sort_keys=True).encode())
            keys.append(chain.hexdigest())
            total += self.count(_bare(block))
            sizes.append(total)
        marks = [i for i, (_, block) in enumerate(found) if "cache_control" in block]
        minimum = minimum_tokens(str(body.get("model", "")))
        with self._lock:
            read_end = -1
            for mark in reversed(marks):
                hits = [
                    i for i in range(mark, max(-1, mark - LOOKBACK), -1) if keys[i] in self._entries
                ]
                if hits:
                    read_end = hits[0]
                    break
            written = [i for i in marks if i > read_end and sizes[i] >= minimum]
            self._entries.update(keys[i] for i in written)
            read = sizes[read_end] if read_end >= 0 else 0
            write = sizes[written[-1]] - read if written else 0
            report = (total - read - write, read, write)
            self.reports.append(report)
        return report
