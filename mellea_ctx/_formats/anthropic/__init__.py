"""Anthropic Messages API turns in and out (``anthropic_read`` / ``anthropic_write``).

The Messages API differs from Chat Completions in four ways that matter here:
the system prompt travels apart from the messages; roles alternate between
``user`` and ``assistant``; a tool call is a ``tool_use`` block inside the
assistant's content; and its result is a ``tool_result`` block inside the
next user message, before any text. :func:`from_anthropic` reads every block
into typed parts and :func:`to_anthropic` writes them back unchanged.
"""

from __future__ import annotations

from .read import from_anthropic, read_turns
from .write import anthropic_document, anthropic_id, to_anthropic, tool_references_text

__all__ = [
    "anthropic_document",
    "anthropic_id",
    "from_anthropic",
    "read_turns",
    "to_anthropic",
    "tool_references_text",
]
