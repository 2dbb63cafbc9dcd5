"""One run of the agent loop: its mutable state, its events and its session writes.

A :class:`Loop` lives for one call of ``areact`` and is never shared. After
each finished turn, :func:`commit` writes what the context gained to the
session (one atomic write), or the whole dialogue after a compaction rewrote
it; the system instructions are never stored.
"""

from __future__ import annotations

from typing import Any

import attrs

from .._compaction.events import Event, EventHook, EventKind
from .._compaction.records import CompactionRecord
from .._core.components import Component
from .._core.context import ChatContext
from .._core.protocols import Backend, Compactor
from .result import SessionLike

__all__ = ["Loop", "commit", "dialogue_of"]


@attrs.define
class Loop:
    """Mutable state of one run of the loop (never shared between runs)."""

    backend: Backend
    compactor: Compactor | None
    on_event: EventHook | None
    session: SessionLike | None
    turn: int = 0
    compact_requested: bool = False
    focus: str = ""
    committed: list[Component] = attrs.Factory(list)
    ctx: ChatContext | None = None

    def emit(self, kind: EventKind, **fields: Any) -> None:
        if self.on_event is None:
            return
        tokens = self.ctx.token_count if self.ctx is not None else None
        session_id = self.session.session_id if self.session is not None else None
        self.on_event(Event(kind, turn=self.turn, tokens=tokens, session_id=session_id, **fields))

    def on_record(self, record: CompactionRecord) -> None:
        outcome = record.outcome
        kind: EventKind = (
            "compaction_applied"
            if outcome == "applied"
            else "compaction_skipped"
            if outcome == "skipped"
            else "compaction_failed"
        )
        self.emit(kind, record=record, error=record.error)


def dialogue_of(ctx: ChatContext) -> list[Component]:
    """The history without its leading system messages (instructions are never stored)."""
    items = ctx.as_list()
    start = 0
    while start < len(items) and items[start].role == "system":
        start += 1
    return items[start:]


async def commit(loop: Loop) -> None:
    """Write what the context gained since the last commit, or its new dialogue.

    A session with async writes (``acommit`` / ``areplace``, as
    :class:`~mellea_ctx.Session` has) is written through them, so a SQLite or
    Redis store never blocks the event loop; any other session synchronously.
    """
    session = loop.session
    if session is None or loop.ctx is None:
        return
    dialogue = dialogue_of(loop.ctx)
    done = loop.committed
    if dialogue[: len(done)] == done:
        if len(dialogue) == len(done):
            return
        batch = dialogue[len(done) :]
        write = getattr(session, "acommit", None)
        loop.session = await write(batch) if write is not None else session.commit(batch)
    else:  # a compaction rewrote the history
        rewrite = getattr(session, "areplace", None)
        loop.session = await rewrite(dialogue) if rewrite is not None else session.replace(dialogue)
    loop.committed = dialogue
    loop.emit("session_committed")
