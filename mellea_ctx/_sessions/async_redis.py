"""``AsyncRedisStore``: the Redis store on ``redis.asyncio``, for async programs.

It keeps sessions exactly as :class:`~mellea_ctx.RedisStore` does (the same
keys, the same Lua scripts for ``append`` and ``replace``, the same write ids
that make a write sent again after a broken connection count once), so a sync
and an async worker can share one server and prefix. Only the client differs:
``redis.asyncio.Redis``, whose calls wait on the socket without blocking the
event loop. See :mod:`mellea_ctx._sessions.redis` for atomicity and durability.

A client belongs to the event loop it first connects on: use one store per
event loop (per ``asyncio.run``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .._core.components import Component
from .._core.exceptions import InvalidArgumentError
from .chains import Chains, Encoded, awrite_chains
from .redis import (
    APPEND_SCRIPT,
    RELEASE_SCRIPT,
    REPLACE_SCRIPT,
    import_redis,
    lease_key,
    loaded,
    script_call,
    script_outcome,
    session_keys,
    shown_client,
    shown_url,
    store_error,
)
from .store import (
    StoredSession,
    check_components,
    check_meta,
    check_session_id,
    check_version,
)

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["AsyncRedisStore"]


class AsyncRedisStore:
    """An :class:`~mellea_ctx.AsyncSessionStore` on a Redis server, through ``redis.asyncio``.

    Args:
        url: The server, as ``redis://[:password@]host:port/db``, ``rediss://``
            for TLS, or ``unix:///path/to/redis.sock``. Connections are made
            on first use.
        prefix: Put before every key (the same keys :class:`~mellea_ctx.RedisStore` uses).
        client: A ``redis.asyncio.Redis`` client to use instead of ``url``.
            The store does not close it.

    Raises:
        ImportError: When redis-py is not installed (``pip install '.[redis]' in the clone``).
        InvalidArgumentError: For a URL redis-py cannot read, or a prefix that is not a str.

    Examples:
        >>> import asyncio
        >>> store = AsyncRedisStore("redis://127.0.0.1:6379/0", prefix="myapp:")  # lazily
        >>> asyncio.run(store.aclose())
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "mellea-ctx:",
        client: redis.asyncio.Redis | None = None,
    ) -> None:
        import_redis("AsyncRedisStore")
        import redis.asyncio as aioredis

        if not isinstance(prefix, str):
            msg = f"AsyncRedisStore: prefix={prefix!r} must be a str; pass e.g. 'myapp:'"
            raise InvalidArgumentError(msg)
        if client is None:
            if not isinstance(url, str):
                msg = (
                    f"AsyncRedisStore: url={url!r} must be a str such as 'redis://127.0.0.1:6379/0'"
                )
                raise InvalidArgumentError(msg)
            try:
                client = aioredis.Redis.from_url(url)
            except ValueError as exc:
                msg = (
                    f"AsyncRedisStore: url={url!r} is not a Redis URL ({exc}); pass "
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
        self._redis_error: type[Exception] = aioredis.RedisError
        self._chains = Chains()
        self._append = self._client.register_script(APPEND_SCRIPT)
        self._replace = self._client.register_script(REPLACE_SCRIPT)
        self._release = self._client.register_script(RELEASE_SCRIPT)

    @property
    def prefix(self) -> str:
        """The prefix of every key this store writes."""
        return self._prefix

    async def aload(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata, read in one transaction.

        Raises:
            InvalidArgumentError: For a bad session id.
            SessionStoreError: When the server cannot be reached or answers an error.
            InvalidComponentError: When a stored record is damaged.
        """
        check_session_id("AsyncRedisStore.load", session_id)
        version_key, log_key, meta_key, _, checkpoints_key = self._keys(session_id)
        async with (
            self._errors("load", session_id),
            self._client.pipeline(transaction=True) as pipe,
        ):
            pipe.get(version_key)
            pipe.lrange(log_key, 0, -1)
            pipe.hgetall(meta_key)
            pipe.hgetall(checkpoints_key)
            replies = await pipe.execute()
        return loaded(self._chains, *replies)

    async def aappend(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` if the session is at ``expected_version``; return the new version.

        Raises:
            InvalidArgumentError: For a bad session id or version, or no components.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        owner = "AsyncRedisStore.append"
        check_session_id(owner, session_id)
        check_version(owner, expected_version)
        items = check_components(owner, components, allow_empty=False)
        return await self._write(self._append, owner, "append", session_id, expected_version, items)

    async def areplace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the dialogue if the session is at ``expected_version``; return the new version.

        Raises:
            InvalidArgumentError: For a bad session id or version.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        owner = "AsyncRedisStore.replace"
        check_session_id(owner, session_id)
        check_version(owner, expected_version)
        items = check_components(owner, components)
        return await self._write(
            self._replace, owner, "replace", session_id, expected_version, items
        )

    async def aset_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key, or delete it when ``value`` is ``None``.

        Raises:
            InvalidArgumentError: For a bad session id, key or value.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        owner = "AsyncRedisStore.set_meta"
        check_session_id(owner, session_id)
        check_meta(owner, key, value)
        meta_key = self._keys(session_id)[2]
        async with self._errors("set_meta", session_id):
            if value is None:
                await self._client.hdel(meta_key, key)
            else:
                await self._client.hset(meta_key, key, value)

    async def aclear(self, session_id: str) -> None:
        """Forget the session: its keys go in one ``DEL``.

        Raises:
            InvalidArgumentError: For a bad session id.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        check_session_id("AsyncRedisStore.clear", session_id)
        async with self._errors("clear", session_id):
            await self._client.delete(*self._keys(session_id))

    async def aacquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's compaction lease as :meth:`RedisStore.acquire_lease` does.

        Raises:
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        check_session_id("AsyncRedisStore.acquire_lease", session_id)
        async with self._errors("acquire_lease", session_id):
            taken = await self._client.set(
                lease_key(self._prefix, session_id), holder, nx=True, px=max(1, round(ttl * 1000))
            )
        return bool(taken)

    async def arelease_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it.

        Raises:
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        check_session_id("AsyncRedisStore.release_lease", session_id)
        async with self._errors("release_lease", session_id):
            await self._release(keys=[lease_key(self._prefix, session_id)], args=[holder])

    async def aclose(self) -> None:
        """Close the connections of the client this store made (a client passed in is left open)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncRedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<AsyncRedisStore {self._where} prefix={self._prefix!r}>"

    def _keys(self, session_id: str) -> tuple[str, str, str, str, str]:
        return session_keys(self._prefix, session_id)

    async def _write(
        self,
        script: Any,
        owner: str,
        operation: str,
        session_id: str,
        expected_version: int,
        items: tuple[Component, ...],
    ) -> int:
        async def write(encoded: Encoded) -> int:
            keys, args = script_call(self._prefix, session_id, expected_version, encoded)
            async with self._errors(operation, session_id):
                reply = await script(keys=keys, args=args)
            return script_outcome(session_id, expected_version, reply)

        return await awrite_chains(self._chains, owner, items, write)

    @asynccontextmanager
    async def _errors(self, operation: str, session_id: str) -> AsyncIterator[None]:
        try:
            yield
        except self._redis_error as exc:
            owner = f"AsyncRedisStore({self._where})"
            raise store_error(owner, operation, session_id, exc) from exc
