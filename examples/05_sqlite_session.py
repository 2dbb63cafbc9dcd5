"""An agent with tools, inline compaction and a durable SQLite session, all offline.

Three requests from one user reach a support agent, each in a fresh context
rebuilt from the session (the system prompt is passed each time, never
stored). The agent looks up stock and orders with tools; a token budget rides
inside the context and folds older turns into a checkpoint as the session
grows. The backend is the offline ``ExtractiveBackend``: it calls the tools
whose descriptions match the question and answers from their results, so this
runs with no key and no network. Swap in ``OpenAIBackend(...)`` for a model.

Run it: ``python examples/react_sqlite_session.py``
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


def main() -> None:
    questions = [
        'How many units of SKU "AB-1234" are in stock at the warehouse?',
        'What is the shipping status of my order "ORD-77"?',
        'Is SKU "EF-9012" in stock at the warehouse?',
    ]
    with (
        tempfile.TemporaryDirectory() as tmp,
        SQLiteStore(os.path.join(tmp, "support.db")) as store,
    ):
        memory = SessionMemory(store)
        for question in questions:
            session = memory.open("customer-42")  # a new request: read the session
            budget = TokenBudgetCompactor(
                max_tokens=280,
                target_tokens=200,
                keep_recent_tokens=80,
                boundary="model_step",
                pin_predicate=pin_react_initiator,
                default_backend=ExtractiveBackend(),
            )
            ctx = session.context(system="You are ACME's support agent.", compactor=budget)
            result = react(
                question,
                ctx,
                ExtractiveBackend(),
                tools=[warehouse_stock, order_status],
                session=session,
            )
            print(f"Q: {question}\nA: {result.answer}\n")
        stored = memory.messages("customer-42")
        checkpoints = [c for c in stored if isinstance(c, Checkpoint)]
        print(
            f"stored: {len(stored)} components, {len(checkpoints)} checkpoint(s), no system prompt"
        )
        assert stored and all(c.role != "system" for c in stored)
        assert checkpoints, "the budget should have folded older turns into a checkpoint"
        assert "42 units" in (result.answer or "") or "7 units" in (result.answer or "")


if __name__ == "__main__":
    main()
