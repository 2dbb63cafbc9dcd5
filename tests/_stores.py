"""One fixture for every store, so each store test runs on memory, SQLite, Redis and PostgreSQL.

Redis and PostgreSQL are real servers the test session starts (``tests/_redis.py``,
``tests/_postgres.py``); each test gets a key or table prefix of its own.

Each kind also runs in its async form (``async-*``): the test drives the async
store's coroutines through :class:`~tests._async_face.SyncFace` (for memory,
the inline adapter ``as_async_store`` gives a ``MemoryStore``).

Import it into a test module (``from ._stores import store_fixture``); it is
registered as ``store``. ``make_store(kind, ...)`` opens another store on the
same place (a second worker on the same file or server).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncRedisStore,
    AsyncSQLiteStore,
    MemoryStore,
    PostgresStore,
    RedisStore,
    SessionStore,
    SQLiteStore,
    as_async_store,
)

from ._async_face import SyncFace
from ._postgres import PostgresServer
from ._redis import RedisServer

__all__ = ["STORE_KINDS", "StoreFactory", "store_factory_fixture", "store_fixture"]

STORE_KINDS = [
    "memory",
    "sqlite",
    "redis",
    "postgres",
    "async-memory",
    "async-sqlite",
    "async-redis",
    "async-postgres",
]

#: Opens one more store on the place the test's store uses (for memory: the same object).
StoreFactory = Callable[[], SessionStore]


@pytest.fixture(params=STORE_KINDS, name="store_factory")
def store_factory_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of stores that all see the same sessions, one per store kind."""
    opened: list[SQLiteStore | RedisStore | PostgresStore | SyncFace] = []
    kind = request.param
    if kind == "memory":
        shared = MemoryStore()

        def factory() -> SessionStore:
            return shared

    elif kind == "async-memory":
        face = SyncFace(as_async_store(MemoryStore()))
        opened.append(face)

        def factory() -> SessionStore:
            return face

    elif kind in ("sqlite", "async-sqlite"):
        path = tmp_path / "sessions.db"

        def factory() -> SessionStore:
            store = (
                SyncFace(AsyncSQLiteStore(path)) if kind == "async-sqlite" else SQLiteStore(path)
            )
            opened.append(store)
            return store

    elif kind.endswith("postgres"):
        database: PostgresServer = request.getfixturevalue("postgres_server")
        table_prefix = f"t_{uuid.uuid4().hex[:16]}"

        def factory() -> SessionStore:
            store: PostgresStore | SyncFace
            if kind == "async-postgres":
                store = SyncFace(AsyncPostgresStore(database.dsn, table_prefix=table_prefix))
            else:
                store = PostgresStore(database.dsn, table_prefix=table_prefix)
            opened.append(store)
            return store

    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        prefix = f"test-{uuid.uuid4().hex}:"

        def factory() -> SessionStore:
            if kind == "async-redis":
                store: RedisStore | SyncFace = SyncFace(AsyncRedisStore(server.url, prefix=prefix))
            else:
                store = RedisStore(server.url, prefix=prefix)
            opened.append(store)
            return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture(name="store")
def store_fixture(store_factory: StoreFactory) -> SessionStore:
    """A fresh, empty store of each kind."""
    return store_factory()
