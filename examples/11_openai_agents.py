"""An OpenAI Agents SDK agent whose model input our filter and session compact.

The SDK reads a session's history once per run and grows the input through the
run's tool calls, so two adapters: ``input_filter`` compacts every model call
inside a run (``RunConfig(call_model_input_filter=...)``), and
``CompactingSession`` wraps a real ``SQLiteSession`` so a new run starts from
a compacted history while the file keeps every item. Both keep each
``function_call`` with its ``function_call_output`` and a step's reasoning
with its calls. The model is a scripted ``Model`` of our own and the summary
comes from the offline ``ExtractiveBackend``: no key, no network.

Needs the ``openai-agents`` extra (``pip install '.[openai-agents]'`` in the clone). Run it:

    python examples/11_openai_agents.py
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

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

from mellea_ctx import ExtractiveBackend, TokenBudgetCompactor
from mellea_ctx.integrations.openai_agents import CompactingSession, input_filter

BUDGET = 2_500
TICKETS = [f"TICKET-{n}" for n in range(101, 131)]


class ScriptedModel(Model):
    """Look up one ticket per step, then answer; remember how long each input was."""

    def __init__(self) -> None:
        self.step = 0
        self.inputs: list[int] = []

    async def get_response(
        self, system_instructions: str | None, input: str | list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(1 if isinstance(input, str) else len(input))
        step, self.step = self.step % (len(TICKETS) + 1), self.step + 1
        if step == len(TICKETS):
            text = ResponseOutputText(
                type="output_text", text="TICKET-117 is the only one open.", annotations=[]
            )
            answer = ResponseOutputMessage(
                id=f"msg_{self.step}", type="message", role="assistant", status="completed",
                content=[text],
            )  # fmt: skip
            return ModelResponse(output=[answer], usage=Usage(), response_id=None)
        thought = ResponseReasoningItem(id=f"rs_{self.step}", type="reasoning", summary=[])
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{self.step}",
            name="lookup",
            arguments=f'{{"ticket": "{TICKETS[step]}"}}',
        )
        return ModelResponse(output=[thought, call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example does not stream")


@function_tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    status = "open" if ticket == "TICKET-117" else "closed"
    return f"{ticket}: {status}. " + "History of status changes and comments. " * 30


async def main() -> None:
    set_tracing_disabled(True)
    compactor = TokenBudgetCompactor(
        max_tokens=BUDGET, keep_recent_tokens=800, boundary="model_step"
    )
    backend = ExtractiveBackend()
    model = ScriptedModel()
    agent = Agent(name="support", instructions="Find the open ticket.", model=model, tools=[lookup])
    config = RunConfig(call_model_input_filter=input_filter(compactor, backend=backend))
    with tempfile.TemporaryDirectory() as tmp:
        stored = SQLiteSession("customer-7", str(Path(tmp) / "chats.db"))
        session = CompactingSession(stored, compactor, backend=backend)
        for question in ("Which support ticket is still open?", "Check again, please."):
            result = await Runner.run(
                agent, question, session=session, run_config=config, max_turns=40
            )
            print(result.final_output)
            assert "TICKET-117" in result.final_output
        kept = len(await stored.get_items())
        history = len(await session.get_items())
    print(f"{len(model.inputs)} model calls, the longest input {max(model.inputs)} items")
    print(f"the SQLite file keeps {kept} items; the next run would start from {history}")
    assert max(model.inputs) < kept // 2
    assert history < kept


if __name__ == "__main__":
    asyncio.run(main())
