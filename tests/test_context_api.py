"""ChatContext's API for custom compactors and mellea users.

``with_history``, ``new_instance``, usage, and what a compactor builds its result
with: ``replace_span``, ``token_bound``, ``has_detached_results``, ``with_backoff``,
``with_compactor`` and ``window_span``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    Component,
    InlineCompactor,
    InvalidArgumentError,
    InvalidComponentError,
    Message,
    ModelOutputThunk,
    NotInlineCompactorError,
    ThresholdCompactor,
    TiktokenCounter,
    ToolCall,
    ToolMessage,
    Usage,
    WindowCompactor,
)
from mellea_ctx._core.boundaries import window_cut

from .helpers import build
from .strategies import Built, CharCounter, built_contexts, pins, sizes, window_compactors


class MyContext(ChatContext):
    """A subclass with an attribute of its own, as a mellea user might write."""

    def __init__(self, *, label: str = "default", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.label = label


class MyThunk(ModelOutputThunk):
    """A ModelOutputThunk subclass, as an integration might define."""

    __slots__ = ()


class DropOldest(InlineCompactor):
    """The smallest inline compactor: drop the first component once there are three."""

    def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
        items = ctx.as_list()
        return ctx if len(items) < 3 else ctx.with_history(items[1:])


class TestWithHistory:
    def test_keeps_type_counter_window_and_attributes(self) -> None:
        """The result is of the same subclass, with the same counter, window and attributes."""
        counter = TiktokenCounter()
        ctx = MyContext(label="mine", window_size=3, counter=counter).add(Message("user", "a"))
        ctx = ctx.add(Message("user", "b"))
        rebuilt = ctx.with_history([Message("user", "x")])
        assert MyContext is type(rebuilt)
        assert ("mine", 3, counter) == (rebuilt.label, rebuilt.window_size, rebuilt.counter)
        assert ["x"] == [c.content for c in rebuilt]
        assert ["a", "b"] == [c.content for c in ctx]

    def test_keeps_the_compactor_and_it_keeps_running(self) -> None:
        """A compactor built on with_history rides along: later adds keep compacting."""
        compactor = DropOldest()
        ctx = MyContext(label="mine", compactor=compactor)
        for text in "abcde":
            ctx = ctx.add(Message("user", text))
        assert ["d", "e"] == [c.content for c in ctx]
        assert (MyContext, "mine", compactor) == (type(ctx), ctx.label, ctx.compactor)

    def test_token_count_is_exact_and_usage_dropped(self) -> None:
        """The new context counts its own history and forgets the old usage reading."""
        usage = Usage(prompt_tokens=500, completion_tokens=5)
        ctx = build(Message("user", "a"), ModelOutputThunk("b", usage=usage))
        rebuilt = ctx.with_history(ctx.as_list()[1:])
        assert sum(rebuilt.counter.count(c) for c in rebuilt) == rebuilt.token_count
        assert None is rebuilt.last_usage_tokens
        assert rebuilt.previous_node is not None and rebuilt.previous_node.is_root_node

    def test_an_orphan_tool_result_is_noticed(self) -> None:
        """A history with a tool result apart from its call still gets safe window cuts."""
        call = ModelOutputThunk(None, tool_calls=[ToolCall("c1", "ls", "{}")])
        items: list[Component] = [
            call,
            Message("user", "meanwhile"),
            ToolMessage("42 files", tool_call_id="c1"),
        ]
        ctx = ChatContext().with_history(items)
        cut = WindowCompactor(size=1).compact(ctx)
        assert call in cut.as_list()

    def test_refuses_a_non_component(self) -> None:
        """A stray string in the history is refused with its index."""
        with pytest.raises(InvalidComponentError, match=r"components\[1\]='oops'"):
            ChatContext().with_history([Message("user", "a"), "oops"])  # type: ignore[list-item]


class TestNewInstance:
    def test_new_instance_keeps_the_configuration(self) -> None:
        """new_instance is an empty root with the same type, compactor, counter and window."""
        compactor = WindowCompactor(size=2)
        ctx = MyContext(label="mine", compactor=compactor).add(Message("user", "a"))
        fresh = ctx.new_instance()
        assert (MyContext, "mine", compactor, ctx.counter) == (
            type(fresh),
            fresh.label,
            fresh.compactor,
            fresh.counter,
        )
        assert (0, True, 0, None) == (
            len(fresh),
            fresh.is_root_node,
            fresh.token_count,
            fresh.previous_node,
        )

    def test_reset_to_new_is_a_bare_root(self) -> None:
        """reset_to_new is cls(): an empty root with no configuration."""
        ctx = MyContext(label="mine", window_size=4).add(Message("user", "a"))
        fresh = ctx.reset_to_new()
        assert (MyContext, "default", None, 0) == (
            type(fresh),
            fresh.label,
            fresh.window_size,
            len(fresh),
        )


class TestSubclassedThunk:
    def test_usage_of_a_thunk_subclass_is_read(self) -> None:
        """last_usage_tokens reads a ModelOutputThunk subclass's usage."""
        usage = Usage(prompt_tokens=900, completion_tokens=10)
        ctx = build(Message("user", "a"), MyThunk("b", usage=usage))
        assert 910 == ctx.last_usage_tokens

    def test_measure_usage_fires_on_a_thunk_subclass(self) -> None:
        """ThresholdCompactor(measure='usage') fires on a subclass's reported usage."""
        gate = ThresholdCompactor(WindowCompactor(size=1), threshold=100, measure="usage")
        usage = Usage(prompt_tokens=900, completion_tokens=10)
        ctx = build(Message("user", "a"), Message("user", "b"), compactor=gate)
        ctx = ctx.add(MyThunk("c", usage=usage))
        assert ["c"] == [c.content for c in ctx]

    def test_subclass_attributes_ride_along_adds(self) -> None:
        """A subclass's own attribute survives add and an inline compaction."""
        ctx = MyContext(label="mine", compactor=WindowCompactor(size=1))
        for text in "abc":
            ctx = ctx.add(Message("user", text))
        assert (MyContext, "mine", 1) == (type(ctx), ctx.label, len(ctx))


# -- the compactor-facing API ---------------------------------------------------


def _detached(items: list[Component]) -> bool:
    """Whether a tool result in ``items`` does not follow a tool call or another result."""
    return any(
        item.tool_call_id is not None
        and (index == 0 or not (items[index - 1].tool_calls or items[index - 1].tool_call_id))
        for index, item in enumerate(items)
    )


@st.composite
def spans(draw: st.DrawFn) -> tuple[Built, int, int, list[Component]]:
    """A built context, a span ``[lo:hi]`` of its history and a replacement for it."""
    built = draw(built_contexts(compactor=st.none() | window_compactors))
    n = len(built.last)
    lo = draw(st.integers(0, n))
    hi = draw(st.integers(lo, n))
    pool = [*built.history, Message("user", "summary"), ToolMessage("42", tool_call_id="c9")]
    replacement = draw(st.lists(st.sampled_from(pool), max_size=3))
    return built, lo, hi, replacement


class TestReplaceSpan:
    @settings(max_examples=200)
    @given(case=spans())
    def test_equals_list_slicing_on_the_components(
        self, case: tuple[Built, int, int, list[Component]]
    ) -> None:
        """The history is ``items[:lo] + replacement + items[hi:]``, the very same objects."""
        built, lo, hi, replacement = case
        ctx = built.last
        before = [id(c) for c in ctx]
        items = ctx.as_list()
        result = ctx.replace_span(lo, hi, replacement)
        expected = items[:lo] + replacement + items[hi:]
        assert [id(c) for c in expected] == [id(c) for c in result]
        assert before == [id(c) for c in ctx]  # self is not modified
        assert sum(map(ctx.counter.count, expected)) == result.token_count
        assert result.token_bound() >= result.token_count
        assert (ctx.compactor, ctx.counter, type(ctx)) == (
            result.compactor,
            result.counter,
            type(result),
        )
        assert (None, 0) == (result.last_usage_tokens, result.compaction_backoff)

    @settings(max_examples=200)
    @given(case=spans())
    def test_notices_a_tool_result_it_detaches(
        self, case: tuple[Built, int, int, list[Component]]
    ) -> None:
        """A result the replacement leaves apart from its call is noticed; nothing is forgotten."""
        built, lo, hi, replacement = case
        ctx = built.last
        result = ctx.replace_span(lo, hi, replacement)
        expected = ctx.as_list()[:lo] + replacement + ctx.as_list()[hi:]
        assert (ctx.has_detached_results or _detached(expected)) == result.has_detached_results
        assert _detached(expected) == ctx.with_history(expected).has_detached_results

    def test_dropping_a_tool_call_detaches_its_results(self) -> None:
        """Dropping the call in front of a result marks the context as detached."""
        call = ToolCall("c1", "ls", {})
        ctx = build(
            Message("user", "list"),
            Message("assistant", "", tool_calls=[call]),
            ToolMessage("a.txt", tool_call_id="c1"),
        )
        assert not ctx.has_detached_results
        assert ctx.replace_span(0, 2).has_detached_results
        assert ctx.replace_span(1, 2).has_detached_results
        assert not ctx.replace_span(0, 1).has_detached_results

    @pytest.mark.parametrize(
        ("lo", "hi", "replacement", "error", "text"),
        [
            (2, 1, (), InvalidArgumentError, "cannot replace [2:1] in a context of 3 components"),
            (0, 4, (), InvalidArgumentError, "cannot replace [0:4] in a context of 3 components"),
            (-1, 1, (), InvalidArgumentError, "cannot replace [-1:1]"),
            (0, 1.0, (), InvalidArgumentError, "lo=0 and hi=1.0 must be ints"),
            (0, 1, ("text",), InvalidComponentError, "replacement[0]='text' is not a Component"),
        ],
    )
    def test_refuses_a_bad_span_or_replacement(
        self, lo: Any, hi: Any, replacement: Any, error: type[Exception], text: str
    ) -> None:
        """A span outside the history, or a replacement that is not components, is refused."""
        ctx = build(*(Message("user", t) for t in "abc"))
        with pytest.raises(error, match=re.escape(text)):
            ctx.replace_span(lo, hi, replacement)

    def test_accepts_any_iterable(self) -> None:
        """A generator works as the replacement, as ``with_history`` takes any iterable."""
        ctx = build(*(Message("user", t) for t in "abc"))
        result = ctx.replace_span(0, 2, (Message("user", t) for t in "xy"))
        assert ["x", "y", "c"] == [c.content for c in result]


class TestTokenBound:
    @given(built=built_contexts())
    def test_never_under_the_exact_total(self, built: Built) -> None:
        """Every context's bound is at least its exact total."""
        for ctx in built.contexts:
            assert ctx.token_bound() >= ctx.token_count

    @given(built=built_contexts(counter=st.just(CharCounter())))
    def test_exact_for_a_counter_without_bound(self, built: Built) -> None:
        """A counter with no ``bound`` method gives the exact total."""
        for ctx in built.contexts:
            assert ctx.token_count == ctx.token_bound()


class TestWithBackoff:
    def test_doubles_with_each_consecutive_failure(self) -> None:
        """The hold is ``adds * 2**k`` after ``k`` earlier failures, ``k`` at most 4."""
        ctx = build(Message("user", "hi"))
        holds = []
        for _ in range(6):
            ctx = ctx.with_backoff(3)
            holds.append(ctx.compaction_backoff)
        assert [3, 6, 12, 24, 48, 48] == holds

    def test_zero_is_self_and_self_is_not_modified(self) -> None:
        """``adds=0`` returns ``self``; a hold never changes the context it was taken from."""
        ctx = build(Message("user", "hi"))
        held = ctx.with_backoff(2)
        assert ctx.with_backoff(0) is ctx
        assert (0, 2) == (ctx.compaction_backoff, held.compaction_backoff)
        assert [id(c) for c in ctx] == [id(c) for c in held]

    def test_the_compactor_waits_that_many_adds(self) -> None:
        """The carried compactor skips the next ``adds`` adds, then runs again."""
        ctx = build(*(Message("user", t) for t in "abc"), compactor=WindowCompactor(size=2))
        ctx = ctx.with_backoff(2)
        ctx = ctx.add(Message("user", "d")).add(Message("user", "e"))
        assert ["b", "c", "d", "e"] == [c.content for c in ctx]
        assert ["e", "f"] == [c.content for c in ctx.add(Message("user", "f"))]

    @pytest.mark.parametrize("adds", [-1, 1.5, True, "2", None])
    def test_refuses_what_is_not_an_int_at_least_zero(self, adds: Any) -> None:
        """The message names the argument and its value."""
        with pytest.raises(InvalidArgumentError, match=re.escape(f"adds={adds!r} must be")):
            ChatContext().with_backoff(adds)


class TestWithCompactor:
    def test_carries_the_compactor_and_keeps_everything_else(self) -> None:
        """Only the compactor changes; later adds run it."""
        ctx = build(*(Message("user", t) for t in "abc"))
        window = WindowCompactor(size=1)
        carried = ctx.with_compactor(window)
        assert (window, None) == (carried.compactor, ctx.compactor)
        assert [id(c) for c in ctx] == [id(c) for c in carried]
        assert ["d"] == [c.content for c in carried.add(Message("user", "d"))]
        assert carried.with_compactor(None).compactor is None

    def test_refuses_what_may_not_ride_inline(self) -> None:
        """A non-inline compactor, or one beside a window_size, is refused as in the constructor."""
        with pytest.raises(NotInlineCompactorError, match="is not an InlineCompactor"):
            ChatContext().with_compactor(object())  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="cannot be combined"):
            ChatContext(window_size=2).with_compactor(WindowCompactor(size=1))


class TestWindowSpan:
    @settings(max_examples=200)
    @given(built=built_contexts(compactor=st.none()), size=sizes, pin=pins)
    def test_is_window_cuts_answer(self, built: Built, size: int, pin: Any) -> None:
        """The span is :func:`window_cut`'s, ``None`` where that drops nothing."""
        ctx = built.last
        p, k = window_cut(ctx.as_list(), size, pin, loose=True)
        assert (None if k <= p else (p, k)) == ctx.window_span(size, pin)
