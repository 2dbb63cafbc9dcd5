"""Compaction in the agent loop: the compactor between turns, and as the model's tools.

:func:`run_compactor` runs any compactor on the loop's context, forced past
its threshold when the model asked. When a compactor is configured, two tools
ride along so the model can manage its own context (:func:`builtin_tools`):
``compact_context(focus="")`` compacts before the next model call, keeping a
focus; ``recall(checkpoint=-1, start=0, count=10)`` reads back, verbatim, the
messages a checkpoint replaced.
"""

from __future__ import annotations

from .._core.checkpoint import Checkpoint
from .._core.components import Component
from .._core.context import ChatContext
from .._core.protocols import Backend, Compactor, acompact_with
from .._core.tools import Tool, tool
from .._formats.quoted import render_conversation
from .loop_state import Loop

COMPACT_TOOL = "compact_context"
RECALL_TOOL = "recall"


def builtin_tools(loop: Loop) -> list[Tool]:
    """Return the ``compact_context`` and ``recall`` tools, acting on ``loop``."""

    def compact_context(focus: str = "") -> str:
        """Compact the conversation history before your next step.

        Call it when the conversation has grown long, or before a new phase of
        work: older messages are replaced by a checkpoint summary, and the goal
        and recent messages stay. Use recall afterwards to read exact messages back.

        Args:
            focus: What the summary must keep in particular (files, decisions, open questions).
        """
        loop.compact_requested = True
        loop.focus = focus
        return "Compaction scheduled: it runs before your next step."

    def recall(checkpoint: int = -1, start: int = 0, count: int = 10) -> str:
        """Read back, word for word, messages that a checkpoint summary replaced.

        A checkpoint that folded in an earlier one is read through it: the
        messages are the original ones, numbered from the oldest.

        Args:
            checkpoint: Which checkpoint, counting from 0 (-1: the latest).
            start: The first replaced message to show, counting from 0.
            count: How many messages to show (at most 50).
        """
        assert loop.ctx is not None
        checkpoints = [c for c in loop.ctx if isinstance(c, Checkpoint)]
        if not checkpoints:
            return "There is no checkpoint in the conversation, so nothing to recall."
        try:
            chosen = checkpoints[checkpoint]
        except IndexError:
            last = len(checkpoints) - 1
            return f"There are {last + 1} checkpoints; pass checkpoint from 0 to {last}, or -1."
        span = _originals(chosen)
        if not span:
            return "This checkpoint did not keep the messages it replaced (keep_replaced=False)."
        count = max(1, min(count, 50))
        start = max(0, start)
        shown = span[start : start + count]
        number = checkpoints.index(chosen)
        header = (
            f"Checkpoint {number} replaced {len(span)} messages; "
            f"showing {start} to {start + len(shown) - 1}:"
        )
        return header + "\n" + render_conversation(shown)

    return [tool(compact_context), tool(recall)]


def _originals(checkpoint: Checkpoint) -> list[Component]:
    """The original messages a checkpoint stands for, through any checkpoints it folded in.

    An explicit stack, not recursion: a chain of thousands of checkpoints reads back.
    """
    found: list[Component] = []
    stack: list[Component] = list(reversed(checkpoint.span))
    while stack:
        component = stack.pop()
        if isinstance(component, Checkpoint) and component.span:
            stack.extend(reversed(component.span))
        else:
            found.append(component)
    return found


def own_backend(compactor: object) -> Backend | None:
    """The backend a compactor was built with, if any, looking through the compactors it wraps.

    Read by shape, not by class: ``settings.default_backend`` (the summarizing
    compactors), then ``inner`` (a gate) and ``tiers`` (tiers, in order).
    """
    settings = getattr(compactor, "settings", None)
    backend: Backend | None = getattr(settings, "default_backend", None)
    if backend is not None:
        return backend
    wrapped = [getattr(compactor, "inner", None), *getattr(compactor, "tiers", ())]
    found = (own_backend(inner) for inner in wrapped if inner is not None)
    return next((b for b in found if b is not None), None)


async def run_compactor(
    compactor: Compactor, ctx: ChatContext, backend: Backend | None, *, force: bool, focus: str
) -> ChatContext:
    """Run ``compactor`` on ``ctx``; ``force`` bypasses triggers (the model or provider asked).

    ``focus`` becomes the summary's ``instructions``, for any compactor that takes them.
    """
    return await acompact_with(
        compactor, ctx, backend=backend, force=force, instructions=focus or None
    )
