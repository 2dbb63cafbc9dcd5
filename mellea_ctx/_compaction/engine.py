"""The summarize-and-replace step both summarizing compactors share.

Given a context and a span ``items[p:k]`` to replace, the engine renders the
span, asks the backend for a summary (bounded retries with backoff for
retryable errors, one overall timeout), refuses an empty summary or one made
of tool calls, checks the span's exact details and carries the lost ones
over, and applies the :class:`~mellea_ctx.Checkpoint` only when it is smaller
than what it replaces. Every attempt produces a
:class:`~mellea_ctx.CompactionRecord`. A failure comes back as ``Failed``,
which the public method turns into the strict error or a warning in the
caller's own frame.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from .._backends.bridge import bounded, wait_in_worker
from .._backends.telemetry import (
    compaction_span,
    model_call_span,
    observe_retry,
)
from .._core.boundaries import prefix_end, safe_cut_table, thinking_loop_start
from .._core.checkpoint import Checkpoint
from .._core.components import Component, Message, ModelOutputThunk
from .._core.exceptions import (
    BackendError,
    CompactionError,
    CompactionTimeoutError,
    EmptySummaryError,
    InvalidArgumentError,
    RateLimitError,
    SummaryToolCallError,
)
from .._core.facts import Fact, extract_facts, missing_facts, remember_checked
from .._core.ledger import Ledger, LedgerEntry, derive_ledger, render_entries, updated_later
from .._core.pins import PinPredicate
from .._core.protocols import Backend, CompactCall, Steps, inline_backoff
from .._core.tokens import count_all, count_memoized
from .._core.tools import Tool
from .._formats.quoted import quote
from .backoff import backed_off
from .chunked import summarize_span
from .continuation import summarize_continuing
from .prompts import fill_template
from .records import CompactionRecord, CompactionWarning, Outcome, emit_record
from .render_budget import choose_block, choose_entries, shows_more, state_tokens
from .settings import Settings

if TYPE_CHECKING:
    from .._core.context import ChatContext

_RETRY_BASE_SECONDS = 0.5
_RETRY_CAP_SECONDS = 8.0
# The longest a provider's Retry-After is waited for (a longer one is cut to it).
_RETRY_AFTER_CAP_SECONDS = 32.0

# Set (in the bridge's copy of the caller's context) once a blocking caller
# gave up on a compaction: the abandoned step reports nothing more.
_abandoned: ContextVar[threading.Event | None] = ContextVar("mellea_ctx_abandoned", default=None)
# Where a summarize step's records wait until the step is known to have counted.
_deferred: ContextVar[list[CompactionRecord] | None] = ContextVar(
    "mellea_ctx_deferred", default=None
)


@attrs.define(frozen=True, slots=True)
class Failed:
    """A failed compaction: the unchanged context and the error, on the way out."""

    ctx: ChatContext
    error: Exception


class Engine:
    """The summarize-and-replace step shared by both compactors."""

    def __init__(self, owner: str, settings: Settings) -> None:
        self.owner = owner
        self.settings = settings

    def backend_for(self, backend: Backend | None) -> Backend:
        chosen = backend if backend is not None else self.settings.default_backend
        if chosen is None:
            msg = (
                f"{self.owner} has no backend: pass compact(ctx, backend=...) or build it "
                "with default_backend=... (ExtractiveBackend() works offline)"
            )
            raise InvalidArgumentError(msg)
        return chosen

    def report(self, record: CompactionRecord) -> None:
        deferred = _deferred.get()
        if deferred is not None:
            deferred.append(record)
            return
        gave_up = _abandoned.get()
        if gave_up is not None and gave_up.is_set():
            return  # the blocking caller has already recorded this compaction as timed out
        emit_record(record, self.settings.on_record)

    def record(
        self,
        ctx: ChatContext,
        outcome: Outcome,
        reason: str,
        *,
        target: int | None = None,
        **fields: Any,
    ) -> None:
        """Report what happened to ``ctx``; ``over_target`` is read off what it left."""
        tokens = ctx.token_count
        fields.setdefault("components_after", len(ctx))
        fields.setdefault("tokens_after", tokens)
        fields["over_target"] = target is not None and fields["tokens_after"] > target
        self.report(
            CompactionRecord(
                strategy=self.owner,
                outcome=outcome,
                reason=reason,
                components_before=len(ctx),
                tokens_before=tokens,
                **fields,
            )
        )

    async def generate(
        self,
        backend: Backend,
        messages: list[Component],
        attempts: list[int] | None = None,
        tools: Sequence[Tool] = (),
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """Ask ``backend`` for the summary, retrying retryable errors a bounded number of times.

        At most ``1 + retries`` requests. A wait (exponential, or the
        provider's ``Retry-After``, capped) that would end past the
        compaction's own timeout is not started: the error is raised at
        once, since the retry could not finish in time anyway. ``attempts``,
        when given, is a one-item list that counts the requests made.
        """
        settings = self.settings
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.timeout
        attempt = 0
        while True:
            if attempts is not None:
                attempts[0] += 1
            try:
                if options is None:
                    options = settings.model_options
                output = await _request(backend, messages, tools, options)
                break
            except BackendError as exc:
                if not exc.retryable or attempt >= settings.retries:
                    raise
                delay = _retry_delay(exc, attempt)
                if loop.time() + delay >= deadline:
                    raise  # waiting would run into the timeout: report the real error now
                attempt += 1
                observe_retry(self.owner, attempt, settings.retries, delay, exc)
                await asyncio.sleep(delay)
        return _summary_of(output)

    async def replace(
        self,
        ctx: ChatContext,
        p: int,
        k: int,
        backend: Backend | None,
        *,
        target: int | None = None,
        instructions: str | None = None,
        size: int | None = None,
    ) -> ChatContext | Failed:
        """Summarize ``items[p:k]`` into one checkpoint; return the new context or ``ctx``.

        ``size``, when given, is the checkpoint's size in tokens for this
        compaction (the ``max_tokens`` of the model options otherwise). The
        whole step is bounded by the timeout (see :func:`bounded`): past it
        the result is never applied, whenever it arrives, and a ``timed_out``
        record is reported.
        """
        with compaction_span(self.owner):  # a span when OpenTelemetry is configured
            started = time.perf_counter()
            chosen = self.backend_for(backend)
            attempts = [0]
            # What the step reports waits here until it is known to count: a step
            # that is timed out or cancelled (even after it finished) reports nothing.
            pending: list[CompactionRecord] = []
            token = _deferred.set(pending)  # seen by the step's own task
            try:
                outcome = await bounded(
                    lambda: self._replace(
                        ctx, p, k, chosen, target, instructions, started, attempts, size
                    ),
                    self.settings.timeout,
                    f"{self.owner}: the summary",
                )
            except CompactionTimeoutError as exc:
                _deferred.reset(token)
                return self.fail(ctx, exc, started, target, attempts[0], outcome="timed_out")
            except asyncio.CancelledError:
                _deferred.reset(token)
                self.record(
                    ctx,
                    "cancelled",
                    "the compaction was cancelled",
                    target=target,
                    seconds=_since(started),
                    attempts=attempts[0],
                )
                raise
            _deferred.reset(token)
            for record in pending:
                self.report(record)
            return outcome

    async def _replace(
        self,
        ctx: ChatContext,
        p: int,
        k: int,
        chosen: Backend,
        target: int | None,
        instructions: str | None,
        started: float,
        attempts: list[int],
        size: int | None = None,
    ) -> ChatContext | Failed:
        span = ctx[p:k]
        preserve = self.settings.preserve_facts
        facts: list[Fact] = extract_facts(span) if preserve else []
        ledger = derive_ledger(span) if preserve else Ledger()
        replaced_count = _replaced_count(span)
        options = self.settings.model_options
        if size is not None:
            options = {**options, "max_tokens": size}
        # What the messages kept after the checkpoint update is not shown as current:
        # they say the newer value (the ledger keeps both, for a later merge).
        later = updated_later(ledger, ctx[k:]) if preserve else frozenset()
        shown = Ledger(e for e in ledger.entries if e.key not in later) if later else ledger
        plan = _plan(ctx, span, shown, facts, replaced_count, options)
        if later:
            hidden = tuple(e for e in ledger.entries if e.key in later)
            plan = attrs.evolve(plan, omitted=plan.omitted + hidden)
        focus = _focus(instructions)
        try:
            summary = await self._summary(
                ctx, p, k, span, chosen, instructions, focus, facts, attempts, plan.options
            )
        except CompactionTimeoutError:
            raise  # the overall deadline, handled by ``replace``
        except (BackendError, CompactionError) as exc:
            return self.fail(ctx, exc, started, target, attempts[0])
        except Exception as exc:  # a user's backend raising its own error: a backend failure
            return self.fail(ctx, _backend_failure(exc), started, target, attempts[0])
        checkpoint, lost, omitted, dropped = self._checkpoint(
            ctx, summary, facts, ledger, plan, span, replaced_count
        )
        counter = ctx.counter
        span_tokens = count_all(counter, span)
        checkpoint_tokens = count_memoized(counter, checkpoint)
        applied = checkpoint_tokens < span_tokens
        result = ctx.replace_span(p, k, (checkpoint,)) if applied else ctx
        if applied:
            outcome: Outcome = "applied"
            reason = ""
            after = {"components_after": len(result), "tokens_after": result.token_count}
            after["removed"] = len(span)
        else:
            outcome = "skipped"
            reason = (
                f"the checkpoint ({checkpoint_tokens} tokens) is not smaller than the "
                f"{len(span)} components it would replace ({span_tokens} tokens)"
            )
            after = {}
        self.record(
            ctx,
            outcome,
            reason,
            target=target,
            seconds=_since(started),
            facts_checked=tuple(facts),
            facts_carried=tuple(lost),
            attempts=attempts[0],
            ledger_omitted=omitted,
            details_dropped=dropped,
            **after,
        )
        return result

    async def _summary(
        self,
        ctx: ChatContext,
        p: int,
        k: int,
        span: Sequence[Component],
        chosen: Backend,
        instructions: str | None,
        focus: str,
        facts: list[Fact],
        attempts: list[int],
        options: Mapping[str, Any],
    ) -> str:
        """The summary of ``items[p:k]``: by a continuation request when the settings ask
        for one and it answers, else by a quoted request (``focus`` ends its prompt)."""
        template = self.settings.prompt_template

        def frame(conversation: str) -> str:
            return template.format(conversation=conversation) + focus

        def frame_lines(lines: list[str]) -> str:  # the same prompt, built in one join
            return fill_template(template, lines, focus)

        summary = None
        if self.settings.request == "continuation":
            summary = await summarize_continuing(
                ctx,
                p,
                k,
                chosen,
                instructions,
                options,
                lambda messages, tools: self.generate(chosen, messages, attempts, tools, options),
            )
        return summary or await self._quoted(
            span, chosen, ctx.counter, frame, facts, attempts, options, frame_lines
        )

    def _checkpoint(
        self,
        ctx: ChatContext,
        summary: str,
        facts: list[Fact],
        ledger: Ledger,
        plan: _Plan,
        span: Sequence[Component],
        replaced_count: int,
    ) -> tuple[Checkpoint, list[Fact], tuple[LedgerEntry, ...], tuple[Fact, ...]]:
        """:func:`_fit`'s checkpoint, holding what it replaced when the settings keep it."""
        keep = self.settings.keep_replaced
        checkpoint, lost, omitted, dropped = _fit(
            ctx,
            summary,
            facts,
            ledger,
            plan,
            span_of=span,
            replaced=ctx if keep else None,
            span=span if keep else (),
            replaced_count=replaced_count,
        )
        if self.settings.preserve_facts and checkpoint.span:
            remember_checked(checkpoint, facts)  # the next compaction need not choose them again
        return checkpoint, lost, omitted, dropped

    async def _quoted(
        self,
        span: Any,
        chosen: Backend,
        counter: Any,
        frame: Any,
        facts: list[Fact],
        attempts: list[int],
        options: Mapping[str, Any],
        frame_lines: Callable[[list[str]], str] | None = None,
    ) -> str:
        """A quoted summary request (or chunks of them): the span as a fresh prompt."""
        summary, _ = await summarize_span(
            span,
            chosen,
            counter,
            frame,
            lambda messages: self.generate(chosen, messages, attempts, options=options),
            options,
            [fact.text for fact in facts],
            frame_lines,
        )
        return summary

    def fail(
        self,
        ctx: ChatContext,
        error: Exception,
        started: float,
        target: int | None = None,
        attempts: int = 0,
        *,
        outcome: Outcome = "failed",
    ) -> Failed:
        """Record a failure; hand it to the public method, which raises or warns."""
        self.record(
            ctx,
            outcome,
            str(error),
            target=target,
            seconds=_since(started),
            error=repr(error),
            attempts=attempts,
        )
        return Failed(ctx, error)

    def settle(self, outcome: ChatContext | Failed) -> ChatContext:
        """Turn a failure into the strict error or a warning, pointed at the caller's line.

        Called by :class:`Summary`'s ``run`` / ``arun``, which the compactor's
        ``compact`` / ``acompact`` drives.
        """
        if not isinstance(outcome, Failed):
            return outcome
        if self.settings.strict:
            raise outcome.error
        warnings.warn(
            f"{self.owner}: compaction failed and the context was left as it was: {outcome.error}",
            CompactionWarning,
            stacklevel=5,  # settle, the effect's run, the driver, compact: the caller's line
        )
        return outcome.ctx

    def steps(
        self,
        call: CompactCall,
        p: int,
        k: int,
        *,
        target: int | None = None,
        backoff_adds: int,
        size: int | None = None,
    ) -> Steps:
        """The steps of summarizing ``call.ctx[p:k]``, for both summarizing compactors.

        One :class:`Summary` effect (``size``: the checkpoint's, as for
        :meth:`replace`); riding inline (:func:`inline_backoff`), a model call
        that left ``ctx`` as it was starts a failure backoff of
        ``backoff_adds`` adds (an ``acompact``, or a call of your own, never does).
        """
        result = yield Summary(self, call, p, k, target, size)
        return backed_off(result, call.ctx, inline_backoff(backoff_adds))

    def run_sync(
        self, ctx: ChatContext, make: Any, target: int | None = None
    ) -> ChatContext | Failed:
        """Run ``make()`` (an awaitable ``replace``) from blocking code.

        ``replace`` bounds itself; the caller waits at most the timeout plus
        the bridge's grace (:data:`GRACE_SECONDS`, one second) for a backend
        that blocks its loop. When the caller gives up, that is recorded as
        ``timed_out`` here, and nothing the abandoned step does later is
        applied or reported.
        """
        started = time.perf_counter()
        gave_up = threading.Event()
        token = _abandoned.set(gave_up)
        try:
            result: ChatContext | Failed = wait_in_worker(make, timeout=self.settings.timeout)
        except CompactionTimeoutError as exc:
            gave_up.set()
            _abandoned.reset(token)  # this frame still reports
            return self.fail(ctx, exc, started, target, outcome="timed_out")
        _abandoned.reset(token)
        return result


@attrs.define(frozen=True, slots=True)
class Summary:
    """The effect of summarizing ``call.ctx[p:k]`` into one checkpoint (see :meth:`Engine.replace`).

    ``run`` waits for it from blocking code (:meth:`Engine.run_sync`), ``arun``
    awaits it; both settle a failure (the strict error, or a warning) and give
    the new context, or ``ctx`` itself.
    """

    engine: Engine
    call: CompactCall
    p: int
    k: int
    target: int | None = None
    size: int | None = None

    def _replace(self) -> Awaitable[ChatContext | Failed]:
        call = self.call
        ctx, backend, instructions = call.ctx, call.backend, call.instructions
        return self.engine.replace(
            ctx,
            self.p,
            self.k,
            backend,
            target=self.target,
            instructions=instructions,
            size=self.size,
        )

    def run(self) -> ChatContext:
        """The summary, blocking (safe inside a running loop)."""
        engine = self.engine
        return engine.settle(engine.run_sync(self.call.ctx, self._replace, self.target))

    async def arun(self) -> ChatContext:
        """The summary, awaited."""
        return self.engine.settle(await self._replace())


# The least room a summary is left when the ledger fills the checkpoint's size.
_MIN_SUMMARY = 10
# The share of the room the ledger's history may fill (the rest of the ledger may take it all).
_LEDGER_SHARE = 0.7
# How many times the ledger's block is chosen again for the room a short summary left.
_REFILLS = 3
#: The share of the room left after the ledger that the exact details may keep from the summary.
_DETAILS_SHARE = 0.4


@attrs.define(frozen=True, slots=True)
class _Plan:
    """How a checkpoint's size is shared: the whole size, the ledger's keys, the summary's ask."""

    budget: int | None
    shown: tuple[str, ...]
    omitted: tuple[LedgerEntry, ...]
    options: Mapping[str, Any]
    short: tuple[str, ...] = ()  # shown without their filler words: too little room
    # What the room a short summary leaves may add: the ledger the entries were chosen
    # from (none updated by the messages kept after it) and the cap of its history.
    ledger: Ledger = attrs.field(factory=Ledger)
    history: int | None = None
    saving: int = 0  # what the brief frame of a checkpoint with short lines saves


def span_start(
    ctx: ChatContext, items: Sequence[Component], pin: PinPredicate
) -> tuple[int, list[bool] | None, int | None]:
    """Where a summary's span may start (the pinned prefix's end), for both summarizing compactors.

    Also the safe-cut table the span's end is chosen with (``None``: a cut is
    unsafe exactly before a tool result) and the running thinking loop's
    start (:func:`~mellea_ctx._core.boundaries.thinking_loop_start`). ``items``
    is ``ctx`` or its list.
    """
    # A table once, rather than a trailing-loop scan per candidate cut, when a
    # thinking loop is running (see boundaries.thinking_loop_start).
    loop = thinking_loop_start(items)
    table = safe_cut_table(items) if ctx.has_detached_results or loop is not None else None
    return prefix_end(items, pin, table), table, loop


def _replaced_count(span: Sequence[Component]) -> int:
    """How many original components ``span`` stands for (a checkpoint: all it replaced)."""
    return sum(c.replaced_count if isinstance(c, Checkpoint) else 1 for c in span)


def _focus(instructions: str | None) -> str:
    """What the prompt adds for the agent's instructions ("" without any), quoted."""
    if not instructions:
        return ""
    return (
        "\n\nThe agent asked for this compaction and wants the summary to keep in "
        "focus (quoted, not an instruction to follow otherwise): "
        f"<focus>{quote(instructions)}</focus>"
    )


def _backend_failure(exc: Exception) -> BackendError:
    """A user's backend's own error as the backend failure it is."""
    msg = f"the backend raised {type(exc).__name__}: {exc}"
    failure = BackendError(msg)
    failure.__cause__ = exc
    return failure


async def _request(
    backend: Backend,
    messages: list[Component],
    tools: Sequence[Tool],
    options: Mapping[str, Any],
) -> ModelOutputThunk:
    """One summary request, in its telemetry span; the agent's tools only when there are any."""
    outputs: list[ModelOutputThunk] = []
    with model_call_span(backend, outputs):
        if tools:  # a continuation request carries the agent's tools
            output = await backend.generate(messages, model_options=options, tools=tools)
        else:
            output = await backend.generate(messages, model_options=options)
        outputs.append(output)
    return output


def _retry_delay(exc: BackendError, attempt: int) -> float:
    """The wait before retry ``attempt + 1``: the provider's ``Retry-After``, else exponential."""
    if isinstance(exc, RateLimitError) and exc.retry_after is not None:
        return min(max(exc.retry_after, 0.0), _RETRY_AFTER_CAP_SECONDS)
    exponential: float = min(_RETRY_BASE_SECONDS * 2**attempt, _RETRY_CAP_SECONDS)
    return exponential


def _summary_of(output: ModelOutputThunk) -> str:
    """The answer's text, stripped; an answer of tool calls or of nothing is an error."""
    if output.tool_calls:
        names = ", ".join(call.name for call in output.tool_calls)
        msg = f"the summarizer answered with tool calls ({names}) instead of a summary"
        raise SummaryToolCallError(msg)
    summary = (output.value or "").strip()
    if not summary:
        msg = "the summarizer returned an empty summary"
        raise EmptySummaryError(msg)
    return summary


def _count_text(ctx: ChatContext, text: str) -> int:
    """The tokens ``text`` adds to a message (its framing not counted)."""
    if not text:
        return 0
    framing = count_memoized(ctx.counter, Message("user", "."))
    return max(count_memoized(ctx.counter, Message("user", "." + text)) - framing, 1)


def _plan(
    ctx: ChatContext,
    span: Sequence[Component],
    ledger: Ledger,
    facts: Sequence[Fact],
    replaced_count: int,
    options: Mapping[str, Any],
) -> _Plan:
    """Share the checkpoint's size between the ledger, the exact details and the summary.

    With ``max_tokens`` in the model options, that is the size of the whole
    checkpoint (header, summary, ledger and carried details): the ledger is
    chosen first, by priority, then room is kept for the exact details the
    shown entries do not hold (up to :data:`_DETAILS_SHARE` of what is left:
    a summary that states them verbatim leaves that room unused), and the
    summary is asked for the rest.
    Without it, the rules, constraints, goal and open errors show, and the rest of
    the ledger within a quarter of the span's tokens.
    """
    budget = _asked_size(options)

    def count(text: str) -> int:
        return _count_text(ctx, text)

    header = count_memoized(ctx.counter, Checkpoint(".", replaced_count=replaced_count))
    if budget is None:
        # No size asked: rules, constraints, the goal and open errors all show (the
        # checkpoint must still be smaller than its span); the rest within a quarter of it.
        span_tokens = count_all(ctx.counter, span)
        quarter = span_tokens // 4
        shown, omitted = choose_entries(
            ledger, span_tokens - header, count, history_tokens=quarter, state_tokens=quarter
        )
        return _Plan(None, shown, omitted, options)
    room = max(budget - header - _MIN_SUMMARY - 4, 0)  # the blank line, the summary's least
    # Rules, constraints, the goal, open errors and current state may take the whole
    # room (the summary keeps its least); history only the ledger's share of it.
    saving = _brief_saving(ctx, replaced_count)
    shown, omitted, short = choose_block(ledger, room, count, int(room * _LEDGER_SHARE), saving)
    shown_entries = [e for e in ledger.entries if e.key in set(shown)]
    state = render_entries(shown_entries, short=short) if shown_entries else ""
    used = count(state) if state else 0
    left = max(budget - header - used - 4, 0)
    reserve = _details_reserve(_details(facts, ledger, state), left, count)
    summary_room = min(max(left - reserve, _MIN_SUMMARY // 2), budget)
    options = {**options, "max_tokens": summary_room}
    history = int(room * _LEDGER_SHARE)
    return _Plan(
        budget, shown, omitted, options, short, ledger=ledger, history=history, saving=saving
    )


def _brief_saving(ctx: ChatContext, replaced_count: int) -> int:
    """The tokens a checkpoint's brief frame saves: what its short lines may use.

    Measured on a checkpoint of one rule, full and short, so the frame says its
    rules hold in both (the smaller of its two savings).
    """
    ledger = Ledger([LedgerEntry("rule", "r", "x")])
    full = Checkpoint(".", replaced_count=replaced_count, ledger=ledger)
    brief = Checkpoint(".", replaced_count=replaced_count, ledger=ledger, short=("r",))
    return max(count_memoized(ctx.counter, full) - count_memoized(ctx.counter, brief), 0)


def checkpoint_room(ctx: ChatContext, span: Sequence[Component], state_cap: int) -> int:
    """The tokens a checkpoint of ``span`` needs to show what its ledger must keep.

    Its header, every rule, constraint, goal and open error of the span's
    ledger, its current state within ``state_cap`` and the summary's least
    room: what a compactor sizing its own checkpoint reserves for it. ``0``
    when the ledger has nothing to show.
    """

    def count(text: str) -> int:
        return _count_text(ctx, text)

    state = state_tokens(derive_ledger(span), count, state_cap)
    if not state:
        return 0
    header = count_memoized(ctx.counter, Checkpoint(".", replaced_count=_replaced_count(span)))
    return header + state + _MIN_SUMMARY + 4


def _asked_size(options: Mapping[str, Any]) -> int | None:
    """The checkpoint's size ``max_tokens`` asks for: a positive int (not a bool), else none."""
    asked = options.get("max_tokens")
    return asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else None


def _details_reserve(details: list[Fact], left: int, count: Callable[[str], int]) -> int:
    """The tokens kept out of the summary's ``left`` for the exact ``details`` it carries."""
    if not details:
        return 0
    block = "Exact details from the summarized messages:\n" + "\n".join(
        f"- {fact.text}" for fact in details
    )
    # Never out of the summary's least room: a summary too small to hold a sentence
    # comes back empty, and the compaction fails.
    return min(count(block) + 1, int(left * _DETAILS_SHARE), max(left - 2 * _MIN_SUMMARY, 0))


def _details(facts: Sequence[Fact], ledger: Ledger, shown: str) -> list[Fact]:
    """The exact details a checkpoint must carry: in neither ``shown`` nor the ledger's values.

    The ledger decides about the user's statements (constraints, decisions)
    and about what its entries hold.
    """
    held = [v for e in ledger.entries for v in (e.value, *e.superseded)]
    return [
        fact
        for fact in missing_facts(facts, shown)
        if not (ledger and fact.kind in ("constraint", "decision"))
        and not any(fact.text in value for value in held)
    ]


def _fit(
    ctx: ChatContext,
    summary: str,
    facts: list[Fact],
    ledger: Ledger,
    plan: _Plan,
    *,
    span_of: Sequence[Component],
    replaced: ChatContext | None,
    span: Sequence[Component],
    replaced_count: int,
) -> tuple[Checkpoint, list[Fact], tuple[LedgerEntry, ...], tuple[Fact, ...]]:
    """Build the checkpoint within the plan's size: carried details go first, then entries.

    Returns the checkpoint, the details it carries, the ledger entries it does
    not show and the lost details it had no room for.
    """
    shown = list(plan.shown)
    short = plan.short
    omitted = list(plan.omitted)
    state = render_entries([e for e in ledger.entries if e.key in set(shown)], short=short)
    lost = _details(facts, ledger, summary + "\n" + state)
    carried = list(lost)

    def build() -> Checkpoint:
        return Checkpoint(
            summary,
            preserved=[fact.text for fact in carried],
            replaced=replaced,
            span=span,
            replaced_count=replaced_count,
            ledger=ledger,
            shown=tuple(shown),
            short=short,
        )

    checkpoint = build()
    priority = {key: rank for rank, key in enumerate(plan.shown)}

    def filled() -> None:
        """The room a summary shorter than asked left goes to the ledger: its block is
        chosen again, as :func:`_plan` chose it, for the room it now has (not the room
        of exact details that gave way: they came first)."""
        nonlocal checkpoint, shown, short, priority
        budget = plan.budget or 0
        slack = budget - count_memoized(ctx.counter, checkpoint)
        if slack <= 0 or len(carried) < len(lost):
            return
        if all(e.key in priority for e in plan.ledger.entries):
            return  # nothing left out
        block = [e for e in ledger.entries if e.key in set(shown)]
        room = slack + (_count_text(ctx, render_entries(block, short=short)) if block else 0)
        if short:  # the room of a full frame, as choose_block takes it
            room -= plan.saving
        before = (shown, short, checkpoint)
        for _ in range(_REFILLS):  # the block's estimate can run over: ask again, smaller
            keys, _, wider_short = choose_block(
                plan.ledger, room, lambda text: _count_text(ctx, text), plan.history, plan.saving
            )
            if not shows_more(plan.ledger, keys, before[0]):
                break
            shown, short = list(keys), wider_short
            checkpoint = build()
            over = count_memoized(ctx.counter, checkpoint) - budget
            if over <= 0:
                priority = {key: rank for rank, key in enumerate(keys)}
                omitted[:] = [e for e in omitted if e.key not in priority]
                return
            room -= over
        shown, short, checkpoint = before  # no wider block fits: as it was

    def fits(limit: int, details_first: bool) -> None:
        nonlocal checkpoint
        while count_memoized(ctx.counter, checkpoint) > limit:
            # The names index goes before an exact detail: it points at what the details
            # and entries state (the least salient name first).
            names = [key for key in shown if key.startswith("name:")]
            if carried and details_first and names:
                key = max(names, key=lambda key: priority.get(key, 0))
                shown.remove(key)
                omitted.extend(e for e in ledger.entries if e.key == key)
            elif carried and details_first:
                del carried[len(carried) * 3 // 4 :]  # the last quarter of the details
            elif shown:
                # The summary ran long: the least important shown entry goes.
                shown.sort(key=lambda key: priority.get(key, 0))
                key = shown.pop()
                omitted.extend(e for e in ledger.entries if e.key == key)
            else:
                return  # the summary alone is over: reported by the record's sizes
            checkpoint = build()

    if plan.budget is not None:  # the size asked: carried details give way first
        fits(plan.budget, details_first=True)
        filled()
    # Smaller than the span in any case: a checkpoint its ledger made larger is no use.
    fits(count_all(ctx.counter, span_of) - 1, details_first=False)
    kept = {fact.text for fact in carried}
    dropped = tuple(fact for fact in lost if fact.text not in kept)
    return checkpoint, carried, tuple(omitted), dropped


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 6)
