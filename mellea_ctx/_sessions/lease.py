"""One compactor per session: the lease a worker takes before compacting a stored session.

A compaction that calls a model is expensive; two workers that share a session
would both pay for it, and one would lose at the version check. So a worker
takes the session's *lease* first (:meth:`~mellea_ctx.Session.compact`): a
short-lived claim, held by one holder at a time, that expires by itself after
``ttl`` seconds, so a worker that crashes while holding it never blocks the
session for longer than that. A worker that does not get it does not wait
(unless told to) and does not summarize: it goes on with the uncompacted
history, which is lossless, and the holder's compaction lands for both.

Each store keeps leases where it keeps sessions, so every worker of that store
sees them: ``MemoryStore`` in its process, SQLite in a ``leases`` table (the
machine's clock), Redis as a key set with ``SET NX PX`` (the server's clock),
PostgreSQL in a lease row (the server's clock). A store of the user's own
without leases gets one in this process (:func:`leases_of`).
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import Any, Literal, Protocol, runtime_checkable

from .._core.checks import require_number
from .._core.operations import Operation, arun, run

#: How often a worker that waits for a lease asks again, in seconds.
POLL: float = 0.05


@runtime_checkable
class SessionLeases(Protocol):
    """A store that keeps leases: at most one holder per session until the lease expires."""

    def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's lease for ``ttl`` seconds if it is free or expired."""
        ...

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it."""
        ...


@runtime_checkable
class AsyncSessionLeases(Protocol):
    """:class:`SessionLeases` with coroutine methods."""

    async def aacquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's lease for ``ttl`` seconds if it is free or expired."""
        ...

    async def arelease_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it."""
        ...


class LocalLeases:
    """Leases in this process's memory (``MemoryStore``'s, and any store without its own)."""

    __slots__ = ("_held", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, float]] = {}

    def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        now = time.monotonic()
        with self._lock:
            found = self._held.get(session_id)
            if found is not None and found[0] != holder and found[1] > now:
                return False
            self._held[session_id] = (holder, now + ttl)
            return True

    def release_lease(self, session_id: str, holder: str) -> None:
        with self._lock:
            found = self._held.get(session_id)
            if found is not None and found[0] == holder:
                del self._held[session_id]


_FALLBACK: weakref.WeakKeyDictionary[Any, LocalLeases] = weakref.WeakKeyDictionary()
_FALLBACK_LOCK = threading.Lock()


def leases_of(store: object) -> SessionLeases | AsyncSessionLeases:
    """The leases of ``store``: its own when it keeps them, else ones in this process."""
    if isinstance(store, (SessionLeases, AsyncSessionLeases)):
        return store
    inner = getattr(store, "store", None)  # an adapter: the sync store's leases
    if inner is not None and isinstance(inner, SessionLeases):
        return inner
    with _FALLBACK_LOCK:
        try:
            found = _FALLBACK.get(store)
            if found is None:
                found = _FALLBACK[store] = LocalLeases()
        except TypeError:  # not weakly referenceable: a lease for this call only
            found = LocalLeases()
    return found


def check_ttl(owner: str, name: str, value: object, *, allow_zero: bool) -> float:
    """Return ``value`` as seconds if it is a finite number > 0 (or >= 0 when allowed)."""
    fix = "pass e.g. lease=60.0 (longer than a compaction takes) and wait=0.0"
    above = not allow_zero
    return float(
        require_number(owner, name, value, minimum=0, above=above, unit="seconds", fix=fix)
    )


def _polling(wait: float) -> Operation[Literal["take", "sleep"], bool]:
    """Ask for the lease (``"take"``, replied whether taken) until taken or ``wait`` is over."""
    deadline = time.monotonic() + wait
    while True:
        if (yield "take"):
            return True
        if time.monotonic() >= deadline:
            return False
        yield "sleep"


def acquire(leases: SessionLeases, session_id: str, holder: str, ttl: float, wait: float) -> bool:
    """Take the lease, asking again for up to ``wait`` seconds; whether it was taken."""

    def execute(step: Literal["take", "sleep"]) -> bool | None:
        if step == "take":
            return leases.acquire_lease(session_id, holder, ttl)
        time.sleep(POLL)
        return None

    return run(_polling(wait), execute)


async def aacquire(
    leases: SessionLeases | AsyncSessionLeases,
    session_id: str,
    holder: str,
    ttl: float,
    wait: float,
) -> bool:
    """:func:`acquire` without blocking the event loop."""

    async def execute(step: Literal["take", "sleep"]) -> bool | None:
        if step == "sleep":
            await asyncio.sleep(POLL)
            return None
        if isinstance(leases, AsyncSessionLeases):
            return await leases.aacquire_lease(session_id, holder, ttl)
        return await asyncio.to_thread(leases.acquire_lease, session_id, holder, ttl)

    return await arun(_polling(wait), execute)


async def arelease(
    leases: SessionLeases | AsyncSessionLeases, session_id: str, holder: str
) -> None:
    """Give the lease back, through whichever face ``leases`` has."""
    if isinstance(leases, AsyncSessionLeases):
        await leases.arelease_lease(session_id, holder)
    else:
        await asyncio.to_thread(leases.release_lease, session_id, holder)
