"""The persistent linked list under ``ChatContext``: how a node holds its history.

Each node holds the component it added, a link to the node before it, the
compactor and token counter it carries, and running aggregates that are
computed from the previous node in O(1). No node is ever changed once a
caller can see it.

Under the linked list, each node also holds its whole history as a slice
``head + buf[start:end]`` of a buffer shared with its neighbours, so reading
the history back (``as_list``) is a C-level copy instead of a walk over the
chain, and a window compactor drops the oldest body component by moving
``start``, in O(1), without rebuilding anything. ``head`` is the pinned prefix
a compactor kept.

The buffer is append-only: a node only ever appends past the end of every
slice that already exists, so no slice a caller can reach ever changes. When
a node that is not the newest is extended (a branch), or two threads extend
the same node at once, the loser copies its slice into a fresh buffer. We
tried a pyrsistent vector per node first: CPython's cycle collector then walks
the shared tree once per vector, and adds slowed to O(n) (48 us per add at
10,000 adds against 0.2 us with the collector off).

Token totals are lazy: a node that is never asked for its total never
encodes anything. The first read counts what is missing (each component once
per counter, memoized) and every later read is O(1).

``Node`` is the storage and the sequence protocol; ``ChatContext``
(``context.py``) builds on it the public API: adding, compacting, windows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Final, TypeVar, overload

from .boundaries import is_tool_result
from .components import Component
from .exceptions import InvalidArgumentError, InvalidComponentError
from .protocols import written_for
from .reprs import short_repr
from .tokens import TokenCounter, count_all, count_memoized

if TYPE_CHECKING:
    from .protocols import InlineCompactor


def require_components(items: Sequence[object], where: str, fix: str) -> None:
    """Raise ``InvalidComponentError`` naming the first of ``items`` that is not a Component.

    ``where`` names the sequence (``"ChatContext.replace_span: replacement"``); ``fix``
    says how to build one.
    """
    for index, item in enumerate(items):
        if not isinstance(item, Component):
            msg = f"{where}[{index}]={short_repr(item)} is not a Component; {fix}"
            raise InvalidComponentError(msg)


class Lazy:
    """Marks a ``previous_node`` that is built on first read."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<lazy>"


_LAZY: Final = Lazy()
lazy_lock = threading.Lock()
# Re-pack a window's buffer once the dropped part outgrows the kept part, so a
# long session with a short window holds O(window) components, not O(session).
_REPACK_MIN = 32

_N = TypeVar("_N", bound="Node")


class Node(Sequence[Component]):
    """One node of the persistent list: its history, its settings and its aggregates.

    Not built directly: ``ChatContext`` is the class callers see.
    """

    __slots__ = (
        "__weakref__",
        "_bound",
        "_buf",
        "_compactor",
        "_counter",
        "_data",
        "_end",
        "_failures",
        "_head",
        "_hold",
        "_linked",
        "_loose",
        "_previous",
        "_start",
        "_tokens",
        "_usage",
        "_window_size",
    )

    _compactor: InlineCompactor | None
    _counter: TokenCounter
    _data: Component | None
    _end: int
    _failures: int
    _head: tuple[Component, ...]
    _hold: int
    _linked: bool
    _loose: bool
    _previous: Node | Lazy | None
    _start: int
    _tokens: int | None
    _usage: int | None
    _bound: int | None
    _buf: list[Component]
    _window_size: int | None

    # -- building -------------------------------------------------------------

    def _copy(self: _N) -> _N:
        node = object.__new__(type(self))
        for slot in _STATE_SLOTS:
            setattr(node, slot, getattr(self, slot))
        inherit_attributes(node, self)
        return node

    def _replace(self: _N, lo: int, hi: int, replacement: Sequence[Component] = ()) -> _N:
        """Return a context with ``items[lo:hi]`` replaced by ``replacement``.

        The storage of ``ChatContext.replace_span``. ``items[:lo]`` stays in
        place as the new node's head. Dropping the oldest body components with
        no replacement, when ``lo`` is exactly the current head, is O(1). A
        tool result the replacement leaves detached from its call is noticed
        (``has_detached_results``), as ``add`` does.
        """
        head, buf, start, end = self._head, self._buf, self._start, self._end
        n = len(head) + end - start
        if not 0 <= lo <= hi <= n:
            msg = f"cannot replace [{lo}:{hi}] in a context of {n} components"
            raise InvalidArgumentError(msg)
        tokens = self._tokens
        if lo == len(head) and not replacement:  # drop the oldest body: move a bound
            if tokens is not None:
                tokens -= count_all(self._counter, buf[start : start + hi - lo])
            start += hi - lo
            loose = self._loose or (
                start < end and detaches(head[-1] if head else None, (buf[start],))
            )
            if start >= _REPACK_MIN and start > end - start:
                buf, start, end = buf[start:end], 0, end - start
            node = self._sibling(head, buf, start, end, tokens)
            node._loose = loose
            return node
        return self._rebuilt(lo, hi, replacement)

    def _rebuilt(self: _N, lo: int, hi: int, replacement: Sequence[Component]) -> _N:
        """:meth:`_replace` in general: a new node, ``items[:lo]`` its head, the rest its body."""
        items = self._items()
        removed = items[lo:hi]
        head = tuple(items[:lo])
        buf = [*replacement, *items[hi:]]
        start, end = 0, len(buf)
        loose = self._loose or detaches(head[-1] if head else None, buf[: len(replacement) + 1])
        tokens = self._tokens
        if tokens is not None:
            counter = self._counter
            tokens += count_all(counter, replacement) - count_all(counter, removed)
        node = self._sibling(head, buf, start, end, tokens)
        node._loose = loose
        return node

    def _replace_fresh(self: _N, lo: int, hi: int) -> _N:
        """Return ``self._replace(lo, hi)``, built in place when that is the O(1) drop.

        Only for a node nobody else has seen yet (``ChatContext.add`` calls it
        on the node ``from_previous`` has just built): dropping the oldest
        body components then changes this node into exactly the sibling
        ``_replace`` would build (same slice, settings and aggregates), and
        saves building a second node on every add of an inline window.
        """
        head = self._head
        buf, start, end = self._buf, self._start, self._end
        if lo != len(head) or not lo <= hi <= lo + end - start:
            return self._replace(lo, hi)
        tokens = self._tokens
        if tokens is not None:
            tokens -= count_all(self._counter, buf[start : start + hi - lo])
        start += hi - lo
        # As _sibling: the previous node is built on first read. ``_data``, the
        # component from_previous added, stays the last one unless the body empties.
        if start < end:
            self._previous = _LAZY
            if buf[start].tool_call_id is not None and not self._loose:
                self._loose = detaches(head[-1] if head else None, (buf[start],))
        else:
            self._previous = _LAZY if head else None
            self._data = head[-1] if head else None
        if start >= _REPACK_MIN and start > end - start:
            buf, start, end = buf[start:end], 0, end - start
            self._buf, self._end = buf, end
        self._start = start
        # The usage reading dropped, and any failure streak over.
        self._linked = False
        self._usage = None
        self._tokens = tokens
        self._bound = tokens
        self._hold = 0
        self._failures = 0
        return self

    def _sibling(
        self: _N,
        head: tuple[Component, ...],
        buf: list[Component],
        start: int,
        end: int,
        tokens: int | None,
    ) -> _N:
        """Return a node holding ``head + buf[start:end]`` that inherits this one's settings.

        Its previous node is built on first read; its usage reading is
        dropped, since it described a different history.
        """
        node = object.__new__(type(self))
        node._head, node._buf, node._start, node._end = head, buf, start, end
        node._previous = _LAZY if len(head) + end - start else None
        node._data = buf[end - 1] if end > start else (head[-1] if head else None)
        node._compactor = self._compactor
        node._counter = self._counter
        node._window_size = self._window_size
        node._linked = False
        node._usage = None
        node._loose = self._loose
        node._tokens = tokens
        node._bound = tokens
        node._hold = 0  # a compaction happened: any failure streak is over
        node._failures = 0
        if type(node).__dictoffset__:  # inherit_attributes, inlined: a subclass's own attributes
            inherit_attributes(node, self)
        return node

    def _holding(self: _N, components: Iterable[Component]) -> _N:
        """Return a node holding exactly ``components`` that inherits this one's settings.

        The storage of ``ChatContext.with_history``: each item is checked, and
        a tool result standing apart from its call is noticed, as ``add`` does.
        """
        items = list(components)
        loose = False
        before: Component | None = None
        require_components(
            items, "ChatContext.with_history: components", "wrap text as Message('user', text)"
        )
        for component in items:
            if not loose and component.tool_call_id is not None:
                loose = before is None or not (before.tool_calls or is_tool_result(before))
            before = component
        node = self._sibling((), items, 0, len(items), None if items else 0)
        node._loose = loose
        return node

    def _shrunk(self: _N) -> _N:
        """Build the node holding this node's history minus its last component."""
        head, start, end = self._head, self._start, self._end
        if end > start:
            end -= 1
        else:
            head = head[:-1]
        tokens = self._tokens
        if tokens is not None and self._data is not None:
            tokens -= count_memoized(self._counter, self._data)
        return self._sibling(head, self._buf, start, end, tokens)

    # -- reading --------------------------------------------------------------

    def _items(self) -> list[Component]:
        """Return the components, oldest first, as a new list."""
        body = self._buf[self._start : self._end]
        return [*self._head, *body] if self._head else body

    def _last(self) -> Component | None:
        if self._end > self._start:
            return self._buf[self._end - 1]
        return self._head[-1] if self._head else None

    def _token_total(self) -> int:
        """Return the exact token total, counting only what no earlier node knows."""
        if self._linked:  # the per-turn case: the previous node knows its total
            previous = self._previous
            assert isinstance(previous, Node)
            if previous._tokens is not None:
                assert self._data is not None
                tokens = previous._tokens + count_memoized(self._counter, self._data)
                self._tokens = tokens
                return tokens
        return self._walked_total()

    def _walked_total(self) -> int:
        """:meth:`_token_total` in general: from the nearest earlier node that knows its total.

        Every node on the way learns its own total; a chain with no such node
        counts its oldest node in full.
        """
        pending: list[Node] = []
        node: Node = self
        while node._tokens is None and node._linked:
            pending.append(node)
            previous = node._previous
            assert isinstance(previous, Node)
            node = previous
        counter = self._counter
        total = node._tokens
        if total is None:
            total = count_all(counter, node)
            node._tokens = total
        for later in reversed(pending):
            data = later._data
            assert data is not None
            total += count_memoized(counter, data)
            later._tokens = total
        return total

    def __len__(self) -> int:
        return len(self._head) + self._end - self._start

    def __iter__(self) -> Iterator[Component]:
        # Lazy, so a pin predicate that stops after a few components pays for a few.
        body = map(self._buf.__getitem__, range(self._start, self._end))
        return chain(self._head, body) if self._head else body

    @overload
    def __getitem__(self, index: int) -> Component: ...

    @overload
    def __getitem__(self, index: slice) -> list[Component]: ...

    def __getitem__(self, index: int | slice) -> Component | list[Component]:
        """Return one component, or a list for a slice; O(1) for an index."""
        head = self._head
        if index.__class__ is int and index >= len(head):  # the hot path: the body
            position = self._start + index - len(head)
            if position < self._end:
                return self._buf[position]
        if isinstance(index, slice):
            return self._items()[index]
        size = len(head) + self._end - self._start
        if index < 0:
            index += size
        if not 0 <= index < size:
            msg = f"context index {index} out of range for {size} components"
            raise IndexError(msg)
        if index < len(head):
            return head[index]
        return self._buf[self._start + index - len(head)]


def detaches(before: Component | None, components: Iterable[Component]) -> bool:
    """Whether a tool result of ``components`` (read after ``before``) stands apart from its call.

    A tool result is attached when the component just before it is a tool
    call or another tool result; this is the rule ``add`` applies to each
    new component, and what ``ChatContext.has_detached_results`` reports.
    """
    for component in components:
        if component.tool_call_id is not None and (
            before is None or not (before.tool_calls or is_tool_result(before))
        ):
            return True
        before = component
    return False


def inherit_attributes(node: Node, source: Node) -> None:
    """Copy the instance attributes a subclass without ``__slots__`` keeps, if any.

    ``ChatContext`` itself has no ``__dict__``, so for it this is one
    attribute read. A subclass's own settings (a ``model_id``, say) then ride
    from node to node like the compactor and the counter.
    """
    if type(node).__dictoffset__ and type(source).__dictoffset__:
        node.__dict__.update(source.__dict__)


_STATE_SLOTS: Final = tuple(slot for slot in Node.__slots__ if slot != "__weakref__")


_PROVEN: dict[type, bool] = {}


def bound_is_proven(cls: type) -> bool:
    """Whether ``cls.bound`` was written for ``cls.count``: defined with it or below it."""
    proven = _PROVEN.get(cls)
    if proven is None:
        proven = _PROVEN[cls] = written_for(cls, "bound", "count")
    return proven
