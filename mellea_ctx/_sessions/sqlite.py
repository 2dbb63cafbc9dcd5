"""``SQLiteStore``: sessions in one SQLite file, the durable default.

Layout: one row per session (``version``, ``length``), one row per stored
component (its lossless JSON record, keyed by session and position), one row
per metadata key, and one row per checkpoint of the session's chain, stored
once and referred to by digest (:mod:`.chains`). An append inserts only the
new rows, and a replace after a compaction only the new checkpoint's, so a
write costs the same whatever the length of the session or the depth of its
chain.

Every write is one ``BEGIN IMMEDIATE`` transaction: it takes the file's
write lock first, then reads the version, checks it, writes, and commits. A
process killed anywhere in between leaves no trace of the write: SQLite
rolls an uncommitted transaction back when the file is next opened. The file
is in WAL mode, so readers never wait for a writer, with ``synchronous=FULL``,
so a committed turn survives a power cut, not only a crash.

Connections are per thread (and per process: a connection inherited through
``fork`` is never used), so any number of threads and processes on one
machine can share the file. WAL needs shared memory between those processes,
so the file must be on a local disk, not a network share.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Final

from .._core.checks import require_number
from .._core.components import Component
from .._core.exceptions import InvalidArgumentError, SessionConflictError, SessionStoreError
from .._core.operations import run, single
from .chains import Chains, Encoded, MissingEntries, write_chains
from .store import StoredSession, Write, check_meta, check_session_id

#: The layout this module reads and writes, kept in the file's ``user_version``. Version 2
#: added the ``checkpoints`` table (each checkpoint of a chain stored once, :mod:`.chains`);
#: a version 1 file gets it when first opened, and its records read as before.
SCHEMA_VERSION: Final = 2

_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS sessions (
        session_id TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        length INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS components (
        session_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (session_id, position)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS meta (
        session_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (session_id, key)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        session_id TEXT NOT NULL,
        digest TEXT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (session_id, digest)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS leases (
        session_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires REAL NOT NULL
    ) WITHOUT ROWID""",
)
#: SQLite's result code for a full disk (``sqlite3.SQLITE_FULL``, named only from Python 3.11).
_SQLITE_FULL: Final = 13
#: SQLite's primary result codes for a damaged file (SQLITE_CORRUPT) and a file that is not
#: a database at all (SQLITE_NOTADB).
_SQLITE_DAMAGED: Final = frozenset({11, 26})

_SAVE_HEAD: Final = (
    "INSERT INTO sessions (session_id, version, length) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, length = excluded.length"
)


# Connections a forked child inherited; kept referenced so they are never closed there.
_INHERITED: list[_Handle] = []


class _Handle:
    """One thread's connection; weakly referenced, so it closes when its thread ends."""

    __slots__ = ("__weakref__", "connection", "pid")

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.pid = os.getpid()


class SQLiteStore:
    """A :class:`~mellea_ctx.SessionStore` in one SQLite file: durable, for one machine.

    Safe to share across threads and processes: each write is one atomic
    transaction with the version check inside it, and a process killed in
    the middle of a write leaves the file as it was before that write.

    Args:
        path: The database file; created, with its tables, when missing. Use
            a file of its own (the store keeps its layout version in the
            file's ``user_version``).
        timeout: Seconds a write waits for another writer's lock before
            raising :class:`~mellea_ctx.SessionStoreError`.

    Raises:
        InvalidArgumentError: For ``":memory:"`` or an empty path (each
            connection would see a database of its own: use
            :class:`~mellea_ctx.MemoryStore`), or a ``timeout`` that is not
            a number > 0.
        SessionStoreError: When the file cannot be opened or holds a layout
            from another version of mellea-ctx.

    Examples:
        >>> import tempfile, os
        >>> from mellea_ctx import Message
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with SQLiteStore(os.path.join(tmp, "sessions.db")) as store:
        ...         store.append("s1", [Message("user", "hi")], expected_version=0)
        ...         store.load("s1").version
        1
        1
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        if not isinstance(path, (str, os.PathLike)):
            msg = f"SQLiteStore: path={path!r} must be a str or a path; pass the database file"
            raise InvalidArgumentError(msg)
        name = os.fspath(path)
        if name in ("", ":memory:") or name.startswith("file::memory:"):
            msg = (
                f"SQLiteStore: path={name!r} would give each connection a database of its own; "
                "pass a file path, or use MemoryStore() for sessions that live in memory"
            )
            raise InvalidArgumentError(msg)
        wait = "pass how long a write may wait for another writer, e.g. 5.0"
        require_number(
            "SQLiteStore", "timeout", timeout, minimum=0, above=True, unit="seconds", fix=wait
        )
        self._path = name
        self._timeout = float(timeout)
        self._local = threading.local()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._handles_lock = threading.Lock()
        self._closed = False
        self._chains = Chains()
        with self._read("open the file") as connection:
            (layout,) = connection.execute("PRAGMA user_version").fetchone()
        if layout in (0, 1):  # new or older: create the tables, unless another process just did
            with self._write("set up the file") as connection:
                self._set_up(connection)
        elif layout != SCHEMA_VERSION:
            raise self._layout_error(layout)

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    # -- the store protocol -------------------------------------------------------

    def load(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata, from one read snapshot.

        Raises:
            InvalidArgumentError: For a bad session id.
            SessionStoreError: When the file cannot be read or the session's
                rows do not add up.
            InvalidComponentError: When a stored record is damaged.
        """
        check_session_id("SQLiteStore.load", session_id)
        with self._read("load") as connection:
            version, length = self._head(connection, session_id)
            records = connection.execute(
                "SELECT record FROM components WHERE session_id = ? ORDER BY position",
                (session_id,),
            ).fetchall()
            meta = connection.execute(
                "SELECT key, value FROM meta WHERE session_id = ?", (session_id,)
            ).fetchall()
            entries = connection.execute(
                "SELECT digest, record FROM checkpoints WHERE session_id = ?", (session_id,)
            ).fetchall()
        if len(records) != length:
            msg = (
                f"SQLiteStore({self._path!r}): session {session_id!r} should hold {length} "
                f"components but holds {len(records)}; the file was changed outside "
                "mellea-ctx: restore it from a backup or clear the session"
            )
            raise SessionStoreError(msg)
        components = self._chains.decode((record for (record,) in records), dict(entries))
        return StoredSession(version, components, dict(meta))

    def append(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` if the session is at ``expected_version``; return the new version.

        One transaction: the whole batch is stored, or none of it.

        Raises:
            InvalidArgumentError: For a bad session id or version, or no components.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
            SessionStoreError: When the file stays locked past ``timeout`` or
                cannot be written.
        """
        write = Write.checked("SQLiteStore", "append", session_id, components, expected_version)
        return self._write_dialogue(write)

    def replace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the dialogue if the session is at ``expected_version``; return the new version.

        One transaction: readers see the old dialogue or the new one, never a mix.

        Raises:
            InvalidArgumentError: For a bad session id or version.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
            SessionStoreError: When the file stays locked past ``timeout`` or
                cannot be written.
        """
        write = Write.checked("SQLiteStore", "replace", session_id, components, expected_version)
        return self._write_dialogue(write)

    def set_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key, or delete it when ``value`` is ``None``.

        Raises:
            InvalidArgumentError: For a bad session id, key or value.
            SessionStoreError: When the file cannot be written.
        """
        owner = "SQLiteStore.set_meta"
        check_session_id(owner, session_id)
        check_meta(owner, key, value)
        with self._write("set_meta") as connection:
            if value is None:
                connection.execute(
                    "DELETE FROM meta WHERE session_id = ? AND key = ?", (session_id, key)
                )
            else:
                connection.execute(
                    "INSERT INTO meta (session_id, key, value) VALUES (?, ?, ?) "
                    "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value",
                    (session_id, key, value),
                )

    def clear(self, session_id: str) -> None:
        """Forget the session: dialogue, version and metadata, in one transaction.

        Raises:
            InvalidArgumentError: For a bad session id.
            SessionStoreError: When the file cannot be written.
        """
        check_session_id("SQLiteStore.clear", session_id)
        with self._write("clear") as connection:
            for table in ("components", "checkpoints", "meta", "sessions", "leases"):
                connection.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))

    # -- the compaction lease (mellea_ctx/_sessions/lease.py) ------------------------

    def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's compaction lease for ``ttl`` seconds, if it is free or expired.

        One write transaction; the expiry is on this machine's clock, which
        every process sharing the file reads.

        Raises:
            SessionStoreError: When the file cannot be written.
        """
        check_session_id("SQLiteStore.acquire_lease", session_id)
        now = time.time()
        with self._write("acquire_lease") as connection:
            taken = connection.execute(
                "INSERT INTO leases (session_id, holder, expires) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, "
                "expires = excluded.expires WHERE leases.expires <= ? OR leases.holder = ? "
                "RETURNING holder",
                (session_id, holder, now + ttl, now, holder),
            ).fetchall()
        return bool(taken)

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it.

        Raises:
            SessionStoreError: When the file cannot be written.
        """
        check_session_id("SQLiteStore.release_lease", session_id)
        with self._write("release_lease") as connection:
            connection.execute(
                "DELETE FROM leases WHERE session_id = ? AND holder = ?", (session_id, holder)
            )

    # -- lifetime -------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection this store opened; later calls raise ``SessionStoreError``."""
        self._closed = True
        with self._handles_lock:
            handles = list(self._handles)
            self._handles.clear()
        for handle in handles:
            if handle.pid == os.getpid():
                handle.connection.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SQLiteStore path={self._path!r}>"

    # -- internals ------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """Return this thread's connection, opening it on first use in this thread and process."""
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is not None and handle.pid == os.getpid() and not self._closed:
            return handle.connection
        if handle is not None and handle.pid != os.getpid():
            # Inherited through fork: SQLite says never to use or close it here, so keep it.
            _INHERITED.append(handle)
        if self._closed:
            msg = f"SQLiteStore({self._path!r}) is closed; open a new SQLiteStore on the file"
            raise SessionStoreError(msg)
        connection = sqlite3.connect(
            self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._use_wal(connection)
            connection.execute("PRAGMA synchronous = FULL")
        except BaseException:
            connection.close()
            raise
        handle = _Handle(connection)
        self._local.handle = handle
        with self._handles_lock:
            self._handles.add(handle)
        return connection

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Put the file in WAL mode (it stays so), waiting up to ``timeout`` for the lock.

        Switching needs the file to itself, and SQLite answers "locked" at once,
        without its busy wait, while another connection is switching it too: so
        several processes opening a new file together retry here.
        """
        if connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            return
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.005)

    def _set_up(self, connection: sqlite3.Connection) -> None:
        """Create the tables in a new file; run inside a write transaction."""
        (found,) = connection.execute("PRAGMA user_version").fetchone()
        if found in (0, 1):  # new, or from before the checkpoints table: add what is missing
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif found != SCHEMA_VERSION:
            raise self._layout_error(found)

    def _layout_error(self, found: int) -> SessionStoreError:
        msg = (
            f"SQLiteStore({self._path!r}): the file has layout version {found}, and this "
            f"mellea-ctx reads version {SCHEMA_VERSION}; open it with the mellea-ctx that "
            "wrote it, or use another file"
        )
        return SessionStoreError(msg)

    def _write_dialogue(self, write: Write) -> int:
        """An ``append`` or ``replace``: one transaction, again in full if entries were missing."""
        owner, session_id, items = write.owner, write.session_id, write.items
        operation, append, expected_version = write.operation, write.append, write.expected_version

        def transaction(encoded: Encoded) -> int:
            records = encoded.records
            with self._write(operation) as connection:
                version, length = self._head(connection, session_id)
                if version != expected_version:
                    raise SessionConflictError(session_id, expected_version, version)
                self._save_entries(connection, session_id, encoded)
                if append:
                    start = length
                else:
                    start = 0
                    connection.execute("DELETE FROM components WHERE session_id = ?", (session_id,))
                connection.executemany(
                    "INSERT INTO components (session_id, position, record) VALUES (?, ?, ?)",
                    [(session_id, start + i, record) for i, record in enumerate(records)],
                )
                connection.execute(_SAVE_HEAD, (session_id, version + 1, start + len(records)))
            return version + 1

        version: int = run(write_chains(self._chains, owner, items, single), transaction)
        return version

    @staticmethod
    def _save_entries(connection: sqlite3.Connection, session_id: str, encoded: Encoded) -> None:
        """Store the write's new checkpoint entries, once it is sure the session holds the
        ones it relies on (else :class:`MissingEntries`, before anything is written)."""
        if encoded.needed:
            marks = ", ".join("?" * len(encoded.needed))
            (held,) = connection.execute(
                f"SELECT count(*) FROM checkpoints WHERE session_id = ? AND digest IN ({marks})",
                (session_id, *encoded.needed),
            ).fetchone()
            if held != len(encoded.needed):
                raise MissingEntries
        connection.executemany(
            "INSERT OR IGNORE INTO checkpoints (session_id, digest, record) VALUES (?, ?, ?)",
            [(session_id, digest, text) for digest, text in encoded.entries],
        )

    @staticmethod
    def _head(connection: sqlite3.Connection, session_id: str) -> tuple[int, int]:
        row = connection.execute(
            "SELECT version, length FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return (0, 0) if row is None else (row[0], row[1])

    @contextmanager
    def _write(self, operation: str) -> Iterator[sqlite3.Connection]:
        with self._transaction(operation, "BEGIN IMMEDIATE") as connection:
            yield connection

    @contextmanager
    def _read(self, operation: str) -> Iterator[sqlite3.Connection]:
        with self._transaction(operation, "BEGIN") as connection:
            yield connection

    @contextmanager
    def _transaction(self, operation: str, begin: str) -> Iterator[sqlite3.Connection]:
        """Run the body in one transaction; roll back on any exception, map sqlite3's errors."""
        try:
            connection = self._connection()
            connection.execute(begin)
        except sqlite3.Error as exc:
            raise self._error(operation, exc) from exc
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException as exc:
            _rollback(connection)
            if isinstance(exc, sqlite3.Error):
                raise self._error(operation, exc) from exc
            raise

    def _error(self, operation: str, exc: sqlite3.Error) -> SessionStoreError:
        code = getattr(exc, "sqlite_errorcode", None) or 0
        if code == _SQLITE_FULL or "disk is full" in str(exc):
            msg = (
                f"SQLiteStore({self._path!r}): {operation} failed because the disk holding the "
                f"file is full ({exc}), and nothing was written; every committed turn is intact: "
                "free space on that disk, or move the file to a larger one, then retry"
            )
        elif code & 0xFF in _SQLITE_DAMAGED or "not a database" in str(exc):
            msg = (
                f"SQLiteStore({self._path!r}): {operation} failed because the file is not a "
                f"SQLite database or is damaged ({exc}), and nothing was written; check that "
                "the path names your session file, or move this file aside (SQLite's "
                "'.recover' command can often salvage a damaged one) and start a new one"
            )
        elif isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            msg = (
                f"SQLiteStore({self._path!r}): {operation} could not get the file's lock "
                f"within timeout={self._timeout!r}s ({exc}), and nothing was written; "
                "another writer held it: retry, or pass a longer timeout"
            )
        else:
            msg = (
                f"SQLiteStore({self._path!r}): {operation} failed ({exc}), and nothing was "
                "written; check that the file's directory exists and is writable"
            )
        return SessionStoreError(msg)


def _rollback(connection: sqlite3.Connection) -> None:
    try:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # the transaction is gone with the connection; SQLite discards it
