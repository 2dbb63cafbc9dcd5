"""``RedisStore``: sessions in Redis, shared by many workers on many machines.

Per session, five keys under the prefix: ``{id}:version`` (an integer),
``{id}:log`` (a list of lossless JSON records, oldest first), ``{id}:meta``
(a hash), ``{id}:writes`` (the ids of the last few writes, see below) and
``{id}:checkpoints`` (a hash: each checkpoint of the session's chain, stored
once by digest, :mod:`.chains`, so a replace writes only the new one). The
braces are a Redis Cluster hash tag, so one session's keys live in one slot
and a script may touch all of them.

``append`` and ``replace`` each run as one Lua script (``EVALSHA``, loaded
again by redis-py if the server forgot it): the version check and the write
happen inside the server with no other command in between, so they are atomic
for every client of that server, wherever it runs. A worker that dies before
its script reached the server leaves no trace of it; a command the server
received only in part is never run. ``load`` reads the keys in one
``MULTI``/``EXEC`` transaction, a consistent snapshot.

Each write carries a random id, and the script remembers the ids of the
session's last :data:`_REMEMBERED_WRITES` writes. redis-py sends a command
again after a broken connection (by default from redis-py 6 on, or with a
``Retry`` you configure), so a write the server
applied but whose reply was lost arrives twice: the second copy finds its own
id and answers the version the first one wrote, instead of a
:class:`~mellea_ctx.SessionConflictError` that would make the caller redo,
and so store twice, a turn that is already stored.

Durability is the server's. With ``appendonly yes`` and ``appendfsync
always``, Redis writes and syncs its append-only file before it replies, so
every acknowledged write survives a crash of the server or the machine (on a
full disk the server exits rather than acknowledge a write it could not
save). With ``appendfsync everysec`` (Redis's default once ``appendonly`` is
on), the file is synced once a second, and while a sync is running Redis
acknowledges writes it has not yet written to the file: a crash of the
machine, or of the server process itself when its disk is slow, can lose up
to about two seconds of acknowledged writes (what remains is an earlier
state, whole). A full disk makes it refuse writes (``MISCONF``) until space
is freed. With the append-only file off, writes last until the next RDB
snapshot, or, with persistence off, as long as the server process.

:class:`RedisCore` holds what this store and :class:`~mellea_ctx.AsyncRedisStore`
share: every check, key, script and decision, as *operations* that yield the
commands to send (:mod:`~mellea_ctx._core.operations`); each store only sends them, with or
without ``await``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

import attrs

from .._core.exceptions import InvalidArgumentError, SessionConflictError, SessionStoreError
from .._core.operations import Operation, run
from .chains import Chains, Encoded, MissingEntries, write_chains
from .faces import OperationStore, SyncFace
from .store import StoredSession, Write, check_meta, check_session_id

if TYPE_CHECKING:
    import redis

T = TypeVar("T")

#: How many write ids a session remembers, to recognise a write sent again.
_REMEMBERED_WRITES: Final = 16

# KEYS: version, log, writes, checkpoints. ARGV: expected version, this write's id, how many
# needed digests, how many new entries, then the needed digests, the entries as digest/text
# pairs, and the records. Returns {1, new version} when written (or when this very write was
# applied before and is being sent again), {0, current version} on a conflict, {2, current
# version} when the session lacks a needed entry (nothing written: send it again in full).
# Values are pushed in chunks: unpack() of thousands of values overflows Lua's stack.
_SCRIPT: Final = """
local raw = redis.call('GET', KEYS[1])
local current = 0
if raw then current = tonumber(raw) end
if current == nil then
  return redis.error_reply('session version key ' .. KEYS[1] .. ' does not hold an integer')
end
if current ~= tonumber(ARGV[1]) then
  local mine = ARGV[2] .. ' '
  for _, done in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
    if string.sub(done, 1, #mine) == mine then
      return {1, tonumber(string.sub(done, #mine + 1))}
    end
  end
  return {0, current}
end
local pairs_at = 5 + tonumber(ARGV[3])
for i = 5, pairs_at - 1 do
  if redis.call('HEXISTS', KEYS[4], ARGV[i]) == 0 then return {2, current} end
end
local records_at = pairs_at + 2 * tonumber(ARGV[4])
for i = pairs_at, records_at - 1, 1000 do
  redis.call('HSET', KEYS[4], unpack(ARGV, i, math.min(i + 999, records_at - 1)))
end
%s
for i = records_at, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
local version = redis.call('INCR', KEYS[1])
redis.call('LPUSH', KEYS[3], ARGV[2] .. ' ' .. version)
redis.call('LTRIM', KEYS[3], 0, %d)
return {1, version}
"""

APPEND_SCRIPT: Final = _SCRIPT % ("", _REMEMBERED_WRITES - 1)

# The same, but the log is emptied first; it may be left empty.
REPLACE_SCRIPT: Final = _SCRIPT % ("redis.call('DEL', KEYS[2])", _REMEMBERED_WRITES - 1)


# KEYS: the lease. ARGV: the holder. Deletes the lease only if that holder still holds it.
RELEASE_SCRIPT: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def lease_key(prefix: str, session_id: str) -> str:
    """The key of the session's compaction lease (``SET NX PX``: expires on the server)."""
    return f"{prefix}{{{session_id}}}:lease"


def session_keys(prefix: str, session_id: str) -> tuple[str, str, str, str, str]:
    """The keys of one session: version, log, meta, writes, checkpoints (one hash tag)."""
    base = f"{prefix}{{{session_id}}}"
    return (
        f"{base}:version",
        f"{base}:log",
        f"{base}:meta",
        f"{base}:writes",
        f"{base}:checkpoints",
    )


def import_redis(owner: str = "RedisStore") -> Any:
    try:
        import redis
    except ImportError as exc:
        msg = (
            f"{owner} needs the redis package (redis-py), which is not installed; "
            "install it with: pip install '.[redis]' in the mellea-ctx clone"
        )
        raise ImportError(msg) from exc
    return redis


def shown_url(url: str) -> str:
    """``url`` without its password, to name the server in messages and reprs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def shown_client(client: Any) -> str:
    """Where a caller's client connects (host, port, db; never its credentials)."""
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None) or {}
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    if "host" in kwargs:
        return f"redis://{kwargs['host']}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
    return f"a {type(client).__name__} client"


def _text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


@attrs.frozen
class Command:
    """One request of a Redis operation: a client method or one of the store's scripts.

    Attributes:
        name: The client's method (``"get"``, ``"hset"``, ...) or a script
            (``"append"``, ``"replace"``, ``"release"``).
        args: Its positional arguments.
        kwargs: Its keyword arguments (a script's ``keys`` and ``args``).
    """

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Transaction:
    """Commands sent in one ``MULTI``/``EXEC``; the reply is the list of their replies."""

    commands: tuple[Command, ...]


class RedisCore(OperationStore):
    """What :class:`RedisStore` and :class:`~mellea_ctx.AsyncRedisStore` share: all but the I/O.

    The arguments and their checks, the keys, the scripts, each operation
    (:mod:`~mellea_ctx._core.operations`: what it reads, writes and decides) and the words of
    every error; the two stores differ only in their client and in running
    each :class:`Command` with or without ``await``.
    """

    _kind = "RedisStore"

    def __init__(self, url: str, prefix: str, client: Any, module: Any) -> None:
        """Check the arguments and make the client; ``module`` is ``redis`` or ``redis.asyncio``."""
        kind = self._kind
        if not isinstance(prefix, str):
            msg = f"{kind}: prefix={prefix!r} must be a str; pass e.g. 'myapp:'"
            raise InvalidArgumentError(msg)
        if client is None:
            if not isinstance(url, str):
                msg = f"{kind}: url={url!r} must be a str such as 'redis://127.0.0.1:6379/0'"
                raise InvalidArgumentError(msg)
            try:
                client = module.Redis.from_url(url)
            except ValueError as exc:
                msg = (
                    f"{kind}: url={url!r} is not a Redis URL ({exc}); pass "
                    "'redis://host:port/db', 'rediss://...' for TLS, or 'unix:///path.sock'"
                )
                raise InvalidArgumentError(msg) from exc
            self._owns_client = True
            self._where = shown_url(url)
        else:
            self._owns_client = False
            self._where = shown_client(client)
        self._client: Any = client
        self._prefix = prefix
        self._redis_error: type[Exception] = module.RedisError
        self._chains = Chains()
        self._scripts = {
            "append": self._client.register_script(APPEND_SCRIPT),
            "replace": self._client.register_script(REPLACE_SCRIPT),
            "release": self._client.register_script(RELEASE_SCRIPT),
        }

    @property
    def prefix(self) -> str:
        """The prefix of every key this store writes."""
        return self._prefix

    def __repr__(self) -> str:
        return f"<{self._kind} {self._where} prefix={self._prefix!r}>"

    # -- the operations: every check, key and decision, for both stores --------------

    def _load(self, session_id: str) -> Operation[Transaction, StoredSession]:
        check_session_id(f"{self._kind}.load", session_id)
        version_key, log_key, meta_key, _, checkpoints_key = self._keys(session_id)
        raw_version, records, raw_meta, raw_entries = yield Transaction(
            (
                Command("get", (version_key,)),
                Command("lrange", (log_key, 0, -1)),
                Command("hgetall", (meta_key,)),
                Command("hgetall", (checkpoints_key,)),
            )
        )
        version = 0 if raw_version is None else int(raw_version)
        entries = {_text(digest): text for digest, text in raw_entries.items()}
        components = self._chains.decode(records, entries)
        meta = {_text(key): _text(value) for key, value in raw_meta.items()}
        return StoredSession(version, components, meta)

    def _write_dialogue(self, write: Write) -> Operation[Command, int]:
        """An ``append`` or ``replace``: one script, again in full if entries were missing."""
        owner, session_id, items = write.owner, write.session_id, write.items
        operation, expected_version = write.operation, write.expected_version
        version_key, log_key, _, writes_key, checkpoints_key = self._keys(session_id)

        def attempt(encoded: Encoded) -> Operation[Command, int]:
            write_id = uuid.uuid4().hex  # the same in every copy redis-py sends
            pairs = [value for entry in encoded.entries for value in entry]
            args: list[object] = [
                expected_version,
                write_id,
                len(encoded.needed),
                len(encoded.entries),
                *encoded.needed,
                *pairs,
                *encoded.records,
            ]
            keys = [version_key, log_key, writes_key, checkpoints_key]
            written, version = yield Command(operation, kwargs={"keys": keys, "args": args})
            if int(written) == 2:
                raise MissingEntries
            if not int(written):
                raise SessionConflictError(session_id, expected_version, int(version))
            return int(version)

        return (yield from write_chains(self._chains, owner, items, attempt))

    def _set_meta(self, session_id: str, key: str, value: str | None) -> Operation[Command, None]:
        owner = f"{self._kind}.set_meta"
        check_session_id(owner, session_id)
        check_meta(owner, key, value)
        meta_key = self._keys(session_id)[2]
        if value is None:
            yield Command("hdel", (meta_key, key))
        else:
            yield Command("hset", (meta_key, key, value))

    def _clear(self, session_id: str) -> Operation[Command, None]:
        check_session_id(f"{self._kind}.clear", session_id)
        yield Command("delete", self._keys(session_id))

    def _acquire_lease(self, session_id: str, holder: str, ttl: float) -> Operation[Command, bool]:
        check_session_id(f"{self._kind}.acquire_lease", session_id)
        lease = lease_key(self._prefix, session_id)
        px = max(1, round(ttl * 1000))
        taken = yield Command("set", (lease, holder), {"nx": True, "px": px})
        return bool(taken)

    def _release_lease(self, session_id: str, holder: str) -> Operation[Command, None]:
        check_session_id(f"{self._kind}.release_lease", session_id)
        keys = [lease_key(self._prefix, session_id)]
        yield Command("release", kwargs={"keys": keys, "args": [holder]})

    # -- what the drivers share ------------------------------------------------------

    def _keys(self, session_id: str) -> tuple[str, str, str, str, str]:
        return session_keys(self._prefix, session_id)

    def _call(self, target: Any, command: Command) -> Any:
        """Call the script or the method of ``target`` (the client, a pipeline) ``command`` names.

        A sync client's answer, or an async one's awaitable.
        """
        script = self._scripts.get(command.name)
        function = getattr(target, command.name) if script is None else script
        return function(*command.args, **command.kwargs)

    @contextmanager
    def _errors(self, operation: str, session_id: str) -> Iterator[None]:
        try:
            yield
        except self._redis_error as exc:
            owner = f"{self._kind}({self._where})"
            raise store_error(owner, operation, session_id, exc) from exc


class RedisStore(SyncFace, RedisCore):
    """A :class:`~mellea_ctx.SessionStore` on a Redis server, shared by many workers.

    Point every worker, on any machine, at the same server and prefix: each
    write checks the session's version and writes inside one Lua script, so
    two workers that loaded the same snapshot cannot both extend it. ``load``
    reads in one ``MULTI``/``EXEC``, ``clear`` is one ``DEL``, and the
    compaction lease is a key set with ``SET NX PX`` (released by a script).

    Args:
        url: The server, as ``redis://[:password@]host:port/db``, ``rediss://``
            for TLS, or ``unix:///path/to/redis.sock``. Connections are made
            on first use.
        prefix: Put before every key, so several applications (or tests) can
            share one database.
        client: A ``redis.Redis`` client to use instead of ``url`` (bytes or
            decoded responses both work). The store does not close it.

    Raises:
        ImportError: When redis-py is not installed (``pip install '.[redis]' in the clone``).
        InvalidArgumentError: For a URL redis-py cannot read, or a prefix that
            is not a str.

    Examples:
        >>> store = RedisStore("redis://127.0.0.1:6379/0", prefix="myapp:")  # connects lazily
        >>> store.close()
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "mellea-ctx:",
        client: redis.Redis | None = None,
    ) -> None:
        super().__init__(url, prefix, client, import_redis())

    # -- lifetime -------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections of the client this store made (a client passed in is left open)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the driver -----------------------------------------------------------------

    def _run(self, operation: str, session_id: str, steps: Operation[Any, T]) -> T:
        def execute(request: Command | Transaction) -> Any:
            with self._errors(operation, session_id):
                if isinstance(request, Command):
                    return self._call(self._client, request)
                pipe = self._client.pipeline(transaction=True)
                for command in request.commands:
                    self._call(pipe, command)
                return pipe.execute()

        return run(steps, execute)


def store_error(owner: str, operation: str, session_id: str, exc: Exception) -> SessionStoreError:
    """The error a Redis store raises for ``exc``, with advice that fits what failed."""
    text = str(exc)
    if "maxmemory" in text:
        advice = (
            "the server is at its maxmemory and refused the write, so nothing was "
            "written: raise maxmemory or clear old sessions, then retry"
        )
    elif "MISCONF" in text:
        advice = (
            "the server cannot save to its disk (full, or not writable) and refuses "
            "writes, so nothing was written: free space on the server's disk, then retry"
        )
    elif operation in ("append", "replace"):
        advice = (
            "if the connection broke after the server received the write, it may be "
            "stored: check that the server is up, then reload the session and look "
            "for this turn before writing it again"
        )
    else:
        advice = (
            "check that the server is up and reachable, then reload the session "
            "before writing again"
        )
    failure = f"{type(exc).__name__}: {exc}"
    msg = f"{owner}: {operation} on session {session_id!r} failed: {failure}; {advice}"
    return SessionStoreError(msg)
