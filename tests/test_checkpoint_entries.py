"""Each checkpoint of a chain is stored once (``mellea_ctx/_sessions/chains.py``), on every store.

A replace after a compaction writes one new entry, whatever the depth of the
chain behind it; a write that relies on entries the session does not hold
(cleared by another worker, or a checkpoint from another session) is written
in full; records in the layout from before entries read back.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import psycopg
import redis

from mellea_ctx import (
    Checkpoint,
    Message,
    PostgresStore,
    RedisStore,
    SessionStore,
    SQLiteStore,
    component_to_record,
)

from ._postgres import PostgresServer, postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import RedisServer, redis_server_fixture  # noqa: F401 (a fixture)
from ._stores import StoreFactory, store_factory_fixture, store_fixture  # noqa: F401 (fixtures)


def chain_of(depth: int) -> Checkpoint:
    checkpoint = Checkpoint("first", span=[Message("user", "hello")], replaced_count=1)
    for i in range(depth - 1):
        checkpoint = Checkpoint(
            f"level {i}", span=[checkpoint, Message("user", f"m{i}")], replaced_count=i + 2
        )
    return checkpoint


def records(components: object) -> list[object]:
    return [component_to_record(c) for c in components]  # type: ignore[attr-defined]


class TestEveryStore:
    def test_a_chain_grown_one_replace_at_a_time_reads_back_whole(
        self, store_factory: StoreFactory
    ) -> None:
        """Thirty replaces, each folding the last checkpoint: a new worker reads it all."""
        store = store_factory()
        version = store.append("s", [Message("user", "go")], expected_version=0)
        checkpoint = Checkpoint("first", span=[Message("user", "go")], replaced_count=1)
        for i in range(30):
            version = store.replace("s", [checkpoint], expected_version=version)
            checkpoint = Checkpoint(f"level {i}", span=[checkpoint, Message("user", f"m{i}")])
        loaded = store_factory().load("s").components
        assert records(loaded) == records([store.load("s").components[0]])
        assert 30 == version - 1

    def test_a_session_cleared_by_another_worker_gets_the_whole_chain(
        self, store_factory: StoreFactory
    ) -> None:
        """The writer relies on entries it wrote; they were cleared: it writes them again."""
        store, other = store_factory(), store_factory()
        deep = chain_of(20)
        store.replace("s", [deep], expected_version=0)
        other.clear("s")
        store.replace("s", [Checkpoint("on top", span=[deep])], expected_version=0)
        (back,) = store_factory().load("s").components
        assert records([back]) == records([Checkpoint("on top", span=[deep])])

    def test_a_checkpoint_from_another_session(self, store_factory: StoreFactory) -> None:
        """A chain stored in one session, then written into another, reads back in both."""
        store = store_factory()
        deep = chain_of(10)
        store.append("a", [deep], expected_version=0)
        loaded = store.load("a").components[0]
        store.append("b", [Message("user", "x"), loaded], expected_version=0)
        store.clear("a")
        assert records([Message("user", "x"), deep]) == records(
            store_factory().load("b").components
        )

    def test_the_same_checkpoint_twice_in_one_write(self, store: SessionStore) -> None:
        deep = chain_of(5)
        store.append("s", [deep, Message("user", "x"), deep], expected_version=0)
        assert records([deep, Message("user", "x"), deep]) == records(store.load("s").components)


# -- what is written, counted in each durable store's own terms ---------------------------


def _grow(store: SessionStore, depth: int, count: Callable[[], int]) -> list[int]:
    """Grow a chain ``depth`` replaces deep; return the entries held after each replace."""
    version = 0
    checkpoint = Checkpoint("first", span=[Message("user", "hello")])
    held = []
    for i in range(depth):
        checkpoint = Checkpoint(f"level {i}", span=[checkpoint, Message("user", f"m{i}")])
        version = store.replace(
            "s", [Message("system", "sys"), checkpoint], expected_version=version
        )
        held.append(count())
    return held


class TestWrittenOnce:
    """Each replace adds exactly one entry (its new checkpoint): the older ones are referred to."""

    def test_sqlite(self, tmp_path: Path) -> None:
        path = tmp_path / "s.db"
        with SQLiteStore(path) as store, closing(sqlite3.connect(path)) as raw:

            def count() -> int:
                (n,) = raw.execute("SELECT count(*) FROM checkpoints").fetchone()
                return int(n)

            assert list(range(2, 42)) == _grow(store, 40, count)

    def test_redis(self, redis_server: RedisServer) -> None:
        prefix = f"once-{uuid.uuid4().hex}:"
        client = redis.Redis.from_url(redis_server.url)
        with RedisStore(redis_server.url, prefix=prefix) as store:
            held = _grow(store, 40, lambda: int(client.hlen(f"{prefix}{{s}}:checkpoints")))
        assert list(range(2, 42)) == held
        client.close()

    def test_postgres(self, postgres_server: PostgresServer) -> None:
        prefix = f"once_{uuid.uuid4().hex[:16]}"
        with (
            PostgresStore(postgres_server.dsn, table_prefix=prefix) as store,
            psycopg.connect(postgres_server.dsn, autocommit=True) as raw,
        ):

            def count() -> int:
                row = raw.execute(f"SELECT count(*) FROM {prefix}_checkpoints").fetchone()
                assert row is not None
                return int(row[0])

            assert list(range(2, 42)) == _grow(store, 40, count)


# -- records from before entries ----------------------------------------------------------


def _old_record() -> tuple[Checkpoint, str]:
    """A checkpoint and the whole record the stores wrote for it before entries."""
    deep = chain_of(6)
    return deep, json.dumps(component_to_record(deep), ensure_ascii=False, separators=(",", ":"))


class TestOldRecordsRead:
    def test_a_sqlite_file_of_layout_1(self, tmp_path: Path) -> None:
        """A file SQLiteStore wrote before entries (user_version 1) reads, and takes writes."""
        path = tmp_path / "old.db"
        deep, text = _old_record()
        with closing(sqlite3.connect(path)) as raw:
            raw.executescript(
                """
                CREATE TABLE sessions (session_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
                    length INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE components (session_id TEXT NOT NULL, position INTEGER NOT NULL,
                    record TEXT NOT NULL, PRIMARY KEY (session_id, position)) WITHOUT ROWID;
                CREATE TABLE meta (session_id TEXT NOT NULL, key TEXT NOT NULL,
                    value TEXT NOT NULL, PRIMARY KEY (session_id, key)) WITHOUT ROWID;
                PRAGMA user_version = 1;
                """
            )
            raw.execute("INSERT INTO sessions VALUES ('s', 3, 1)")
            raw.execute("INSERT INTO components VALUES ('s', 0, ?)", (text,))
            raw.commit()
        with SQLiteStore(path) as store:
            (back,) = store.load("s").components
            assert records([back]) == records([deep])
            on_top = Checkpoint("on top", span=[back])
            store.replace("s", [on_top], expected_version=3)
        with SQLiteStore(path) as again:
            assert records([on_top]) == records(again.load("s").components)

    def test_a_redis_log_record(self, redis_server: RedisServer) -> None:
        prefix = f"old-{uuid.uuid4().hex}:"
        deep, text = _old_record()
        client = redis.Redis.from_url(redis_server.url)
        client.set(f"{prefix}{{s}}:version", 1)
        client.rpush(f"{prefix}{{s}}:log", text)
        with RedisStore(redis_server.url, prefix=prefix) as store:
            assert records([deep]) == records(store.load("s").components)
        client.close()

    def test_a_postgres_component_row(self, postgres_server: PostgresServer) -> None:
        prefix = f"old_{uuid.uuid4().hex[:16]}"
        deep, text = _old_record()
        with PostgresStore(postgres_server.dsn, table_prefix=prefix) as store:
            store.append("s", [Message("user", "placeholder")], expected_version=0)
            with psycopg.connect(postgres_server.dsn, autocommit=True) as raw:
                raw.execute(f"UPDATE {prefix}_components SET record = %s", (text,))
            assert records([deep]) == records(store.load("s").components)
