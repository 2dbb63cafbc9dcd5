"""Hypothesis strategies for valid histories, contexts and compactors.

A *valid* history is what a provider accepts, built the way an agent builds it:

* optional leading system messages;
* then user messages, ``CBlock``s, at most one ``ReactInitiator``, assistant
  ``Message``s and ``ModelOutputThunk``s (with and without ``usage``);
* tool exchanges: an assistant component with 1..4 tool calls (ids unique in
  the whole history), immediately followed by one ``ToolMessage`` per call, in
  any order;
* possibly, at the very end, an *open* exchange whose results are not all in.

Everything here is written from the design's description of the rules, not
from the package's code, so that the tests can disagree with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from mellea_ctx import (
    CBlock,
    ChatContext,
    Component,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    ThresholdCompactor,
    TiktokenCounter,
    ToolCall,
    ToolMessage,
    Usage,
    WindowCompactor,
    default_counter,
    pin_nothing,
    pin_react_initiator,
    pin_system,
    pin_system_and_initial_user,
)

__all__ = [
    "TEXTS",
    "Built",
    "CharCounter",
    "FixedPin",
    "built_contexts",
    "compactors",
    "counters",
    "histories",
    "next_components",
    "open_calls",
    "pins",
    "sizes",
    "texts",
    "threshold_compactors",
    "thresholds",
    "window_compactors",
]

# Texts come from a fixed pool, one draw each: generating a history is the
# main cost of these tests, and a pool of words, paths, digits, whitespace,
# non-ASCII text and a special-token look-alike varies token counts enough.
TEXTS = (
    "",
    "ok",
    "Hello there",
    "ls -la /tmp/x_9",
    "42",
    "é è ü",
    "  \n\t ",
    "src/mellea_ctx/_context.py:120",
    "<|endoftext|>",
    "The quick brown fox jumps over the lazy dog, twice.",
    "call_7",
    "{}",
)
texts = st.sampled_from(TEXTS)
nonempty_texts = st.sampled_from(TEXTS[1:])
usages = st.integers(0, 4400).map(
    lambda t: Usage(prompt_tokens=t - t // 10, completion_tokens=t // 10)
)
_CALLS = (
    ("ls", {"path": "."}),
    ("read_file", {"path": "a.py"}),
    ("grep", {"q": "TODO"}),
    ("ls", {}),
)


@attrs.define(frozen=True)
class FixedPin:
    """A pin predicate that protects the first ``index`` components (or all, if fewer).

    Unlike the library's predicates it can end anywhere, including inside a
    tool exchange, which exercises the prefix's extension past a split exchange.
    """

    index: int

    def __call__(self, components: Sequence[Component]) -> int:
        return min(self.index, len(components))


class CharCounter:
    """A cheap, deterministic token counter unrelated to tiktoken."""

    def count(self, component: Component) -> int:
        calls = sum(len(c.name) + len(c.arguments) + 2 for c in component.tool_calls)
        return 1 + len(component.content) + calls + 7 * len(component.images)

    def __repr__(self) -> str:
        return "CharCounter()"


_CHAR_COUNTER = CharCounter()

counters = st.sampled_from([default_counter(), _CHAR_COUNTER, TiktokenCounter(per_message=0)])

pins = st.one_of(
    st.sampled_from([pin_nothing, pin_system, pin_system_and_initial_user, pin_react_initiator]),
    st.builds(FixedPin, st.integers(0, 8)),
)

# Small sizes and thresholds are drawn often, so compactions happen often in
# short histories; the full ranges are still drawn.
sizes = st.one_of(st.integers(0, 4), st.integers(0, 30))
window_compactors = st.builds(WindowCompactor, size=sizes, pin_predicate=pins)

thresholds = st.one_of(st.integers(-5, 0), st.integers(1, 120), st.integers(-5, 3000))

threshold_compactors = st.builds(
    ThresholdCompactor,
    window_compactors,
    threshold=thresholds,
    measure=st.sampled_from(["tokens", "usage"]),
)

compactors = st.one_of(window_compactors, threshold_compactors)


def open_calls(items: Sequence[Component]) -> list[str]:
    """Return the ids of the trailing exchange's calls that have no result yet."""
    answered: set[str] = set()
    index = len(items) - 1
    while index >= 0 and items[index].tool_call_id is not None:
        answered.add(items[index].tool_call_id)  # type: ignore[arg-type]
        index -= 1
    if index < 0:
        return []
    return [call.id for call in items[index].tool_calls if call.id not in answered]


class _Ids:
    """Hands out tool call ids that are unique within one history."""

    def __init__(self, used: Sequence[Component] = ()) -> None:
        numbers = [int(call.id[5:]) for c in used for call in c.tool_calls]
        self.next = 1 + max(numbers, default=0)

    def take(self, n: int) -> list[str]:
        ids = [f"call_{self.next + i}" for i in range(n)]
        self.next += n
        return ids


def _tool_calls(draw: Any, ids: _Ids) -> tuple[ToolCall, ...]:
    n = draw(st.integers(1, 4))
    return tuple(ToolCall(call_id, *draw(st.sampled_from(_CALLS))) for call_id in ids.take(n))


def _caller(draw: Any, ids: _Ids) -> Component:
    """An assistant component that asks for 1..4 tool calls."""
    calls = _tool_calls(draw, ids)
    kind = draw(st.sampled_from(["message", "thunk", "thunk_usage", "thunk_text"]))
    if kind == "message":
        return Message("assistant", draw(texts), tool_calls=calls)
    usage = draw(usages) if kind == "thunk_usage" else None
    value = draw(texts) if kind == "thunk_text" else None
    return ModelOutputThunk(value, tool_calls=calls, usage=usage)


def _result(draw: Any, call_id: str) -> ToolMessage:
    text = draw(texts)
    return ToolMessage(text, tool_call_id=call_id, name="ls" if len(text) % 3 == 1 else None)


def _plain(draw: Any, *, initiator: bool) -> Component:
    """One component that is not part of a tool exchange."""
    kinds = ["user", "cblock", "assistant", "thunk", "thunk_usage", "thunk_none", "user_image"]
    if initiator:
        kinds.append("initiator")
    kind = draw(st.sampled_from(kinds))
    if kind == "thunk_none":
        return ModelOutputThunk(None)
    if kind == "thunk_usage":
        return ModelOutputThunk(draw(texts), usage=draw(usages))
    if kind == "initiator":
        return ReactInitiator(draw(nonempty_texts))
    text = draw(texts)
    if kind == "user":
        return Message("user", text)
    if kind == "user_image":
        return Message("user", text, images=("https://example.com/y.png",), name="ana")
    if kind == "cblock":
        return CBlock(text)
    if kind == "assistant":
        return Message("assistant", text)
    return ModelOutputThunk(text)


def _exchange(draw: Any, ids: _Ids, *, closed: bool) -> list[Component]:
    caller = _caller(draw, ids)
    call_ids = [call.id for call in caller.tool_calls]
    order = draw(st.permutations(call_ids)) if len(call_ids) > 1 else call_ids
    if not closed:
        order = order[: draw(st.integers(0, len(order) - 1))]
    return [caller, *(_result(draw, call_id) for call_id in order)]


@st.composite
def histories(draw: Any, max_segments: int = 14) -> list[Component]:
    """Valid histories as lists of components (see the module docstring)."""
    items: list[Component] = [
        Message("system", draw(texts)) for _ in range(draw(st.integers(0, 2)))
    ]
    ids = _Ids()
    segments = draw(st.integers(0, max_segments))
    initiator_at = draw(st.none() | st.integers(0, segments))
    for index in range(segments + 1):
        if index == initiator_at:
            items.append(ReactInitiator(draw(nonempty_texts)))
        if index == segments:
            break
        if draw(st.integers(0, 3)) == 0:
            items.extend(_exchange(draw, ids, closed=True))
        else:
            items.append(_plain(draw, initiator=False))
    if draw(st.booleans()) and draw(st.booleans()):
        items.extend(_exchange(draw, ids, closed=False))
    return items


@st.composite
def next_components(draw: Any, items: Sequence[Component]) -> Component:
    """A component that may validly follow ``items``.

    While the trailing exchange is open, only one of its missing results.
    Otherwise: a system message (only while everything so far is system), a
    plain component, a ``ReactInitiator`` (when there is none yet), or an
    assistant component opening a new exchange.
    """
    missing = open_calls(items)
    if missing:
        return _result(draw, draw(st.sampled_from(missing)))
    if all(c.role == "system" and isinstance(c, Message) for c in items) and draw(st.booleans()):
        return Message("system", draw(texts))
    if draw(st.integers(0, 3)) == 0:
        return _caller(draw, _Ids(items))
    initiator = not any(isinstance(c, ReactInitiator) for c in items)
    return _plain(draw, initiator=initiator)


@attrs.define
class Built:
    """A history added one by one to a context, and every context that produced.

    ``contexts[0]`` is the root; ``contexts[i]`` is what ``contexts[i - 1].add
    (history[i - 1])`` returned. ``read`` says after which adds the test read
    ``token_count`` while building (the others were never read).
    """

    history: list[Component]
    contexts: list[ChatContext]
    compactor: Any
    counter: Any
    read: list[bool]

    @property
    def last(self) -> ChatContext:
        return self.contexts[-1]


@st.composite
def built_contexts(
    draw: Any,
    compactor: st.SearchStrategy[Any] | None = None,
    history: st.SearchStrategy[list[Component]] | None = None,
) -> Built:
    """Contexts built by adding a history one by one to ``ChatContext(...)``.

    ``compactor`` defaults to "none or any compactor"; pass ``st.none()`` for
    plain contexts. Token totals are read at random steps, so some contexts
    are compacted before anyone ever asked for their total.
    """
    if compactor is None:
        compactor = st.none() | compactors
    chosen = draw(compactor)
    counter = draw(counters)
    items = draw(history if history is not None else histories())
    mask = draw(st.integers(0, (1 << len(items)) - 1))  # one draw; shrinks to "never read"
    read = [bool(mask >> index & 1) for index in range(len(items))]
    ctx = ChatContext(compactor=chosen, counter=counter)
    contexts = [ctx]
    for component, read_now in zip(items, read, strict=True):
        ctx = ctx.add(component)
        if read_now:
            _ = ctx.token_count
        contexts.append(ctx)
    return Built(items, contexts, chosen, counter, read)
