"""The compactors that need no model: the window, and the threshold gate.

A compactor takes a context and returns a smaller one. It never changes its
input: it builds a new context (sharing everything it keeps) and returns the
very same object when there is nothing to do. The result carries the input's
compactor, so a context that compacts itself keeps doing so after every add.

``InlineCompactor`` marks the compactors that may ride inside a context
(``ChatContext(compactor=...)``), because they never call a model on every
add: :class:`WindowCompactor` calls none, :class:`ThresholdCompactor` calls its
inner compactor only when the context has grown past a threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

from .._core.checks import require_callable, require_choice, require_int, require_method
from .._core.pins import PinPredicate, pin_system
from .._core.protocols import (
    CompactCall,
    Compaction,
    Compactor,
    InlineCompactor,
    Steps,
    inline_backoff,
)
from .._core.tool_tokens import request_overhead
from .budget import Window, resolve_budget

if TYPE_CHECKING:
    from .._core.context import ChatContext
    from .planner import CompactionPlanner


def validate_pin(owner: str, pin_predicate: object) -> None:
    fix = "pass a function such as pin_system or pin_nothing"
    require_callable(owner, "pin_predicate", pin_predicate, fix=fix)


@attrs.define(frozen=True, slots=True)
class WindowCompactor(InlineCompactor):
    """Keep the pinned prefix and the last ``size`` body components.

    The prefix is what ``pin_predicate`` protects (by default the leading
    system messages); ``size`` counts only what follows it. A tool exchange
    (an assistant tool call and the results answering it) is never split: when
    the window's edge falls inside one, the window widens to keep the whole
    exchange, so the result holds the last ``size`` body components or the
    smallest superset of them that keeps every exchange whole. An exchange
    still waiting for its results is never dropped.

    Riding inside a context, each add costs O(1) whatever ``size`` is: the
    oldest body component is dropped by moving a slice bound, not by
    rebuilding the window.

    Args:
        size: Body components to keep. ``0`` keeps only the pinned prefix (and
            any exchange still waiting for results).
        pin_predicate: Where the protected prefix ends; see
            :func:`~mellea_ctx.pin_system`.

    Raises:
        InvalidArgumentError: When ``size`` is not an int >= 0.

    Examples:
        >>> from mellea_ctx import ChatContext, Message
        >>> ctx = ChatContext(compactor=WindowCompactor(size=1))
        >>> ctx = ctx.add(Message("system", "Be brief."))
        >>> for text in ["a", "b", "c"]:
        ...     ctx = ctx.add(Message("user", text))
        >>> [c.content for c in ctx.as_list()]
        ['Be brief.', 'c']
    """

    size: int
    pin_predicate: PinPredicate = pin_system

    def __attrs_post_init__(self) -> None:
        fix = "pass 0 to keep only the pinned prefix"
        require_int("WindowCompactor", "size", self.size, fix=fix)
        validate_pin("WindowCompactor", self.pin_predicate)

    def steps(self, call: CompactCall) -> ChatContext:
        """Return ``ctx`` cut to its prefix and last ``size`` body components.

        Returns ``ctx`` itself when the body already fits. ``backend``, ``force`` and
        ``instructions`` are unused.
        """
        ctx = call.ctx
        cut = self.inline_cut(ctx)
        return ctx if cut is None else ctx.replace_span(*cut)

    def inline_cut(self, ctx: ChatContext) -> tuple[int, int] | None:
        """Return ``(p, k)``: :meth:`compact` drops ``ctx[p:k]``; ``None`` when it drops nothing.

        The inline-cut hook of :class:`~mellea_ctx.InlineCompactor`:
        ``ChatContext.add`` drops the span in place on the node it has just
        built. :meth:`~mellea_ctx.ChatContext.window_span` computes it.
        """
        return ctx.window_span(self.size, self.pin_predicate)


Measure = Literal["tokens", "usage"]


def _adds_of(inner: object) -> int:
    """The inner compactor's ``backoff_adds`` (0 for one that calls no model)."""
    adds = getattr(inner, "backoff_adds", 0)
    return adds if isinstance(adds, int) and not isinstance(adds, bool) else 0


@attrs.define(frozen=True, slots=True)
class ThresholdCompactor(InlineCompactor):
    """Run ``inner`` only when the context has grown past ``threshold`` tokens.

    By default the gate reads the context's exact running token total
    (``ctx.token_count``): no lag, and right after ``inner`` has compacted it
    reads the new, smaller total, so it does not fire again until the context
    has really grown back. While a cheap upper bound of the total (UTF-8
    bytes plus framing, for the default counter) is under the threshold, the
    gate decides without encoding anything: far from the threshold an add
    costs about as much as a plain add; near it, one encode of the added
    component.

    Riding inline, the gate runs ``inner`` once per crossing of the
    threshold. When a compaction leaves the reading still above it (the inner
    compactor cannot get under: say its ``keep_n`` recent messages alone are
    over), the context it returns holds the gate closed for the inner
    compactor's ``backoff_adds`` adds, as a failed compaction does (the hold
    doubles with each further failure, see ``ChatContext.compaction_backoff``),
    so an over-full history is not summarized again on every add. A
    compaction that gets under leaves the gate armed. A ``compact`` call of
    your own always runs ``inner`` when the reading is over.

    ``measure="usage"`` reads instead the ``total_tokens`` a provider last
    reported (on a ``ModelOutputThunk``), for provider-exact figures. That
    reading lags by the components added since the model last answered, and
    it is discarded by every compaction (it described the longer history), so
    the gate stays closed until the model reports again.

    Args:
        inner: The compactor to run; it may be one that calls a model, such as
            an ``LLMSummarizeCompactor``, since the gate keeps its calls rare.
        threshold: Fire when the reading exceeds this many tokens. ``0`` or a
            negative value disables the gate (``inner`` never runs).
        measure: ``"tokens"`` (exact, the default) or ``"usage"``.
        window: The model's context window (tokens, or a model name known to
            :func:`~mellea_ctx.context_window`): with it, ``threshold`` may be
            a fraction (``threshold=0.8``: 80% of the window).
        planner: A :class:`~mellea_ctx.CompactionPlanner`: the threshold becomes
            the hard limit and below it the planner runs ``inner`` when that is
            cheaper (``measure="tokens"``; docs/cost.md).

    Raises:
        InvalidArgumentError: For a non-int threshold, an unknown measure, or an
            ``inner`` without a ``compact`` method.

    Examples:
        >>> from mellea_ctx import ChatContext, Message, WindowCompactor
        >>> gate = ThresholdCompactor(WindowCompactor(size=1), threshold=20)
        >>> ctx = ChatContext(compactor=gate)
        >>> ctx = ctx.add(Message("user", "short"))
        >>> ctx = ctx.add(Message("user", "still short"))
        >>> len(ctx)  # 14 tokens: under the threshold
        2
        >>> len(ctx.add(Message("user", "and now the history is over twenty tokens")))
        1
    """

    inner: Compactor
    threshold: float = attrs.field(kw_only=True)  # tokens; a fraction becomes tokens at init
    measure: Measure = attrs.field(default="tokens", kw_only=True)
    window: Window = attrs.field(default=None, kw_only=True, repr=False)
    planner: CompactionPlanner | None = attrs.field(default=None, kw_only=True, repr=False)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.threshold, float):  # a fraction of the window, resolved once
            tokens = resolve_budget("ThresholdCompactor", "threshold", self.threshold, self.window)
            object.__setattr__(self, "threshold", tokens)
        owner = "ThresholdCompactor"
        fix = "pass a compactor such as WindowCompactor(size=20)"
        require_method(owner, "inner", self.inner, "compact()", fix=fix)
        fix = "pass 0 to disable the gate"
        require_int(owner, "threshold", self.threshold, minimum=None, unit="tokens", fix=fix)
        measures = {"tokens": "exact running total", "usage": "provider-reported"}
        require_choice(owner, "measure", self.measure, measures)

    def reading(self, ctx: ChatContext) -> int | None:
        """Return the size the gate compares with ``threshold`` (``None``: no reading yet)."""
        if self.measure == "tokens":
            return ctx.token_count
        return ctx.last_usage_tokens

    def _planned(self, ctx: ChatContext, threshold: int) -> bool:
        """The planner's decision: ``threshold`` is the hard limit; the inner compactor's
        target and summary size (when it has them) are what a compaction would leave."""
        assert self.planner is not None
        inner = self.inner
        settings = getattr(inner, "settings", None)
        return self.planner.due(
            ctx,
            size=ctx.token_count,
            limit=threshold,
            target=getattr(inner, "target_tokens", threshold // 2),
            summary_tokens=getattr(inner, "summary_tokens", threshold // 16),
            request=getattr(settings, "request", "quoted"),
            pin=getattr(settings, "pin_predicate", None),
        )

    def due(self, ctx: ChatContext) -> bool:
        """Return whether the reading of ``ctx`` is past the threshold (with a ``planner``:
        past it, or below it when compacting now is cheaper; ``measure="tokens"`` only)."""
        threshold = self.threshold
        if threshold <= 0:
            return False
        if self.measure == "usage":
            reading = ctx.last_usage_tokens
            return reading is not None and reading > threshold
        threshold -= request_overhead.get()  # tool definitions being sent (react sets it)
        if self.planner is not None:
            return self._planned(ctx, int(threshold))
        # Under the threshold by a cheap upper bound: under it exactly, with no encode.
        if ctx.token_bound() <= threshold:
            return False
        return ctx.token_count > threshold

    def steps(self, call: CompactCall) -> Steps:
        """Run ``inner`` (past the threshold, or ``force``: :class:`~mellea_ctx.BaseCompactor`).

        ``force`` and ``instructions`` reach ``inner`` (see
        :func:`~mellea_ctx.compact_with`); ``acompact`` awaits the inner
        ``acompact`` when it has one. Riding inline, a compaction that leaves
        the total still over holds the gate for ``inner``'s ``backoff_adds``
        adds: this crossing has had its compaction.
        """
        forced = call.force or self.planner is not None  # the planner is the gate: inner runs
        result = yield Compaction(self.inner, call._replace(force=forced))
        return self._held(call.ctx, result)

    def _held(self, ctx: ChatContext, result: ChatContext) -> ChatContext:
        """``result``, holding the gate while it is still over (only riding inline).

        What both forms do after ``inner`` ran: outside ``ChatContext.add``
        (every ``acompact``, a call of your own) there is no backoff to start.
        """
        adds = inline_backoff(_adds_of(self.inner))
        if adds and result is not ctx and not result.compaction_backoff and self.due(result):
            return result.with_backoff(adds)
        return result
