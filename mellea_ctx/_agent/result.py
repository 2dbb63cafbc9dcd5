"""What an agent loop returns, and what it needs of a session to write to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import attrs

from .._core.calls import Usage
from .._core.components import Component
from .._core.context import ChatContext


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
        usage: What the provider billed each model request of the run, in order:
            the agent's own and its compactions' summary requests (those that
            reported usage).
    """

    answer: str | None
    ctx: ChatContext
    turns: int
    stopped: Literal["answer", "budget"]
    session: SessionLike | None = None
    usage: tuple[Usage, ...] = ()

    @property
    def billed(self) -> Usage | None:
        """The run's bill: every request's :attr:`usage` added up (``None``: none reported).

        A cache count is ``None`` when no request reported it.

        Examples:
            >>> from mellea_ctx import ChatContext
            >>> run = ReactResult("ok", ChatContext(), 2, "answer", usage=(
            ...     Usage(900, 10, cache_write_tokens=800), Usage(950, 5, cache_read_tokens=800)))
            >>> run.billed
            Usage(prompt_tokens=1850, completion_tokens=15, total_tokens=1865, \
cache_read_tokens=800, cache_write_tokens=800)
        """
        if not self.usage:
            return None

        def total(field: str) -> int | None:
            counts = [getattr(u, field) for u in self.usage if getattr(u, field) is not None]
            return sum(counts) if counts else None

        return Usage(
            sum(u.prompt_tokens for u in self.usage),
            sum(u.completion_tokens for u in self.usage),
            sum(u.total_tokens for u in self.usage),
            cache_read_tokens=total("cache_read_tokens"),
            cache_write_tokens=total("cache_write_tokens"),
        )
