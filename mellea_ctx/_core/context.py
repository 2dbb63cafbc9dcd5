"""``ChatContext``: a conversation as a persistent, immutable linked list.

Each node holds the component it added, a link to the node before it, the
compactor and token counter it carries, and running aggregates that are
computed from the previous node in O(1). ``add`` returns a new node; no node
is ever changed once a caller can see it.

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

Token totals are lazy: a context that never asks for ``token_count`` never
encodes anything. The first read counts what is missing (each component once
per counter, memoized) and every later read is O(1).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Final, overload

from .boundaries import is_tool_result, turn_start, window_cut
from .components import Component, ModelOutputThunk
from .exceptions import InvalidArgumentError, InvalidComponentError, NotInlineCompactorError
from .pins import pin_react_initiator
from .tokens import TokenCounter, count_all, count_memoized, default_counter

if TYPE_CHECKING:
    from .protocols import InlineCompactor

__all__ = ["ChatContext"]


class _Lazy:
    """Marks a ``previous_node`` that is built on first read."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<lazy>"


_LAZY: Final = _Lazy()
_lazy_lock = threading.Lock()
# Re-pack a window's buffer once the dropped part outgrows the kept part, so a
# long session with a short window holds O(window) components, not O(session).
_REPACK_MIN = 32
# A failure backoff doubles with each consecutive failed inline compaction, this many times.
_BACKOFF_DOUBLINGS = 4


class ChatContext(Sequence[Component]):
    """An immutable chat history that can compact itself as it grows.

    Start from an empty root and ``add`` components; every ``add`` returns a
    new context and leaves the old one exactly as it was, so earlier contexts
    can be kept, compared, or branched from at no cost. A context is also a
    read-only sequence of its components: ``len(ctx)``, ``ctx[0]``,
    ``ctx[-3:]`` and iteration work as on a tuple, without copying the history.

    Args:
        compactor: An :class:`~mellea_ctx.InlineCompactor` applied after every
            ``add``; the contexts it returns carry it, so compaction keeps
            going. Compactors that call a model on every use are refused.
        window_size: Show the model only the last ``window_size`` body
            components (``view_for_generation``), keeping the system prompt,
            the agent's goal and whole tool exchanges. The history itself is
            kept. Cannot be combined with ``compactor``.
        counter: How tokens are counted. Defaults to tiktoken ``o200k_base``
            with OpenAI's chat overhead (:class:`~mellea_ctx.TiktokenCounter`).

    Raises:
        InvalidArgumentError: When both ``compactor`` and ``window_size`` are
            given, or ``window_size`` is negative.
        NotInlineCompactorError: When ``compactor`` is not an ``InlineCompactor``.

    Examples:
        >>> from mellea_ctx import ChatContext, Message, WindowCompactor
        >>> ctx = ChatContext(compactor=WindowCompactor(size=2))
        >>> for text in ["one", "two", "three"]:
        ...     ctx = ctx.add(Message("user", text))
        >>> [c.content for c in ctx.as_list()]
        ['two', 'three']
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
    _previous: ChatContext | _Lazy | None
    _start: int
    _tokens: int | None
    _usage: int | None
    _bound: int | None
    _buf: list[Component]
    _window_size: int | None

    def __init__(
        self,
        *,
        compactor: InlineCompactor | None = None,
        window_size: int | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        from .protocols import InlineCompactor

        if compactor is not None and window_size is not None:
            msg = (
                f"ChatContext: compactor={compactor!r} and window_size={window_size!r} "
                "cannot be combined; use compactor=WindowCompactor(size=...) alone"
            )
            raise InvalidArgumentError(msg)
        if compactor is not None and not isinstance(compactor, InlineCompactor):
            msg = (
                f"ChatContext: compactor={compactor!r} is not an InlineCompactor, so it may call "
                "a model on every add; gate it with ThresholdCompactor(inner, threshold=...), "
                "or call compactor.compact(ctx, backend=...) yourself between turns"
            )
            raise NotInlineCompactorError(msg)
        if window_size is not None and (
            not isinstance(window_size, int) or isinstance(window_size, bool) or window_size < 0
        ):
            msg = (
                f"ChatContext: window_size={window_size!r} must be an int >= 0; "
                "pass None to show the whole history"
            )
            raise InvalidArgumentError(msg)
        if counter is not None and not callable(getattr(counter, "count", None)):
            msg = (
                f"ChatContext: counter={counter!r} has no count(component) method; "
                "pass a TokenCounter such as TiktokenCounter()"
            )
            raise InvalidArgumentError(msg)
        self._previous = None
        self._data = None
        self._compactor = compactor
        self._counter = counter if counter is not None else _DEFAULT_COUNTER
        self._window_size = window_size
        self._head = ()
        self._buf = []
        self._start = 0
        self._end = 0
        self._tokens = 0
        self._bound = 0
        self._linked = False
        self._usage = None
        self._loose = False
        self._hold = 0
        self._failures = 0

    # -- building -------------------------------------------------------------

    @classmethod
    def from_previous(cls, previous: ChatContext, data: Component) -> ChatContext:
        """Return a new node that adds ``data`` after ``previous``, without compacting.

        This is the one constructor that copies what a node inherits: the
        compactor, the counter, the window size, the running aggregates, and
        the failure backoff (one add fewer to wait, see
        :attr:`compaction_backoff`). ``previous`` is not modified.
        """
        node = object.__new__(cls)
        buf = previous._buf
        start = previous._start
        end = previous._end
        if end == len(buf):
            buf.append(data)  # past every existing slice: nobody sees it but us
        if buf[end] is not data:  # a branch, or another thread appended first
            buf = [*buf[start:end], data]
            end -= start
            start = 0
        node._buf = buf
        node._start = start
        node._end = end + 1
        node._head = previous._head
        node._previous = previous
        node._data = data
        node._compactor = previous._compactor
        node._counter = previous._counter
        node._window_size = previous._window_size
        node._tokens = None
        node._bound = None
        node._linked = True
        hold = previous._hold
        node._hold = hold - 1 if hold else 0
        node._failures = previous._failures
        if type(data) is ModelOutputThunk and data.usage is not None:
            node._usage = data.usage.total_tokens
        else:
            node._usage = previous._usage
        loose = previous._loose
        if not loose and data.tool_call_id is not None:
            before = previous._data  # always the last component of ``previous``
            loose = before is None or not (before.tool_calls or is_tool_result(before))
        node._loose = loose
        return node

    def add(self, component: Component) -> ChatContext:
        """Return a new context with ``component`` appended, then compacted.

        ``self`` is not modified. When this context carries a compactor, the
        result is what the compactor made of the extended context, and it
        carries the compactor too.

        Raises:
            InvalidComponentError: When ``component`` is not a ``Component``.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> root = ChatContext()
            >>> one = root.add(Message("user", "hi"))
            >>> len(root), len(one)
            (0, 1)
        """
        if not isinstance(component, Component):
            msg = (
                f"ChatContext.add: component={component!r} is not a Component; "
                "wrap text as Message('user', text)"
            )
            raise InvalidComponentError(msg)
        node = type(self).from_previous(self, component)
        compactor = self._compactor
        if compactor is None or self._hold:
            return node  # no compactor, or backing off after a failed compaction
        result = compactor._compact_on_add(node)
        if result is not node and result._compactor is not compactor:
            result = result._with(compactor=compactor)
        return result

    def _with(self, *, compactor: InlineCompactor | None) -> ChatContext:
        """Return a copy of this node that carries ``compactor``."""
        node = self._copy()
        node._previous = self._previous
        node._compactor = compactor
        return node

    def _backing_off(self, adds: int) -> ChatContext:
        """Return a copy of this node after a failed inline compaction.

        The copy counts one more consecutive failure, and the next ``adds``
        adds built on it do not run the compactor (``adds * 2**k`` after
        ``k`` earlier consecutive failures, ``k`` at most 4). ``adds == 0``
        returns ``self``: try again on the next add.
        """
        if adds <= 0:
            return self
        node = self._copy()
        node._hold = adds * 2 ** min(self._failures, _BACKOFF_DOUBLINGS)
        node._failures = self._failures + 1
        return node

    def _copy(self) -> ChatContext:
        node = object.__new__(type(self))
        for slot in _STATE_SLOTS:
            setattr(node, slot, getattr(self, slot))
        return node

    def _replace(self, lo: int, hi: int, replacement: Sequence[Component] = ()) -> ChatContext:
        """Return a context with ``items[lo:hi]`` replaced by ``replacement``.

        The building block of every compactor. ``items[:lo]`` stays in place
        as the new node's head. Dropping the oldest body components with no
        replacement, when ``lo`` is exactly the current head, is O(1).
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
            if start >= _REPACK_MIN and start > end - start:
                buf, start, end = buf[start:end], 0, end - start
            return self._sibling(head, buf, start, end, tokens)
        items = self.as_list()
        removed = items[lo:hi]
        head = tuple(items[:lo])
        buf = [*replacement, *items[hi:]]
        start, end = 0, len(buf)
        if tokens is not None:
            counter = self._counter
            tokens += count_all(counter, replacement) - count_all(counter, removed)
        return self._sibling(head, buf, start, end, tokens)

    def _sibling(
        self,
        head: tuple[Component, ...],
        buf: list[Component],
        start: int,
        end: int,
        tokens: int | None,
    ) -> ChatContext:
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
        return node

    # -- reading --------------------------------------------------------------

    def _last(self) -> Component | None:
        if self._end > self._start:
            return self._buf[self._end - 1]
        return self._head[-1] if self._head else None

    def as_list(self, last_n_components: int | None = None) -> list[Component]:
        """Return the components, oldest first, as a new list.

        Args:
            last_n_components: Return only this many of the most recent
                components (all of them when ``None``).

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ctx = ChatContext().add(Message("user", "a")).add(Message("user", "b"))
            >>> [c.content for c in ctx.as_list(last_n_components=1)]
            ['b']
        """
        if last_n_components is None:
            body = self._buf[self._start : self._end]
            return [*self._head, *body] if self._head else body
        if (
            not isinstance(last_n_components, int)
            or isinstance(last_n_components, bool)
            or last_n_components < 0
        ):
            msg = f"as_list: last_n_components={last_n_components!r} must be an int >= 0 or None"
            raise InvalidArgumentError(msg)
        items = self.as_list()
        # Negative slicing: asking for more than there is returns everything.
        return items[-last_n_components:] if last_n_components else []

    def view_for_generation(self) -> list[Component]:
        """Return the components to send to the model for the next generation.

        Without ``window_size`` this is the whole history. With it, it is the
        last ``window_size`` body components after the pinned prefix (leading
        system messages and the agent's ``ReactInitiator``), widened so that no
        tool exchange is split.
        """
        if self._window_size is None:
            return self.as_list()
        p, k = window_cut(self, self._window_size, pin_react_initiator, loose=self._loose)
        items = self.as_list()
        return items[:p] + items[k:]

    def last_turn(self) -> tuple[Component, ...]:
        """Return the current user turn: from the last user input to the end.

        The turn starts at the last user message (or ``CBlock`` /
        ``ReactInitiator``) and includes the model's replies, tool calls and
        tool results that followed it. With no user input, the whole history.
        """
        return tuple(self[index] for index in range(turn_start(self), len(self)))

    @property
    def previous_node(self) -> ChatContext | None:
        """The context before the last component was added (``None`` at the root).

        For a context a compactor produced, this is the compacted history
        minus its last component, built on first read and then fixed.
        """
        previous = self._previous
        if not isinstance(previous, _Lazy):
            return previous
        with _lazy_lock:
            if isinstance(self._previous, _Lazy):
                self._previous = self._shrunk()
            return self._previous

    def _shrunk(self) -> ChatContext:
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

    @property
    def node_data(self) -> Component | None:
        """The component this node added (``None`` at the root)."""
        return self._data

    @property
    def is_root_node(self) -> bool:
        """Whether this context is empty."""
        return self._data is None

    @property
    def compactor(self) -> InlineCompactor | None:
        """The compactor applied after every ``add``, if any."""
        return self._compactor

    @property
    def counter(self) -> TokenCounter:
        """The token counter behind ``token_count``."""
        return self._counter

    @property
    def window_size(self) -> int | None:
        """The generation window given at construction, if any."""
        return self._window_size

    @property
    def token_count(self) -> int:
        """The exact token total of the history under this context's counter.

        Equal to the counter applied to each component of ``as_list()`` and
        summed. Computed on first read, from the nearest earlier context that
        knows its total, each component counted once; O(1) after that.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ChatContext().add(Message("user", "Hello there")).token_count
            6
        """
        tokens = self._tokens
        if tokens is not None:
            return tokens
        if self._linked:  # the per-turn case: the previous node knows its total
            previous = self._previous
            assert isinstance(previous, ChatContext)
            if previous._tokens is not None:
                assert self._data is not None
                tokens = previous._tokens + count_memoized(self._counter, self._data)
                self._tokens = tokens
                return tokens
        pending: list[ChatContext] = []
        node = self
        while node._tokens is None and node._linked:
            pending.append(node)
            previous = node._previous
            assert isinstance(previous, ChatContext)
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

    def _token_bound(self) -> int:
        """Return a cheap upper bound of ``token_count`` (exactly it, once that is known).

        A counter with a ``bound(component)`` method (``TiktokenCounter`` has
        one: a token never spans less than one byte) gives a bound without
        encoding anything; the bound is carried forward in O(1) per add, like
        the total. A threshold gate that sees the bound under its threshold
        knows the exact total is too, and encodes nothing.
        """
        bound = self._bound
        if bound is not None:
            return bound
        counter = self._counter
        measure = getattr(counter, "bound", None)
        if measure is None:
            return self.token_count
        pending: list[ChatContext] = []
        node = self
        while node._bound is None and node._tokens is None and node._linked:
            pending.append(node)
            previous = node._previous
            assert isinstance(previous, ChatContext)
            node = previous
        total = node._bound if node._bound is not None else node._tokens
        if total is None:
            total = sum(measure(component) for component in node)
            node._bound = total
        for later in reversed(pending):
            assert later._data is not None
            total += measure(later._data)
            later._bound = total
        return total

    @property
    def compaction_backoff(self) -> int:
        """Adds left before the carried compactor runs again after a failed compaction.

        ``0`` normally. When an inline summarizing compactor fails (the backend
        is down, the summary is empty or not smaller), the context it returns
        waits ``backoff_adds`` adds (doubling with each consecutive failure, up
        to 16 times) before trying again, so a backend that is down is not
        asked again on every add. The count rides from node to node like the
        token total; each add takes one off, and any compaction that applies
        clears it. Calling ``compact`` yourself always tries.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ChatContext().add(Message("user", "hi")).compaction_backoff
            0
        """
        return self._hold

    @property
    def last_usage_tokens(self) -> int | None:
        """``total_tokens`` of the newest model usage seen since the last compaction.

        ``None`` before any ``ModelOutputThunk`` with usage was added, and
        again right after a compaction, because a figure reported for the
        longer history no longer describes this one.
        """
        return self._usage

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
            return self.as_list()[index]
        size = len(head) + self._end - self._start
        if index < 0:
            index += size
        if not 0 <= index < size:
            msg = f"context index {index} out of range for {size} components"
            raise IndexError(msg)
        if index < len(head):
            return head[index]
        return self._buf[self._start + index - len(head)]

    def __repr__(self) -> str:
        tokens = "?" if self._tokens is None else str(self._tokens)
        return (
            f"<{type(self).__name__} components={len(self)} tokens={tokens} "
            f"compactor={self._compactor!r}>"
        )


_DEFAULT_COUNTER: Final = default_counter()
_STATE_SLOTS: Final = tuple(slot for slot in ChatContext.__slots__ if slot != "__weakref__")
