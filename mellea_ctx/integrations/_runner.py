"""What every framework adapter shares: compact components that stand for the framework's objects.

An adapter converts the framework's messages into components, one list of
``(component, original)`` pairs, and asks :func:`compact_pairs` (or
:func:`acompact_pairs`) for the compacted history. What comes back is, for each
component the compactor kept, the framework's *own* original object (the very
same object), and for each component the compactor wrote (a checkpoint, a
cleared tool result) whatever ``build`` makes of it. So a compaction changes
only what it chose to change, and nothing the framework attached to a message
that we do not model is rebuilt, let alone lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from mellea_ctx import (
    Backend,
    ChatContext,
    Compactor,
    Component,
    InvalidContextError,
    TokenCounter,
    default_counter,
)

__all__ = ["acompact_pairs", "compact_pairs", "context_of"]

T = TypeVar("T")


def context_of(components: Sequence[Component], counter: TokenCounter | None) -> ChatContext:
    """A context holding ``components`` in order, counted with ``counter`` (the default if None)."""
    ctx = ChatContext(counter=counter or default_counter())
    for component in components:
        ctx = ctx.add(component)
    return ctx


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


def _without_prefix(compacted: ChatContext, prefix: Sequence[Component]) -> list[Component]:
    kept = compacted.as_list()
    if kept[: len(prefix)] != list(prefix):  # a pinned prefix always comes back first
        msg = "the compactor did not keep the agent's system prompt first; pin it (pin_system)"
        raise InvalidContextError(msg)
    return kept[len(prefix) :]


def compact_pairs(
    pairs: Sequence[tuple[Component, T]],
    compactor: Compactor,
    build: Callable[[Component], T],
    *,
    backend: Backend | None = None,
    counter: TokenCounter | None = None,
    prefix: Sequence[Component] = (),
) -> list[T] | None:
    """Compact the components of ``pairs``; ``None`` when the compactor changed nothing.

    Args:
        pairs: Each component with the framework object it stands for.
        compactor: Any of our compactors.
        build: Makes a framework object for a component the compactor wrote.
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).
        prefix: Components the framework adds to every request outside the
            history (its system prompt): counted and pinned while compacting,
            left out of what comes back.

    Returns:
        The compacted history as framework objects, or ``None`` for no change.
    """
    ctx = context_of(_with_prefix(pairs, prefix), counter)
    compacted = compactor.compact(ctx, backend=backend)
    if compacted is ctx:
        return None
    return _map_back(_without_prefix(compacted, prefix), pairs, build)


async def acompact_pairs(
    pairs: Sequence[tuple[Component, T]],
    compactor: Compactor,
    build: Callable[[Component], T],
    *,
    backend: Backend | None = None,
    counter: TokenCounter | None = None,
    prefix: Sequence[Component] = (),
) -> list[T] | None:
    """Async form of :func:`compact_pairs`: awaits ``compactor.acompact`` when it has one."""
    ctx = context_of(_with_prefix(pairs, prefix), counter)
    acompact = getattr(compactor, "acompact", None)
    if acompact is not None:
        compacted = await acompact(ctx, backend=backend)
    else:
        compacted = compactor.compact(ctx, backend=backend)
    if compacted is ctx:
        return None
    return _map_back(_without_prefix(compacted, prefix), pairs, build)
