"""Summaries within the summarizer's window: budgeted rendering, chunking, typed refusal."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    Component,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    Message,
    ScriptedBackend,
    SpanTooLargeError,
    TiktokenCounter,
    ToolCall,
    ToolMessage,
)
from mellea_ctx._backends.windows import known_window
from mellea_ctx._compaction.render_budget import Shortener, fit_conversation
from mellea_ctx._formats.openai import from_openai

from .helpers import CORPUS

REAL_SPAN = CORPUS / "claudecode_opus46_session_precompact.openai.json"
COUNTER = TiktokenCounter()


def count(text: str) -> int:
    return COUNTER.count(Message("user", text))


def build(components: Sequence[Component]) -> ChatContext:
    ctx = ChatContext()
    for component in components:
        ctx = ctx.add(component)
    return ctx


class Recorder:
    """A summarizer that records the token size of each request it gets."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, messages: Sequence[Component], options: Mapping[str, Any]) -> str:
        self.sizes.append(sum(COUNTER.count(message) for message in messages))
        return f"Summary {len(self.sizes)}: worked on src/app.py."


def tool_session(exchanges: int, output_chars: int) -> list[Component]:
    span: list[Component] = [Message("user", "Fix the parser in src/app.py.")]
    for i in range(exchanges):
        call = ToolCall(f"c{i}", "bash", {"command": f"cat part_{i}.txt"})
        span.append(Message("assistant", f"Reading part {i}.", tool_calls=[call]))
        body = f"error: part_{i}.txt line 3 is bad\n" + "filler text here\n" * (output_chars // 17)
        span.append(ToolMessage(body, tool_call_id=f"c{i}"))
    return span


class TestContextWindow:
    def test_every_backend_takes_and_exposes_it(self) -> None:
        """ScriptedBackend and ExtractiveBackend keep the window they were given."""
        assert ScriptedBackend(lambda m, o: "x", context_window=4096).context_window == 4096
        assert ScriptedBackend(lambda m, o: "x").context_window is None
        assert ExtractiveBackend(context_window=8192).context_window == 8192

    @pytest.mark.parametrize("bad", [0, 100, -1, True, "4k", 4096.0])
    def test_invalid_window_is_refused(self, bad: object) -> None:
        """A window that is not an int of tokens >= 256 names the argument and the fix."""
        with pytest.raises(ValueError, match=r"context_window=.* must be an int of tokens"):
            ScriptedBackend(lambda m, o: "x", context_window=bad)  # type: ignore[arg-type]

    def test_known_defaults(self) -> None:
        """The models the docs name have their documented window."""
        assert known_window("gpt-4o-mini") == 128_000
        assert known_window("claude-sonnet-4-6") == 1_000_000  # Anthropic models overview
        assert known_window("unknown-model") is None


class TestBudgetedRendering:
    def test_fits_without_shortening_when_room(self) -> None:
        """A span that fits is rendered whole: no fixed cut of long tool output."""
        span = tool_session(1, 6_000)
        rendered = fit_conversation(span, 10_000, count, Shortener())
        assert rendered is not None
        assert "omitted" not in rendered

    def test_longest_outputs_shortened_first_keeping_detail_lines(self) -> None:
        """Under a tight budget the long output is cut, its detail line kept, the short one not."""
        span = [
            *tool_session(1, 20_000),
            ToolMessage("short output", tool_call_id="c9"),
        ]
        middle = "x\n" * 2_000 + "fatal: src/deep.py exploded\n" + "x\n" * 2_000
        span[2] = ToolMessage(span[2].content + middle + "y\n" * 5_000, tool_call_id="c0")
        rendered = fit_conversation(span, 2_000, count, Shortener(("src/deep.py",)))
        assert rendered is not None
        assert count(rendered) <= 2_000
        assert "fatal: src/deep.py exploded" in rendered
        assert "short output" in rendered
        assert "omitted" in rendered


class TestChunking:
    def test_span_larger_than_window_is_chunked(self) -> None:
        """Each request fits the window, several are made, and the summary is applied."""
        recorder = Recorder()
        backend = ScriptedBackend(recorder, context_window=1_024)
        compactor = LLMSummarizeCompactor(keep_n=1, strict=True)
        result = compactor.compact(build(tool_session(12, 3_000)), backend=backend)
        assert len(recorder.sizes) > 1
        assert max(recorder.sizes) <= 1_024
        assert isinstance(result[0], Checkpoint)
        assert result[0].summary == f"Summary {len(recorder.sizes)}: worked on src/app.py."

    def test_each_chunk_carries_the_summary_so_far(self) -> None:
        """From the second request on, the earlier summary is in the prompt."""
        seen: list[str] = []

        def handler(messages: Sequence[Component], options: Mapping[str, Any]) -> str:
            seen.append(messages[-1].content)
            return f"Summary {len(seen)} of the work."

        backend = ScriptedBackend(handler, context_window=1_024)
        LLMSummarizeCompactor(keep_n=1, strict=True).compact(
            build(tool_session(12, 3_000)), backend=backend
        )
        assert len(seen) > 1
        assert all(f"Summary {i} of the work." in seen[i] for i in range(1, len(seen)))

    def test_unit_too_large_is_refused_with_a_typed_error(self) -> None:
        """A user message larger than the window on its own cannot be summarized in chunks."""
        huge = Message("user", "word " * 3_000)
        span = [huge, Message("assistant", "ok"), Message("user", "next")]
        backend = ScriptedBackend(lambda m, o: "summary", context_window=1_024)
        with pytest.raises(SpanTooLargeError, match="cannot fit the summarizer's input budget"):
            LLMSummarizeCompactor(keep_n=1, strict=True).compact(build(span), backend=backend)

    @pytest.mark.skipif(not REAL_SPAN.exists(), reason="needs ../shared/corpus")
    def test_real_span_at_a_4096_token_window(self) -> None:
        """The real Claude Code span compacts against a 4,096-token summarizer."""
        span = from_openai(json.loads(REAL_SPAN.read_text()))
        recorder = Recorder()
        backend = ScriptedBackend(recorder, context_window=4_096)
        result = LLMSummarizeCompactor(keep_n=0, strict=True).compact(build(span), backend=backend)
        assert len(recorder.sizes) > 1
        assert max(recorder.sizes) <= 4_096
        assert isinstance(result[0], Checkpoint)
        assert len(result) == 1
