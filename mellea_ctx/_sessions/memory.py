"""``MemoryStore``: sessions in a dict, for tests and single-process programs."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from .._core.checkpoint import Checkpoint
from .._core.components import Component
from .._core.exceptions import InvalidComponentError, SessionConflictError
from .._formats.checkpoint_records import chain
from .._formats.serialize import component_from_record, component_to_record
from .lease import LocalLeases
from .store import (
    StoredSession,
    check_components,
    check_meta,
    check_session_id,
    check_version,
    dump_records,
)


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

    __slots__ = ("_known", "_leases", "_lock", "_sessions")

    def __init__(self) -> None:
        self._leases = LocalLeases()
        self._lock = threading.Lock()
        self._sessions: dict[str, StoredSession] = {}
        self._known = _Known()

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
        items = _normalized(
            owner, check_components(owner, components, allow_empty=False), self._known
        )
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
        items = _normalized(owner, check_components(owner, components), self._known)
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

    def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        """Take the session's compaction lease for ``ttl`` seconds, if it is free or expired."""
        check_session_id("MemoryStore.acquire_lease", session_id)
        return self._leases.acquire_lease(session_id, holder, ttl)

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still holds it."""
        check_session_id("MemoryStore.release_lease", session_id)
        self._leases.release_lease(session_id, holder)

    def __repr__(self) -> str:
        return f"<MemoryStore sessions={len(self._sessions)}>"


_EMPTY = StoredSession()


class _Known:
    """Checkpoints this store has normalized, by identity, for as long as each one lives.

    Maps a checkpoint (the caller's, or one of ours) to its normalized form;
    an entry goes when its checkpoint is freed, so ids are never confused.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Checkpoint], Checkpoint | None]] = {}

    def get(self, checkpoint: Checkpoint) -> Checkpoint | None:
        entry = self._entries.get(id(checkpoint))
        if entry is None or entry[0]() is not checkpoint:
            return None
        return checkpoint if entry[1] is None else entry[1]

    def put(self, original: Checkpoint, normal: Checkpoint) -> None:
        entries = self._entries
        for key, value in ((original, normal), (normal, None)):
            ident = id(key)

            def forget(_ref: object, ident: int = ident) -> None:
                entries.pop(ident, None)

            entries[ident] = (weakref.ref(key, forget), None if key is normal else value)


def _storable(owner: str, components: tuple[Component, ...], known: _Known) -> None:
    """Refuse what SQLite and Redis refuse (a lone surrogate), with the very same error.

    Only what this store has not seen is looked at: each component, and for a
    new checkpoint the summaries and plain components along its chain, down
    to the checkpoints already normalized. Where something is refused, the
    whole component's record is written as the durable stores write it, so
    the message names the same field.
    """
    for index, component in enumerate(components):
        if type(component) is Checkpoint:
            try:
                for node in chain(component, lambda c: known.get(c) is not None):
                    plain = [c for c in node.span if type(c) is not Checkpoint]
                    dump_records(owner, [node.with_span(plain)])
                continue
            except InvalidComponentError:
                pass  # found one: name it as the other stores do, below
        try:
            dump_records(owner, [component])
        except InvalidComponentError as exc:
            msg = str(exc).replace("components[0]", f"components[{index}]", 1)
            raise InvalidComponentError(msg) from None


def _normalized(
    owner: str, components: tuple[Component, ...], known: _Known
) -> tuple[Component, ...]:
    """Return each component as it reads back from its record (what durable stores return).

    The same checks as SQLite and Redis run first (:func:`_storable`). A
    checkpoint is rebuilt from its span, walking its chain without
    recursion; checkpoints this store already normalized (``known``, by
    identity) are reused, so a replace costs what it adds, not the depth of
    the chain of compactions.
    """
    _storable(owner, components, known)
    return tuple(
        _normal_checkpoint(c, known)
        if type(c) is Checkpoint
        else component_from_record(component_to_record(c))
        for c in components
    )


def _normal_checkpoint(checkpoint: Checkpoint, known: _Known) -> Checkpoint:
    def is_known(c: Checkpoint) -> bool:
        return known.get(c) is not None

    def normal(c: Component) -> Component:
        if isinstance(c, Checkpoint) and type(c) is Checkpoint:
            found = known.get(c)
            assert found is not None  # the chain lists every one before its folder
            return found
        return component_from_record(component_to_record(c))

    found = known.get(checkpoint)
    if found is not None:
        return found
    for node in chain(checkpoint, is_known):
        span = [normal(c) for c in node.span]
        fresh = node.with_span(span)
        known.put(node, fresh)
    done = known.get(checkpoint)
    assert done is not None
    return done


def _check_current(session_id: str, expected_version: int, stored: StoredSession) -> None:
    if stored.version != expected_version:
        raise SessionConflictError(session_id, expected_version, stored.version)
