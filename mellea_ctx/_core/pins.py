"""Pin predicates: which leading components a compactor must keep verbatim.

A pin predicate takes the context's components in order and returns the index
where the protected prefix ends (``0`` pins nothing). Compactors never drop,
summarize or reorder the prefix. If a predicate's index falls inside a tool
exchange, compactors extend the prefix to the end of that exchange, so a pin
can never orphan a tool result.

Predicates should look only at the front of the sequence and stop early:
compactors that ride inside a context call them on every add.

The built-in ``pin_nothing``, ``pin_system`` and
``pin_system_and_initial_user`` are *prefix-stable*: once their answer is
shorter than the history, appending components never changes it. So the
window compactor asks them about the first few components only, and asks
about the whole history only when the answer reaches the end of those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .components import Component, Message, ReactInitiator

#: A function from the context's components to the end of the protected prefix.
PinPredicate = Callable[[Sequence[Component]], int]


def is_prefix_stable(pin_predicate: object) -> bool:
    """Return whether appending never changes the predicate's answer once it is short of the end."""
    return id(pin_predicate) in _STABLE_IDS


def pin_nothing(components: Sequence[Component]) -> int:
    """Pin nothing: the whole context is body.

    Examples:
        >>> from mellea_ctx import Message
        >>> pin_nothing([Message("system", "Be brief.")])
        0
    """
    return 0


def pin_system(components: Sequence[Component]) -> int:
    """Pin the contiguous leading system messages.

    A system message later in the conversation is not pinned.

    Examples:
        >>> from mellea_ctx import Message
        >>> pin_system([Message("system", "Be brief."), Message("user", "Hi")])
        1
    """
    end = 0
    for component in components:
        if component.role != "system":
            break
        end += 1
    return end


def pin_system_and_initial_user(components: Sequence[Component]) -> int:
    """Pin the leading system messages and the user :class:`~mellea_ctx.Message` right after them.

    Use it when the first user message states the task and must survive
    compaction. Only a user ``Message`` is pinned, as in mellea: a ``CBlock``,
    a ``ReactInitiator`` or a :class:`~mellea_ctx.Checkpoint` (which is sent
    with the user role) right after the system prompt is body, so a
    checkpoint an earlier compaction left there is folded into the next one
    instead of piling up. Equals :func:`pin_system` when no user message
    follows.

    Examples:
        >>> from mellea_ctx import Message
        >>> msgs = [Message("system", "Be brief."), Message("user", "Task"), Message("user", "Hi")]
        >>> pin_system_and_initial_user(msgs)
        2
    """
    end = pin_system(components)
    if end < len(components):
        first = components[end]
        if isinstance(first, Message) and first.role == "user":
            end += 1
    return end


def pin_react_initiator(components: Sequence[Component]) -> int:
    """Pin everything up to and including the first :class:`~mellea_ctx.ReactInitiator`.

    An agent loop adds a ``ReactInitiator`` holding its goal; with this pin the
    goal, the system prompt and anything the caller put before the goal
    survive every compaction. Without a ``ReactInitiator`` it pins what
    :func:`pin_system` pins. It scans until it meets the goal, so its cost is
    the goal's position (the whole context when there is none).

    Examples:
        >>> from mellea_ctx import Message, ReactInitiator
        >>> goal = ReactInitiator("Fix the bug")
        >>> pin_react_initiator([Message("system", "Use tools."), goal, Message("user", "x")])
        2
    """
    for index, component in enumerate(components):
        if isinstance(component, ReactInitiator):
            return index + 1
    return pin_system(components)


# By identity (module-level functions live as long as the module): a set of
# ids is one hash lookup, and it never calls a user predicate's __eq__/__hash__.
_STABLE_IDS = frozenset(map(id, (pin_nothing, pin_system, pin_system_and_initial_user)))
