"""Concurrent use of one ``ChatContext`` from many threads.

A context's nodes share one append-only buffer: the first add past the end of
a node's slice appends in place, and any other add to that node must copy.
Threads racing to add to the same node must therefore each get their own
component last, over the same, untouched history.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mellea_ctx import ChatContext, Message, WindowCompactor, pin_nothing, pin_system

from . import reference as ref
from .strategies import CharCounter

THREADS = 8
ROUNDS = 300
FOLLOW_UPS = 4
RACES = 20000


@contextmanager
def _busy_switching() -> Iterator[None]:
    """Make the interpreter switch threads as often as it can, to widen races."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _race(work: Callable[[int], Any]) -> list[Any]:  # one-off threads, for lazy reads
    """Run ``work(i)`` for each thread ``i`` at once; return the results in thread order."""
    barrier = threading.Barrier(THREADS)
    results: list[Any] = [None] * THREADS
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _conversation(ctx: ChatContext, n: int, tag: str) -> list[ChatContext]:
    contexts = [ctx]
    for i in range(n):
        contexts.append(contexts[-1].add(Message("user", f"{tag} {i}")))
    return contexts


def _bases(kind: str, tag: str) -> tuple[ChatContext, Any]:
    """Return a context to race on, of the given ``kind``, and the compactor it carries."""
    if kind == "newest":
        return _conversation(ChatContext(), 12, tag)[-1], None
    if kind == "older":
        chain = _conversation(ChatContext(), 12, tag)
        chain[-1].add(Message("user", "a later sibling"))
        return chain[6], None
    if kind == "compacted":
        return WindowCompactor(size=4, pin_predicate=pin_nothing).compact(
            _conversation(ChatContext(), 12, tag)[-1]
        ), None
    window = WindowCompactor(size=5, pin_predicate=pin_system)
    root = ChatContext(compactor=window, counter=CharCounter()).add(Message("system", "rules"))
    return _conversation(root, 40, tag)[-1], window


class _Workers:
    """``THREADS`` long-lived threads that run one job each per round, all released at once."""

    def __init__(self) -> None:
        self.start = threading.Barrier(THREADS + 1)
        self.done = threading.Barrier(THREADS + 1)
        self.job: Callable[[int], Any] | None = None
        self.results: list[Any] = [None] * THREADS
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._loop, args=(i,)) for i in range(THREADS)]
        for thread in self.threads:
            thread.start()

    def _loop(self, index: int) -> None:
        while True:
            self.start.wait()
            job = self.job
            if job is None:
                return
            try:
                self.results[index] = job(index)
            except BaseException as exc:  # reported by the main thread
                self.errors.append(exc)
            self.done.wait()

    def run(self, job: Callable[[int], Any]) -> list[Any]:
        self.job = job
        self.start.wait()
        self.done.wait()
        if self.errors:
            raise self.errors[0]
        return list(self.results)

    def close(self) -> None:
        self.job = None
        self.start.wait()
        for thread in self.threads:
            thread.join()


@pytest.fixture
def workers() -> Iterator[_Workers]:
    with _busy_switching():
        pool = _Workers()
        try:
            yield pool
        finally:
            pool.close()


class TestConcurrentAdds:
    """Many threads adding to the very same context at once."""

    @pytest.mark.parametrize("kind", ["newest", "older", "compacted", "inline_window"])
    def test_each_thread_gets_its_own_branch(self, kind, workers):
        """Each thread's context ends with its own components after the same, untouched history."""
        for round_ in range(ROUNDS):
            base, compactor = _bases(kind, f"r{round_}")
            history = tuple(base.as_list())
            mine = [
                [Message("assistant", f"t{t} #{i}") for i in range(FOLLOW_UPS)]
                for t in range(THREADS)
            ]

            def work(t: int, base: ChatContext = base, mine: list[Any] = mine) -> list[Any]:
                ctx, reached = base, []
                for component in mine[t]:
                    ctx = ctx.add(component)
                    reached.append((ctx, tuple(ctx.as_list())))
                return reached

            results = workers.run(work)
            for t, reached in enumerate(results):
                model = ref.Model(history)
                for component, (ctx, seen) in zip(mine[t], reached, strict=True):
                    _, model, _ = ref.model_add(model, component, compactor, base.counter)
                    now = ctx.as_list()

                    assert component is ctx.node_data
                    assert len(model.items) == len(seen) == len(now)
                    assert all(a is b for a, b in zip(model.items, now, strict=True))
                    assert all(a is b for a, b in zip(seen, now, strict=True))
            assert history == tuple(base.as_list())
            assert all(a is b for a, b in zip(history, base.as_list(), strict=True))

    def test_hammering_the_newest_node(self, workers):
        """Threads that keep adding to whatever node is newest each get their own component."""
        shared = [ChatContext(counter=CharCounter())]

        def work(t: int) -> int:
            me, wrong = Message("user", f"t{t}"), 0
            for _ in range(RACES):
                base = shared[0]
                got = base.add(me)
                items = got.as_list()
                if items[-1] is not me or len(items) != len(base) + 1:
                    wrong += 1
                shared[0] = got if len(got) < 100 else ChatContext(counter=CharCounter())
            return wrong

        assert [0] * THREADS == workers.run(work)

    def test_concurrent_reads_of_lazy_state_agree(self):
        """Threads reading a fresh total and a lazy ``previous_node`` all see the same answer."""
        with _busy_switching():
            for round_ in range(ROUNDS):
                ctx = _conversation(ChatContext(counter=CharCounter()), 30, f"r{round_}")[-1]
                compacted = WindowCompactor(size=10, pin_predicate=pin_nothing).compact(ctx)
                results = _race(
                    lambda _t, c=compacted: (c.token_count, c.previous_node, c.previous_node)
                )
                expected = ref.total(compacted.as_list(), compacted.counter)
                first = results[0][1]

                assert all(expected == tokens for tokens, _, _ in results)
                assert all(a is first and b is first for _, a, b in results)
                assert compacted.as_list()[:-1] == first.as_list()
