"""A pydantic-ai agent whose message history our history processor compacts.

pydantic-ai calls the processor before every model request; it runs a
``TokenBudgetCompactor`` on the agent's messages, keeping tool calls with
their returns and each response's thinking with the calls it preceded. The
model is pydantic-ai's own ``FunctionModel`` playing a scripted agent, and the
summary comes from the offline ``ExtractiveBackend``: no key, no network.

Needs the ``pydantic-ai`` extra (``pip install '.[pydantic-ai]'`` in the clone). Run it:

    python examples/10_pydantic_ai_agent.py
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mellea_ctx import ExtractiveBackend, TokenBudgetCompactor
from mellea_ctx.integrations.pydantic_ai import history_processor

BUDGET = 2_500
TICKETS = [f"TICKET-{n}" for n in range(101, 131)]
requests: list[int] = []


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Look up one ticket per step, then answer."""
    step = len(requests)
    requests.append(len(messages))
    if step == len(TICKETS):
        return ModelResponse(parts=[TextPart("TICKET-117 is the only one still open.")])
    call = ToolCallPart("lookup", {"ticket": TICKETS[step]}, tool_call_id=f"call_{step}")
    return ModelResponse(
        parts=[
            ThinkingPart(
                f"Next: {TICKETS[step]}.", signature=f"sig{step}", provider_name="anthropic"
            ),
            call,
        ]
    )


def main() -> None:
    compact = history_processor(
        TokenBudgetCompactor(max_tokens=BUDGET, keep_recent_tokens=800, boundary="model_step"),
        backend=ExtractiveBackend(),
    )
    agent = Agent(FunctionModel(scripted_model), capabilities=[ProcessHistory(compact)])

    @agent.tool_plain
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        status = "open" if ticket == "TICKET-117" else "closed"
        return f"{ticket}: {status}. " + "History of status changes and comments. " * 30

    result = agent.run_sync("Which support ticket is still open?")
    print(result.output)
    print(f"{len(requests)} model requests, the longest with {max(requests)} messages")
    assert "TICKET-117" in result.output
    assert max(requests) < 2 * len(TICKETS)


if __name__ == "__main__":
    main()
