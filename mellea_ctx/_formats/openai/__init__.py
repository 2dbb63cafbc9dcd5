"""OpenAI Chat Completions messages in and out, and their history rules.

:func:`from_openai` and :func:`to_openai` convert between the ``messages``
list of a Chat Completions request and our components; the round trip gives
back the same JSON for every message this module reads (the exceptions are
listed in :func:`from_openai`). :func:`validate_openai` checks the provider's
rules for tool calls in a history. Files of such lists are read and written
in the ``transcripts`` module (:func:`~mellea_ctx.load_conversation`).

Every error names where the bad value is (``message 12``, or the file and
its line), the field, the value with ``repr``, what was expected and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..._core.components import Component
from .read import OPENAI_ROLES, from_openai, parse_message
from .write import to_openai

__all__ = ["OPENAI_ROLES", "from_openai", "parse_message", "to_openai", "validate_openai"]

# -- history rules ------------------------------------------------------------------


def _message_label(index: int) -> str:
    return f"message {index}"


def _repeated_ids(component: Component) -> list[str]:
    """A problem per call id that appears again among one message's calls."""
    problems = []
    in_message: set[str] = set()
    for call in component.tool_calls:
        if call.id in in_message:
            problems.append(
                f"tool call id {call.id!r} appears twice in this message; give each "
                "call of one message its own id"
            )
        in_message.add(call.id)
    return problems


def _misplaced(
    call_id: str,
    call_at: Mapping[str, int],
    answered_at: Mapping[str, int],
    exchange: int | None,
    label: Callable[[int], str],
) -> str:
    """Why a result that answers no pending call is out of place (``exchange``: the
    assistant message whose results may still follow, if any)."""
    if call_id in answered_at:
        detail = f"was already answered by {label(answered_at[call_id])}; drop the duplicate"
    elif call_id in call_at and exchange is None:
        detail = (
            f"is called in {label(call_at[call_id])}, but a non-tool message comes between; "
            "put each result right after the assistant message that called it"
        )
    elif call_id in call_at:
        assert exchange is not None
        detail = (
            f"is called in {label(call_at[call_id])}, not in the closest preceding "
            f"assistant message ({label(exchange)}); put each result right after its call"
        )
    elif exchange is None:
        detail = "answers no earlier tool call; drop the orphan result or restore its call"
    else:
        detail = (
            f"matches no call of the closest preceding assistant message "
            f"({label(exchange)}); drop the orphan result or restore its call"
        )
    return detail


def call_problems(
    components: Sequence[Component], label: Callable[[int], str] = _message_label
) -> list[tuple[int, str]]:
    """Return ``(index, problem)`` pairs, sorted by index; ``label`` names a position."""
    problems: list[tuple[int, str]] = []
    call_at: dict[str, int] = {}  # every call id seen -> the message that made it
    answered_at: dict[str, int] = {}  # call id -> the result that answered it
    exchange: int | None = None  # the assistant whose results may still follow
    pending: dict[str, str] = {}  # its unanswered call ids -> tool names

    def close(before: int) -> None:
        if exchange is not None and pending:
            calls = ", ".join(f"{call_id!r} ({name})" for call_id, name in pending.items())
            noun = "call" if len(pending) == 1 else "calls"
            msg = (
                f"tool {noun} {calls} got no result before {label(before)}; add the results "
                f"right after {label(exchange)} or drop the {noun}"
            )
            problems.append((exchange, msg))

    for index, component in enumerate(components):
        call_id = component.tool_call_id
        if call_id is None:
            if component.role == "tool":
                msg = "role='tool' without a tool_call_id; name the call this result answers"
                problems.append((index, msg))
            close(index)
            exchange, pending = None, {}
            problems += [(index, msg) for msg in _repeated_ids(component)]
            for call in component.tool_calls:
                # A later message may reuse an id (OpenAI accepts it): each result
                # pairs with the closest preceding assistant message.
                call_at[call.id] = index
                answered_at.pop(call.id, None)
                pending[call.id] = call.name
            if component.tool_calls:
                exchange = index
            continue
        if call_id in pending:
            del pending[call_id]
            answered_at[call_id] = index
            continue
        detail = _misplaced(call_id, call_at, answered_at, exchange, label)
        problems.append((index, f"tool result for tool_call_id={call_id!r} {detail}"))
    # A trailing exchange still waiting for results is open, not broken.
    problems.sort(key=lambda problem: problem[0])
    return problems


def validate_openai(components: Iterable[Component]) -> list[str]:
    """Return the ways a history breaks the provider's rules for tool calls (empty: valid).

    The rules OpenAI (and every Chat Completions compatible provider) enforces:

    * every tool result answers a call of the closest preceding assistant
      message, and comes before any message that is not a tool result;
    * every call of a *closed* exchange (one followed by a message that is not
      a tool result) has its result;
    * each call is answered once, and the calls of one message have distinct
      ids; a later message may reuse an earlier id (OpenAI accepts it, and
      GPT-4o does it): each result pairs with the closest preceding
      assistant message;
    * an assistant message has content unless it calls tools ("required
      unless tool_calls or function_call is specified"): ``null`` without
      calls is rejected.

    An *open* exchange, the calls that end the history, is valid: its results
    may still come.

    Args:
        components: The history, oldest first (a ``ChatContext`` works).

    Returns:
        One line per problem, ``"message N: ..."``, in message order.

    Examples:
        >>> from mellea_ctx import ToolMessage
        >>> validate_openai([ToolMessage("ok", tool_call_id="call_9")])  # doctest: +ELLIPSIS
        ["message 0: tool result for tool_call_id='call_9' answers no earlier tool call; ..."]
    """
    from ..problems import problems  # the one entry point; it imports this module's rules

    return [str(problem) for problem in problems(components, "openai")]
