"""Continuation summaries on the wire: the agent's last request, byte for byte, plus one turn.

``react`` compacts with a ``TokenBudgetCompactor(request="continuation")``
whose summarizer is the agent's own backend; the loopback servers record
every request the real SDKs send, so the test compares the summary request
with the agent's request before it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mellea_ctx import (
    AnthropicBackend,
    ChatContext,
    Message,
    OpenAIBackend,
    TokenBudgetCompactor,
    react,
    tool,
)
from mellea_ctx._core.tool_tokens import count_tool_definitions

from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return "value " * 400


def _history() -> ChatContext:
    ctx = ChatContext().add(Message("system", "You are terse."))
    for i in range(6):
        ctx = ctx.add(Message("user", f"earlier question {i} " * 20))
        ctx = ctx.add(Message("assistant", f"earlier answer {i} " * 20))
    return ctx


def _backend(provider: str, server: Any) -> Any:
    if provider == "openai":
        return OpenAIBackend("m", base_url=server.base_url, api_key="test")
    return AnthropicBackend("claude-x", base_url=server.base_url, api_key="test")


def _posts(server: OpenAIWireServer | AnthropicWireServer) -> list[Any]:
    return [r for r in server.requests if r.method == "POST"]


def _no_breakpoints(value: Any) -> Any:
    """``value`` without Anthropic's ``cache_control`` markers (they move to the newest block).

    A breakpoint needs a block to sit on, so the backend sends the message it
    marks as a list of blocks and the same message unmarked as a string;
    Anthropic renders both alike, so both are compared as blocks.
    """
    if isinstance(value, dict):
        out = {k: _no_breakpoints(v) for k, v in value.items() if k != "cache_control"}
        if "role" in out and isinstance(out.get("content"), str):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_no_breakpoints(v) for v in value]
    return value


def _run(provider: str, server: Any, request: str) -> list[Any]:
    """Two agent turns; the second is compacted. Return the recorded POST bodies."""
    goal = "Look up the key alpha and report it."
    base = _history()
    framing = "anthropic" if provider == "anthropic" else "openai"
    before = base.add(Message("user", goal)).token_count + count_tool_definitions([lookup], framing)
    compactor = TokenBudgetCompactor(
        max_tokens=before + 200,  # the first turn fits; the tool's 400-token result does not
        target_tokens=before // 2,
        keep_recent_tokens=100,
        default_backend=_backend(provider, server),
        request=request,  # type: ignore[arg-type]
        strict=True,
    )
    server.reply(tool_calls=[("call_1", "lookup", {"key": "alpha"})])
    server.reply("The user asked six earlier questions; the agent answered each.")
    server.reply("alpha is value")
    result = react(goal, base, _backend(provider, server), tools=[lookup], compactor=compactor)
    assert "alpha is value" == result.answer
    return [r.json for r in _posts(server)]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_continuation_sends_the_previous_request_plus_one_turn(provider, request):
    """The summary request: the agent's last request, its reply and results, one new turn."""
    server = request.getfixturevalue(f"{provider}_server")
    agent, summary, after = (
        _no_breakpoints(body) for body in _run(provider, server, "continuation")
    )

    previous = agent["messages"]
    sent = summary["messages"]
    assert agent.get("tools") == summary.get("tools")  # the same tool definitions
    assert agent.get("system") == summary.get("system")  # Anthropic's system prompt
    # Every key but the messages and sampling options is the agent's own.
    assert agent["model"] == summary["model"]
    # The agent's previous messages are a prefix of the summary request, byte for byte.
    prefix = json.dumps(previous)[:-1]
    assert json.dumps(sent).startswith(prefix)
    assert sent[: len(previous)] == previous
    added = sent[len(previous) :]
    final = added[-1]
    assert "user" == final["role"]
    text = final["content"] if isinstance(final["content"], str) else final["content"][-1]["text"]
    assert text.startswith("<checkpoint_request ")
    assert "not instructions to you" in text
    if provider == "openai":  # the assistant's tool call, its result, then the one new turn
        assert ["assistant", "tool", "user"] == [m["role"] for m in added]
    else:  # Anthropic carries the result and the new turn in one user message
        assert ["assistant", "user"] == [m["role"] for m in added]
        assert ["tool_result", "text"] == [b["type"] for b in final["content"]]
    # The compaction applied: the next agent request is shorter than the summary request.
    assert len(json.dumps(after["messages"])) < len(json.dumps(sent))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_quoted_summary_stays_a_fresh_prompt(provider, request):
    """The default request sends two messages and no tools: nothing of the agent's prefix."""
    server = request.getfixturevalue(f"{provider}_server")
    agent, summary, _ = _run(provider, server, "quoted")

    assert "tools" in agent
    assert "tools" not in summary
    assert len(summary["messages"]) <= 2
    assert "<conversation>" in json.dumps(summary["messages"])
