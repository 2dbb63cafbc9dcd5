"""TieredCompactor: cheap compactions first, the summary as the last resort.

Past its trigger, a :class:`TieredCompactor` runs its tiers in order, each on
what the previous one left, and stops at the first result at or under its
target: clearing old tool results costs no model call and often suffices; a
summary runs only when it does not. Since each tier builds on the last, a
summary that does run summarizes the cleared history (cheaper to send), and
the placeholders it folds in still hold their originals (the checkpoint's
``span`` keeps them).

One :class:`~mellea_ctx.CompactionRecord` says which tier's result was kept
(``tier``, its index) and whether the target was met (``over_target``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._core.checks import require_callable, require_int, require_method
from .._core.exceptions import InvalidArgumentError
from .._core.protocols import CompactCall, Compaction, Compactor, InlineCompactor, Steps
from .._core.tool_tokens import request_overhead
from .budget import Window, resolve_budget
from .records import Outcome, RecordHook, emit_record, record_between

if TYPE_CHECKING:
    from .._core.context import ChatContext
    from .planner import CompactionPlanner


class TieredCompactor(InlineCompactor):
    """Try each compactor in order; keep the first result at or under ``target_tokens``.

    Nothing runs until the context is past ``max_tokens`` (or ``force``).
    Then each tier runs on the previous tier's result, forced past its own
    trigger (``force=True``, and ``instructions`` when given: see
    :func:`~mellea_ctx.compact_with`), and the first result at or under
    ``target_tokens`` is kept.
    When none gets there, the last result is kept and reported
    ``over_target=True``. Put the summary last. Forced (``react`` after the
    provider said the request is too long, or the model's
    ``compact_context``), a context already under the target still goes on
    to the first tier that changes it.

    Budgets are token counts, or fractions of a model's window: with
    ``window="gpt-4o"`` (or a token count), ``max_tokens=0.8`` compacts at
    80% of it and ``target_tokens=0.5`` aims at half. ``reserve_tokens``
    (tool definitions, the answer's room) counts against both.

    Riding inline, it calls a model only when the cheap tiers fall short, and
    only past ``max_tokens``.

    Args:
        tiers: The compactors, cheapest first.
        max_tokens: The trigger: tokens, or a fraction of ``window``.
        target_tokens: Where to aim (default: ``max_tokens``).
        window: The model's context window, in tokens or as a model name
            known to :func:`~mellea_ctx.context_window`; needed for fractions.
        reserve_tokens: Tokens each request carries besides the history.
        on_record: Receives one record per compaction that ran.
        planner: A :class:`~mellea_ctx.CompactionPlanner`: ``max_tokens`` becomes
            the hard limit, and below it the planner compacts when that is
            cheaper (priced with the last tier's summary size and request mode).

    Raises:
        InvalidArgumentError: For no tiers, a tier without ``compact``, or a
            bad budget.

    Examples:
        >>> from mellea_ctx import ClearToolResultsCompactor, WindowCompactor
        >>> tiers = TieredCompactor(
        ...     [ClearToolResultsCompactor(keep_last=2), WindowCompactor(size=20)],
        ...     max_tokens=0.8, target_tokens=0.5, window=128_000,
        ... )
        >>> tiers.max_tokens, tiers.target_tokens
        (102400, 64000)
    """

    def __init__(
        self,
        tiers: Iterable[Compactor],
        *,
        max_tokens: float,
        target_tokens: float | None = None,
        window: Window = None,
        reserve_tokens: int = 0,
        on_record: RecordHook | None = None,
        planner: CompactionPlanner | None = None,
    ) -> None:
        owner = "TieredCompactor"
        if callable(getattr(tiers, "compact", None)) or not isinstance(tiers, Iterable):
            msg = (
                f"{owner}: tiers={tiers!r} must be a list of compactors, cheapest first; "
                f"pass TieredCompactor([{type(tiers).__name__}(...)], ...) for one tier"
            )
            raise InvalidArgumentError(msg)
        self.tiers: tuple[Compactor, ...] = tuple(tiers)
        if not self.tiers:
            msg = f"{owner}: tiers=() is empty; pass compactors, cheapest first"
            raise InvalidArgumentError(msg)
        fix = "pass compactors such as ClearToolResultsCompactor() or TokenBudgetCompactor(...)"
        for index, tier in enumerate(self.tiers):
            require_method(owner, f"tiers[{index}]", tier, "compact()", fix=fix)
        self.max_tokens = resolve_budget(owner, "max_tokens", max_tokens, window)
        target = max_tokens if target_tokens is None else target_tokens
        self.target_tokens = resolve_budget(owner, "target_tokens", target, window)
        if self.target_tokens > self.max_tokens:
            msg = (
                f"{owner}: target_tokens={target!r} ({self.target_tokens} tokens) is above "
                f"max_tokens={max_tokens!r} ({self.max_tokens} tokens); aim at or below the trigger"
            )
            raise InvalidArgumentError(msg)
        self.reserve_tokens = require_int(owner, "reserve_tokens", reserve_tokens, unit="tokens")
        require_callable(owner, "on_record", on_record, optional=True)
        self.on_record = on_record
        self.planner = planner

    def size(self, ctx: ChatContext) -> int:
        """Return what a request with ``ctx`` costs: its tokens, ``reserve_tokens``, and the
        tool definitions ``react`` is about to send (:data:`request_overhead`)."""
        return ctx.token_count + self.reserve_tokens + request_overhead.get()

    def due(self, ctx: ChatContext) -> bool:
        """Return whether ``ctx`` is past the trigger (with a ``planner``: whether it pays)."""
        if self.planner is None:
            return self.size(ctx) > self.max_tokens
        last = self.tiers[-1]  # the summarizing tier: its summary size and request mode
        settings = getattr(last, "settings", None)
        return self.planner.due(
            ctx,
            size=self.size(ctx),
            limit=self.max_tokens,
            target=self.target_tokens,
            summary_tokens=getattr(last, "summary_tokens", self.target_tokens // 8),
            request=getattr(settings, "request", "quoted"),
            pin=getattr(settings, "pin_predicate", None),
        )

    def steps(self, call: CompactCall) -> Steps:
        """The tier loop (past ``max_tokens``, or ``force``: :class:`~mellea_ctx.BaseCompactor`).

        Each tier runs forced, on what the previous one left, outside the
        inline backoff; ``instructions`` (a focus) reaches every tier that
        takes it, and ``acompact`` awaits each tier's ``acompact`` when it has
        one. Returns a new context (or ``ctx``); ``ctx`` is not modified.
        """
        ctx = call.ctx
        forced = call._replace(force=True)
        current, kept = ctx, None
        for index, tier in enumerate(self.tiers):
            result = yield Compaction(tier, forced._replace(ctx=current), alone=True)
            if result is not current:
                current, kept = result, index
            if self._reached(current, kept, call.force):
                break
        return self._settle(ctx, current, kept)

    def _reached(self, current: ChatContext, kept: int | None, force: bool) -> bool:
        """Whether to stop: at or under the target (forced: once a tier changed something)."""
        return self.size(current) <= self.target_tokens and (kept is not None or not force)

    def _settle(self, ctx: ChatContext, result: ChatContext, kept: int | None) -> ChatContext:
        over = self.size(result) > self.target_tokens
        outcome: Outcome
        if kept is None:
            outcome, reason = "skipped", "no tier could make the context smaller"
        else:
            outcome = "applied"
            name = type(self.tiers[kept]).__name__
            reason = (
                f"tier {kept} ({name}) brought {self.size(ctx)} tokens to {self.size(result)}, "
                + ("still over" if over else "at or under")
                + f" the target of {self.target_tokens}"
            )
        if ctx.compactor is not None and result.compactor is not ctx.compactor:
            result = result.with_compactor(ctx.compactor)
        record = record_between(
            "TieredCompactor",
            outcome,
            ctx,
            result,
            reason,
            over_target=over,
            tier=kept,
        )
        emit_record(record, self.on_record)
        return result

    def __repr__(self) -> str:
        names = ", ".join(type(tier).__name__ for tier in self.tiers)
        return (
            f"TieredCompactor([{names}], max_tokens={self.max_tokens}, "
            f"target_tokens={self.target_tokens})"
        )
