"""The react loop at its edges: sessions after a compaction, the first call, arguments, events."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    Component,
    Event,
    ExtractiveBackend,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    SessionMemory,
    TokenBudgetCompactor,
    ToolCall,
    pin_react_initiator,
    pin_system,
    react,
    react_summary_prompt,
    tool,
)

REMINDER = "REMINDER for this request only: answer in French."


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}: " + "the handler returns 42. " * 8


def is_summary_request(messages: Sequence[Component]) -> bool:
    return any("<conversation>" in m.content for m in messages)


def agent(calls: int) -> Any:
    """A model that calls ``lookup`` ``calls`` times, then answers; summaries on request."""
    made: list[int] = []

    def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
        if is_summary_request(messages):
            return "Earlier: keys were looked up; the handler returns 42."
        if len(made) < calls:
            made.append(1)
            call = ToolCall(f"c{len(made)}", "lookup", json.dumps({"key": f"k{len(made)}"}))
            return ModelOutputThunk(None, tool_calls=[call])
        return "All done."

    return model


def everything_stored(components: Sequence[Component]) -> Iterator[Component]:
    """Every stored component, through the spans of checkpoints (iteratively)."""
    pending = list(components)
    while pending:
        item = pending.pop()
        yield item
        if isinstance(item, Checkpoint):
            pending.extend(item.span)


def seeded_session(memory: SessionMemory, turns: int) -> Any:
    session = memory.open("s1")
    for i in range(turns):
        session = session.commit(
            [Message("user", f"Question {i}: " + "words " * 20), ModelOutputThunk(f"Answer {i}.")]
        )
    return session


class TestRequestOnlyMessagesAfterACompaction:
    """Item 5: a request-only message never reaches the store, even after a replace()."""

    @pytest.mark.parametrize(
        "pin", [pin_react_initiator, pin_system], ids=["kept-word-for-word", "inside-the-span"]
    )
    def test_reminder_is_not_stored(self, pin: Any) -> None:
        memory = SessionMemory(MemoryStore())
        session = seeded_session(memory, 6)
        ctx = session.context(system="You are terse.").add(Message("user", REMINDER))
        compactor = LLMSummarizeCompactor(keep_n=1, pin_predicate=pin)
        result = react(
            "Look up k1 and k2.",
            ctx,
            ScriptedBackend(agent(2)),
            tools=[lookup],
            compactor=compactor,
            session=session,
        )
        assert result.answer == "All done."
        stored = memory.messages("s1")
        assert any(isinstance(c, Checkpoint) for c in stored), "the run did compact"
        assert REMINDER not in [c.content for c in everything_stored(stored)]
        # The request context itself still carried it to the model.
        assert REMINDER in [c.content for c in everything_stored(list(result.ctx))]


class TestCompactionBeforeTheFirstCall:
    """Item 6: a resumed context over the budget is compacted before the first model call."""

    def test_first_request_is_compacted(self) -> None:
        memory = SessionMemory(MemoryStore())
        session = seeded_session(memory, 30)
        ctx = session.context(system="You are terse.")
        assert ctx.token_count > 1000
        sent: list[list[Component]] = []

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
            if is_summary_request(messages):
                return "Earlier: thirty questions were answered."
            sent.append(list(messages))
            return "All done."

        # pin_system: pin_react_initiator would pin the whole resumed dialogue before the goal.
        compactor = TokenBudgetCompactor(max_tokens=200, keep_recent_tokens=50)
        result = react("Go on.", ctx, ScriptedBackend(model), compactor=compactor)
        assert result.answer == "All done."
        assert len(sent) == 1
        assert any(isinstance(c, Checkpoint) for c in sent[0])
        assert sum(result.ctx.counter.count(c) for c in sent[0]) < ctx.token_count / 2


class TestArguments:
    """Item 16: clear errors, or mellea's meaning."""

    def test_context_that_is_not_a_chat_context(self) -> None:
        with pytest.raises(InvalidArgumentError, match=r"ctx=<object object .*ChatContext\(\)"):
            react("g", object(), ScriptedBackend(lambda m, o: "x"))  # type: ignore[arg-type]

    def test_backend_without_generate(self) -> None:
        with pytest.raises(InvalidArgumentError, match=r"backend='gpt-4o' has no generate"):
            react("g", ChatContext(), "gpt-4o")  # type: ignore[arg-type]

    def test_tools_none_means_no_tools(self) -> None:
        seen: list[object] = []

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> str:
            seen.append(options.get("tools"))
            return "fine"

        assert react("g", ChatContext(), ScriptedBackend(model), tools=None).answer == "fine"
        assert seen == [None]

    def test_one_tool_instead_of_a_list(self) -> None:
        with pytest.raises(InvalidArgumentError, match=r"tools=Tool\(.*must be a list"):
            react("g", ChatContext(), ScriptedBackend(lambda m, o: "x"), tools=lookup)  # type: ignore[arg-type]

    def test_unlimited_budget(self) -> None:
        result = react(
            "g", ChatContext(), ScriptedBackend(agent(15)), tools=[lookup], loop_budget=-1
        )
        assert (result.answer, result.turns, result.stopped) == ("All done.", 16, "answer")

    @pytest.mark.parametrize("budget", [0, -2, 1.5, True])
    def test_other_budgets_are_refused(self, budget: object) -> None:
        with pytest.raises(InvalidArgumentError, match=r"loop_budget=.*or -1 for no limit"):
            react("g", ChatContext(), ScriptedBackend(lambda m, o: "x"), loop_budget=budget)  # type: ignore[arg-type]

    @pytest.mark.parametrize("hint", [-1, 0, 2.5, True, "300"])
    def test_summary_prompt_hint(self, hint: object) -> None:
        with pytest.raises(InvalidArgumentError, match=r"max_tokens_hint=.*int >= 1"):
            react_summary_prompt("Fix it", max_tokens_hint=hint)  # type: ignore[arg-type]

    def test_summary_prompt_hint_none_and_positive(self) -> None:
        assert "at most about" not in react_summary_prompt("Fix it")
        hinted = react_summary_prompt("Fix it", max_tokens_hint=300)
        assert "Use at most about 300 tokens." in hinted


class TestEvents:
    """Item 21: turn_started before the turn's compaction; turn_failed before a raise."""

    def test_turn_started_comes_before_the_compaction(self) -> None:
        events: list[Event] = []
        compactor = LLMSummarizeCompactor(
            default_backend=ExtractiveBackend(), keep_n=1, pin_predicate=pin_react_initiator
        )
        react(
            "Look up k1.",
            ChatContext(),
            ScriptedBackend(agent(3)),
            tools=[lookup],
            compactor=compactor,
            on_event=events.append,
        )
        kinds = [(e.kind, e.turn) for e in events]
        applied = [turn for kind, turn in kinds if kind == "compaction_applied"]
        assert applied, kinds
        for turn in applied:
            started = kinds.index(("turn_started", turn))
            assert started < kinds.index(("compaction_applied", turn)), kinds

    def test_error_is_told_before_it_raises(self) -> None:
        events: list[Event] = []

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> str:
            raise KeyError("boom")

        with pytest.raises(KeyError):
            react("g", ChatContext(), ScriptedBackend(model), on_event=events.append)
        assert [e.kind for e in events] == ["turn_started", "turn_failed"]
        assert events[-1].error is not None and "KeyError" in events[-1].error
        assert events[-1].turn == 1
