"""The content rules the validators and repair learned from the providers' documentation."""

from __future__ import annotations

from mellea_ctx import (
    Message,
    ModelOutputThunk,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    from_openai,
    repair_history,
    to_openai,
    validate_anthropic,
    validate_openai,
)

THINK = ThinkingPart("plan", signature="sig", provider="anthropic")


def step(call_id: str, *parts: object) -> Message:
    return Message("assistant", list(parts), tool_calls=[ToolCall(call_id, "ls")], structured=True)


class TestThinkingLoop:
    def test_first_step_with_thinking_is_enough(self) -> None:
        """A continuing loop whose first assistant turn starts with thinking is valid."""
        history = [
            Message("user", "go"),
            step("t1", THINK, TextPart("Looking.")),
            ToolMessage("a", tool_call_id="t1"),
            step("t2", TextPart("Again.")),
            ToolMessage("b", tool_call_id="t2"),
        ]
        assert [] == validate_anthropic(history)

    def test_loop_without_its_thinking_is_reported_not_repaired(self) -> None:
        """Thinking in use, loop continuing, its first turn without thinking: one problem."""
        history = [
            Message("user", "go"),
            Message("assistant", [THINK, TextPart("Hi.")], structured=True),
            Message("user", "now list"),
            step("t1", TextPart("Listing.")),
            ToolMessage("a", tool_call_id="t1"),
        ]
        problems = validate_anthropic(history)
        assert 1 == len(problems) and problems[0].startswith("message 3: the tool loop continues")
        repaired, changes = repair_history(history, provider="anthropic")
        assert (history, []) == (repaired, changes)

    def test_closed_loop_needs_no_thinking(self) -> None:
        """Once the loop ends with a plain user turn, earlier thinking is not required."""
        history = [
            Message("user", "go"),
            Message("assistant", [THINK, TextPart("Hi.")], structured=True),
            Message("user", "now list"),
            step("t1", TextPart("Listing.")),
            ToolMessage("a", tool_call_id="t1"),
            Message("assistant", "Done."),
            Message("user", "thanks"),
        ]
        assert [] == validate_anthropic(history)


class TestAnthropicText:
    def test_blank_system_prompt_is_dropped(self) -> None:
        """A whitespace system prompt is a problem; repair leaves it out."""
        history = [Message("system", "  "), Message("user", "hi")]
        assert 1 == len(validate_anthropic(history))
        repaired, changes = repair_history(history, provider="anthropic")
        assert [Message("user", "hi")] == repaired
        assert ["message 0: dropped the blank system prompt"] == changes

    def test_bad_ids_are_renamed_in_call_and_result(self) -> None:
        """Ids outside ^[a-zA-Z0-9_-]+$ are reported and renamed the same way in both."""
        history = [
            Message("user", "go"),
            step("a.b", TextPart("x")),
            ToolMessage("r", tool_call_id="a.b"),
        ]
        assert 2 == len(validate_anthropic(history))
        repaired, _ = repair_history(history, provider="anthropic")
        assert repaired[1].tool_calls[0].id == repaired[2].tool_call_id != "a.b"
        assert [] == validate_anthropic(repaired)


class TestOpenaiContent:
    def test_null_content_without_calls(self) -> None:
        """OpenAI requires content unless the message calls tools; repair writes ''."""
        history = [Message("user", "hi"), ModelOutputThunk(None)]
        assert 1 == len(validate_openai(history))
        repaired, changes = repair_history(history, provider="openai")
        assert ["message 1: set its content to ''"] == changes
        assert {"role": "assistant", "content": ""} == to_openai(repaired)[1]
        assert [] == validate_openai(from_openai(to_openai(repaired)))
