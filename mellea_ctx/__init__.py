"""mellea-ctx: keep LLM conversations inside their context window, immutably.

The public API lives here; implementation modules are private (``_name.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and the docs read; at run time, __getattr__ below
    from ._agent.bm25 import ToolHit
    from ._agent.delivered import DeliveredTools, InMemoryMetaStore, MetaStore
    from ._agent.events import Event, EventHook, EventKind
    from ._agent.react import areact, react
    from ._agent.result import ReactResult, SessionLike
    from ._agent.search_tool import SEARCH_TOOL_NAME
    from ._agent.tool_search import ToolSearch
    from ._backends.anthropic import AnthropicBackend
    from ._backends.bridge import run_blocking
    from ._backends.cache_control import CacheUse, predict_cache
    from ._backends.extractive import ExtractiveBackend
    from ._backends.openai import OpenAIBackend
    from ._backends.openai_responses import OpenAIResponsesBackend
    from ._backends.pricing import Pricing
    from ._backends.scripted import ScriptedBackend, ScriptedReply
    from ._backends.windows import context_window, output_limit
    from ._compaction.clear_results import ClearToolResultsCompactor
    from ._compaction.planner import CompactionPlanner, PlannerDecision
    from ._compaction.prompts import (
        DEFAULT_PROMPT_TEMPLATE,
        react_summary_prompt,
        validate_prompt_template,
    )
    from ._compaction.records import CompactionRecord, CompactionWarning, Outcome, RecordHook
    from ._compaction.summarize import LLMSummarizeCompactor
    from ._compaction.superseded import SupersededReadsCompactor
    from ._compaction.tiered import TieredCompactor
    from ._compaction.token_budget import TokenBudgetCompactor
    from ._compaction.window import ThresholdCompactor, WindowCompactor
    from ._core.checkpoint import CHECKPOINT_HEADER, Checkpoint
    from ._core.cleared import ClearedToolResult
    from ._core.components import (
        CBlock,
        Component,
        Message,
        ModelOutputThunk,
        ReactInitiator,
        Role,
        ToolCall,
        ToolMessage,
        Usage,
    )
    from ._core.context import ChatContext
    from ._core.exceptions import (
        BackendConnectionError,
        BackendError,
        BackendTimeoutError,
        CompactionError,
        CompactionTimeoutError,
        ContextOverflowError,
        EmptySummaryError,
        InvalidArgumentError,
        InvalidComponentError,
        InvalidContextError,
        MalformedResponseError,
        MelleaCtxError,
        NotInlineCompactorError,
        RateLimitError,
        RequestRejectedError,
        ServerError,
        SessionConflictError,
        SessionStoreError,
        SpanTooLargeError,
        SummaryToolCallError,
        TokenizerDataError,
    )
    from ._core.facts import Fact, FactKind, extract_facts, missing_facts
    from ._core.ledger import Ledger, LedgerEntry, LedgerKind, derive_ledger
    from ._core.parts import (
        AudioPart,
        DocumentPart,
        ImagePart,
        OpaquePart,
        Part,
        PartKind,
        RedactedThinkingPart,
        RefusalPart,
        TextPart,
        ThinkingPart,
    )
    from ._core.pins import (
        PinPredicate,
        pin_nothing,
        pin_react_initiator,
        pin_system,
        pin_system_and_initial_user,
    )
    from ._core.protocols import (
        Backend,
        BaseBackend,
        Compactor,
        GatedCompactor,
        InlineCompactor,
        acompact_with,
        compact_with,
        inline_backoff,
    )
    from ._core.tokens import REPLY_PRIMING_TOKENS, TiktokenCounter, TokenCounter, default_counter
    from ._core.tools import Tool, ToolArgumentError, tool, tool_schema
    from ._formats.anthropic import from_anthropic, to_anthropic
    from ._formats.call_rules import MISSING_RESULT, repair_history, validate_anthropic
    from ._formats.gemini import from_gemini, to_gemini
    from ._formats.gemini.rules import validate_gemini
    from ._formats.notes import LossyConversionWarning
    from ._formats.openai import from_openai, to_openai, validate_openai
    from ._formats.problems import Problem, problems
    from ._formats.quoted import render_conversation
    from ._formats.registry import Provider
    from ._formats.responses import from_responses, to_responses
    from ._formats.responses.rules import validate_responses
    from ._formats.serialize import (
        component_from_record,
        component_to_record,
        components_from_json,
        components_to_json,
    )
    from ._formats.transcripts import (
        dump_anthropic,
        dump_conversation,
        load_anthropic,
        load_conversation,
    )
    from ._sessions.async_redis import AsyncRedisStore
    from ._sessions.async_sqlite import AsyncSQLiteStore
    from ._sessions.async_store import AsyncSessionStore, AsyncStoreAdapter, as_async_store
    from ._sessions.memory import MemoryStore
    from ._sessions.postgres import AsyncPostgresStore, PostgresStore
    from ._sessions.redis import RedisStore
    from ._sessions.session import Session, SessionMemory
    from ._sessions.sqlite import SQLiteStore
    from ._sessions.store import SessionStore, StoredSession

#: Where each public name lives, by module: imported on first use (PEP 562), so
#: ``import mellea_ctx`` loads nothing until a name is used, and a name loads only
#: its own module and what that module imports. tests/test_exported_members.py
#: checks that this table and the imports above name the same objects.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "._agent.bm25": ("ToolHit",),
    "._agent.delivered": (
        "DeliveredTools",
        "InMemoryMetaStore",
        "MetaStore",
    ),
    "._agent.react": (
        "areact",
        "react",
    ),
    "._agent.result": (
        "ReactResult",
        "SessionLike",
    ),
    "._agent.search_tool": ("SEARCH_TOOL_NAME",),
    "._agent.tool_search": ("ToolSearch",),
    "._backends.anthropic": ("AnthropicBackend",),
    "._backends.bridge": ("run_blocking",),
    "._backends.cache_control": (
        "CacheUse",
        "predict_cache",
    ),
    "._backends.extractive": ("ExtractiveBackend",),
    "._backends.openai": ("OpenAIBackend",),
    "._backends.openai_responses": ("OpenAIResponsesBackend",),
    "._backends.pricing": ("Pricing",),
    "._backends.scripted": (
        "ScriptedBackend",
        "ScriptedReply",
    ),
    "._backends.windows": (
        "context_window",
        "output_limit",
    ),
    "._compaction.clear_results": ("ClearToolResultsCompactor",),
    "._agent.events": (
        "Event",
        "EventHook",
        "EventKind",
    ),
    "._compaction.planner": (
        "CompactionPlanner",
        "PlannerDecision",
    ),
    "._compaction.prompts": (
        "DEFAULT_PROMPT_TEMPLATE",
        "react_summary_prompt",
        "validate_prompt_template",
    ),
    "._compaction.records": (
        "CompactionRecord",
        "CompactionWarning",
        "Outcome",
        "RecordHook",
    ),
    "._compaction.summarize": ("LLMSummarizeCompactor",),
    "._compaction.superseded": ("SupersededReadsCompactor",),
    "._compaction.tiered": ("TieredCompactor",),
    "._compaction.token_budget": ("TokenBudgetCompactor",),
    "._compaction.window": (
        "ThresholdCompactor",
        "WindowCompactor",
    ),
    "._core.checkpoint": (
        "CHECKPOINT_HEADER",
        "Checkpoint",
    ),
    "._core.cleared": ("ClearedToolResult",),
    "._core.components": (
        "CBlock",
        "Component",
        "Message",
        "ModelOutputThunk",
        "ReactInitiator",
        "Role",
        "ToolCall",
        "ToolMessage",
        "Usage",
    ),
    "._core.context": ("ChatContext",),
    "._core.exceptions": (
        "BackendConnectionError",
        "BackendError",
        "BackendTimeoutError",
        "CompactionError",
        "CompactionTimeoutError",
        "ContextOverflowError",
        "EmptySummaryError",
        "InvalidArgumentError",
        "InvalidComponentError",
        "InvalidContextError",
        "MalformedResponseError",
        "MelleaCtxError",
        "NotInlineCompactorError",
        "RateLimitError",
        "RequestRejectedError",
        "ServerError",
        "SessionConflictError",
        "SessionStoreError",
        "SpanTooLargeError",
        "SummaryToolCallError",
        "TokenizerDataError",
    ),
    "._core.facts": (
        "Fact",
        "FactKind",
        "extract_facts",
        "missing_facts",
    ),
    "._core.ledger": (
        "Ledger",
        "LedgerEntry",
        "LedgerKind",
        "derive_ledger",
    ),
    "._core.parts": (
        "AudioPart",
        "DocumentPart",
        "ImagePart",
        "OpaquePart",
        "Part",
        "PartKind",
        "RedactedThinkingPart",
        "RefusalPart",
        "TextPart",
        "ThinkingPart",
    ),
    "._core.pins": (
        "PinPredicate",
        "pin_nothing",
        "pin_react_initiator",
        "pin_system",
        "pin_system_and_initial_user",
    ),
    "._core.protocols": (
        "Backend",
        "BaseBackend",
        "Compactor",
        "GatedCompactor",
        "InlineCompactor",
        "acompact_with",
        "compact_with",
        "inline_backoff",
    ),
    "._core.tokens": (
        "REPLY_PRIMING_TOKENS",
        "TiktokenCounter",
        "TokenCounter",
        "default_counter",
    ),
    "._core.tools": (
        "Tool",
        "ToolArgumentError",
        "tool",
        "tool_schema",
    ),
    "._formats.anthropic": (
        "from_anthropic",
        "to_anthropic",
    ),
    "._formats.gemini": (
        "from_gemini",
        "to_gemini",
    ),
    "._formats.gemini.rules": ("validate_gemini",),
    "._formats.call_rules": (
        "MISSING_RESULT",
        "repair_history",
        "validate_anthropic",
    ),
    "._formats.notes": ("LossyConversionWarning",),
    "._formats.openai": (
        "from_openai",
        "to_openai",
        "validate_openai",
    ),
    "._formats.quoted": ("render_conversation",),
    "._formats.registry": ("Provider",),
    "._formats.problems": (
        "Problem",
        "problems",
    ),
    "._formats.responses": (
        "from_responses",
        "to_responses",
    ),
    "._formats.responses.rules": ("validate_responses",),
    "._formats.serialize": (
        "component_from_record",
        "component_to_record",
        "components_from_json",
        "components_to_json",
    ),
    "._formats.transcripts": (
        "dump_anthropic",
        "dump_conversation",
        "load_anthropic",
        "load_conversation",
    ),
    "._sessions.async_redis": ("AsyncRedisStore",),
    "._sessions.async_sqlite": ("AsyncSQLiteStore",),
    "._sessions.async_store": (
        "AsyncSessionStore",
        "AsyncStoreAdapter",
        "as_async_store",
    ),
    "._sessions.memory": ("MemoryStore",),
    "._sessions.postgres": (
        "AsyncPostgresStore",
        "PostgresStore",
    ),
    "._sessions.redis": ("RedisStore",),
    "._sessions.session": (
        "Session",
        "SessionMemory",
    ),
    "._sessions.sqlite": ("SQLiteStore",),
    "._sessions.store": (
        "SessionStore",
        "StoredSession",
    ),
}
_WHERE: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__version__ = "0.1.0.dev0"
__all__ = [
    "CHECKPOINT_HEADER",
    "DEFAULT_PROMPT_TEMPLATE",
    "MISSING_RESULT",
    "REPLY_PRIMING_TOKENS",
    "SEARCH_TOOL_NAME",
    "AnthropicBackend",
    "AsyncPostgresStore",
    "AsyncRedisStore",
    "AsyncSQLiteStore",
    "AsyncSessionStore",
    "AsyncStoreAdapter",
    "AudioPart",
    "Backend",
    "BackendConnectionError",
    "BackendError",
    "BackendTimeoutError",
    "BaseBackend",
    "CBlock",
    "CacheUse",
    "ChatContext",
    "Checkpoint",
    "ClearToolResultsCompactor",
    "ClearedToolResult",
    "CompactionError",
    "CompactionPlanner",
    "CompactionRecord",
    "CompactionTimeoutError",
    "CompactionWarning",
    "Compactor",
    "Component",
    "ContextOverflowError",
    "DeliveredTools",
    "DocumentPart",
    "EmptySummaryError",
    "Event",
    "EventHook",
    "EventKind",
    "ExtractiveBackend",
    "Fact",
    "FactKind",
    "GatedCompactor",
    "ImagePart",
    "InMemoryMetaStore",
    "InlineCompactor",
    "InvalidArgumentError",
    "InvalidComponentError",
    "InvalidContextError",
    "LLMSummarizeCompactor",
    "Ledger",
    "LedgerEntry",
    "LedgerKind",
    "LossyConversionWarning",
    "MalformedResponseError",
    "MelleaCtxError",
    "MemoryStore",
    "Message",
    "MetaStore",
    "ModelOutputThunk",
    "NotInlineCompactorError",
    "OpaquePart",
    "OpenAIBackend",
    "OpenAIResponsesBackend",
    "Outcome",
    "Part",
    "PartKind",
    "PinPredicate",
    "PlannerDecision",
    "PostgresStore",
    "Pricing",
    "Problem",
    "Provider",
    "RateLimitError",
    "ReactInitiator",
    "ReactResult",
    "RecordHook",
    "RedactedThinkingPart",
    "RedisStore",
    "RefusalPart",
    "RequestRejectedError",
    "Role",
    "SQLiteStore",
    "ScriptedBackend",
    "ScriptedReply",
    "ServerError",
    "Session",
    "SessionConflictError",
    "SessionLike",
    "SessionMemory",
    "SessionStore",
    "SessionStoreError",
    "SpanTooLargeError",
    "StoredSession",
    "SummaryToolCallError",
    "SupersededReadsCompactor",
    "TextPart",
    "ThinkingPart",
    "ThresholdCompactor",
    "TieredCompactor",
    "TiktokenCounter",
    "TokenBudgetCompactor",
    "TokenCounter",
    "TokenizerDataError",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolHit",
    "ToolMessage",
    "ToolSearch",
    "Usage",
    "WindowCompactor",
    "acompact_with",
    "areact",
    "as_async_store",
    "compact_with",
    "component_from_record",
    "component_to_record",
    "components_from_json",
    "components_to_json",
    "context_window",
    "default_counter",
    "derive_ledger",
    "dump_anthropic",
    "dump_conversation",
    "extract_facts",
    "from_anthropic",
    "from_gemini",
    "from_openai",
    "from_responses",
    "inline_backoff",
    "load_anthropic",
    "load_conversation",
    "missing_facts",
    "output_limit",
    "pin_nothing",
    "pin_react_initiator",
    "pin_system",
    "pin_system_and_initial_user",
    "predict_cache",
    "problems",
    "react",
    "react_summary_prompt",
    "render_conversation",
    "repair_history",
    "run_blocking",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "to_responses",
    "tool",
    "tool_schema",
    "validate_anthropic",
    "validate_gemini",
    "validate_openai",
    "validate_prompt_template",
    "validate_responses",
]


def __getattr__(name: str) -> Any:
    """Import the module that holds ``name`` the first time it is asked for."""
    module = _WHERE.get(name)
    if module is None:
        msg = f"module 'mellea_ctx' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
