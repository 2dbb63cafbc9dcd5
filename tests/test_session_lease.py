"""One compactor per session: ``Session.compact`` under the store's lease, on every store.

Two workers, each with a store of its own on the same place, compact one
session at the same moment: one summary call is made, the other worker goes
on at once with the uncompacted history and commits its turn while the
summary is still running, and that turn is kept after the compaction. A lease
whose holder died expires by itself.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from mellea_ctx import (
    Checkpoint,
    Component,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    Session,
    SessionConflictError,
    SessionMemory,
    SessionStore,
)

from ._async_face import SyncFace
from ._postgres import postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import redis_server_fixture  # noqa: F401 (a fixture)
from ._stores import StoreFactory, store_factory_fixture, store_fixture  # noqa: F401 (fixtures)

T = TypeVar("T")


def turn(name: str) -> list[Component]:
    return [Message("user", f"{name}: " + "tell me about the report " * 20), ModelOutputThunk("ok")]


class Worker:
    """One worker: its own store object and memory; the async kinds through their async face."""

    def __init__(self, store: SessionStore) -> None:
        self.face = store if isinstance(store, SyncFace) else None
        self.memory = SessionMemory(self.face.astore if self.face is not None else store)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self.face is not None
        return self.face._run(coroutine)

    def open(self) -> Session:
        if self.face is not None:
            return self.run(self.memory.aopen("s"))
        return self.memory.open("s")

    def compact(self, session: Session, compactor: Any) -> Session:
        if self.face is not None:
            return self.run(session.acompact(compactor))
        return session.compact(compactor)

    def commit(self, session: Session, components: list[Component]) -> Session:
        """Commit the turn, reloading and retrying on a conflict (as a worker does)."""
        for _attempt in range(20):
            try:
                if self.face is not None:
                    return self.run(session.acommit(components))
                return session.commit(components)
            except SessionConflictError:
                session = self.open()
        raise AssertionError("never committed")

    def lease(self, holder: str, ttl: float) -> bool:
        store: Any = self.memory.astore if self.face is not None else self.memory.store
        if self.face is not None:
            from mellea_ctx._sessions.lease import aacquire, leases_of

            return self.run(aacquire(leases_of(store), "s", holder, ttl, 0.0))
        from mellea_ctx._sessions.lease import acquire, leases_of

        return acquire(leases_of(store), "s", holder, ttl, 0.0)  # type: ignore[arg-type]


class TestTwoWorkersOneSession:
    def test_one_summary_call_and_no_turn_lost(self, store_factory: StoreFactory) -> None:
        first, second = Worker(store_factory()), Worker(store_factory())
        session = first.open()
        for k in range(4):
            session = first.commit(session, turn(f"early {k}"))
        calls: list[int] = []
        went_on = threading.Event()  # set once the worker without the lease committed its turn
        waited: list[bool] = []

        async def finish() -> str:
            # The other worker must get through its compact and its commit while this runs
            # (awaited, so an event loop the two workers share is not blocked by the wait).
            waited.append(await asyncio.to_thread(went_on.wait, 30))
            return "The user asked about the report."

        def summarize(messages: list[Any], options: Any) -> Any:
            calls.append(1)
            return finish()

        compactor = LLMSummarizeCompactor(default_backend=ScriptedBackend(summarize), keep_n=1)
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def work(name: str, worker: Worker) -> None:
            try:
                snapshot = worker.open()
                start.wait()
                after = worker.compact(snapshot, compactor)
                worker.commit(after, turn(f"late {name}"))
                if after is snapshot:  # no lease: went on uncompacted
                    went_on.set()
            except BaseException as exc:
                errors.append(exc)
                went_on.set()

        threads = [
            threading.Thread(target=work, args=(name, worker))
            for name, worker in (("a", first), ("b", second))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert [] == errors
        assert 1 == len(calls)
        assert [True] == waited  # the second worker was not blocked by the first's summary
        dialogue = first.open().dialogue
        assert isinstance(dialogue[0], Checkpoint)
        text = [c.content for c in (*dialogue[0].span, *dialogue[1:])]
        for name in ("early 0", "early 1", "early 2", "early 3", "late a", "late b"):
            assert any(t.startswith(f"{name}:") for t in text), name

    def test_a_crashed_holders_lease_expires(self, store_factory: StoreFactory) -> None:
        worker, other = Worker(store_factory()), Worker(store_factory())
        dead = uuid.uuid4().hex
        assert worker.lease(dead, 0.3)
        assert not other.lease(uuid.uuid4().hex, 0.3)
        time.sleep(0.5)
        assert other.lease(uuid.uuid4().hex, 30)


class TestArguments:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"lease": 0}, "lease=0 must be a number of seconds > 0"),
            ({"wait": -1}, "wait=-1 must be a number of seconds >= 0"),
            ({"lease": float("inf")}, "lease=inf must be"),
        ],
    )
    def test_bad_lease_or_wait(self, kwargs: dict[str, Any], message: str) -> None:
        session = SessionMemory(MemoryStore()).open("s")
        compactor = LLMSummarizeCompactor(keep_n=1)
        with pytest.raises(InvalidArgumentError, match=message):
            session.compact(compactor, **kwargs)

    def test_a_snapshot_compacted_since_summarizes_nothing(self) -> None:
        """Another worker rewrote the dialogue since: the stored session comes back, no call."""
        memory = SessionMemory(MemoryStore())
        stale = memory.open("s").commit(turn("first"))
        stale.replace([Checkpoint("The user said first.")])
        calls: list[int] = []

        def summarize(messages: list[Any], options: Any) -> str:
            calls.append(1)
            return "summary"

        compactor = LLMSummarizeCompactor(default_backend=ScriptedBackend(summarize), keep_n=1)
        assert 2 == stale.compact(compactor).version
        assert [] == calls
