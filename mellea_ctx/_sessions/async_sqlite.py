"""``AsyncSQLiteStore``: the SQLite store with an async face, each call in a worker thread.

Python's ``sqlite3`` module has no async API; every async SQLite library runs
the blocking calls in a thread. This store does it with ``asyncio.to_thread``
on :class:`~mellea_ctx.SQLiteStore`'s own methods, so the file layout, the
transactions, the crash safety and the error messages are that store's,
unchanged. ``benchmarks/bench_async_sqlite.py`` measures it against
``aiosqlite`` (one dedicated thread per connection) on a real file: a turn
costs about the same either way, and this way needs no extra dependency.

Worker threads open their own connections (the store keeps one per thread),
so concurrent calls from many tasks proceed as concurrent threads would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from .._core.components import Component
from .sqlite import SQLiteStore
from .store import StoredSession


class AsyncSQLiteStore(SQLiteStore):
    """A :class:`~mellea_ctx.SQLiteStore` that is also an :class:`~mellea_ctx.AsyncSessionStore`.

    The sync methods (``load``, ``append``, ...) work as on ``SQLiteStore``;
    the async ones (``aload``, ``aappend``, ...) run them in a worker thread,
    so awaiting a write never blocks the event loop. A call cancelled while
    its thread runs does not stop the thread: the write is applied, or
    refused, as if it had not been cancelled.

    Args:
        path: The database file (see :class:`~mellea_ctx.SQLiteStore`).
        timeout: Seconds a write waits for another writer's lock.

    Raises:
        InvalidArgumentError: As :class:`~mellea_ctx.SQLiteStore` does.
        SessionStoreError: As :class:`~mellea_ctx.SQLiteStore` does.

    Examples:
        >>> import asyncio, os, tempfile
        >>> from mellea_ctx import Message
        >>> async def main(path):
        ...     with AsyncSQLiteStore(path) as store:
        ...         await store.aappend("s1", [Message("user", "hi")], expected_version=0)
        ...         return (await store.aload("s1")).version
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     asyncio.run(main(os.path.join(tmp, "sessions.db")))
        1
    """

    async def aload(self, session_id: str) -> StoredSession:
        """Return the session as :meth:`SQLiteStore.load` does, from a worker thread."""
        return await asyncio.to_thread(self.load, session_id)

    async def aappend(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append as :meth:`SQLiteStore.append` does, from a worker thread."""
        return await asyncio.to_thread(
            self.append, session_id, components, expected_version=expected_version
        )

    async def areplace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace as :meth:`SQLiteStore.replace` does, from a worker thread."""
        return await asyncio.to_thread(
            self.replace, session_id, components, expected_version=expected_version
        )

    async def aset_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key as :meth:`SQLiteStore.set_meta` does, from a worker thread."""
        await asyncio.to_thread(self.set_meta, session_id, key, value)

    async def aclear(self, session_id: str) -> None:
        """Forget the session as :meth:`SQLiteStore.clear` does, from a worker thread."""
        await asyncio.to_thread(self.clear, session_id)

    async def aacquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the compaction lease as :meth:`SQLiteStore.acquire_lease` does."""
        return await asyncio.to_thread(self.acquire_lease, session_id, holder, ttl)

    async def arelease_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back as :meth:`SQLiteStore.release_lease` does."""
        await asyncio.to_thread(self.release_lease, session_id, holder)

    async def aclose(self) -> None:
        """Close every connection, as :meth:`SQLiteStore.close` does."""
        self.close()

    def __enter__(self) -> AsyncSQLiteStore:
        return self

    async def __aenter__(self) -> AsyncSQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<AsyncSQLiteStore path={self.path!r}>"
