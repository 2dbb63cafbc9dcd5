"""BaseCompactor: ``compact`` and ``acompact`` written once, each built-in supplying its steps."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    ClearToolResultsCompactor,
    InlineCompactor,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    Message,
    ScriptedBackend,
    SupersededReadsCompactor,
    ThresholdCompactor,
    TieredCompactor,
    TokenBudgetCompactor,
    WindowCompactor,
    inline_backoff,
)
from mellea_ctx._core.protocols import BaseCompactor, CompactCall

from .helpers import build

_SCRIPTED = ScriptedBackend(lambda messages, options: "A summary.")

#: Every built-in compactor, built small.
BUILT_INS: list[Callable[[], BaseCompactor]] = [
    lambda: WindowCompactor(size=2),
    lambda: ThresholdCompactor(WindowCompactor(size=2), threshold=10),
    lambda: ClearToolResultsCompactor(),
    lambda: SupersededReadsCompactor(),
    lambda: TieredCompactor([WindowCompactor(size=2)], max_tokens=10),
    lambda: LLMSummarizeCompactor(default_backend=_SCRIPTED, keep_n=1),
    lambda: TokenBudgetCompactor(max_tokens=100, default_backend=_SCRIPTED),
]

not_contexts = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.builds(Message, st.just("user"), st.text(max_size=5)), max_size=2),
)
not_bools = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats())
not_texts = st.one_of(st.integers(), st.binary(max_size=3), st.lists(st.text(max_size=2)))
bad_calls = st.one_of(
    st.builds(lambda ctx: {"ctx": ctx}, not_contexts),
    st.builds(lambda force: {"force": force}, not_bools),
    st.builds(lambda text: {"instructions": text}, not_texts),
)


def _refusal(compactor: BaseCompactor, method: str, bad: dict[str, Any]) -> str:
    """The message ``compactor.<method>`` refuses ``bad`` with, its owner taken off."""
    ctx = bad.pop("ctx", build(Message("user", "hello"), Message("assistant", "hi")))
    with pytest.raises(InvalidArgumentError) as caught:
        if method == "compact":
            compactor.compact(ctx, **bad)
        else:
            asyncio.run(compactor.acompact(ctx, **bad))
    owner = f"{type(compactor).__name__}.{method}: "
    message = str(caught.value)
    assert message.startswith(owner)
    return message[len(owner) :]


class TestOnePlaceForTheArguments:
    @given(bad=bad_calls)
    def test_every_built_in_refuses_the_same_way_sync_and_async(self, bad: dict[str, Any]) -> None:
        """Each built-in, in both forms, refuses a bad argument with one message."""
        messages = {
            _refusal(make(), method, dict(bad))
            for make in BUILT_INS
            for method in ("compact", "acompact")
        }
        assert len(messages) == 1

    @pytest.mark.parametrize("make", BUILT_INS)
    def test_the_messages_name_the_argument(self, make: Callable[[], BaseCompactor]) -> None:
        """The refusal names the argument, shows its value and says what to pass."""
        compactor = make()
        assert _refusal(compactor, "compact", {"force": "yes"}) == (
            "force='yes' must be True or False; pass True to run past the compactor's trigger"
        )
        assert _refusal(compactor, "acompact", {"instructions": 3}).startswith(
            "instructions=3 must be a str"
        )
        assert _refusal(compactor, "compact", {"ctx": [1]}).startswith("ctx=[1] must be a")


class TestTheStep:
    def test_a_step_of_your_own_runs_in_both_forms(self) -> None:
        """A subclass that writes only ``steps`` gets the checked ``compact`` and ``acompact``."""
        seen: list[CompactCall] = []

        class Keep(InlineCompactor):
            def steps(self, call: CompactCall) -> ChatContext:
                seen.append(call)
                return call.ctx

        ctx = build(Message("user", "a"))
        assert Keep().compact(ctx, instructions="x") is ctx
        assert asyncio.run(Keep().acompact(ctx, force=True)) is ctx
        assert seen == [CompactCall(ctx, None, False, "x"), CompactCall(ctx, None, True, None)]

    def test_the_gate_is_the_base_s(self) -> None:
        """A gated compactor's steps run only when ``due`` says so, or when forced."""
        ran: list[bool] = []

        class Gated(InlineCompactor):
            def due(self, ctx: ChatContext) -> bool:
                return len(ctx) > 2

            def steps(self, call: CompactCall) -> ChatContext:
                ran.append(call.force)
                return call.ctx

        ctx = build(Message("user", "a"))
        Gated().compact(ctx)
        asyncio.run(Gated().acompact(ctx))
        Gated().compact(ctx, force=True)
        asyncio.run(Gated().acompact(build(*[Message("user", "b")] * 3)))
        assert ran == [True, False]

    def test_riding_inline_the_gate_is_asked_once_per_add(self) -> None:
        """``add`` asks ``due`` once per add, due or not, and runs the steps riding inline."""
        asked: list[int] = []
        ran: list[int] = []

        class Gated(InlineCompactor):
            def due(self, ctx: ChatContext) -> bool:
                asked.append(len(ctx))
                return len(ctx) == 2

            def steps(self, call: CompactCall) -> ChatContext:
                ran.append(inline_backoff(3))
                return call.ctx

        ctx = ChatContext(compactor=Gated())
        for text in "abc":
            ctx = ctx.add(Message("user", text))
        assert asked == [1, 2, 3]
        assert ran == [3]  # riding inline: the backoff applies

    def test_riding_inline_your_own_compact_runs_on_every_add(self) -> None:
        """A gated subclass with its own ``compact`` has it run on every add, gate or not."""
        seen: list[int] = []

        class Mine(ThresholdCompactor):
            def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
                seen.append(len(ctx))
                return ctx

        ctx = ChatContext(compactor=Mine(WindowCompactor(size=1), threshold=10**6))
        for text in "ab":
            ctx = ctx.add(Message("user", text))
        assert seen == [1, 2]

    def test_an_overridden_step_drops_the_inherited_inline_cut(self) -> None:
        """A window subclass with its own steps runs them on add, not the parent's cut."""

        class KeepAll(WindowCompactor):
            def steps(self, call: CompactCall) -> ChatContext:
                return call.ctx

        ctx = ChatContext(compactor=KeepAll(size=1))
        for text in "abc":
            ctx = ctx.add(Message("user", text))
        assert [m.content for m in ctx] == ["a", "b", "c"]

    def test_your_own_compact_is_what_acompact_runs(self) -> None:
        """A subclass that overrides ``compact`` (below the steps) gets it run by ``acompact``."""

        class Mine(WindowCompactor):
            def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
                return ctx

        ctx = build(*[Message("user", t) for t in "abc"])
        assert asyncio.run(Mine(size=1).acompact(ctx)) is ctx
