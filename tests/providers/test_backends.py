"""The OpenAI and Anthropic backends, through the real SDKs, over real HTTP to loopback servers."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

import anthropic
import openai
import pytest

from mellea_ctx import (
    AnthropicBackend,
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    ChatContext,
    Checkpoint,
    CompactionRecord,
    CompactionWarning,
    Component,
    LLMSummarizeCompactor,
    MalformedResponseError,
    Message,
    ModelOutputThunk,
    OpenAIBackend,
    RateLimitError,
    RequestRejectedError,
    ServerError,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
)
from mellea_ctx._backends.errors import map_sdk_error

from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

HISTORY: list[Component] = [
    Message("system", "You are a coding agent."),
    Message("user", "Find the retry limit."),
    Message("assistant", "", tool_calls=[ToolCall("call_1", "grep", {"q": "retry"})]),
    ToolMessage("config.toml:3: retry = 5", tool_call_id="call_1", name="grep"),
    Message("assistant", "The retry limit is 5, in config.toml."),
]


def generate(backend: Any, messages: list[Component] = HISTORY, **options: Any) -> ModelOutputThunk:
    return asyncio.run(backend.generate(messages, model_options=options or None))


def long_context() -> ChatContext:
    ctx = ChatContext()
    for component in HISTORY:
        ctx = ctx.add(component)
    for i in range(8):
        ctx = ctx.add(
            Message("user", f"Step {i}: please also look at module_{i}.py and report. " * 3)
        )
        ctx = ctx.add(
            Message("assistant", f"module_{i}.py has no retry logic; nothing to change. " * 3)
        )
    return ctx


class TestOpenAIBackend:
    def test_sends_chat_completions_and_parses_the_answer(
        self, openai_server: OpenAIWireServer
    ) -> None:
        """The request carries the model, the history and the options; text and usage come back."""
        openai_server.reply("Found it.", usage=(120, 30))
        backend = OpenAIBackend("gpt-4o-mini", base_url=openai_server.base_url, api_key="test")
        output = generate(backend, max_tokens=64, temperature=0)
        assert (output.value, output.usage.total_tokens if output.usage else None) == (
            "Found it.",
            150,
        )
        body = openai_server.requests[0].json
        assert (body["model"], body["max_tokens"], body["temperature"]) == ("gpt-4o-mini", 64, 0)
        assert [m["role"] for m in body["messages"]] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert body["messages"][3]["tool_call_id"] == "call_1"
        assert openai_server.requests[0].headers.get("authorization") == "Bearer test"

    def test_options_the_sdk_does_not_name_still_reach_the_server(
        self, openai_server: OpenAIWireServer
    ) -> None:
        """vLLM's ``top_k`` is no parameter of the SDK's create: it goes in the body."""
        openai_server.reply("ok")
        backend = OpenAIBackend(
            "m", base_url=openai_server.base_url, model_options={"top_k": 20, "temperature": 0}
        )
        generate(backend, extra_body={"min_p": 0.1})
        body = openai_server.requests[0].json
        assert (body["top_k"], body["min_p"], body["temperature"]) == (20, 0.1, 0)

    def test_tool_calls_come_back_as_tool_calls(self, openai_server: OpenAIWireServer) -> None:
        """A completion made of tool calls parses into ToolCall values."""
        openai_server.reply(tool_calls=[("call_9", "ls", '{"path": "src"}')])
        backend = OpenAIBackend("m", base_url=openai_server.base_url)
        output = generate(backend)
        assert output.tool_calls == (ToolCall("call_9", "ls", '{"path": "src"}'),)

    def test_local_server_needs_no_key(
        self, openai_server: OpenAIWireServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A base_url without any key works (local servers), but OpenAI itself needs one."""
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        openai_server.reply("ok")
        assert generate(OpenAIBackend("m", base_url=openai_server.base_url)).value == "ok"
        with pytest.raises(Exception, match="needs an API key"):
            OpenAIBackend("gpt-4o-mini")

    @pytest.mark.parametrize(
        ("status", "expected"),
        [
            (429, RateLimitError),
            (500, ServerError),
            (502, ServerError),
            (503, ServerError),
            (400, RequestRejectedError),
            (401, RequestRejectedError),
            (404, RequestRejectedError),
        ],
    )
    def test_http_errors_map_to_ours(
        self, openai_server: OpenAIWireServer, status: int, expected: type
    ) -> None:
        """Each HTTP failure arrives as our typed error, chained to the SDK's."""
        openai_server.fail(status, retry_after=2 if status == 429 else None)
        backend = OpenAIBackend("m", base_url=openai_server.base_url)
        with pytest.raises(expected) as info:
            generate(backend)
        assert isinstance(info.value.__cause__, openai.OpenAIError)
        assert info.value.status_code == status
        if status == 429:
            assert info.value.retry_after == 2.0  # type: ignore[attr-defined]

    def test_transport_failures_map_to_ours(self, openai_server: OpenAIWireServer) -> None:
        """A hang times out, a reset is a connection error, a broken body is malformed."""
        backend = OpenAIBackend("m", base_url=openai_server.base_url, timeout=0.5)
        openai_server.hang()
        with pytest.raises(BackendTimeoutError):
            generate(backend)
        openai_server.reset()
        with pytest.raises((BackendConnectionError, MalformedResponseError)):
            generate(backend)
        openai_server.malformed()
        with pytest.raises(BackendError):
            generate(backend)


class TestAnthropicBackend:
    def test_system_apart_and_tool_blocks(self, anthropic_server: AnthropicWireServer) -> None:
        """The system prompt goes apart, tool calls and results become blocks, roles alternate."""
        anthropic_server.reply("Found it.", usage=(200, 20))
        backend = AnthropicBackend(
            "claude-x",
            base_url=anthropic_server.base_url,
            api_key="test",
            cache_breakpoints=(),  # the plain format; tests/providers/test_cache.py has the marks
        )
        output = generate(backend)
        assert (output.value, output.usage.total_tokens if output.usage else None) == (
            "Found it.",
            220,
        )
        body = anthropic_server.requests[0].json
        assert body["system"] == "You are a coding agent."
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
        assert body["messages"][1]["content"][0] == {
            "type": "tool_use",
            "id": "call_1",
            "name": "grep",
            "input": {"q": "retry"},
        }
        assert body["messages"][2]["content"][0]["type"] == "tool_result"
        assert body["max_tokens"] == 2_048

    def test_options_the_sdk_does_not_name_still_reach_the_server(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """``temperature``, which anthropic 2.14's create no longer names, is sent in the body."""
        anthropic_server.reply("ok")
        backend = AnthropicBackend(
            "claude-x",
            base_url=anthropic_server.base_url,
            api_key="test",
            model_options={"temperature": 0, "top_k": 5},
        )
        generate(backend)
        body = anthropic_server.requests[0].json
        assert (body["temperature"], body["top_k"], body["max_tokens"]) == (0, 5, 2_048)

    def test_tool_use_answer(self, anthropic_server: AnthropicWireServer) -> None:
        """A tool_use answer parses into ToolCall values with JSON arguments."""
        anthropic_server.reply(tool_calls=[("toolu_1", "read", '{"path": "a.py"}')])
        backend = AnthropicBackend("claude-x", base_url=anthropic_server.base_url, api_key="test")
        assert generate(backend).tool_calls == (ToolCall("toolu_1", "read", '{"path": "a.py"}'),)

    @pytest.mark.parametrize(
        ("status", "expected"),
        [
            (429, RateLimitError),
            (500, ServerError),
            (529, ServerError),
            (400, RequestRejectedError),
        ],
    )
    def test_http_errors_map_to_ours(
        self, anthropic_server: AnthropicWireServer, status: int, expected: type
    ) -> None:
        """Each HTTP failure arrives as our typed error, chained to the SDK's."""
        anthropic_server.fail(status)
        backend = AnthropicBackend("claude-x", base_url=anthropic_server.base_url, api_key="test")
        with pytest.raises(expected) as info:
            generate(backend)
        assert isinstance(info.value.__cause__, anthropic.AnthropicError)

    def test_needs_a_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a key the backend says where to put one."""
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        with pytest.raises(Exception, match="ANTHROPIC_API_KEY"):
            AnthropicBackend("claude-x")


class TestCompactionOverHTTP:
    def test_summarizes_through_openai(self, openai_server: OpenAIWireServer) -> None:
        """A real summary round trip: the checkpoint holds the server's text."""
        openai_server.reply("Looked for the retry limit (5, config.toml); modules checked.")
        compactor = LLMSummarizeCompactor(
            default_backend=OpenAIBackend("m", base_url=openai_server.base_url), keep_n=2
        )
        ctx = long_context()
        result = compactor.compact(ctx)
        assert isinstance(result[1], Checkpoint)
        assert "retry limit (5" in result[1].content
        assert result.token_count < ctx.token_count
        prompt = openai_server.requests[0].json["messages"][-1]["content"]
        assert "[assistant called grep id=call_1]" in prompt

    def test_rate_limit_then_success_is_retried(self, openai_server: OpenAIWireServer) -> None:
        """A 429 with Retry-After is waited out, then the summary applies."""
        openai_server.fail(429, retry_after=0.05)
        openai_server.reply("Summary after a retry.")
        compactor = LLMSummarizeCompactor(
            default_backend=OpenAIBackend("m", base_url=openai_server.base_url), keep_n=2
        )
        result = compactor.compact(long_context())
        assert len(openai_server.requests) == 2
        assert "Summary after a retry." in result[1].content

    def test_persistent_failure_leaves_the_context(self, openai_server: OpenAIWireServer) -> None:
        """Three 503s with retries=2: the very same context comes back, recorded and warned."""
        for _ in range(3):
            openai_server.fail(503)
        records: list[CompactionRecord] = []
        compactor = LLMSummarizeCompactor(
            default_backend=OpenAIBackend("m", base_url=openai_server.base_url),
            keep_n=2,
            retries=2,
            on_record=records.append,
        )
        ctx = long_context()
        with pytest.warns(CompactionWarning, match="HTTP 503"):
            assert compactor.compact(ctx) is ctx
        assert (len(openai_server.requests), records[-1].outcome) == (3, "failed")

    def test_empty_completion_is_refused(self, anthropic_server: AnthropicWireServer) -> None:
        """An empty answer is not applied as a summary."""
        anthropic_server.empty()
        backend = AnthropicBackend("claude-x", base_url=anthropic_server.base_url, api_key="test")
        compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=2)
        ctx = long_context()
        with pytest.warns(CompactionWarning, match="empty summary"):
            assert compactor.compact(ctx) is ctx

    def test_a_hanging_server_cannot_hold_compaction(self, openai_server: OpenAIWireServer) -> None:
        """The compaction timeout bounds a server that never answers, whatever the SDK timeout."""
        openai_server.hang()
        compactor = LLMSummarizeCompactor(
            default_backend=OpenAIBackend("m", base_url=openai_server.base_url, timeout=60),
            keep_n=2,
            timeout=0.5,
        )
        ctx = long_context()
        started = time.perf_counter()
        with pytest.warns(CompactionWarning, match="timeout"):
            assert compactor.compact(ctx) is ctx
        assert time.perf_counter() - started < 5

    def test_compact_inside_a_running_loop_and_acompact(
        self, openai_server: OpenAIWireServer
    ) -> None:
        """Sync compact inside a running loop and acompact both complete over HTTP."""
        openai_server.reply("First summary.")
        openai_server.reply("Second summary.")
        compactor = TokenBudgetCompactor(
            max_tokens=200,
            keep_recent_tokens=60,
            default_backend=OpenAIBackend("m", base_url=openai_server.base_url),
        )
        ctx = long_context()

        async def caller() -> tuple[ChatContext, ChatContext]:
            return compactor.compact(ctx), await compactor.acompact(ctx)

        sync_result, async_result = asyncio.run(caller())
        assert isinstance(sync_result[1], Checkpoint) and isinstance(async_result[1], Checkpoint)


def _sdk_exception_classes(module: Any) -> list[type[BaseException]]:
    base = module.OpenAIError if module is openai else module.AnthropicError
    return [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, base) and not cls.__name__.startswith("_")
    ]


# HTTP statuses of the SDKs' named status classes, as the providers document them.
HTTP_STATUS = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "RequestTimeoutError": 408,
    "ConflictError": 409,
    "UnprocessableEntityError": 422,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "ServiceUnavailableError": 503,
    "OverloadedError": 529,
}


def _expected(cls: type[BaseException]) -> type[BackendError]:
    names = {klass.__name__ for klass in cls.__mro__}
    status = getattr(cls, "status_code", None)
    if not isinstance(status, int):
        named = [HTTP_STATUS[k.__name__] for k in cls.__mro__ if k.__name__ in HTTP_STATUS]
        status = named[0] if named else None
    if "APITimeoutError" in names or status == 408:
        return BackendTimeoutError
    if "APIConnectionError" in names:
        return BackendConnectionError
    if "APIResponseValidationError" in names:
        return MalformedResponseError
    if status == 429:
        return RateLimitError
    if isinstance(status, int) and (status >= 500 or status == 409):
        return ServerError
    if isinstance(status, int) and 400 <= status < 500:
        return RequestRejectedError
    return BackendError


class TestEverySDKErrorIsMapped:
    @pytest.mark.parametrize("module", [openai, anthropic], ids=["openai", "anthropic"])
    def test_every_exception_class(self, module: Any) -> None:
        """Every exception class the SDK exports maps to the right one of ours."""
        classes = _sdk_exception_classes(module)
        assert len(classes) >= 10
        for cls in classes:
            error = cls.__new__(cls)
            BaseException.__init__(error, f"{cls.__name__} raised")
            mapped = map_sdk_error(error, module.__name__)
            expected = _expected(cls)
            assert type(mapped) is expected, (cls.__name__, type(mapped).__name__)
            assert mapped.retryable == expected.retryable

    def test_canonical_classes(self) -> None:
        """The classes users meet most land where the docs say."""
        cases = {
            openai.RateLimitError: RateLimitError,
            openai.InternalServerError: ServerError,
            openai.BadRequestError: RequestRejectedError,
            openai.AuthenticationError: RequestRejectedError,
            openai.APITimeoutError: BackendTimeoutError,
            openai.APIConnectionError: BackendConnectionError,
            openai.APIResponseValidationError: MalformedResponseError,
            anthropic.RateLimitError: RateLimitError,
            anthropic.InternalServerError: ServerError,
            anthropic.APITimeoutError: BackendTimeoutError,
        }
        for sdk_class, ours in cases.items():
            assert _expected(sdk_class) is ours, sdk_class
        if hasattr(anthropic, "OverloadedError"):
            assert _expected(anthropic.OverloadedError) is ServerError
