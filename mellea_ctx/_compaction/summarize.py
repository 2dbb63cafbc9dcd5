"""Compactors that replace old history with a model-written checkpoint.

Both compactors here share one engine: pick a span that starts after the
pinned prefix and ends on a safe cut, render it as quoted data, ask the
backend for a summary (bounded retries, one overall timeout), check the
summary for the exact details of the span and carry the lost ones over, and
apply the :class:`~mellea_ctx.Checkpoint` only if it is smaller than what it
replaces. What differs is how the span is chosen:

* :class:`LLMSummarizeCompactor` keeps the last ``keep_n`` body components;
* :class:`TokenBudgetCompactor` fires past a token budget and keeps at least
  ``keep_recent_tokens`` of recent dialogue, in whole user turns.

A failure (backend error, timeout, empty summary, a summary made of tool
calls) returns the input context itself, unchanged, warns with a
:class:`~mellea_ctx.CompactionWarning` and reports a ``failed`` record; with
``strict=True`` it raises the typed error instead. Cancellation is reported
and re-raised. The input is never modified either way.

Riding inline (``ChatContext(compactor=TokenBudgetCompactor(...))``, or
behind a :class:`~mellea_ctx.ThresholdCompactor`), a compaction that called
the backend and left the context unchanged (it failed, or the summary was not
smaller) starts a failure backoff: the context it returns skips the next
``backoff_adds`` adds' compaction (doubling with each consecutive failure,
up to 16 times), so a backend that is down is not asked again on every add.
See ``ChatContext.compaction_backoff``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._core.boundaries import is_safe_cut, prefix_end, safe_cut_table
from .._core.checkpoint import Checkpoint
from .._core.exceptions import InvalidArgumentError
from .._core.pins import PinPredicate, pin_system
from .._core.protocols import Backend, InlineCompactor
from .._core.tokens import count_all, count_memoized
from .engine import Engine, make_settings, validate_settings
from .prompts import (
    DEFAULT_PROMPT_TEMPLATE,
    react_summary_prompt,
    render_conversation,
    validate_prompt_template,
)
from .records import RecordHook

if TYPE_CHECKING:
    from .._core.context import ChatContext

__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "LLMSummarizeCompactor",
    "TokenBudgetCompactor",
    "react_summary_prompt",
    "render_conversation",
    "validate_prompt_template",
]


class LLMSummarizeCompactor:
    """Replace older body components with one model-written checkpoint; keep the last ``keep_n``.

    The pinned prefix (by default the system prompt: mellea's default pins
    nothing and summarizes the system prompt away) stays verbatim. Body
    components older than the last ``keep_n`` become one
    :class:`~mellea_ctx.Checkpoint` placed right after the prefix; the cut
    moves back as needed so no tool exchange is split. An earlier checkpoint
    in the span is shown to the model as a checkpoint, so the new summary
    extends it instead of paraphrasing a paraphrase.

    This compactor calls a model every time it has something to do, so it may
    not ride inside a context on its own: gate it with
    ``ThresholdCompactor(LLMSummarizeCompactor(...), threshold=...)`` or call
    ``compact`` between turns.

    Args:
        default_backend: The backend used when ``compact`` gets none.
        keep_n: Recent body components kept verbatim; ``0`` summarizes the whole body.
        pin_predicate: Where the protected prefix ends.
        prompt_template: A prompt with exactly one field, ``{conversation}``;
            checked here, not at compaction time.
        model_options: Passed to the backend (``max_tokens``, ``temperature``...).
        timeout: Seconds for the whole compaction, retries included.
        retries: Extra attempts for retryable backend errors (rate limits,
            timeouts, connection errors, 5xx), with exponential backoff.
        strict: Raise the typed error on failure instead of returning the
            context unchanged.
        preserve_facts: Check the summary for the span's exact details and
            carry the lost ones over verbatim.
        keep_replaced: Keep a handle to the replaced context in the checkpoint
            (``Checkpoint.restore()``); turn off to let it be freed.
        on_record: Called with a :class:`~mellea_ctx.CompactionRecord` for each
            compaction attempted.
        backoff_adds: Behind a ``ThresholdCompactor`` inside a context: after a
            failed compaction, the next ``backoff_adds`` adds do not try again
            (doubling with each consecutive failure, up to 16 times); ``0``
            tries on every add. A ``compact`` call of your own always tries.

    Raises:
        InvalidArgumentError: For a bad setting, at construction.

    Examples:
        >>> from mellea_ctx import ChatContext, Message, ScriptedBackend
        >>> backend = ScriptedBackend(lambda messages, options: "User greeted; agent replied.")
        >>> ctx = ChatContext()
        >>> for i in range(6):
        ...     ctx = ctx.add(Message("user", f"hello number {i}, how are you doing today?"))
        >>> small = LLMSummarizeCompactor(default_backend=backend, keep_n=2).compact(ctx)
        >>> [type(c).__name__ for c in small.as_list()]
        ['Checkpoint', 'Message', 'Message']
    """

    def __init__(
        self,
        *,
        default_backend: Backend | None = None,
        keep_n: int = 5,
        pin_predicate: PinPredicate = pin_system,
        prompt_template: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        strict: bool = False,
        preserve_facts: bool = True,
        keep_replaced: bool = True,
        on_record: RecordHook | None = None,
        backoff_adds: int = 8,
    ) -> None:
        if isinstance(keep_n, bool) or not isinstance(keep_n, int) or keep_n < 0:
            msg = (
                f"LLMSummarizeCompactor: keep_n={keep_n!r} must be an int >= 0; "
                "pass 0 to summarize the whole body"
            )
            raise InvalidArgumentError(msg)
        self.keep_n = keep_n
        self.backoff_adds = _backoff("LLMSummarizeCompactor", backoff_adds)
        self.settings = make_settings(
            default_backend,
            pin_predicate,
            prompt_template,
            model_options,
            timeout,
            retries,
            strict,
            preserve_facts,
            keep_replaced,
            on_record,
        )
        validate_settings("LLMSummarizeCompactor", self.settings)
        self._engine = Engine("LLMSummarizeCompactor", self.settings)

    def span(self, ctx: ChatContext) -> tuple[int, int]:
        """Return ``(p, k)``: the span ``items[p:k]`` to summarize (none when ``p == k``)."""
        table = safe_cut_table(ctx) if ctx._loose else None
        p = prefix_end(ctx, self.settings.pin_predicate, table)
        n = len(ctx)
        if n - p <= self.keep_n:
            return p, p
        k = n - self.keep_n
        while k > p and not is_safe_cut(ctx, k, table):
            k -= 1
        if k - p == 1 and isinstance(ctx[p], Checkpoint):
            return p, p  # only the previous checkpoint: nothing new to fold in
        return p, k

    async def acompact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        instructions: str | None = None,
    ) -> ChatContext:
        """Return ``ctx`` with its older body summarized into a checkpoint (async).

        Returns ``ctx`` itself when there is nothing to summarize, when the
        summary is not smaller than what it would replace, or (unless
        ``strict``) when the backend fails. ``instructions`` is a focus the
        summary should keep (the model's own request, when it asked to compact).
        """
        p, k = self.span(ctx)
        if k <= p:
            return ctx
        outcome = await self._engine.replace(ctx, p, k, backend, instructions=instructions)
        return self._engine.settle(outcome)

    def compact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        instructions: str | None = None,
    ) -> ChatContext:
        """Return ``ctx`` with its older body summarized (blocking; safe inside a running loop)."""
        return self._run(ctx, backend, instructions, backoff_adds=0)

    def _compact_on_add(self, ctx: ChatContext) -> ChatContext:
        """:meth:`compact`, then a failure backoff when it left ``ctx`` unchanged."""
        if type(self).compact is not LLMSummarizeCompactor.compact:
            return self.compact(ctx)  # a subclass's own compact comes first
        return self._run(ctx, None, None, backoff_adds=self.backoff_adds)

    def _run(
        self,
        ctx: ChatContext,
        backend: Backend | None,
        instructions: str | None,
        *,
        backoff_adds: int,
    ) -> ChatContext:
        p, k = self.span(ctx)
        if k <= p:
            return ctx
        outcome = self._engine.run_sync(
            ctx, lambda: self._engine.replace(ctx, p, k, backend, instructions=instructions)
        )
        return _backed_off(self._engine.settle(outcome), ctx, backoff_adds)

    def __repr__(self) -> str:
        return (
            f"LLMSummarizeCompactor(keep_n={self.keep_n}, "
            f"default_backend={self.settings.default_backend!r})"
        )


class TokenBudgetCompactor(InlineCompactor):
    """Summarize older dialogue when the context passes ``max_tokens``.

    The trigger is the context's exact token total. When it fires, the most
    recent ``keep_recent_tokens`` of dialogue stay verbatim, extended back to
    the start of the user turn that holds the cut, and the current user turn
    is never split; everything between the pinned prefix and that point
    becomes one checkpoint. So a single turn larger than the budget cannot be
    compacted: it is left alone and reported in a ``skipped`` record.

    ``target_tokens`` (default: ``max_tokens``) is where a compaction aims.
    Set it below ``max_tokens`` to compact rarely: after a compaction lands
    near the target, the history can grow by ``max_tokens - target_tokens``
    before the next one, and every request in between shares the same prompt
    prefix, which a provider's prompt cache can serve. When more recent turns
    than fit would be kept, turns are folded into the summary until the
    estimate fits; a result still above the target (the prefix and the
    current turn alone exceed it, or the summary ran long) is reported with
    ``over_target=True``, never hidden.

    Agent loops often run one user turn for hundreds of model steps, which a
    user-turn budget can never compact. ``boundary="model_step"`` makes every
    model step (an assistant message, with the tool results that answer it) a
    turn of its own, so the budget keeps whole steps instead.

    It calls a model only past the trigger, so it may ride inline; each such
    add then blocks for the summary.

    Args:
        max_tokens: The trigger, in tokens.
        keep_recent_tokens: At least this much recent dialogue stays verbatim,
            in whole turns, unless reaching ``target_tokens`` needs more turns
            folded into the summary; the current turn always stays (default:
            a quarter of ``target_tokens``).
        target_tokens: The size to aim for after compacting.
        summary_tokens: Room reserved for the summary when fitting the target;
            also sent as ``max_tokens`` to the backend unless ``model_options``
            sets it (default: an eighth of the target, at most 4,096).
        boundary: ``"user_turn"`` (the default: turns begin at user input) or
            ``"model_step"`` (each assistant message also begins a turn).
        backoff_adds: Riding inline: after a failed compaction (or a summary
            that was not smaller), the next ``backoff_adds`` adds do not try
            again, doubling with each consecutive failure up to 16 times
            (see ``ChatContext.compaction_backoff``); ``0`` tries on every
            add. ``compact`` / ``acompact`` calls of your own always try.

    ``default_backend``, ``pin_predicate``, ``prompt_template``,
    ``model_options``, ``timeout``, ``retries``, ``strict``,
    ``preserve_facts``, ``keep_replaced`` and ``on_record`` are as for
    :class:`LLMSummarizeCompactor`.

    Raises:
        InvalidArgumentError: For a bad setting, at construction.
    """

    def __init__(
        self,
        *,
        max_tokens: int,
        keep_recent_tokens: int | None = None,
        target_tokens: int | None = None,
        summary_tokens: int | None = None,
        boundary: Literal["user_turn", "model_step"] = "user_turn",
        default_backend: Backend | None = None,
        pin_predicate: PinPredicate = pin_system,
        prompt_template: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        strict: bool = False,
        preserve_facts: bool = True,
        keep_replaced: bool = True,
        on_record: RecordHook | None = None,
        backoff_adds: int = 8,
    ) -> None:
        owner = "TokenBudgetCompactor"
        _positive(owner, "max_tokens", max_tokens)
        target = max_tokens if target_tokens is None else target_tokens
        _positive(owner, "target_tokens", target)
        if target > max_tokens:
            msg = (
                f"{owner}: target_tokens={target!r} is above max_tokens={max_tokens!r}; "
                "the target must be at or below the trigger"
            )
            raise InvalidArgumentError(msg)
        keep = target // 4 if keep_recent_tokens is None else keep_recent_tokens
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            msg = f"{owner}: keep_recent_tokens={keep!r} must be an int >= 0"
            raise InvalidArgumentError(msg)
        reserve = min(4_096, max(64, target // 8)) if summary_tokens is None else summary_tokens
        _positive(owner, "summary_tokens", reserve)
        if boundary not in ("user_turn", "model_step"):
            msg = f"{owner}: boundary={boundary!r} must be 'user_turn' or 'model_step'"
            raise InvalidArgumentError(msg)
        self.boundary = boundary
        self.backoff_adds = _backoff(owner, backoff_adds)
        options = dict(model_options or {})
        options.setdefault("max_tokens", reserve)
        self.max_tokens = max_tokens
        self.target_tokens = target
        self.keep_recent_tokens = keep
        self.summary_tokens = reserve
        self.settings = make_settings(
            default_backend,
            pin_predicate,
            prompt_template,
            options,
            timeout,
            retries,
            strict,
            preserve_facts,
            keep_replaced,
            on_record,
        )
        validate_settings(owner, self.settings)
        self._engine = Engine(owner, self.settings)

    def span(self, ctx: ChatContext) -> tuple[int, int, str]:
        """Return ``(p, k, reason)``: the span to summarize, or ``p == k`` and why not."""
        items = ctx.as_list()
        table = safe_cut_table(items) if ctx._loose else None
        p = prefix_end(items, self.settings.pin_predicate, table)
        n = len(items)
        opening = ("user", "assistant") if self.boundary == "model_step" else ("user",)
        starts = [
            index
            for index in range(p, n)
            if items[index].role in opening
            and items[index].tool_call_id is None
            and not isinstance(items[index], Checkpoint)
            and is_safe_cut(items, index, table)
        ]
        if not starts or starts[-1] <= p:
            reason = (
                "the current turn begins at the pinned prefix, so there is no older dialogue "
                "to summarize; a single turn is never split (an agent loop runs as one user "
                'turn: try boundary="model_step")'
            )
            return p, p, reason
        counter = ctx.counter
        # Keep at least keep_recent_tokens: walk back, then widen to a turn start.
        kept = 0
        cut = n
        while cut > p and kept < self.keep_recent_tokens:
            cut -= 1
            kept += count_memoized(counter, items[cut])
        eligible = [start for start in starts if start <= cut]
        k = eligible[-1] if eligible else p
        # Fold more turns into the summary while the estimate misses the target.
        # The kept tail shrinks turn by turn: subtract each folded turn from its
        # total instead of recounting the tail (that was O(turns x history)).
        prefix_tokens = count_all(counter, items[:p])
        fixed = prefix_tokens + self.summary_tokens
        tail = count_all(counter, items[k:])
        for start in starts:
            if start <= k:
                continue
            if fixed + tail <= self.target_tokens:
                break
            tail -= count_all(counter, items[k:start])
            k = start
        if k <= p:
            reason = (
                f"the recent dialogue to keep ({self.keep_recent_tokens} tokens, in whole user "
                "turns) reaches back to the pinned prefix; nothing older to summarize"
            )
            return p, p, reason
        if k - p == 1 and isinstance(items[p], Checkpoint):
            return p, p, "only the previous checkpoint lies before the recent dialogue"
        return p, k, ""

    def due(self, ctx: ChatContext) -> bool:
        """Return whether ``ctx`` is past the trigger."""
        return ctx.token_count > self.max_tokens

    async def acompact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        force: bool = False,
        instructions: str | None = None,
    ) -> ChatContext:
        """Return ``ctx`` compacted if it is past ``max_tokens`` (or ``force``), else ``ctx``."""
        planned = self._plan(ctx, force)
        if planned is None:
            return ctx
        p, k = planned
        outcome = await self._engine.replace(
            ctx, p, k, backend, target=self.target_tokens, instructions=instructions
        )
        return self._engine.settle(outcome)

    def compact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        force: bool = False,
        instructions: str | None = None,
    ) -> ChatContext:
        """Blocking form of :meth:`acompact` (safe inside a running loop)."""
        return self._run(ctx, backend, force, instructions, backoff_adds=0)

    def _compact_on_add(self, ctx: ChatContext) -> ChatContext:
        """:meth:`compact`, then a failure backoff when the model call left ``ctx`` unchanged."""
        if type(self).compact is not TokenBudgetCompactor.compact:
            return self.compact(ctx)  # a subclass's own compact comes first
        return self._run(ctx, None, False, None, backoff_adds=self.backoff_adds)

    def _run(
        self,
        ctx: ChatContext,
        backend: Backend | None,
        force: bool,
        instructions: str | None,
        *,
        backoff_adds: int,
    ) -> ChatContext:
        planned = self._plan(ctx, force)
        if planned is None:
            return ctx
        p, k = planned
        target = self.target_tokens
        outcome = self._engine.run_sync(
            ctx,
            lambda: self._engine.replace(
                ctx, p, k, backend, target=target, instructions=instructions
            ),
            target,
        )
        return _backed_off(self._engine.settle(outcome), ctx, backoff_adds)

    def _plan(self, ctx: ChatContext, force: bool) -> tuple[int, int] | None:
        """Return the span to summarize, or ``None`` (not due, or nothing to do: recorded)."""
        if not (force or self.due(ctx)):
            return None
        p, k, reason = self.span(ctx)
        if k <= p:
            self._engine.record(ctx, "skipped", reason, target=self.target_tokens)
            return None
        return p, k

    def __repr__(self) -> str:
        return (
            f"TokenBudgetCompactor(max_tokens={self.max_tokens}, "
            f"target_tokens={self.target_tokens}, keep_recent_tokens={self.keep_recent_tokens})"
        )


def _backoff(owner: str, adds: object) -> int:
    if isinstance(adds, bool) or not isinstance(adds, int) or not 0 <= adds <= 10_000:
        msg = (
            f"{owner}: backoff_adds={adds!r} must be an int from 0 to 10000 (adds to wait "
            "after a failed inline compaction); pass 0 to try again on every add"
        )
        raise InvalidArgumentError(msg)
    return adds


def _backed_off(result: ChatContext, ctx: ChatContext, adds: int) -> ChatContext:
    """``result``, or when the model call left ``ctx`` as it was, ``ctx`` backing off.

    ``adds == 0`` (a ``compact`` call of your own) returns ``result`` as it is.
    """
    return ctx._backing_off(adds) if result is ctx else result


def _positive(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        msg = f"{owner}: {name}={value!r} must be an int > 0 (tokens)"
        raise InvalidArgumentError(msg)
