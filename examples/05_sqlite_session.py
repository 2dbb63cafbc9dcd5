"""A durable SQLite session: an agent's dialogue survives a restart, and resumes.

A customer's requests reach a support agent one at a time. Each request opens
the session, rebuilds a fresh context from it (the system prompt is passed
every time, never stored), runs ``react`` with tools and a token budget riding
inside the context, and stores each finished step atomically. Then the
worker "restarts": the store is closed and a new ``SQLiteStore`` opens the same
file, as a new process would. The session comes back at the same version with
the same dialogue, checkpoint included, and the next request carries on from it.

The backend is the offline ``ExtractiveBackend``: it calls the tools whose
descriptions match the question and answers from their results. For a real
model, replace ``AGENT`` with ``OpenAIBackend("gpt-4o-mini")`` (reads
OPENAI_API_KEY) or ``AnthropicBackend("claude-sonnet-4-6")``. Run it:

    python examples/05_sqlite_session.py
"""

from __future__ import annotations

import os
import tempfile

from mellea_ctx import (
    Checkpoint,
    ExtractiveBackend,
    SessionMemory,
    SQLiteStore,
    TokenBudgetCompactor,
    pin_react_initiator,
    react,
    tool,
)

AGENT = ExtractiveBackend()
STOCK = {"AB-1234": 42, "CD-5678": 0, "EF-9012": 7}


@tool
def warehouse_stock(sku: str) -> str:
    """Look up how many units of a product SKU are in stock at the warehouse.

    Args:
        sku: The product SKU, such as AB-1234.
    """
    units = STOCK.get(sku)
    if units is None:
        return f"No product with SKU {sku}."
    return f"SKU {sku}: {units} units in stock at the Leeds warehouse; restocked every Friday."


@tool
def order_status(order: str) -> str:
    """Report the shipping status of a customer order.

    Args:
        order: The order id, such as ORD-77.
    """
    return f"Order {order} shipped on Monday with tracking number 1Z999AA10123456784."


def handle(memory: SessionMemory, session_id: str, question: str) -> str:
    """One request: read the session, run the agent, store each finished step."""
    session = memory.open(session_id)
    budget = TokenBudgetCompactor(
        max_tokens=280,
        target_tokens=200,
        keep_recent_tokens=80,
        summary_tokens=120,  # the whole checkpoint (summary and ledger) fits in this
        boundary="model_step",
        pin_predicate=pin_react_initiator,
        default_backend=AGENT,
    )
    ctx = session.context(system="You are ACME's support agent.", compactor=budget)
    result = react(question, ctx, AGENT, tools=[warehouse_stock, order_status], session=session)
    print(f"Q: {question}\nA: {result.answer}\n")
    return result.answer or ""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "support.db")

        with SQLiteStore(path) as store:  # the first worker process
            memory = SessionMemory(store)
            handle(memory, "customer-42", 'How many units of SKU "AB-1234" are in stock?')
            handle(memory, "customer-42", 'What is the shipping status of my order "ORD-77"?')
            before = memory.open("customer-42")
        print(f"closed the store at version {before.version}: the worker restarts\n")

        with SQLiteStore(path) as store:  # a new worker, the same file
            memory = SessionMemory(store)
            resumed = memory.open("customer-42")
            print(f"reopened at version {resumed.version}, {len(resumed.dialogue)} components")
            assert resumed.version == before.version and resumed.dialogue == before.dialogue

            answer = handle(memory, "customer-42", 'Is SKU "EF-9012" in stock at the warehouse?')
            stored = memory.messages("customer-42")

    checkpoints = [c for c in stored if isinstance(c, Checkpoint)]
    print(f"stored: {len(stored)} components, {len(checkpoints)} checkpoint(s), no system prompt")
    assert all(c.role != "system" for c in stored)  # instructions are never stored
    assert checkpoints, "the budget should have folded older turns into a checkpoint"
    assert any("ORD-77" in c.content for c in stored)  # the first worker's turns carried on
    assert "7 units" in answer


if __name__ == "__main__":
    main()
