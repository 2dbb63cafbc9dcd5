"""ClearToolResultsCompactor: the cheapest tier, old tool results replaced by placeholders.

In an agent's history most tokens are tool results the model read turns ago
(file contents, logs, search hits). Clearing them keeps every call and its
pairing: each cleared result becomes a :class:`~mellea_ctx.ClearedToolResult`
that answers the same call id and names the tool, the id and the size that
went, so the model knows what it had and can call again. No model runs, so
it rides inline.

Every clearing changes the prompt prefix from the first cleared result on,
and the provider's prompt cache has to be written again from there. So it
clears nothing unless at least ``min_clear_tokens`` would go, and it clears
all eligible results at once (rather than one per turn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import attrs

from .._core.boundaries import prefix_end
from .._core.checks import require_callable, require_int
from .._core.cleared import ClearedToolResult
from .._core.components import Component, ToolMessage
from .._core.exceptions import InvalidArgumentError
from .._core.pins import PinPredicate, pin_system
from .._core.protocols import CompactCall, InlineCompactor
from .._core.tokens import count_memoized
from .records import Outcome, RecordHook, emit_record, record_between, wants_records
from .window import validate_pin

if TYPE_CHECKING:
    from .._core.context import ChatContext


def open_exchange_start(items: list[Component]) -> int:
    """Return where a trailing exchange still waiting for results begins (``len(items)``: none).

    Examples:
        >>> from mellea_ctx import Message, ToolCall
        >>> calling = Message("assistant", "", tool_calls=[ToolCall("c1", "ls", "{}")])
        >>> open_exchange_start([Message("user", "hi"), calling])
        1
    """
    n = len(items)
    for index in range(n - 1, -1, -1):
        calls = items[index].tool_calls
        if calls:
            answered = {c.tool_call_id for c in items[index + 1 :]}
            return index if any(call.id not in answered for call in calls) else n
    return n


def _non_negative(name: str, value: object) -> int:
    return require_int("ClearToolResultsCompactor", name, value)


def _names(value: Iterable[str] | str) -> frozenset[str]:
    """``keep_tools`` as a frozen set: one name, or any iterable of tool names."""
    if isinstance(value, str):
        return frozenset({value})  # one name, not its letters
    if not isinstance(value, Iterable):
        msg = (
            f"ClearToolResultsCompactor: keep_tools={value!r} must be tool names (a str, or a "
            "list or set of str); pass keep_tools={'memory'} to keep the memory tool's results"
        )
        raise InvalidArgumentError(msg)
    return frozenset(value)


class ClearingCompactor(InlineCompactor):
    """The base of the compactors that clear tool results (:func:`apply_clearing`).

    A subclass says which results to clear (``clearing``: index to note) and
    has ``min_clear_tokens`` and ``on_record``; the clearing, its threshold
    and its record are decided here, once.
    """

    __slots__ = ()

    #: The record's strategy: the compactor's class name.
    strategy: ClassVar[str]
    min_clear_tokens: int
    on_record: RecordHook | None

    def clearing(self, ctx: ChatContext) -> Mapping[int, str | None]:
        """Return the indices of the tool results to clear in ``ctx``, each with its note."""
        raise NotImplementedError

    def steps(self, call: CompactCall) -> ChatContext:
        """Return ``ctx`` with :meth:`clearing`'s results cleared, or ``ctx`` when not worth it.

        Returns a new context; ``ctx`` is not modified. ``backend``, ``force`` and
        ``instructions`` are unused.
        """
        return apply_clearing(
            call.ctx,
            self.clearing(call.ctx),
            min_tokens=self.min_clear_tokens,
            strategy=self.strategy,
            on_record=self.on_record,
        )


@attrs.define(frozen=True, slots=True)
class ClearToolResultsCompactor(ClearingCompactor):
    """Replace the content of old tool results with short placeholders.

    The last ``keep_last`` tool results stay whole, and so do results in the
    pinned prefix, results of the tools named in ``keep_tools``, and an
    exchange still waiting for its results. Every other tool result becomes a
    :class:`~mellea_ctx.ClearedToolResult` when that makes it smaller; if all
    of them together would save fewer than ``min_clear_tokens``, nothing is
    cleared and the very same context comes back. Each placeholder keeps the
    original (``.original``) and the context it was cleared from
    (``.restore()``), so clearing is reversible.

    It never touches anything but tool results' content: calls, order,
    pairing and every other component stay, by identity.

    Args:
        keep_last: The newest tool results to keep whole.
        min_clear_tokens: Clear only when at least this many tokens would go.
        keep_tools: Names of tools whose results are never cleared (a memory
            tool, say).
        pin_predicate: Where the protected prefix ends; see
            :func:`~mellea_ctx.pin_system`.
        on_record: Receives a :class:`~mellea_ctx.CompactionRecord` for
            each clearing (and for each one skipped as not worth it).

    Raises:
        InvalidArgumentError: For a negative or non-int count, or a pin that
            is not callable.

    Examples:
        >>> from mellea_ctx import ChatContext, Message, ToolCall, ToolMessage
        >>> ctx = ChatContext()
        >>> for i in range(3):
        ...     call = ToolCall(f"c{i}", "read_file", '{"path": "a.py"}')
        ...     ctx = ctx.add(Message("assistant", "", tool_calls=[call]))
        ...     ctx = ctx.add(ToolMessage("line\\n" * 200, tool_call_id=f"c{i}", name="read_file"))
        >>> cleared = ClearToolResultsCompactor(keep_last=1, min_clear_tokens=100).compact(ctx)
        >>> [type(c).__name__ for c in cleared if c.role == "tool"]
        ['ClearedToolResult', 'ClearedToolResult', 'ToolMessage']
        >>> cleared.token_count < ctx.token_count
        True
    """

    strategy: ClassVar[str] = "ClearToolResultsCompactor"
    keep_last: int = 3
    min_clear_tokens: int = attrs.field(default=1_024, kw_only=True)
    keep_tools: frozenset[str] = attrs.field(default=frozenset(), kw_only=True, converter=_names)
    pin_predicate: PinPredicate = attrs.field(default=pin_system, kw_only=True)
    on_record: RecordHook | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        _non_negative("keep_last", self.keep_last)
        _non_negative("min_clear_tokens", self.min_clear_tokens)
        if not all(isinstance(name, str) for name in self.keep_tools):
            msg = (
                f"ClearToolResultsCompactor: keep_tools={sorted(map(repr, self.keep_tools))} "
                "must hold tool names (str)"
            )
            raise InvalidArgumentError(msg)
        validate_pin("ClearToolResultsCompactor", self.pin_predicate)
        require_callable("ClearToolResultsCompactor", "on_record", self.on_record, optional=True)

    def clearable(self, ctx: ChatContext) -> list[int]:
        """Return the indices of the tool results this compactor would clear in ``ctx``."""
        items = ctx.as_list()
        p = prefix_end(items, self.pin_predicate)
        stop = open_exchange_start(items)
        results = [i for i, c in enumerate(items) if c.role == "tool" and c.tool_call_id]
        old = results[: max(len(results) - self.keep_last, 0)]
        names = _tool_names(items)
        return [
            i
            for i in old
            if p <= i < stop and type(items[i]) is ToolMessage and names[i] not in self.keep_tools
        ]

    def clearing(self, ctx: ChatContext) -> dict[int, str | None]:
        """Return what :meth:`ClearingCompactor.steps` clears: :meth:`clearable`, no notes."""
        return dict.fromkeys(self.clearable(ctx))


def _tool_names(items: Sequence[Component]) -> dict[int, str | None]:
    """Each tool result's tool name: its own, else the closest earlier call's (one pass).

    Histories read from OpenAI's format (and LangChain's ``ToolMessage`` without
    ``name=``) name the tool only in the call.
    """
    called: dict[str, str] = {}
    names: dict[int, str | None] = {}
    for index, component in enumerate(items):
        for call in component.tool_calls:
            called[call.id] = call.name
        if component.role == "tool":
            names[index] = component.name or called.get(component.tool_call_id or "")
    return names


def apply_clearing(
    ctx: ChatContext,
    notes: Mapping[int, str | None],
    *,
    min_tokens: int,
    strategy: str,
    on_record: RecordHook | None,
) -> ChatContext:
    """Return ``ctx`` with the tool results at ``notes``' indices cleared, if worth it.

    Each becomes a :class:`~mellea_ctx.ClearedToolResult` (with its note) when
    that makes it smaller; if the savings together are under ``min_tokens``
    (or nothing), ``ctx`` itself comes back. Returns a new context; ``ctx`` is
    not modified.
    """
    if not notes:
        return ctx
    items = ctx.as_list()
    counter = ctx.counter
    swaps: dict[int, Component] = {}
    saved = 0
    for index, note in notes.items():
        original = items[index]
        assert isinstance(original, ToolMessage)
        size = count_memoized(counter, original)
        placeholder = ClearedToolResult.of(original, tokens=size, replaced=ctx, note=note)
        if original.extra:  # the wire keys it answers in (a custom_tool_call_output's type)
            placeholder = attrs.evolve(placeholder, extra=original.extra)
        gain = size - count_memoized(counter, placeholder)
        if gain > 0:
            swaps[index] = placeholder
            saved += gain
    if not swaps or saved < max(min_tokens, 1):
        if swaps:
            _record(strategy, on_record, ctx, ctx, "skipped", _not_worth(saved, min_tokens))
        return ctx
    lo, hi = min(swaps), max(swaps) + 1
    result = ctx.replace_span(lo, hi, [swaps.get(i, items[i]) for i in range(lo, hi)])
    _record(strategy, on_record, ctx, result, "applied", "", removed=len(swaps))
    return result


def _record(
    strategy: str,
    hook: RecordHook | None,
    before: ChatContext,
    after: ChatContext,
    outcome: Outcome,
    reason: str,
    removed: int = 0,
) -> None:
    if not wants_records(hook):
        return
    emit_record(record_between(strategy, outcome, before, after, reason, removed=removed), hook)


def _not_worth(saved: int, minimum: int) -> str:
    return (
        f"clearing would save {saved} tokens, under min_clear_tokens={minimum}; "
        "each clearing rewrites the cached prompt prefix, so it waits until it is worth it"
    )
