"""``PostgresStore`` and ``AsyncPostgresStore``: sessions in PostgreSQL, shared by many machines.

Layout, per table prefix ``p``: ``p_sessions`` (one row per session: version,
length), ``p_components`` (one row per stored component: its lossless JSON
record, keyed by session and position), ``p_meta`` (one row per metadata key)
and ``p_checkpoints`` (each checkpoint of a session's chain, stored once by
digest, :mod:`.chains`), the layout of :class:`~mellea_ctx.SQLiteStore`. The tables are made on
first use, under an advisory lock, so many workers starting together make
them once. Two prefixes on one database never see each other's sessions.

Every write is one transaction whose first statement moves the session's
version only if it is still the expected one (``UPDATE ... WHERE version =
%s``, or for a new session ``INSERT ... ON CONFLICT DO NOTHING``): the row
stays locked until the commit, and a writer that loaded the same snapshot
finds the version moved and writes nothing. A worker killed before its
``COMMIT`` reached the server leaves no trace; the server rolls the
transaction back when the connection drops. ``load`` is one statement, so it
reads one snapshot. Durability is the server's (``synchronous_commit = on``,
its default: a commit is acknowledged once its WAL is flushed).

The sync and the async store share every check, statement and decision: each
transaction is one *plan* (a generator that yields the statements to run and
receives their rows), and each call one *operation* (:mod:`~mellea_ctx._core.operations`) that
yields its plans (a write's second, full attempt is a second transaction).
They differ only in the drivers that run them, with or without ``await``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import attrs

from .._core.checks import require_int, require_number
from .._core.exceptions import InvalidArgumentError, SessionConflictError, SessionStoreError
from .._core.operations import Operation, arun, run
from .chains import Chains, Encoded, MissingEntries, write_chains
from .faces import AsyncFace, OperationStore, SyncFace
from .store import StoredSession, Write, check_meta, check_session_id

T = TypeVar("T")

_PREFIX: Final = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_DISK_FULL: Final = "53100"
_OUT_OF_RESOURCES: Final = ("53000", "53200", "53300")


@attrs.frozen
class Statement:
    """One statement of a plan and its parameters."""

    sql: str
    params: Sequence[Any] | Mapping[str, Any] = ()


#: An operation: yields the statements to run in one transaction, is sent each one's rows.
Plan = Generator[Statement, list[tuple[Any, ...]], T]


def _import_psycopg(owner: str) -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        msg = (
            f"{owner} needs psycopg 3 and psycopg-pool, which are not installed; "
            "install them with: pip install '.[postgres]' in the mellea-ctx clone"
        )
        raise ImportError(msg) from exc
    return psycopg, psycopg_pool


def _shown_dsn(dsn: str) -> str:
    """``dsn`` without its password, to name the server in messages and reprs."""
    shown = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)(\S+)", r"\1***", shown)


class _Tables:
    """The statements of one table prefix: the one place that writes SQL."""

    def __init__(self, prefix: str) -> None:
        sessions, components, meta = f"{prefix}_sessions", f"{prefix}_components", f"{prefix}_meta"
        checkpoints = f"{prefix}_checkpoints"
        leases = f"{prefix}_leases"
        self.lock_key = f"mellea_ctx tables {prefix}"
        self.schema = (
            f"CREATE TABLE IF NOT EXISTS {sessions} (session_id text PRIMARY KEY, "
            "version bigint NOT NULL, length bigint NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {components} (session_id text NOT NULL, "
            "position bigint NOT NULL, record text NOT NULL, PRIMARY KEY (session_id, position))",
            f"CREATE TABLE IF NOT EXISTS {meta} (session_id text NOT NULL, key text NOT NULL, "
            "value text NOT NULL, PRIMARY KEY (session_id, key))",
            f"CREATE TABLE IF NOT EXISTS {checkpoints} (session_id text NOT NULL, "
            "digest text NOT NULL, record text NOT NULL, PRIMARY KEY (session_id, digest))",
            f"CREATE TABLE IF NOT EXISTS {leases} (session_id text PRIMARY KEY, "
            "holder text NOT NULL, expires timestamptz NOT NULL)",
        )
        # A lease is taken when free, expired, or already this holder's; the server's clock.
        self.acquire_lease = (
            f"INSERT INTO {leases} AS l (session_id, holder, expires) "
            "VALUES (%s, %s, clock_timestamp() + make_interval(secs => %s)) "
            "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, "
            "expires = excluded.expires "
            "WHERE l.expires <= clock_timestamp() OR l.holder = excluded.holder RETURNING 1"
        )
        self.release_lease = f"DELETE FROM {leases} WHERE session_id = %s AND holder = %s"
        self.load = (
            f"SELECT h.version, h.length, "
            f"(SELECT array_agg(record ORDER BY position) FROM {components} "
            "WHERE session_id = %(id)s), "
            f"(SELECT array_agg(key ORDER BY key) FROM {meta} WHERE session_id = %(id)s), "
            f"(SELECT array_agg(value ORDER BY key) FROM {meta} WHERE session_id = %(id)s), "
            f"(SELECT array_agg(digest ORDER BY digest) FROM {checkpoints} "
            "WHERE session_id = %(id)s), "
            f"(SELECT array_agg(record ORDER BY digest) FROM {checkpoints} "
            "WHERE session_id = %(id)s) "
            f"FROM (SELECT 1) AS one LEFT JOIN {sessions} AS h ON h.session_id = %(id)s"
        )
        self.create = (
            f"INSERT INTO {sessions} (session_id, version, length) VALUES (%s, 1, %s) "
            "ON CONFLICT (session_id) DO NOTHING RETURNING 0"
        )
        self.bump_append = (
            f"UPDATE {sessions} SET version = version + 1, length = length + %s "
            "WHERE session_id = %s AND version = %s RETURNING length - %s"
        )
        self.bump_replace = (
            f"UPDATE {sessions} SET version = version + 1, length = %s "
            "WHERE session_id = %s AND version = %s RETURNING 0"
        )
        self.version = f"SELECT version FROM {sessions} WHERE session_id = %s"
        # A replace rewrites the rows in place (HOT updates: no new index entries, so a session
        # replaced thousands of times does not bloat the index) and drops those past the end.
        self.drop_components = f"DELETE FROM {components} WHERE session_id = %s AND position >= %s"
        self.rewrite = (
            f"INSERT INTO {components} AS c (session_id, position, record) "
            "SELECT %s, t.o - 1, t.r FROM unnest(%s::text[]) WITH ORDINALITY AS t(r, o) "
            "ON CONFLICT (session_id, position) DO UPDATE SET record = excluded.record"
        )
        self.insert = (
            f"INSERT INTO {components} (session_id, position, record) "
            "SELECT %s, %s + t.o - 1, t.r FROM unnest(%s::text[]) WITH ORDINALITY AS t(r, o)"
        )
        self.held = f"SELECT count(*) FROM {checkpoints} WHERE session_id = %s AND digest = ANY(%s)"
        self.insert_entries = (
            f"INSERT INTO {checkpoints} (session_id, digest, record) "
            "SELECT %s, t.d, t.r FROM unnest(%s::text[], %s::text[]) AS t(d, r) "
            "ON CONFLICT (session_id, digest) DO NOTHING"
        )
        self.set_meta = (
            f"INSERT INTO {meta} (session_id, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value"
        )
        self.delete_meta = f"DELETE FROM {meta} WHERE session_id = %s AND key = %s"
        self.clear = tuple(
            f"DELETE FROM {table} WHERE session_id = %s"
            for table in (components, checkpoints, meta, sessions, leases)
        )


# -- the plans: every check and statement, shared by the sync and the async store -------


def _set_up_plan(tables: _Tables) -> Plan[None]:
    yield Statement("SELECT pg_advisory_xact_lock(hashtext(%s))", (tables.lock_key,))
    for statement in tables.schema:
        yield Statement(statement)


def _load_plan(where: str, tables: _Tables, chains: Chains, session_id: str) -> Plan[StoredSession]:
    ((version, length, records, keys, values, digests, texts),) = yield Statement(
        tables.load, {"id": session_id}
    )
    records = records or []
    if version is None:
        version = length = 0
    if len(records) != length:
        msg = (
            f"{where}: session {session_id!r} should hold {length} components but holds "
            f"{len(records)}; its rows were changed outside mellea-ctx: restore them from a "
            "backup or clear the session"
        )
        raise SessionStoreError(msg)
    meta = dict(zip(keys or (), values or (), strict=True))
    entries = dict(zip(digests or (), texts or (), strict=True))
    return StoredSession(version, chains.decode(records, entries), meta)


def _write_plan(
    tables: _Tables, session_id: str, encoded: Encoded, expected_version: int, *, append: bool
) -> Plan[int]:
    records = encoded.records
    count = len(records)
    if expected_version == 0:
        done = yield Statement(tables.create, (session_id, count))
    elif append:
        done = yield Statement(tables.bump_append, (count, session_id, expected_version, count))
    else:
        done = yield Statement(tables.bump_replace, (count, session_id, expected_version))
    if not done:
        found = yield Statement(tables.version, (session_id,))
        raise SessionConflictError(session_id, expected_version, found[0][0] if found else 0)
    ((start,),) = done
    if encoded.needed:
        ((held,),) = yield Statement(tables.held, (session_id, encoded.needed))
        if held != len(encoded.needed):
            raise MissingEntries
    if encoded.entries:
        digests, texts = zip(*encoded.entries, strict=True)
        yield Statement(tables.insert_entries, (session_id, list(digests), list(texts)))
    if append or not expected_version:
        if records:
            yield Statement(tables.insert, (session_id, start, records))
    else:
        if records:
            yield Statement(tables.rewrite, (session_id, records))
        yield Statement(tables.drop_components, (session_id, count))
    return expected_version + 1


def _meta_plan(tables: _Tables, session_id: str, key: str, value: str | None) -> Plan[None]:
    if value is None:
        yield Statement(tables.delete_meta, (session_id, key))
    else:
        yield Statement(tables.set_meta, (session_id, key, value))


def _acquire_plan(tables: _Tables, session_id: str, holder: str, ttl: float) -> Plan[bool]:
    taken = yield Statement(tables.acquire_lease, (session_id, holder, float(ttl)))
    return bool(taken)


def _release_plan(tables: _Tables, session_id: str, holder: str) -> Plan[None]:
    yield Statement(tables.release_lease, (session_id, holder))


def _clear_plan(tables: _Tables, session_id: str) -> Plan[None]:
    for statement in tables.clear:
        yield Statement(statement, (session_id,))


class _Common(OperationStore):
    """What both stores hold and check: arguments, tables, the words of every error."""

    _kind = "PostgresStore"

    def __init__(
        self,
        dsn: str,
        *,
        table_prefix: str = "mellea_ctx",
        timeout: float = 5.0,
        max_connections: int = 10,
    ) -> None:
        owner = self._kind
        self._psycopg, self._pool_module = _import_psycopg(owner)
        if not isinstance(dsn, str) or not dsn:
            msg = (
                f"{owner}: dsn={dsn!r} must be a non-empty str such as "
                "'postgresql://user:password@host:5432/dbname'"
            )
            raise InvalidArgumentError(msg)
        if not isinstance(table_prefix, str) or not _PREFIX.fullmatch(table_prefix):
            msg = (
                f"{owner}: table_prefix={table_prefix!r} must be 1 to 40 lowercase letters, "
                "digits or underscores, starting with a letter or underscore; pass e.g. 'myapp'"
            )
            raise InvalidArgumentError(msg)
        wait = "pass how long a call may wait for a connection to the server, e.g. 5.0"
        require_number(owner, "timeout", timeout, minimum=0, above=True, unit="seconds", fix=wait)
        many = "pass how many connections this store may hold open at once, e.g. 10"
        require_int(owner, "max_connections", max_connections, minimum=1, fix=many)
        try:
            self._psycopg.conninfo.conninfo_to_dict(dsn)
        except self._psycopg.ProgrammingError as exc:
            msg = (
                f"{owner}: dsn={_shown_dsn(dsn)!r} is not a PostgreSQL connection string "
                f"({exc}); pass 'postgresql://user:password@host:5432/dbname' or "
                "'host=... dbname=...'"
            )
            raise InvalidArgumentError(msg) from exc
        self._dsn = dsn
        self._where = f"{owner}({_shown_dsn(dsn)!r}, table_prefix={table_prefix!r})"
        self._prefix = table_prefix
        self._tables = _Tables(table_prefix)
        self._timeout = float(timeout)
        self._max_connections = max_connections
        self._ready = False
        self._closed = False
        self._pid = os.getpid()
        self._chains = Chains()
        self._pool: Any = None

    @property
    def table_prefix(self) -> str:
        """The prefix of the tables this store reads and writes."""
        return self._prefix

    def _pool_options(self) -> dict[str, Any]:
        return {
            "min_size": 1,
            "max_size": self._max_connections,
            "timeout": self._timeout,
            "kwargs": {
                "autocommit": True,
                "connect_timeout": max(1, round(self._timeout)),
            },
            "open": False,
        }

    def _closed_error(self) -> SessionStoreError:
        msg = f"{self._where} is closed; open a new {self._kind} on the database"
        return SessionStoreError(msg)

    def _error(self, operation: str, session_id: str | None, exc: Exception) -> SessionStoreError:
        code = getattr(exc, "sqlstate", None) or ""
        on = f" on session {session_id!r}" if session_id is not None else ""
        failure = f"{type(exc).__name__}: {str(exc).strip()}"
        if code == _DISK_FULL:
            advice = (
                "the server's disk is full and nothing was written; every committed turn is "
                "intact: free space on the database server's disk, then retry"
            )
        elif code in _OUT_OF_RESOURCES:
            advice = (
                "the server is out of resources (connections or memory) and nothing was "
                "written: lower max_connections, raise the server's limits, then retry"
            )
        elif operation in ("append", "replace"):
            advice = (
                "the write was applied whole or not at all, but if the connection broke "
                "during its commit the caller cannot tell which: check that the server is up, "
                "then reload the session and look for this turn before writing it again"
            )
        else:
            advice = (
                "check that the server is up and reachable and the dsn is right, then "
                "reload the session before writing again"
            )
        msg = f"{self._where}: {operation}{on} failed ({failure}); {advice}"
        return SessionStoreError(msg)

    def __repr__(self) -> str:
        return f"<{self._kind} {_shown_dsn(self._dsn)} table_prefix={self._prefix!r}>"

    # -- the operations: each yields its transactions' plans, checked before any I/O --

    def _load(self, session_id: str) -> Operation[Plan[Any], StoredSession]:
        check_session_id(f"{self._kind}.load", session_id)
        stored: StoredSession = yield _load_plan(
            self._where, self._tables, self._chains, session_id
        )
        return stored

    def _write_dialogue(self, write: Write) -> Operation[Plan[Any], int]:
        """An ``append`` or ``replace``: one transaction, again in full if entries were missing."""
        owner, session_id, items = write.owner, write.session_id, write.items
        append, expected_version = write.append, write.expected_version

        def attempt(encoded: Encoded) -> Operation[Plan[Any], int]:
            plan = _write_plan(self._tables, session_id, encoded, expected_version, append=append)
            version: int = yield plan
            return version

        return (yield from write_chains(self._chains, owner, items, attempt))

    def _set_meta(self, session_id: str, key: str, value: str | None) -> Operation[Plan[Any], None]:
        owner = f"{self._kind}.set_meta"
        check_session_id(owner, session_id)
        check_meta(owner, key, value)
        yield _meta_plan(self._tables, session_id, key, value)

    def _clear(self, session_id: str) -> Operation[Plan[Any], None]:
        check_session_id(f"{self._kind}.clear", session_id)
        yield _clear_plan(self._tables, session_id)

    def _acquire_lease(
        self, session_id: str, holder: str, ttl: float
    ) -> Operation[Plan[Any], bool]:
        check_session_id(f"{self._kind}.acquire_lease", session_id)
        taken: bool = yield _acquire_plan(self._tables, session_id, holder, ttl)
        return taken

    def _release_lease(self, session_id: str, holder: str) -> Operation[Plan[Any], None]:
        check_session_id(f"{self._kind}.release_lease", session_id)
        yield _release_plan(self._tables, session_id, holder)


@contextmanager
def _mapping(common: _Common, operation: str, session_id: str | None) -> Iterator[None]:
    try:
        yield
    except common._psycopg.Error as exc:
        raise common._error(operation, session_id, exc) from exc


#: psycopg prepares a statement run five times; PostgreSQL may then keep a generic plan
#: made while a table was small (a sequential scan), which a session's checkpoints table
#: outgrows: plan each execution for the parameters it has, so lookups stay on the index.
_PLAN_PER_CALL: Final = "SET plan_cache_mode = force_custom_plan"


def _configure(connection: Any) -> None:
    connection.execute(_PLAN_PER_CALL)


async def _aconfigure(connection: Any) -> None:
    await connection.execute(_PLAN_PER_CALL)


def _rows(cursor: Any) -> list[tuple[Any, ...]]:
    return cursor.fetchall() if cursor.description is not None else []


class PostgresStore(SyncFace, _Common):
    """A :class:`~mellea_ctx.SessionStore` in PostgreSQL, shared by many workers on many machines.

    Point every worker at the same database and ``table_prefix``: each write
    moves the session's version only if it is the one the write was based on,
    inside one transaction, so two workers that loaded the same snapshot
    cannot both extend it. ``load`` is one statement, each other call one
    transaction, and the compaction lease a row that expires on the server's
    clock. Connections come from a pool (``psycopg_pool``), opened on first
    use, each checked before it is lent, so the store keeps working after the
    server restarts.

    Args:
        dsn: The server, as ``postgresql://user:password@host:5432/dbname`` or
            ``host=... dbname=...`` (libpq's forms).
        table_prefix: Put before each table's name (``mellea_ctx_sessions``, ...),
            so several applications or tests can share one database.
        timeout: Seconds a call may wait for a connection (while the server
            is unreachable, each call fails after this long).
        max_connections: The pool's size.

    Raises:
        ImportError: When psycopg 3 or psycopg-pool is not installed
            (``pip install '.[postgres]'`` in the clone).
        InvalidArgumentError: For a dsn libpq cannot read, a prefix that is
            not a plain identifier, or a bad timeout or pool size.

    Examples:
        >>> store = PostgresStore("postgresql://app@db.internal/app", table_prefix="myapp")
        >>> store.table_prefix  # nothing connects before the first call
        'myapp'
        >>> store.close()
    """

    # -- lifetime -------------------------------------------------------------------

    def close(self) -> None:
        """Close the pool's connections; later calls raise ``SessionStoreError``."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------

    def _connections(self) -> Any:
        if self._closed:
            raise self._closed_error()
        if self._pool is None or self._pid != os.getpid():
            # A pool inherited through fork shares its sockets with the parent: never use it.
            self._pid = os.getpid()
            pool_class = self._pool_module.ConnectionPool
            self._pool = pool_class(
                self._dsn,
                check=pool_class.check_connection,
                configure=_configure,
                **self._pool_options(),
            )
            self._pool.open(wait=False)
        return self._pool

    def _run(self, operation: str, session_id: str, steps: Operation[Plan[Any], T]) -> T:
        def execute(plan: Plan[Any]) -> Any:
            if not self._ready:
                self._execute(operation, session_id, _set_up_plan(self._tables))
                self._ready = True
            return self._execute(operation, session_id, plan)

        return run(steps, execute)

    def _execute(self, operation: str, session_id: str | None, plan: Plan[T]) -> T:
        with (
            _mapping(self, operation, session_id),
            self._connections().connection() as connection,
            connection.transaction(),
        ):
            cursor = connection.cursor()

            def execute(statement: Statement) -> list[tuple[Any, ...]]:
                cursor.execute(statement.sql, statement.params)
                return _rows(cursor)

            return run(plan, execute)


class AsyncPostgresStore(AsyncFace, _Common):
    """An :class:`~mellea_ctx.AsyncSessionStore` in PostgreSQL, on psycopg's async connections.

    It keeps sessions exactly as :class:`~mellea_ctx.PostgresStore` does (the
    same tables, statements and checks), so sync and async workers can share
    one database and prefix. Connections come from an
    ``psycopg_pool.AsyncConnectionPool`` opened on first use; a pool belongs
    to the event loop it was opened on, so use one store per event loop.

    Args:
        dsn: The server (see :class:`~mellea_ctx.PostgresStore`).
        table_prefix: Put before each table's name.
        timeout: Seconds a call may wait for a connection.
        max_connections: The pool's size.

    Raises:
        ImportError: When psycopg 3 or psycopg-pool is not installed.
        InvalidArgumentError: As :class:`~mellea_ctx.PostgresStore` does.

    Examples:
        >>> import asyncio
        >>> store = AsyncPostgresStore("postgresql://app@db.internal/app")  # lazily
        >>> asyncio.run(store.aclose())
    """

    _kind = "AsyncPostgresStore"

    async def aclose(self) -> None:
        """Close the pool's connections; later calls raise ``SessionStoreError``."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> AsyncPostgresStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _connections(self) -> Any:
        if self._closed:
            raise self._closed_error()
        if self._pool is None:
            pool_class = self._pool_module.AsyncConnectionPool
            self._pool = pool_class(
                self._dsn,
                check=pool_class.check_connection,
                configure=_aconfigure,
                **self._pool_options(),
            )
            await self._pool.open(wait=False)
        return self._pool

    async def _arun(self, operation: str, session_id: str, steps: Operation[Plan[Any], T]) -> T:
        async def execute(plan: Plan[Any]) -> Any:
            if not self._ready:
                await self._execute(operation, session_id, _set_up_plan(self._tables))
                self._ready = True
            return await self._execute(operation, session_id, plan)

        return await arun(steps, execute)

    async def _execute(self, operation: str, session_id: str | None, plan: Plan[T]) -> T:
        with _mapping(self, operation, session_id):
            pool = await self._connections()
            async with pool.connection() as connection, connection.transaction():
                cursor = connection.cursor()

                async def execute(statement: Statement) -> list[tuple[Any, ...]]:
                    await cursor.execute(statement.sql, statement.params)
                    return await cursor.fetchall() if cursor.description is not None else []

                return await arun(plan, execute)
