"""The OpenAI Agents SDK adapter: a compacting Session and an input filter, through real runs.

The agent runs on a ``Model`` of our own (the SDK's model interface) that
plays a scripted tool-calling agent and records every input the runner hands
it, so each request the SDK built can be checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary

from mellea_ctx import (
    ExtractiveBackend,
    InvalidArgumentError,
    TokenBudgetCompactor,
    WindowCompactor,
    default_counter,
    from_responses,
    to_responses,
    validate_responses,
)
from mellea_ctx.integrations.openai_agents import CompactingSession, input_filter, item_groups

INSTRUCTIONS = "You read files for the user."
COUNTER = default_counter()
set_tracing_disabled(True)  # no trace export: the runs are offline


def tokens(items: list[Any], instructions: str | None) -> int:
    total = sum(COUNTER.count(c) for c in from_responses(items))
    return total + (COUNTER.count_text(instructions) if instructions else 0)


class ScriptedModel(Model):
    """Calls ``read`` ``calls_per_run`` times per run (reasoning first), then answers."""

    def __init__(self, calls_per_run: int) -> None:
        self.calls_per_run = calls_per_run
        self.inputs: list[tuple[list[Any], str | None]] = []
        self.step = 0
        self.in_run = 0

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append((items, system_instructions))
        step, self.step = self.step, self.step + 1
        if self.in_run == self.calls_per_run:
            self.in_run = 0
            text = ResponseOutputText(type="output_text", text="Done.", annotations=[])
            message = ResponseOutputMessage(
                id=f"msg_{step}", type="message", role="assistant", status="completed",
                content=[text],
            )  # fmt: skip
            return ModelResponse(output=[message], usage=Usage(), response_id=None)
        self.in_run += 1
        reasoning = ResponseReasoningItem(
            id=f"rs_{step}",
            type="reasoning",
            summary=[Summary(type="summary_text", text=f"Read file {step} next.")],
        )
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{step}",
            name="read",
            arguments=f'{{"path": "src/f{step}.py"}}',
            id=f"fc_{step}",
            status="completed",
        )
        return ModelResponse(output=[reasoning, call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run without streaming")


@function_tool
def read(path: str) -> str:
    """Read a file."""
    return f"# {path}\n" + "def handler(event):\n    return event\n" * 12


def agent_on(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="reader", instructions=INSTRUCTIONS, model=model, tools=[read])


def check_inputs(model: ScriptedModel, budget: int) -> None:
    for items, instructions in model.inputs:
        assert validate_responses(items) == []
        assert tokens(items, instructions) <= budget


class TestInputFilter:
    def test_long_tool_loop_stays_under_budget(self) -> None:
        """A 34-step run: every input keeps its call/output pairs and fits the budget."""
        budget = 1_500
        compactor = TokenBudgetCompactor(
            max_tokens=budget, keep_recent_tokens=500, boundary="model_step"
        )
        model = ScriptedModel(calls_per_run=34)
        config = RunConfig(
            call_model_input_filter=input_filter(compactor, backend=ExtractiveBackend())
        )
        result = asyncio.run(
            Runner.run(agent_on(model), "Read the files.", run_config=config, max_turns=40)
        )
        assert result.final_output == "Done."
        assert len(model.inputs) == 35
        check_inputs(model, budget)
        assert tokens(*model.inputs[-1]) < tokens(result.to_input_list(), INSTRUCTIONS)

    def test_kept_items_are_the_sdks_own_dicts(self) -> None:
        model = ScriptedModel(calls_per_run=3)
        seen: list[tuple[list[Any], list[Any]]] = []
        keep = input_filter(WindowCompactor(size=3))

        async def spy(data: Any) -> Any:
            out = await keep(data)
            seen.append((list(data.model_data.input), out.input))
            return out

        asyncio.run(
            Runner.run(agent_on(model), "Go.", run_config=RunConfig(call_model_input_filter=spy))
        )
        given, kept = seen[-1]
        assert kept and all(any(k is g for g in given) for k in kept)

    def test_rejects_a_non_compactor(self) -> None:
        with pytest.raises(InvalidArgumentError, match="compactor="):
            input_filter("window")  # type: ignore[arg-type]


class TestCompactingSession:
    def test_thirty_runs_on_sqlite_stay_under_budget(self, tmp_path: Path) -> None:
        """30 runs of two tool steps each over a real SQLite file: every input fits."""
        history_budget = 1_500
        turn = 400  # one run's own items: the question, two steps, their outputs, the answer
        compactor = TokenBudgetCompactor(
            max_tokens=history_budget, keep_recent_tokens=500, boundary="model_step"
        )
        stored = SQLiteSession("u1", str(tmp_path / "chats.db"))
        session = CompactingSession(stored, compactor, backend=ExtractiveBackend())
        model = ScriptedModel(calls_per_run=2)

        async def go() -> list[Any]:
            for n in range(30):
                await Runner.run(agent_on(model), f"Read batch {n}.", session=session)
            return await stored.get_items()

        everything = asyncio.run(go())
        assert len(model.inputs) == 90
        check_inputs(model, history_budget + turn)
        assert tokens(everything, None) > 3 * (history_budget + turn)  # storage kept it all
        assert validate_responses(everything) == []

    def test_limit_reads_the_raw_tail_and_writes_pass_through(self, tmp_path: Path) -> None:
        stored = SQLiteSession("u2", str(tmp_path / "chats.db"))
        session = CompactingSession(stored, WindowCompactor(size=1))
        items = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]

        async def go() -> tuple[Any, ...]:
            await session.add_items(items)
            window, tail = await session.get_items(), await session.get_items(limit=2)
            popped = await session.pop_item()
            await session.clear_session()
            return window, tail, popped, await stored.get_items()

        window, tail, popped, left = asyncio.run(go())
        assert (window, tail, popped, left) == (items[1:], items, items[1], [])
        assert session.session_id == "u2"

    def test_rejects_what_is_not_a_session(self) -> None:
        with pytest.raises(InvalidArgumentError, match="lacks get_items"):
            CompactingSession(object(), WindowCompactor(size=1))  # type: ignore[arg-type]


def test_sdk_items_round_trip(tmp_path: Path) -> None:
    """What the SDK stores reads into components and writes back item for item."""
    stored = SQLiteSession("u3", str(tmp_path / "chats.db"))
    model = ScriptedModel(calls_per_run=3)
    asyncio.run(Runner.run(agent_on(model), "Read.", session=stored))
    items = asyncio.run(stored.get_items())
    kinds = {item.get("type", "message") for item in items}
    assert {"reasoning", "function_call", "function_call_output", "message"} <= kinds
    assert to_responses(from_responses(items)) == items
    groups = item_groups(items)
    assert [i for _, originals in groups for i in originals] == items
