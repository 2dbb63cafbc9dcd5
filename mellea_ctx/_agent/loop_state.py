"""One run of the agent loop: its mutable state, its events and its session writes.

A :class:`Loop` lives for one call of ``areact`` and is never shared. After
each finished turn, :func:`commit` writes what the context gained to the
session (one atomic write), or the whole dialogue after a compaction rewrote
it; the system instructions are never stored.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

from .._compaction.events import Event, EventHook, EventKind
from .._compaction.records import CompactionRecord
from .._core.components import Component
from .._core.context import ChatContext
from .._core.protocols import Backend, Compactor
from .result import SessionLike

__all__ = ["Loop", "dialogue_of", "finish_turn"]


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


async def finish_turn(loop: Loop) -> None:
    """Store what the context gained since the last commit (or its new dialogue), then emit
    ``turn_finished``.

    A session with async writes (``acommit`` / ``areplace``, as
    :class:`~mellea_ctx.Session` has) is written through them, so a SQLite or
    Redis store never blocks the event loop; any other session synchronously.
    A cancellation that arrives while the write is in flight waits for it (the
    write is atomic and already sent): the turn then counts as finished, and
    the cancellation is raised after it, as it would be at the next turn.
    """
    cancelled = False
    session = loop.session
    if session is not None and loop.ctx is not None:
        dialogue = dialogue_of(loop.ctx)
        done = loop.committed
        if dialogue[: len(done)] != done:  # a compaction rewrote the history
            cancelled = await _write(loop, session, "replace", dialogue, dialogue)
        elif len(dialogue) > len(done):
            cancelled = await _write(loop, session, "commit", dialogue[len(done) :], dialogue)
        if loop.committed is not done:
            loop.emit("session_committed")
    loop.emit("turn_finished")
    if cancelled:
        raise asyncio.CancelledError


async def _write(
    loop: Loop, session: SessionLike, name: str, batch: list[Component], dialogue: list[Component]
) -> bool:
    """Write ``batch`` with the session's ``a{name}`` method, or ``name`` when it has none.

    Returns whether a cancellation arrived while the write was in flight.
    """
    method = getattr(session, f"a{name}", None)
    if method is None:
        loop.session = getattr(session, name)(batch)
        loop.committed = dialogue
        return False
    task = asyncio.ensure_future(method(batch))
    try:
        loop.session = await asyncio.shield(task)
        cancelled = False
    except asyncio.CancelledError:
        try:
            loop.session = await task
        except Exception:
            raise asyncio.CancelledError from None  # the write failed: nothing was stored
        cancelled = True
    loop.committed = dialogue
    return cancelled
