"""``MemoryStore``: sessions in a dict, for tests and single-process programs."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .._core.components import Component
from .._core.exceptions import SessionConflictError
from .store import (
    StoredSession,
    check_components,
    check_meta,
    check_session_id,
    check_version,
    dump_records,
    load_record,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """A :class:`~mellea_ctx.SessionStore` in this process's memory.

    Thread-safe: every operation holds one lock for the few dict operations
    it makes. Nothing survives the process.

    It keeps what a durable store keeps and gives back what a durable store
    gives back: each component goes through its lossless record on the way
    in, so a component kind that :class:`~mellea_ctx.SQLiteStore` would
    refuse is refused here too, and a stored :class:`~mellea_ctx.Checkpoint`
    comes back with its ``span`` but without its in-memory ``replaced``
    handle. Tests written against a ``MemoryStore`` see what production sees.

    Examples:
        >>> from mellea_ctx import Message
        >>> store = MemoryStore()
        >>> store.append("s1", [Message("user", "hi")], expected_version=0)
        1
        >>> store.load("s1").components
        (Message(role='user', content='hi'),)
    """

    __slots__ = ("_lock", "_sessions")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, StoredSession] = {}

    def load(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata (version 0 when none).

        Raises:
            InvalidArgumentError: For a bad session id.
        """
        check_session_id("MemoryStore.load", session_id)
        with self._lock:
            return self._sessions.get(session_id, _EMPTY)

    def append(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` if the session is at ``expected_version``; return the new version.

        Raises:
            InvalidArgumentError: For a bad session id or version, or no components.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
        """
        owner = "MemoryStore.append"
        check_session_id(owner, session_id)
        check_version(owner, expected_version)
        items = _normalized(owner, check_components(owner, components, allow_empty=False))
        with self._lock:
            stored = self._sessions.get(session_id, _EMPTY)
            _check_current(session_id, expected_version, stored)
            version = stored.version + 1
            self._sessions[session_id] = StoredSession(
                version, stored.components + items, stored.meta
            )
            return version

    def replace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the dialogue if the session is at ``expected_version``; return the new version.

        Raises:
            InvalidArgumentError: For a bad session id or version.
            InvalidComponentError: For a component kind that has no record.
            SessionConflictError: When the session is at another version.
        """
        owner = "MemoryStore.replace"
        check_session_id(owner, session_id)
        check_version(owner, expected_version)
        items = _normalized(owner, check_components(owner, components))
        with self._lock:
            stored = self._sessions.get(session_id, _EMPTY)
            _check_current(session_id, expected_version, stored)
            version = stored.version + 1
            self._sessions[session_id] = StoredSession(version, items, stored.meta)
            return version

    def set_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key, or delete it when ``value`` is ``None``.

        Raises:
            InvalidArgumentError: For a bad session id, key or value.
        """
        owner = "MemoryStore.set_meta"
        check_session_id(owner, session_id)
        check_meta(owner, key, value)
        with self._lock:
            stored = self._sessions.get(session_id, _EMPTY)
            meta = dict(stored.meta)
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
            self._sessions[session_id] = StoredSession(stored.version, stored.components, meta)

    def clear(self, session_id: str) -> None:
        """Forget the session; other sessions are untouched.

        Raises:
            InvalidArgumentError: For a bad session id.
        """
        check_session_id("MemoryStore.clear", session_id)
        with self._lock:
            self._sessions.pop(session_id, None)

    def __repr__(self) -> str:
        return f"<MemoryStore sessions={len(self._sessions)}>"


_EMPTY = StoredSession()


def _normalized(owner: str, components: tuple[Component, ...]) -> tuple[Component, ...]:
    """Return each component as it reads back from its stored text (what durable stores return).

    The same text, and the same checks, as SQLite and Redis: what one store
    refuses (a lone surrogate, say), every store refuses.
    """
    return tuple(load_record(text) for text in dump_records(owner, components))


def _check_current(session_id: str, expected_version: int, stored: StoredSession) -> None:
    if stored.version != expected_version:
        raise SessionConflictError(session_id, expected_version, stored.version)
