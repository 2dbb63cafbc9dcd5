"""The two faces of a store built on operations: the store protocol, sync and async, once.

A store whose calls are operations (:mod:`~mellea_ctx._core.operations`) implements
:class:`OperationStore`: one operation per call, no I/O. :class:`SyncFace` gives
it :class:`~mellea_ctx.SessionStore`'s methods (and the lease's) by running each
operation with the store's ``_run``; :class:`AsyncFace` gives it
:class:`~mellea_ctx.AsyncSessionStore`'s by awaiting the store's ``_arun``. The
two faces differ in ``await`` alone, so a sync store and its async twin
(``RedisStore`` / ``AsyncRedisStore``, ``PostgresStore`` / ``AsyncPostgresStore``)
check, decide and fail alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from .._core.components import Component
from .._core.operations import Operation
from .store import StoredSession, Write

T = TypeVar("T")


class OperationStore:
    """A store's operations, one per call, for a face to run (each one checks its arguments)."""

    __slots__ = ()

    def _load(self, session_id: str) -> Operation[Any, StoredSession]:
        raise NotImplementedError

    _kind: str  # the store's name in its errors: "RedisStore"

    def _write_dialogue(self, write: Write) -> Operation[Any, int]:
        raise NotImplementedError

    def _set_meta(self, session_id: str, key: str, value: str | None) -> Operation[Any, None]:
        raise NotImplementedError

    def _clear(self, session_id: str) -> Operation[Any, None]:
        raise NotImplementedError

    def _acquire_lease(self, session_id: str, holder: str, ttl: float) -> Operation[Any, bool]:
        raise NotImplementedError

    def _release_lease(self, session_id: str, holder: str) -> Operation[Any, None]:
        raise NotImplementedError


class SyncFace(OperationStore):
    """:class:`~mellea_ctx.SessionStore`'s methods and the lease's, each an operation run."""

    __slots__ = ()

    def _run(self, operation: str, session_id: str, steps: Operation[Any, T]) -> T:
        raise NotImplementedError

    def load(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata, read in one snapshot.

        Raises:
            InvalidArgumentError: For a bad session id.
            SessionStoreError: When the server cannot be reached or answers an error.
            InvalidComponentError: When a stored record is damaged.
        """
        return self._run("load", session_id, self._load(session_id))

    def append(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` if the session is at ``expected_version``; return the new version.

        One atomic write: the whole batch is stored, or none of it.

        Raises:
            InvalidArgumentError: For a bad session id or version, or no components.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        write = Write.checked(self._kind, "append", session_id, components, expected_version)
        operation = self._write_dialogue(write)
        return self._run("append", session_id, operation)

    def replace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the dialogue if the session is at ``expected_version``; return the new version.

        One atomic write: readers see the old dialogue or the new one, never a mix.

        Raises:
            InvalidArgumentError: For a bad session id or version.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        write = Write.checked(self._kind, "replace", session_id, components, expected_version)
        operation = self._write_dialogue(write)
        return self._run("replace", session_id, operation)

    def set_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key, or delete it when ``value`` is ``None``.

        Raises:
            InvalidArgumentError: For a bad session id, key or value.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        self._run("set_meta", session_id, self._set_meta(session_id, key, value))

    def clear(self, session_id: str) -> None:
        """Forget the session: dialogue, version and metadata, in one atomic write.

        Raises:
            InvalidArgumentError: For a bad session id.
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        self._run("clear", session_id, self._clear(session_id))

    def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's compaction lease for ``ttl`` seconds; whether it was taken.

        The lease expires on the server's clock (see :mod:`mellea_ctx._sessions.lease`).

        Raises:
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        operation = self._acquire_lease(session_id, holder, ttl)
        return self._run("acquire_lease", session_id, operation)

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it.

        Raises:
            SessionStoreError: When the server cannot be reached or answers an error.
        """
        self._run("release_lease", session_id, self._release_lease(session_id, holder))


class AsyncFace(OperationStore):
    """:class:`~mellea_ctx.AsyncSessionStore`'s methods and the lease's, each operation awaited.

    Each one checks, writes and fails as the sync method of the same name
    without the ``a`` (:class:`SyncFace`) does.
    """

    __slots__ = ()

    async def _arun(self, operation: str, session_id: str, steps: Operation[Any, T]) -> T:
        raise NotImplementedError

    async def aload(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata, read in one snapshot."""
        return await self._arun("load", session_id, self._load(session_id))

    async def aappend(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` (one atomic write) and return the new version, as ``append``."""
        write = Write.checked(self._kind, "append", session_id, components, expected_version)
        operation = self._write_dialogue(write)
        return await self._arun("append", session_id, operation)

    async def areplace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the dialogue (one atomic write) and return the new version, as ``replace``."""
        write = Write.checked(self._kind, "replace", session_id, components, expected_version)
        operation = self._write_dialogue(write)
        return await self._arun("replace", session_id, operation)

    async def aset_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key, or delete it when ``value`` is ``None``, as ``set_meta``."""
        await self._arun("set_meta", session_id, self._set_meta(session_id, key, value))

    async def aclear(self, session_id: str) -> None:
        """Forget the session: dialogue, version and metadata, as ``clear``."""
        await self._arun("clear", session_id, self._clear(session_id))

    async def aacquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's compaction lease for ``ttl`` seconds, as ``acquire_lease``."""
        operation = self._acquire_lease(session_id, holder, ttl)
        return await self._arun("acquire_lease", session_id, operation)

    async def arelease_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it, as ``release_lease``."""
        await self._arun("release_lease", session_id, self._release_lease(session_id, holder))
