"""What only ``PostgresStore`` and ``AsyncPostgresStore`` do, against a real PostgreSQL server.

The store protocol itself (round trips, versions, conflicts, threads, refusals) is
checked on every store, Postgres included, by ``tests/test_stores.py`` and its
siblings through ``tests/_stores.py``. Here: the tables and their prefixes, a
restart of the server in the middle of a session, errors and arguments.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncSessionStore,
    InvalidArgumentError,
    Message,
    PostgresStore,
    SessionMemory,
    SessionStore,
    SessionStoreError,
)

from ._async_face import SyncFace
from ._postgres import (
    PostgresServer,
    find_bindir,
    postgres_server_fixture,  # noqa: F401 (a fixture)
    remove_server,
    start_postgres_server,
)


def fresh_prefix() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


def tables(dsn: str, prefix: str) -> list[str]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s ORDER BY tablename",
            (prefix + "\\_%",),
        ).fetchall()
    return [name for (name,) in rows]


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class TestTables:
    def test_made_on_first_use_under_the_prefix(self, postgres_server: PostgresServer) -> None:
        """Nothing exists until the first call; then five tables, all named by the prefix."""
        prefix = fresh_prefix()
        with PostgresStore(postgres_server.dsn, table_prefix=prefix) as store:
            assert [] == tables(postgres_server.dsn, prefix)
            store.load("s1")
            names = ["checkpoints", "components", "leases", "meta", "sessions"]
            assert [f"{prefix}_{name}" for name in names] == tables(postgres_server.dsn, prefix)

    def test_two_prefixes_never_see_each_other(self, postgres_server: PostgresServer) -> None:
        """The same session id under two prefixes: two sessions, each with its own version."""
        with (
            PostgresStore(postgres_server.dsn, table_prefix=fresh_prefix()) as one,
            PostgresStore(postgres_server.dsn, table_prefix=fresh_prefix()) as two,
        ):
            one.append("s1", [Message("user", "one")], expected_version=0)
            one.set_meta("s1", "k", "one")
            assert (0, (), {}) == (
                two.load("s1").version,
                two.load("s1").components,
                dict(two.load("s1").meta),
            )
            two.append("s1", [Message("user", "two")], expected_version=0)
            two.clear("s1")
            assert (Message("user", "one"),) == one.load("s1").components

    def test_many_workers_starting_together_make_the_tables_once(
        self, postgres_server: PostgresServer
    ) -> None:
        """Eight stores' first calls at once, on a new prefix: no error, every write kept."""
        prefix = fresh_prefix()
        stores = [PostgresStore(postgres_server.dsn, table_prefix=prefix) for _ in range(8)]
        errors: list[BaseException] = []
        start = threading.Barrier(len(stores))

        def first_call(store: PostgresStore, n: int) -> None:
            start.wait()
            try:
                store.append(f"s{n}", [Message("user", str(n))], expected_version=0)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=first_call, args=(s, n)) for n, s in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [] == errors
        assert all(stores[0].load(f"s{n}").version == 1 for n in range(8))
        for store in stores:
            store.close()

    def test_sync_and_async_share_a_prefix(self, postgres_server: PostgresServer) -> None:
        """A turn the async store writes is read by the sync one, and the other way round."""
        prefix = fresh_prefix()
        with (
            PostgresStore(postgres_server.dsn, table_prefix=prefix) as sync,
            SyncFace(AsyncPostgresStore(postgres_server.dsn, table_prefix=prefix)) as face,
        ):
            face.append("s1", [Message("user", "async")], expected_version=0)
            sync.append("s1", [Message("assistant", "sync")], expected_version=1)
            assert ["async", "sync"] == [c.content for c in face.load("s1").components]

    def test_rows_changed_outside_are_reported(self, postgres_server: PostgresServer) -> None:
        """A session whose rows do not add up is reported, not half-read."""
        prefix = fresh_prefix()
        with PostgresStore(postgres_server.dsn, table_prefix=prefix) as store:
            store.append("s1", [Message("user", "a"), Message("user", "b")], expected_version=0)
            with psycopg.connect(postgres_server.dsn) as connection:
                connection.execute(f"DELETE FROM {prefix}_components WHERE position = 1")
            with pytest.raises(SessionStoreError, match="should hold 2 components but holds 1"):
                store.load("s1")


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    """A server of this module's own, which its tests stop and start again."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = start_postgres_server(bindir)
    try:
        yield server
    finally:
        remove_server(server)


class TestServerRestart:
    @pytest.mark.parametrize("kind", ["sync", "async"])
    def test_a_typed_error_during_the_outage_and_work_after_it(
        self, own_server: PostgresServer, kind: str
    ) -> None:
        """The same store object: SessionStoreError while the server is down, then it works."""
        prefix = fresh_prefix()
        store: SessionStore
        if kind == "sync":
            store = PostgresStore(own_server.dsn, table_prefix=prefix, timeout=1.0)
        else:
            store = SyncFace(AsyncPostgresStore(own_server.dsn, table_prefix=prefix, timeout=1.0))
        memory = SessionMemory(store)
        session = memory.open("s1").commit([Message("user", "before")])
        own_server.stop()
        try:
            for call in (
                lambda: memory.open("s1"),
                lambda: session.commit([Message("user", "during")]),
            ):
                with pytest.raises(SessionStoreError, match="failed") as caught:
                    call()
                assert isinstance(caught.value.__cause__, psycopg.Error)
        finally:
            own_server.start()
        # The pool reconnects in the background, with a backoff of its own that may still be
        # running when the server is back: the same store works again within seconds.
        deadline = time.monotonic() + 30
        while True:
            try:
                reopened = memory.open("s1")
                break
            except SessionStoreError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        session = reopened.commit([Message("user", "after")])
        assert ["before", "after"] == [c.content for c in memory.open("s1").dialogue]
        assert 2 == session.version
        store.close()  # type: ignore[attr-defined]


class TestErrors:
    def test_an_unreachable_server_is_a_store_error(self) -> None:
        """No server at the dsn: SessionStoreError naming it (without its password)."""
        dsn = f"postgresql://app:secret@127.0.0.1:{unused_port()}/app"
        store = PostgresStore(dsn, timeout=0.5)
        with pytest.raises(SessionStoreError, match=r"PostgresStore\(.*load on session") as e:
            store.load("s1")
        store.close()
        assert "secret" not in str(e.value) and "app:***@" in str(e.value)
        assert "secret" not in repr(store)

    def test_a_closed_store_refuses_to_work(self, postgres_server: PostgresServer) -> None:
        store = PostgresStore(postgres_server.dsn, table_prefix=fresh_prefix())
        store.close()
        with pytest.raises(SessionStoreError, match="is closed"):
            store.load("s1")

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"dsn": ""}, "dsn='' must be a non-empty str"),
            ({"dsn": 5432}, "dsn=5432 must be a non-empty str"),
            ({"dsn": "host=a port"}, "is not a PostgreSQL connection string"),
            ({"table_prefix": "My-App"}, "table_prefix='My-App' must be 1 to 40 lowercase"),
            ({"table_prefix": "x; DROP TABLE y"}, "must be 1 to 40 lowercase"),
            ({"table_prefix": "a" * 41}, "must be 1 to 40 lowercase"),
            ({"timeout": 0}, "timeout=0 must be a number of seconds > 0"),
            ({"max_connections": 0}, "max_connections=0 must be an int >= 1"),
        ],
    )
    @pytest.mark.parametrize("cls", [PostgresStore, AsyncPostgresStore])
    def test_bad_arguments(self, cls: Any, kwargs: dict[str, Any], message: str) -> None:
        kwargs = {"dsn": "postgresql://127.0.0.1/app", **kwargs}
        with pytest.raises(InvalidArgumentError, match=message):
            cls(**kwargs)

    def test_missing_psycopg_says_how_to_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "psycopg_pool", None)
        with pytest.raises(ImportError, match=r"pip install '\.\[postgres\]'"):
            PostgresStore("postgresql://127.0.0.1/app")

    def test_the_faces(self) -> None:
        """The sync store is a SessionStore only, the async one an AsyncSessionStore only."""
        sync, other = PostgresStore("host=x"), AsyncPostgresStore("host=x")
        assert isinstance(sync, SessionStore) and not isinstance(sync, AsyncSessionStore)
        assert isinstance(other, AsyncSessionStore) and not isinstance(other, SessionStore)
        sync.close()
        asyncio.run(other.aclose())
