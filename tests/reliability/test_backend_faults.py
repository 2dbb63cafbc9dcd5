"""Reliability class 1: provider faults, through the real SDKs, over loopback HTTP.

Every fault the wire servers of ``tests/providers`` can play is played to both
providers (``OpenAIBackend`` and ``AnthropicBackend``, through the official
SDKs) and to every way a summary is asked for: ``LLMSummarizeCompactor`` and
``TokenBudgetCompactor`` called by hand (``compact`` and ``acompact``), and
riding inline in a context (``TokenBudgetCompactor`` itself, and
``LLMSummarizeCompactor`` behind a ``ThresholdCompactor``), each lenient and
strict. What must hold, whatever the fault:

* the context handed in is exactly as it was (every component, its chain, its
  token total), and a lenient call returns it itself (inline: the node the add
  made, now backing off), warns once and records a ``failed`` record;
* a strict call raises the documented typed error instead;
* the number of requests the server received is exactly the bound:
  ``1 + retries`` for a retryable fault, 1 for the others.

Then the retry policy itself (Retry-After honoured, and bounded by the
compaction's timeout), the retry storm of an inline compactor while the
backend is down (now a backoff, counted in requests), and streaming.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mellea_ctx import (
    AnthropicBackend,
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    ChatContext,
    Checkpoint,
    CompactionRecord,
    CompactionTimeoutError,
    CompactionWarning,
    Component,
    EmptySummaryError,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    MalformedResponseError,
    Message,
    OpenAIBackend,
    RateLimitError,
    RequestRejectedError,
    ServerError,
    SummaryToolCallError,
    ThresholdCompactor,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
)
from mellea_ctx._compaction import engine as _engine

from ..providers import (
    Action,
    AnthropicWireServer,
    Break,
    Fail,
    Hang,
    OpenAIWireServer,
    Raw,
    Reply,
    ToolUse,
    WireServer,
)
from ..providers._wire import THREAD_PREFIX
from ..test_invariants import snapshot

PROVIDERS = ["openai", "anthropic"]
RETRIES = 2  # the compactors' default
# Seconds the SDK waits for one answer (hang and stall faults). The server counts a request
# once it has read it: on a loaded machine 0.3 s ran out before it had, twice in CI runs.
SDK_TIMEOUT = 1.0
# What it waits for a fault that is not a timeout: there a timeout would not be the fault.
ANSWER_TIMEOUT = 10.0


def timeout_for(fault: Fault) -> float:
    """The SDK's timeout for ``fault``: short only where the fault is a timeout."""
    return SDK_TIMEOUT if fault.error is BackendTimeoutError else ANSWER_TIMEOUT


def make_server(provider: str, handler: Callable[[Any], Action] | None = None) -> WireServer:
    kind = OpenAIWireServer if provider == "openai" else AnthropicWireServer
    return kind(handler, hang_limit=10)


def make_backend(provider: str, server: WireServer, **kwargs: Any) -> Any:
    kwargs.setdefault("timeout", SDK_TIMEOUT)
    if provider == "openai":
        return OpenAIBackend("gpt-wire", base_url=server.base_url, api_key="test", **kwargs)
    return AnthropicBackend("claude-wire", base_url=server.base_url, api_key="test", **kwargs)


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry waits of 10 ms, 20 ms instead of 0.5 s, 1 s: the bound, not the wait, is tested."""
    monkeypatch.setattr(_engine, "_RETRY_BASE_SECONDS", 0.01)


@pytest.fixture(autouse=True)
def _no_server_thread_outlives_its_test() -> Iterator[None]:
    yield
    assert [] == [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


HISTORY: list[Component] = [
    Message("system", "You are a coding agent."),
    Message("user", "Find the retry limit."),
    Message("assistant", "", tool_calls=[ToolCall("call_1", "grep", {"q": "retry"})]),
    ToolMessage("config.toml:3: retry = 5", tool_call_id="call_1", name="grep"),
    Message("assistant", "The retry limit is 5, in config.toml."),
]


def history() -> list[Component]:
    items = list(HISTORY)
    for i in range(8):
        items.append(Message("user", f"Step {i}: also look at module_{i}.py and report. " * 3))
        items.append(Message("assistant", f"module_{i}.py has no retry logic; no change. " * 3))
    return items


def built(compactor: Any = None, items: list[Component] | None = None) -> ChatContext:
    """A context of ``items`` that carries ``compactor``, built without compacting."""
    ctx = ChatContext(compactor=compactor)
    for component in history() if items is None else items:
        ctx = ChatContext.from_previous(ctx, component)
    return ctx


# -- the faults -------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One fault: the action the server plays for every request, and what it must become."""

    name: str
    action: Action
    error: type[Exception] | None  # None: not an error (the summary is simply not applied)
    chained: bool = True  # a BackendError carries the SDK's exception as __cause__

    @property
    def requests(self) -> int:
        retryable = self.error is not None and getattr(self.error, "retryable", False)
        return 1 + RETRIES if retryable else 1


LONG_SUMMARY = "The agent checked modules and found nothing to change in any of them. " * 120

FAULTS = [
    Fault("429 with Retry-After", Fail(429, retry_after=0.01), RateLimitError),
    Fault("429 with retry-after-ms", Fail(429, retry_after_ms=10), RateLimitError),
    Fault("429 without Retry-After", Fail(429), RateLimitError),
    Fault("500", Fail(500), ServerError),
    Fault("502", Fail(502), ServerError),
    Fault("503", Fail(503), ServerError),
    Fault("400 rejected", Fail(400), RequestRejectedError),
    Fault("reset mid-body", Break(after=1, ending="reset"), BackendConnectionError),
    Fault("closed mid-body", Break(after=1, ending="close"), BackendConnectionError),
    Fault("stalled mid-body", Break(after=1, ending="stall"), BackendTimeoutError),
    Fault("never answers", Hang(), BackendTimeoutError),
    Fault("malformed JSON", Raw(b'{"id": "cut", "choices": ['), MalformedResponseError),
    Fault(
        "HTML, not JSON",
        Raw(b"<html>502</html>", content_type="text/html"),
        MalformedResponseError,
        chained=False,
    ),
    Fault("empty completion", Reply(""), EmptySummaryError),
    Fault("whitespace completion", Reply(" \n\t "), EmptySummaryError),
    Fault(
        "only tool calls",
        Reply(tool_calls=(ToolUse("t1", "grep", '{"q": "x"}'),)),
        SummaryToolCallError,
    ),
    Fault("summary longer than its span", Reply(LONG_SUMMARY), None),
]


# -- the ways a summary is asked for ------------------------------------------------------


@dataclass
class Run:
    """What one compaction did: its result or error, its warnings and records."""

    result: ChatContext | None
    error: Exception | None
    warned: list[warnings.WarningMessage]
    records: list[CompactionRecord]


def settings(records: list[CompactionRecord], backend: Any, strict: bool) -> dict[str, Any]:
    return {"default_backend": backend, "strict": strict, "on_record": records.append}


def budget(records: list[CompactionRecord], backend: Any, strict: bool) -> TokenBudgetCompactor:
    return TokenBudgetCompactor(
        max_tokens=200, keep_recent_tokens=60, **settings(records, backend, strict)
    )


def summarizer(records: list[CompactionRecord], backend: Any, strict: bool) -> Any:
    return LLMSummarizeCompactor(keep_n=2, **settings(records, backend, strict))


def _by_hand(make: Callable[..., Any], via: str) -> Callable[..., tuple[ChatContext, Any]]:
    def run(records: list[CompactionRecord], backend: Any, strict: bool) -> Any:
        compactor = make(records, backend, strict)
        ctx = built()
        if via == "compact":
            return ctx, lambda: compactor.compact(ctx, **_force(compactor))
        return ctx, lambda: asyncio.run(compactor.acompact(ctx, **_force(compactor)))

    return run


def _force(compactor: Any) -> dict[str, Any]:
    return {"force": True} if isinstance(compactor, TokenBudgetCompactor) else {}


def _inline(make: Callable[..., Any]) -> Callable[..., tuple[ChatContext, Any]]:
    def run(records: list[CompactionRecord], backend: Any, strict: bool) -> Any:
        items = history()
        ctx = built(make(records, backend, strict), items[:-1])
        return ctx, lambda: ctx.add(items[-1])

    return run


def _gated(records: list[CompactionRecord], backend: Any, strict: bool) -> ThresholdCompactor:
    return ThresholdCompactor(summarizer(records, backend, strict), threshold=200)


MODES: dict[str, Callable[..., tuple[ChatContext, Any]]] = {
    "LLMSummarize.compact": _by_hand(summarizer, "compact"),
    "LLMSummarize.acompact": _by_hand(summarizer, "acompact"),
    "TokenBudget.compact": _by_hand(budget, "compact"),
    "TokenBudget.acompact": _by_hand(budget, "acompact"),
    "TokenBudget inline": _inline(budget),
    "Threshold(LLMSummarize) inline": _inline(_gated),
}


def play(mode: str, backend: Any, strict: bool) -> tuple[ChatContext, Run]:
    records: list[CompactionRecord] = []
    ctx, call = MODES[mode](records, backend, strict)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            result, error = call(), None
        except Exception as exc:
            result, error = None, exc
    return ctx, Run(result, error, list(warned), records)


@pytest.mark.reliability
class TestEveryFaultEveryWay:
    @pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
    @pytest.mark.parametrize("mode", list(MODES))
    @pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_context_unchanged_typed_error_bounded_requests(
        self, provider: str, fault: Fault, mode: str, strict: bool, quick_retries: None
    ) -> None:
        """The context is left as it was (or the typed error raised), in exactly the bound
        of requests."""
        # More faults than the bound: the count shows the bound, not the script's length.
        with make_server(provider, lambda body: fault.action) as server:
            backend = make_backend(provider, server, timeout=timeout_for(fault))
            ctx, run = play(mode, backend, strict)
            received = len(server.requests)
        before = snapshot(ctx)
        inline = mode.endswith("inline")

        assert fault.requests == received
        assert 1 == len(run.records)  # one record per compaction
        record = run.records[0]
        assert received == record.attempts
        if fault.error is None:  # not smaller: skipped, never an error, even when strict
            assert ("skipped", None, []) == (record.outcome, run.error, run.warned)
        elif strict:
            assert isinstance(run.error, fault.error), run.error
            assert run.result is None
        else:
            assert run.error is None
            assert [CompactionWarning] == [w.category for w in run.warned]
        if fault.error is not None:
            assert "failed" == record.outcome
            assert record.error is not None
            assert record.error.startswith(f"{fault.error.__name__}(")
        if isinstance(run.error, BackendError) and fault.chained:
            assert run.error.__cause__ is not None  # the SDK's own error, chained
        if run.result is not None:
            if inline:  # the node the add made, backing off, nothing compacted
                assert run.result.previous_node is ctx
                assert history()[-1] == run.result.node_data
                assert 8 == run.result.compaction_backoff
                assert len(ctx) + 1 == len(run.result)
            else:
                assert run.result is ctx
        assert before == snapshot(ctx)
        assert not any(isinstance(c, Checkpoint) for c in ctx)


# -- the retry policy ----------------------------------------------------------------------


class Arrivals:
    """A server handler that plays a list of actions and notes when each request arrived."""

    def __init__(self, *actions: Action) -> None:
        self.actions = list(actions)
        self.times: list[float] = []

    def __call__(self, body: Any) -> Action:
        self.times.append(time.monotonic())
        return self.actions.pop(0) if self.actions else Reply("Summary: retry limit is 5.")

    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]


@pytest.mark.reliability
@pytest.mark.parametrize("provider", PROVIDERS)
class TestRetryPolicy:
    def test_retry_after_is_waited_for(self, provider: str) -> None:
        """A 429's Retry-After is waited out (at least that long) before the one retry."""
        arrivals = Arrivals(Fail(429, retry_after=0.3))
        records: list[CompactionRecord] = []
        with make_server(provider, arrivals) as server:
            result = budget(records, make_backend(provider, server), True).compact(
                built(), force=True
            )
        assert (2, 2, "applied") == (len(arrivals.times), records[0].attempts, records[0].outcome)
        assert arrivals.gaps()[0] >= 0.3
        assert isinstance(result[1], Checkpoint)

    def test_retry_after_past_the_timeout_fails_at_once(self, provider: str) -> None:
        """A Retry-After the timeout cannot cover is not slept into: the 429 is raised, after
        one request, instead of a timeout."""
        with make_server(provider, lambda body: Fail(429, retry_after=3600)) as server:
            backend = make_backend(provider, server)
            compactor = LLMSummarizeCompactor(
                keep_n=2, default_backend=backend, strict=True, timeout=20
            )
            with pytest.raises(RateLimitError) as info:
                compactor.compact(built())
            assert 1 == len(server.requests)
        assert 3600.0 == info.value.retry_after

    def test_default_backoff_is_exponential(self, provider: str) -> None:
        """Without Retry-After, retries wait 0.5 s then 1 s (at least), and stop at the bound."""
        arrivals = Arrivals(*[Fail(503)] * 5)
        with make_server(provider, arrivals) as server:
            compactor = summarizer([], make_backend(provider, server), True)
            with pytest.raises(ServerError):
                compactor.compact(built())
        gaps = arrivals.gaps()
        assert 3 == len(arrivals.times)
        assert gaps[0] >= 0.5 and gaps[1] >= 1.0

    def test_sdk_and_compactor_retries_multiply(self, provider: str, quick_retries: None) -> None:
        """With the SDK's own retries on, the requests are exactly (1 + SDK) * (1 + ours)."""
        with make_server(provider, lambda body: Fail(503, retry_after_ms=1)) as server:
            backend = make_backend(provider, server, max_retries=1)
            compactor = LLMSummarizeCompactor(
                keep_n=2, default_backend=backend, strict=True, retries=1
            )
            with pytest.raises(ServerError):
                compactor.compact(built())
            assert (1 + 1) * (1 + 1) == len(server.requests)

    def test_the_compaction_timeout_bounds_a_slower_sdk_timeout(self, provider: str) -> None:
        """A server that never answers is cut by the compaction's timeout, after one request,
        whatever the SDK would have waited."""
        with make_server(provider, lambda body: Hang()) as server:
            backend = make_backend(provider, server, timeout=60)
            compactor = LLMSummarizeCompactor(
                keep_n=2, default_backend=backend, strict=True, timeout=0.3
            )
            with pytest.raises(CompactionTimeoutError):
                compactor.compact(built())
            assert 1 == len(server.requests)


# -- the retry storm of an inline compactor ---------------------------------------------------


def schedule(adds: int, backoff: int) -> list[int]:
    """The adds (1-based) on which an always-due inline compactor asks a dead backend."""
    asked: list[int] = []
    hold = failures = 0
    for add in range(1, adds + 1):
        if hold:
            hold -= 1
            continue
        asked.append(add)
        if backoff:
            hold = backoff * 2 ** min(failures, 4)
            failures += 1
    return asked


def test_schedule() -> None:
    """The reference schedule: backoff 4 asks on adds 1, 6, 15, 32 of 40; none asks on each."""
    assert [1, 6, 15, 32] == schedule(40, 4)
    assert list(range(1, 41)) == schedule(40, 0)


def inline_compactor(kind: str, backend: Any, backoff: int) -> Any:
    common = {"default_backend": backend, "retries": 0, "backoff_adds": backoff}
    if kind == "TokenBudget":
        return TokenBudgetCompactor(max_tokens=200, keep_recent_tokens=60, **common)
    return ThresholdCompactor(LLMSummarizeCompactor(keep_n=2, **common), threshold=200)


@pytest.mark.reliability
@pytest.mark.parametrize("kind", ["TokenBudget", "Threshold(LLMSummarize)"])
@pytest.mark.parametrize("provider", PROVIDERS)
class TestInlineBackoff:
    @pytest.mark.parametrize("backoff", [0, 1, 4, 8])
    def test_a_dead_backend_is_asked_on_the_schedule_only(
        self, provider: str, kind: str, backoff: int
    ) -> None:
        """Backend down, 40 adds past the trigger: requests follow the backoff schedule
        (backoff_adds=0 keeps the old retry on every add), and no add loses anything."""
        with make_server(provider, lambda body: Fail(503)) as server:
            ctx = built(inline_compactor(kind, make_backend(provider, server), backoff))
            added: list[Component] = []
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                for i in range(40):
                    added.append(Message("user", f"Another request, number {i}."))
                    ctx = ctx.add(added[-1])
            assert len(schedule(40, backoff)) == len(server.requests)
        assert len(schedule(40, backoff)) == len(warned)
        assert [*history(), *added] == ctx.as_list()

    def test_recovery_clears_the_backoff(self, provider: str, kind: str) -> None:
        """Once the backend answers again, the next attempt applies and the backoff is over."""
        state = {"down": True}

        def handler(body: Any) -> Action:
            return Fail(503) if state["down"] else Reply("Summary: checked every module.")

        with make_server(provider, handler) as server:
            ctx = built(inline_compactor(kind, make_backend(provider, server), 2))
            with pytest.warns(CompactionWarning):
                ctx = ctx.add(Message("user", "one"))
            assert (1, 2) == (len(server.requests), ctx.compaction_backoff)
            state["down"] = False
            ctx = ctx.add(Message("user", "two")).add(Message("user", "three"))
            assert (1, 0) == (len(server.requests), ctx.compaction_backoff)
            ctx = ctx.add(Message("user", "four"))
            assert 2 == len(server.requests)
        assert 0 == ctx.compaction_backoff
        assert any(isinstance(c, Checkpoint) for c in ctx)

    def test_a_manual_call_always_tries(self, provider: str, kind: str) -> None:
        """While the context backs off, compact() called by hand still asks the backend."""
        with make_server(provider, lambda body: Fail(503)) as server:
            compactor = inline_compactor(kind, make_backend(provider, server), 8)
            ctx = built(compactor)
            with pytest.warns(CompactionWarning):
                ctx = ctx.add(Message("user", "one"))
            assert 8 == ctx.compaction_backoff
            with pytest.warns(CompactionWarning):
                assert compactor.compact(ctx) is ctx
            assert 2 == len(server.requests)


class TestBackoffArgument:
    @pytest.mark.parametrize("value", [-1, 10_001, 1.5, True, "8", None])
    @pytest.mark.parametrize("make", [LLMSummarizeCompactor, TokenBudgetCompactor])
    def test_bad_values(self, make: Any, value: object) -> None:
        """backoff_adds must be an int from 0 to 10000."""
        extra = {"max_tokens": 100} if make is TokenBudgetCompactor else {}
        with pytest.raises(InvalidArgumentError, match=r"backoff_adds=.* must be an int from 0"):
            make(backoff_adds=value, **extra)


# -- streaming ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
class TestStreaming:
    def test_stream_option_is_refused_before_any_request(self, provider: str) -> None:
        """stream=True would be sent (and billed) and then fail to parse: it is refused first."""
        with make_server(provider) as server:
            with pytest.raises(InvalidArgumentError, match="stream=True"):
                make_backend(provider, server, model_options={"stream": True})
            backend = make_backend(provider, server)
            with pytest.raises(InvalidArgumentError, match="drop the stream option"):
                asyncio.run(
                    backend.generate([Message("user", "hi")], model_options={"stream": True})
                )
            assert [] == server.requests
