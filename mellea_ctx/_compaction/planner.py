"""CompactionPlanner: compact when it pays for itself, or when the hard limit forces it.

A compaction is not free under prompt caching: the summary call is billed
(a quoted request in full, a continuation request mostly as cache reads), the
new, shorter prefix is written to the cache, and the cached prefix it
replaces is no longer read. What it buys is a shorter request on every step
after it. The planner prices both paths over the steps it expects the session
to run and compacts only when compacting now is the cheaper one.

The model (:func:`path_costs`), in the prices of a :class:`~mellea_ctx.Pricing`,
for a context of ``n`` tokens whose last request cached ``c`` of them, a
result of ``t`` tokens (``p`` of them the pinned prefix, which stays cached),
growth ``g`` tokens per step and a hard limit ``L``:

* keep: the next request reads ``c`` and writes ``n - c``; each later one
  reads the request before it and writes ``g``;
* compact: the summary call (quoted: the span ``n - t + o`` at the input
  price; continuation: ``c`` read and ``n - c`` written), its ``o`` output
  tokens, then the next request reads ``p`` and writes ``t - p``; each later
  one as above, from ``t``.

The horizon is the expected remaining steps, cut where the kept context would
reach ``L``: there the kept path must compact anyway (priced at ``L``), and
the compacted path, that far into its own next cycle, is charged that share
of its next compaction. When the cache is cold (no request for longer than
the pricing's ``ttl``), nothing is cached on either path, so compacting costs
only the summary and pays back at once: the planner takes that moment.

Expected remaining steps: ``horizon`` when given; otherwise as many as the
session has run so far, at least ``default_horizon`` (50): a session that has
run for ``k`` steps is, without other knowledge, as likely to be halfway as
anywhere, so ``k`` more is the median guess.

One planner follows one session (it learns the growth per step from the
context it sees); give each session its own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

import attrs

from .._backends.pricing import Pricing
from .._core.checks import require_instance, require_int
from .._core.pins import PinPredicate, pin_system
from .._core.tokens import count_memoized
from .continuation import Request

if TYPE_CHECKING:
    from .._core.context import ChatContext

Mode = Request


@attrs.define(frozen=True, slots=True)
class Paths:
    """The predicted cost of compacting now and of keeping, over ``horizon`` steps."""

    keep: float
    compact: float
    horizon: int
    #: Compacting now, once: summary call and rewrite, less the first request's kept cost.
    one_off: float
    #: What each step saves by the shorter request.
    per_step: float
    #: The average cost per step of a compaction cycle at its best length.
    rate: float
    #: ``True``: both paths priced over the whole horizon (no compaction forced in
    #: it); ``False``: compacting now against compacting one step later.
    whole: bool = False


def _summary(n: float, c: float, t: float, o: int, mode: Mode, p: Pricing) -> float:
    if mode == "continuation":
        return p.cache_read * c + p.write * (n - c) + p.output * o
    return p.input * max(0.0, n - t + o) + p.output * o


def one_off(
    *, n: float, c: float, t: float, pinned: float, o: int, mode: Mode, pricing: Pricing
) -> float:
    """Compacting a context of ``n`` tokens (``c`` cached) to ``t``, beyond keeping it, once.

    The summary call, then the first request after it (``pinned`` read, the
    rest of ``t`` written) less what that request would have cost kept
    (``c`` read, ``n - c`` written).
    """
    p = pricing
    return (
        _summary(n, c, t, o, mode, p)
        + p.cache_read * pinned
        + p.write * (t - pinned)
        - p.cache_read * c
        - p.write * (n - c)
    )


def path_costs(
    *,
    n: int,
    c: int,
    t: int,
    pinned: int,
    g: float,
    limit: int,
    horizon: int,
    o: int,
    mode: Mode,
    pricing: Pricing,
    next_tail: float | None = None,
) -> Paths:
    """Return the predicted cost of both paths (see the module docstring for the model).

    ``c`` and ``pinned`` are ``0`` when the cache is cold. ``next_tail`` is
    the uncached tail a later compaction is expected to carry (default:
    today's, ``n - c``): the planner passes the tail it sees right after a
    model answer, the cheapest moment of a step.
    """
    p = pricing
    c = min(c, n)
    t = min(t, n)
    pinned = min(pinned, t)
    g = max(g, 1.0)
    tail = n - c if next_tail is None else next_tail  # uncached at a later compaction

    def cost(size: float) -> float:
        return one_off(
            n=size, c=max(0.0, size - tail), t=t, pinned=pinned, o=o, mode=mode, pricing=p
        )

    now = one_off(n=n, c=c, t=t, pinned=pinned, o=o, mode=mode, pricing=p)
    per_step = p.cache_read * (n - t)
    # The best cycle: compact every m steps, at t + g*m; its cost per step.
    longest = max(1, math.floor((limit - t) / g))
    rate = min(
        (cost(t + g * m) + p.cache_read * g * m * (m - 1) / 2) / m for m in range(1, longest + 1)
    )
    room = math.floor((limit - n) / g)  # steps before the kept context passes the limit
    if room >= horizon:
        # No forced compaction before the session is expected to end: the whole horizon.
        # The first request is in ``now``; each later one reads the request before it.
        keep = sum(p.cache_read * (n - t + g * j) for j in range(horizon - 1))
        compact = now + sum(p.cache_read * g * j for j in range(horizon - 1))
        if keep <= compact:
            return Paths(keep, compact, horizon, now, per_step, rate, whole=True)
    # One step: compact now and run one step of the best cycle, or hold the
    # context one more step and compact then.
    keep = per_step + cost(n + g)
    compact = now + rate
    return Paths(keep, compact, 1, now, per_step, rate)


@attrs.define(frozen=True, slots=True)
class PlannerDecision:
    """What the planner decided for one context, and the prices it decided by.

    Attributes:
        compact: Whether to compact now.
        forced: The context is past the hard limit: compact whatever it costs.
        tokens: The context's size when deciding.
        target: The size a compaction aims at.
        horizon: The steps the prices cover.
        predicted_cost: Compacting now, once: the summary call, the new prefix
            written, less the cached prefix it would have read (negative when
            the cache is cold).
        predicted_saving: What the shorter request saves over the horizon.
        break_even_steps: Steps after which compacting has paid for itself
            (``None``: it saves nothing per step).
        cold: No request for longer than the cache's lifetime.
        keep_cost: The keep path's predicted cost over the horizon.
        compact_cost: The compact path's.
    """

    compact: bool
    forced: bool
    tokens: int
    target: int
    horizon: int
    predicted_cost: float
    predicted_saving: float
    break_even_steps: float | None
    cold: bool
    keep_cost: float
    compact_cost: float


#: The decision behind the compaction running now (records pick it up as their ledger).
pending_decision: ContextVar[PlannerDecision | None] = ContextVar(
    "mellea_ctx_pending_decision", default=None
)


class CompactionPlanner:
    """Decide when a gated compactor compacts, by price (see the module docstring).

    Pass it as ``planner=`` to :class:`~mellea_ctx.TokenBudgetCompactor`,
    :class:`~mellea_ctx.ThresholdCompactor` or :class:`~mellea_ctx.TieredCompactor`:
    the compactor's trigger becomes the hard limit, and below it the planner
    compacts only when the model says that compacting now is cheaper.

    Args:
        pricing: The prices (default: ``Pricing()``, relative to one input token).
        horizon: Expected remaining steps, fixed (default: learned, see above).
        default_horizon: The least expected remaining steps when learned.
        clock: Seconds, for the cache's lifetime (default: ``time.monotonic``).

    Examples:
        >>> from mellea_ctx import CompactionPlanner, TokenBudgetCompactor
        >>> planner = CompactionPlanner()
        >>> gate = TokenBudgetCompactor(max_tokens=32_000, target_tokens=4_000, planner=planner)
        >>> planner.expected_steps()
        50
    """

    def __init__(
        self,
        pricing: Pricing | None = None,
        *,
        horizon: int | None = None,
        default_horizon: int = 50,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("horizon", horizon), ("default_horizon", default_horizon)):
            if value is None and name == "horizon":
                continue
            require_int("CompactionPlanner", name, value, minimum=1, about="steps")
        require_instance("CompactionPlanner", "pricing", pricing, Pricing, optional=True)
        self.pricing = pricing or Pricing()
        self.horizon = horizon
        self.default_horizon = default_horizon
        self.clock = clock
        self.steps = 0
        self.grown = 0
        self.last_request = 0
        self.last_at: float | None = None
        self._last_item: object = None
        self.answer_tail: float | None = None
        #: The mean size a compaction left, as seen on the next add (``None``: none yet).
        self.result_size: float | None = None
        self._compacted_from: int | None = None
        self.last: PlannerDecision | None = None

    def observe(self, tokens: int, *, at: float | None = None) -> None:
        """Record a model request of ``tokens`` tokens (what the provider now caches)."""
        self.steps += 1
        self.last_request = tokens
        self.last_at = self.clock() if at is None else at

    def expected_steps(self) -> int:
        """The steps the session is expected to run from now."""
        if self.horizon is not None:
            return self.horizon
        return max(self.default_horizon, self.steps)

    def growth(self) -> float:
        """Tokens the context grows by per step, so far (before the first step: 1,000)."""
        return self.grown / self.steps if self.steps else 1_000.0

    def cold(self) -> bool:
        """Whether the cache has expired: no request for longer than the pricing's ``ttl``."""
        return self.last_at is not None and self.clock() - self.last_at > self.pricing.ttl

    def decide(
        self,
        *,
        size: int,
        limit: int,
        target: int,
        summary_tokens: int,
        request: Mode = "quoted",
        pinned: int = 0,
    ) -> PlannerDecision:
        """Return the decision for a context of ``size`` tokens (no state changes)."""
        cold = self.cold()
        cached = 0 if cold else min(self.last_request, size)
        # A compaction lands near its target, or above it (whole steps kept, a
        # long summary): aim the prices at what compactions here have left.
        result = max(target, int(self.result_size or 0))
        paths = path_costs(
            n=size,
            c=cached,
            t=result,
            pinned=0 if cold else pinned,
            g=self.growth(),
            limit=limit,
            horizon=self.expected_steps(),
            o=summary_tokens,
            mode=request,
            pricing=self.pricing,
            next_tail=None if cold else self.answer_tail,
        )
        forced = size > limit
        worth = size > result and paths.compact <= paths.keep
        per_step = paths.per_step
        break_even = None if per_step <= 0 else 1 + max(0.0, paths.one_off) / per_step
        return PlannerDecision(
            compact=forced or worth,
            forced=forced,
            tokens=size,
            target=target,
            horizon=paths.horizon,
            predicted_cost=paths.one_off,
            predicted_saving=paths.per_step * paths.horizon,
            break_even_steps=break_even,
            cold=cold,
            keep_cost=paths.keep,
            compact_cost=paths.compact,
        )

    def due(
        self,
        ctx: ChatContext,
        *,
        size: int,
        limit: int,
        target: int,
        summary_tokens: int,
        request: Mode = "quoted",
        pin: PinPredicate | None = None,
    ) -> bool:
        """Follow ``ctx`` (its growth; a model answer means a request was sent) and decide.

        An assistant message at the end of ``ctx`` that the planner has not
        seen is a model answer: the request before it (the rest of ``ctx``) is
        recorded as sent. ``pin`` is the compactor's pin predicate (the prefix
        that stays cached).
        """
        last = ctx[-1] if len(ctx) else None
        if last is not None and last is not self._last_item:
            self._last_item = last
            added = count_memoized(ctx.counter, last)
            self.grown += added
            before = self._compacted_from
            if before is not None and size - added < before:
                # The add after a compaction: what it left is this context less the add.
                seen = size - added
                mean = self.result_size
                self.result_size = seen if mean is None else 0.8 * mean + 0.2 * seen
            self._compacted_from = None
            if last.role == "assistant" and last.tool_call_id is None:
                self.observe(size - added)
                # The uncached tail right after an answer: the step's cheapest moment.
                mean = self.answer_tail
                self.answer_tail = added if mean is None else 0.9 * mean + 0.1 * added
        decision = self.decide(
            size=size,
            limit=limit,
            target=target,
            summary_tokens=summary_tokens,
            request=request,
            pinned=_pinned_tokens(ctx, pin),
        )
        self.last = decision
        if decision.compact:
            self._compacted_from = size
        # The compaction runs right after this call; a decision not to compact
        # clears any earlier one, so no later record picks up a stale ledger.
        pending_decision.set(decision if decision.compact else None)
        return decision.compact


def _pinned_tokens(ctx: ChatContext, pin: PinPredicate | None) -> int:
    """Tokens of the pinned prefix (what stays cached across a compaction)."""
    end = (pin or pin_system)(ctx)
    return sum(count_memoized(ctx.counter, ctx[i]) for i in range(end))
