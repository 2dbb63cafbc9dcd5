"""ChatContext: a persistent history whose every operation returns a new context."""

from __future__ import annotations

import gc

import pytest

from mellea_ctx import (
    CBlock,
    ChatContext,
    Component,
    InlineCompactor,
    InvalidArgumentError,
    InvalidComponentError,
    Message,
    ModelOutputThunk,
    NotInlineCompactorError,
    ReactInitiator,
    ThresholdCompactor,
    ToolCall,
    ToolMessage,
    Usage,
    WindowCompactor,
)

from .helpers import build


def contents(components: object) -> list[str]:
    return [component.content for component in components]  # type: ignore[attr-defined]


SYSTEM = Message("system", "You are terse.")


def exchange(call_ids: tuple[str, ...], text: str = "") -> list[Component]:
    """Return an assistant message calling ``call_ids`` followed by their results."""
    calls = [ToolCall(call_id, "ls", {"path": call_id}) for call_id in call_ids]
    results = [ToolMessage(f"out {call_id}", tool_call_id=call_id) for call_id in call_ids]
    return [Message("assistant", text, tool_calls=calls), *results]


class TestConstruction:
    def test_root_is_empty(self) -> None:
        """A new context is an empty root with a zero token total."""
        root = ChatContext()
        assert (0, True, None, None, 0, []) == (
            len(root),
            root.is_root_node,
            root.previous_node,
            root.node_data,
            root.token_count,
            root.as_list(),
        )

    def test_compactor_and_window_size_conflict(self) -> None:
        """Asking for both a compactor and a window size is a ValueError that says what to use."""
        with pytest.raises(InvalidArgumentError, match="cannot be combined; use compactor="):
            ChatContext(compactor=WindowCompactor(size=2), window_size=2)

    def test_non_inline_compactor_is_a_type_error(self) -> None:
        """A compactor without the inline marker is refused, with the two alternatives."""

        class EveryAdd:
            def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
                return ctx

        with pytest.raises(NotInlineCompactorError) as info:
            ChatContext(compactor=EveryAdd())  # type: ignore[arg-type]
        assert isinstance(info.value, TypeError)
        assert "ThresholdCompactor(inner, threshold=...)" in str(info.value)
        assert "compactor.compact(ctx, backend=...)" in str(info.value)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"window_size": -1}, "window_size=-1 must be an int >= 0"),
            ({"window_size": "5"}, "window_size='5' must be an int >= 0"),
            ({"counter": object()}, "has no count(component) method"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict[str, object], message: str) -> None:
        """Bad constructor arguments name themselves in the error."""
        with pytest.raises(
            InvalidArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")
        ):
            ChatContext(**kwargs)  # type: ignore[arg-type]

    def test_add_refuses_non_components(self) -> None:
        """Adding a bare string says how to wrap it."""
        with pytest.raises(InvalidComponentError, match=r"wrap text as Message\('user', text\)"):
            ChatContext().add("hello")  # type: ignore[arg-type]


class TestAdd:
    def test_add_returns_a_new_context_and_keeps_the_old(self) -> None:
        """The old context reads back exactly as before an add."""
        one = build(Message("user", "a"))
        two = one.add(Message("user", "b"))
        assert (["a"], ["a", "b"]) == (contents(one.as_list()), contents(two.as_list()))
        assert two.previous_node is one
        assert one.node_data is not two.node_data

    def test_branching_from_an_older_context(self) -> None:
        """Adding to an older context leaves its newer descendants untouched."""
        base = build(Message("user", "a"), Message("user", "b"))
        newer = base.add(Message("user", "c"))
        branch = base.add(Message("user", "X"))
        assert (["a", "b", "c"], ["a", "b", "X"]) == (
            contents(newer.as_list()),
            contents(branch.as_list()),
        )

    def test_from_previous_does_not_compact(self) -> None:
        """from_previous inherits the compactor but does not run it."""
        ctx = build(Message("user", "a"), compactor=WindowCompactor(size=1))
        grown = ChatContext.from_previous(ctx, Message("user", "b"))
        assert (2, ctx.compactor) == (len(grown), grown.compactor)

    def test_inline_compactor_runs_on_every_add(self) -> None:
        """A context with a compactor compacts itself as it grows."""
        ctx = build(
            SYSTEM, *[Message("user", str(i)) for i in range(5)], compactor=WindowCompactor(size=2)
        )
        assert ["You are terse.", "3", "4"] == contents(ctx.as_list())

    def test_compactor_result_always_carries_the_compactor(self) -> None:
        """Even a compactor that forgets to carry itself leaves a compacting context."""

        class Forgetful(InlineCompactor):
            def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
                return WindowCompactor(size=1).compact(build(*ctx.as_list()))

        forgetful = Forgetful()
        ctx = build(Message("user", "a"), Message("user", "b"), compactor=forgetful)
        assert (forgetful, ["b"]) == (ctx.compactor, contents(ctx.as_list()))


class TestReading:
    def test_as_list_last_n(self) -> None:
        """as_list(last_n_components=k) returns the k most recent components."""
        ctx = build(*[Message("user", str(i)) for i in range(5)])
        assert (["3", "4"], [], ["0", "1", "2", "3", "4"]) == (
            contents(ctx.as_list(2)),
            ctx.as_list(0),
            contents(ctx.as_list(10)),
        )

    def test_as_list_is_a_fresh_list(self) -> None:
        """Mutating the returned list does not touch the context."""
        ctx = build(Message("user", "a"))
        ctx.as_list().clear()
        assert 1 == len(ctx.as_list())

    def test_last_turn_starts_at_the_last_user_input(self) -> None:
        """The current turn is the last user input and everything after it."""
        ctx = build(
            SYSTEM,
            Message("user", "first"),
            Message("assistant", "ok"),
            Message("user", "second"),
            *exchange(("c1",)),
            ModelOutputThunk("done"),
        )
        assert ["second", "", "out c1", "done"] == contents(ctx.last_turn())

    def test_len_and_iteration(self) -> None:
        """len() and iteration agree with as_list()."""
        ctx = build(Message("user", "a"), CBlock("b"))
        assert (2, ctx.as_list()) == (len(ctx), list(ctx))

    def test_repr_is_short(self) -> None:
        """The repr shows size, tokens (when known) and the compactor."""
        ctx = build(Message("user", "hi"))
        assert "<ChatContext components=1 tokens=? compactor=None>" == repr(ctx)


class TestWindowSize:
    def test_view_keeps_system_and_goal(self) -> None:
        """The generation window never drops the system prompt or the agent's goal."""
        goal = ReactInitiator("Fix the bug")
        ctx = build(SYSTEM, goal, *[Message("user", str(i)) for i in range(6)], window_size=2)
        assert (["You are terse.", "Fix the bug", "4", "5"], 8) == (
            contents(ctx.view_for_generation()),
            len(ctx),
        )

    def test_view_keeps_whole_tool_exchanges(self) -> None:
        """A window edge inside a tool exchange widens to the assistant call."""
        ctx = build(Message("user", "go"), *exchange(("a", "b", "c")), window_size=2)
        view = ctx.view_for_generation()
        assert 4 == len(view)
        assert view[0].tool_calls


class TestTokenCount:
    def test_total_is_the_sum_of_component_counts(self) -> None:
        """token_count equals the counter applied to each component, summed."""
        ctx = build(SYSTEM, Message("user", "hello"), *exchange(("x", "y")))
        assert sum(ctx.counter.count(c) for c in ctx.as_list()) == ctx.token_count

    def test_total_is_exact_after_compaction(self) -> None:
        """Compaction keeps the running total exact, whether or not it was read before."""
        for read_first in (True, False):
            ctx = ChatContext(compactor=WindowCompactor(size=3))
            for index in range(40):
                ctx = ctx.add(Message("user", f"message {index} " * (index % 5 + 1)))
                if read_first:
                    ctx.token_count  # noqa: B018
            assert sum(ctx.counter.count(c) for c in ctx.as_list()) == ctx.token_count

    def test_usage_reading_is_dropped_by_compaction(self) -> None:
        """The provider's usage figure describes the longer history, so compaction forgets it."""
        usage = Usage(prompt_tokens=900, completion_tokens=10)
        ctx = build(Message("user", "a"), ModelOutputThunk("b", usage=usage), Message("user", "c"))
        assert 910 == ctx.last_usage_tokens
        compacted = WindowCompactor(size=1).compact(ctx)
        assert None is compacted.last_usage_tokens


class TestPreviousNode:
    def test_previous_of_a_compacted_context_is_the_history_minus_its_last(self) -> None:
        """previous_node of a compacted context holds the kept history minus the last component."""
        ctx = build(
            SYSTEM, *[Message("user", str(i)) for i in range(6)], compactor=WindowCompactor(size=3)
        )
        previous = ctx.previous_node
        assert previous is not None
        assert ["You are terse.", "3", "4"] == contents(previous.as_list())
        assert previous is ctx.previous_node

    def test_walking_back_reaches_the_root(self) -> None:
        """Following previous_node from a compacted context ends at an empty root."""
        ctx = build(
            SYSTEM, *[Message("user", str(i)) for i in range(6)], compactor=WindowCompactor(size=2)
        )
        seen = []
        node: ChatContext | None = ctx
        while node is not None:
            seen.append(len(node))
            node = node.previous_node
        assert [3, 2, 1, 0] == seen

    def test_previous_token_totals_are_exact(self) -> None:
        """A lazily built previous node knows its exact total."""
        ctx = build(
            *[Message("user", "word " * i) for i in range(1, 8)], compactor=WindowCompactor(size=3)
        )
        ctx.token_count  # noqa: B018
        previous = ctx.previous_node
        assert previous is not None
        assert sum(ctx.counter.count(c) for c in previous.as_list()) == previous.token_count


class TestMemory:
    def test_a_long_windowed_session_holds_only_its_window(self) -> None:
        """A short window over many adds does not keep the whole session alive."""
        ctx = ChatContext(compactor=ThresholdCompactor(WindowCompactor(size=5), threshold=50))
        for index in range(2_000):
            ctx = ctx.add(Message("user", f"message {index}"))
        gc.collect()
        held = len(ctx._buf)
        assert held <= 2 * 32 + 5 * 4
