"""Compaction at its edges: deadlines, foreign backend errors, and clean tracebacks.

Each test here pins a behaviour of issue 12 that was wrong on the landed code:
a result that arrives after the timeout is never applied, any ``Exception``
from a backend is a backend failure, and errors out of the blocking calls
carry no stray context from the bridge.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from mellea_ctx import (
    BackendError,
    ChatContext,
    CompactionRecord,
    CompactionTimeoutError,
    CompactionWarning,
    Component,
    LLMSummarizeCompactor,
    Message,
    ScriptedBackend,
    TokenBudgetCompactor,
    react,
)

from .helpers import build

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


def context() -> ChatContext:
    return build(SYSTEM, *chatter(12))


class Late:
    """A summarizer that answers only after ``release`` is set or ``patience`` seconds pass."""

    def __init__(self, patience: float = 4.0) -> None:
        self.release = threading.Event()
        self.done = threading.Event()
        self.patience = patience

    def blocking(self, messages: Sequence[Component], options: object) -> str:
        """Blocks its event loop (synchronous I/O inside an async backend)."""
        self.release.wait(self.patience)
        self.done.set()
        return "A late summary."

    async def stubborn(self, messages: Sequence[Component], options: object) -> str:
        """Ignores cancellation and keeps going."""
        loop = asyncio.get_running_loop()
        end = loop.time() + self.patience
        while not self.release.is_set() and loop.time() < end:
            try:
                await asyncio.sleep(0.02)
            except asyncio.CancelledError:
                continue
        self.done.set()
        return "A late summary."


def compactor(backend: ScriptedBackend, records: list[CompactionRecord], **kw: Any) -> Any:
    return LLMSummarizeCompactor(
        default_backend=backend, keep_n=2, timeout=0.5, on_record=records.append, **kw
    )


class TestDeadlines:
    @pytest.mark.parametrize("fault", ["blocking", "stubborn"])
    def test_compact_gives_up_and_never_applies_a_late_summary(self, fault: str) -> None:
        """compact(timeout=0.5) is back while the backend runs; its late summary is dropped."""
        late = Late()
        records: list[CompactionRecord] = []
        ctx = context()
        with pytest.warns(CompactionWarning, match="did not finish within timeout=0.5"):
            result = compactor(ScriptedBackend(getattr(late, fault)), records).compact(ctx)
        still_running = not late.done.is_set()
        late.release.set()
        assert late.done.wait(10)
        assert still_running  # before the fix: back only once the late summary was applied
        assert result is ctx
        assert ["timed_out"] == [r.outcome for r in records]
        assert "CompactionTimeoutError" in (records[0].error or "")

    def test_acompact_gives_up_on_a_backend_that_ignores_cancellation(self) -> None:
        """acompact(timeout=0.5) returns the input while a stubborn backend still runs."""
        late = Late()
        records: list[CompactionRecord] = []
        ctx = context()

        async def run() -> tuple[ChatContext, bool]:
            backend = ScriptedBackend(late.stubborn)
            result = await compactor(backend, records).acompact(ctx)
            running = not late.done.is_set()
            late.release.set()
            await asyncio.sleep(0.1)
            return result, running

        with pytest.warns(CompactionWarning, match="timeout=0.5"):
            result, still_running = asyncio.run(run())
        assert still_running
        assert result is ctx
        assert ["timed_out"] == [r.outcome for r in records]

    def test_strict_raises_the_timeout(self) -> None:
        """strict=True raises CompactionTimeoutError for a backend that blocks its loop."""
        late = Late()
        records: list[CompactionRecord] = []
        with pytest.raises(CompactionTimeoutError):
            compactor(ScriptedBackend(late.blocking), records, strict=True).compact(context())
        late.release.set()
        assert late.done.wait(10)
        assert ["timed_out"] == [r.outcome for r in records]


class Foreign(Exception):
    """An error of a user's own backend, not one of ours."""


@pytest.mark.parametrize("error", [RuntimeError("down"), KeyError("choices"), Foreign("http")])
@pytest.mark.parametrize("kind", ["summarize", "budget"])
class TestForeignBackendErrors:
    def _compactor(self, kind: str, error: Exception, records: list[CompactionRecord], **kw: Any):
        def fail(messages: Sequence[Component], options: object) -> str:
            raise error

        backend = ScriptedBackend(fail)
        if kind == "summarize":
            return LLMSummarizeCompactor(
                default_backend=backend, keep_n=2, on_record=records.append, **kw
            )
        return TokenBudgetCompactor(
            default_backend=backend,
            max_tokens=60,
            keep_recent_tokens=20,
            on_record=records.append,
            **kw,
        )

    def test_is_recorded_and_warned_and_leaves_the_context(
        self, kind: str, error: Exception
    ) -> None:
        """Any Exception from generate leaves the context as it was, with a failed record."""
        records: list[CompactionRecord] = []
        ctx = context()
        with pytest.warns(CompactionWarning, match=type(error).__name__):
            result = self._compactor(kind, error, records).compact(ctx)
        assert result is ctx
        assert ["failed"] == [r.outcome for r in records]

    def test_strict_raises_a_backend_error_chaining_the_original(
        self, kind: str, error: Exception
    ) -> None:
        """strict=True raises BackendError whose cause is the backend's own error."""
        records: list[CompactionRecord] = []
        with pytest.raises(BackendError) as raised:
            self._compactor(kind, error, records, strict=True).compact(context())
        assert raised.value.__cause__ is error

    def test_inline_add_survives(self, kind: str, error: Exception) -> None:
        """Riding inline behind a threshold, a foreign error does not break add()."""
        from mellea_ctx import ThresholdCompactor

        records: list[CompactionRecord] = []
        gate = ThresholdCompactor(self._compactor(kind, error, records), threshold=50)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CompactionWarning)
            ctx = build(SYSTEM, *chatter(12), compactor=gate)
        assert len(ctx) == 13
        assert records and {"failed"} == {r.outcome for r in records}


class TestCancellationIsNotSwallowed:
    def test_keyboard_interrupt_passes_through(self) -> None:
        """A BaseException from the backend is not turned into a backend failure."""

        def interrupt(messages: Sequence[Component], options: object) -> str:
            raise KeyboardInterrupt

        records: list[CompactionRecord] = []
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(compactor(ScriptedBackend(interrupt), records).acompact(context()))


class TestCleanTracebacks:
    def test_react_errors_carry_no_stray_context(self) -> None:
        """An error out of blocking react() has no 'no running event loop' as its context."""

        def fail(messages: Sequence[Component], options: object) -> str:
            raise Foreign("boom")

        with pytest.raises(Foreign) as raised:
            react("do it", ChatContext(), ScriptedBackend(fail))
        assert raised.value.__context__ is None

    def test_compact_errors_carry_no_stray_context(self) -> None:
        """A strict error out of blocking compact() has no stray RuntimeError context."""

        def fail(messages: Sequence[Component], options: object) -> str:
            raise Foreign("boom")

        records: list[CompactionRecord] = []
        with pytest.raises(BackendError) as raised:
            compactor(ScriptedBackend(fail), records, strict=True).compact(context())
        chain: list[BaseException] = []
        error: BaseException | None = raised.value
        while error is not None:
            chain.append(error)
            error = error.__cause__ or error.__context__
        assert not [e for e in chain if "no running event loop" in str(e)]


class TestCustomCounters:
    def test_a_counter_subclass_that_overrides_count_still_triggers(self) -> None:
        """A TiktokenCounter subclass adding 40 per component trips the gate (before: never)."""
        from mellea_ctx import ThresholdCompactor, TiktokenCounter, WindowCompactor

        class Padded(TiktokenCounter):
            def count(self, component: Component) -> int:
                return super().count(component) + 40

        gate = ThresholdCompactor(WindowCompactor(size=1), threshold=100)
        ctx = ChatContext(compactor=gate, counter=Padded())
        for text in ["a", "b", "c"]:
            ctx = ctx.add(Message("user", text))
        assert len(ctx) == 1


class TestWindowEvents:
    def _events(self, goal_calls: int, force: bool) -> list[str]:
        from mellea_ctx import Event, ToolCall, WindowCompactor, tool

        @tool
        def noop() -> str:
            """Do nothing."""
            return "done"

        turns = iter(range(goal_calls + 1))

        def model(messages: Sequence[Component], options: object) -> Any:
            from mellea_ctx import ModelOutputThunk

            n = next(turns)
            if n < goal_calls:
                name = "compact_context" if force and n == 0 else "noop"
                return ModelOutputThunk(None, tool_calls=[ToolCall(f"c{n}", name, "{}")])
            return "finished"

        events: list[Event] = []
        ctx = build(SYSTEM, *chatter(4))
        react(
            "go",
            ctx,
            ScriptedBackend(model),
            tools=[noop],
            compactor=WindowCompactor(size=2),
            on_event=events.append,
        )
        return [e.kind for e in events if e.kind.startswith("compaction")]

    def test_a_window_cut_emits_a_compaction_event(self) -> None:
        """Each cut a window makes between turns is a compaction_applied event."""
        assert "compaction_applied" in self._events(2, force=False)

    def test_compact_context_with_a_window_completes(self) -> None:
        """compaction_started from compact_context is followed by its completion.

        react compacts before its first call too, so the window's first cut
        (unforced, no compaction_started) comes before the forced one.
        """
        kinds = self._events(1, force=True)
        started = kinds.index("compaction_started")
        assert kinds[started + 1] in ("compaction_applied", "compaction_skipped")


class TestThresholdCrossings:
    """Issue 12 item 3: one summary per crossing, not one per add."""

    LONG = "we looked at the retry logic of the parser module at length today. " * 4

    def _run(self, adds: int, **inner: Any) -> tuple[ChatContext, ScriptedBackend]:
        from mellea_ctx import ThresholdCompactor

        backend = ScriptedBackend(lambda messages, options: "Short summary.")
        summarizer = LLMSummarizeCompactor(default_backend=backend, keep_n=4, **inner)
        ctx = ChatContext(compactor=ThresholdCompactor(summarizer, threshold=120))
        for i in range(adds):  # four of these alone exceed the threshold
            role = "user" if i % 2 == 0 else "assistant"
            ctx = ctx.add(Message(role, f"{i}: {self.LONG}"))
        return ctx, backend

    def test_an_inner_compactor_that_cannot_get_under_is_not_run_on_every_add(self) -> None:
        """The issue's case: 12 adds made 8 summary calls before the fix; now one."""
        from mellea_ctx import Checkpoint

        ctx, backend = self._run(12)
        assert any(isinstance(c, Checkpoint) for c in ctx)
        assert len(backend.calls) == 1
        assert ctx.compaction_backoff > 0  # still over: the gate is held

    def test_the_gate_fires_again_once_the_hold_is_over(self) -> None:
        """The hold lasts ``backoff_adds`` adds; then the still-over history is summarized again."""
        _, backend = self._run(12, backoff_adds=2)
        assert 2 <= len(backend.calls) <= 4
        _, every_add = self._run(12, backoff_adds=0)
        assert len(every_add.calls) > len(backend.calls)  # 0: no hold, as before

    def test_a_compaction_that_gets_under_leaves_the_gate_armed(self) -> None:
        """A summary that gets under holds nothing: the next crossing fires at once."""
        from mellea_ctx import ThresholdCompactor

        backend = ScriptedBackend(lambda messages, options: "Short.")
        summarizer = LLMSummarizeCompactor(default_backend=backend, keep_n=1)
        ctx = ChatContext(compactor=ThresholdCompactor(summarizer, threshold=200))
        for i in range(8):
            ctx = ctx.add(Message("user" if i % 2 == 0 else "assistant", f"{i}: {self.LONG}"))
            assert ctx.compaction_backoff == 0
        assert len(backend.calls) >= 2
