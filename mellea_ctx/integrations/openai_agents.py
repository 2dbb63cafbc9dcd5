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

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents import RunContextWrapper
from agents.memory import OpenAIConversationsSession, Session, SessionSettings
from agents.run_config import CallModelData, ModelInputData

from mellea_ctx import (
    Backend,
    BaseBackend,
    Compactor,
    Component,
    InvalidArgumentError,
    Message,
    ModelOutputThunk,
    TokenCounter,
    Tool,
    from_responses,
    to_responses,
)
from mellea_ctx._core.checks import require_method

from ._runner import PairCompaction, definitions_tokens

__all__ = ["CompactingSession", "ModelBackend", "input_filter"]

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
    tools_tokens: int = 0,
) -> list[Item]:
    compaction = PairCompaction(
        compactor,
        _build,
        backend=backend,
        counter=counter,
        prefix=prefix,
        tools_tokens=tools_tokens,
    )
    groups = await compaction.arun(item_groups(items))
    if groups is None:
        return items
    return [item for group in groups for item in group]


def agent_tools_tokens(agent: Any) -> int:
    """What the definitions of ``agent.tools`` add to each request (function tools' schemas).

    A hosted tool (web search, file search, ...) has no schema of its own in the
    request; it is counted by its name.
    """
    definitions = [
        (
            str(getattr(tool, "name", type(tool).__name__)),
            str(getattr(tool, "description", "") or ""),
            getattr(tool, "params_json_schema", None),
        )
        for tool in getattr(agent, "tools", None) or ()
    ]
    return definitions_tokens(definitions)


def _check(where: str, compactor: object) -> None:
    require_method(
        where, "compactor", compactor, "compact()", fix="pass one of mellea_ctx's compactors"
    )


def _accepts_wrapper(method: object) -> bool:
    """The SDK's opt-in rule: a parameter named ``wrapper`` that can be passed by keyword."""
    try:
        parameters = inspect.signature(method).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError, RuntimeError):
        return False
    return any(
        p.name == "wrapper" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        for p in parameters
    )


def _context_aware(session: object) -> bool:
    """Every history operation of ``session`` takes ``wrapper`` (the SDK's all-or-nothing rule)."""
    names = ("get_items", "add_items", "pop_item", "clear_session")
    return all(_accepts_wrapper(getattr(session, name, None)) for name in names)


class CompactingSession:
    """An Agents SDK ``Session`` that compacts the history another session returns.

    Storage stays with the wrapped session (``SQLiteSession``, a Redis or
    SQLAlchemy session, ours): it keeps every item, and only what
    :meth:`get_items` hands the runner is compacted. That is deliberate: the
    full history stays there to re-compact differently, and the runner's own
    bookkeeping (it re-reads the stored tail with ``get_items(limit=n)`` to
    check a write on retry and resume) sees the items it wrote. So a call with
    a ``limit`` is a raw tail read and is passed through, as is a
    ``session_settings.limit`` (the SDK's "last n items"); the compactor
    bounds a read without one.

    It is a wrapper in the SDK's own sense (like ``EncryptedSession``): the
    ``RunContextWrapper`` the runner passes as ``wrapper=`` reaches a
    context-aware session (one whose four history methods all take
    ``wrapper``), so each tenant reads and writes its own scope;
    ``session_settings`` is the wrapped session's; and every other attribute
    (``close()``, ``run_compaction`` of a compaction-aware session, the
    runner's item-matching policy) is the wrapped session's own.

    Args:
        session: The session that stores the items.
        compactor: Any of our compactors.
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).

    Raises:
        InvalidArgumentError: For a compactor without ``compact``, a
            ``session`` without the Session methods, or an
            ``OpenAIConversationsSession``, whose history the server owns.

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
        if isinstance(session, OpenAIConversationsSession):
            msg = (
                f"CompactingSession: session={session!r} is an OpenAIConversationsSession, "
                "whose history the server owns and sends itself; compact each model call "
                "with input_filter(compactor) instead, or store the history locally "
                "(SQLiteSession)"
            )
            raise InvalidArgumentError(msg)
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

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class does not define: the wrapped session's
        # own (close, run_compaction, _ignore_ids_for_matching, ...).
        if name == "session":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.session, name)

    @property
    def session_settings(self) -> SessionSettings | None:
        """The wrapped session's settings (reading and setting them reaches it)."""
        return getattr(self.session, "session_settings", None)

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self.session.session_settings = value

    def _scoped(self, wrapper: Any) -> dict[str, Any]:
        return {"wrapper": wrapper} if wrapper is not None and _context_aware(self.session) else {}

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[Item]:
        """The wrapped session's items, compacted (``limit`` given: its last ``limit``, as stored).

        Args:
            limit: ``None`` for the whole history, compacted; a number for the
                raw stored tail.
            wrapper: The run's context, passed on to a context-aware session.

        Returns:
            The items, oldest first.
        """
        scope = self._scoped(wrapper)
        if limit is not None:  # the SDK's own call shapes: a legacy get_items() takes no limit
            return list(await self.session.get_items(limit, **scope))
        items = list(await self.session.get_items(**scope))
        return await _compact(items, self.compactor, self.backend, self.counter)

    async def add_items(
        self, items: list[Item], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Store ``items`` in the wrapped session (in ``wrapper``'s scope when it has scopes)."""
        await self.session.add_items(items, **self._scoped(wrapper))

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> Item | None:
        """Remove and return the wrapped session's newest item."""
        return await self.session.pop_item(**self._scoped(wrapper))

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Clear the wrapped session."""
        await self.session.clear_session(**self._scoped(wrapper))


class ModelBackend(BaseBackend):
    """An Agents SDK ``Model`` as our ``Backend``: the agent's own model can write the summaries.

    Each summary is one ``model.get_response`` call: the system messages as the
    instructions, the rest as Responses items, read back with
    :func:`from_responses`.

    Args:
        model: An Agents SDK ``Model`` (``OpenAIResponsesModel(...)``, the one
            your agent runs on).
        context_window: The model's input window in tokens, if known.

    Raises:
        InvalidArgumentError: For a ``model`` without ``get_response``.
    """

    def __init__(self, model: Any, *, context_window: int | None = None) -> None:
        if not callable(getattr(model, "get_response", None)):
            msg = (
                f"ModelBackend: model={model!r} is not an Agents SDK Model; pass one "
                "(OpenAIResponsesModel(...), agent.model when it is a Model)"
            )
            raise InvalidArgumentError(msg)
        self.model = model
        self.context_window = context_window

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Return the model's answer to ``messages`` (``options`` are the model's own)."""
        from agents import ModelSettings
        from agents.models.interface import ModelTracing

        system = "\n\n".join(m.content for m in messages if m.role in ("system", "developer"))
        rest = [m for m in messages if m.role not in ("system", "developer")]
        response = await self.model.get_response(
            system or None,
            to_responses(rest),
            ModelSettings(),
            [],
            None,
            [],
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        items = [item.model_dump(exclude_unset=True) for item in response.output]
        # The reader makes each assistant message (with its reasoning and calls) a model step.
        outputs = [c for c in from_responses(items) if isinstance(c, ModelOutputThunk)]
        if not outputs:
            from mellea_ctx import MalformedResponseError

            msg = "ModelBackend: the model answered with no assistant output"
            raise MalformedResponseError(msg)
        return outputs[-1]

    def __repr__(self) -> str:
        return f"ModelBackend({type(self.model).__name__})"


def input_filter(
    compactor: Compactor,
    *,
    backend: Backend | None = None,
    counter: TokenCounter | None = None,
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """Return a ``RunConfig(call_model_input_filter=...)`` that compacts every model call's input.

    The agent's instructions count against the budget (a system prompt,
    pinned) but are handed back unchanged, outside the input; the agent's
    tool definitions (``data.agent.tools``) count against it too.

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
        tools_tokens = agent_tools_tokens(data.agent)
        compacted = await _compact(items, compactor, backend, counter, prefix, tools_tokens)
        return ModelInputData(input=compacted, instructions=instructions)

    return call_model_input_filter
