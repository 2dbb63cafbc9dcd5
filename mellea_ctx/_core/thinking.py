"""Dropping older turns' thinking, the one change to thinking we ever make, and only on request.

Compactors never modify thinking: a kept assistant step keeps its thinking
blocks, signatures intact, and a continuing tool loop is kept whole from its
first step (see :mod:`mellea_ctx._core.boundaries`). Thinking from *earlier*
turns is kept too, by default, because whether a provider wants it depends
on the model: Anthropic's Claude Opus 4.5+ and Sonnet 4.6+ keep every turn's
thinking in context, older Claude models strip all but the last turn's
(the API does it, so sending them costs nothing but bandwidth), and DeepSeek
ignores ``reasoning_content`` outside the current tool loop.

:func:`drop_thinking` is the explicit option for callers who want it gone:
it removes thinking from every assistant step before the last user input and
leaves the current turn untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

from .boundaries import has_thinking, turn_start
from .components import Component, Message, ModelOutputThunk
from .parts import RedactedThinkingPart, ThinkingPart


def drop_thinking(components: Sequence[Component]) -> list[Component]:
    """Return the components with thinking removed from every turn before the last.

    Thinking (``ThinkingPart`` and ``RedactedThinkingPart``) is removed from
    assistant :class:`~mellea_ctx.Message` and
    :class:`~mellea_ctx.ModelOutputThunk` components that come before the last
    user input; the last turn (from that input on) is kept as it is, so a
    continuing tool loop keeps the thinking its provider requires back. An
    older step that held nothing but thinking is left out. Components
    without thinking are the same objects; ``components`` is not modified.

    Args:
        components: A history, oldest first (``ctx.as_list()``).

    Returns:
        A new list of components.

    Examples:
        >>> from mellea_ctx import Message, ModelOutputThunk
        >>> from mellea_ctx._core.parts import TextPart, ThinkingPart
        >>> old = ModelOutputThunk(parts=(ThinkingPart("hmm", signature="s"), TextPart("4")))
        >>> now = ModelOutputThunk(parts=(ThinkingPart("again", signature="t"), TextPart("5")))
        >>> out = drop_thinking([Message("user", "2+2?"), old, Message("user", "+1?"), now])
        >>> [len(c.parts) for c in out]
        [1, 1, 1, 2]
        >>> out[3] is now
        True
    """
    start = turn_start(components)
    out: list[Component] = []
    for index, component in enumerate(components):
        if index >= start or component.role != "assistant" or not has_thinking(component):
            out.append(component)
            continue
        kept = _without_thinking(component)
        if kept is not None:
            out.append(kept)
    return out


def _without_thinking(component: Component) -> Component | None:
    parts = tuple(p for p in component.parts if type(p) not in (ThinkingPart, RedactedThinkingPart))
    if not parts and not component.tool_calls:
        return None
    if isinstance(component, ModelOutputThunk):
        return ModelOutputThunk(
            parts=parts,
            tool_calls=component.tool_calls,
            usage=component.usage,
            extra=component.extra,
            structured=component.structured,
        )
    if isinstance(component, Message):
        return Message(
            component.role,
            parts,
            tool_calls=component.tool_calls,
            name=component.name,
            extra=component.extra,
            structured=component.structured,
        )
    return component  # a component kind we cannot rebuild: kept as it is
