"""Tool search inside react: the catalog in the system prompt, Anthropic's defer_loading path."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mellea_ctx import (
    AnthropicBackend,
    ChatContext,
    Component,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    ToolCall,
    ToolSearch,
    react,
    tool,
)

from .anthropic_server import AnthropicWireServer


@tool(deferred=True)
def billing_lookup(invoice_id: str) -> str:
    """Look up an invoice and its payment status. Use it only for invoice ids like INV-7."""
    return f"{invoice_id}: paid"


@tool(deferred=True)
def warehouse_stock(sku: str) -> str:
    """Count the units of a product in stock."""
    return f"{sku}: 42 units"


@tool
def get_time() -> str:
    """Return the current time."""
    return "09:30"


class TestCatalogInTheSystemPrompt:
    def test_react_puts_the_catalog_after_the_system_messages(self) -> None:
        search = ToolSearch([billing_lookup, warehouse_stock], catalog="system")
        seen: list[list[Component]] = []

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> str:
            seen.append(list(messages))
            return "done"

        ctx = ChatContext().add(Message("system", "You answer billing questions."))
        result = react("Was INV-7 paid?", ctx, ScriptedBackend(model), tool_search=search)
        roles = [m.role for m in seen[0]]
        assert roles[:2] == ["system", "system"]
        assert seen[0][1].content == search.catalog_text()
        assert "- billing_lookup: Look up an invoice" in seen[0][1].content
        # Request-only: neither the context nor the result holds it.
        assert search.catalog_text() not in [c.content for c in result.ctx]

    def test_description_placement_adds_no_system_message(self) -> None:
        search = ToolSearch([billing_lookup, warehouse_stock])
        seen: list[list[str]] = []

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> str:
            seen.append([m.role for m in messages])
            return "done"

        react("Was INV-7 paid?", ChatContext(), ScriptedBackend(model), tool_search=search)
        assert seen == [["user"]]

    def test_catalog_guidelines(self) -> None:
        plain = ToolSearch([billing_lookup, warehouse_stock], catalog="system")
        guided = ToolSearch(
            [billing_lookup, warehouse_stock], catalog="system", catalog_guidelines=True
        )
        assert "INV-7" not in plain.catalog_text()
        lines = guided.catalog_text().splitlines()
        at = lines.index("- billing_lookup: Look up an invoice and its payment status.")
        assert lines[at + 1] == "  Use it only for invoice ids like INV-7."
        assert lines[at + 2] == "- warehouse_stock: Count the units of a product in stock."


class TestAnthropicDeferLoading:
    def test_react_declares_deferred_tools_and_answers_with_references(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        search = ToolSearch([get_time, billing_lookup, warehouse_stock])
        anthropic_server.reply(tool_calls=[("toolu_1", "tool_search", '{"query": "invoice"}')])
        anthropic_server.reply(
            tool_calls=[("toolu_2", "billing_lookup", '{"invoice_id": "INV-7"}')]
        )
        anthropic_server.reply("INV-7 is paid.")
        backend = AnthropicBackend("claude-x", base_url=anthropic_server.base_url, api_key="test")
        result = react("Was INV-7 paid?", ChatContext(), backend, tool_search=search)
        assert result.answer == "INV-7 is paid."
        bodies = [request.json for request in anthropic_server.requests]
        assert len(bodies) == 3
        declared = [
            [(t["name"], t.get("defer_loading", False)) for t in b["tools"]] for b in bodies
        ]
        expected = [
            ("get_time", False),
            ("tool_search", False),
            ("billing_lookup", True),
            ("warehouse_stock", True),
        ]
        assert declared == [expected] * 3  # the same list every request: the cache holds
        results = [
            block
            for message in bodies[1]["messages"]
            for block in message["content"]
            if isinstance(message["content"], list) and block["type"] == "tool_result"
        ]
        assert results[0]["content"] == [{"type": "tool_reference", "tool_name": "billing_lookup"}]
        last = bodies[2]["messages"][-1]["content"][-1]
        assert last["type"] == "tool_result" and "INV-7: paid" in json.dumps(last["content"])

    def test_other_backends_declare_a_tool_after_its_search(self) -> None:
        search = ToolSearch([get_time, billing_lookup, warehouse_stock])
        names: list[list[str]] = []
        outputs: list[Any] = [
            ModelOutputThunk(
                None, tool_calls=[ToolCall("c1", "tool_search", '{"query": "invoice"}')]
            ),
            "INV-7 is paid.",
        ]

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
            names.append([t.name for t in options.get("tools", [])])
            return outputs.pop(0)

        react("Was INV-7 paid?", ChatContext(), ScriptedBackend(model), tool_search=search)
        assert names == [["get_time", "tool_search"], ["get_time", "tool_search", "billing_lookup"]]
