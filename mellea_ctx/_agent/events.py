"""Events: one small hook through which the agent loop says what happened.

Pass any callable that takes an :class:`Event` as ``on_event``: a list's
``append`` in tests, a logger call, a progress bar. Nothing else is needed;
no logging framework is involved.

========================  ====================================================
kind                      when
========================  ====================================================
``turn_started``          before the model is asked, once per turn
``turn_finished``         after the turn's output and tool results are in
``tool_called``           after each tool ran (``error`` set when it raised)
``compaction_started``    before a compaction the loop runs
``compaction_applied``    a checkpoint or a cut replaced history
``compaction_skipped``    there was nothing worth compacting
``compaction_failed``     the backend or the summary failed; context unchanged
``context_overflow``      the provider said the request is too long (``error``)
``session_committed``     a turn was written to the session store
``turn_failed``           the turn raised (``error`` says what); sent before
                          the exception propagates, nothing was committed
========================  ====================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import attrs

from .._compaction.records import CompactionRecord

EventKind = Literal[
    "turn_started",
    "turn_finished",
    "tool_called",
    "compaction_started",
    "compaction_applied",
    "compaction_skipped",
    "compaction_failed",
    "context_overflow",
    "session_committed",
    "turn_failed",
]


@attrs.define(frozen=True, slots=True)
class Event:
    """Something the agent loop did.

    Attributes:
        kind: What happened (see the table in this module).
        turn: The loop's turn number, from 1.
        tool: The tool's name, for ``tool_called``.
        error: What went wrong, for a failed tool, compaction or turn.
        record: The compaction's record, for ``compaction_*`` events: the
            one a summarizing compactor reported, or for a compactor that
            reports none (a window cut), one the loop made.
        tokens: The context's token total when the event was emitted.
        session_id: The session, when the loop writes to one.
    """

    kind: EventKind
    turn: int = 0
    tool: str | None = None
    error: str | None = None
    record: CompactionRecord | None = None
    tokens: int | None = None
    session_id: str | None = None


#: A callable that receives each event.
EventHook = Callable[[Event], None]
