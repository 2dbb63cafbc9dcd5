"""What an agent loop returns, and what it needs of a session to write to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import attrs

from .._core.components import Component
from .._core.context import ChatContext

__all__ = ["ReactResult", "SessionLike"]


class SessionLike(Protocol):
    """What the loop needs of a session snapshot (``SessionMemory.open(...)`` returns one)."""

    @property
    def session_id(self) -> str: ...

    def commit(self, components: Sequence[Component]) -> SessionLike:
        """Store one finished turn atomically; return the new snapshot."""
        ...

    def replace(self, dialogue: Sequence[Component]) -> SessionLike:
        """Store the dialogue a compaction produced; return the new snapshot."""
        ...


@attrs.define(frozen=True, slots=True)
class ReactResult:
    """How an agent loop ended.

    Attributes:
        answer: The model's final text, or ``None`` when the budget ran out.
        ctx: The context at the end (compacted, goal pinned).
        turns: Model calls made.
        stopped: ``"answer"`` or ``"budget"``.
        session: The session snapshot after the last commit, when a session was given.
    """

    answer: str | None
    ctx: ChatContext
    turns: int
    stopped: Literal["answer", "budget"]
    session: SessionLike | None = None
