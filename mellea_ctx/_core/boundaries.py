"""Where a history may be cut without breaking a tool exchange.

A *cut* at index ``k`` keeps ``items[k:]`` and drops what lies before it (down
to the pinned prefix). A cut is *safe* when no tool call ends up on one side
and one of its results on the other. Concretely, for a tool exchange (an
assistant component with tool calls, followed by the results that answer
them, parallel calls included) a cut may fall before the call or after the
last result, never in between. An *open* exchange, whose calls are not all
answered yet and which ends the history, may not be cut at all: its results
are still to come and would arrive as orphans.

Every provider wants tool results right after the assistant message that
called them. In such a *contiguous* history a cut before ``items[k]`` is
unsafe exactly when ``items[k]`` is a tool result, an O(1) test. A history
where a result stands apart from its call (which no provider accepts) is
*loose*; there the answer comes from matching call ids over the whole history.

Thinking models add one rule, per tool *loop* rather than per message. While
a loop continues (the history ends in an assistant's tool calls or in their
results), Anthropic requires the loop's assistant turn to start with its
thinking block, signature intact; a model writes thinking on the loop's first
step (or, with interleaved thinking, on every step). So when an assistant step
of that trailing loop carries thinking (:class:`~mellea_ctx.ThinkingPart` or
``RedactedThinkingPart``), no cut may fall after the loop's last step with
thinking: a compactor keeps that step and everything after it unchanged,
so the kept loop starts with its thinking (OpenAI's Responses reasoning
items and DeepSeek's ``reasoning_content`` are thinking parts too). Closed loops, answered by
a final message, have no such constraint: the provider ignores or strips
their thinking. :func:`thinking_loop_start` finds the protected step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .components import Component
from .exceptions import InvalidArgumentError
from .parts import RedactedThinkingPart, ThinkingPart
from .pins import PinPredicate


def is_tool_result(component: Component) -> bool:
    """Return whether ``component`` answers a tool call."""
    return component.tool_call_id is not None


def _trailing_exchange_is_open(items: Sequence[Component]) -> bool:
    """Return whether the history ends in an exchange still waiting for results."""
    answered: set[str] = set()
    index = len(items) - 1
    while index >= 0 and is_tool_result(items[index]):
        call_id = items[index].tool_call_id
        assert call_id is not None
        answered.add(call_id)
        index -= 1
    if index < 0:
        return False
    calls = items[index].tool_calls
    return bool(calls) and any(call.id not in answered for call in calls)


def has_thinking(component: Component) -> bool:
    """Return whether ``component`` carries thinking (plain or redacted)."""
    return any(type(part) in _THINKING for part in component.parts)


_THINKING = (ThinkingPart, RedactedThinkingPart)


def thinking_loop_start(items: Sequence[Component]) -> int | None:
    """Return the last step of the continuing tool loop that carries thinking, if any.

    The continuing loop is the run of assistant steps with tool calls and of
    tool results that ends the history (after the last user input or final
    answer). Its thinking goes back to the provider, and the kept part of the
    loop must start with a step that has it (Anthropic refuses one that does
    not). A model writes thinking on the loop's first step, or on every step
    (interleaved thinking, OpenAI's reasoning items, DeepSeek's
    ``reasoning_content``), so no cut may fall after the step returned here:
    for a model that thinks once that keeps the whole loop, and a long loop of
    a model that thinks on every step can still lose its earlier steps to a
    summary. Returns ``None`` when the loop has no thinking. Costs the length
    of the loop.

    Examples:
        >>> from mellea_ctx import Message, ModelOutputThunk, ToolCall, ToolMessage
        >>> from mellea_ctx._core.parts import ThinkingPart
        >>> step = ModelOutputThunk(
        ...     parts=(ThinkingPart("plan", signature="sig"),),
        ...     tool_calls=(ToolCall("c1", "ls", "{}"),),
        ... )
        >>> thinking_loop_start([Message("user", "go"), step, ToolMessage("a", tool_call_id="c1")])
        1
    """
    index = len(items) - 1
    while index >= 0:
        component = items[index]
        if component.tool_calls and component.role == "assistant":
            if has_thinking(component):
                return index
        elif not is_tool_result(component):
            return None  # a user input or a final answer: the loop starts after it
        index -= 1
    return None


def safe_cut_table(items: Sequence[Component]) -> list[bool]:
    """Return ``table`` with ``table[k]`` true when a cut at ``k`` is safe, for 0 <= k <= n.

    Works on any history, loose ones included, by matching call ids: O(n).
    A continuing thinking loop (:func:`thinking_loop_start`) is kept whole.
    """
    n = len(items)
    reach = list(range(n))  # reach[c]: the last index that must stay with index c
    call_at: dict[str, int] = {}
    for index, component in enumerate(items):
        for call in component.tool_calls:
            call_at[call.id] = index
        call_id = component.tool_call_id
        if call_id is not None and call_id in call_at:
            origin = call_at[call_id]
            if reach[origin] < index:
                reach[origin] = index
    if n and _trailing_exchange_is_open(items):
        last_call = n - 1
        while is_tool_result(items[last_call]):
            last_call -= 1
        reach[last_call] = n
    loop = thinking_loop_start(items)
    if loop is not None:
        reach[loop] = n
    table = [True] * (n + 1)
    furthest = -1
    for k in range(n + 1):
        if furthest >= k:
            table[k] = False
        if k < n and reach[k] > furthest:
            furthest = reach[k]
    return table


class _Scan:
    """The default of ``is_safe_cut(loop=...)``: find the trailing loop here."""

    __slots__ = ()


_SCAN: Final = _Scan()


def is_safe_cut(
    items: Sequence[Component],
    k: int,
    table: list[bool] | None,
    *,
    loop: int | _Scan | None = _SCAN,
) -> bool:
    """Return whether a cut at ``k`` is safe; pass ``safe_cut_table(items)`` for a loose history.

    Without a table it costs O(1) plus, for a cut that is not before a tool
    result, the length of the trailing tool loop (the thinking rule), unless
    ``loop`` passes :func:`thinking_loop_start` of ``items`` along: a caller
    testing many cuts of one history finds it once (testing each cut with a
    fresh scan was quadratic on a long agent loop).
    """
    n = len(items)
    if table is not None:
        return table[k]
    if k < n and is_tool_result(items[k]):
        return False
    if isinstance(loop, _Scan):
        loop = thinking_loop_start(items)
    return _safe(items, n, k, None, loop)


def _safe(
    items: Sequence[Component],
    n: int,
    k: int,
    table: list[bool] | None,
    loop: int | None,
) -> bool:
    """Whether a cut at ``k`` is safe; ``loop`` is :func:`thinking_loop_start` or ``None``."""
    if table is not None:
        return table[k]
    if loop is not None and k > loop:
        return False
    if k < n:
        return items[k].tool_call_id is None  # not a tool result
    return not _trailing_exchange_is_open(items)


def pin_end(items: Sequence[Component], pin_predicate: PinPredicate) -> int:
    """Return ``pin_predicate(items)``, checked: an int between 0 and ``len(items)``.

    Raises:
        InvalidArgumentError: When the predicate returns anything else.
    """
    end = pin_predicate(items)
    n = len(items)
    if end.__class__ is not int or not 0 <= end <= n:
        name = getattr(pin_predicate, "__name__", repr(pin_predicate))
        msg = (
            f"pin predicate {name} returned {end!r} for {n} components; "
            f"it must return an int between 0 and {n}"
        )
        raise InvalidArgumentError(msg)
    return end


def prefix_end(
    items: Sequence[Component],
    pin_predicate: PinPredicate,
    table: list[bool] | None = None,
) -> int:
    """Return the end of the protected prefix, moved forward past any split exchange.

    Raises:
        InvalidArgumentError: When the predicate returns something other than
            an int between 0 and ``len(items)``.
    """
    end = pin_end(items, pin_predicate)
    n = len(items)
    loop = None if table is not None else thinking_loop_start(items)
    while end < n and not _safe(items, n, end, table, loop):
        end += 1
    return end


def window_cut(
    items: Sequence[Component],
    size: int,
    pin_predicate: PinPredicate,
    *,
    loose: bool,
) -> tuple[int, int]:
    """Return ``(p, k)``: keep ``items[:p]`` and ``items[k:]``, drop ``items[p:k]``.

    ``p`` is the end of the protected prefix. ``k`` keeps the last ``size``
    body components, moved back to the nearest safe cut so that a tool
    exchange (and a continuing thinking loop) is kept whole: the result is
    the smallest safe superset of the last ``size``. ``k == p`` means nothing
    can be dropped.
    """
    n = len(items)
    if n <= size:
        return 0, 0  # fits even with nothing pinned: no need to ask the predicate
    table = safe_cut_table(items) if loose else None
    p = prefix_end(items, pin_predicate, table)
    if n - p <= size:
        return p, p
    k = n - size
    loop = None if table is not None else thinking_loop_start(items)
    while k > p and not _safe(items, n, k, table, loop):
        k -= 1
    return p, k


def turn_start(items: Sequence[Component]) -> int:
    """Return the index where the last user turn begins (0 when there is no user turn).

    A user turn begins at a user-role component that is not a tool result: a
    user :class:`~mellea_ctx.Message`, a :class:`~mellea_ctx.CBlock`, or a
    :class:`~mellea_ctx.ReactInitiator`.
    """
    for index in range(len(items) - 1, -1, -1):
        component = items[index]
        if component.role == "user" and not is_tool_result(component):
            return index
    return 0
