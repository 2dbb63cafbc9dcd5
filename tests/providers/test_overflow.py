"""Context overflow: each provider's wording maps to ContextOverflowError, and react recovers once.

The wordings are the providers' own, as their servers send them (OpenAI's
``context_length_exceeded``, vLLM's and llama.cpp's OpenAI-compatible error
bodies, Anthropic's ``prompt is too long``), played by the loopback servers
through the real SDKs.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mellea_ctx import (
    AnthropicBackend,
    ChatContext,
    ClearToolResultsCompactor,
    ContextOverflowError,
    Event,
    Message,
    ModelOutputThunk,
    OpenAIBackend,
    ReactInitiator,
    RequestRejectedError,
    ThresholdCompactor,
    TieredCompactor,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    react,
    tool,
)

from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

OPENAI = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130532 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
VLLM = {
    "object": "error",
    "message": "This model's maximum context length is 16384 tokens. However, you requested "
    "122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length "
    "of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 4476,
        "n_ctx": 4096,
    }
}
LLAMA_CPP_OLD = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
    }
}
ANTHROPIC = "prompt is too long: 208656 tokens > 200000 maximum"


def _openai(server: OpenAIWireServer) -> OpenAIBackend:
    return OpenAIBackend("m", base_url=server.base_url, api_key="test")


def _anthropic(server: AnthropicWireServer) -> AnthropicBackend:
    return AnthropicBackend("claude-x", base_url=server.base_url, api_key="test")


def _generate(backend: Any) -> Any:
    return asyncio.run(backend.generate([Message("user", "hi")]))


class TestMapping:
    """Each provider's overflow answer arrives as ContextOverflowError with its sizes."""

    @pytest.mark.parametrize(
        ("body", "sizes"),
        [
            (OPENAI, (130532, 128000)),
            (VLLM, (122946, 16384)),
            (LLAMA_CPP, (4476, 4096)),
            (LLAMA_CPP_OLD, (None, None)),
        ],
        ids=["openai", "vllm", "llama.cpp", "llama.cpp-old"],
    )
    def test_openai_compatible_wordings(self, openai_server: OpenAIWireServer, body, sizes):
        """OpenAI, vLLM and llama.cpp bodies all map, with the sizes they state."""
        openai_server.raw(json.dumps(body).encode(), status=400)
        with pytest.raises(ContextOverflowError) as info:
            _generate(_openai(openai_server))

        assert sizes == (info.value.prompt_tokens, info.value.limit_tokens)
        assert 400 == info.value.status_code
        assert isinstance(info.value, RequestRejectedError)
        assert "longer than the model's context window" in str(info.value)

    def test_anthropic_wording(self, anthropic_server: AnthropicWireServer):
        """Anthropic's ``prompt is too long: M tokens > N maximum`` maps, with both sizes."""
        anthropic_server.fail(400, message=ANTHROPIC)
        with pytest.raises(ContextOverflowError) as info:
            _generate(_anthropic(anthropic_server))

        assert (208656, 200000) == (info.value.prompt_tokens, info.value.limit_tokens)

    def test_other_rejections_stay_rejections(
        self, openai_server: OpenAIWireServer, anthropic_server: AnthropicWireServer
    ):
        """A 400 about something else is not an overflow."""
        openai_server.fail(400, message="Invalid value for 'temperature'.")
        anthropic_server.fail(400, message="messages: roles must alternate")
        for backend in (_openai(openai_server), _anthropic(anthropic_server)):
            with pytest.raises(RequestRejectedError) as info:
                _generate(backend)
            assert not isinstance(info.value, ContextOverflowError)


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


COMPACTOR = WindowCompactor(size=2)  # keeps the goal: it is the newest component
# react compacts before its first call too, so a window alone would already have cut the
# first request; gated far above these histories, it cuts only when forced by an overflow.
ON_OVERFLOW = ThresholdCompactor(COMPACTOR, threshold=100_000)
SERVERS = pytest.mark.parametrize("provider", ["openai", "anthropic"])


def _server(provider: str, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(f"{provider}_server")


def _overflow(provider: str, server: Any) -> None:
    if provider == "openai":
        server.raw(json.dumps(OPENAI).encode(), status=400)
    else:
        server.fail(400, message=ANTHROPIC)


def _backend(provider: str, server: Any) -> Any:
    return _openai(server) if provider == "openai" else _anthropic(server)


def _sent(server: Any) -> list[int]:
    """The number of messages in each completion request the server received."""
    return [len(r.json["messages"]) for r in server.requests if r.method == "POST"]


class TestReactRecovery:
    """react compacts once, forced, and retries once; it never loops."""

    @SERVERS
    def test_recovers_with_one_compaction_and_one_retry(self, provider, request):
        """An overflow answer is followed by one smaller request, whose answer is kept."""
        server = _server(provider, request)
        _overflow(provider, server)
        server.reply("done")
        events: list[Event] = []
        result = react(
            "Answer.",
            _history(),
            _backend(provider, server),
            compactor=ON_OVERFLOW,
            on_event=events.append,
        )

        assert "done" == result.answer
        first, second = _sent(server)
        assert second < first
        kinds = [e.kind for e in events]
        assert 1 == kinds.count("context_overflow")
        assert 1 == kinds.count("compaction_started")
        started = kinds.index("compaction_started")
        assert kinds[started + 1] == "compaction_applied"

    @SERVERS
    def test_refuses_when_the_pinned_prefix_alone_overflows(self, provider, request):
        """When compacting cannot shorten the history, the typed error says so, with sizes."""
        server = _server(provider, request)
        _overflow(provider, server)
        ctx = ChatContext().add(Message("system", "You are terse. " * 50))
        with pytest.raises(ContextOverflowError, match="compacting could not shorten it") as info:
            react("Answer.", ctx, _backend(provider, server), compactor=COMPACTOR)

        assert 1 == len(_sent(server))
        assert "tokens by our count before" in str(info.value)
        assert info.value.limit_tokens in (128000, 200000)

    @SERVERS
    def test_a_second_overflow_is_raised_not_retried(self, provider, request):
        """A retried request that overflows too raises, after exactly two requests."""
        server = _server(provider, request)
        _overflow(provider, server)
        _overflow(provider, server)
        server.reply("never")
        with pytest.raises(ContextOverflowError, match="after one forced compaction"):
            react("Answer.", _history(), _backend(provider, server), compactor=ON_OVERFLOW)

        assert 2 == len(_sent(server))

    def test_without_a_compactor_the_error_says_how_to_fix(self, openai_server):
        """With no compactor there is nothing to try: the error suggests one."""
        _overflow("openai", openai_server)
        with pytest.raises(ContextOverflowError, match="pass compactor="):
            react("Answer.", _history(), _openai(openai_server))

    def test_tiered_compactor_recovers(self, openai_server):
        """A tiered compactor is forced past its trigger on overflow."""
        _overflow("openai", openai_server)
        openai_server.reply("done")
        tiers = TieredCompactor(
            [ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0), COMPACTOR],
            max_tokens=0.9,
            window="gpt-4o",
        )
        result = react("Answer.", _history(), _openai(openai_server), compactor=tiers)

        assert "done" == result.answer
        first, second = _sent(openai_server)
        assert second < first

    def test_tool_definitions_count_against_the_budget(self, openai_server):
        """A history at its trigger by itself is over it with the tool definitions sent."""
        openai_server.reply("", tool_calls=[("c1", "lookup", '{"key": "a"}')])
        openai_server.reply("done")
        ctx = _history()
        turn_two = [
            ReactInitiator("Answer."),
            ModelOutputThunk(None, tool_calls=[ToolCall("c1", "lookup", '{"key": "a"}')]),
            ToolMessage(lookup.function("a"), tool_call_id="c1", name="lookup"),
        ]
        history_only = ctx.token_count + sum(ctx.counter.count(c) for c in turn_two)
        records: list[Any] = []
        tiers = TieredCompactor([COMPACTOR], max_tokens=history_only, on_record=records.append)
        react("Answer.", ctx, _openai(openai_server), tools=[lookup], compactor=tiers)

        assert [0] == [r.tier for r in records]
        assert records[0].tokens_before == history_only
