"""Drive an async store through the sync store interface, so every store suite runs on it.

``SyncFace(astore)`` runs each call as a coroutine on an event loop of its own,
in a background thread, and waits for the answer: the tests (threads, worker
processes) call the async store's real ``aload``/``aappend``/... methods.
``open_spec`` opens the store a worker spec names (``sqlite:PATH``,
``redis:URL#PREFIX``, ``postgres:DSN#PREFIX``, and their ``async-`` forms).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncRedisStore,
    AsyncSessionStore,
    AsyncSQLiteStore,
    Component,
    PostgresStore,
    RedisStore,
    SessionStore,
    SQLiteStore,
    StoredSession,
)

__all__ = ["SyncFace", "open_spec"]

T = TypeVar("T")


class SyncFace:
    """A :class:`SessionStore` whose every call is the async store's coroutine, awaited."""

    def __init__(self, astore: AsyncSessionStore) -> None:
        self.astore = astore
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def load(self, session_id: str) -> StoredSession:
        return self._run(self.astore.aload(session_id))

    def append(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        return self._run(
            self.astore.aappend(session_id, components, expected_version=expected_version)
        )

    def replace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        return self._run(
            self.astore.areplace(session_id, components, expected_version=expected_version)
        )

    def set_meta(self, session_id: str, key: str, value: str | None) -> None:
        self._run(self.astore.aset_meta(session_id, key, value))

    def clear(self, session_id: str) -> None:
        self._run(self.astore.aclear(session_id))

    def close(self) -> None:
        closer = getattr(self.astore, "aclose", None)
        if closer is not None and self._loop.is_running():
            self._run(closer())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncFace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SyncFace {self.astore!r}>"


def open_spec(spec: str, **sqlite_options: Any) -> SessionStore:
    """Open the store ``spec`` names.

    ``[async-]sqlite:PATH``, ``[async-]redis:URL#PREFIX`` or ``[async-]postgres:DSN#PREFIX``.
    """
    kind, _, target = spec.partition(":")
    url, _, prefix = target.partition("#")
    if kind == "sqlite":
        return SQLiteStore(target, **sqlite_options)
    if kind == "redis":
        return RedisStore(url, prefix=prefix)
    if kind == "async-sqlite":
        return SyncFace(AsyncSQLiteStore(target, **sqlite_options))
    if kind == "async-redis":
        return SyncFace(AsyncRedisStore(url, prefix=prefix))
    if kind == "postgres":
        return PostgresStore(url, table_prefix=prefix)
    if kind == "async-postgres":
        return SyncFace(AsyncPostgresStore(url, table_prefix=prefix))
    raise ValueError(f"unknown store spec {spec!r}")
