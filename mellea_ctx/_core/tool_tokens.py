"""What the tool definitions sent with a request cost, framed as each provider frames them.

A request carries the tool definitions besides the messages, and they count
against the window: an agent with thirty tools can spend thousands of tokens
on them. :func:`count_tool_definitions` estimates that cost as each provider
frames it:

* ``"openai"``: Chat Completions renders each function as a line of a
  TypeScript-like namespace in the system prompt; we count the name and
  description, each parameter's name, type and description (and enum
  values), plus the per-function and per-request framing that OpenAI's
  cookbook measured for the ``gpt-4o`` family (7 per function, 3 per
  parameter block and per parameter, 12 per request), under ``o200k_base``.
* ``"anthropic"``: the definitions travel as JSON plus a tool-use system
  prompt of 346 tokens (Anthropic's documented figure for ``tool_choice``
  ``auto`` on Claude 4 models); the JSON is counted under ``o200k_base``,
  which is an estimate for Claude's own tokenizer.

:data:`request_overhead` carries that cost to the compactors: ``react`` sets
it to what the definitions it is about to send cost, and the budget
compactors (:class:`~mellea_ctx.TieredCompactor`,
:class:`~mellea_ctx.TokenBudgetCompactor`,
:class:`~mellea_ctx.ThresholdCompactor`) add it to the history's total.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Literal

from .checks import require_choice
from .encoding import load_o200k_base
from .tools import Tool

Framing = Literal["openai", "anthropic"]

#: Tokens the next request carries besides its messages (tool definitions), while set.
request_overhead: ContextVar[int] = ContextVar("mellea_ctx_request_overhead", default=0)
#: The tool definitions the next request carries, while set (``react`` sets it with
#: :data:`request_overhead`); a continuation summary sends the same ones.
request_tools: ContextVar[tuple[Tool, ...]] = ContextVar("mellea_ctx_request_tools", default=())

_FUNCTION = 7
_PARAMETERS = 3
_PARAMETER = 3
_ENUM = -3
_ENUM_ITEM = 3
_REQUEST = 12
_ANTHROPIC_TOOL_PROMPT = 346


def _tokens(text: str) -> int:
    return len(load_o200k_base().encode_ordinary(text)) if text else 0


def _openai(tool: Tool) -> int:
    total = _FUNCTION + _tokens(f"{tool.name}:{tool.description.rstrip('.')}")
    properties: Mapping[str, Any] = tool.parameters.get("properties") or {}
    if properties:
        total += _PARAMETERS
        for key, spec in properties.items():
            spec = spec if isinstance(spec, Mapping) else {}
            total += _PARAMETER
            enum = spec.get("enum")
            if isinstance(enum, list):
                total += _ENUM + sum(_ENUM_ITEM + _tokens(str(item)) for item in enum)
            kind = spec.get("type", "")
            description = str(spec.get("description", "")).rstrip(".")
            total += _tokens(f"{key}:{kind}:{description}")
    return total


def count_tool_definitions(tools: Iterable[Tool], framing: Framing = "openai") -> int:
    """Return the tokens the definitions of ``tools`` add to one request (``0`` for none).

    Args:
        tools: The tools sent with the request.
        framing: ``"openai"`` or ``"anthropic"`` (see the module docstring).

    Raises:
        InvalidArgumentError: For an unknown framing.

    Examples:
        >>> from mellea_ctx import tool
        >>> @tool
        ... def read_file(path: str) -> str:
        ...     '''Read a file.
        ...
        ...     Args:
        ...         path: The file to read.
        ...     '''
        ...     return ""
        >>> count_tool_definitions([read_file])
        37
        >>> count_tool_definitions([])
        0
    """
    require_choice("", "framing", framing, ("openai", "anthropic"))
    listed = list(tools)
    if not listed:
        return 0
    if framing == "openai":
        return _REQUEST + sum(_openai(tool) for tool in listed)
    body = json.dumps([tool.to_anthropic() for tool in listed], separators=(",", ":"))
    return _ANTHROPIC_TOOL_PROMPT + _tokens(body)
