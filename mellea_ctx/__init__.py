"""mellea-ctx: keep LLM conversations inside their context window, immutably.

The public API lives here; implementation modules are private (``_name.py``).
"""

from __future__ import annotations

from ._anthropic_backend import AnthropicBackend
from ._anthropic_format import from_anthropic, to_anthropic
from ._backend import Backend, ScriptedBackend, ScriptedReply
from ._bridge import run_blocking
from ._checkpoint import CHECKPOINT_HEADER, Checkpoint
from ._compactors import Compactor, InlineCompactor, ThresholdCompactor, WindowCompactor
from ._components import (
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
from ._context import ChatContext
from ._events import Event, EventHook, EventKind
from ._exceptions import (
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    CompactionError,
    CompactionTimeoutError,
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
    SummaryToolCallError,
    TokenizerDataError,
)
from ._extractive import ExtractiveBackend
from ._facts import Fact, FactKind, extract_facts, missing_facts
from ._formats import (
    dump_anthropic,
    dump_conversation,
    from_openai,
    load_anthropic,
    load_conversation,
    to_openai,
    validate_openai,
)
from ._history import MISSING_RESULT, Provider, repair_history, validate_anthropic
from ._openai_backend import OpenAIBackend
from ._pins import (
    PinPredicate,
    pin_nothing,
    pin_react_initiator,
    pin_system,
    pin_system_and_initial_user,
)
from ._react import ReactResult, SessionLike, areact, react
from ._records import CompactionRecord, CompactionWarning, Outcome, RecordHook
from ._serialize import (
    component_from_record,
    component_to_record,
    components_from_json,
    components_to_json,
)
from ._sessions import Session, SessionMemory
from ._store import SessionStore, StoredSession
from ._store_memory import MemoryStore
from ._store_redis import RedisStore
from ._store_sqlite import SQLiteStore
from ._summarize import (
    DEFAULT_PROMPT_TEMPLATE,
    LLMSummarizeCompactor,
    TokenBudgetCompactor,
    react_summary_prompt,
    render_conversation,
    validate_prompt_template,
)
from ._tokens import REPLY_PRIMING_TOKENS, TiktokenCounter, TokenCounter, default_counter
from ._tool_search import (
    SEARCH_TOOL_NAME,
    DeliveredTools,
    InMemoryMetaStore,
    MetaStore,
    ToolHit,
    ToolSearch,
)
from ._tools import Tool, ToolArgumentError, tool, tool_schema

__version__ = "0.1.0.dev0"
__all__ = [
    "CHECKPOINT_HEADER",
    "DEFAULT_PROMPT_TEMPLATE",
    "MISSING_RESULT",
    "REPLY_PRIMING_TOKENS",
    "SEARCH_TOOL_NAME",
    "AnthropicBackend",
    "Backend",
    "BackendConnectionError",
    "BackendError",
    "BackendTimeoutError",
    "CBlock",
    "ChatContext",
    "Checkpoint",
    "CompactionError",
    "CompactionRecord",
    "CompactionTimeoutError",
    "CompactionWarning",
    "Compactor",
    "Component",
    "DeliveredTools",
    "EmptySummaryError",
    "Event",
    "EventHook",
    "EventKind",
    "ExtractiveBackend",
    "Fact",
    "FactKind",
    "InMemoryMetaStore",
    "InlineCompactor",
    "InvalidArgumentError",
    "InvalidComponentError",
    "InvalidContextError",
    "LLMSummarizeCompactor",
    "MalformedResponseError",
    "MelleaCtxError",
    "MemoryStore",
    "Message",
    "MetaStore",
    "ModelOutputThunk",
    "NotInlineCompactorError",
    "OpenAIBackend",
    "Outcome",
    "PinPredicate",
    "Provider",
    "RateLimitError",
    "ReactInitiator",
    "ReactResult",
    "RecordHook",
    "RedisStore",
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
    "StoredSession",
    "SummaryToolCallError",
    "ThresholdCompactor",
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
    "component_from_record",
    "component_to_record",
    "components_from_json",
    "components_to_json",
    "default_counter",
    "dump_anthropic",
    "dump_conversation",
    "extract_facts",
    "from_anthropic",
    "from_openai",
    "load_anthropic",
    "load_conversation",
    "missing_facts",
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
    "to_openai",
    "tool",
    "tool_schema",
    "validate_anthropic",
    "validate_openai",
    "validate_prompt_template",
]
