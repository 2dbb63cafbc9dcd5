"""Session stores: the same behaviour from MemoryStore, SQLiteStore and a real Redis server."""

from __future__ import annotations

import pickle
import re
import socket
import sqlite3
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from mellea_ctx import (
    CBlock,
    ChatContext,
    Checkpoint,
    Component,
    InvalidArgumentError,
    InvalidComponentError,
    MemoryStore,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    RedisStore,
    SessionConflictError,
    SessionStore,
    SessionStoreError,
    SQLiteStore,
    StoredSession,
    ToolCall,
    ToolMessage,
    Usage,
)

from ._postgres import postgres_server_fixture  # noqa: F401 (a fixture)
from ._proxy import ReplyDropper
from ._redis import RedisServer, redis_server_fixture  # noqa: F401 (a fixture)
from ._stores import StoreFactory, store_factory_fixture, store_fixture  # noqa: F401 (fixtures)


def every_kind() -> list[Component]:
    """One component of every kind this package stores, with every optional field set."""
    call = ToolCall("call_1", "read_file", {"path": "src/app.py"})
    inner = Checkpoint(
        "The user asked for the config.",
        preserved=("config/app.toml",),
        span=[Message("user", "Where is the config?"), Message("assistant", "In config/.")],
        replaced_count=2,
    )
    outer = Checkpoint(
        "Earlier: config found; then the parser was fixed.",
        preserved=("src/parse.py", "PROJ-123"),
        span=[inner, Message("user", "Fix src/parse.py"), ModelOutputThunk("Fixed.")],
        replaced_count=5,
    )
    return [
        ReactInitiator("Fix the failing test in tests/test_io.py"),
        outer,
        Message("user", "Look at this: ü, 日本, emoji 🎉", images=("data:image/png;base64,AAA",)),
        Message("assistant", "Reading it.", tool_calls=[call], name="coder"),
        ToolMessage("print('hi')\n", tool_call_id="call_1", name="read_file"),
        ModelOutputThunk(
            None,
            tool_calls=[ToolCall("call_2", "ls"), ToolCall("call_3", "pwd")],
            usage=Usage(prompt_tokens=900, completion_tokens=12, total_tokens=915),
        ),
        ToolMessage("a.py b.py", tool_call_id="call_2"),
        ToolMessage("/src", tool_call_id="call_3"),
        CBlock("Here is the diff:\n+ x = 1"),
        ModelOutputThunk("Done.", usage=Usage(prompt_tokens=1000, completion_tokens=3)),
        Message("user", ""),
    ]


def spans(components: tuple[Component, ...] | list[Component]) -> list[Any]:
    """The checkpoint spans, nested, which take no part in equality."""
    return [(c.span, spans(c.span)) if isinstance(c, Checkpoint) else None for c in components]


class TestRoundTrip:
    def test_every_component_kind_reads_back_equal(self, store: SessionStore) -> None:
        """Every component kind, nested checkpoint spans included, reads back equal and typed."""
        written = every_kind()
        store.append("s1", written, expected_version=0)
        loaded = store.load("s1").components
        assert written == list(loaded)
        assert [type(c) for c in written] == [type(c) for c in loaded]
        assert spans(written) == spans(loaded)
        assert [c.content for c in written] == [c.content for c in loaded]

    def test_a_new_session_is_empty_at_version_0(self, store: SessionStore) -> None:
        """Loading a session nobody wrote gives version 0, no components, no metadata."""
        assert StoredSession(0, (), {}) == store.load("never-written")

    def test_stored_session_is_immutable(self, store: SessionStore) -> None:
        """The loaded snapshot holds a tuple and a read-only mapping."""
        store.append("s1", [Message("user", "hi")], expected_version=0)
        store.set_meta("s1", "k", "v")
        stored = store.load("s1")
        assert isinstance(stored.components, tuple)
        with pytest.raises(TypeError):
            stored.meta["k"] = "changed"  # type: ignore[index]

    def test_a_custom_component_kind_is_refused_everywhere(self, store: SessionStore) -> None:
        """A component kind without a record is refused by every store, the memory one too."""

        class Note(Component):
            pass

        with pytest.raises(InvalidComponentError, match="cannot store a Note"):
            store.append("s1", [Note()], expected_version=0)
        assert 0 == store.load("s1").version

    def test_many_components_in_one_write(self, store: SessionStore) -> None:
        """A batch larger than Redis's script chunk (1,000) is stored whole, in order."""
        batch = [Message("user", f"m{i}") for i in range(2_500)]
        store.replace("s1", batch, expected_version=0)
        store.append("s1", batch, expected_version=1)
        assert batch + batch == list(store.load("s1").components)


class TestVersions:
    def test_each_write_moves_the_version_by_one(self, store: SessionStore) -> None:
        """append and replace each return the next version, which load then reports."""
        assert 1 == store.append("s1", [Message("user", "a")], expected_version=0)
        assert 2 == store.append("s1", [Message("user", "b")], expected_version=1)
        assert 3 == store.replace("s1", [Message("user", "c")], expected_version=2)
        stored = store.load("s1")
        assert (3, (Message("user", "c"),)) == (stored.version, stored.components)

    def test_replace_may_empty_the_dialogue(self, store: SessionStore) -> None:
        """Replacing with nothing keeps the session (and its version) with an empty dialogue."""
        store.append("s1", [Message("user", "a")], expected_version=0)
        assert 2 == store.replace("s1", [], expected_version=1)
        assert StoredSession(2, (), {}) == store.load("s1")

    def test_metadata_does_not_move_the_version(self, store: SessionStore) -> None:
        """set_meta is outside the version scheme, so it never causes a conflict."""
        store.append("s1", [Message("user", "a")], expected_version=0)
        store.set_meta("s1", "tools", "search,read")
        assert 2 == store.append("s1", [Message("user", "b")], expected_version=1)


class TestConflicts:
    def test_a_stale_append_is_refused_and_writes_nothing(self, store: SessionStore) -> None:
        """Writing from an old version raises SessionConflictError and leaves the session as is."""
        store.append("s1", [Message("user", "a")], expected_version=0)
        with pytest.raises(SessionConflictError) as caught:
            store.append("s1", [Message("user", "late")], expected_version=0)
        assert ("s1", 0, 1) == (
            caught.value.session_id,
            caught.value.expected_version,
            caught.value.actual_version,
        )
        assert (Message("user", "a"),) == store.load("s1").components

    def test_a_stale_replace_is_refused_and_writes_nothing(self, store: SessionStore) -> None:
        """replace checks the version exactly as append does."""
        store.append("s1", [Message("user", "a")], expected_version=0)
        store.append("s1", [Message("user", "b")], expected_version=1)
        with pytest.raises(SessionConflictError):
            store.replace("s1", [Checkpoint("a and b")], expected_version=1)
        assert 2 == len(store.load("s1").components)

    def test_two_writers_on_one_session(self, store_factory: StoreFactory) -> None:
        """Two workers (two store objects on one file or server) loaded v0: the second loses."""
        first, second = store_factory(), store_factory()
        assert 0 == first.load("s1").version == second.load("s1").version
        first.append("s1", [Message("user", "from first")], expected_version=0)
        with pytest.raises(SessionConflictError, match="is at version 1"):
            second.append("s1", [Message("user", "from second")], expected_version=0)
        assert (Message("user", "from first"),) == second.load("s1").components

    def test_racing_writers_exactly_one_wins(self, store_factory: StoreFactory) -> None:
        """Eight threads, each with its own store, append at once from v0: exactly one lands."""
        stores = [store_factory() for _ in range(8)]
        barrier = threading.Barrier(len(stores))
        outcomes: list[str] = []

        def race(index: int) -> None:
            barrier.wait()
            try:
                stores[index].append("s1", [Message("user", f"w{index}")], expected_version=0)
                outcomes.append("won")
            except SessionConflictError:
                outcomes.append("conflict")

        threads = [threading.Thread(target=race, args=(i,)) for i in range(len(stores))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert ["won"] + ["conflict"] * 7 == sorted(outcomes, reverse=True)
        stored = stores[0].load("s1")
        assert (1, 1) == (stored.version, len(stored.components))

    def test_the_error_says_what_to_do_and_pickles(self) -> None:
        """The message names the session and both versions, suggests the fix, and pickles."""
        error = SessionConflictError("user-7", 3, 5)
        assert str(error) == (
            "session 'user-7' is at version 5, not at expected_version=3: another writer "
            "changed it first, and nothing was written; reload it with "
            "memory.open('user-7') and retry the turn"
        )
        copy = pickle.loads(pickle.dumps(error))
        assert (str(error), 5) == (str(copy), copy.actual_version)
        assert isinstance(error, RuntimeError)


class TestMeta:
    def test_set_replace_and_delete(self, store: SessionStore) -> None:
        """set_meta sets, overwrites, and deletes with None; deleting a missing key is fine."""
        store.set_meta("s1", "tool_search", '{"query": "files"}')
        store.set_meta("s1", "locale", "de")
        store.set_meta("s1", "locale", "fr")
        store.set_meta("s1", "tool_search", None)
        store.set_meta("s1", "never-set", None)
        assert {"locale": "fr"} == dict(store.load("s1").meta)

    def test_meta_alone_leaves_the_session_at_version_0(self, store: SessionStore) -> None:
        """A session with only metadata still reads as new: version 0, no dialogue."""
        store.set_meta("s1", "k", "v")
        stored = store.load("s1")
        assert (0, (), {"k": "v"}) == (stored.version, stored.components, dict(stored.meta))
        assert 1 == store.append("s1", [Message("user", "a")], expected_version=0)

    def test_meta_survives_writes(self, store: SessionStore) -> None:
        """append and replace keep the session's metadata."""
        store.set_meta("s1", "k", "v")
        store.append("s1", [Message("user", "a")], expected_version=0)
        store.replace("s1", [Message("user", "b")], expected_version=1)
        assert {"k": "v"} == dict(store.load("s1").meta)


class TestClear:
    def test_clear_forgets_one_session_only(self, store: SessionStore) -> None:
        """clear removes the dialogue, version and metadata of one session, not of others."""
        for session_id in ("s1", "s2"):
            store.append(session_id, [Message("user", session_id)], expected_version=0)
            store.set_meta(session_id, "k", session_id)
        store.clear("s1")
        store.clear("never-written")
        assert StoredSession(0, (), {}) == store.load("s1")
        assert StoredSession(1, (Message("user", "s2"),), {"k": "s2"}) == store.load("s2")

    def test_a_cleared_session_starts_again_at_version_0(self, store: SessionStore) -> None:
        """After clear, the session is new: the next write expects version 0."""
        store.append("s1", [Message("user", "a")], expected_version=0)
        store.clear("s1")
        assert 1 == store.append("s1", [Message("user", "b")], expected_version=0)


class TestThreads:
    def test_many_threads_many_sessions_no_cross_talk(self, store: SessionStore) -> None:
        """Eight threads write 25 turns each to their own sessions; each reads back only its own."""

        def work(worker: int) -> None:
            for step in range(25):
                session_id = f"w{worker}-s{step % 3}"
                version = store.load(session_id).version
                store.append(
                    session_id,
                    [Message("user", f"{session_id} {step}"), ModelOutputThunk(f"ok {step}")],
                    expected_version=version,
                )
                store.set_meta(session_id, "last", str(step))

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for worker in range(8):
            for slot in range(3):
                session_id = f"w{worker}-s{slot}"
                steps = [step for step in range(25) if step % 3 == slot]
                expected = [
                    c
                    for step in steps
                    for c in (
                        Message("user", f"{session_id} {step}"),
                        ModelOutputThunk(f"ok {step}"),
                    )
                ]
                stored = store.load(session_id)
                assert (len(steps), expected, {"last": str(steps[-1])}) == (
                    stored.version,
                    list(stored.components),
                    dict(stored.meta),
                )

    def test_contended_session_with_retries_loses_no_turn(
        self, store_factory: StoreFactory
    ) -> None:
        """Six threads commit 10 turns each to one session, reloading on conflict: all 60 land."""

        def work(worker: int) -> None:
            store = store_factory()
            for step in range(10):
                turn = [Message("user", f"{worker}:{step}"), ModelOutputThunk(f"{worker}:{step}")]
                while True:
                    version = store.load("shared").version
                    try:
                        store.append("shared", turn, expected_version=version)
                        break
                    except SessionConflictError:
                        continue

        threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = store_factory().load("shared")
        pairs = [
            (stored.components[i].content, stored.components[i + 1].content)
            for i in range(0, len(stored.components), 2)
        ]
        assert 60 == stored.version
        assert all(user == answer for user, answer in pairs)  # no turn split by another
        assert sorted(f"{w}:{s}" for w in range(6) for s in range(10)) == sorted(
            user for user, _ in pairs
        )


LONG_ID = "x" * 201


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class TestInvalidArguments:
    @pytest.mark.parametrize(
        ("session_id", "message"),
        [
            ("", "session_id='' must not be empty; pass the conversation's id"),
            (42, "session_id=42 must be a str, got int; pass str(...) of your id"),
            (None, "session_id=None must be a str, got NoneType"),
            (LONG_ID, "is 201 characters, more than 200; pass a shorter id"),
        ],
    )
    @pytest.mark.parametrize("operation", ["load", "append", "replace", "set_meta", "clear"])
    def test_bad_session_ids(
        self, store: SessionStore, operation: str, session_id: Any, message: str
    ) -> None:
        """Every operation refuses an empty, non-str or over-long session id, naming it."""
        call = {
            "load": lambda: store.load(session_id),
            "append": lambda: store.append(session_id, [Message("user", "a")], expected_version=0),
            "replace": lambda: store.replace(session_id, [], expected_version=0),
            "set_meta": lambda: store.set_meta(session_id, "k", "v"),
            "clear": lambda: store.clear(session_id),
        }[operation]
        with pytest.raises(InvalidArgumentError, match=re.escape(message)):
            call()

    def test_an_id_of_200_characters_is_fine(self, store: SessionStore) -> None:
        """The limit is inclusive, and any characters are allowed."""
        session_id = "é{}:*" * 40
        store.append(session_id, [Message("user", "a")], expected_version=0)
        assert 1 == store.load(session_id).version

    @pytest.mark.parametrize(
        ("kwargs", "error", "message"),
        [
            (
                {"expected_version": -1},
                InvalidArgumentError,
                "expected_version=-1 must be an int >= 0",
            ),
            ({"expected_version": True}, InvalidArgumentError, "expected_version=True must be"),
            ({"expected_version": "0"}, InvalidArgumentError, "expected_version='0' must be"),
            ({"components": []}, InvalidArgumentError, "components=() is empty"),
            ({"components": Message("user", "a")}, InvalidArgumentError, "wrap a single component"),
            ({"components": "hello"}, InvalidArgumentError, "must be a sequence of components"),
            (
                {"components": ["hello"]},
                InvalidComponentError,
                "components[0]='hello' is not a Component",
            ),
        ],
    )
    def test_bad_append_arguments(
        self, store: SessionStore, kwargs: dict[str, Any], error: type[Exception], message: str
    ) -> None:
        """append refuses a bad version or batch before writing anything."""
        arguments: dict[str, Any] = {"components": [Message("user", "a")], "expected_version": 0}
        arguments.update(kwargs)
        with pytest.raises(error, match=re.escape(message)):
            store.append("s1", arguments.pop("components"), **arguments)
        assert 0 == store.load("s1").version

    @pytest.mark.parametrize(
        ("key", "value", "message"),
        [
            ("", "v", "key='' must be a non-empty str"),
            (3, "v", "key=3 must be a non-empty str"),
            ("k" * 201, "v", "must be a non-empty str of at most 200 characters"),
            ("k", 3, "value=3 must be a str, or None to delete 'k'"),
            ("k", b"v", "value=b'v' must be a str"),
        ],
    )
    def test_bad_meta_arguments(
        self, store: SessionStore, key: Any, value: Any, message: str
    ) -> None:
        """set_meta refuses a bad key or value, naming it."""
        with pytest.raises(InvalidArgumentError, match=message):
            store.set_meta("s1", key, value)


class TestSQLiteStore:
    def test_durable_across_store_objects(self, tmp_path: Path) -> None:
        """A store opened later on the same file reads what an earlier one wrote."""
        path = tmp_path / "sessions.db"
        with SQLiteStore(path) as store:
            store.append("s1", every_kind(), expected_version=0)
        with SQLiteStore(str(path)) as again:
            assert every_kind() == list(again.load("s1").components)

    def test_wal_mode_and_full_sync(self, tmp_path: Path) -> None:
        """The file is in WAL mode, and every connection commits with synchronous=FULL."""
        with SQLiteStore(tmp_path / "s.db") as store:
            connection = store._connection()
            assert ("wal", 2) == (
                connection.execute("PRAGMA journal_mode").fetchone()[0],
                connection.execute("PRAGMA synchronous").fetchone()[0],
            )

    @pytest.mark.parametrize(
        ("path", "timeout", "message"),
        [
            (":memory:", 5.0, "path=':memory:' would give each connection a database of its own"),
            ("", 5.0, "path='' would give"),
            (3, 5.0, "path=3 must be a str or a path"),
            ("s.db", 0, "timeout=0 must be a number of seconds > 0"),
            ("s.db", -1.0, "timeout=-1.0 must be"),
            ("s.db", "5", "timeout='5' must be"),
            ("s.db", float("nan"), "timeout=nan must be"),
        ],
    )
    def test_bad_arguments(self, tmp_path: Path, path: Any, timeout: Any, message: str) -> None:
        """The constructor refuses an in-memory or empty path and a bad timeout."""
        if path == "s.db":
            path = tmp_path / path
        with pytest.raises(InvalidArgumentError, match=message):
            SQLiteStore(path, timeout=timeout)

    def test_a_missing_directory_is_a_store_error(self, tmp_path: Path) -> None:
        """A file that cannot be created raises SessionStoreError naming it, with the cause."""
        path = tmp_path / "missing" / "s.db"
        with pytest.raises(SessionStoreError, match="open the file failed") as caught:
            SQLiteStore(path)
        assert isinstance(caught.value.__cause__, sqlite3.Error)
        assert str(path) in str(caught.value)

    def test_a_file_from_another_layout_version_is_refused(self, tmp_path: Path) -> None:
        """A file whose user_version is not ours is refused, not misread."""
        path = tmp_path / "s.db"
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA user_version = 7")
        connection.close()
        with pytest.raises(SessionStoreError, match="layout version 7"):
            SQLiteStore(path)

    def test_a_writer_waits_then_gives_up_on_a_held_lock(self, tmp_path: Path) -> None:
        """While another connection holds the write lock past timeout, a write fails cleanly."""
        path = tmp_path / "s.db"
        SQLiteStore(path).close()  # the file exists, with its tables
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            store = SQLiteStore(path, timeout=0.2)  # opening an existing file takes no lock
            with pytest.raises(
                SessionStoreError, match=r"could not get the file's lock within timeout=0\.2s"
            ):
                store.append("s1", [Message("user", "a")], expected_version=0)
            assert 0 == store.load("s1").version  # readers are not blocked in WAL mode
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert 1 == store.append("s1", [Message("user", "a")], expected_version=0)
        store.close()

    def test_many_openers_of_a_new_file_at_once(self, tmp_path: Path) -> None:
        """Six threads opening one new file together all succeed (WAL switch and tables once)."""
        errors: list[Exception] = []

        def open_and_write(path: Path, barrier: threading.Barrier, index: int) -> None:
            barrier.wait()
            try:
                with SQLiteStore(path) as store:
                    store.set_meta("s1", f"opener-{index}", "here")
            except Exception as exc:  # collected: a thread's error would be lost
                errors.append(exc)

        for attempt in range(20):
            path = tmp_path / f"new-{attempt}.db"
            barrier = threading.Barrier(6)
            threads = [
                threading.Thread(target=open_and_write, args=(path, barrier, i)) for i in range(6)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert [] == errors
            with SQLiteStore(path) as store:
                assert 6 == len(store.load("s1").meta)

    def test_a_closed_store_refuses_to_work(self, tmp_path: Path) -> None:
        """After close(), every call raises SessionStoreError saying so."""
        store = SQLiteStore(tmp_path / "s.db")
        store.close()
        with pytest.raises(SessionStoreError, match="is closed"):
            store.load("s1")

    def test_rows_changed_outside_are_reported(self, tmp_path: Path) -> None:
        """A session whose rows do not add up is reported, not half-read."""
        path = tmp_path / "s.db"
        with SQLiteStore(path) as store:
            store.append("s1", [Message("user", "a"), Message("user", "b")], expected_version=0)
            with sqlite3.connect(path) as connection:
                connection.execute("DELETE FROM components WHERE position = 1")
            connection.close()
            with pytest.raises(SessionStoreError, match="should hold 2 components but holds 1"):
                store.load("s1")

    def test_connections_are_per_thread(self, tmp_path: Path) -> None:
        """Each thread gets a connection of its own; they all close with the store."""
        store = SQLiteStore(tmp_path / "s.db")
        seen: list[sqlite3.Connection] = []
        lock = threading.Lock()
        keep: list[threading.Thread] = []

        def grab() -> None:
            with lock:
                seen.append(store._connection())

        for _ in range(3):
            thread = threading.Thread(target=grab)
            keep.append(thread)
            thread.start()
            thread.join()
        assert 3 == len({id(c) for c in seen}) and store._connection() not in seen
        store.close()

    def test_a_full_database_names_the_fix_and_keeps_the_last_turn(self, tmp_path: Path) -> None:
        """Regression: SQLITE_FULL used to say "check that the directory is writable"."""
        path = tmp_path / "sessions.db"
        store = SQLiteStore(path)
        store.append("s1", [Message("user", "kept")], expected_version=0)
        # Cap this connection's file at its current size: the next page it needs is "full".
        connection = store._connection()
        (pages,) = connection.execute("PRAGMA page_count").fetchone()
        connection.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(SessionStoreError) as caught:
            store.append("s1", [Message("user", "x" * 100_000)], expected_version=1)
        assert f"SQLiteStore({str(path)!r}): append failed because the disk holding the file " in (
            str(caught.value)
        )
        assert "free space on that disk, or move the file to a larger one" in str(caught.value)
        stored = SQLiteStore(path).load("s1")
        assert (1, (Message("user", "kept"),)) == (stored.version, stored.components)
        store.close()


class TestRedisStore:
    def test_keys_live_under_the_prefix(self, redis_server: RedisServer) -> None:
        """Each session's keys start with the prefix and share one hash tag."""
        client = redis.Redis.from_url(redis_server.url)
        with RedisStore(redis_server.url, prefix="keys-test:") as store:
            store.append("s:1", [Message("user", "a")], expected_version=0)
            store.set_meta("s:1", "k", "v")
        base = b"keys-test:{s:1}:"
        assert {base + b"version", base + b"log", base + b"meta", base + b"writes"} == set(
            client.keys("keys-test:*")
        )
        client.close()

    def test_a_client_with_decoded_responses_works(self, redis_server: RedisServer) -> None:
        """A caller's own client (decode_responses=True) is used as is and left open."""
        client = redis.Redis.from_url(redis_server.url, decode_responses=True)
        store = RedisStore(client=client, prefix="decoded:")
        store.append("s1", every_kind(), expected_version=0)
        store.set_meta("s1", "k", "v")
        stored = store.load("s1")
        assert (every_kind(), {"k": "v"}) == (list(stored.components), dict(stored.meta))
        store.close()
        assert client.ping()
        client.close()

    def test_the_script_is_loaded_again_after_a_flush(self, redis_server: RedisServer) -> None:
        """When the server forgets the scripts (SCRIPT FLUSH, restart), writes still work."""
        with RedisStore(redis_server.url, prefix="flush:") as store:
            store.append("s1", [Message("user", "a")], expected_version=0)
            redis.Redis.from_url(redis_server.url).script_flush()
            assert 2 == store.append("s1", [Message("user", "b")], expected_version=1)

    def test_an_unreachable_server_is_a_store_error(self) -> None:
        """No server at the URL: SessionStoreError naming the URL, caused by redis-py's error."""
        url = f"redis://127.0.0.1:{unused_port()}/0"
        store = RedisStore(url)
        with pytest.raises(
            SessionStoreError, match=re.escape(f"RedisStore({url}): load")
        ) as caught:
            store.load("s1")
        assert isinstance(caught.value.__cause__, redis.ConnectionError)
        store.close()

    def test_a_damaged_version_key_is_a_store_error(self, redis_server: RedisServer) -> None:
        """A version key that is not an integer is reported, and nothing is appended."""
        client = redis.Redis.from_url(redis_server.url)
        client.set("damaged:{s1}:version", "not a number")
        with (
            RedisStore(redis_server.url, prefix="damaged:") as store,
            pytest.raises(SessionStoreError, match="does not hold an integer"),
        ):
            store.append("s1", [Message("user", "a")], expected_version=0)
        assert 0 == client.llen("damaged:{s1}:log")
        client.close()

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"url": "http://example.com"}, "url='http://example.com' is not a Redis URL"),
            ({"url": 6379}, "url=6379 must be a str"),
            ({"prefix": None}, "prefix=None must be a str"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict[str, Any], message: str) -> None:
        """The constructor refuses a URL redis-py cannot read and a prefix that is not a str."""
        with pytest.raises(InvalidArgumentError, match=message):
            RedisStore(**kwargs)

    def test_missing_redis_package_says_how_to_install(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without redis-py, the constructor raises ImportError naming the extra to install."""
        monkeypatch.setitem(sys.modules, "redis", None)
        with pytest.raises(ImportError, match=r"pip install '\.\[redis\]'"):
            RedisStore()


class TestMemoryStore:
    def test_it_keeps_what_a_durable_store_keeps(self) -> None:
        """A checkpoint comes back with its span but without the in-memory replaced handle."""
        replaced = ChatContext().add(Message("user", "old"))
        checkpoint = Checkpoint("old stuff", replaced=replaced, span=[Message("user", "old")])
        store = MemoryStore()
        store.append("s1", [checkpoint], expected_version=0)
        (loaded,) = store.load("s1").components
        assert isinstance(loaded, Checkpoint)
        assert (None, (Message("user", "old"),)) == (loaded.replaced, loaded.span)

    def test_is_a_session_store(self) -> None:
        """Every store satisfies the SessionStore protocol at run time."""
        assert isinstance(MemoryStore(), SessionStore)


class TestRedisErrorsNameTheServer:
    def test_a_password_in_the_url_is_never_shown(self) -> None:
        """Regression: the URL, password included, was put in every error message and repr."""
        url = f"redis://app:hunter2@127.0.0.1:{unused_port()}/0"
        store = RedisStore(url)
        with pytest.raises(SessionStoreError) as caught:
            store.load("s1")
        shown = f"redis://app:***@127.0.0.1:{url.rsplit(':', 1)[1]}"
        assert f"RedisStore({shown}): load" in str(caught.value)
        assert "hunter2" not in str(caught.value) + repr(store)
        store.close()

    def test_a_callers_client_is_named_by_its_address(self, redis_server: RedisServer) -> None:
        """Regression: a passed client was named by its repr, a screenful of pool options."""
        client = redis.Redis(port=redis_server.port, password=None)
        store = RedisStore(client=client)
        assert f"<RedisStore redis://localhost:{redis_server.port}/0 prefix='mellea-ctx:'>" == repr(
            store
        )
        client.close()


class TestRedisLostReplies:
    """A write the server applied but whose reply was lost, sent again by redis-py's retry."""

    def test_a_write_sent_again_is_recognised_not_a_conflict(
        self, redis_server: RedisServer
    ) -> None:
        """Regression: the second copy used to raise SessionConflictError for its own write."""
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        with ReplyDropper(redis_server.port) as proxy:
            client = redis.Redis(port=proxy.port, retry=Retry(NoBackoff(), 3))
            store = RedisStore(client=client, prefix=f"lost-{uuid.uuid4().hex}:")
            store.append("s1", [Message("user", "a")], expected_version=0)
            proxy.drop_next_write()
            assert 2 == store.append("s1", [Message("user", "b")], expected_version=1)
            assert 1 == proxy.dropped
            proxy.drop_next_write()
            assert 3 == store.replace("s1", [Message("user", "c")], expected_version=2)
            assert 2 == proxy.dropped
            stored = store.load("s1")
            assert (3, (Message("user", "c"),)) == (stored.version, stored.components)
            # A stale writer is still refused: the ids are per write, not per client.
            with pytest.raises(SessionConflictError):
                store.append("s1", [Message("user", "d")], expected_version=2)
            client.close()

    def test_without_retries_the_lost_reply_is_a_store_error_that_says_so(
        self, redis_server: RedisServer
    ) -> None:
        """With retries off, the caller gets SessionStoreError saying the write may be stored."""
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        with ReplyDropper(redis_server.port) as proxy:
            client = redis.Redis(port=proxy.port, retry=Retry(NoBackoff(), 0))
            store = RedisStore(client=client, prefix=f"lost-{uuid.uuid4().hex}:")
            store.append("s1", [Message("user", "a")], expected_version=0)
            proxy.drop_next_write()
            with pytest.raises(SessionStoreError, match=r"it may be stored.*look for this turn"):
                store.append("s1", [Message("user", "b")], expected_version=1)
            assert 2 == store.load("s1").version  # it was: the reload shows it
            client.close()
