"""mellea-ctx: keep LLM conversations inside their context window, immutably.

The public API lives here; implementation modules are private (``_name.py``).
"""

from __future__ import annotations

from ._agent.bm25 import ToolHit
from ._agent.delivered import DeliveredTools, InMemoryMetaStore, MetaStore
from ._agent.react import ReactResult, SessionLike, areact, react
from ._agent.search_tool import SEARCH_TOOL_NAME
from ._agent.tool_search import ToolSearch
from ._backends.anthropic import AnthropicBackend
from ._backends.bridge import run_blocking
from ._backends.extractive import ExtractiveBackend
from ._backends.openai import OpenAIBackend
from ._backends.openai_responses import OpenAIResponsesBackend
from ._backends.scripted import ScriptedBackend, ScriptedReply
from ._backends.windows import context_window, output_limit
from ._compaction.clear_results import ClearToolResultsCompactor
from ._compaction.events import Event, EventHook, EventKind
from ._compaction.prompts import (
    DEFAULT_PROMPT_TEMPLATE,
    react_summary_prompt,
    render_conversation,
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
from ._core.protocols import Backend, Compactor, InlineCompactor
from ._core.tokens import REPLY_PRIMING_TOKENS, TiktokenCounter, TokenCounter, default_counter
from ._core.tools import Tool, ToolArgumentError, tool, tool_schema
from ._formats.anthropic import from_anthropic, to_anthropic
from ._formats.gemini import from_gemini, to_gemini
from ._formats.gemini_rules import validate_gemini
from ._formats.history import MISSING_RESULT, Provider, repair_history, validate_anthropic
from ._formats.notes import LossyConversionWarning
from ._formats.openai import from_openai, to_openai, validate_openai
from ._formats.responses import from_responses, to_responses
from ._formats.responses_rules import validate_responses
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
from ._sessions.redis import RedisStore
from ._sessions.session import Session, SessionMemory
from ._sessions.sqlite import SQLiteStore
from ._sessions.store import SessionStore, StoredSession

__version__ = "0.1.0.dev0"
__all__ = [
    "CHECKPOINT_HEADER",
    "DEFAULT_PROMPT_TEMPLATE",
    "MISSING_RESULT",
    "REPLY_PRIMING_TOKENS",
    "SEARCH_TOOL_NAME",
    "AnthropicBackend",
    "AsyncRedisStore",
    "AsyncSQLiteStore",
    "AsyncSessionStore",
    "AsyncStoreAdapter",
    "AudioPart",
    "Backend",
    "BackendConnectionError",
    "BackendError",
    "BackendTimeoutError",
    "CBlock",
    "ChatContext",
    "Checkpoint",
    "ClearToolResultsCompactor",
    "ClearedToolResult",
    "CompactionError",
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
    "PinPredicate",
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
    "areact",
    "as_async_store",
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
    "load_anthropic",
    "load_conversation",
    "missing_facts",
    "output_limit",
    "pin_nothing",
    "pin_react_initiator",
    "pin_system",
    "pin_system_and_initial_user",
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
