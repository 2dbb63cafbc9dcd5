"""OpenAI: summarize a long support conversation with the model, then carry on with a tool.

The bundled sample is a real 62-message airline support run (10,000 tokens,
1,250 of them the policy prompt). A ``TokenBudgetCompactor`` folds all but the
recent tool steps into one checkpoint written by the model, keeping the policy
and the customer's first message pinned. The agent then answers the
customer's next question from the compacted context with ``react``, calling a
reservation lookup tool. Three requests in all: the summary, the tool call,
the answer.

Run it against OpenAI (``MELLEA_CTX_MODEL`` picks the model, gpt-4o-mini by default):

    OPENAI_API_KEY=sk-... python examples/06_openai.py

``OPENAI_BASE_URL`` is honoured too (a proxy, Azure's v1 endpoint). Without
``OPENAI_API_KEY`` it runs offline on ``ExtractiveBackend`` and says so.
"""

from __future__ import annotations

import os
import sys
from importlib.resources import files

from mellea_ctx import (
    Backend,
    ChatContext,
    Checkpoint,
    ExtractiveBackend,
    MelleaCtxError,
    OpenAIBackend,
    TokenBudgetCompactor,
    load_conversation,
    pin_system_and_initial_user,
    react,
    tool,
)

SAMPLE = files("mellea_ctx") / "data" / "sample_conversation.json"
RESERVATIONS = {
    "JG7FMM": "Reservation JG7FMM is in the business cabin: HAT028 and HAT277 on 2024-05-21.",
}


@tool
def get_reservation_details(reservation_id: str) -> str:
    """Look up a flight reservation's cabin, flights and passengers by its reservation id.

    Args:
        reservation_id: The six-character reservation id, such as 8JX2WO.
    """
    return RESERVATIONS.get(reservation_id, f"Error: reservation {reservation_id} not found.")


def backend_from_environment() -> Backend:
    if not os.environ.get("OPENAI_API_KEY"):
        print("OPENAI_API_KEY is not set: running offline on ExtractiveBackend.")
        return ExtractiveBackend()
    model = os.environ.get("MELLEA_CTX_MODEL", "gpt-4o-mini")
    print(f"Using OpenAI's {model}.")
    return OpenAIBackend(model)  # reads OPENAI_API_KEY, and OPENAI_BASE_URL if set


def main() -> None:
    backend = backend_from_environment()
    ctx = ChatContext()
    for message in load_conversation(str(SAMPLE)):
        ctx = ctx.add(message)

    budget = TokenBudgetCompactor(
        max_tokens=6_000,
        target_tokens=4_000,
        boundary="model_step",
        pin_predicate=pin_system_and_initial_user,
        strict=True,  # a failed summary raises, rather than carrying on uncompacted
        model_options={"temperature": 0},
    )
    compacted = budget.compact(ctx, backend=backend)  # request 1: the summary
    print(f"compacted {len(ctx)} -> {len(compacted)} messages, ", end="")
    print(f"{ctx.token_count} -> {compacted.token_count} tokens")

    result = react(  # requests 2 and 3: the tool call, then the answer
        'The customer asks whether reservation "JG7FMM" is economy now. Check its cabin.',
        compacted,
        backend,
        tools=[get_reservation_details],
        loop_budget=4,
        model_options={"temperature": 0},
    )
    print(f"answer after {result.turns} turns: {result.answer}")

    assert any(isinstance(c, Checkpoint) for c in compacted)
    assert compacted.token_count < ctx.token_count
    assert compacted[0].content.startswith("# Airline Agent Policy")  # pinned
    assert result.stopped == "answer" and "business" in (result.answer or "")  # not downgraded


if __name__ == "__main__":
    try:
        main()
    except MelleaCtxError as exc:  # no reachable API, a refused key, a missing SDK
        first = str(exc).splitlines()[0] if str(exc) else ""
        sys.exit(f"06_openai.py: {type(exc).__name__}: {first}")
