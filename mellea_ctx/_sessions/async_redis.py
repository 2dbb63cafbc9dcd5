"""``AsyncRedisStore``: the Redis store on ``redis.asyncio``, for async programs.

It keeps sessions exactly as :class:`~mellea_ctx.RedisStore` does (the same
keys, the same Lua scripts for ``append`` and ``replace``, the same write ids
that make a write sent again after a broken connection count once), so a sync
and an async worker can share one server and prefix: both run the operations
of :class:`~mellea_ctx._sessions.redis.RedisCore`. Only the client differs:
``redis.asyncio.Redis``, whose calls wait on the socket without blocking the
event loop. See :mod:`mellea_ctx._sessions.redis` for atomicity and durability.

A client belongs to the event loop it first connects on: use one store per
event loop (per ``asyncio.run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .._core.operations import Operation, arun
from .faces import AsyncFace
from .redis import Command, RedisCore, Transaction, import_redis

if TYPE_CHECKING:
    import redis.asyncio

T = TypeVar("T")


class AsyncRedisStore(AsyncFace, RedisCore):
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

    _kind = "AsyncRedisStore"

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "mellea-ctx:",
        client: redis.asyncio.Redis | None = None,
    ) -> None:
        import_redis(self._kind)
        import redis.asyncio as aioredis

        super().__init__(url, prefix, client, aioredis)

    async def aclose(self) -> None:
        """Close the connections of the client this store made (a client passed in is left open)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncRedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _arun(self, operation: str, session_id: str, steps: Operation[Any, T]) -> T:
        async def execute(request: Command | Transaction) -> Any:
            with self._errors(operation, session_id):
                if isinstance(request, Command):
                    return await self._call(self._client, request)
                async with self._client.pipeline(transaction=True) as pipe:
                    for command in request.commands:
                        self._call(pipe, command)
                    return await pipe.execute()

        return await arun(steps, execute)
