"""One way to call any compactor: ``force`` and ``instructions`` reach ours and a user's alike.

Regression (issue 20): the model's ``compact_context(focus=...)`` reached the
summarizer only when the loop's compactor *was* a ``TokenBudgetCompactor``;
under a ``TieredCompactor`` (or a ``ThresholdCompactor``) the focus was
dropped, because the agent loop switched on concrete classes. A user's own
compactor got neither the focus nor ``force``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from mellea_ctx import (
    ChatContext,
    ClearToolResultsCompactor,
    Compactor,
    Component,
    GatedCompactor,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    ThresholdCompactor,
    TieredCompactor,
    TokenBudgetCompactor,
    ToolCall,
    WindowCompactor,
    acompact_with,
    compact_with,
    pin_react_initiator,
    react,
    tool,
)


@tool
def read_file(path: str) -> str:
    """Read a file of the project.

    Args:
        path: The file to read.
    """
    return f"contents of {path}: " + "def handler(): return 42\n" * 12


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def run_with_focus(compactor: object) -> list[str]:
    """Run react where the model asks for a compaction with a focus; return the summary prompts."""
    prompts: list[str] = []
    plan: list[ModelOutputThunk | str] = [
        ModelOutputThunk("Reading.", tool_calls=[call("read_file", "c1", path="a.py")]),
        ModelOutputThunk("Reading.", tool_calls=[call("read_file", "c2", path="b.py")]),
        ModelOutputThunk("Reading.", tool_calls=[call("read_file", "c3", path="c.py")]),
        ModelOutputThunk(None, tool_calls=[call("compact_context", "c4", focus="return values")]),
        "They all return 42.",
    ]

    def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
        last = messages[-1].content
        if "<conversation>" in last:
            prompts.append(last)
            return "Read a.py, b.py and c.py; each returns 42."
        return plan.pop(0)

    result = react(
        "Compare the files.",
        ChatContext(),
        ScriptedBackend(model),
        tools=[read_file],
        compactor=compactor,  # type: ignore[arg-type]
    )
    assert result.answer == "They all return 42."
    return prompts


def budget() -> TokenBudgetCompactor:
    return TokenBudgetCompactor(
        max_tokens=100_000,
        target_tokens=50_000,
        keep_recent_tokens=10,
        boundary="model_step",
        pin_predicate=pin_react_initiator,
    )


class TestFocusReachesTheSummary:
    """The focus the model asked for is in the summary request, whatever wraps the summarizer."""

    @pytest.mark.parametrize(
        "make",
        [
            pytest.param(budget, id="budget"),
            pytest.param(
                lambda: TieredCompactor([budget()], max_tokens=100_000, target_tokens=50),
                id="tiered",
            ),
            pytest.param(
                lambda: TieredCompactor(
                    [ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0), budget()],
                    max_tokens=100_000,
                    target_tokens=50,
                ),
                id="tiered-after-clearing",
            ),
            pytest.param(
                lambda: ThresholdCompactor(
                    LLMSummarizeCompactor(keep_n=1, pin_predicate=pin_react_initiator),
                    threshold=100_000,
                ),
                id="threshold",
            ),
        ],
    )
    def test_focus_in_the_summary_prompt(self, make: Any) -> None:
        prompts = run_with_focus(make())
        assert prompts, "the forced compaction called no summarizer"
        assert ["<focus>return values</focus>" in p for p in prompts].count(True) == 1


class Recording:
    """A user's compactor with the wide signature: it records what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, str | None]] = []

    def compact(
        self,
        ctx: ChatContext,
        *,
        backend: Any = None,
        force: bool = False,
        instructions: str | None = None,
    ) -> ChatContext:
        self.calls.append((force, instructions))
        return ctx


class Narrow:
    """A user's compactor written against the old, narrow signature."""

    def __init__(self) -> None:
        self.calls = 0

    def compact(self, ctx: ChatContext, *, backend: Any = None) -> ChatContext:
        self.calls += 1
        return ctx


class TestAUsersCompactor:
    def test_gets_the_focus_and_force(self) -> None:
        mine = Recording()
        run_with_focus(mine)
        assert (True, "return values") in mine.calls
        assert (False, None) in mine.calls  # between turns: neither

    def test_gets_them_through_a_tier_and_a_gate(self) -> None:
        mine = Recording()
        tiers = TieredCompactor([ThresholdCompactor(mine, threshold=10**9)], max_tokens=10**9)
        ctx = ChatContext().add(Message("user", "hi"))
        assert tiers.compact(ctx, force=True, instructions="keep ids") is ctx
        assert mine.calls == [(True, "keep ids")]

    def test_a_narrow_signature_is_called_with_backend_alone(self) -> None:
        narrow = Narrow()
        ctx = ChatContext().add(Message("user", "hi"))
        assert compact_with(narrow, ctx, force=True, instructions="x") is ctx
        assert asyncio.run(acompact_with(narrow, ctx, force=True, instructions="x")) is ctx
        tiers = TieredCompactor([narrow], max_tokens=10**9)
        assert tiers.compact(ctx, force=True, instructions="x") is ctx
        assert narrow.calls == 3

    def test_kwargs_take_both(self) -> None:
        seen: list[dict[str, Any]] = []

        class Loose:
            def compact(self, ctx: ChatContext, **options: Any) -> ChatContext:
                seen.append(options)
                return ctx

        ctx = ChatContext().add(Message("user", "hi"))
        compact_with(Loose(), ctx, force=True, instructions="x")
        assert seen == [{"backend": None, "force": True, "instructions": "x"}]


class TestProtocols:
    def test_ours_are_compactors_and_the_gated_ones_say_so(self) -> None:
        gated = [
            ThresholdCompactor(WindowCompactor(size=2), threshold=10),
            budget(),
            TieredCompactor([WindowCompactor(size=2)], max_tokens=10),
        ]
        plain = [WindowCompactor(size=2), ClearToolResultsCompactor(), LLMSummarizeCompactor()]
        assert all(isinstance(c, GatedCompactor) for c in gated)
        assert not any(isinstance(c, GatedCompactor) for c in plain)
        assert all(isinstance(c, Compactor) for c in gated + plain)

    def test_a_subclass_compact_runs_on_add(self) -> None:
        """Riding inline, a subclass's own compact is what runs (no class-identity trick)."""
        ran: list[int] = []

        class Mine(TokenBudgetCompactor):
            def compact(self, ctx: ChatContext, **options: Any) -> ChatContext:
                ran.append(len(ctx))
                return super().compact(ctx, **options)

        ctx = ChatContext(compactor=Mine(max_tokens=100_000, target_tokens=50_000))
        ctx = ctx.add(Message("user", "hi")).add(Message("assistant", "hello"))
        assert ran == [1, 2]
