"""One run of the agent loop: its mutable state, its events and its session writes.

A :class:`Loop` lives for one call of ``areact`` and is never shared. After
each finished turn, :func:`finish_turn` writes what the context gained to the
session (one atomic write), or the whole dialogue after a compaction rewrote
it; the system instructions are never stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import attrs

from .._compaction.records import CompactionRecord, record_between
from .._core.calls import Usage
from .._core.checkpoint import Checkpoint
from .._core.components import Component
from .._core.context import ChatContext
from .._core.protocols import Backend, Compactor
from .events import Event, EventHook, EventKind
from .result import SessionLike


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
    request_only: list[Component] = attrs.Factory(list)
    ctx: ChatContext | None = None
    records: int = 0  # compaction records seen so far
    billed: list[Usage] = attrs.Factory(list)  # each answered request's usage, in order

    def emit(self, kind: EventKind, **fields: Any) -> None:
        if self.on_event is None:
            return
        tokens = self.ctx.token_count if self.ctx is not None else None
        session_id = self.session.session_id if self.session is not None else None
        self.on_event(Event(kind, turn=self.turn, tokens=tokens, session_id=session_id, **fields))

    def report_cut(self, compactor: object, before: ChatContext, *, forced: bool) -> None:
        """Emit the event of a compaction that reported no record itself (a window cut).

        A cut emits ``compaction_applied`` with a record made here; a forced
        run that cut nothing emits ``compaction_skipped``, so a
        ``compaction_started`` always has its completion.
        """
        after = self.ctx
        assert after is not None
        if after is before and not forced:
            return
        applied = after is not before
        self.on_record(
            record_between(
                type(compactor).__name__,
                "applied" if applied else "skipped",
                before,
                after,
                "" if applied else "there was nothing to cut",
                removed=max(len(before) - len(after), 0),
            )
        )

    def on_record(self, record: CompactionRecord) -> None:
        self.records += 1
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


def request_only(ctx: ChatContext, session: SessionLike) -> list[Component]:
    """The dialogue components of ``ctx`` that the session does not store (request-only ones).

    Compared by identity with the snapshot's ``dialogue`` (``session.context()``
    builds the context from those very objects). A session without a
    ``dialogue`` attribute has nothing known to be request-only.
    """
    stored = getattr(session, "dialogue", None)
    if stored is None:
        return []
    known = {id(item) for item in stored}
    return [item for item in dialogue_of(ctx) if id(item) not in known]


def storable(dialogue: list[Component], request_only: list[Component]) -> list[Component]:
    """``dialogue`` without the request-only components, in it or in the spans of checkpoints.

    Only checkpoints made during this run can hold one (a stored checkpoint
    holds only stored components), so the descent stops at the first span
    with none: its depth is bounded by the compactions of one run.
    """
    if not request_only:
        return dialogue
    drop = {id(item) for item in request_only}

    def clean(items: Sequence[Component]) -> list[Component]:
        kept: list[Component] = []
        for item in items:
            if id(item) in drop:
                continue
            if isinstance(item, Checkpoint) and item.span:
                span = clean(item.span)
                if len(span) != len(item.span) or any(
                    a is not b for a, b in zip(span, item.span, strict=True)
                ):
                    item = attrs.evolve(item, span=tuple(span), replaced=None)
            kept.append(item)
        return kept

    return clean(dialogue)


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
            batch = storable(dialogue, loop.request_only)
            cancelled = await _write(loop, session, "replace", batch, dialogue)
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
    loop.committed = dialogue
    return cancelled
