"""The async face of the store interface, and adapters that give every sync store one.

:class:`AsyncSessionStore` is :class:`~mellea_ctx.SessionStore` with every
method a coroutine, prefixed ``a`` (``load`` / ``aload``). The rules are the
same: each write is atomic and applied only at ``expected_version``. An async
agent loop (``areact``) writes through it, so the event loop never waits on a
disk or a socket.

Every sync store gets an async face from :func:`as_async_store`: a
:class:`~mellea_ctx.MemoryStore` answers inline (a few dict operations under a
lock, nothing to wait for); any other store runs each call in a worker thread
(``asyncio.to_thread``), which is how :class:`~mellea_ctx.AsyncSQLiteStore`
works too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar, runtime_checkable

from .._core.checks import require_bool
from .._core.components import Component
from .._core.exceptions import InvalidArgumentError
from .memory import MemoryStore
from .store import SessionStore, StoredSession

T = TypeVar("T")


@runtime_checkable
class AsyncSessionStore(Protocol):
    """:class:`~mellea_ctx.SessionStore` with coroutine methods, for async code.

    The same contract: each write atomic, ``aappend`` and ``areplace``
    applied only when the session is still at ``expected_version`` (else
    :class:`~mellea_ctx.SessionConflictError`, nothing written), a bad
    session id refused with :class:`~mellea_ctx.InvalidArgumentError`.
    ``AsyncRedisStore``, ``AsyncSQLiteStore`` and :class:`AsyncStoreAdapter`
    implement it.
    """

    async def aload(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata, read together."""
        ...

    async def aappend(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` (at least one) and return the new version."""
        ...

    async def areplace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the whole dialogue with ``components`` and return the new version."""
        ...

    async def aset_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key (``None`` deletes it); the version does not move."""
        ...

    async def aclear(self, session_id: str) -> None:
        """Forget the session: dialogue, version and metadata."""
        ...


class AsyncStoreAdapter:
    """The async face of a sync :class:`~mellea_ctx.SessionStore`.

    Each call runs the store's own method in a worker thread
    (``asyncio.to_thread``), or inline with ``inline=True`` (for a store that
    never waits, such as :class:`~mellea_ctx.MemoryStore`). The sync store
    stays usable beside it: both see the same sessions.

    A call cancelled while its worker thread runs does not stop the thread:
    the write is then applied, or refused, as if it had not been cancelled.

    Args:
        store: The sync store.
        inline: Run each call on the event loop instead of in a thread.

    Raises:
        InvalidArgumentError: When ``store`` is not a ``SessionStore``.

    Examples:
        >>> import asyncio
        >>> from mellea_ctx import MemoryStore, Message
        >>> store = AsyncStoreAdapter(MemoryStore())
        >>> asyncio.run(store.aappend("s1", [Message("user", "hi")], expected_version=0))
        1
        >>> asyncio.run(store.aload("s1")).version
        1
    """

    __slots__ = ("_inline", "_store")

    def __init__(self, store: SessionStore, *, inline: bool = False) -> None:
        if not isinstance(store, SessionStore):
            msg = (
                f"AsyncStoreAdapter: store={store!r} is not a SessionStore (it needs load, "
                "append, replace, set_meta and clear); pass MemoryStore(), SQLiteStore(path) "
                "or RedisStore(url)"
            )
            raise InvalidArgumentError(msg)
        require_bool("AsyncStoreAdapter", "inline", inline)
        self._store = store
        self._inline = inline

    @property
    def store(self) -> SessionStore:
        """The sync store every call goes to."""
        return self._store

    async def aload(self, session_id: str) -> StoredSession:
        """Return the session as :meth:`SessionStore.load` does, without blocking the loop."""
        return await self._call(self._store.load, session_id)

    async def aappend(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append as :meth:`SessionStore.append` does, without blocking the loop."""
        append = self._store.append
        return await self._call(append, session_id, components, expected_version=expected_version)

    async def areplace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace as :meth:`SessionStore.replace` does, without blocking the loop."""
        replace = self._store.replace
        return await self._call(replace, session_id, components, expected_version=expected_version)

    async def aset_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key as :meth:`SessionStore.set_meta` does."""
        await self._call(self._store.set_meta, session_id, key, value)

    async def aclear(self, session_id: str) -> None:
        """Forget the session as :meth:`SessionStore.clear` does."""
        await self._call(self._store.clear, session_id)

    async def _call(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)``: inline, or in a worker thread."""
        if self._inline:
            return function(*args, **kwargs)
        return await asyncio.to_thread(function, *args, **kwargs)

    def __repr__(self) -> str:
        how = "inline" if self._inline else "thread"
        return f"<AsyncStoreAdapter {how} {self._store!r}>"


def as_async_store(store: SessionStore | AsyncSessionStore) -> AsyncSessionStore:
    """Return the async face of ``store``: itself when it has one, else an adapter.

    A :class:`~mellea_ctx.MemoryStore` is adapted inline (it never waits);
    any other sync store runs each call in a worker thread.

    Raises:
        InvalidArgumentError: When ``store`` is neither kind of store.

    Examples:
        >>> from mellea_ctx import MemoryStore
        >>> as_async_store(MemoryStore())
        <AsyncStoreAdapter inline <MemoryStore sessions=0>>
    """
    if isinstance(store, AsyncSessionStore):
        return store
    if isinstance(store, SessionStore):
        return AsyncStoreAdapter(store, inline=isinstance(store, MemoryStore))
    msg = (
        f"as_async_store: store={store!r} is neither a SessionStore nor an AsyncSessionStore; "
        "pass MemoryStore(), SQLiteStore(path), RedisStore(url) or AsyncRedisStore(url)"
    )
    raise InvalidArgumentError(msg)
