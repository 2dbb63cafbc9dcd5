"""The interfaces the layers above implement: ``Backend``, ``Compactor``, ``InlineCompactor``.

They live in the core because the context calls them: ``ChatContext.add``
runs its inline compactor, and a compactor hands a backend its requests. The
implementations live above (``_backends``, ``_compaction``), so every import
in the package points down.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .components import Component, ModelOutputThunk
from .tools import Tool

if TYPE_CHECKING:
    from .context import ChatContext

__all__ = ["Backend", "Compactor", "InlineCompactor"]


@runtime_checkable
class Backend(Protocol):
    """Generates one model output for a list of components.

    ``tools`` are the definitions the model may call this time; a backend
    that cannot call tools ignores them.
    """

    async def generate(
        self,
        messages: Sequence[Component],
        *,
        model_options: Mapping[str, Any] | None = None,
        tools: Sequence[Tool] | None = None,
    ) -> ModelOutputThunk:
        """Return the model's output for ``messages``."""
        ...


@runtime_checkable
class Compactor(Protocol):
    """Shrinks a context into a new, smaller one.

    Implementations must not modify ``ctx``; they return a new context, or
    ``ctx`` itself when nothing needs compacting, and the result carries
    ``ctx``'s compactor.
    """

    def compact(self, ctx: ChatContext, *, backend: Backend | None = None) -> ChatContext:
        """Return a compacted copy of ``ctx`` (or ``ctx`` itself when nothing changes)."""
        ...


class InlineCompactor(abc.ABC):
    """Marker base for compactors that may ride inside ``ChatContext(compactor=...)``.

    ``ChatContext.add`` calls ``compact`` after every add, without a backend,
    so an inline compactor must call no model at all, or only rarely (behind a
    threshold). Opt in by inheriting; satisfying :class:`Compactor` is not
    enough.
    """

    __slots__ = ()

    @abc.abstractmethod
    def compact(self, ctx: ChatContext, *, backend: Backend | None = None) -> ChatContext:
        """Return a compacted copy of ``ctx`` (or ``ctx`` itself when nothing changes).

        Subclasses must override it; there is no default strategy to fall back on.

        Raises:
            NotImplementedError: Always, here: a subclass that calls
                ``super().compact(...)`` learns that at once, not later as an
                ``AttributeError`` on ``None`` inside ``ChatContext.add``.
        """
        msg = (
            f"{type(self).__name__}.compact: InlineCompactor.compact has no default; "
            "return a ChatContext from your own compact() instead of calling "
            "super().compact() (return ctx itself when nothing needs compacting)"
        )
        raise NotImplementedError(msg)

    async def acompact(self, ctx: ChatContext, *, backend: Backend | None = None) -> ChatContext:
        """Async form of :meth:`compact`; the default runs ``compact`` (no I/O to await)."""
        return self.compact(ctx, backend=backend)

    def _compact_on_add(self, ctx: ChatContext) -> ChatContext:
        """What ``ChatContext.add`` runs after each add; by default :meth:`compact`.

        The summarizing compactors override it to start a failure backoff
        (see ``ChatContext.compaction_backoff``); a plain ``compact`` call
        never does.
        """
        return self.compact(ctx)
