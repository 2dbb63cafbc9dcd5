"""Run a coroutine to completion from synchronous code, with a timeout.

``compact()`` is synchronous, but summarizing calls an async backend. The
bridge runs that coroutine on a fresh event loop in a short-lived worker
thread while the caller waits, whether or not an event loop is already
running in the calling thread (Jupyter, FastAPI, pytest-asyncio). Nothing is
scheduled on the caller's loop, so it cannot deadlock on itself; it is blocked
for the duration, as any synchronous call would block it (async callers should
``await compactor.acompact(...)`` instead).

The timeout is enforced twice. Inside the coroutine's own loop, expiry
cancels it (so it stops rather than running on unseen) and the bridge returns
as soon as it has stopped. And the caller waits for the worker at most
``timeout`` plus a short grace period: a coroutine that ignores cancellation,
or blocks its loop with synchronous I/O, cannot hold the caller longer; it is
left to finish in a daemon thread and the error says so. That is the only
case where anything the bridge made outlives the call: otherwise no loop and
no thread is left behind. Without a timeout (``timeout=None``) and with no
running loop, the coroutine runs on a fresh loop in the calling thread itself.

The caller's ``contextvars`` are visible to the coroutine. A fresh loop per
call means a client bound to one loop is never reused on another: our
backends open their SDK client inside the coroutine.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._core.exceptions import CompactionTimeoutError, InvalidArgumentError

__all__ = ["bounded", "run_blocking"]

T = TypeVar("T")

# How long past its own timeout the caller waits for the worker thread to
# finish cancelling before giving up on it (it is a daemon thread).
_GRACE_SECONDS = 5.0


async def bounded(
    make: Callable[[], Awaitable[T]], timeout: float | None, what: str = "the operation"
) -> T:
    """Await ``make()``, cancelling it after ``timeout`` seconds.

    Unlike ``asyncio.wait_for``, a ``TimeoutError`` raised by the awaited code
    itself (say, a backend's own timeout) passes through unchanged: only our
    own expiry becomes :class:`~mellea_ctx.CompactionTimeoutError`.
    """
    if timeout is None:
        return await make()
    task = asyncio.ensure_future(make())
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    handle = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        return await task
    except asyncio.CancelledError as exc:
        if expired:
            msg = f"{what} did not finish within timeout={timeout!r} seconds"
            raise CompactionTimeoutError(msg) from exc
        task.cancel()
        raise
    finally:
        handle.cancel()


async def _bounded(make: Callable[[], Awaitable[T]], timeout: float | None) -> T:
    return await bounded(make, timeout)


def run_blocking(make: Callable[[], Awaitable[T]], *, timeout: float | None) -> T:
    """Run the coroutine ``make()`` to completion and return its result.

    Args:
        make: A function returning the awaitable to run. It is called on the
            loop that runs it, so objects it creates belong to that loop.
        timeout: Seconds before the coroutine is cancelled and
            :class:`~mellea_ctx.CompactionTimeoutError` is raised (at most a
            few seconds more if it ignores the cancellation); ``None`` waits
            for ever.

    Raises:
        CompactionTimeoutError: When ``timeout`` passes first.
        InvalidArgumentError: For a negative or non-numeric ``timeout``.
        Exception: Whatever the coroutine raises, unchanged.

    Examples:
        >>> async def answer() -> int:
        ...     return 42
        >>> run_blocking(answer, timeout=5)
        42
    """
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        msg = f"timeout={timeout!r} must be a number of seconds > 0, or None to wait for ever"
        raise InvalidArgumentError(msg)
    if timeout is None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_bounded(make, timeout))
    return _run_in_worker(make, timeout)


def _run_in_worker(make: Callable[[], Awaitable[T]], timeout: float | None) -> T:
    context = contextvars.copy_context()
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["value"] = context.run(asyncio.run, _bounded(make, timeout))
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="mellea-ctx-bridge", daemon=True)
    worker.start()
    worker.join(None if timeout is None else timeout + _GRACE_SECONDS)
    if worker.is_alive():
        msg = (
            f"the operation did not finish within timeout={timeout!r} seconds and did not "
            "stop when cancelled; it is left running in a daemon thread"
        )
        raise CompactionTimeoutError(msg)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
