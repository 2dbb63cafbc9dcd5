"""``ChatContext``: a conversation as a persistent, immutable linked list.

``add`` returns a new context; no context is ever changed once a caller can
see it. A context carries its compactor (applied after every ``add``), its
token counter and its generation window, and reads as a sequence of its
components.

How a node holds its history (a slice of a buffer shared with its
neighbours), builds a compacted sibling, and keeps its token totals lazy is
the storage in ``nodes.py``; this module is the public API on top of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Final, TypeVar

from .boundaries import (
    is_tool_result,
    pin_end,
    prefix_end,
    thinking_loop_start,
    turn_start,
    window_cut,
)
from .checks import require_int, require_method
from .components import Component, ModelOutputThunk
from .exceptions import (
    CompactionError,
    InvalidArgumentError,
    InvalidComponentError,
    NotInlineCompactorError,
)
from .nodes import Lazy, Node, bound_is_proven, inherit_attributes, lazy_lock, require_components
from .pins import PinPredicate, is_prefix_stable, pin_react_initiator, pin_system
from .protocols import InlineCompactor, compact_inline
from .reprs import short_repr
from .tokens import TokenCounter, default_counter

# A failure backoff doubles with each consecutive failed inline compaction, this many times.
_BACKOFF_DOUBLINGS = 4
_C = TypeVar("_C", bound="ChatContext")


class ChatContext(Node):
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

    __slots__ = ()

    _previous: ChatContext | Lazy | None
    #: Whether ``from_previous`` is ours, so the node ``add`` gets from it is new
    #: and unseen (a subclass may override it and return anything).
    _builds_fresh: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._builds_fresh = cls.from_previous.__func__ is ChatContext.from_previous.__func__  # type: ignore[attr-defined]

    def __init__(
        self,
        *,
        compactor: InlineCompactor | None = None,
        window_size: int | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        _check_compactor("ChatContext", compactor, window_size)
        if window_size is not None:
            fix = "pass None to show the whole history"
            require_int("ChatContext", "window_size", window_size, fix=fix)
        fix = "pass a TokenCounter such as TiktokenCounter()"
        require_method(
            "ChatContext", "counter", counter, "count(component)", optional=True, fix=fix
        )
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
        compactor, the counter, the window size, the running aggregates, the
        failure backoff (one add fewer to wait, see
        :attr:`compaction_backoff`) and a subclass's own instance attributes.
        ``previous`` is not modified. To build a context with a whole new
        history (a custom compactor's result), use :meth:`with_history`.
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
        if isinstance(data, ModelOutputThunk) and data.usage is not None:  # subclasses too
            node._usage = data.usage.total_tokens
        else:
            node._usage = previous._usage
        loose = previous._loose
        if not loose and data.tool_call_id is not None:
            before = previous._data  # always the last component of ``previous``
            loose = before is None or not (before.tool_calls or is_tool_result(before))
        node._loose = loose
        if cls.__dictoffset__:  # a subclass with its own attributes
            inherit_attributes(node, previous)
        return node

    def add(self, component: Component) -> ChatContext:
        """Return a new context with ``component`` appended, then compacted.

        ``self`` is not modified. When this context carries a compactor, the
        result is what the compactor made of the extended context, and it
        carries the compactor too.

        Raises:
            InvalidComponentError: When ``component`` is not a ``Component``.
            CompactionError: When the carried compactor returns something
                that is not a ``ChatContext``.

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
        cls = type(self)
        node = cls.from_previous(self, component)
        compactor = self._compactor
        if compactor is None or self._hold:
            return node  # no compactor, or backing off after a failed compaction
        cut = compactor._cut
        if cut is not None and cls._builds_fresh:  # a pure cut: one node per add, not two
            span = cut(compactor, node)
            if span is None:
                return node
            lo, hi = span
            return node._replace_fresh(lo, hi)
        result = compact_inline(compactor, node)
        if not isinstance(result, ChatContext):
            msg = (
                f"ChatContext.add: compactor={compactor!r} returned {short_repr(result)} "
                "instead of a ChatContext; its compact() must return a context "
                "(ctx itself when nothing needs compacting)"
            )
            raise CompactionError(msg)
        if result is not node and result._compactor is not compactor:
            result = result._with(compactor=compactor)
        return result

    def with_history(self: _C, components: Iterable[Component]) -> _C:
        """Return a context like this one that holds ``components`` as its history.

        How a custom compactor builds its result: the same type (a subclass
        stays one, its own attributes copied), counter, ``window_size`` and
        compactor, and exactly ``components`` as history. The compactor is not
        run; the usage reading and any failure backoff are dropped, as after
        any compaction. ``self`` is not modified. (mellea's examples use the
        private ``_rebuild_chat_context(items, compactor=...)`` for this.)

        Args:
            components: The new history, oldest first; it is copied.

        Returns:
            A new context, or an empty root when ``components`` is empty.

        Raises:
            InvalidComponentError: When an item of ``components`` is not a ``Component``.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ctx = ChatContext(window_size=8).add(Message("user", "a")).add(Message("user", "b"))
            >>> shorter = ctx.with_history(ctx.as_list()[1:])
            >>> [c.content for c in shorter], shorter.window_size, len(ctx)
            (['b'], 8, 2)
        """
        return self._holding(components)

    def new_instance(self: _C) -> _C:
        """Return an empty root with this context's type, compactor, counter and window.

        As mellea's ``new_instance``: a fresh conversation, same configuration.

        Examples:
            >>> from mellea_ctx import ChatContext, Message, WindowCompactor
            >>> ctx = ChatContext(compactor=WindowCompactor(size=4)).add(Message("user", "hi"))
            >>> fresh = ctx.new_instance()
            >>> len(fresh), fresh.is_root_node, fresh.compactor is ctx.compactor
            (0, True, True)
        """
        return self.with_history(())

    @classmethod
    def reset_to_new(cls: type[_C]) -> _C:
        """Return ``cls()``, an empty root with no configuration, as mellea's ``reset_to_new``.

        Use :meth:`new_instance` to keep this context's compactor, counter and window.

        Examples:
            >>> from mellea_ctx import ChatContext, WindowCompactor
            >>> ChatContext(compactor=WindowCompactor(size=4)).reset_to_new().compactor is None
            True
        """
        return cls()

    def with_compactor(self: _C, compactor: InlineCompactor | None) -> _C:
        """Return a copy of this context that carries ``compactor`` (``None``: none).

        The history, counter, token total and everything else are the same;
        only the compactor later adds run changes (it is not run now). What a
        compactor that runs others (tiers, a gate) uses to hand back a result
        carrying the compactor its input carried. ``self`` is not modified.

        Raises:
            InvalidArgumentError: When this context has a ``window_size`` and
                ``compactor`` is not ``None``.
            NotInlineCompactorError: When ``compactor`` is not an ``InlineCompactor``.

        Examples:
            >>> from mellea_ctx import ChatContext, Message, WindowCompactor
            >>> ctx = ChatContext().add(Message("user", "hi"))
            >>> window = WindowCompactor(size=4)
            >>> ctx.with_compactor(window).compactor is window, ctx.compactor
            (True, None)
        """
        _check_compactor("ChatContext.with_compactor", compactor, self._window_size)
        return self._with(compactor=compactor)

    def _with(self: _C, *, compactor: InlineCompactor | None) -> _C:
        """Return a copy of this node that carries ``compactor``."""
        node = self._copy()
        node._previous = self._previous
        node._compactor = compactor
        return node

    def replace_span(self: _C, lo: int, hi: int, replacement: Iterable[Component] = ()) -> _C:
        """Return a context whose history is ``self[:lo] + replacement + self[hi:]``.

        The building block of a compactor: drop a span (``replacement`` empty)
        or swap it for something smaller (a summary, cleared tool results).
        The result is what :meth:`with_history` would build from that list,
        and cheaper: the same type (a subclass's own attributes copied),
        counter, ``window_size`` and compactor; ``self[:lo]`` kept as the
        very same objects; the token total carried over (only ``replacement``
        and the removed span are counted, and only when the total is known);
        dropping the oldest body components (``lo`` at the end of the prefix
        an earlier compaction kept, ``replacement`` empty) costs O(1). The
        compactor is not run; the usage reading and any failure backoff are
        dropped, as after any compaction. A tool result left detached from its
        call is noticed (:attr:`has_detached_results`). ``self`` is not modified.

        Args:
            lo: Start of the span, ``0 <= lo <= hi``.
            hi: End of the span (exclusive), ``hi <= len(self)``.
            replacement: Components to put in its place, oldest first.

        Returns:
            A new context (even when the span is empty and nothing replaces it).

        Raises:
            InvalidArgumentError: When ``[lo:hi]`` is not a span of this context.
            InvalidComponentError: When an item of ``replacement`` is not a ``Component``.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ctx = ChatContext()
            >>> for text in ["a", "b", "c", "d"]:
            ...     ctx = ctx.add(Message("user", text))
            >>> shorter = ctx.replace_span(1, 3, [Message("user", "b+c")])
            >>> [c.content for c in shorter], len(ctx)
            (['a', 'b+c', 'd'], 4)
        """
        items = replacement if isinstance(replacement, (tuple, list)) else list(replacement)
        if items:  # a drop (the window's cut) has nothing to check
            where = "ChatContext.replace_span: replacement"
            require_components(items, where, "wrap text as Message('user', text)")
        if lo.__class__ is not int or hi.__class__ is not int:
            msg = (
                f"ChatContext.replace_span: lo={lo!r} and hi={hi!r} must be ints, "
                f"0 <= lo <= hi <= {len(self)}"
            )
            raise InvalidArgumentError(msg)
        return self._replace(lo, hi, items)

    def with_backoff(self: _C, adds: int) -> _C:
        """Return a copy of this context that starts a failure backoff of ``adds`` adds.

        What an inline compactor returns when a compaction that called a model
        failed (or changed nothing): the copy counts one more consecutive
        failure, and the next ``adds * 2**k`` adds built on it (``k`` earlier
        consecutive failures, ``k`` at most 4) do not run the compactor; see
        :attr:`compaction_backoff`. Pass ``inline_backoff(self.backoff_adds)``
        (:func:`~mellea_ctx.inline_backoff`), so that a ``compact`` call of the
        user's own, outside ``add``, never waits. ``self`` is not modified.

        Args:
            adds: Adds to wait, an int ``>= 0``; ``0`` returns ``self`` (try
                again on the next add).

        Raises:
            InvalidArgumentError: When ``adds`` is not an int ``>= 0``.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ctx = ChatContext().add(Message("user", "hi"))
            >>> ctx.with_backoff(4).compaction_backoff, ctx.with_backoff(0) is ctx
            (4, True)
        """
        fix = "pass 0 to try again on the next add"
        require_int("ChatContext.with_backoff", "adds", adds, fix=fix)
        if adds == 0:
            return self
        node = self._copy()
        node._hold = adds * 2 ** min(self._failures, _BACKOFF_DOUBLINGS)
        node._failures = self._failures + 1
        return node

    def window_span(
        self, size: int, pin_predicate: PinPredicate = pin_system
    ) -> tuple[int, int] | None:
        """Return ``(p, k)``: the span a window of ``size`` body components drops.

        ``p`` is the end of the prefix ``pin_predicate`` protects; ``self[k:]``
        is the last ``size`` components after it, widened to the nearest safe
        cut (a tool exchange, and a continuing thinking loop, is kept whole).
        ``None`` when nothing would be dropped. What
        :class:`~mellea_ctx.WindowCompactor` drops (its ``compact`` is
        ``ctx.replace_span(*span)``), computed without a call per component.

        Args:
            size: Body components to keep, an int ``>= 0`` (not checked here:
                a compactor checks its settings once, at construction).
            pin_predicate: Where the protected prefix ends.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ctx = ChatContext().add(Message("system", "Be brief."))
            >>> for text in ["a", "b", "c"]:
            ...     ctx = ctx.add(Message("user", text))
            >>> ctx.window_span(1)
            (1, 3)
        """
        head, buf, start, end = self._head, self._buf, self._start, self._end
        n = len(head) + end - start
        if n <= size:
            return None
        if self._loose or size == 0:
            p, k = window_cut(self, size, pin_predicate, loose=self._loose)
        else:
            # The per-add path of an inline window, kept free of calls: in a
            # contiguous history a cut before ``k`` is unsafe exactly when the
            # component at ``k`` is a tool result (see boundaries.py).
            p = n
            if is_prefix_stable(pin_predicate):
                # Its answer on the first few components holds for the whole
                # history as long as it stops short of their end.
                front = [*head, *buf[start : start + 2]]
                p = _front_end(front, pin_predicate)
                if p >= len(front):
                    p = n
            if p == n:
                p = prefix_end(self, pin_predicate)
            k = n - size
            hl = len(head)
            while k > p and (head[k] if k < hl else buf[start + k - hl]).tool_call_id is not None:
                k -= 1
            last = buf[end - 1] if end > start else head[-1]
            # A continuing thinking loop is kept from its first step; a loop
            # continues only while the history ends in a tool call or result.
            if k > p and (last.tool_calls or last.tool_call_id is not None):
                loop = thinking_loop_start(self)
                if loop is not None and k > loop:
                    k = loop
        if k <= p:
            return None
        return p, k

    # -- reading --------------------------------------------------------------

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
        require_int("as_list", "last_n_components", last_n_components, also="None")
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
        if not isinstance(previous, Lazy):
            return previous
        with lazy_lock:
            if isinstance(self._previous, Lazy):
                self._previous = self._shrunk()
            return self._previous

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
        return self._token_total()

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

    def token_bound(self) -> int:
        """A cheap upper bound of :attr:`token_count`: never under it.

        For a trigger that only needs "under the threshold or not": while the
        bound is at or under it, so is the exact total, and nothing was
        encoded to know it. With a counter that has a ``bound(component)``
        method (:class:`~mellea_ctx.TiktokenCounter` has one: UTF-8 bytes
        plus its framing, as a token never spans less than a byte) the bound
        is carried from node to node in O(1) per add, like the total, and
        starts from the exact total of the nearest earlier context that knows
        it (right after a compaction, this one). With a counter that has no
        ``bound`` (or inherits one written for a parent's ``count``), it is
        the exact total. Read :attr:`token_count` when the bound is over.

        Examples:
            >>> from mellea_ctx import ChatContext, Message
            >>> ctx = ChatContext().add(Message("user", "Hello there"))
            >>> ctx.token_bound() >= ctx.token_count
            True
        """
        bound = self._bound
        if bound is not None:
            return bound
        counter = self._counter
        measure = getattr(counter, "bound", None) if bound_is_proven(type(counter)) else None
        if measure is None:
            tokens = self._tokens
            return tokens if tokens is not None else self._token_total()
        pending: list[Node] = []
        node: Node = self
        while node._bound is None and node._tokens is None and node._linked:
            pending.append(node)
            previous = node._previous
            assert isinstance(previous, Node)
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
    def has_detached_results(self) -> bool:
        """Whether a tool result in the history may stand apart from its call.

        ``False`` guarantees that every tool result directly follows an
        assistant tool call or another tool result (a contiguous history),
        so a cut before a component is unsafe exactly when that component is
        a tool result: a compactor may then skip building a safe-cut table
        (:func:`window_cut`'s ``loose=False``). ``True`` when a result was
        added, or a compaction left one, after something that is neither;
        it is kept through later compactions (a conservative answer), and
        :meth:`with_history` works it out afresh.

        Examples:
            >>> from mellea_ctx import ChatContext, Message, ToolMessage
            >>> ChatContext().add(Message("user", "hi")).has_detached_results
            False
            >>> ChatContext().add(ToolMessage("42", tool_call_id="c1")).has_detached_results
            True
        """
        return self._loose

    @property
    def last_usage_tokens(self) -> int | None:
        """``total_tokens`` of the newest model usage seen since the last compaction.

        ``None`` before any ``ModelOutputThunk`` with usage was added, and
        again right after a compaction, because a figure reported for the
        longer history no longer describes this one.
        """
        return self._usage

    def __repr__(self) -> str:
        tokens = "?" if self._tokens is None else str(self._tokens)
        return (
            f"<{type(self).__name__} components={len(self)} tokens={tokens} "
            f"compactor={self._compactor!r}>"
        )


def _check_compactor(owner: str, compactor: object, window_size: int | None) -> None:
    """Refuse a compactor that may not ride in a context (with ``window_size``, or not inline)."""
    if compactor is not None and window_size is not None:
        msg = (
            f"{owner}: compactor={compactor!r} and window_size={window_size!r} "
            "cannot be combined; use compactor=WindowCompactor(size=...) alone"
        )
        raise InvalidArgumentError(msg)
    if compactor is not None and not isinstance(compactor, InlineCompactor):
        msg = (
            f"{owner}: compactor={compactor!r} is not an InlineCompactor, so it may call "
            "a model on every add; gate it with ThresholdCompactor(inner, threshold=...), "
            "or call compactor.compact(ctx, backend=...) yourself between turns"
        )
        raise NotInlineCompactorError(msg)


def _front_end(front: list[Component], pin: PinPredicate) -> int:
    """``prefix_end(front, pin)``, without its calls when ``front`` ends in no tool step.

    ``front`` is a stable pin's first few components. Unless it ends in a tool
    call or result, no thinking loop runs in it, so a cut before ``front[end]``
    is unsafe exactly when that is a tool result (``boundaries._safe``).
    """
    last = front[-1]
    if last.tool_calls or last.tool_call_id is not None:
        return prefix_end(front, pin)
    end = pin_end(front, pin)
    n = len(front)
    while end < n and front[end].tool_call_id is not None:
        end += 1
    return end


_DEFAULT_COUNTER: Final = default_counter()
