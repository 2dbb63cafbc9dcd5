"""Logic written once for a sync and an async caller: generators run by a driver.

An *operation* is the logic of one call, with no I/O in it: it checks its
arguments, says what to do by yielding *requests* (a store's transaction
statements, a Redis command, a lease to take, a context to compact: whatever
its caller's ``execute`` runs), and decides from each reply, which it is sent
back. The sync form of a call runs its operation with :func:`run`, the async
twin with :func:`arun`; the two differ only in their ``execute`` (a call, or
an awaited one), the way h11 and httpcore keep a protocol's rules in one
sans-I/O core. The stores of ``_sessions`` are built on operations, and so
are the sync and async forms of ``Session.compact`` and of the framework
adapters' compaction.

The invariant: a request's error is thrown into the operation where it
yielded, so the operation can answer it (a write refused for missing
checkpoint entries is sent again in full, :func:`~mellea_ctx._sessions.chains.write_chains`); an
error it does not catch leaves the driver as it was raised. Every error is
thrown in, a cancellation too, so an operation's ``finally`` runs (and may
yield, as a lease's release does) as it would in straight-line code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

R = TypeVar("R")
T = TypeVar("T")

#: An operation: yields requests of type ``R``, is sent each one's reply, returns a ``T``.
Operation = Generator[R, Any, T]


def run(operation: Operation[R, T], execute: Callable[[R], Any]) -> T:
    """Run ``operation``, answering each request with ``execute(request)``; return its result.

    This is :func:`arun`'s loop, driven by hand: with a sync ``execute`` its
    coroutine never suspends, so one ``send`` runs it to the end.

    Examples:
        >>> def double() -> Operation[int, int]:
        ...     reply = yield 21
        ...     return reply * 2
        >>> run(double(), lambda n: n)
        42
    """

    async def answer(request: R) -> Any:
        return execute(request)

    driver = arun(operation, answer)
    try:
        driver.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    driver.close()
    msg = "run: the operation's driver suspended, which a sync execute never does"
    raise AssertionError(msg)


async def arun(operation: Operation[R, T], execute: Callable[[R], Awaitable[Any]]) -> T:
    """Run ``operation``, answering each request with ``await execute(request)``; return its result.

    The one driver loop: :func:`run` runs it too.

    Examples:
        >>> import asyncio
        >>> async def answer(n: int) -> int:
        ...     return n
        >>> def double() -> Operation[int, int]:
        ...     reply = yield 21
        ...     return reply * 2
        >>> asyncio.run(arun(double(), answer))
        42
    """
    try:
        request = next(operation)
        while True:
            try:
                reply = await execute(request)
            except BaseException as exc:
                request = operation.throw(exc)
            else:
                request = operation.send(reply)
    except StopIteration as done:
        result: T = done.value
        return result


def single(request: R) -> Operation[R, Any]:
    """The operation of one request: its reply is the result."""
    reply = yield request
    return reply
