"""One answer to "what is wrong with this history for this provider": :func:`problems`.

Every validator (:func:`~mellea_ctx.validate_openai`, ``validate_anthropic``,
``validate_responses``, ``validate_gemini``), :func:`~mellea_ctx.repair_history`'s
report and every command of the command line read it, so they cannot disagree.
The rules stay where they are written (each wire format's package,
``call_rules``, ``content_rules``); each format's ``problems`` in the
registry (:mod:`.registry`) gathers their findings into typed
:class:`Problem` values, and :func:`problems` asks the format named. Each finding is
tagged with its component's index where it is found: no location string is
ever parsed back into a number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import attrs

from .._core.components import Component
from .registry import Provider, wire_format

#: The family of a provider's rules a problem breaks: the pairing of tool calls and results
#: (``"tool_calls"``), what the provider rejects inside a message (``"content"``), or the
#: Responses API's item rules and Gemini's contents rules (``"items"``, ``"contents"``),
#: which cover both for their wire format.
Rule = Literal["tool_calls", "content", "items", "contents"]


def _message(index: int) -> str:
    return f"message {index}"


@attrs.frozen
class Problem:
    """One way a history breaks a provider's rules.

    Attributes:
        index: The component (position in the history passed to
            :func:`problems`) the problem is about; ``None`` when it is about
            the history as a whole (Gemini with no contents at all).
        location: Where, in the provider's terms: ``"message 3"`` for OpenAI
            Chat and Anthropic (the component), ``"item 4 content[0]"`` for
            the Responses items and ``"content 2 parts[1]"`` for the Gemini
            contents the history is written as.
        rule: Which family of the provider's rules it breaks (:data:`Rule`).
        message: What is wrong, and the fix.

    ``str(problem)`` is the line the ``validate_*`` functions return,
    ``"location: message"``.
    """

    index: int | None
    location: str
    rule: Rule
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


def from_line(index: int | None, line: str, rule: Rule) -> Problem:
    """A problem from a wire validator's line, which it writes as ``"where: message"``."""
    location, _, message = line.partition(": ")
    return Problem(index, location, rule, message)


def per_component(
    calls: Iterable[tuple[int, str]],
    content: Iterable[tuple[int, str]],
    label: Callable[[int], str],
) -> list[Problem]:
    """Problems from ``(index, message)`` pairs of the tool-call and the content rules.

    For formats whose rules name components (OpenAI Chat, Anthropic), located by ``label``.
    """
    found = [Problem(index, label(index), "tool_calls", text) for index, text in calls]
    return found + [Problem(index, label(index), "content", text) for index, text in content]


def problems(
    components: Iterable[Component],
    provider: Provider,
    *,
    label: Callable[[int], str] = _message,
) -> list[Problem]:
    """Return every way ``components`` break ``provider``'s rules, in history order (empty: valid).

    The rules are those the provider's validator documents:
    :func:`~mellea_ctx.validate_openai` (``"openai"``),
    :func:`~mellea_ctx.validate_anthropic` (``"anthropic"``, on the turns
    :func:`~mellea_ctx.to_anthropic` sends), :func:`~mellea_ctx.validate_responses`
    (``"responses"``, on the items :func:`~mellea_ctx.to_responses` writes) and
    :func:`~mellea_ctx.validate_gemini` (``"gemini"``, on the contents
    :func:`~mellea_ctx.to_gemini` writes).

    Args:
        components: The history, oldest first (a ``ChatContext`` works).
        provider: ``"openai"``, ``"anthropic"``, ``"responses"`` or ``"gemini"``.
        label: Names component ``N`` in locations (and in OpenAI's messages that
            point at another component); ``"message N"`` by default. The
            command line passes the file's own ("message 3 (line 12)").

    Returns:
        The problems, sorted by component index (a history-wide one first).

    Raises:
        InvalidArgumentError: For an unknown ``provider``.

    Examples:
        >>> from mellea_ctx import Message, ModelOutputThunk
        >>> [found] = problems([Message("user", "hi"), ModelOutputThunk(None)], "openai")
        >>> found.index, found.location, found.rule
        (1, 'message 1', 'content')
    """
    items = components if isinstance(components, Sequence) else list(components)
    found = wire_format(provider).rules.problems(items, label)
    return sorted(found, key=lambda p: -1 if p.index is None else p.index)
