"""The window and threshold compactors, on small hand-built histories."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    InvalidArgumentError,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    ThresholdCompactor,
    ToolCall,
    ToolMessage,
    Usage,
    WindowCompactor,
    pin_nothing,
    pin_react_initiator,
    pin_system,
    pin_system_and_initial_user,
)

from .helpers import build


def contents(ctx: ChatContext) -> list[str]:
    return [component.content or "<calls>" for component in ctx.as_list()]


def call(*call_ids: str) -> Message:
    return Message("assistant", "", tool_calls=[ToolCall(i, "grep", {"q": i}) for i in call_ids])


def result(call_id: str) -> ToolMessage:
    return ToolMessage(f"r{call_id}", tool_call_id=call_id)


SYSTEM = Message("system", "sys")


class TestWindowCompactor:
    def test_keeps_prefix_and_last_size(self) -> None:
        """The pinned system prompt plus the last `size` body components remain."""
        ctx = build(SYSTEM, *[Message("user", str(i)) for i in range(6)])
        assert ["sys", "4", "5"] == contents(WindowCompactor(size=2).compact(ctx))

    def test_returns_the_same_object_when_it_fits(self) -> None:
        """Nothing to drop: the very same context comes back."""
        ctx = build(SYSTEM, Message("user", "a"))
        assert WindowCompactor(size=1).compact(ctx) is ctx

    def test_size_zero_keeps_only_the_prefix(self) -> None:
        """size=0 drops the whole body."""
        ctx = build(SYSTEM, Message("user", "a"), Message("assistant", "b"))
        assert ["sys"] == contents(WindowCompactor(size=0).compact(ctx))

    def test_edge_inside_an_exchange_keeps_the_whole_exchange(self) -> None:
        """A cut that would separate results from their call moves back to the call."""
        ctx = build(SYSTEM, Message("user", "go"), call("a", "b", "c"), *map(result, "abc"))
        compacted = WindowCompactor(size=2).compact(ctx)
        assert ["sys", "<calls>", "ra", "rb", "rc"] == contents(compacted)

    def test_open_exchange_survives_size_zero(self) -> None:
        """Calls still waiting for results are never dropped, so their results cannot orphan."""
        ctx = build(SYSTEM, Message("user", "go"), call("a", "b"), result("a"))
        compacted = WindowCompactor(size=0).compact(ctx)
        assert ["sys", "<calls>", "ra"] == contents(compacted)
        finished = compacted.add(result("b"))
        assert ["sys", "<calls>", "ra", "rb"] == contents(finished)

    def test_closed_exchange_is_dropped_whole(self) -> None:
        """Once answered and followed by more dialogue, an exchange can go in one piece."""
        ctx = build(SYSTEM, call("a"), result("a"), Message("assistant", "x"), Message("user", "y"))
        assert ["sys", "x", "y"] == contents(WindowCompactor(size=2).compact(ctx))

    def test_loose_history_is_cut_by_call_ids(self) -> None:
        """When a result stands apart from its call, ids still keep the pair together."""
        ctx = build(
            Message("user", "u"),
            call("a"),
            Message("user", "interjection"),
            result("a"),
            Message("user", "end"),
        )
        compacted = WindowCompactor(size=2, pin_predicate=pin_nothing).compact(ctx)
        assert ["<calls>", "interjection", "ra", "end"] == contents(compacted)

    @pytest.mark.parametrize(
        ("pin", "expected"),
        [
            (pin_nothing, ["3"]),
            (pin_system, ["sys", "3"]),
            (pin_system_and_initial_user, ["sys", "task", "3"]),
            (pin_react_initiator, ["sys", "task", "goal", "3"]),
        ],
    )
    def test_pin_predicates(self, pin: object, expected: list[str]) -> None:
        """Each pin predicate protects its own prefix."""
        ctx = build(
            SYSTEM,
            Message("user", "task"),
            ReactInitiator("goal"),
            *[Message("user", str(i)) for i in range(4)],
        )
        assert expected == contents(WindowCompactor(size=1, pin_predicate=pin).compact(ctx))  # type: ignore[arg-type]

    def test_a_pin_inside_an_exchange_is_extended(self) -> None:
        """A prefix that would end between a call and its results takes the results along."""
        ctx = build(call("a"), result("a"), Message("user", "x"), Message("user", "y"))
        compacted = WindowCompactor(size=1, pin_predicate=lambda items: 1).compact(ctx)
        assert ["<calls>", "ra", "y"] == contents(compacted)

    def test_a_bad_pin_result_is_reported(self) -> None:
        """A predicate returning an index out of range is named in the error."""

        def too_far(items: object) -> int:
            return 99

        ctx = build(Message("user", "a"), Message("user", "b"))
        with pytest.raises(InvalidArgumentError, match="pin predicate too_far returned 99"):
            WindowCompactor(size=1, pin_predicate=too_far).compact(ctx)

    def test_inline_cost_is_flat_in_size(self) -> None:
        """Inline, the window drops one component per add without rebuilding its buffer."""
        ctx = build(
            SYSTEM,
            *[Message("user", str(i)) for i in range(100)],
            compactor=WindowCompactor(size=50),
        )
        grown = ctx.add(Message("user", "new"))
        assert grown._buf is ctx._buf
        assert ["sys", *map(str, range(51, 100)), "new"] == contents(grown)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"size": -1}, "size=-1 must be an int >= 0; pass 0 to keep only the pinned prefix"),
            ({"size": 2.5}, "size=2.5 must be an int >= 0"),
            ({"size": 1, "pin_predicate": "system"}, "pin_predicate='system' is not callable"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict[str, object], message: str) -> None:
        """Bad settings are refused at construction with the value and the fix."""
        with pytest.raises(InvalidArgumentError) as info:
            WindowCompactor(**kwargs)  # type: ignore[arg-type]
        assert message in str(info.value)


class CountingWindow(WindowCompactor):
    """A window that records how often it ran."""

    runs: list[int]

    def __init__(self, size: int) -> None:
        super().__init__(size)
        object.__setattr__(self, "runs", [])

    def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
        self.runs.append(len(ctx))
        return super().compact(ctx)


class TestThresholdCompactor:
    def test_fires_only_above_the_threshold(self) -> None:
        """Below or at the threshold the inner compactor is not called."""
        inner = WindowCompactor(size=1)
        ctx = build(Message("user", "a"), Message("user", "b"))
        at = ThresholdCompactor(inner, threshold=ctx.token_count)
        below = ThresholdCompactor(inner, threshold=ctx.token_count - 1)
        assert (ctx, ["b"]) == (at.compact(ctx), contents(below.compact(ctx)))

    @pytest.mark.parametrize("threshold", [0, -10])
    def test_non_positive_threshold_disables(self, threshold: int) -> None:
        """threshold <= 0 turns the gate off."""
        ctx = build(Message("user", "a"), Message("user", "b"))
        assert ThresholdCompactor(WindowCompactor(size=0), threshold=threshold).compact(ctx) is ctx

    def test_exact_reading_does_not_refire_after_compacting(self) -> None:
        """After the inner compacts, the fresh total closes the gate until the history regrows."""
        inner = CountingWindow(size=2)
        ctx = ChatContext(compactor=ThresholdCompactor(inner, threshold=40))
        for index in range(30):
            ctx = ctx.add(Message("user", f"m{index}"))
        # Each message costs 6 tokens: the gate opens at 7 messages (42 > 40) and the
        # window keeps 2, so it opens again 5 adds later: at adds 7, 12, 17, 22 and 27.
        assert [7, 7, 7, 7, 7] == inner.runs

    def test_usage_reading_does_not_refire_on_a_stale_figure(self) -> None:
        """After compacting, a usage figure from the longer history does not fire the gate again."""
        inner = CountingWindow(size=1)
        gate = ThresholdCompactor(inner, threshold=1_000, measure="usage")
        ctx = ChatContext(compactor=gate)
        ctx = ctx.add(Message("user", "q"))
        ctx = ctx.add(ModelOutputThunk("a", usage=Usage(prompt_tokens=1_500, completion_tokens=5)))
        assert 1 == len(inner.runs)
        for index in range(5):
            ctx = ctx.add(Message("user", f"more {index}"))
        assert 1 == len(inner.runs)
        ctx = ctx.add(ModelOutputThunk("b", usage=Usage(prompt_tokens=1_200, completion_tokens=5)))
        assert 2 == len(inner.runs)

    def test_usage_without_a_reading_does_nothing(self) -> None:
        """Before the model reports usage there is nothing to compare."""
        gate = ThresholdCompactor(WindowCompactor(size=0), threshold=1, measure="usage")
        ctx = build(Message("user", "a"), Message("user", "b"))
        assert gate.compact(ctx) is ctx

    def test_backend_is_forwarded(self) -> None:
        """The gate hands its backend argument to the inner compactor."""
        seen: list[object] = []

        class Recorder:
            def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
                seen.append(backend)
                return ctx

        marker = object()
        ctx = build(Message("user", "a"))
        ThresholdCompactor(Recorder(), threshold=1).compact(ctx, backend=marker)  # type: ignore[arg-type]
        assert [marker] == seen

    @pytest.mark.parametrize(
        ("args", "kwargs", "message"),
        [
            ((WindowCompactor(size=1),), {"threshold": "9"}, "threshold='9' must be an int"),
            ((object(),), {"threshold": 9}, "has no compact() method"),
            ((WindowCompactor(size=1),), {"threshold": 9, "measure": "chars"}, "measure='chars'"),
        ],
    )
    def test_bad_arguments(
        self, args: tuple[object, ...], kwargs: dict[str, object], message: str
    ) -> None:
        """Bad settings are refused at construction with the value and the fix."""
        with pytest.raises(InvalidArgumentError) as info:
            ThresholdCompactor(*args, **kwargs)  # type: ignore[arg-type]
        assert message in str(info.value)


class TestWindowFastPath:
    @given(
        roles=st.lists(st.sampled_from(["system", "user", "assistant"]), max_size=30),
        size=st.integers(min_value=0, max_value=6),
        pin=st.sampled_from([pin_nothing, pin_system, pin_system_and_initial_user]),
        inline=st.booleans(),
    )
    def test_matches_the_general_cut(
        self, roles: list[str], size: int, pin: Any, inline: bool
    ) -> None:
        """The per-add path gives what the general cut gives, later system messages included."""
        from mellea_ctx._core.boundaries import window_cut

        compactor = WindowCompactor(size=size, pin_predicate=pin)
        plain = build(*[Message(r, f"{r} {i}") for i, r in enumerate(roles)])  # type: ignore[arg-type]
        ctx = build(*plain.as_list(), compactor=compactor) if inline else compactor.compact(plain)
        expected = plain.as_list()
        if inline:  # replay the general cut one add at a time
            expected = []
            for component in plain:
                expected.append(component)
                p, k = window_cut(expected, size, pin, loose=False)
                if k > p:
                    expected = expected[:p] + expected[k:]
        else:
            p, k = window_cut(expected, size, pin, loose=False)
            if k > p:
                expected = expected[:p] + expected[k:]
        assert ctx.as_list() == expected
