"""Reliability class 2: cancellation and timeouts.

Technique: the code under test runs as a task on a loop the test drives. A
backend (and tools) that only ever await ``asyncio.sleep(0)`` make every
step deterministic, so cancelling the task after ``n`` loop iterations, for
``n = 0, 1, 2, ...`` until the task finishes first, cancels it at every await
point it has, in turn. After each cancellation:

* the context handed in reads back exactly as before (components, chain, tokens);
* no task is left pending and no backend call is still in flight (the
  cancellation has fully landed when the caller sees it);
* for ``areact`` with a session (memory and SQLite stores), the store holds
  exactly what it held after the last finished turn, or before the call when
  none finished: a cancelled turn writes nothing.

Over real HTTP (both SDKs) the await points depend on the sockets, so the
same cancellation sweep runs as a fuzz whose invariants must hold at every
point. Last, the blocking bridge: it never outlives its timeout (plus its
grace period, for a coroutine that ignores cancellation or blocks its loop),
and leaves no thread and no open event loop behind, with or without a running
loop in the calling thread.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from mellea_ctx import (
    AsyncSQLiteStore,
    ChatContext,
    CompactionRecord,
    CompactionTimeoutError,
    Component,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    ServerError,
    SessionMemory,
    SQLiteStore,
    ThresholdCompactor,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    areact,
    pin_react_initiator,
    run_blocking,
    tool,
    validate_openai,
)
from mellea_ctx._backends import bridge as _bridge
from mellea_ctx._compaction import engine as _engine
from mellea_ctx._sessions.store import StoredSession

from ..providers import AnthropicWireServer, OpenAIWireServer, Reply
from ..providers._wire import THREAD_PREFIX
from ..test_invariants import snapshot

STEPS = 3  # sleep(0) awaits inside each backend call and each tool call
MAX_POINTS = 2_000  # a sweep that never finishes is a bug, not a long test


@pytest.fixture(autouse=True)
def _instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retry's wait becomes sleep(0): one more await point, no wall time."""
    monkeypatch.setattr(_engine, "_RETRY_BASE_SECONDS", 0.0)


class InFlight:
    """Counts backend calls begun and ended (normally or not): equal once nothing runs."""

    def __init__(self) -> None:
        self.begun = 0
        self.ended = 0

    async def step(self, reply: Any, *, fail_first: bool = False) -> Any:
        self.begun += 1
        try:
            for _ in range(STEPS):
                await asyncio.sleep(0)
            if fail_first and self.begun == 1:
                raise ServerError("HTTP 503: overloaded", status_code=503)
            return reply
        finally:
            try:  # cleanup that itself awaits, as an SDK closing its client does
                await asyncio.sleep(0)
            finally:
                self.ended += 1  # the call's frame is gone


async def cancel_after(n: int, make: Callable[[], Awaitable[Any]]) -> tuple[bool, Any]:
    """Run ``make()`` as a task, cancel it after ``n`` loop iterations; return
    ``(cancelled, value)``. Also checks that no other task is left behind."""
    task = asyncio.ensure_future(make())
    for _ in range(n):
        if task.done():
            break
        await asyncio.sleep(0)
    pending = not task.done()
    task.cancel()
    try:
        value = await task
    except asyncio.CancelledError:
        assert pending, "a finished task cannot be cancelled"
        value = None
    else:
        assert not pending, "the cancellation was swallowed"
    assert {asyncio.current_task()} == asyncio.all_tasks()
    return pending, value


def sweep(run_at: Callable[[int], bool]) -> int:
    """Call ``run_at(n)`` for n = 0, 1, ... until it reports the run finished uncancelled;
    return the number of cancellation points swept."""
    for n in range(MAX_POINTS):
        if not run_at(n):
            return n
    raise AssertionError(f"still not finished after {MAX_POINTS} loop iterations")


def history() -> list[Component]:
    items: list[Component] = [
        Message("system", "You are a coding agent."),
        Message("user", "Find the retry limit."),
        Message("assistant", "", tool_calls=[ToolCall("call_1", "grep", {"q": "retry"})]),
        ToolMessage("config.toml:3: retry = 5", tool_call_id="call_1", name="grep"),
        Message("assistant", "The retry limit is 5, in config.toml."),
    ]
    for i in range(6):
        items.append(Message("user", f"Step {i}: please look at module_{i}.py and report. " * 3))
        items.append(Message("assistant", f"module_{i}.py has no retry logic to change. " * 3))
    return items


def built(items: Sequence[Component]) -> ChatContext:
    ctx = ChatContext()
    for component in items:
        ctx = ctx.add(component)
    return ctx


# -- acompact ----------------------------------------------------------------------------

COMPACTORS: dict[str, Callable[[Any, list[CompactionRecord]], Any]] = {
    "LLMSummarize": lambda b, r: LLMSummarizeCompactor(
        default_backend=b, keep_n=2, on_record=r.append
    ),
    "TokenBudget": lambda b, r: TokenBudgetCompactor(
        max_tokens=150, keep_recent_tokens=60, default_backend=b, on_record=r.append
    ),
    "Threshold(LLMSummarize)": lambda b, r: ThresholdCompactor(
        LLMSummarizeCompactor(default_backend=b, keep_n=2, on_record=r.append), threshold=150
    ),
}

#: Cancellation points swept per case, for docs/reliability.md (filled as the tests run).
SWEPT: dict[str, int] = {}


@pytest.mark.reliability
class TestCancelACompactEverywhere:
    @pytest.mark.parametrize("retry", [False, True], ids=["answer", "503-then-answer"])
    @pytest.mark.parametrize("kind", list(COMPACTORS))
    def test_every_await_point(self, kind: str, retry: bool) -> None:
        """Cancelled at any await point, acompact leaves the context as it was, records the
        cancellation, and has stopped its backend call when the caller sees it."""
        ctx = built(history())
        before = snapshot(ctx)

        def run_at(n: int) -> bool:
            flight = InFlight()
            backend = ScriptedBackend(
                lambda m, o: flight.step("Summary: retry limit 5.", fail_first=retry)
            )
            records: list[CompactionRecord] = []
            compactor = COMPACTORS[kind](backend, records)
            cancelled, result = asyncio.run(cancel_after(n, lambda: compactor.acompact(ctx)))
            assert before == snapshot(ctx)
            assert flight.begun == flight.ended  # no call still running or cleaning up
            outcomes = [r.outcome for r in records]
            if cancelled:  # before its first step, the coroutine had not even started
                assert ([] if n == 0 else ["cancelled"]) == outcomes
            else:
                assert ["applied"] == outcomes
                assert result is not ctx
                assert flight.begun == (2 if retry else 1)
            return cancelled

        points = sweep(run_at)
        SWEPT[f"acompact {kind} {retry}"] = points
        assert points > STEPS


# -- areact with a session -----------------------------------------------------------------


@tool
async def read_file(path: str) -> str:
    """Read a file of the project.

    Args:
        path: The file to read.
    """
    for _ in range(STEPS):
        await asyncio.sleep(0)
    return f"contents of {path}: def handler(): return 42\n" * 6


def agent_model(flight: InFlight) -> Callable[[Sequence[Component], Mapping[str, Any]], Any]:
    """Reads two files (one per turn), then answers; summarizes when asked to."""
    turns = [0]

    def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
        if "<conversation>" in (messages[-1].content or ""):
            return flight.step("Earlier: files were read; every handler returns 42.")
        done = turns[0]
        turns[0] += 1
        if done < 2:
            call = ToolCall(f"c{done}", "read_file", {"path": f"m{done}.py"})
            return flight.step(ModelOutputThunk(f"Reading m{done}.py.", tool_calls=[call]))
        return flight.step("Every handler returns 42.")

    return model


def state(store: Any) -> StoredSession:
    return store.load("agent")  # type: ignore[no-any-return]


@pytest.mark.reliability
class TestCancelAReactEverywhere:
    @pytest.mark.parametrize("compacting", [False, True], ids=["plain", "compacting"])
    @pytest.mark.parametrize("kind", ["memory", "sqlite", "async-sqlite"])
    def test_every_await_point(self, kind: str, compacting: bool, tmp_path: Path) -> None:
        """Cancelled at any await point, areact leaves its context as it was and the session
        store exactly as after the last finished turn (as before the call, if none).

        Every kind writes through an async face (memory inline, sqlite in a worker thread,
        async-sqlite through AsyncSQLiteStore), so a turn's write is an await point too.
        """

        def run_at(n: int) -> bool:
            path = tmp_path / f"{n}.db"
            store: Any = (
                MemoryStore()
                if kind == "memory"
                else AsyncSQLiteStore(path)
                if kind == "async-sqlite"
                else SQLiteStore(path)
            )
            try:
                memory = SessionMemory(store)
                memory.open("agent").commit(
                    [Message("user", "Earlier question."), Message("assistant", "Earlier answer.")]
                )
                initial = state(store)
                session = memory.open("agent")
                ctx = session.context(system="You are terse.")
                before = snapshot(ctx)
                flight = InFlight()
                finished: list[StoredSession] = [initial]  # the store after each turn

                def on_event(event: Any) -> None:
                    if event.kind == "turn_finished":
                        finished.append(state(store))

                compactor = None
                if compacting:
                    compactor = ThresholdCompactor(
                        LLMSummarizeCompactor(keep_n=2, pin_predicate=pin_react_initiator),
                        threshold=120,
                    )
                cancelled, result = asyncio.run(
                    cancel_after(
                        n,
                        lambda: areact(
                            "What do the handlers return?",
                            ctx,
                            ScriptedBackend(agent_model(flight)),
                            tools=[read_file],
                            compactor=compactor,
                            session=session,
                            on_event=on_event,
                        ),
                    )
                )
                assert before == snapshot(ctx)
                assert flight.begun == flight.ended
                now = state(store)
                assert finished[-1] == now  # exactly the last finished turn's state
                assert [] == validate_openai(now.components)
                goals = [c for c in now.components if type(c).__name__ == "ReactInitiator"]
                assert len(goals) <= 1
                if cancelled and len(finished) == 1:
                    assert initial == now  # no turn finished: nothing written at all
                if not cancelled:
                    assert "Every handler returns 42." == result.answer
                    assert result.session is not None
                    assert now.version == result.session.version
                    if compacting:
                        assert any(type(c).__name__ == "Checkpoint" for c in now.components)
                return cancelled
            finally:
                if isinstance(store, SQLiteStore):
                    store.close()

        points = sweep(run_at)
        SWEPT[f"areact {kind} {compacting}"] = points
        assert points > 3 * STEPS


# -- over real HTTP ----------------------------------------------------------------------


@pytest.mark.reliability
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
class TestCancelOverHTTP:
    def test_cancel_sweep_through_the_sdk(self, provider: str) -> None:
        """Cancelled after n loop iterations of a real SDK call, for n up to its completion:
        the context is as it was, and no task, thread or connection is left."""
        from mellea_ctx import AnthropicBackend, OpenAIBackend

        ctx = built(history())
        before = snapshot(ctx)
        threads = {t.name for t in threading.enumerate()}
        server_kind = OpenAIWireServer if provider == "openai" else AnthropicWireServer
        with server_kind(lambda body: Reply("Summary: retry limit 5."), hang_limit=10) as server:
            if provider == "openai":
                backend: Any = OpenAIBackend("m", base_url=server.base_url, api_key="test")
            else:
                backend = AnthropicBackend("m", base_url=server.base_url, api_key="test")

            def run_at(n: int) -> bool:
                records: list[CompactionRecord] = []
                compactor = LLMSummarizeCompactor(
                    default_backend=backend, keep_n=2, on_record=records.append
                )
                cancelled, _ = asyncio.run(cancel_after(n, lambda: compactor.acompact(ctx)))
                assert before == snapshot(ctx)
                expected = ["cancelled"] if cancelled else ["applied"]
                assert [r.outcome for r in records] in ([], expected)
                return cancelled

            points = sweep(run_at)
        SWEPT[f"http {provider}"] = points
        assert points > 0
        assert threads >= {t.name for t in threading.enumerate()}


# -- the blocking bridge ------------------------------------------------------------------


def open_loops() -> int:
    gc.collect()
    return sum(
        1
        for o in gc.get_objects()
        if isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed()
    )


@pytest.fixture
def leak_check() -> Iterator[None]:
    """No thread and no open event loop outlives the test."""
    threads = set(threading.enumerate())
    loops = open_loops()
    yield
    assert set() == {t for t in threading.enumerate() if t not in threads}
    assert loops == open_loops()


async def hang() -> None:
    await asyncio.sleep(3600)


def stubborn(release: threading.Event) -> Callable[[], Awaitable[None]]:
    """A coroutine that ignores cancellation until ``release`` is set."""

    async def run() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                continue

    return run


def blocking(release: threading.Event) -> Callable[[], Awaitable[None]]:
    """A coroutine that blocks its own loop (synchronous I/O) until ``release`` is set."""

    async def run() -> None:
        release.wait(30)

    return run


def guarded(call: Callable[[], Any], limit: float = 20.0) -> BaseException | None:
    """Run ``call`` in a thread; fail (instead of hanging the suite) if it outlives ``limit``."""
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=work, name="test-guard")
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), "run_blocking outlived its timeout and grace period"
    return outcome[0]


def in_a_loop(call: Callable[[], Any]) -> Callable[[], Any]:
    async def caller() -> Any:
        return call()

    return lambda: asyncio.run(caller())


@pytest.mark.reliability
@pytest.mark.parametrize("loop", [False, True], ids=["no-loop", "inside-a-loop"])
class TestBridge:
    def test_a_hang_is_cut_at_the_timeout(self, loop: bool, leak_check: None) -> None:
        """A coroutine that awaits for ever is cancelled at its timeout; nothing is left."""

        def call() -> None:
            run_blocking(hang, timeout=0.2)

        error = guarded(in_a_loop(call) if loop else call)
        assert isinstance(error, CompactionTimeoutError)
        assert "timeout=0.2" in str(error)

    @pytest.mark.parametrize("fault", ["ignores-cancellation", "blocks-its-loop"])
    def test_an_unstoppable_coroutine_cannot_hold_the_caller(
        self, loop: bool, fault: str, monkeypatch: pytest.MonkeyPatch, leak_check: None
    ) -> None:
        """Past timeout + grace the caller gets the error, and the worker ends when the
        coroutine does (before: without a running loop, the caller waited for ever)."""
        monkeypatch.setattr(_bridge, "_GRACE_SECONDS", 0.3)
        release = threading.Event()
        make = stubborn(release) if fault == "ignores-cancellation" else blocking(release)

        def call() -> None:
            run_blocking(make, timeout=0.2)

        error = guarded(in_a_loop(call) if loop else call)
        assert isinstance(error, CompactionTimeoutError)
        assert "daemon thread" in str(error)
        release.set()
        for thread in threading.enumerate():
            if thread.name == "mellea-ctx-bridge":
                thread.join(10)
                assert not thread.is_alive()

    def test_compact_against_a_hanging_server(self, loop: bool, leak_check: None) -> None:
        """compact() against a real server that never answers returns the context at the
        timeout; no bridge thread, SDK thread or loop is left."""
        from mellea_ctx import OpenAIBackend

        ctx = built(history())
        with OpenAIWireServer(hang_limit=10) as server:
            server.hang()
            compactor = LLMSummarizeCompactor(
                default_backend=OpenAIBackend("m", base_url=server.base_url, timeout=60),
                keep_n=2,
                timeout=0.3,
            )

            def call() -> None:
                with pytest.warns(Warning, match="timeout"):
                    assert compactor.compact(ctx) is ctx

            assert guarded(in_a_loop(call) if loop else call) is None
            assert 1 == len(server.requests)
        assert [] == [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
