"""The record of which deferred tool definitions a session has received, and its store.

:class:`DeliveredTools` keeps a JSON list of names in a :class:`MetaStore`
(per-session key/value text) under :data:`DELIVERED_KEY`, so a durable store
keeps it across restarts and workers; :class:`InMemoryMetaStore` is the
store in a dict.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from .._core.exceptions import InvalidArgumentError

#: Where :class:`DeliveredTools` keeps its record in a :class:`MetaStore`.
DELIVERED_KEY = "mellea_ctx.tool_search.delivered"


@runtime_checkable
class MetaStore(Protocol):
    """Per-session key/value text: where :class:`DeliveredTools` keeps its record.

    Two methods; a session store adapts in a few lines, for instance::

        class SessionMeta:
            def __init__(self, store): self.store = store
            def get(self, session_id, key): return self.store.load(session_id).meta.get(key)
            def set(self, session_id, key, value): self.store.set_meta(session_id, key, value)
    """

    def get(self, session_id: str, key: str) -> str | None:
        """Return the value under ``key`` for the session, or ``None``."""
        ...

    def set(self, session_id: str, key: str, value: str | None) -> None:
        """Store ``value`` under ``key`` for the session; ``None`` removes it."""
        ...


class InMemoryMetaStore:
    """A :class:`MetaStore` in a dict: lives as long as the object, thread-safe.

    Examples:
        >>> store = InMemoryMetaStore()
        >>> store.set("s1", "k", "v")
        >>> store.get("s1", "k"), store.get("s2", "k")
        ('v', None)
    """

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str, key: str) -> str | None:
        """Return the value under ``key`` for the session, or ``None``."""
        with self._lock:
            return self._values.get((session_id, key))

    def set(self, session_id: str, key: str, value: str | None) -> None:
        """Store ``value`` under ``key`` for the session; ``None`` removes it."""
        with self._lock:
            if value is None:
                self._values.pop((session_id, key), None)
            else:
                self._values[(session_id, key)] = value

    def __repr__(self) -> str:
        return f"InMemoryMetaStore({len(self._values)} values)"


class DeliveredTools:
    """The tool definitions one session has already received, in delivery order.

    The record lives in a :class:`MetaStore` under :data:`DELIVERED_KEY`, as
    a JSON list of names, so a durable store keeps it across restarts and
    workers. Reads go to the store each time; two searches racing in one
    session may both deliver a definition (harmless: a session's turns are
    sequential in practice).

    Args:
        session_id: The session the record belongs to.
        store: Where the record lives; ``None`` keeps it in a new
            :class:`InMemoryMetaStore` owned by this object. Use
            :meth:`ToolSearch.delivered` to share one store across requests.

    Raises:
        InvalidArgumentError: For an empty or non-string session id, or a
            store without ``get`` and ``set``.

    Examples:
        >>> delivered = DeliveredTools("s1")
        >>> delivered.record(["billing_lookup", "read_file"])
        >>> delivered.names, "read_file" in delivered
        (('billing_lookup', 'read_file'), True)
    """

    def __init__(self, session_id: str, store: MetaStore | None = None) -> None:
        if not isinstance(session_id, str) or not session_id:
            msg = f"DeliveredTools: session_id={session_id!r} must be a non-empty string"
            raise InvalidArgumentError(msg)
        if store is not None and not isinstance(store, MetaStore):
            msg = (
                f"DeliveredTools: store={store!r} has no get(session_id, key) and "
                "set(session_id, key, value); pass a MetaStore such as InMemoryMetaStore()"
            )
            raise InvalidArgumentError(msg)
        self.session_id = session_id
        self.store: MetaStore = store if store is not None else InMemoryMetaStore()

    @property
    def names(self) -> tuple[str, ...]:
        """The delivered names, oldest first (an unreadable record reads as empty)."""
        raw = self.store.get(self.session_id, DELIVERED_KEY)
        if raw is None:
            return ()
        try:
            value = json.loads(raw)
        except ValueError:
            return ()
        if not isinstance(value, list):
            return ()
        return tuple(dict.fromkeys(name for name in value if isinstance(name, str)))

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def record(self, names: Iterable[str]) -> None:
        """Add ``names`` to the record (names already there keep their place)."""
        current = self.names
        merged = tuple(dict.fromkeys((*current, *names)))
        if merged != current:
            self.store.set(self.session_id, DELIVERED_KEY, json.dumps(list(merged)))

    def clear(self) -> None:
        """Forget every delivery of this session."""
        self.store.set(self.session_id, DELIVERED_KEY, None)

    def __repr__(self) -> str:
        return f"DeliveredTools({self.session_id!r}, {len(self.names)} delivered)"
