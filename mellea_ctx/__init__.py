"""mellea-ctx: keep LLM conversations inside their context window, immutably.

The public API lives here; implementation modules are private (``_name.py``).
"""

from __future__ import annotations

from ._backend import Backend
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
from ._context import ChatContext, ComponentsView
from ._exceptions import (
    InvalidArgumentError,
    InvalidComponentError,
    InvalidContextError,
    MelleaCtxError,
    NotInlineCompactorError,
    TokenizerDataError,
)
from ._formats import (
    dump_conversation,
    from_openai,
    load_conversation,
    to_openai,
    validate_openai,
)
from ._pins import (
    PinPredicate,
    pin_nothing,
    pin_react_initiator,
    pin_system,
    pin_system_and_initial_user,
)
from ._tokens import REPLY_PRIMING_TOKENS, TiktokenCounter, TokenCounter, default_counter

__version__ = "0.1.0.dev0"

__all__ = [
    "REPLY_PRIMING_TOKENS",
    "Backend",
    "CBlock",
    "ChatContext",
    "Compactor",
    "Component",
    "ComponentsView",
    "InlineCompactor",
    "InvalidArgumentError",
    "InvalidComponentError",
    "InvalidContextError",
    "MelleaCtxError",
    "Message",
    "ModelOutputThunk",
    "NotInlineCompactorError",
    "PinPredicate",
    "ReactInitiator",
    "Role",
    "ThresholdCompactor",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerDataError",
    "ToolCall",
    "ToolMessage",
    "Usage",
    "WindowCompactor",
    "default_counter",
    "dump_conversation",
    "from_openai",
    "load_conversation",
    "pin_nothing",
    "pin_react_initiator",
    "pin_system",
    "pin_system_and_initial_user",
    "to_openai",
    "validate_openai",
]
