"""Each provider's rules for a history's tool calls: checking and repairing.

:func:`~mellea_ctx.validate_openai` (in ``_formats.py``) checks the Chat
Completions rules; :func:`validate_anthropic` checks the Messages API's, on
the turns :func:`~mellea_ctx.to_anthropic` would send. :func:`repair_history`
makes any history valid for either provider with the smallest edits it can
name: it drops what cannot be placed and answers what was left unanswered.

For Anthropic the validator and the repair share one scanner, so what one
reports is what the other fixes; for OpenAI the repair has its own scanner
beside ``validate_openai``'s, and property tests check that every history
it repairs validates and that a valid one comes back untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

import attrs

from .._core.components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from .content_rules import Findings, repair_content
from .registry import Provider

#: The content of the result :func:`repair_history` adds for a call that got none.
MISSING_RESULT: Final = "[no result: this tool call was never answered]"

#: The user text :func:`repair_history` puts before a history that starts with the assistant.
_OPENER: Final = "(earlier conversation)"


@attrs.define
class _Plan:
    """What the scanner found: problems, and the edits that fix them (by input index)."""

    problems: list[tuple[int, str]] = attrs.Factory(list)
    drop: set[int] = attrs.Factory(set)
    replace: dict[int, Component | None] = attrs.Factory(dict)
    insert: dict[int, list[Component]] = attrs.Factory(dict)
    changes: list[tuple[int, str]] = attrs.Factory(list)

    def add(self, index: int, problem: str, change: str) -> None:
        self.problems.append((index, problem))
        self.changes.append((index, change))


def _without_calls(component: Component, kept: tuple[ToolCall, ...]) -> Component | None:
    """Return ``component`` with only the ``kept`` calls, or ``None`` when nothing is left."""
    if not kept and not component.content and not component.images:
        return None
    if isinstance(component, (Message, ModelOutputThunk)):
        return attrs.evolve(component, tool_calls=kept)
    return Message(
        "assistant",
        component.content,
        tool_calls=kept,
        images=component.images,
        name=component.name,
    )


def _placeholders(pending: dict[str, str]) -> list[Component]:
    return [ToolMessage(MISSING_RESULT, tool_call_id=call_id) for call_id in pending]


def _label(index: int) -> str:
    return f"message {index}"


def _calls(
    plan: _Plan,
    index: int,
    component: Component,
    seen: set[str],
    pending: dict[str, str],
    *,
    reuse: bool = False,
) -> None:
    """Take ``component``'s calls into ``pending``; report and drop reused ids.

    With ``reuse`` (OpenAI), an id an earlier message used is allowed: each
    result pairs with the closest preceding assistant message. Only an id
    used twice in one message is ambiguous then.
    """
    kept: list[ToolCall] = []
    if reuse:
        seen = set()
    for call in component.tool_calls:
        if call.id in seen:
            problem = (
                f"tool call id {call.id!r} is already used earlier in the history; "
                "give every call its own id"
            )
            plan.add(index, problem, f"removed the second tool call with id {call.id!r}")
            continue
        seen.add(call.id)
        kept.append(call)
        pending[call.id] = call.name
    if len(kept) != len(component.tool_calls):
        plan.replace[index] = _without_calls(component, tuple(kept))


def _unanswered(plan: _Plan, exchange: int, before: int, pending: dict[str, str]) -> None:
    calls = ", ".join(f"{call_id!r} ({name})" for call_id, name in pending.items())
    noun = "call" if len(pending) == 1 else "calls"
    where = "the end of the history" if before < 0 else _label(before)
    problem = (
        f"tool {noun} {calls} got no result before {where}; add the results right after "
        f"{_label(exchange)}, or run repair_history"
    )
    plan.add(exchange, problem, f"added a placeholder result for tool {noun} {calls}")
    at = before if before >= 0 else -1
    plan.insert.setdefault(at, []).extend(_placeholders(pending))


def _orphan(plan: _Plan, index: int, call_id: str, answered: set[str], where: str) -> None:
    if call_id in answered:
        problem = f"tool result for tool_call_id={call_id!r} answers a call already answered"
    else:
        problem = f"tool result for tool_call_id={call_id!r} answers no call of {where}"
    plan.add(index, problem, f"dropped the tool result for tool_call_id={call_id!r}")
    plan.drop.add(index)


def scan_openai(items: Sequence[Component]) -> _Plan:
    """Chat Completions: results follow their assistant message, before anything else."""
    plan = _Plan()
    seen: set[str] = set()
    answered: set[str] = set()
    exchange: int | None = None
    pending: dict[str, str] = {}
    for index, component in enumerate(items):
        call_id = component.tool_call_id
        if call_id is not None:
            if exchange is not None and call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            else:
                where = "the assistant message right before it"
                _orphan(plan, index, call_id, answered, where)
            continue
        if component.role == "tool":
            plan.add(
                index, "role='tool' without a tool_call_id", "dropped a tool result with no id"
            )
            plan.drop.add(index)
            continue
        if exchange is not None and pending:
            _unanswered(plan, exchange, index, pending)
        exchange, pending = None, {}
        if component.tool_calls:
            _calls(plan, index, component, seen, pending, reuse=True)
            if pending:
                exchange = index
    return plan


def _has_blocks(component: Component) -> bool:
    """Return whether ``to_anthropic`` sends anything for ``component``."""
    return bool(
        component.tool_call_id is not None
        or component.content
        or component.images
        or component.tool_calls
    )


def scan_anthropic(items: Sequence[Component], *, opener: bool = True) -> _Plan:
    """Messages API: user first, results in the very next user turn, no system after the start.

    Consecutive components of one role form one turn, as the API and
    ``to_anthropic`` merge them. The last exchange is *open* (valid without
    all its results) while only tool results follow it. ``opener=False`` leaves
    an opening assistant turn as it is, for a writer that opens with a user
    turn by itself (``to_gemini``).
    """
    scan = _AnthropicScan(opener)
    plan = scan.plan
    leading = True
    for index, component in enumerate(items):
        role = component.role
        if leading and role == "system":
            continue
        leading = False
        if component.tool_call_id is None and role == "tool":
            plan.add(
                index, "role='tool' without a tool_call_id", "dropped a tool result with no id"
            )
            plan.drop.add(index)
            continue
        if not _has_blocks(component):
            continue
        if role == "system":
            problem = (
                "a system message after the start has no place in the Messages API; "
                "move it into the leading system prompt"
            )
            plan.add(index, problem, "turned the system message into a user message")
            plan.replace[index] = Message("user", component.content)
            role = "user"
        if role == "assistant":
            scan.assistant(index, component)
        else:
            scan.user(index, component)
    scan.finish()
    return plan


class _AnthropicScan:
    """The state of :func:`scan_anthropic` between turns."""

    def __init__(self, opener: bool) -> None:
        self.plan = _Plan()
        self.opener = opener
        self.seen: set[str] = set()
        self.answered: set[str] = set()
        self.exchange: int | None = None  # the assistant component whose turn has calls
        self.pending: dict[str, str] = {}
        self.previous: str | None = None  # role of the last turn kept
        self.plain_after = False  # the user turn after the exchange holds more than results

    def assistant(self, index: int, component: Component) -> None:
        """An assistant component: it opens a turn after a user one, closing the exchange."""
        if self.previous is None and self.opener:
            problem = "the history starts with an assistant turn; the Messages API wants user"
            self.plan.add(index, problem, f"added a user message {_OPENER!r} before it")
            self.plan.insert.setdefault(index, []).append(Message("user", _OPENER))
        elif self.previous == "user":
            if self.exchange is not None and self.pending:
                _unanswered(self.plan, self.exchange, index, self.pending)
            self.exchange, self.pending, self.plain_after = None, {}, False
        if component.tool_calls:
            if not self.pending:
                self.exchange = index
            _calls(self.plan, index, component, self.seen, self.pending)
        self.previous = "assistant"

    def user(self, index: int, component: Component) -> None:
        """A user component: a result answers a pending call, or is an orphan."""
        call_id = component.tool_call_id
        if call_id is not None and call_id in self.pending:
            del self.pending[call_id]
            self.answered.add(call_id)
        elif call_id is not None:
            _orphan(self.plan, index, call_id, self.answered, "the assistant turn right before it")
            return
        elif self.pending:
            self.plain_after = True
        self.previous = "user"

    def finish(self) -> None:
        """The last exchange is open, unless a user turn with more than results followed it."""
        if (
            self.exchange is not None
            and self.pending
            and self.previous == "user"
            and self.plain_after
        ):
            _unanswered(self.plan, self.exchange, -1, self.pending)


def validate_anthropic(components: Iterable[Component]) -> list[str]:
    """Return the ways a history breaks the Messages API's rules (empty: valid).

    The history is judged as :func:`~mellea_ctx.to_anthropic` would send it:
    leading system messages become the ``system`` prompt, and consecutive
    components of one role form one turn (the API merges them too). The rules:

    * turns alternate between ``user`` and ``assistant``, starting with
      ``user``; a system message after the start has no place;
    * every tool result answers a ``tool_use`` of the assistant turn right
      before its user turn, once;
    * every ``tool_use`` of a closed turn has its result in the next user
      turn; the last assistant turn is *open* (valid without all its results)
      while only tool results follow it;
    * tool-use ids are unique in the history, and match ``^[a-zA-Z0-9_-]+$``;
    * no text block (nor the system prompt) is empty or only whitespace
      (Anthropic answers 400 "text content blocks must contain non-whitespace
      text");
    * with extended thinking in use (any thinking block in the history), a
      tool loop that continues (the history ends with tool results) has its
      first assistant turn start with a thinking block.

    Args:
        components: The history, oldest first (a ``ChatContext`` works).

    Returns:
        One line per problem, ``"message N: ..."``, in message order.

    Examples:
        >>> from mellea_ctx import Message, ToolCall
        >>> validate_anthropic([Message("assistant", "", tool_calls=[ToolCall("t1", "ls")])])
        ['message 0: the history starts with an assistant turn; the Messages API wants user']
    """
    from .problems import problems  # the one entry point; it imports this module's rules

    return [str(problem) for problem in problems(components, "anthropic")]


def repair_history(
    components: Iterable[Component], *, provider: Provider = "openai"
) -> tuple[list[Component], list[str]]:
    """Return a history that is valid for ``provider``, and the list of changes made.

    The repair keeps everything it can, and never invents model output:

    * a tool result that answers no call of the right assistant message (an
      orphan, or a second answer to one call) is dropped;
    * a call left without a result in a closed exchange gets a placeholder
      result, :data:`MISSING_RESULT`, right after the results it has (so the
      assistant's text and the record of the call stay); an open exchange at
      the end is left as it is;
    * a call whose id was already used is removed from its message (the
      message too, if nothing else is left in it); for ``"openai"`` only an id
      used twice in one message counts, since OpenAI accepts an id a later
      message reuses (each result pairs with the closest preceding call);
    * what the provider rejects inside a message is fixed: for
      ``"anthropic"`` an empty or whitespace-only text block is removed (the
      message too when nothing else is left), a tool id outside
      ``^[a-zA-Z0-9_-]+$`` is renamed in its call and its result alike
      (:func:`~mellea_ctx._formats.anthropic.write.anthropic_id`); for
      ``"openai"`` an assistant message with ``null`` content and no calls
      gets ``""``. Missing thinking cannot be repaired (it is the model's
      signed output) and stays reported by the validator;
    * for ``"anthropic"`` only: a history that starts with the assistant
      gets a user message ``"(earlier conversation)"`` in front, and a system
      message after the start becomes a user message with the same text.

    A history that is already valid comes back as a new list of the very
    same components, with no changes. ``components`` is not modified.

    Args:
        components: The history, oldest first (a ``ChatContext`` works).
        provider: ``"openai"`` (:func:`~mellea_ctx.validate_openai`'s rules)
            or ``"anthropic"`` (:func:`validate_anthropic`'s); ``"responses"``
            repairs as ``"openai"`` (the Responses API pairs outputs with calls
            the same way) and ``"gemini"`` as ``"anthropic"`` (responses in the
            next user turn, a user turn first).

    Returns:
        ``(history, changes)``; each change is one line ``"message N: ..."``
        naming the input message it concerns.

    Raises:
        InvalidArgumentError: For an unknown ``provider``.

    Examples:
        >>> from mellea_ctx import Message, ToolCall, ToolMessage
        >>> history, changes = repair_history([
        ...     Message("user", "List the files."),
        ...     ToolMessage("stale", tool_call_id="call_0"),
        ...     Message("assistant", "", tool_calls=[ToolCall("call_1", "ls")]),
        ...     Message("user", "Never mind."),
        ... ])
        >>> [c.role for c in history]
        ['user', 'assistant', 'tool', 'user']
        >>> changes  # doctest: +NORMALIZE_WHITESPACE
        ["message 1: dropped the tool result for tool_call_id='call_0'",
         "message 2: added a placeholder result for tool call 'call_1' (ls)"]
    """
    history, changes = repair_changes(components, provider)
    return history, [f"{_label(index)}: {change}" for index, change in changes]


def repair_changes(
    components: Iterable[Component], provider: Provider
) -> tuple[list[Component], list[tuple[int, str]]]:
    """:func:`repair_history`, with each change as ``(input index, change)``, never parsed back."""
    from .registry import wire_format  # the registry's formats import this module

    return wire_format(provider).rules.repair(list(components))


def _applied(
    plan: _Plan, items: Sequence[Component], origin: Sequence[int]
) -> tuple[list[Component], list[int]]:
    """``items`` with ``plan``'s edits made, and the input index each output stands for
    (``origin``: each item's input index)."""
    out: list[Component] = []
    whence: list[int] = []

    def put(component: Component, index: int) -> None:
        out.append(component)
        whence.append(index)

    for index, component in enumerate(items):
        for inserted in plan.insert.get(index, []):
            put(inserted, origin[index])
        if index in plan.drop:
            continue
        replacement = plan.replace.get(index, component)
        if replacement is not None:
            put(replacement, origin[index])
    for inserted in plan.insert.get(-1, []):
        put(inserted, origin[-1] if origin else 0)
    return out, whence


def repair_calls(
    components: Sequence[Component],
    findings: Findings,
    scan: Callable[[Sequence[Component]], _Plan],
) -> tuple[list[Component], list[tuple[int, str]]]:
    """Repair a history with a provider's content ``findings`` and tool-call ``scan``.

    A wire format's ``repair`` is this with its own rules: the content rules of
    :mod:`.content_rules`, and the pairing rules of :func:`scan_openai` (results
    right after their call's message) or :func:`scan_anthropic` (results in the
    next user turn, turns alternating).
    """
    items, origin, content_changes = repair_content(list(components), findings)
    plan = scan(items)
    out, whence = _applied(plan, items, origin)
    changes = content_changes + [(origin[index], change) for index, change in plan.changes]
    # A dropped result can bring a message to the front, where the content rules differ:
    # a blank system message there is the system prompt, which Anthropic refuses.
    again, _, more = repair_content(out, findings)
    if more:
        changes += [(whence[index], change) for index, change in more]
        out = again
    changes.sort(key=lambda change: change[0])
    return out, changes
