"""Compactors keep a continuing thinking loop whole and never touch the thinking they keep.

Anthropic's rule, per tool loop: while a loop goes on (assistant tool_use,
user tool_result, ...), the last assistant turn must start with its thinking
block, signature intact, and the model writes thinking only on the loop's
first step. So a cut inside a thinking model's running loop must keep its
first assistant step and everything after it, unchanged. The oracle here is
``tests/reference.py``'s ``thinking_loop_first``, written from that rule.
"""

from __future__ import annotations

import warnings
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    BackendError,
    ChatContext,
    CompactionError,
    Component,
    Message,
    ModelOutputThunk,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    pin_nothing,
)
from mellea_ctx._core.boundaries import safe_cut_table, thinking_loop_start, window_cut
from mellea_ctx._core.parts import RedactedThinkingPart, TextPart, ThinkingPart
from tests import reference as ref
from tests.strategies import (
    built_contexts,
    histories,
    llm_summarizers,
    pins,
    sizes,
    threshold_compactors,
    token_budgets,
    window_compactors,
)

rich = histories(max_segments=8, rich=True)


def _context(items: list[Component]) -> ChatContext:
    ctx = ChatContext()
    for component in items:
        ctx = ctx.add(component)
    return ctx


def _thinks(component: Component) -> bool:
    return any(isinstance(p, ThinkingPart | RedactedThinkingPart) for p in component.parts)


def check_thinking_rules(source: list[Component], result: list[Component]) -> None:
    """The loop's first step and all after it end ``result``, by identity; thinking is untouched."""
    first = ref.thinking_loop_first(source)
    if first is not None:
        tail = source[first:]
        assert len(result) >= len(tail)
        assert all(a is b for a, b in zip(result[-len(tail) :], tail, strict=True))
    for component in result:
        if _thinks(component):
            assert any(component is kept for kept in source)


class TestThinkingLoopStart:
    def step(self, *parts: Any, call: str = "c1") -> ModelOutputThunk:
        return ModelOutputThunk(parts=parts, tool_calls=(ToolCall(call, "ls", "{}"),))

    def test_loop_first_step_protected(self) -> None:
        """In user, think+call, result, call, result the loop starts at the thinking step."""
        items = [
            Message("user", "go"),
            self.step(ThinkingPart("plan", signature="s")),
            ToolMessage("a", tool_call_id="c1"),
            self.step(call="c2"),
            ToolMessage("b", tool_call_id="c2"),
        ]
        assert 1 == thinking_loop_start(items)
        assert [True, True, False, False, False, False] == safe_cut_table(items)
        assert (0, 1) == window_cut(items, 1, pin_nothing, loose=False)

    def test_closed_loop_is_free(self) -> None:
        """Once the loop ends in a final answer, a cut may fall inside it."""
        items = [
            Message("user", "go"),
            self.step(RedactedThinkingPart("xx")),
            ToolMessage("a", tool_call_id="c1"),
            ModelOutputThunk(parts=(TextPart("done"),)),
        ]
        assert thinking_loop_start(items) is None
        assert (0, 3) == window_cut(items, 1, pin_nothing, loose=False)

    def test_loop_without_thinking_is_free(self) -> None:
        """A non-thinking model's loop keeps the per-exchange rule only."""
        items = [
            Message("user", "go"),
            self.step(TextPart("x")),
            ToolMessage("a", tool_call_id="c1"),
            self.step(call="c2"),
            ToolMessage("b", tool_call_id="c2"),
        ]
        assert thinking_loop_start(items) is None
        assert (0, 3) == window_cut(items, 2, pin_nothing, loose=False)


class TestCompactorsKeepThinkingLoops:
    @settings(max_examples=60)
    @given(items=rich, size=sizes, pin=pins)
    def test_window_matches_reference(self, items: list[Component], size: int, pin: Any) -> None:
        """A window cut equals the reference cut, which keeps a running thinking loop whole."""
        result = WindowCompactor(size, pin_predicate=pin).compact(_context(items)).as_list()
        p, k = ref.window_cut(items, size, pin)
        expected = items if k <= p else items[:p] + items[k:]
        assert [id(c) for c in expected] == [id(c) for c in result]
        check_thinking_rules(items, result)

    @settings(max_examples=40)
    @given(built=built_contexts(st.one_of(window_compactors, threshold_compactors), rich))
    def test_inline_compaction_at_every_add(self, built: Any) -> None:
        """Every context an inline compactor produced keeps the loop and counts exactly."""
        for index, ctx in enumerate(built.contexts):
            result = ctx.as_list()
            check_thinking_rules(built.history[:index], result)
            assert sum(built.counter.count(c) for c in result) == ctx.token_count

    @settings(max_examples=40)
    @given(data=st.data(), items=rich)
    def test_summarizers(self, data: st.DataObject, items: list[Component]) -> None:
        """The summarizing compactors never fold a running thinking loop into a summary."""
        ctx = _context(items)
        kind = data.draw(st.sampled_from(["llm", "budget"]))
        s = data.draw(llm_summarizers() if kind == "llm" else token_budgets(ctx.token_count))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a failed summary warns; the result is checked
            try:
                result = s.compactor.compact(ctx).as_list()
            except (BackendError, CompactionError):
                return  # strict mode: the input stays as it was
        check_thinking_rules(items, result)


class TestDropThinking:
    @settings(max_examples=60)
    @given(items=rich)
    def test_only_older_turns_lose_thinking(self, items: list[Component]) -> None:
        """Thinking goes from turns before the last user input only; the rest is the same."""
        from mellea_ctx._core.thinking import drop_thinking

        out = drop_thinking(items)
        inputs = [i for i, c in enumerate(items) if c.role == "user" and c.tool_call_id is None]
        start = inputs[-1] if inputs else 0
        tail = items[start:]
        assert all(a is b for a, b in zip(out[-len(tail) :], tail, strict=True)) or not tail
        assert not any(_thinks(c) for c in out[: len(out) - len(tail)])
        check_thinking_rules(items, out)
