"""Anthropic's documented request rules, written from the docs alone, for the loopback server.

This is the test side's own reading of what the Messages API refuses with a
400, independent of the package's validator, so that a test can disagree
with it. Sources:

* Messages API reference, ``messages``: the first message is a user turn;
  every message has non-empty content (only a final assistant message may
  be empty); text blocks must contain non-whitespace text
  (https://docs.anthropic.com/en/api/messages).
* Tool use: each ``tool_use`` is answered by a ``tool_result`` in the very
  next (user) message, results first in it; ids match ``^[a-zA-Z0-9_-]+$``
  (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use).
* Extended thinking with tools: thinking blocks go back unmodified, signature
  intact; while a tool loop continues, the loop's assistant turn must start
  with a ``thinking`` or ``redacted_thinking`` block ("a final assistant
  message must start with a thinking block, preceding the lastmost set of
  tool_use and tool_result blocks"), and the model writes thinking on the
  loop's first step (https://docs.anthropic.com/claude/docs/build-with-claude/extended-thinking).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["request_violations", "sign"]

_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_THINKING = ("thinking", "redacted_thinking")


def sign(text: str) -> str:
    """The signature the loopback server gives a thinking block (and checks when it comes back)."""
    return "sig_" + hashlib.sha256(text.encode()).hexdigest()[:24]


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, Mapping)]


def _text_problems(where: str, blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        f"{where}.content.{i}: text content blocks must contain non-whitespace text"
        for i, block in enumerate(blocks)
        if block.get("type") == "text" and not str(block.get("text", "")).strip()
    ]


def request_violations(body: Mapping[str, Any], redacted: set[str]) -> list[str]:
    """Return what Anthropic would refuse in ``body``; ``redacted`` holds the data it issued."""
    problems: list[str] = []
    messages = body.get("messages") or []
    if not messages:
        return ["messages: at least one message is required"]
    system = body.get("system")
    if isinstance(system, str) and not system.strip():
        problems.append("system: text content blocks must contain non-whitespace text")
    elif isinstance(system, list):
        problems += _text_problems("system", system)
    if messages[0].get("role") != "user":
        problems.append("messages.0.role: the first message must use the user role")
    pending: list[str] = []  # tool_use ids the next message must answer
    seen: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        role, content = message.get("role"), message.get("content")
        blocks = _blocks(content)
        last = index == len(messages) - 1
        if not blocks and not (last and role == "assistant"):
            problems.append(f"{where}: all messages must have non-empty content")
        problems += _text_problems(where, blocks)
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        kinds = [b.get("type") for b in blocks]
        if pending:
            if role != "user" or set(pending) - set(results):
                missing = sorted(set(pending) - set(results))
                problems.append(
                    f"{where}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {missing}"
                )
            if kinds[: len(results)] != ["tool_result"] * len(results):
                problems.append(f"{where}: tool_result blocks must come first in the message")
        for result in results:
            if result not in pending:
                problems.append(f"{where}: unexpected tool_use_id {result!r} in tool_result")
        pending = []
        for position, block in enumerate(blocks):
            kind = block.get("type")
            if kind in _THINKING and role != "assistant":
                problems.append(f"{where}.content.{position}: thinking only in assistant turns")
            if kind == "thinking" and block.get("signature") != sign(str(block.get("thinking"))):
                problems.append(f"{where}.content.{position}: Invalid signature in thinking block")
            if kind == "redacted_thinking" and block.get("data") not in redacted:
                problems.append(f"{where}.content.{position}: Invalid redacted_thinking data")
            if kind == "tool_use" and role == "assistant":
                call_id = str(block.get("id"))
                if not _TOOL_ID.match(call_id) or call_id in seen:
                    problems.append(f"{where}.content.{position}.id: {call_id!r} is not valid")
                seen.add(call_id)
                pending.append(call_id)
    problems += _thinking_loop(body, messages)
    return problems


def _thinking_loop(body: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """While a tool loop continues, its first assistant message must start with thinking."""
    thinking = body.get("thinking")
    if not (isinstance(thinking, Mapping) and thinking.get("type") == "enabled"):
        return []

    def has_results(message: Mapping[str, Any]) -> bool:
        return any(b.get("type") == "tool_result" for b in _blocks(message.get("content")))

    if messages[-1].get("role") != "user" or not has_results(messages[-1]):
        return []  # no loop goes on: a new user turn needs no earlier thinking
    start = len(messages) - 1
    while start > 0 and (
        messages[start].get("role") == "assistant" or has_results(messages[start])
    ):
        start -= 1
    first = start if messages[start].get("role") == "assistant" else start + 1
    blocks = _blocks(messages[first].get("content"))
    if not blocks or blocks[0].get("type") not in _THINKING:
        found = blocks[0].get("type") if blocks else "nothing"
        return [
            f"messages.{first}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{found}`. When `thinking` is enabled, a final `assistant` message must "
            "start with a thinking block (preceding the lastmost set of `tool_use` and "
            "`tool_result` blocks)."
        ]
    return []
