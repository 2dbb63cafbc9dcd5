"""What every framework adapter shares: compact components that stand for the framework's objects.

An adapter converts the framework's messages into components, one list of
``(component, original)`` pairs, and asks a :class:`PairCompaction` to run (or
``arun``) for the compacted history. What comes back is, for each
component the compactor kept, the framework's *own* original object (the very
same object), and for each component the compactor wrote (a checkpoint, a
cleared tool result) whatever ``build`` makes of it. So a compaction changes
only what it chose to change, and nothing the framework attached to a message
that we do not model is rebuilt, let alone lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, Generic, TypeVar

import attrs

from mellea_ctx import (
    Backend,
    ChatContext,
    Compactor,
    Component,
    InvalidContextError,
    Provider,
    TokenCounter,
    acompact_with,
    compact_with,
    default_counter,
    repair_history,
)
from mellea_ctx._core.operations import Operation, arun, run
from mellea_ctx._core.tool_tokens import Framing, count_tool_definitions, request_overhead
from mellea_ctx._core.tools import Tool

T = TypeVar("T")


def context_of(components: Sequence[Component], counter: TokenCounter | None) -> ChatContext:
    """A context holding ``components`` in order, counted with ``counter`` (the default if None)."""
    ctx = ChatContext(counter=default_counter() if counter is None else counter)
    for component in components:
        ctx = ctx.add(component)
    return ctx


def _unbound(**_: Any) -> Any:
    msg = "a tool definition counted for its size is never run"
    raise NotImplementedError(msg)


def definitions_tokens(
    definitions: Iterable[tuple[str, str, Mapping[str, Any] | None]],
    framing: Framing = "openai",
) -> int:
    """What a request's tool definitions cost, each one ``(name, description, JSON schema)``.

    The one count every adapter uses for the tools a framework sends with the
    request (``request.tools``, ``data.agent.tools``, a pydantic-ai request's
    tool definitions), framed as :func:`~mellea_ctx.count_tool_definitions` frames ours.
    """
    tools = [
        Tool(name, description or "", json.dumps(schema or {}, default=str), _unbound)
        for name, description, schema in definitions
    ]
    return count_tool_definitions(tools, framing)


@contextmanager
def overhead(tokens: int) -> Any:
    """While inside, the budget compactors count ``tokens`` besides the history (tool schemas)."""
    token = request_overhead.set(tokens)
    try:
        yield
    finally:
        request_overhead.reset(token)


def _map_back(
    kept: Sequence[Component],
    pairs: Sequence[tuple[Component, T]],
    build: Callable[[Component], T],
) -> list[T]:
    originals = {id(component): original for component, original in pairs}
    return [originals[id(c)] if id(c) in originals else build(c) for c in kept]


def _with_prefix(
    pairs: Sequence[tuple[Component, T]], prefix: Sequence[Component]
) -> list[Component]:
    return [*prefix, *(component for component, _ in pairs)]


def _without_prefix(
    compacted: ChatContext, prefix: Sequence[Component], repair: Provider | None = None
) -> list[Component]:
    kept = compacted.as_list()
    if kept[: len(prefix)] != list(prefix):  # a pinned prefix always comes back first
        msg = "the compactor did not keep the agent's system prompt first; pin it (pin_system)"
        raise InvalidContextError(msg)
    if repair is None:
        return kept[len(prefix) :]
    # The framework sends what we hand back as it is: an orphan tool result already in
    # its input (which no compactor creates) is dropped, as repair_history drops it.
    repaired, _ = repair_history(kept, provider=repair)
    return repaired[len(prefix) :]


@attrs.frozen
class PairCompaction(Generic[T]):
    """How an adapter compacts ``(component, original)`` pairs: a compactor and its setting.

    :meth:`run` and :meth:`arun` run one operation (:mod:`~mellea_ctx._core.operations`)
    and differ only in how they call the compactor (``compact_with``, or an
    awaited ``acompact_with``).

    Attributes:
        compactor: Any of our compactors.
        build: Makes a framework object for a component the compactor wrote.
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).
        prefix: Components the framework adds to every request outside the
            history (its system prompt): counted and pinned while compacting,
            left out of what comes back.
        tools_tokens: What the request's tool definitions cost
            (:func:`definitions_tokens`), counted by the budget compactors.
        repair: A provider whose rules a compacted history is repaired to
            (:func:`~mellea_ctx.repair_history`: orphan tool results dropped),
            for a framework that sends our output unchecked.
    """

    compactor: Compactor
    build: Callable[[Component], T]
    backend: Backend | None = None
    counter: TokenCounter | None = None
    prefix: Sequence[Component] = ()
    tools_tokens: int = 0
    repair: Provider | None = None

    def run(self, pairs: Sequence[tuple[Component, T]]) -> list[T] | None:
        """Compact the components of ``pairs``; ``None`` when the compactor changed nothing.

        Each ``(component, original)`` pair is a component with the framework
        object it stands for; what comes back is the compacted history as
        framework objects (the originals of the components kept).
        """
        compact = partial(compact_with, self.compactor, backend=self.backend)
        return run(self._compaction(pairs), compact)

    async def arun(self, pairs: Sequence[tuple[Component, T]]) -> list[T] | None:
        """Async form of :meth:`run`: awaits ``compactor.acompact`` when it has one."""
        compact = partial(acompact_with, self.compactor, backend=self.backend)
        return await arun(self._compaction(pairs), compact)

    def _compaction(
        self, pairs: Sequence[tuple[Component, T]]
    ) -> Operation[ChatContext, list[T] | None]:
        """Both forms' work: it yields the context to compact and is sent the result."""
        ctx = context_of(_with_prefix(pairs, self.prefix), self.counter)
        with overhead(self.tools_tokens):
            compacted: ChatContext = yield ctx
        if compacted is ctx:
            return None
        kept = _without_prefix(compacted, self.prefix, self.repair)
        return _map_back(kept, pairs, self.build)
