"""The blocking bridge: sync code runs a coroutine, inside or outside a running loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from mellea_ctx import CompactionTimeoutError, InvalidArgumentError, run_blocking

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


async def read_request_id() -> str:
    await asyncio.sleep(0)
    return REQUEST_ID.get()


async def sleep_for_ever() -> None:
    await asyncio.sleep(3600)


class Boom(Exception):
    pass


async def explode() -> None:
    raise Boom("from the coroutine")


class TestWithoutARunningLoop:
    def test_returns_the_result(self) -> None:
        """A coroutine's value comes back to sync code."""
        assert run_blocking(read_request_id, timeout=5) == "none"

    def test_carries_context_variables(self) -> None:
        """The caller's context variables are visible inside the coroutine."""
        token = REQUEST_ID.set("req-42")
        try:
            assert run_blocking(read_request_id, timeout=5) == "req-42"
        finally:
            REQUEST_ID.reset(token)

    def test_times_out_and_cancels(self) -> None:
        """A coroutine that outlives its timeout is cancelled and a typed error raised."""
        started = time.perf_counter()
        with pytest.raises(CompactionTimeoutError, match=r"timeout=0\.2"):
            run_blocking(sleep_for_ever, timeout=0.2)
        assert time.perf_counter() - started < 5

    def test_exceptions_pass_through(self) -> None:
        """What the coroutine raises reaches the caller unchanged."""
        with pytest.raises(Boom, match="from the coroutine"):
            run_blocking(explode, timeout=5)

    @pytest.mark.parametrize("timeout", [0, -1, "5", True])
    def test_bad_timeouts(self, timeout: object) -> None:
        """A timeout must be a positive number of seconds or None."""
        with pytest.raises(InvalidArgumentError, match="must be a number of seconds > 0"):
            run_blocking(read_request_id, timeout=timeout)  # type: ignore[arg-type]


class TestInsideARunningLoop:
    def test_works_from_sync_code_called_by_a_coroutine(self) -> None:
        """Called from inside a running loop (as in Jupyter), it neither deadlocks nor fails."""

        async def caller() -> str:
            REQUEST_ID.set("inside")
            return run_blocking(read_request_id, timeout=5)

        assert asyncio.run(caller()) == "inside"

    def test_timeout_inside_a_loop(self) -> None:
        """The timeout holds inside a running loop too, and the loop keeps working after."""

        async def caller() -> str:
            with pytest.raises(CompactionTimeoutError):
                run_blocking(sleep_for_ever, timeout=0.2)
            await asyncio.sleep(0)
            return "alive"

        assert asyncio.run(caller()) == "alive"

    def test_leaves_no_thread_behind(self) -> None:
        """After returning, or timing out, no bridge thread is left running."""

        async def caller() -> None:
            for _ in range(5):
                run_blocking(read_request_id, timeout=5)
            with pytest.raises(CompactionTimeoutError):
                run_blocking(sleep_for_ever, timeout=0.1)

        before = threading.active_count()
        asyncio.run(caller())
        assert threading.active_count() == before
        assert not [t for t in threading.enumerate() if t.name == "mellea-ctx-bridge"]

    def test_loop_bound_objects_stay_on_their_loop(self) -> None:
        """The coroutine runs on a loop of its own, so it can make and use loop-bound objects."""

        async def uses_a_lock() -> int:
            lock = asyncio.Lock()
            async with lock:
                return 1

        async def caller() -> int:
            return sum(run_blocking(uses_a_lock, timeout=5) for _ in range(3))

        assert asyncio.run(caller()) == 3
