"""The pydantic-ai adapter: a history processor driven through a real agent run.

The agent runs on pydantic-ai's own ``FunctionModel``, which hands our test
function every request the agent built, so each one can be checked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mellea_ctx import (
    InvalidArgumentError,
    LLMSummarizeCompactor,
    ScriptedBackend,
    TokenBudgetCompactor,
    WindowCompactor,
    default_counter,
)
from mellea_ctx.integrations.pydantic_ai import _components, history_processor

STEPS = 32


def pairs_whole(messages: list[ModelMessage]) -> bool:
    """Every tool return answers a call of the response before it; every call is answered."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ModelResponse):
            if open_calls:
                return False
            open_calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                if part.tool_call_id not in open_calls:
                    return False
                open_calls.discard(part.tool_call_id)
    return not open_calls


def thinking_kept(messages: list[ModelMessage]) -> bool:
    """Every response that calls tools still starts with its thinking part."""
    return all(
        isinstance(m.parts[0], ThinkingPart)
        for m in messages
        if isinstance(m, ModelResponse) and any(isinstance(p, ToolCallPart) for p in m.parts)
    )


def run_agent(processor: Any) -> tuple[list[list[ModelMessage]], str]:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = len(seen)  # the history shrinks when it is compacted: count requests instead
        seen.append(list(messages))
        if step >= STEPS:
            return ModelResponse(parts=[TextPart("Read them all.")])
        calls = [ToolCallPart("read", {"path": f"src/f{step}.py"}, tool_call_id=f"c{step}a")]
        if step % 4 == 3:
            calls.append(
                ToolCallPart("read", {"path": f"src/g{step}.py"}, tool_call_id=f"c{step}b")
            )
        return ModelResponse(
            parts=[
                ThinkingPart(f"step {step}", signature=f"s{step}", provider_name="anthropic"),
                *calls,
            ]
        )

    agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(processor)])

    @agent.tool_plain
    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}: " + "lorem ipsum " * 80

    result = asyncio.run(agent.run("Read every file under src/."))
    return seen, result.output


class TestHistoryProcessor:
    @pytest.mark.parametrize("mode", ["async", "sync"])
    def test_long_tool_loop_stays_under_budget(self, mode: str) -> None:
        """A 32-step tool loop: every request keeps its pairs and thinking and fits the budget."""
        budget = 2_500
        compactor = TokenBudgetCompactor(
            max_tokens=budget, keep_recent_tokens=800, boundary="model_step"
        )
        backend = ScriptedBackend(lambda messages, options: "Read files under src/.")
        processor = history_processor(compactor, backend=backend, mode=mode)  # type: ignore[call-overload]
        seen, output = run_agent(processor)
        assert "Read them all." == output
        assert STEPS + 1 == len(seen)
        counter = default_counter()
        for request in seen:
            assert pairs_whole(request)
            assert thinking_kept(request)
            assert sum(counter.count(c) for c, _ in _components(request)) <= budget

    def test_kept_messages_are_the_same_objects(self) -> None:
        """What the compactor kept comes back as pydantic-ai's own objects."""
        history: list[ModelMessage] = []
        for i in range(6):
            history.append(ModelRequest(parts=[UserPromptPart(f"question {i}")]))
            history.append(ModelResponse(parts=[TextPart(f"answer {i}")]))
        out = history_processor(WindowCompactor(size=4), mode="sync")(None, history)
        assert history[-4:] == out
        assert all(a is b for a, b in zip(history[-4:], out, strict=True))

    def test_checkpoint_is_replayed_and_folded(self) -> None:
        """A summary comes back as a user prompt pydantic-ai replays, read as a checkpoint."""
        history: list[ModelMessage] = []
        for i in range(8):
            history.append(ModelRequest(parts=[UserPromptPart(f"question {i} " + "word " * 30)]))
            history.append(ModelResponse(parts=[TextPart(f"answer {i}")]))
        backend = ScriptedBackend(lambda messages, options: "Eight questions about words.")
        compact = history_processor(LLMSummarizeCompactor(keep_n=2), backend=backend, mode="sync")
        out = compact(None, history)
        first = out[0]
        assert isinstance(first, ModelRequest)
        assert "Eight questions about words." in first.parts[0].content[0].content  # type: ignore[union-attr]
        assert "Checkpoint" == type(_components(out)[0][0]).__name__

    def test_bad_arguments_are_refused(self) -> None:
        """A compactor without compact, or an unknown mode, is refused clearly."""
        with pytest.raises(InvalidArgumentError, match=r"has no compact\(\) method"):
            history_processor(object())  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="mode='later' must be"):
            history_processor(WindowCompactor(size=1), mode="later")  # type: ignore[call-overload]
