"""Pins the public API's static types; checked by ``mypy --strict`` in ``nox -s typecheck``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_never, assert_type

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    CompactionRecord,
    Compactor,
    Component,
    DeliveredTools,
    ExtractiveBackend,
    InlineCompactor,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    Part,
    PartKind,
    Problem,
    RedisStore,
    ScriptedBackend,
    Session,
    SessionMemory,
    SessionStore,
    SQLiteStore,
    StoredSession,
    TextPart,
    ThresholdCompactor,
    TiktokenCounter,
    TokenBudgetCompactor,
    TokenCounter,
    Tool,
    ToolCall,
    ToolHit,
    ToolMessage,
    ToolSearch,
    WindowCompactor,
    dump_anthropic,
    from_openai,
    load_anthropic,
    pin_system,
    problems,
    repair_history,
    to_openai,
    validate_anthropic,
)


def check_api() -> None:
    window = WindowCompactor(size=3, pin_predicate=pin_system)
    ctx = ChatContext(compactor=ThresholdCompactor(window, threshold=1_000))
    grown = ctx.add(Message("user", "hi"))
    assert_type(grown, ChatContext)
    assert_type(grown.as_list(), list[Component])
    assert_type(grown.view_for_generation(), list[Component])
    assert_type(grown.last_turn(), tuple[Component, ...])
    assert_type(grown.previous_node, ChatContext | None)
    assert_type(grown.node_data, Component | None)
    assert_type(grown.token_count, int)
    assert_type(grown.compaction_backoff, int)
    assert_type(grown.compactor, InlineCompactor | None)
    assert_type(grown.with_history(grown.as_list()[1:]), ChatContext)
    assert_type(grown.new_instance(), ChatContext)
    assert_type(grown.replace_span(0, 1, [Message("user", "summary")]), ChatContext)
    assert_type(grown.token_bound(), int)
    assert_type(grown.has_detached_results, bool)
    assert_type(grown.with_backoff(4), ChatContext)
    assert_type(grown.with_compactor(window), ChatContext)
    assert_type(grown.window_span(3, pin_system), tuple[int, int] | None)
    assert_type(window.inline_cut(grown), tuple[int, int] | None)
    assert_type(ChatContext.reset_to_new(), ChatContext)
    assert_type(window.compact(grown), ChatContext)
    compactor: Compactor = window
    assert_type(compactor.compact(grown, backend=None), ChatContext)
    counter: TokenCounter = TiktokenCounter()
    assert_type(counter.count(ToolMessage("x", tool_call_id="c")), int)
    output = ModelOutputThunk(None, tool_calls=[ToolCall("c", "f", {"a": 1})])
    assert_type(output.tool_calls, tuple[ToolCall, ...])
    assert_type(output.value, str | None)


async def check_summarizers() -> None:
    records: list[CompactionRecord] = []
    summarize = LLMSummarizeCompactor(default_backend=ExtractiveBackend(), on_record=records.append)
    budget = TokenBudgetCompactor(
        max_tokens=1_000, default_backend=ScriptedBackend(lambda m, o: "s"), backoff_adds=4
    )
    ctx = ChatContext(compactor=budget)
    assert_type(summarize.compact(ctx), ChatContext)
    assert_type(await summarize.acompact(ctx), ChatContext)
    assert_type(budget.compact(ctx, force=True), ChatContext)
    assert_type(budget.backoff_adds, int)
    if records:
        assert_type(records[0].attempts, int)
    first = ctx[0]
    assert_type(first, Component)
    if isinstance(first, Checkpoint):
        assert_type(first.restore(), ChatContext)
    assert_type(to_openai(from_openai([{"role": "user", "content": "hi"}])), list[dict[str, Any]])


def check_sessions(path: str) -> None:
    memory = SessionMemory(SQLiteStore(path, timeout=1.0))
    store: SessionStore = MemoryStore()
    assert_type(SessionMemory(store).store, SessionStore)
    session = memory.open("s1")
    assert_type(session, Session)
    assert_type(session.version, int)
    assert_type(session.dialogue, tuple[Component, ...])
    assert_type(session.meta, Mapping[str, str])
    assert_type(session.context(system="Be brief.", compactor=WindowCompactor(size=4)), ChatContext)
    assert_type(session.commit([Message("user", "hi")]), Session)
    assert_type(session.replace(session.context()), Session)
    assert_type(memory.messages("s1"), tuple[Component, ...])
    stored = RedisStore("redis://127.0.0.1:6379/0", prefix="app:").load("s1")
    assert_type(stored, StoredSession)
    assert_type(store.append("s1", [Message("user", "a")], expected_version=0), int)


def check_tool_search(tools: list[Tool]) -> None:
    search = ToolSearch(tools, limit=5, catalog="system")
    delivered = search.delivered("s1")
    assert_type(delivered, DeliveredTools)
    assert_type(delivered.names, tuple[str, ...])
    assert_type(search.search("stock", exclude=delivered.names), list[ToolHit])
    assert_type(search.search("stock")[0].score, float)
    assert_type(search.search_tool(delivered, references=True), Tool)
    assert_type(search.offered(delivered), list[Tool])
    assert_type(search.openai_tools(delivered), list[dict[str, Any]])
    assert_type(search.anthropic_tools(), list[dict[str, Any]])
    assert_type(search.catalog_text(), str)
    assert_type(search.reset_after_compaction(delivered), bool)


def check_history_rules(components: list[Component]) -> None:
    assert_type(validate_anthropic(components), list[str])
    assert_type(repair_history(components), tuple[list[Component], list[str]])
    assert_type(repair_history(components, provider="anthropic")[1], list[str])
    found = problems(components, "gemini")
    assert_type(found, list[Problem])
    assert_type(found[0].index, int | None)
    assert_type(found[0].location, str)
    assert_type(load_anthropic("chat.json"), list[Component])
    assert_type(dump_anthropic(components, "chat.json"), None)


def check_part_kinds(part: Part) -> PartKind:
    assert_type(TextPart("hi").kind, Literal["text"])
    assert_type(part.kind, PartKind)
    match part.kind:  # a dispatch on the tag is exhaustive too
        case "text" | "image" | "document" | "audio" | "thinking":
            return part.kind
        case "redacted_thinking" | "refusal" | "opaque":
            return part.kind
        case _:
            assert_never(part.kind)
