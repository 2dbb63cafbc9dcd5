"""A plain-list reference model of contexts and compaction.

Written from DESIGN.md and the compactors' documented contracts, on plain
lists and with no shortcuts, so the tests can compare the package's fast
paths (shared buffers, slice bounds, lazy totals) against something obviously
right.

Terms:

* a *tool exchange* is an assistant component with tool calls plus the
  results answering them; it *spans* from the call to its last result, or to
  the end of the history and beyond when some result is still missing (open);
* a cut at ``k`` (keep ``items[k:]``) is *safe* when no exchange spans it;
* a *thinking loop* is the run of assistant steps with tool calls and their
  results that ends the history (the loop goes on), when some step of it has
  thinking: the kept loop must start with a thinking step, so the loop spans
  from its last thinking step past any cut, like an open exchange;
* the *prefix* is where the pin predicate says, moved forward to the next
  safe cut when it falls inside an exchange;
* a summarizing compactor replaces a *span* ``items[p:k]`` (``p`` the end of
  the prefix, ``k`` a safe cut) with one checkpoint; ``k == p`` means there is
  nothing to summarize.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from mellea_ctx import (
    Checkpoint,
    Component,
    ModelOutputThunk,
    ThresholdCompactor,
    WindowCompactor,
)

__all__ = [
    "Model",
    "budget_plan",
    "compact",
    "exchange_spans",
    "model_add",
    "prefix_end",
    "replaced_count",
    "safe_cuts",
    "summarize_cut",
    "thinking_loop_first",
    "tool_pair_problems",
    "total",
    "turn_starts",
    "window_cut",
]

_OPEN = 1 << 60  # an open exchange spans past any cut


def exchange_spans(items: Sequence[Component]) -> list[tuple[int, int]]:
    """Return ``(call_index, last_result_index)`` per exchange; an open one ends at ``_OPEN``."""
    caller: dict[str, int] = {}  # call id -> index of the component that made the call
    last: dict[int, int] = {}
    waiting: dict[int, int] = {}
    for index, component in enumerate(items):
        if component.tool_calls:
            for call in component.tool_calls:
                caller[call.id] = index
            last[index] = index
            waiting[index] = len({call.id for call in component.tool_calls})
        call_id = component.tool_call_id
        if call_id is not None and call_id in caller:
            origin = caller.pop(call_id)
            last[origin] = index
            waiting[origin] -= 1
    return [(start, _OPEN if waiting[start] else end) for start, end in last.items()]


_THINKING = ("ThinkingPart", "RedactedThinkingPart")


def thinking_loop_first(items: Sequence[Component]) -> int | None:
    """Return the index of a continuing loop's last assistant step with thinking, if any.

    The loop is the longest run at the end made only of assistant steps with
    tool calls and tool results.
    """

    def in_loop(c: Component) -> bool:
        return c.tool_call_id is not None or (c.role == "assistant" and bool(c.tool_calls))

    start = len(items)
    while start > 0 and in_loop(items[start - 1]):
        start -= 1
    steps = [i for i in range(start, len(items)) if items[i].tool_calls]
    thinking = [i for i in steps if any(type(p).__name__ in _THINKING for p in items[i].parts)]
    return thinking[-1] if thinking else None


def safe_cuts(items: Sequence[Component]) -> list[bool]:
    """Return ``table[k]`` for ``0 <= k <= len(items)``: whether a cut at ``k`` is safe."""
    table = [True] * (len(items) + 1)
    spans = exchange_spans(items)
    first = thinking_loop_first(items)
    if first is not None:
        spans.append((first, _OPEN))
    for start, end in spans:
        for k in range(start + 1, min(end, len(items)) + 1):
            table[k] = False
    return table


def prefix_end(items: Sequence[Component], pin: Any) -> int:
    """Return the end of the protected prefix: the pin, moved to the next safe cut."""
    table = safe_cuts(items)
    end = pin(items)
    while end < len(items) and not table[end]:
        end += 1
    return end


def window_cut(items: Sequence[Component], size: int, pin: Any) -> tuple[int, int]:
    """Return ``(p, k)``: a window keeps ``items[:p] + items[k:]``.

    ``k`` is the largest safe cut that keeps at least ``size`` body components;
    ``k == p`` when nothing can be dropped.
    """
    p = prefix_end(items, pin)
    n = len(items)
    if n - p <= size:
        return p, p
    table = safe_cuts(items)
    return p, max(k for k in range(p, n - size + 1) if table[k] or k == p)


def total(items: Sequence[Component], counter: Any) -> int:
    """Return the token total of ``items``, asking ``counter`` itself (not the package's memo)."""
    return sum(_count(counter, c) for c in items)


@functools.lru_cache(maxsize=1 << 16)
def _count(counter: Any, component: Component) -> int:
    # Keyed by value: equal components have equal counts under a deterministic counter.
    return counter.count(component)


def compact(
    compactor: Any, items: tuple[Component, ...], usage: int | None, counter: Any
) -> tuple[Component, ...]:
    """Return what ``compactor`` keeps of ``items`` (the same tuple when it keeps all)."""
    if isinstance(compactor, WindowCompactor):
        p, k = window_cut(items, compactor.size, compactor.pin_predicate)
        return items if k == p else items[:p] + items[k:]
    if isinstance(compactor, ThresholdCompactor):
        reading = total(items, counter) if compactor.measure == "tokens" else usage
        if compactor.threshold <= 0 or reading is None or reading <= compactor.threshold:
            return items
        return compact(compactor.inner, items, usage, counter)
    msg = f"no reference for {compactor!r}"
    raise NotImplementedError(msg)


@attrs.frozen
class Model:
    """What a context should read back as: its components and its usage reading."""

    items: tuple[Component, ...] = ()
    usage: int | None = None

    def compacted(self, compactor: Any, counter: Any) -> tuple[Model, bool]:
        """Return the model after ``compactor`` and whether anything was dropped."""
        kept = compact(compactor, self.items, self.usage, counter)
        if kept is self.items:
            return self, False
        return Model(kept, None), True

    def shrunk(self) -> Model:
        """The model of a compacted context's lazily built ``previous_node``."""
        return Model(self.items[:-1], None)


def model_add(
    model: Model, component: Component, compactor: Any, counter: Any
) -> tuple[Model, Model, bool]:
    """Model ``ctx.add(component)``: return the node before compaction, the result, and
    whether the compactor dropped anything."""
    usage = model.usage
    if type(component) is ModelOutputThunk and component.usage is not None:
        usage = component.usage.total_tokens
    node = Model((*model.items, component), usage)
    if compactor is None:
        return node, node, False
    result, changed = node.compacted(compactor, counter)
    return node, result, changed


def tool_pair_problems(result: Sequence[Component], source: Sequence[Component]) -> list[str]:
    """Return what is wrong with ``result``'s tool exchanges, as ``source`` had them.

    Every result must have its call earlier; every call of an exchange that is
    closed in ``source`` must have all its results in ``result``; and an open
    exchange at the end of ``source`` must end ``result`` too, whole.
    """
    problems = []
    seen_calls: set[str] = set()
    for index, component in enumerate(result):
        seen_calls.update(call.id for call in component.tool_calls)
        call_id = component.tool_call_id
        if call_id is not None and call_id not in seen_calls:
            problems.append(f"result {call_id!r} at {index} has no call before it")
    answered = {c.tool_call_id for c in result}
    source_spans = dict(exchange_spans(source))
    for component in result:
        for call in component.tool_calls:
            start = next(i for i, c in enumerate(source) if c is component)
            if source_spans[start] != _OPEN and call.id not in answered:
                problems.append(f"call {call.id!r} of a closed exchange lost its result")
    for start, end in exchange_spans(source):
        if end == _OPEN:
            tail = list(source[start:])
            kept = list(result[len(result) - len(tail) :]) if len(result) >= len(tail) else []
            if len(tail) > len(result) or any(a is not b for a, b in zip(kept, tail, strict=True)):
                problems.append(f"the open exchange starting at {start} was not kept whole")
    return problems


def summarize_cut(items: Sequence[Component], keep_n: int, pin: Any) -> tuple[int, int]:
    """Return ``(p, k)``: the span ``LLMSummarizeCompactor`` replaces.

    Everything but the prefix and the last ``keep_n`` body components, the
    cut moved back so that no exchange is split: a window's cut. A span that
    is only an earlier checkpoint (by type, not text) has nothing new in it.
    """
    p, k = window_cut(items, keep_n, pin)
    if k - p == 1 and isinstance(items[p], Checkpoint):
        return p, p
    return p, k


def turn_starts(items: Sequence[Component], p: int, boundary: str) -> list[int]:
    """Return where turns begin after the prefix: safe cuts before user input.

    User input is a user-role component that answers no call and is not a
    checkpoint (which summarizes turns, it does not open one). With
    ``boundary="model_step"`` each assistant component also begins a turn;
    with ``"auto"``, so it does when the body holds one user turn or none.
    """
    table = safe_cuts(items)

    def starts(roles: tuple[str, ...]) -> list[int]:
        return [
            index
            for index in range(p, len(items))
            if items[index].role in roles
            and items[index].tool_call_id is None
            and not isinstance(items[index], Checkpoint)
            and table[index]
        ]

    steps = ("user", "assistant")
    found = starts(steps if boundary == "model_step" else ("user",))
    if boundary == "auto" and len(found) <= 1:  # one user turn: model steps
        found = starts(steps)
    return found


def budget_starts(
    items: Sequence[Component], p: int, counter: Any, *, boundary: str, target: int, reserve: int
) -> list[int]:
    """Return where a ``TokenBudgetCompactor``'s turns begin: :func:`turn_starts`, and with
    ``boundary="auto"`` and two user turns or more, the model steps of a current turn that
    alone (with the prefix and ``reserve``) is over ``target``."""
    starts = turn_starts(items, p, boundary)
    if boundary != "auto" or len(starts) < 2 or any(items[s].role != "user" for s in starts):
        return starts
    current = starts[-1]
    if total(items[:p], counter) + reserve + total(items[current:], counter) <= target:
        return starts
    return starts + [s for s in turn_starts(items, p, "model_step") if s > current]


def budget_plan(
    items: Sequence[Component],
    counter: Any,
    pin: Any,
    *,
    keep: int,
    target: int,
    reserve: int,
    boundary: str,
    room: Callable[[Sequence[Component], int], int] | None = None,
) -> tuple[int, int, int]:
    """Return ``(p, k, reserve)``: the span a due ``TokenBudgetCompactor`` replaces, and the
    room it reserved for the checkpoint when it last folded.

    Keep the most recent ``keep`` tokens, widened back to the start of the
    turn that holds the cut; then, while the estimate (prefix, ``reserve``
    for the summary, what is kept) is above ``target``, fold the next turn
    into the summary, down to the current turn, which is never split. With
    ``boundary="auto"`` and two user turns or more, a current turn that alone
    is over the target (with the prefix and ``reserve``) is cut at its model
    steps, as a body of one user turn always is.
    With ``room`` (the compactor sizes its checkpoint: ``room(span, cap)`` is
    what the span's ledger needs within ``cap``), the reserve becomes that
    room, at least ``reserve`` and at most what the target leaves beside the
    current turn, and the fold runs again for it, twice at most.
    """
    p = prefix_end(items, pin)
    starts = budget_starts(items, p, counter, boundary=boundary, target=target, reserve=reserve)
    prefix = total(items[:p], counter)
    if not starts or starts[-1] <= p:
        return p, p, reserve
    cut, kept = len(items), 0
    while cut > p and kept < keep:
        cut -= 1
        kept += _count(counter, items[cut])
    kept_from = max((s for s in starts if s <= cut), default=p)

    def fold(size: int) -> int:
        for start in [kept_from, *(s for s in starts if s > kept_from)]:
            if prefix + size + total(items[start:], counter) <= target:
                return start
        return starts[-1] if starts[-1] > kept_from else kept_from

    k = fold(reserve)
    used = reserve
    if room is not None and k > p:
        most = max(target - prefix - total(items[starts[-1] :], counter), 1)
        for _ in range(2):
            used = max(reserve, min(room(items[p:k], most), most))
            widened = fold(used)
            if widened == k:
                break
            k = widened
    if k <= p or (k - p == 1 and isinstance(items[p], Checkpoint)):
        return p, p, used
    return p, k, used


def replaced_count(span: Sequence[Component]) -> int:
    """Return how many original messages ``span`` stands for: a checkpoint its own count."""
    return sum(c.replaced_count if isinstance(c, Checkpoint) else 1 for c in span)
