"""The backends keep what the model sent (thinking, reasoning, refusals) and send only what
the provider accepts, through the real SDKs over loopback HTTP.

The Anthropic server here enforces its documented request rules
(``anthropic_rules.py``, written from Anthropic's docs, not from our validator):
a request that breaks one gets the 400 the real API would send.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mellea_ctx import (
    AnthropicBackend,
    ChatContext,
    Checkpoint,
    Component,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    OpenAIBackend,
    ScriptedBackend,
    ToolCall,
    ToolMessage,
    pin_system,
    react,
    tool,
    validate_openai,
)
from mellea_ctx._core.parts import RedactedThinkingPart, RefusalPart, TextPart, ThinkingPart

from .anthropic_rules import sign
from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
GOAL: list[Component] = [Message("system", "You are a coding agent."), Message("user", "Go.")]


def generate(backend: Any, messages: list[Component], **options: Any) -> ModelOutputThunk:
    return asyncio.run(backend.generate(messages, model_options=options or None))


@pytest.fixture
def strict_anthropic(anthropic_server: AnthropicWireServer) -> AnthropicWireServer:
    anthropic_server.enforce_rules = True
    return anthropic_server


def anthropic(server: AnthropicWireServer) -> AnthropicBackend:
    return AnthropicBackend("claude-wire-test", base_url=server.base_url, api_key="test")


class TestAnthropicThinking:
    def test_thinking_blocks_come_back_as_parts(
        self, strict_anthropic: AnthropicWireServer
    ) -> None:
        """Thinking (with its signature) and redacted thinking are parts, in order, before text."""
        strict_anthropic.reply(
            "Let me look.",
            thinking="plan: ls",
            redacted="EmwKAhgB",
            tool_calls=[("toolu_1", "ls", "{}")],
        )
        output = generate(anthropic(strict_anthropic), GOAL, **THINKING)
        assert (
            ThinkingPart("plan: ls", signature=sign("plan: ls"), provider="anthropic"),
            RedactedThinkingPart("EmwKAhgB", provider="anthropic"),
            TextPart("Let me look."),
        ) == output.parts
        assert "Let me look." == output.value
        assert ("toolu_1",) == tuple(call.id for call in output.tool_calls)

    def test_thinking_is_sent_back_unchanged(self, strict_anthropic: AnthropicWireServer) -> None:
        """The next step's request carries the assistant turn's blocks exactly as they came."""
        strict_anthropic.reply(
            thinking="I need ls.", redacted="opaque-1", tool_calls=[("toolu_1", "ls", "{}")]
        )
        strict_anthropic.reply("Two files.")
        backend = anthropic(strict_anthropic)
        first = generate(backend, GOAL, **THINKING)
        history = [*GOAL, first, ToolMessage("a.py b.py", tool_call_id="toolu_1")]
        assert "Two files." == generate(backend, history, **THINKING).value
        sent = strict_anthropic.requests[1].json["messages"][1]["content"]
        assert [
            {"type": "thinking", "thinking": "I need ls.", "signature": sign("I need ls.")},
            {"type": "redacted_thinking", "data": "opaque-1"},
            {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}},
        ] == sent
        assert [[], []] == strict_anthropic.violations

    def test_whitespace_text_the_model_wrote_is_not_sent_back(
        self, strict_anthropic: AnthropicWireServer
    ) -> None:
        """A blank text block before a tool call is kept in the output but left out of requests."""
        strict_anthropic.reply("\n\n", thinking="t", tool_calls=[("toolu_1", "ls", "{}")])
        strict_anthropic.reply("done")
        backend = anthropic(strict_anthropic)
        first = generate(backend, GOAL, **THINKING)
        assert TextPart("\n\n") in first.parts
        generate(backend, [*GOAL, first, ToolMessage("x", tool_call_id="toolu_1")], **THINKING)
        assert [[], []] == strict_anthropic.violations
        kinds = [b["type"] for b in strict_anthropic.requests[1].json["messages"][1]["content"]]
        assert ["thinking", "tool_use"] == kinds

    def test_empty_answer_is_not_sent_back_empty(
        self, strict_anthropic: AnthropicWireServer
    ) -> None:
        """An answer with no blocks is kept, but no empty assistant message goes out."""
        strict_anthropic.empty()
        strict_anthropic.reply("ok")
        backend = anthropic(strict_anthropic)
        empty = generate(backend, GOAL)
        generate(backend, [*GOAL, empty, Message("user", "Hello?")])
        assert [[], []] == strict_anthropic.violations

    def test_the_rules_reject_a_loop_without_its_thinking(
        self, strict_anthropic: AnthropicWireServer
    ) -> None:
        """The test-side rules refuse what the API refuses: a running loop without thinking."""
        history = [
            *GOAL,
            ModelOutputThunk(tool_calls=[ToolCall("toolu_1", "ls", "{}")]),
            ToolMessage("x", tool_call_id="toolu_1"),
        ]
        with pytest.raises(Exception, match="must start with a thinking block"):
            generate(anthropic(strict_anthropic), history, **THINKING)


@tool
def ls(path: str = ".") -> str:
    """List a directory.

    Args:
        path: The directory.
    """
    return f"{path}: a.py b.py"


class TestThinkingLoopThroughReact:
    def test_cut_in_the_middle_of_a_loop_keeps_every_request_valid(
        self, strict_anthropic: AnthropicWireServer
    ) -> None:
        """A summary mid-loop keeps the loop's first (thinking) step; every request is accepted."""
        strict_anthropic.reply(thinking="Plan: ls twice.", tool_calls=[("toolu_1", "ls", "{}")])
        strict_anthropic.reply("\n\n", tool_calls=[("toolu_2", "ls", '{"path": "src"}')])
        strict_anthropic.reply(tool_calls=[("toolu_3", "ls", '{"path": "tests"}')])
        strict_anthropic.reply("Found a.py and b.py everywhere.")
        ctx = ChatContext()
        for component in [
            Message("system", "You are a coding agent."),
            *(
                Message("user", f"Earlier question {i}, long enough to matter. " * 4)
                for i in range(3)
            ),
        ]:
            ctx = ctx.add(component)
        summarizer = ScriptedBackend(lambda messages, options: "Earlier: 3 questions.")
        compactor = LLMSummarizeCompactor(
            keep_n=2, pin_predicate=pin_system, default_backend=summarizer
        )
        result = react(
            "List the files.",
            ctx,
            anthropic(strict_anthropic),
            tools=[ls],
            compactor=compactor,
            model_options=THINKING,
        )
        assert "Found a.py and b.py everywhere." == result.answer
        assert 4 == len(strict_anthropic.requests)
        assert [[]] * 4 == strict_anthropic.violations
        assert any(isinstance(c, Checkpoint) for c in result.ctx.as_list())  # a cut happened
        last = strict_anthropic.requests[-1].json["messages"]
        loop_start = next(m for m in last if m["role"] == "assistant")
        assert "thinking" == loop_start["content"][0]["type"]


class TestOpenAIParts:
    def backend(self, server: OpenAIWireServer) -> OpenAIBackend:
        return OpenAIBackend("deepseek-wire", base_url=server.base_url, api_key="test")

    def test_reasoning_content_is_kept_and_sent_back(self, openai_server: OpenAIWireServer) -> None:
        """DeepSeek's reasoning_content is a thinking part and goes back with its tool calls."""
        openai_server.reply(reasoning="Need ls.", tool_calls=[("call_1", "ls", "{}")])
        openai_server.reply("Two files.")
        backend = self.backend(openai_server)
        first = generate(backend, GOAL)
        assert (ThinkingPart("Need ls.", provider="openai"),) == first.parts
        history = [*GOAL, first, ToolMessage("a.py b.py", tool_call_id="call_1")]
        generate(backend, history)
        sent = openai_server.requests[1].json["messages"][2]
        assert "Need ls." == sent["reasoning_content"]
        assert [] == validate_openai(history)

    def test_refusal_is_kept(self, openai_server: OpenAIWireServer) -> None:
        """A refusal is a part, and is sent back as the refusal it was."""
        openai_server.reply(refusal="I can't help with that.")
        openai_server.reply("ok")
        backend = self.backend(openai_server)
        first = generate(backend, GOAL)
        assert (RefusalPart("I can't help with that."),) == first.parts
        generate(backend, [*GOAL, first, Message("user", "Why?")])
        assert "I can't help with that." == openai_server.requests[1].json["messages"][2]["refusal"]

    def test_empty_answer_is_not_stored_as_null(self, openai_server: OpenAIWireServer) -> None:
        """An empty answer is empty text: the next request never carries content null alone."""
        openai_server.reply("")
        openai_server.reply("ok")
        backend = self.backend(openai_server)
        empty = generate(backend, GOAL)
        assert "" == empty.value
        generate(backend, [*GOAL, empty, Message("user", "Hello?")])
        sent = openai_server.requests[1].json["messages"][2]
        assert sent.get("content") is not None or sent.get("tool_calls")
