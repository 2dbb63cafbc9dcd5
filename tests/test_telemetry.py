"""The ``mellea_ctx`` logger and the OpenTelemetry spans of compactions and summary calls."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

from mellea_ctx import (
    ClearToolResultsCompactor,
    Component,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    OpenAIBackend,
    RequestRejectedError,
    ScriptedBackend,
    ServerError,
    SupersededReadsCompactor,
    TieredCompactor,
    ToolCall,
    ToolMessage,
    Usage,
)

from .helpers import build
from .providers.openai_server import OpenAIWireServer

SYSTEM = Message("system", "You are a coding agent.")


def chatter(n: int) -> list[Component]:
    """n alternating user/assistant messages, each long enough to be worth summarizing."""
    return [
        Message(
            "user" if i % 2 == 0 else "assistant",
            f"Message {i}: we looked at module_{i}.py and discussed its retry logic at length.",
        )
        for i in range(n)
    ]


def summary(messages: Sequence[Component], options: Any) -> ModelOutputThunk:
    return ModelOutputThunk("They discussed retries.", usage=Usage(120, 7))


class Flaky:
    """Raise the given errors in turn, then answer."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)

    def __call__(self, messages: Sequence[Component], options: Any) -> ModelOutputThunk:
        if self.errors:
            raise self.errors.pop(0)
        return summary(messages, options)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A real SDK tracer provider, set globally for this test only, exporting to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # set_tracer_provider may run once per process; the SDK's own test utilities reset
    # these two globals the same way, so each test starts unconfigured again.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


def named(finished: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [span for span in finished if span.name.startswith(prefix)]


class TestLogger:
    def test_an_applied_compaction_is_one_info_line(self, caplog: pytest.LogCaptureFixture) -> None:
        """The line names the strategy, the outcome and the tokens before and after."""
        compactor = LLMSummarizeCompactor(default_backend=ScriptedBackend(summary), keep_n=2)
        ctx = build(SYSTEM, *chatter(8))
        with caplog.at_level(logging.INFO, logger="mellea_ctx"):
            after = compactor.compact(ctx)
        (line,) = [r for r in caplog.records if r.name == "mellea_ctx"]
        assert logging.INFO == line.levelno
        text = line.getMessage()
        assert "compaction applied by LLMSummarizeCompactor" in text
        assert f"{ctx.token_count} -> {after.token_count} tokens" in text
        assert "applied" == line.compaction.outcome  # type: ignore[attr-defined]

    def test_a_failed_compaction_is_a_warning(self, caplog: pytest.LogCaptureFixture) -> None:
        """A rejected summary request leaves the context and logs a WARNING with the reason."""
        backend = ScriptedBackend(Flaky(RequestRejectedError("bad request")))
        compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=2, retries=0)
        with (
            caplog.at_level(logging.INFO, logger="mellea_ctx"),
            pytest.warns(UserWarning, match="compaction failed"),
        ):
            compactor.compact(build(SYSTEM, *chatter(8)))
        (line,) = [r for r in caplog.records if r.name == "mellea_ctx"]
        assert logging.WARNING == line.levelno
        assert "compaction failed by LLMSummarizeCompactor" in line.getMessage()
        assert "bad request" in line.getMessage()

    def test_each_retry_is_a_warning(self, caplog: pytest.LogCaptureFixture) -> None:
        """A retryable failure that is retried logs the error, the retry number and the wait."""
        backend = ScriptedBackend(Flaky(ServerError("overloaded", status_code=503)))
        compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=2, retries=2)
        with caplog.at_level(logging.INFO, logger="mellea_ctx"):
            compactor.compact(build(SYSTEM, *chatter(8)))
        levels = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "mellea_ctx"]
        assert [logging.WARNING, logging.INFO] == [level for level, _ in levels]
        assert "ServerError: overloaded" in levels[0][1]
        assert "retry 1 of 2 in 0.50s" in levels[0][1]

    def test_nothing_reaches_the_root_logger_unconfigured(self) -> None:
        """The package logger has a NullHandler, so Python's last-resort handler stays quiet."""
        logger = logging.getLogger("mellea_ctx")
        assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


class TestSpans:
    def test_a_compaction_span_holds_a_chat_span(self, spans: InMemorySpanExporter) -> None:
        """One compaction span with our attributes, one client span per summary request."""
        compactor = LLMSummarizeCompactor(default_backend=ScriptedBackend(summary), keep_n=2)
        ctx = build(SYSTEM, *chatter(8))
        after = compactor.compact(ctx)
        finished = spans.get_finished_spans()
        (compact,) = named(finished, "compact ")
        (chat,) = named(finished, "chat")
        assert "compact LLMSummarizeCompactor" == compact.name
        attributes = dict(compact.attributes or {})
        assert {
            "gen_ai.operation.name": "compact",
            "mellea_ctx.compaction.strategy": "LLMSummarizeCompactor",
            "mellea_ctx.compaction.outcome": "applied",
            "mellea_ctx.compaction.tokens_before": ctx.token_count,
            "mellea_ctx.compaction.tokens_after": after.token_count,
        }.items() <= attributes.items()
        assert chat.parent is not None and compact.context.span_id == chat.parent.span_id
        assert SpanKind.CLIENT == chat.kind
        assert {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "scriptedbackend",
            "gen_ai.usage.input_tokens": 120,
            "gen_ai.usage.output_tokens": 7,
        } == dict(chat.attributes or {})

    def test_a_retried_request_is_two_chat_spans(self, spans: InMemorySpanExporter) -> None:
        """The failed attempt's span says its error type; the compaction still applies."""
        backend = ScriptedBackend(Flaky(ServerError("overloaded", status_code=503)))
        LLMSummarizeCompactor(default_backend=backend, keep_n=2, retries=1).compact(
            build(SYSTEM, *chatter(8))
        )
        chats = named(spans.get_finished_spans(), "chat")
        assert ["ServerError", None] == [s.attributes.get("error.type") for s in chats]  # type: ignore[union-attr]

    def test_a_failed_compaction_span_is_an_error(self, spans: InMemorySpanExporter) -> None:
        """The span's status is ERROR, with the error type and the outcome."""
        backend = ScriptedBackend(Flaky(RequestRejectedError("bad request")))
        compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=2, retries=0)
        with pytest.warns(UserWarning):
            compactor.compact(build(SYSTEM, *chatter(8)))
        (compact,) = named(spans.get_finished_spans(), "compact ")
        assert StatusCode.ERROR == compact.status.status_code
        assert "failed" == compact.attributes["mellea_ctx.compaction.outcome"]  # type: ignore[index]
        assert "RequestRejectedError" == compact.attributes["error.type"]  # type: ignore[index]

    def test_an_sdk_backend_names_its_model(self, spans: InMemorySpanExporter) -> None:
        """Over loopback HTTP, the chat span carries the provider, the model and the usage."""
        with OpenAIWireServer() as server:
            server.reply("They discussed retries.", usage=(321, 9))
            backend = OpenAIBackend("gpt-4o-mini", base_url=server.base_url, api_key="k")
            LLMSummarizeCompactor(default_backend=backend, keep_n=2).compact(
                build(SYSTEM, *chatter(8))
            )
        (chat,) = named(spans.get_finished_spans(), "chat")
        assert "chat gpt-4o-mini" == chat.name
        assert {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 321,
            "gen_ai.usage.output_tokens": 9,
        } == dict(chat.attributes or {})


def tool_history(turns: int) -> list[Component]:
    """``turns`` tool exchanges reading the same file, each result long enough to clear."""
    items: list[Component] = [Message("user", "Fix the bug in app.py.")]
    for i in range(turns):
        call = ToolCall(f"c{i}", "read_file", '{"path": "app.py"}')
        items.append(Message("assistant", "", tool_calls=(call,)))
        text = f"version {i}: " + "line of code\n" * 200
        items.append(ToolMessage(text, tool_call_id=f"c{i}", name="read_file"))
    return items


def every_compactor_that_records() -> list[tuple[str, Any]]:
    """One of each compactor that makes a record without the summary engine."""
    return [
        ("ClearToolResultsCompactor", ClearToolResultsCompactor(keep_last=1, min_clear_tokens=1)),
        ("SupersededReadsCompactor", SupersededReadsCompactor(min_clear_tokens=1)),
        (
            "TieredCompactor",
            TieredCompactor([ClearToolResultsCompactor(keep_last=1)], max_tokens=100),
        ),
    ]


class TestOneRecordPath:
    """Regression (issue 20): these records reached the hook but never the logger or a span."""

    @pytest.mark.parametrize(("strategy", "compactor"), every_compactor_that_records())
    def test_the_logger_hears_it(
        self, caplog: pytest.LogCaptureFixture, strategy: str, compactor: Any
    ) -> None:
        with caplog.at_level(logging.INFO, logger="mellea_ctx"):
            compactor.compact(build(*tool_history(4)))
        lines = [r for r in caplog.records if r.name == "mellea_ctx"]
        assert any(f"by {strategy}" in r.getMessage() for r in lines), [
            r.getMessage() for r in lines
        ]

    @pytest.mark.parametrize(("strategy", "compactor"), every_compactor_that_records())
    def test_a_span_of_its_own(
        self, spans: InMemorySpanExporter, strategy: str, compactor: Any
    ) -> None:
        tracer = trace.get_tracer("the application")
        with tracer.start_as_current_span("agent step"):
            compactor.compact(build(*tool_history(4)))
        finished = spans.get_finished_spans()
        ours = named(finished, f"compact {strategy}")
        assert ours, [s.name for s in finished]
        attributes = ours[0].attributes or {}
        assert attributes["mellea_ctx.compaction.outcome"] == "applied"
        (step,) = named(finished, "agent step")
        assert not any(k.startswith("mellea_ctx.") for k in (step.attributes or {}))
