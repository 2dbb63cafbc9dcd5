"""ChatContext's API for custom compactors and mellea users: with_history, new_instance, usage."""

from __future__ import annotations

import pytest

from mellea_ctx import (
    ChatContext,
    Component,
    InlineCompactor,
    InvalidComponentError,
    Message,
    ModelOutputThunk,
    ThresholdCompactor,
    TiktokenCounter,
    ToolCall,
    ToolMessage,
    Usage,
    WindowCompactor,
)

from .helpers import build


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
