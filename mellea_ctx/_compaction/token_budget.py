"""TokenBudgetCompactor: summarize older dialogue once the context passes a token budget.

It shares the summary engine (:mod:`.engine`) and the failure backoff
(:mod:`.backoff`) with :class:`~mellea_ctx.LLMSummarizeCompactor`
(:mod:`.summarize`, whose docstring describes the engine); what is its own is
the trigger (the context's exact token total) and the span: whole turns of
recent dialogue kept, folded into the summary until the estimate fits the
target.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._core.boundaries import is_safe_cut
from .._core.checkpoint import Checkpoint
from .._core.checks import require_choice, require_int
from .._core.components import Component
from .._core.exceptions import InvalidArgumentError
from .._core.pins import PinPredicate, pin_system
from .._core.protocols import Backend, CompactCall, InlineCompactor, Steps
from .._core.tokens import TokenCounter, count_all, count_memoized
from .._core.tool_tokens import request_overhead
from .backoff import validate_backoff
from .budget import Window, resolve_budget
from .continuation import Request
from .effort import with_reasoning_effort
from .engine import Engine, checkpoint_room, span_start
from .records import RecordHook
from .settings import Settings, validate_settings

if TYPE_CHECKING:
    from .._core.context import ChatContext
    from .planner import CompactionPlanner


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
    user-turn budget can never compact. With the default ``boundary="auto"``,
    turns begin at user input while the body holds two user turns or more;
    when it is a single user turn (an agent run: one instruction, then
    steps), every model step (an assistant message, with the tool results
    that answer it) is a turn of its own, so the budget keeps whole steps
    instead. So is every step of a current user turn that alone, with the
    pinned prefix and ``summary_tokens``, is over the target (a chat whose
    last request started an agent run); a current turn that fits is never
    cut. ``"user_turn"`` and ``"model_step"`` choose one always.

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
            sets it (default: an eighth of the target, at most 4,096). With
            neither set, each checkpoint is sized by its span's ledger: room
            for every rule, constraint, goal and open error, then current
            state, in what the target leaves beside the current turn, and
            at least this much; older turns fold into it to make that room.
        boundary: ``"auto"`` (the default: user turns, or model steps when
            the body is a single user turn), ``"user_turn"`` (turns begin at
            user input) or ``"model_step"`` (each assistant message also
            begins a turn).
        backoff_adds: Riding inline: after a failed compaction (or a summary
            that was not smaller), the next ``backoff_adds`` adds do not try
            again, doubling with each consecutive failure up to 16 times
            (see ``ChatContext.compaction_backoff``); ``0`` tries on every
            add. ``compact`` / ``acompact`` calls of your own always try.
        reasoning_effort: As for :class:`LLMSummarizeCompactor`.
        window: The model's context window (tokens, or a model name known to
            :func:`~mellea_ctx.context_window`): with it, ``max_tokens`` and
            ``target_tokens`` may be fractions (``0.8``: 80% of the window).
        planner: A :class:`~mellea_ctx.CompactionPlanner`: ``max_tokens``
            becomes the hard limit, and below it the planner compacts when
            that is cheaper under its prices (see docs/cost.md).

    ``default_backend``, ``pin_predicate``, ``prompt_template``,
    ``model_options``, ``timeout``, ``retries``, ``strict``,
    ``preserve_facts``, ``keep_replaced``, ``on_record`` and ``request``
    are as for :class:`LLMSummarizeCompactor`.

    Raises:
        InvalidArgumentError: For a bad setting, at construction.
    """

    def __init__(
        self,
        *,
        max_tokens: float,
        keep_recent_tokens: int | None = None,
        target_tokens: float | None = None,
        summary_tokens: int | None = None,
        boundary: Literal["auto", "user_turn", "model_step"] = "auto",
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
        reasoning_effort: str | None = "low",
        request: Request = "quoted",
        window: Window = None,
        planner: CompactionPlanner | None = None,
    ) -> None:
        owner = "TokenBudgetCompactor"
        if isinstance(max_tokens, float) or isinstance(target_tokens, float):
            max_tokens = resolve_budget(owner, "max_tokens", max_tokens, window)
            if target_tokens is not None:
                target_tokens = resolve_budget(owner, "target_tokens", target_tokens, window)
        require_int(owner, "max_tokens", max_tokens, minimum=1, unit="tokens")
        target = max_tokens if target_tokens is None else target_tokens
        require_int(owner, "target_tokens", target, minimum=1, unit="tokens")
        assert isinstance(max_tokens, int) and isinstance(target, int)
        if target > max_tokens:
            msg = (
                f"{owner}: target_tokens={target!r} is above max_tokens={max_tokens!r}; "
                "the target must be at or below the trigger"
            )
            raise InvalidArgumentError(msg)
        keep = target // 4 if keep_recent_tokens is None else keep_recent_tokens
        require_int(owner, "keep_recent_tokens", keep)
        reserve = min(4_096, max(64, target // 8)) if summary_tokens is None else summary_tokens
        require_int(owner, "summary_tokens", reserve, minimum=1, unit="tokens")
        require_choice(owner, "boundary", boundary, ("auto", "user_turn", "model_step"))
        self.boundary = boundary
        self.backoff_adds = validate_backoff(owner, backoff_adds)
        options = with_reasoning_effort(owner, model_options, reasoning_effort)
        # Sized by the ledger of each span unless a size was given (see span()).
        self._sizes_checkpoint = summary_tokens is None and "max_tokens" not in options
        options.setdefault("max_tokens", reserve)
        self.max_tokens = max_tokens
        self.target_tokens = target
        self.keep_recent_tokens = keep
        self.summary_tokens = reserve
        self.settings = Settings(
            default_backend=default_backend,
            pin_predicate=pin_predicate,
            prompt_template=prompt_template,
            model_options=options,
            timeout=timeout,
            retries=retries,
            strict=strict,
            preserve_facts=preserve_facts,
            keep_replaced=keep_replaced,
            on_record=on_record,
            request=request,
        )
        validate_settings(owner, self.settings)
        self._engine = Engine(owner, self.settings)
        self.planner = planner

    def span(self, ctx: ChatContext) -> tuple[int, int, str]:
        """Return ``(p, k, reason)``: the span to summarize, or ``p == k`` and why not."""
        p, k, reason, _ = self._span(ctx)
        return p, k, reason

    def _span(self, ctx: ChatContext) -> tuple[int, int, str, int | None]:
        """:meth:`span`, and the checkpoint's size when the compactor sizes it itself."""
        items = ctx.as_list()
        p, table, loop = span_start(ctx, items, self.settings.pin_predicate)
        n = len(items)

        def turn_starts(opening: tuple[str, ...]) -> list[int]:
            return [
                index
                for index in range(p, n)
                if items[index].role in opening
                and items[index].tool_call_id is None
                and not isinstance(items[index], Checkpoint)
                and is_safe_cut(items, index, table, loop=loop)
            ]

        counter = ctx.counter
        prefix_tokens = count_all(counter, items[:p])
        fixed = prefix_tokens + request_overhead.get()
        starts = turn_starts(("user",) if self.boundary == "user_turn" else ("user", "assistant"))
        if self.boundary == "auto":
            users = [start for start in starts if items[start].role == "user"]
            # One user turn is an agent run: cut at model steps. Of two or more, a current
            # turn that alone leaves no room in the target is one too: cut inside it.
            if len(users) >= 2:
                current = users[-1]
                alone = fixed + self.summary_tokens + count_all(counter, items[current:])
                if alone <= self.target_tokens:
                    starts = users
                else:
                    starts = users + [start for start in starts if start > current]
        if not starts or starts[-1] <= p:
            reason = (
                "the current turn begins at the pinned prefix, so there is no older dialogue "
                "to summarize; a single turn is never split (an agent loop runs as one user "
                'turn: try boundary="model_step")'
            )
            return p, p, reason, None
        # Keep at least keep_recent_tokens: walk back, then widen to a turn start.
        kept = 0
        cut = n
        while cut > p and kept < self.keep_recent_tokens:
            cut -= 1
            kept += count_memoized(counter, items[cut])
        eligible = [start for start in starts if start <= cut]
        kept_from = eligible[-1] if eligible else p
        k = self._fold(items, counter, starts, kept_from, fixed + self.summary_tokens)
        size: int | None = None
        if self._sizes_checkpoint and k > p:
            # The checkpoint needs room for what the ledger of its span must keep (all
            # its rules, constraints, goal and open errors, then its current state), in
            # what the target leaves beside the current turn, which always stays; older
            # turns are folded into it until that room is there. The span grows as turns
            # fold, so its ledger is read once more.
            most = max(self.target_tokens - fixed - count_all(counter, items[starts[-1] :]), 1)
            for _ in range(2):
                needed = checkpoint_room(ctx, items[p:k], most)
                size = max(self.summary_tokens, min(needed, most))
                widened = self._fold(items, counter, starts, kept_from, fixed + size)
                if widened == k:
                    break
                k = widened
        if k <= p:
            reason = (
                f"the recent dialogue to keep ({self.keep_recent_tokens} tokens, in whole user "
                "turns) reaches back to the pinned prefix; nothing older to summarize"
            )
            return p, p, reason, None
        if k - p == 1 and isinstance(items[p], Checkpoint):
            return p, p, "only the previous checkpoint lies before the recent dialogue", None
        return p, k, "", size

    def _fold(
        self, items: list[Component], counter: TokenCounter, starts: list[int], k: int, fixed: int
    ) -> int:
        """The span's end: from ``k``, turns folded into the summary while ``fixed`` plus
        the kept tail misses the target (the current turn always stays)."""
        # The kept tail shrinks turn by turn: subtract each folded turn from its
        # total instead of recounting the tail (that was O(turns x history)).
        tail = count_all(counter, items[k:])
        for start in starts:
            if start <= k:
                continue
            if fixed + tail <= self.target_tokens:
                break
            tail -= count_all(counter, items[k:start])
            k = start
        return k

    def due(self, ctx: ChatContext) -> bool:
        """Return whether ``ctx`` is past the trigger (tool definitions being sent included).

        With a ``planner``, the trigger is the hard limit and the planner may
        compact earlier, when that is cheaper.
        """
        size = ctx.token_count + request_overhead.get()
        if self.planner is None:
            return size > self.max_tokens
        return self.planner.due(
            ctx,
            size=size,
            limit=self.max_tokens,
            target=self.target_tokens,
            summary_tokens=self.summary_tokens,
            request=self.settings.request,
            pin=self.settings.pin_predicate,
        )

    def steps(self, call: CompactCall) -> ChatContext | Steps:
        """Summarize ``call.ctx`` past ``max_tokens``, or ``force`` (the step ``compact`` runs).

        ``compact`` / ``acompact`` return ``ctx`` itself when it is not due,
        when the span is empty (recorded as ``skipped``), when the summary is
        not smaller, or (unless ``strict``) when the backend fails. Riding
        inline (``ChatContext.add``), a model call that leaves ``ctx``
        unchanged starts a failure backoff of ``backoff_adds`` adds; a call of
        your own never does.
        """
        ctx = call.ctx
        p, k, reason, size = self._span(ctx)
        if k <= p:
            self._engine.record(ctx, "skipped", reason, target=self.target_tokens)
            return ctx
        target = self.target_tokens
        return self._engine.steps(
            call, p, k, target=target, backoff_adds=self.backoff_adds, size=size
        )

    def __repr__(self) -> str:
        return (
            f"TokenBudgetCompactor(max_tokens={self.max_tokens}, "
            f"target_tokens={self.target_tokens}, keep_recent_tokens={self.keep_recent_tokens})"
        )
