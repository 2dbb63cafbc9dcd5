"""Tests for the one problems API: :func:`mellea_ctx.problems` and :class:`mellea_ctx.Problem`."""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    Message,
    ModelOutputThunk,
    Problem,
    ToolCall,
    ToolMessage,
    problems,
    repair_history,
    to_gemini,
    to_responses,
    validate_anthropic,
    validate_gemini,
    validate_openai,
    validate_responses,
)
from mellea_ctx._core.exceptions import InvalidArgumentError
from mellea_ctx._formats import gemini
from mellea_ctx._formats.call_rules import repair_changes
from mellea_ctx._formats.responses.rules import item_problems
from tests.strategies import histories

PROVIDERS = ("openai", "anthropic", "responses", "gemini")
VALIDATORS: dict[str, Any] = {
    "openai": validate_openai,
    "anthropic": validate_anthropic,
    "responses": validate_responses,
    "gemini": validate_gemini,
}


@st.composite
def broken_histories(draw: Any) -> list[Any]:
    """Valid histories with components dropped or moved: orphans, unanswered calls, reorders."""
    items = draw(histories(rich=True))
    for _ in range(draw(st.integers(0, 3))):
        if not items:
            break
        at = draw(st.integers(0, len(items) - 1))
        moved = items.pop(at)
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), moved)
    return items


class TestProblem:
    def test_is_a_frozen_value(self) -> None:
        """A Problem holds index, location, rule and message, and cannot be changed."""
        problem = Problem(1, "message 1", "content", "what is wrong")
        assert "message 1: what is wrong" == str(problem)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            problem.index = 2  # type: ignore[misc]

    def test_unknown_provider(self) -> None:
        """An unknown provider is refused with the choices named."""
        with pytest.raises(InvalidArgumentError, match="provider='bard' must be 'openai'"):
            problems([], "bard")  # type: ignore[arg-type]


class TestOneEntryPoint:
    @settings(max_examples=60, deadline=None)
    @given(items=broken_histories(), provider=st.sampled_from(PROVIDERS))
    def test_every_validator_is_a_view_of_problems(self, items: list[Any], provider: str) -> None:
        """validate_<provider>(h) is exactly the lines of problems(h, provider), in order."""
        found = problems(items, provider)  # type: ignore[arg-type]
        assert [str(p) for p in found] == VALIDATORS[provider](items)
        indices = [-1 if p.index is None else p.index for p in found]
        assert indices == sorted(indices)
        assert all(p.index is None or 0 <= p.index < len(items) for p in found)

    @settings(max_examples=60, deadline=None)
    @given(items=broken_histories())
    def test_wire_problems_name_the_component_they_came_from(self, items: list[Any]) -> None:
        """A Responses or Gemini problem's index is the component its item or content came from."""
        owners: list[int] = []
        for index, component in enumerate(items):
            owners += [index] * len(to_responses([component], lost=[]))
        for problem in problems(items, "responses"):
            number = int(re.match(r"item (\d+)", problem.location).group(1))  # type: ignore[union-attr]
            assert owners[number] == problem.index
        _, content_owners, _ = gemini._write(items)
        for problem in problems(items, "gemini"):
            if problem.index is None:
                assert [] == to_gemini(items, lost=[])["contents"]
                continue
            if problem.location == "systemInstruction":  # written from the leading system
                assert problem.index == 0
                continue
            number = int(re.match(r"content (\d+)", problem.location).group(1))  # type: ignore[union-attr]
            assert content_owners[number] == problem.index

    @settings(max_examples=40, deadline=None)
    @given(items=broken_histories(), provider=st.sampled_from(["openai", "anthropic"]))
    def test_repair_reports_by_index(self, items: list[Any], provider: str) -> None:
        """repair_history's lines are repair_changes' (index, change) pairs, formatted."""
        history, lines = repair_history(items, provider=provider)  # type: ignore[arg-type]
        fixed, changes = repair_changes(items, provider)  # type: ignore[arg-type]
        assert history == fixed
        assert lines == [f"message {index}: {change}" for index, change in changes]


class TestRegressions:
    def test_null_assistant_content_is_one_problem_for_every_caller(self) -> None:
        """Issue 20: [user "hi", assistant null] is one 'content' problem (stats said valid).

        OpenAI: assistant ``content`` is "Required unless ``tool_calls`` or
        ``function_call`` is specified" (Chat Completions API reference).
        """
        items = [Message("user", "hi"), ModelOutputThunk(None)]
        [found] = problems(items, "openai")
        assert (1, "message 1", "content") == (found.index, found.location, found.rule)
        assert [str(found)] == validate_openai(items)

    def test_responses_problems_sort_by_item_not_by_text(self) -> None:
        """Problems of items 2 and 10 come in item order; none is found by parsing its line."""
        items: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
        items += [
            {"type": "function_call_output", "call_id": f"c{i}", "output": "x"} for i in range(11)
        ]
        found = item_problems(items)
        assert list(range(1, 12)) == [index for index, _ in found]
        assert [line for _, line in found] == validate_responses(items)

    def test_gemini_without_contents_is_a_history_wide_problem(self) -> None:
        """A Gemini request needs at least one content: a system prompt alone has none."""
        [found] = problems([Message("system", "Be brief.")], "gemini")
        assert (None, "contents", "contents") == (found.index, found.location, found.rule)

    def test_anthropic_and_openai_locations_take_a_label(self) -> None:
        """The label names the component in the location, as the command line's file labels do."""
        items = [Message("user", "go"), ToolMessage("stale", tool_call_id="t9")]
        for provider in ("openai", "anthropic"):
            [found] = problems(items, provider, label=lambda i: f"line {i + 1}")  # type: ignore[arg-type]
            assert ("line 2", "tool_calls") == (found.location, found.rule)

    def test_calls_left_open_at_the_end_are_valid(self) -> None:
        """An open exchange at the end is no problem for any provider."""
        items = [Message("user", "go"), Message("assistant", "", tool_calls=[ToolCall("t1", "ls")])]
        assert [] == [p for provider in PROVIDERS for p in problems(items, provider)]  # type: ignore[arg-type]
