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
as soon as it has stopped, or half a second later if it ignores the
cancellation. And the caller waits for the worker at most ``timeout`` plus
:data:`GRACE_SECONDS` (one second): a coroutine that ignores cancellation, or
blocks its loop with synchronous I/O, cannot hold the caller longer; it is
left to finish in a daemon thread, its outcome is dropped, and the error says
so. That is the only
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
from typing import Any, TypeVar

from .._core.checks import require_number
from .._core.exceptions import CompactionTimeoutError

T = TypeVar("T")

#: How long past its own timeout the caller waits, at most, for a coroutine
#: that ignores cancellation or blocks its loop before giving up on it: the
#: documented grace of every timeout in this package.
GRACE_SECONDS = 1.0
# A part of the grace spent waiting for a cancelled coroutine to stop (on its
# own loop); the rest covers handing the outcome back across threads.
_CANCEL_WAIT_SECONDS = 0.5
_GRACE_SECONDS = GRACE_SECONDS  # the name tests patch


class _Waiter(asyncio.Future[None]):
    """Done when the task is, or when we give up on it; cancelling it cancels the task.

    Awaiting the task itself would make us wait for as long as it ignores
    cancellation; awaiting a plain future would pass a cancellation of ours
    on one loop iteration late, in which the task could still finish.
    """

    def __init__(self, task: asyncio.Future[Any], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._task = task

    def settle(self, _task: object = None) -> None:
        if not self.done():
            self.set_result(None)

    def cancel(self, msg: Any = None) -> bool:
        self._task.cancel(msg)
        return super().cancel(msg)


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome, so no 'never retrieved' error is logged."""
    if not task.cancelled():
        task.exception()


async def bounded(
    make: Callable[[], Awaitable[T]], timeout: float | None, what: str = "the operation"
) -> T:
    """Await ``make()``, giving up on it after ``timeout`` seconds.

    At the deadline the awaited code is cancelled and waited for at most
    half a second more; if it has not stopped by then (it ignores
    cancellation), it is left running and its outcome is dropped. An outcome
    that arrives after the deadline (the code blocked the loop past it) is
    dropped too: either way :class:`~mellea_ctx.CompactionTimeoutError` is
    raised, and nothing late is ever returned. Unlike ``asyncio.wait_for``, a
    ``TimeoutError`` raised by the awaited code itself (say, a backend's own
    timeout) before the deadline passes through unchanged.
    """
    if timeout is None:
        return await make()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    task = asyncio.ensure_future(make())
    waiter = _Waiter(task, loop)
    task.add_done_callback(waiter.settle)
    handles = [loop.call_later(timeout, task.cancel)]
    handles.append(loop.call_later(timeout + _CANCEL_WAIT_SECONDS, waiter.settle))
    try:
        await waiter
    except asyncio.CancelledError:
        # Our caller cancelled us, and the waiter passed it on to the task at
        # once; let the task finish stopping (briefly), then pass it up.
        task.add_done_callback(_consume)
        await asyncio.wait({task}, timeout=_CANCEL_WAIT_SECONDS)
        raise
    finally:
        for handle in handles:
            handle.cancel()
    late = loop.time() > deadline
    if task.done() and not late:
        return task.result()
    task.add_done_callback(_consume)
    cause = None
    if task.done() and not task.cancelled():
        cause = task.exception()
    if task.done() and not task.cancelled() and cause is None:
        msg = f"{what} finished after timeout={timeout!r} seconds; its late result was dropped"
    else:
        msg = f"{what} did not finish within timeout={timeout!r} seconds"
    raise CompactionTimeoutError(msg) from cause


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
    if timeout is not None:
        also = "None to wait for ever"
        require_number("", "timeout", timeout, minimum=0, above=True, unit="seconds", also=also)
    if timeout is None and not _loop_running():
        # Outside the ``except`` that found no loop: an error the coroutine
        # raises must not carry "no running event loop" as its context.
        return asyncio.run(_bounded(make, timeout))
    return _run_in_worker(make, timeout)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def wait_in_worker(make: Callable[[], Awaitable[T]], *, timeout: float) -> T:
    """Run ``make()`` in a worker thread; wait for it ``timeout`` + :data:`GRACE_SECONDS` at most.

    For a coroutine that bounds itself (the compaction engine does): no
    second timer is set inside the worker, so the coroutine's own deadline
    handling is the only one that runs there.

    Raises:
        CompactionTimeoutError: When the coroutine has not finished in time
            (it blocks its loop); it is left running in a daemon thread.
    """
    return _run_in_worker(make, timeout, bound=False)


def _run_in_worker(
    make: Callable[[], Awaitable[T]], timeout: float | None, *, bound: bool = True
) -> T:
    context = contextvars.copy_context()
    outcome: dict[str, object] = {}
    finished = threading.Event()

    def work() -> None:
        loop = asyncio.new_event_loop()
        try:
            try:
                coroutine = _bounded(make, timeout if bound else None)
                outcome["value"] = context.run(loop.run_until_complete, coroutine)
            except BaseException as exc:  # handed to the caller's thread below
                outcome["error"] = exc
            finally:
                finished.set()
            _shut_down(loop)  # after the hand-over: an abandoned task cannot hold the caller
        finally:
            loop.close()

    worker = threading.Thread(target=work, name="mellea-ctx-bridge", daemon=True)
    worker.start()
    grace = _GRACE_SECONDS
    finished.wait(None if timeout is None else timeout + grace)
    if not finished.is_set():
        msg = (
            f"the operation did not finish within timeout={timeout!r} seconds and did not "
            "stop when cancelled; it is left running in a daemon thread, and its outcome "
            "will be dropped"
        )
        raise CompactionTimeoutError(msg)
    worker.join(grace)  # the loop's own shutdown; brief unless a task ignores cancellation
    error = outcome.get("error")
    if error is not None:
        raise error  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on ``loop`` and wait for it, as ``asyncio.run`` does."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
