"""``AnthropicBackend``: the Messages API through the official ``anthropic`` SDK.

The SDK is an optional dependency (``pip install '.[anthropic]' in the clone``),
imported on first use.

What the model sends is kept: ``thinking`` blocks (text and signature) and
``redacted_thinking`` blocks become thinking parts of the
``ModelOutputThunk``, in order with its text, and any block we do not model
(``server_tool_use``, ``web_search_tool_result``...) an ``OpaquePart``; all
are sent back unchanged, as extended thinking with tools requires
(https://docs.anthropic.com/claude/docs/build-with-claude/extended-thinking).
What the API refuses is not sent: a text block with only whitespace (which
the model itself sometimes returns before a tool call) is left out of the
request, and so is a message left with no content, its neighbours of the
same role merged (:func:`sendable`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from .._core.checks import require_int
from .._core.components import Component, ModelOutputThunk, ToolCall, Usage
from .._core.exceptions import InvalidArgumentError, MalformedResponseError
from .._core.parts import OpaquePart, Part, RedactedThinkingPart, TextPart, ThinkingPart
from .._core.tools import Tool
from .._formats.anthropic import to_anthropic
from .cache_control import BREAKPOINTS, place_breakpoints, validate_breakpoints
from .sdk import SDKBackend

# "claude-opus-4-5-20251101" -> ("opus", "4", "5"); the date is not a minor version.
_CLAUDE_VERSION = re.compile(r"claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?(?:-|$)")
# The first 4.x minor version of each family with the effort control.
_EFFORT_SINCE = {"opus": 5, "sonnet": 6}
_ANTHROPIC_EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})


class AnthropicBackend(SDKBackend):
    """A backend on Anthropic's Messages API.

    The system prompt is sent apart, tool calls and results become
    ``tool_use`` / ``tool_result`` blocks, and consecutive messages of one
    role are merged, as the API requires (see :func:`mellea_ctx.to_anthropic`).
    As with :class:`~mellea_ctx.OpenAIBackend`, a client is opened per call
    and the SDK's own retries are off by default.

    Args:
        model: The model name (``"claude-sonnet-4-6"``...).
        api_key: The key; defaults to ``ANTHROPIC_API_KEY``.
        base_url: The API's base URL; defaults to ``ANTHROPIC_BASE_URL`` or Anthropic's.
        max_tokens: The answer's length limit, which the API requires; a
            ``max_tokens`` model option overrides it.
        timeout: Seconds the SDK waits for one response.
        max_retries: The SDK's own retries.
        model_options: Defaults for every request (``temperature``...).
        context_window: The model's window in tokens (default: 200,000 for
            ``claude-*`` models, else unknown).
        reasoning: Whether the model takes the effort control that
            ``reasoning_effort`` (sent by the summarizers, ``"low"`` by default)
            becomes, as ``output_config.effort``. ``None`` guesses from the
            name (Opus 4.5 and later, Sonnet 4.6 and later, any 5.x model); for
            others the option is dropped.
        cache_breakpoints: Where to mark ``cache_control`` so the prompt
            cache serves repeated prefixes: ``"tools"``, ``"system"`` and
            ``"history"`` (the end of the history; see
            :mod:`mellea_ctx._backends.cache_control`). All three by
            default; ``()`` sends none.

    Raises:
        InvalidArgumentError: When the SDK is missing, no key is given, or a
            breakpoint place is unknown.
    """

    provider = "Anthropic"
    sdk_module = "anthropic"
    sdk_error = "AnthropicError"
    extra = "anthropic"
    sdk_client = "AsyncAnthropic"
    sdk_call = "messages.create"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 2_048,
        timeout: float = 60.0,
        max_retries: int = 0,
        model_options: Mapping[str, Any] | None = None,
        context_window: int | Literal["server"] | None = None,
        reasoning: bool | None = None,
        cache_breakpoints: Collection[str] = BREAKPOINTS,
    ) -> None:
        self.cache_breakpoints = validate_breakpoints("AnthropicBackend", cache_breakpoints)
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if key is None:
            msg = "AnthropicBackend needs an API key: pass api_key=... or set ANTHROPIC_API_KEY"
            raise InvalidArgumentError(msg)
        require_int("AnthropicBackend", "max_tokens", max_tokens, minimum=1, unit="tokens")
        super().__init__(
            model,
            api_key=key,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            timeout=timeout,
            max_retries=max_retries,
            model_options={"max_tokens": max_tokens, **dict(model_options or {})},
            context_window=context_window,
            reasoning=reasoning,
        )

    @classmethod
    def model_takes_reasoning_effort(cls, model: str) -> bool:
        """Whether ``model`` has the effort control: Opus 4.5+, Sonnet 4.6+, any 5.x or later.

        Examples:
            >>> AnthropicBackend.model_takes_reasoning_effort("claude-opus-4-5-20251101")
            True
            >>> AnthropicBackend.model_takes_reasoning_effort("claude-haiku-4-5")
            False
        """
        found = _CLAUDE_VERSION.match(model.rsplit("/", 1)[-1].lower())
        if found is None:
            return False
        family, major, minor = found.group(1), int(found.group(2)), int(found.group(3) or 0)
        if major >= 5:
            return True
        return major == 4 and minor >= _EFFORT_SINCE.get(family, 99)

    def send_reasoning_effort(self, options: dict[str, Any], effort: str) -> None:
        """``output_config={"effort": ...}``; ``none`` and ``minimal`` become ``low``.

        An ``effort`` already in an ``output_config`` option is kept.
        """
        config = dict(options.get("output_config") or {})
        config.setdefault("effort", effort if effort in _ANTHROPIC_EFFORTS else "low")
        options["output_config"] = config

    def request(
        self, messages: Sequence[Component], options: dict[str, Any], tools: Sequence[Tool]
    ) -> dict[str, Any]:
        """The Messages request: the system prompt apart, breakpoints placed."""
        text, history = to_anthropic(messages)
        history = sendable(history)
        if isinstance(text, list):  # blocks (read from a file, Claude Code's form)
            text = [block for block in text if not _is_blank_text(block)] or None
        elif text is not None and not text.strip():
            text = None  # the API refuses a whitespace-only system prompt
        definitions = [definition.to_anthropic() for definition in tools]
        system, payload, definitions = place_breakpoints(
            self.cache_breakpoints, text, history, definitions
        )
        request: dict[str, Any] = {"model": self.model, "messages": payload, **options}
        if definitions:
            request["tools"] = definitions
        if system is not None:
            request["system"] = system
        return request

    def parse(self, response: Any) -> ModelOutputThunk:
        """Return the answer: its blocks as parts in order, tool_use blocks as calls, usage."""
        return _parse(response)


def _is_blank_text(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and not block["text"].strip()


def sendable(payload: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return ``payload`` (``to_anthropic``'s messages) without what the API would refuse.

    A text block holding only whitespace is left out (the API answers 400
    "text content blocks must contain non-whitespace text"), a message left
    with no content is left out, except a final assistant one, and messages
    of one role that then meet are merged; if the first message left is the
    assistant's, a short user turn goes in front, as :func:`to_anthropic` does.
    Every other block, thinking with its signature included, is sent as it
    is. ``payload`` is not modified.

    Examples:
        >>> out = sendable([
        ...     {"role": "user", "content": "hi"},
        ...     {"role": "assistant", "content": [{"type": "text", "text": "  "}]},
        ...     {"role": "user", "content": "go on"},
        ... ])
        >>> [(m["role"], [b["text"] for b in m["content"]]) for m in out]
        [('user', ['hi', 'go on'])]
    """
    out: list[dict[str, Any]] = []
    for index, original in enumerate(payload):
        message = _without_blank_text(original)
        content = message["content"]
        if not content and not (index == len(payload) - 1 and message["role"] == "assistant"):
            continue
        if out and out[-1]["role"] == message["role"]:
            out[-1] = {**out[-1], "content": _as_blocks(out[-1]) + _as_blocks(message)}
        else:
            out.append(message)
    if out and out[0]["role"] == "assistant":  # what opened it was blank: the API wants user first
        out.insert(0, {"role": "user", "content": "(earlier conversation)"})
    return out


def _without_blank_text(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without its whitespace-only text (a copy; ``message`` when it has none)."""
    content = message["content"]
    if isinstance(content, list):
        kept = [block for block in content if not _is_blank_text(block)]
        return message if len(kept) == len(content) else {**message, "content": kept}
    if isinstance(content, str) and not content.strip():
        return {**message, "content": []}
    return message


def _as_blocks(message: dict[str, Any]) -> list[Any]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _block_dict(block: Any) -> dict[str, Any]:
    """A response block as the JSON it came as (fields the server did not send left out)."""
    if isinstance(block, dict):
        return block
    raw: dict[str, Any] = block.to_dict() if hasattr(block, "to_dict") else dict(vars(block))
    return {key: value for key, value in raw.items() if value is not None}


def _parse(response: Any) -> ModelOutputThunk:
    content = getattr(response, "content", None)
    if content is None:
        msg = f"Anthropic: the response has no content: {str(response)[:200]}"
        raise MalformedResponseError(msg)
    parts: list[Part] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            extra = {k: v for k, v in _block_dict(block).items() if k not in ("type", "text")}
            parts.append(TextPart(block.text, extra=extra))
        elif kind == "thinking":
            parts.append(
                ThinkingPart(block.thinking, signature=block.signature, provider="anthropic")
            )
        elif kind == "redacted_thinking":
            parts.append(RedactedThinkingPart(block.data, provider="anthropic"))
        elif kind == "tool_use":
            calls.append(
                ToolCall(block.id, block.name, json.dumps(block.input, ensure_ascii=False))
            )
        else:  # a block we do not model: carried verbatim, sent back as it came
            parts.append(OpaquePart("anthropic", _block_dict(block)))
    return ModelOutputThunk(parts=parts, tool_calls=calls, usage=_usage(response))


def _usage(response: Any) -> Usage | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    # A usage without the cache fields (a server that does not cache)
    # says nothing about the cache: None, not 0.
    read = _count(getattr(usage, "cache_read_input_tokens", None))
    written = _count(getattr(usage, "cache_creation_input_tokens", None))
    return Usage(
        prompt_tokens=(usage.input_tokens or 0) + (read or 0) + (written or 0),
        completion_tokens=usage.output_tokens or 0,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
