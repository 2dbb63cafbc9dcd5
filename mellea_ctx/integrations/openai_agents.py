"""OpenAI Agents SDK: a compacting ``Session`` and a ``call_model_input_filter`` on Responses items.

Needs ``pip install '.[openai-agents]'``. Two ways in, for two kinds of user::

    from agents import Agent, RunConfig, Runner, SQLiteSession
    from mellea_ctx import TokenBudgetCompactor
    from mellea_ctx.integrations.openai_agents import CompactingSession, input_filter

    compactor = TokenBudgetCompactor(max_tokens=60_000)
    session = CompactingSession(SQLiteSession("user-42", "chats.db"), compactor)
    await Runner.run(agent, "next question", session=session)          # history across runs

    config = RunConfig(call_model_input_filter=input_filter(compactor))
    await Runner.run(agent, "long task", run_config=config)            # every model call

The SDK reads a session's history once, when a run starts, and then grows the
input in memory through the run's tool calls; so :class:`CompactingSession`
bounds the history a run starts from, and :func:`input_filter` bounds every
request inside a run. Both read the items with :func:`from_responses`, where a
model step (its reasoning, message and calls) is one component and each
``function_call_output`` another, so a call and its output are kept or dropped
together. What comes back is the SDK's own item dicts (the very same objects)
for everything the compactor kept, and new items only for what it wrote.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents.memory import Session, SessionSettings
from agents.run_config import CallModelData, ModelInputData

from mellea_ctx import (
    Backend,
    Compactor,
    Component,
    InvalidArgumentError,
    Message,
    TokenCounter,
    from_responses,
    to_responses,
)

from ._runner import acompact_pairs

__all__ = ["CompactingSession", "input_filter"]

Item = Any  # the SDK's TResponseInputItem: a TypedDict union, plain dicts at run time


def item_groups(items: Sequence[Item]) -> list[tuple[Component, list[Item]]]:
    """Each component of ``items`` with the original items it was read from.

    ``to_responses(from_responses(x)) == x`` item for item, so the number of
    items one component writes back is the number it was read from.

    Args:
        items: Responses input items, as the SDK holds them.

    Returns:
        Each component, oldest first, with the list of ``items`` (the same
        objects) it stands for.

    Raises:
        InvalidContextError: For an item :func:`from_responses` cannot read.

    Examples:
        >>> groups = item_groups([
        ...     {"role": "user", "content": "hi"},
        ...     {"type": "reasoning", "id": "rs_1", "summary": []},
        ...     {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        ...     {"type": "function_call_output", "call_id": "c1", "output": "3 files"},
        ... ])
        >>> [(c.role, len(originals)) for c, originals in groups]
        [('user', 1), ('assistant', 2), ('tool', 1)]
    """
    out: list[tuple[Component, list[Item]]] = []
    start = 0
    for component in from_responses(items):
        size = len(to_responses([component]))
        out.append((component, list(items[start : start + size])))
        start += size
    return out


def _build(component: Component) -> list[Item]:
    return to_responses([component])


async def _compact(
    items: list[Item],
    compactor: Compactor,
    backend: Backend | None,
    counter: TokenCounter | None,
    prefix: Sequence[Component] = (),
) -> list[Item]:
    groups = await acompact_pairs(
        item_groups(items), compactor, _build, backend=backend, counter=counter, prefix=prefix
    )
    if groups is None:
        return items
    return [item for group in groups for item in group]


def _check(where: str, compactor: object) -> None:
    if not callable(getattr(compactor, "compact", None)):
        msg = (
            f"{where}: compactor={compactor!r} has no compact method; "
            "pass one of mellea_ctx's compactors"
        )
        raise InvalidArgumentError(msg)


class CompactingSession:
    """An Agents SDK ``Session`` that compacts the history another session returns.

    Storage stays with the wrapped session (``SQLiteSession``, a Redis or
    SQLAlchemy session, ours): it keeps every item, and only what
    :meth:`get_items` hands the runner is compacted. That is deliberate: the
    full history stays there to re-compact differently, and the runner's own
    bookkeeping (it re-reads the stored tail with ``get_items(limit=n)`` to
    check a write on retry and resume) sees the items it wrote. So a call with
    a ``limit`` is a raw tail read and is passed through; leave
    ``session_settings.limit`` unset, the compactor is the limit.

    Args:
        session: The session that stores the items.
        compactor: Any of our compactors.
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).

    Raises:
        InvalidArgumentError: For a compactor without ``compact`` or a
            ``session`` without the Session methods.

    Examples:
        >>> import asyncio
        >>> from agents import SQLiteSession
        >>> from mellea_ctx import WindowCompactor
        >>> session = CompactingSession(SQLiteSession("demo"), WindowCompactor(size=1))
        >>> asyncio.run(session.add_items([
        ...     {"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]))
        >>> asyncio.run(session.get_items())
        [{'role': 'user', 'content': 'again'}]
        >>> len(asyncio.run(session.get_items(limit=2)))  # a raw tail read
        2
    """

    def __init__(
        self,
        session: Session,
        compactor: Compactor,
        *,
        backend: Backend | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        _check("CompactingSession", compactor)
        missing = [
            name
            for name in ("get_items", "add_items", "pop_item", "clear_session")
            if not callable(getattr(session, name, None))
        ]
        if missing:
            msg = (
                f"CompactingSession: session={session!r} lacks {', '.join(missing)}; "
                "pass an Agents SDK Session such as agents.SQLiteSession"
            )
            raise InvalidArgumentError(msg)
        self.session = session
        self.compactor = compactor
        self.backend = backend
        self.counter = counter
        self.session_id: str = session.session_id
        self.session_settings: SessionSettings | None = None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The wrapped session's items, compacted (``limit`` given: its last ``limit``, as stored).

        Args:
            limit: ``None`` for the whole history, compacted; a number for the
                raw stored tail.

        Returns:
            The items, oldest first.
        """
        items = await self.session.get_items(limit)
        if limit is not None:
            return items
        return await _compact(items, self.compactor, self.backend, self.counter)

    async def add_items(self, items: list[Item]) -> None:
        """Store ``items`` in the wrapped session."""
        await self.session.add_items(items)

    async def pop_item(self) -> Item | None:
        """Remove and return the wrapped session's newest item."""
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Clear the wrapped session."""
        await self.session.clear_session()


def input_filter(
    compactor: Compactor,
    *,
    backend: Backend | None = None,
    counter: TokenCounter | None = None,
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """Return a ``RunConfig(call_model_input_filter=...)`` that compacts every model call's input.

    The agent's instructions count against the budget (a system prompt,
    pinned) but are handed back unchanged, outside the input.

    Args:
        compactor: Any of our compactors (pin the system prompt if it drops
            old messages: ``pin_system=True`` where it has one).
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).

    Returns:
        An async function from the SDK's ``CallModelData`` to a new
        ``ModelInputData`` with the compacted input; the given input is not
        modified.

    Raises:
        InvalidArgumentError: For a compactor without ``compact``.

    Examples:
        >>> import asyncio
        >>> from agents import Agent
        >>> from agents.run_config import CallModelData, ModelInputData
        >>> from mellea_ctx import WindowCompactor
        >>> keep_one = input_filter(WindowCompactor(size=1))
        >>> data = ModelInputData(input=[{"role": "user", "content": "a"},
        ...                              {"role": "user", "content": "b"}], instructions=None)
        >>> out = asyncio.run(keep_one(CallModelData(data, Agent(name="x"), None)))
        >>> out.input
        [{'role': 'user', 'content': 'b'}]
    """
    _check("input_filter", compactor)

    async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        instructions = data.model_data.instructions
        prefix = (Message("system", instructions),) if instructions else ()
        items = list(data.model_data.input)
        compacted = await _compact(items, compactor, backend, counter, prefix)
        return ModelInputData(input=compacted, instructions=instructions)

    return call_model_input_filter
