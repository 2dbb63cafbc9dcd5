"""Tool search: BM25 ranking over deferred tools, per-session delivery, request shaping."""

from __future__ import annotations

import asyncio
import builtins
import json
import string
from collections.abc import Iterable
from typing import Any, get_args

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    SEARCH_TOOL_NAME,
    DeliveredTools,
    InMemoryMetaStore,
    InvalidArgumentError,
    Message,
    MetaStore,
    ModelOutputThunk,
    Tool,
    ToolArgumentError,
    ToolCall,
    ToolHit,
    ToolMessage,
    ToolSearch,
    from_anthropic,
    to_anthropic,
    tool,
)
from mellea_ctx._agent.bm25 import _terms
from mellea_ctx._agent.delivered import DELIVERED_KEY


def make(name: str, description: str, *, deferred: bool = True, **arguments: str) -> Tool:
    """Return a tool whose string arguments carry the given descriptions."""
    return build(name, description, arguments, deferred=deferred)


def build(name: str, description: str, arguments: dict[str, str], *, deferred: bool = True) -> Tool:
    schema = {
        "type": "object",
        "properties": {
            arg: {"type": "string", "description": text} for arg, text in arguments.items()
        },
        "required": sorted(arguments),
    }
    return Tool(name, description, json.dumps(schema, sort_keys=True), lambda **_: name, deferred)


# A realistic catalog: 30 deferred tools across an online shop's back office, plus 2 hot tools.
CATALOG = [
    make("warehouse_stock", "Count the units of a product in stock at one warehouse.",
         sku="The product's stock keeping unit.", warehouse="Warehouse code, such as BER1."),
    make("warehouse_transfer", "Move units of a product from one warehouse to another.",
         sku="The product's SKU.", source="Warehouse to take from.", target="Warehouse to fill."),
    make("reorder_product", "Place a purchase order with the supplier to restock a product.",
         sku="The product's SKU.", quantity="How many units to order."),
    make("supplier_lookup", "Find a supplier's contact details and lead times.",
         supplier_id="The supplier's id."),
    make("billing_lookup", "Look up an invoice and its payment status.",
         invoice_id="The invoice number, such as INV-2024-001."),
    make("billing_refund", "Refund a paid invoice to the customer's card, fully or in part.",
         invoice_id="The invoice to refund.", amount="Amount in cents; all if left out."),
    make("billing_send_reminder", "Email a payment reminder for an overdue invoice.",
         invoice_id="The overdue invoice."),
    make("customer_profile", "Show a customer's profile: name, email, addresses and segment.",
         customer_id="The customer's id."),
    make("customer_update_email", "Change the email address on a customer's account.",
         customer_id="The customer's id.", email="The new address."),
    make("order_status", "Report where an order is: paid, packed, shipped or delivered.",
         order_id="The order number."),
    make("order_cancel", "Cancel an order that has not shipped yet.",
         order_id="The order number.", reason="Why, for the audit log."),
    make("shipment_track", "Track a parcel with the carrier and give its latest scan.",
         tracking_number="The carrier's tracking number."),
    make("shipment_label", "Print a shipping label for a packed order.",
         order_id="The order number.", carrier="DHL, UPS or GLS."),
    make("read_file", "Read a text file from the shared drive.",
         path="Path of the file, relative to the drive root."),
    make("write_file", "Write text to a file on the shared drive, replacing it.",
         path="Path of the file.", content="The text to write."),
    make("list_directory", "List the files and folders in a directory of the shared drive.",
         path="The directory."),
    make("delete_file", "Delete a file from the shared drive.", path="Path of the file."),
    make("search_files", "Search the shared drive for files whose text contains a phrase.",
         phrase="What to look for."),
    make("send_email", "Send an email to one or more recipients.",
         to="Comma-separated addresses.", subject="Subject line.", body="Plain text body."),
    make("calendar_create_event", "Create a calendar event and invite people to it.",
         title="Event title.", start="ISO start time.", attendees="Email addresses."),
    make("calendar_free_slots", "Find free time slots shared by several people's calendars.",
         attendees="Email addresses.", day="The day, ISO date."),
    make("translate_text", "Translate text between languages.",
         text="The text.", target_language="Language code, such as de."),
    make("currency_convert", "Convert an amount between currencies at today's exchange rate.",
         amount="The amount.", source_currency="From, such as EUR.", target_currency="To."),
    make("tax_rate", "Give the sales tax (VAT) rate for a country and product category.",
         country="ISO country code.", category="Product category."),
    make("sales_report", "Summarize revenue and units sold per product for a date range.",
         start="First day.", end="Last day."),
    make("forecast_demand", "Forecast demand for a product over the coming weeks.",
         sku="The product's SKU.", weeks="How many weeks ahead."),
    make("price_update", "Set a product's price in the online shop.",
         sku="The product's SKU.", price="New price in cents."),
    make("review_moderate", "Approve or reject a customer's product review.",
         review_id="The review.", decision="approve or reject."),
    make("ticket_create", "Open a support ticket for a customer's problem.",
         customer_id="The customer's id.", summary="What went wrong."),
    make("ticket_close", "Close a support ticket with a resolution note.",
         ticket_id="The ticket.", note="How it was solved."),
]  # fmt: skip
HOT = [
    make("get_time", "Tell the current date and time.", deferred=False),
    make("ask_user", "Ask the user a question and wait for the answer.", deferred=False,
         question="The question."),
]  # fmt: skip


@pytest.fixture(scope="module")
def search() -> ToolSearch:
    return ToolSearch([*HOT, *CATALOG])


def names(hits: Iterable[ToolHit]) -> list[str]:
    return [hit.tool.name for hit in hits]


def call(found: Tool, **arguments: Any) -> str:
    return asyncio.run(found.ainvoke(json.dumps(arguments)))


class TestRanking:
    @pytest.mark.parametrize(
        ("query", "best"),
        [
            ("how many units are in stock", "warehouse_stock"),
            ("is invoice INV-7 paid", "billing_lookup"),
            ("refund the customer", "billing_refund"),
            ("read the text of notes.txt", "read_file"),
            ("track my parcel", "shipment_track"),
            ("VAT", "tax_rate"),
            ("exchange rate dollars to euros", "currency_convert"),
            ("meeting free slots", "calendar_free_slots"),
            ("restock from the supplier", "reorder_product"),
        ],
    )
    def test_the_right_tool_comes_first(self, search: ToolSearch, query: str, best: str) -> None:
        """Natural queries rank the tool a person would pick first."""
        assert best == names(search.search(query))[0]

    def test_exact_name_wins(self, search: ToolSearch) -> None:
        """A tool's exact name ranks it first, even among tools sharing its words."""
        assert "billing_send_reminder" == names(search.search("billing_send_reminder"))[0]
        assert "warehouse_transfer" == names(search.search("warehouseTransfer"))[0]

    def test_argument_descriptions_are_searched(self, search: ToolSearch) -> None:
        """A word found only in an argument's description still finds its tool."""
        assert ["shipment_label"] == names(search.search("GLS"))

    def test_plurals_match_singulars(self, search: ToolSearch) -> None:
        """'invoices' finds what 'invoice' finds."""
        assert names(search.search("invoice")) == names(search.search("invoices"))

    def test_no_match_finds_nothing(self, search: ToolSearch) -> None:
        """A query sharing no term with any tool, or only stopwords, returns nothing."""
        assert [] == search.search("quantum chromodynamics")
        assert [] == search.search("the of and")
        assert [] == search.search("")

    def test_non_deferred_tools_are_not_searched(self, search: ToolSearch) -> None:
        """Hot tools are always offered, so a search never returns them."""
        assert "get_time" not in names(search.search("current date and time"))

    def test_repeated_terms_count_once(self, search: ToolSearch) -> None:
        """Repeating a query word does not change any score."""
        assert search.scores("stock") == search.scores("stock stock stock")


class TestSearchOptions:
    def test_limit(self, search: ToolSearch) -> None:
        """At most ``limit`` hits, the best ones."""
        everything = search.search("file")
        assert len(everything) > 2
        assert everything[:2] == search.search("file", limit=2)

    def test_default_limit(self) -> None:
        """The constructor's limit applies when a search names none."""
        assert 3 == len(ToolSearch(CATALOG, limit=3).search("file product invoice"))

    def test_min_score_is_strict(self, search: ToolSearch) -> None:
        """A hit scoring exactly min_score is left out; anything above is kept."""
        hits = search.search("file")
        cut = hits[1].score
        kept = search.search("file", min_score=cut)
        assert all(hit.score > cut for hit in kept)
        assert names(kept) == [hit.tool.name for hit in hits if hit.score > cut]

    def test_negative_min_score_lists_everything(self, search: ToolSearch) -> None:
        """Every tool scores at least 0, so a negative floor ranks the whole catalog."""
        assert len(CATALOG) == len(search.search("file", min_score=-1.0, limit=100))

    def test_exclude_before_limit(self, search: ToolSearch) -> None:
        """Excluded tools never come back, and the limit counts only the rest."""
        top = names(search.search("file", limit=3))
        rest = search.search("file", limit=2, exclude=top[:1])
        assert top[0] not in names(rest)
        assert top[1:3] == names(rest)

    def test_ties_broken_by_name(self) -> None:
        """Tools with identical text score alike and come back in name order."""
        twins = [make(name, "Frobnicate the widget.") for name in ("zeta", "alpha", "mid")]
        hits = ToolSearch(twins).search("frobnicate")
        assert ["alpha", "mid", "zeta"] == names(hits)
        assert len({hit.score for hit in hits}) == 1

    def test_one_tool_catalog(self) -> None:
        """A catalog of a single deferred tool still scores its matches above 0."""
        hits = ToolSearch([make("only", "Frobnicate the widget.")]).search("widget")
        assert ["only"] == names(hits)
        assert hits[0].score > 0

    def test_nothing_deferred(self) -> None:
        """With nothing to search, every search is empty and no index is built."""
        search = ToolSearch(HOT)
        assert [] == search.search("time")
        assert {} == search.scores("time")


class TestCatalog:
    def test_in_the_search_description(self, search: ToolSearch) -> None:
        """By default the search tool's description lists every deferred tool with a snippet."""
        description = search.search_tool(search.delivered("s")).description
        for item in CATALOG:
            assert f"- {item.name}: " in description
        assert "get_time" not in description
        assert "" == search.catalog_text()

    def test_lists_delivered_tools_too(self) -> None:
        """Delivery never changes the listing, so the request prefix stays cacheable."""
        search = ToolSearch(CATALOG)
        delivered = search.delivered("s")
        before = search.openai_tools(delivered)[0]
        call(search.search_tool(delivered), query="invoice")
        assert delivered.names
        assert before == search.openai_tools(delivered)[0]

    def test_in_the_system_prompt(self) -> None:
        """catalog="system" keeps the description short and lists the tools in catalog_text."""
        search = ToolSearch(CATALOG, catalog="system")
        assert "warehouse_stock" not in search.search_tool(search.delivered("s")).description
        text = search.catalog_text()
        assert SEARCH_TOOL_NAME in text.splitlines()[0]
        assert all(f"- {item.name}: " in text for item in CATALOG)

    def test_nowhere(self) -> None:
        """catalog="none" lists nothing anywhere."""
        search = ToolSearch(CATALOG, catalog="none")
        assert "warehouse_stock" not in search.search_tool(search.delivered("s")).description
        assert "" == search.catalog_text()

    def test_names_only(self) -> None:
        """Without snippets each line is just the name, sorted."""
        search = ToolSearch(CATALOG, catalog="system", catalog_snippets=False)
        lines = search.catalog_text().splitlines()[1:]
        assert sorted(f"- {item.name}" for item in CATALOG) == lines

    def test_snippet_is_the_first_sentence_capped(self) -> None:
        """A snippet is the first sentence, cut at 100 characters with an ellipsis."""
        long = make("long", "Does " + "very " * 40 + "much. Second sentence.")
        short = make("short", "Does a little. Then more.")
        text = ToolSearch([long, short], catalog="system").catalog_text()
        assert "- short: Does a little." in text
        line = next(line for line in text.splitlines() if line.startswith("- long: "))
        assert line.endswith("…")
        assert len(line) == len("- long: ") + 100
        assert "Second" not in text


class TestSearchTool:
    def test_result_lists_definitions_and_records_them(self) -> None:
        """The result shows name, description and JSON parameters, and is recorded."""
        search = ToolSearch(CATALOG)
        delivered = search.delivered("s")
        text = call(search.search_tool(delivered), query="billing_lookup", limit=1)
        lookup = next(item for item in CATALOG if item.name == "billing_lookup")
        assert f"billing_lookup: {lookup.description}" in text
        assert f"Parameters: {lookup.schema_json}" in text
        assert json.loads(lookup.schema_json) == lookup.parameters
        assert ("billing_lookup",) == delivered.names

    def test_no_definition_twice(self) -> None:
        """A second search does not resend a definition; it says the tool is loaded."""
        search = ToolSearch(CATALOG)
        delivered = search.delivered("s")
        finder = search.search_tool(delivered)
        call(finder, query="billing_lookup", limit=1)
        again = call(finder, query="billing_lookup", limit=1)
        assert "billing_lookup: Look up" not in again
        assert "Already loaded, call directly: billing_lookup." in again
        assert 1 == delivered.names.count("billing_lookup")

    def test_nothing_new(self) -> None:
        """A search that finds nothing says so, quoting the query."""
        search = ToolSearch(CATALOG)
        text = call(search.search_tool(search.delivered("s")), query="quantum")
        assert "No new tool matches 'quantum'." == text

    def test_limit_is_capped(self) -> None:
        """The model may ask for fewer results than the configured limit, never more."""
        search = ToolSearch(CATALOG, limit=2)
        delivered = search.delivered("s")
        call(search.search_tool(delivered), query="file product invoice order", limit=50)
        assert 2 == len(delivered.names)
        call(search.search_tool(delivered), query="file product invoice order", limit=1)
        assert 3 == len(delivered.names)

    def test_score_overrides_min_score(self) -> None:
        """``score`` raises the floor for one call."""
        search = ToolSearch(CATALOG)
        delivered = search.delivered("s")
        best = search.search("file")[0]
        call(search.search_tool(delivered), query="file", score=best.score - 1e-9)
        assert (best.tool.name,) == delivered.names

    def test_references_for_anthropic(self) -> None:
        """With references=True the result is tool_reference blocks, sent as blocks."""
        search = ToolSearch(CATALOG)
        delivered = search.delivered("s")
        text = call(search.search_tool(delivered, references=True), query="invoice", limit=2)
        expected = [{"type": "tool_reference", "tool_name": name} for name in delivered.names]
        assert expected == json.loads(text)
        _, messages = to_anthropic(
            [
                Message("user", "Was it paid?"),
                ModelOutputThunk(None, tool_calls=[ToolCall("t1", SEARCH_TOOL_NAME, "{}")]),
                ToolMessage(text, tool_call_id="t1"),
            ]
        )
        assert expected == messages[2]["content"][0]["content"]
        assert text == from_anthropic(messages)[2].content

    def test_ordinary_json_results_stay_text(self) -> None:
        """Only an exact list of tool_reference blocks is sent as blocks."""
        for content in ('[{"type": "tool_reference", "tool_name": 3}]', "[1, 2]", "[{"):
            _, messages = to_anthropic(
                [
                    ModelOutputThunk(None, tool_calls=[ToolCall("t1", "f", "{}")]),
                    ToolMessage(content, tool_call_id="t1"),
                ]
            )
            assert content == messages[-1]["content"][0]["content"]

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            ({}, "missing query"),
            ({"query": 3}, "query=3 must be a string"),
            ({"query": "x", "limit": 0}, "limit=0 must be an integer >= 1"),
            ({"query": "x", "limit": True}, "limit=True must be an integer >= 1"),
            ({"query": "x", "limit": "5"}, "limit='5' must be an integer >= 1"),
            ({"query": "x", "score": "high"}, "score='high' must be a finite number"),
            ({"query": "x", "score": None, "extra": 1}, "unknown extra"),
        ],
    )
    def test_bad_arguments(self, arguments: dict[str, Any], message: str) -> None:
        """The model's bad arguments raise ToolArgumentError naming the argument."""
        search = ToolSearch(CATALOG)
        with pytest.raises(ToolArgumentError, match=message):
            call(search.search_tool(search.delivered("s")), **arguments)

    def test_schema(self, search: ToolSearch) -> None:
        """query is required; limit and score are optional, with their defaults described."""
        schema = search.search_tool(search.delivered("s")).parameters
        assert ["query"] == schema["required"]
        assert {"query", "limit", "score"} == set(schema["properties"])
        assert "default and maximum 20" in schema["properties"]["limit"]["description"]

    def test_same_definition_for_every_session(self, search: ToolSearch) -> None:
        """The search tool's definition does not depend on the session."""
        first = search.search_tool(search.delivered("a")).to_openai()
        assert first == search.search_tool(search.delivered("b")).to_openai()


class TestDeliveredTools:
    def test_record_in_order_without_repeats(self) -> None:
        """Names keep their first delivery's place."""
        delivered = DeliveredTools("s")
        delivered.record(["b", "a"])
        delivered.record(["a", "c"])
        assert ("b", "a", "c") == delivered.names
        assert "c" in delivered and "d" not in delivered

    def test_sessions_are_separate(self) -> None:
        """One store holds many sessions' records apart."""
        store = InMemoryMetaStore()
        DeliveredTools("one", store).record(["a"])
        assert () == DeliveredTools("two", store).names
        assert ("a",) == DeliveredTools("one", store).names

    def test_clear(self) -> None:
        """clear() forgets the session's deliveries and removes the key."""
        store = InMemoryMetaStore()
        delivered = DeliveredTools("s", store)
        delivered.record(["a"])
        delivered.clear()
        assert () == delivered.names
        assert store.get("s", DELIVERED_KEY) is None

    @pytest.mark.parametrize("raw", ["not json", '{"a": 1}', "[1, null]"])
    def test_unreadable_record_reads_empty(self, raw: str) -> None:
        """A corrupt record resends definitions rather than failing the turn."""
        store = InMemoryMetaStore()
        store.set("s", DELIVERED_KEY, raw)
        assert () == DeliveredTools("s", store).names

    def test_session_store_adapter(self) -> None:
        """A store with set_meta / load().meta adapts to MetaStore in five lines."""

        @attrs.define
        class Session:
            meta: dict[str, str] = attrs.Factory(dict)

        class SessionStore:  # the shape of the session store on the way
            def __init__(self) -> None:
                self.sessions: dict[str, Session] = {}

            def load(self, session_id: str) -> Session:
                return self.sessions.setdefault(session_id, Session())

            def set_meta(self, session_id: str, key: str, value: str | None) -> None:
                meta = self.load(session_id).meta
                meta.pop(key, None) if value is None else meta.__setitem__(key, value)

        class SessionMeta:
            def __init__(self, store: SessionStore) -> None:
                self.store = store

            def get(self, session_id: str, key: str) -> str | None:
                return self.store.load(session_id).meta.get(key)

            def set(self, session_id: str, key: str, value: str | None) -> None:
                self.store.set_meta(session_id, key, value)

        sessions = SessionStore()
        adapter = SessionMeta(sessions)
        assert isinstance(adapter, MetaStore)
        search = ToolSearch(CATALOG, store=adapter)
        call(search.search_tool(search.delivered("s1")), query="look up invoice", limit=1)
        assert json.loads(sessions.load("s1").meta[DELIVERED_KEY]) == ["billing_lookup"]

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (("",), "session_id='' must be a non-empty string"),
            ((7,), "session_id=7 must be a non-empty string"),
            (("s", {}), r"store=\{\} has no get\(session_id, key\)"),
        ],
    )
    def test_bad_arguments(self, arguments: tuple[Any, ...], message: str) -> None:
        """A bad session id or store is refused with the value and the fix."""
        with pytest.raises(InvalidArgumentError, match=message):
            DeliveredTools(*arguments)


class TestResetAfterCompaction:
    def test_clears_by_default(self) -> None:
        """After a compaction the model may load the same definitions again."""
        search = ToolSearch(CATALOG)
        delivered = search.delivered("s")
        finder = search.search_tool(delivered)
        call(finder, query="look up invoice", limit=1)
        assert search.reset_after_compaction(delivered)
        assert () == delivered.names
        assert "billing_lookup:" in call(finder, query="look up invoice", limit=1)

    def test_kept_when_asked(self) -> None:
        """resend_after_compaction=False keeps suppressing delivered definitions."""
        search = ToolSearch(CATALOG, resend_after_compaction=False)
        delivered = search.delivered("s")
        call(search.search_tool(delivered), query="look up invoice", limit=1)
        assert not search.reset_after_compaction(delivered)
        assert ("billing_lookup",) == delivered.names


class TestRequests:
    def test_offered(self) -> None:
        """Hot tools, then tool_search, then delivered tools in delivery order."""
        search = ToolSearch([CATALOG[0], *HOT, *CATALOG[1:]])
        delivered = search.delivered("s")
        assert ["get_time", "ask_user", SEARCH_TOOL_NAME] == [
            t.name for t in search.offered(delivered)
        ]
        delivered.record(["read_file", "billing_lookup", "not_in_this_catalog"])
        offered = [t.name for t in search.offered(delivered)]
        assert ["get_time", "ask_user", SEARCH_TOOL_NAME, "read_file", "billing_lookup"] == offered

    def test_nothing_deferred_offers_no_search(self) -> None:
        """A catalog with nothing deferred is offered as given, without a search tool."""
        search = ToolSearch(HOT)
        assert HOT == search.offered(search.delivered("s"))
        assert [item.to_anthropic() for item in HOT] == search.anthropic_tools()

    def test_openai_tools(self) -> None:
        """Chat Completions gets function tools; a deferred one only once delivered."""
        search = ToolSearch([*HOT, *CATALOG])
        delivered = search.delivered("s")
        before = [t["function"]["name"] for t in search.openai_tools(delivered)]
        assert "read_file" not in before
        call(search.search_tool(delivered), query="read_file", limit=1)
        after = search.openai_tools(delivered)
        assert [*before, "read_file"] == [t["function"]["name"] for t in after]
        assert all(t["type"] == "function" for t in after)

    def test_anthropic_defer_loading(self) -> None:
        """Every deferred tool is declared with defer_loading; the rest without, every time."""
        search = ToolSearch([*HOT, *CATALOG])
        tools = search.anthropic_tools()
        assert ["get_time", "ask_user", SEARCH_TOOL_NAME] == [t["name"] for t in tools[:3]]
        assert all("defer_loading" not in t for t in tools[:3])
        assert [{**item.to_anthropic(), "defer_loading": True} for item in CATALOG] == tools[3:]
        delivered = search.delivered("s")
        call(search.search_tool(delivered, references=True), query="invoice")
        assert tools == search.anthropic_tools(delivered)

    def test_anthropic_without_defer_loading(self) -> None:
        """defer_loading=False shapes the request like Chat Completions."""
        search = ToolSearch([*HOT, *CATALOG])
        delivered = search.delivered("s")
        delivered.record(["read_file"])
        tools = search.anthropic_tools(delivered, defer_loading=False)
        assert [t.to_anthropic() for t in search.offered(delivered)] == tools
        with pytest.raises(InvalidArgumentError, match="needs delivered="):
            search.anthropic_tools(defer_loading=False)

    def test_the_sdk_accepts_the_shapes(self) -> None:
        """The installed anthropic SDK types both shapes: defer_loading and tool_reference."""
        types = pytest.importorskip("anthropic.types")
        result = pytest.importorskip("anthropic.types.tool_result_block_param")
        assert "defer_loading" in types.ToolParam.__annotations__
        assert types.ToolReferenceBlockParam in get_args(result.Content)


class TestArguments:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"tools": "read_file"}, "tools='read_file' must be an iterable of Tool"),
            ({"tools": [print]}, "is not a Tool; wrap functions with tool"),
            ({"tools": [CATALOG[0], CATALOG[0]]}, "more than one tool is named 'warehouse_stock'"),
            ({"tools": [make(SEARCH_TOOL_NAME, "x")]}, "the search tool's own name"),
            ({"limit": 0}, "limit=0 must be an int >= 1"),
            ({"limit": 2.5}, "limit=2.5 must be an int >= 1"),
            ({"min_score": float("nan")}, "min_score=nan must be a finite number"),
            ({"min_score": "0"}, "min_score='0' must be a finite number"),
            ({"k1": -0.1}, r"k1=-0.1 must be a number >= 0.0"),
            ({"b": 1.5}, r"b=1.5 must be a number in \[0.0, 1.0\]"),
            ({"catalog": "prompt"}, "catalog='prompt' must be one of 'description', 'system'"),
            ({"catalog_snippets": 1}, "catalog_snippets=1 must be True or False"),
            ({"resend_after_compaction": None}, "resend_after_compaction=None must be True"),
            ({"store": object()}, "has no get"),
        ],
    )
    def test_bad_settings(self, kwargs: dict[str, Any], message: str) -> None:
        """Bad settings are refused at construction with the value and the fix."""
        kwargs.setdefault("tools", CATALOG)
        with pytest.raises(InvalidArgumentError, match=message):
            ToolSearch(**kwargs)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"query": None}, "query=None must be a string"),
            ({"query": "x", "limit": 0}, "limit=0 must be an int >= 1"),
            ({"query": "x", "min_score": float("inf")}, "min_score=inf must be a finite number"),
            ({"query": "x", "exclude": "read_file"}, "exclude='read_file' must be an iterable"),
        ],
    )
    def test_bad_search(self, search: ToolSearch, kwargs: dict[str, Any], message: str) -> None:
        """Bad search arguments name themselves."""
        with pytest.raises(InvalidArgumentError, match=message):
            search.search(**kwargs)

    def test_search_tool_needs_a_record(self, search: ToolSearch) -> None:
        """search_tool refuses anything but a DeliveredTools."""
        with pytest.raises(InvalidArgumentError, match=r"search.delivered\(session_id\)"):
            search.search_tool("s1")  # type: ignore[arg-type]

    def test_missing_bm25s_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without bm25s installed the error says which extra to install."""
        real_import = builtins.__import__

        def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
            if name == "bm25s":
                raise ModuleNotFoundError(name)
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", refuse)
        with pytest.raises(InvalidArgumentError, match=r"pip install '\.\[search\]'"):
            ToolSearch(CATALOG)

    def test_real_functions(self) -> None:
        """Tools made with @tool(deferred=True) are searched by their docstrings."""

        @tool(deferred=True)
        def archive_mailbox(account: str) -> str:
            """Archive every message of a mailbox.

            Args:
                account: The mailbox's owner, as an email address.
            """
            return account

        search = ToolSearch([archive_mailbox, *CATALOG])
        assert "archive_mailbox" == names(search.search("archive old mail messages"))[0]


# -- properties -------------------------------------------------------------------------

# Words that are their own single term: no stopword, no plural 's', no camelCase.
WORD = st.text(alphabet=string.ascii_lowercase.replace("s", ""), min_size=3, max_size=8).filter(
    lambda word: _terms(word) == [word]
)
POOL = st.lists(WORD, min_size=4, max_size=12, unique=True)


@st.composite
def catalogs(draw: st.DrawFn) -> tuple[list[Tool], list[str]]:
    """A catalog of 1-12 deferred tools over a shared word pool, and the pool."""
    pool = draw(POOL)
    texts = st.lists(st.sampled_from(pool), min_size=1, max_size=12).map(" ".join)
    noise = st.text(max_size=30)
    tool_names = draw(st.lists(WORD, min_size=1, max_size=12, unique=True))
    tools = []
    for name in tool_names:
        description = draw(st.one_of(texts, st.tuples(texts, noise).map(" ".join)))
        arguments = draw(st.dictionaries(WORD, texts, max_size=2))
        tools.append(build(name, description, arguments))
    return tools, pool


def queries(pool: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(pool), WORD), min_size=0, max_size=4).map(" ".join)


class TestProperties:
    @settings(deadline=None)
    @given(data=st.data(), params=st.tuples(st.floats(0, 3), st.floats(0, 1)))
    def test_no_definition_twice_until_reset(
        self, data: st.DataObject, params: tuple[float, float]
    ) -> None:
        """Within a session no search returns a definition already delivered, until a reset."""
        tools, pool = data.draw(catalogs())
        search = ToolSearch(tools, k1=params[0], b=params[1], min_score=-1.0, limit=3)
        delivered = search.delivered("s")
        finder = search.search_tool(delivered, references=True)
        seen: list[str] = []
        for _ in range(data.draw(st.integers(1, 6))):
            if data.draw(st.booleans()) and data.draw(st.booleans()):
                search.reset_after_compaction(delivered)
                seen = []
            text = call(finder, query=data.draw(queries(pool)))
            got = [block["tool_name"] for block in json.loads(text)] if text.startswith("[") else []
            assert not set(got) & set(seen)
            seen += got
            assert tuple(seen) == delivered.names

    @settings(deadline=None)
    @given(data=st.data(), floor=st.floats(-1, 3), limit=st.integers(1, 15))
    def test_scores_above_floor_and_sorted(
        self, data: st.DataObject, floor: float, limit: int
    ) -> None:
        """Every hit scores strictly above min_score; hits are by score, then name."""
        tools, pool = data.draw(catalogs())
        search = ToolSearch(tools)
        exclude = data.draw(st.lists(st.sampled_from([t.name for t in tools])))
        hits = search.search(
            data.draw(queries(pool)), limit=limit, min_score=floor, exclude=exclude
        )
        assert len(hits) <= limit
        assert all(hit.score > floor for hit in hits)
        assert not {hit.tool.name for hit in hits} & set(exclude)
        assert hits == sorted(hits, key=lambda hit: (-hit.score, hit.tool.name))
        assert len({hit.tool.name for hit in hits}) == len(hits)

    @settings(deadline=None)
    @given(data=st.data(), params=st.tuples(st.floats(0, 3), st.floats(0, 1)))
    def test_adding_a_matching_term_never_lowers_a_score(
        self, data: st.DataObject, params: tuple[float, float]
    ) -> None:
        """A query with one more term scores every tool at least as high as before."""
        tools, pool = data.draw(catalogs())
        search = ToolSearch(tools, k1=params[0], b=params[1])
        query = data.draw(queries(pool))
        extra = data.draw(st.sampled_from(pool))
        before = search.scores(query)
        after = search.scores(f"{query} {extra}")
        assert all(after[name] >= before[name] for name in before)
        matching = [t.name for t in tools if extra in _terms(t.description)]
        for name in matching:
            if extra not in _terms(query):
                assert after[name] > before[name]

    @settings(deadline=None)
    @given(
        data=st.data(),
        params=st.tuples(st.floats(0, 3), st.floats(0, 1)),
        base=st.integers(0, 4),
        more=st.integers(1, 4),
        filler=st.integers(0, 6),
    )
    def test_more_occurrences_score_at_least_as_high(
        self,
        data: st.DataObject,
        params: tuple[float, float],
        base: int,
        more: int,
        filler: int,
    ) -> None:
        """Of two tools of equal length, the one with more occurrences of the term ranks higher."""
        tools, _ = data.draw(catalogs())
        term = data.draw(WORD)
        pad = data.draw(WORD.filter(lambda word: word != term))
        assume(not {term, pad, "richer", "poorer"} & {t.name for t in tools})
        length = base + more + filler
        rich = make("richer", " ".join([term] * (base + more) + [pad] * filler))
        poor = make("poorer", " ".join([term] * base + [pad] * (more + filler)))
        assert len(_terms(rich.description)) == len(_terms(poor.description)) == length
        scores = ToolSearch([*tools, rich, poor], k1=params[0], b=params[1]).scores(term)
        assert scores["richer"] >= scores["poorer"]
