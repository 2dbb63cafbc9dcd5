"""Compaction records: what each compaction did, for callers who want to know.

Every summarizing compaction, applied or not, produces one
:class:`CompactionRecord` and hands it to the compactor's ``on_record``
callback. A failed or skipped compaction also leaves the context unchanged
(the very same object), so the record is the only trace it leaves; failures
also raise a :class:`CompactionWarning`.

Every compactor reports through :func:`emit_record`, the one record path: the
record reaches the ``mellea_ctx`` logger and the current OpenTelemetry span,
then the compactor's hook, then the agent loop's :data:`record_sink`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal

import attrs

from .._backends.telemetry import observe_compaction, observing
from .._core.facts import Fact
from .._core.ledger import LedgerEntry
from .planner import pending_decision

if TYPE_CHECKING:
    from .._core.context import ChatContext

Outcome = Literal["applied", "skipped", "failed", "timed_out", "cancelled"]


class CompactionWarning(UserWarning):
    """A compaction failed and the context was left as it was."""


@attrs.define(frozen=True, slots=True)
class CompactionRecord:
    """What one compaction did.

    Attributes:
        strategy: The compactor's class name.
        outcome: ``applied``, ``skipped`` (nothing worth doing, or the summary
            was not smaller), ``failed`` (the backend or the summary failed),
            ``timed_out`` (the timeout passed first: whatever arrives later is
            never applied) or ``cancelled``.
        reason: A sentence saying why, for anything but ``applied``.
        components_before: Components in the context before.
        components_after: Components after (equal to before unless applied).
        tokens_before: Token total before.
        tokens_after: Token total after.
        removed: Components the checkpoint replaced.
        seconds: Wall time spent, model call included.
        facts_checked: Exact details looked for in the summary.
        facts_carried: The ones the summary lost, carried over verbatim.
        over_target: The result (for an outcome other than ``applied``, the
            context left as it was) is above the compactor's target size.
        error: The error's ``repr`` when the outcome is ``failed``.
        attempts: Requests sent to the backend, retries included (``0`` when
            no model was called, or the bridge's safety net gave up first).
        tier: For a :class:`~mellea_ctx.TieredCompactor`, the index of the
            tier whose result it kept (``None`` otherwise, or when no tier ran).
        ledger_omitted: Ledger entries the checkpoint holds as data but could
            not show within its size (lowest priority first to go).
        details_dropped: Exact details the summary lost that did not fit
            the checkpoint's size either.
        predicted_cost: With a :class:`~mellea_ctx.CompactionPlanner`, what it
            priced compacting at, once (summary call and rewrite, less the
            cached reads it forfeits), in its pricing's units; ``None`` without one.
        predicted_saving: What it expected the shorter request to save over
            its horizon.
        break_even_steps: Steps after which it expected the compaction to have
            paid for itself (``None``: saves nothing per step, or no planner).
        forced: The planner compacted because the hard limit forced it.
    """

    strategy: str
    outcome: Outcome
    reason: str = ""
    components_before: int = 0
    components_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    removed: int = 0
    seconds: float = 0.0
    facts_checked: tuple[Fact, ...] = ()
    facts_carried: tuple[Fact, ...] = ()
    over_target: bool = False
    error: str | None = None
    attempts: int = 0
    tier: int | None = None
    ledger_omitted: tuple[LedgerEntry, ...] = ()
    details_dropped: tuple[Fact, ...] = ()
    predicted_cost: float | None = None
    predicted_saving: float | None = None
    break_even_steps: float | None = None
    forced: bool | None = None


def record_between(
    strategy: str,
    outcome: Outcome,
    before: ChatContext,
    after: ChatContext,
    reason: str = "",
    *,
    removed: int = 0,
    over_target: bool = False,
    tier: int | None = None,
) -> CompactionRecord:
    """A record of ``before`` becoming ``after``, their sizes filled in from the two contexts."""
    return CompactionRecord(
        strategy=strategy,
        outcome=outcome,
        reason=reason,
        components_before=len(before),
        components_after=len(after),
        tokens_before=before.token_count,
        tokens_after=after.token_count,
        removed=removed,
        over_target=over_target,
        tier=tier,
    )


#: A callback that receives each record.
RecordHook = Callable[[CompactionRecord], None]

#: Where records also go while it is set: an agent loop points it at its event
#: hook for the compactions it runs, so records reach events without the
#: compactor being built with ``on_record``. Context variables follow the
#: bridge into its worker thread, so this works for ``compact()`` too.
record_sink: ContextVar[RecordHook | None] = ContextVar("mellea_ctx_record_sink", default=None)


def wants_records(hook: RecordHook | None) -> bool:
    """Whether a record made now would reach anyone (so whether to build it at all)."""
    return hook is not None or record_sink.get() is not None or observing()


def emit_record(record: CompactionRecord, hook: RecordHook | None) -> None:
    """Log and trace ``record``, then hand it to ``hook`` and to the current :data:`record_sink`.

    A planner's decision behind this compaction (:data:`pending_decision`, for
    the context it was made on) becomes the record's ledger.
    """
    decision = pending_decision.get()
    if decision is not None and decision.tokens >= record.tokens_before > 0:
        pending_decision.set(None)
        record = attrs.evolve(
            record,
            predicted_cost=decision.predicted_cost,
            predicted_saving=decision.predicted_saving,
            break_even_steps=decision.break_even_steps,
            forced=decision.forced,
        )
    observe_compaction(record)  # the mellea_ctx logger, and a compaction span
    if hook is not None:
        hook(record)
    sink = record_sink.get()
    if sink is not None:
        sink(record)
