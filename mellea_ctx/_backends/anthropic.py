"""``AnthropicBackend``: the Messages API through the official ``anthropic`` SDK.

The SDK is an optional dependency (``pip install 'mellea-ctx[anthropic]'``),
imported on first use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .._core.components import Component, ModelOutputThunk, ToolCall, Usage
from .._core.exceptions import InvalidArgumentError, MalformedResponseError
from .._core.tools import Tool
from .._formats.anthropic import to_anthropic
from .cache_control import BREAKPOINTS, place_breakpoints, validate_breakpoints
from .sdk import SDKBackend, sdk_arguments

__all__ = ["AnthropicBackend"]


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
        cache_breakpoints: Collection[str] = BREAKPOINTS,
    ) -> None:
        self.cache_breakpoints = validate_breakpoints("AnthropicBackend", cache_breakpoints)
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if key is None:
            msg = "AnthropicBackend needs an API key: pass api_key=... or set ANTHROPIC_API_KEY"
            raise InvalidArgumentError(msg)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            msg = f"AnthropicBackend: max_tokens={max_tokens!r} must be an int > 0"
            raise InvalidArgumentError(msg)
        super().__init__(
            model,
            api_key=key,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            timeout=timeout,
            max_retries=max_retries,
            model_options={"max_tokens": max_tokens, **dict(model_options or {})},
        )

    async def call(
        self,
        sdk: Any,
        messages: Sequence[Component],
        options: dict[str, Any],
        tools: Sequence[Tool],
    ) -> Any:
        """Make one Messages API request, the system prompt sent apart."""
        text, history = to_anthropic(messages)
        definitions = [definition.to_anthropic() for definition in tools]
        system, payload, definitions = place_breakpoints(
            self.cache_breakpoints, text, history, definitions
        )
        if definitions:
            options["tools"] = definitions
        if system is not None:
            options["system"] = system
        async with sdk.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self._timeout,
            max_retries=self._max_retries,
        ) as client:
            create = client.messages.create
            return await create(
                model=self.model, messages=payload, **sdk_arguments(create, options)
            )

    def parse(self, response: Any) -> ModelOutputThunk:
        """Return the answer: text blocks joined, tool_use blocks as calls, usage."""
        return _parse(response)


def _parse(response: Any) -> ModelOutputThunk:
    content = getattr(response, "content", None)
    if content is None:
        msg = f"Anthropic: the response has no content: {str(response)[:200]}"
        raise MalformedResponseError(msg)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            calls.append(
                ToolCall(block.id, block.name, json.dumps(block.input, ensure_ascii=False))
            )
    usage = None
    if getattr(response, "usage", None) is not None:
        read = getattr(response.usage, "cache_read_input_tokens", None) or 0
        written = getattr(response.usage, "cache_creation_input_tokens", None) or 0
        usage = Usage(
            prompt_tokens=(response.usage.input_tokens or 0) + read + written,
            completion_tokens=response.usage.output_tokens or 0,
            cache_read_tokens=read,
            cache_write_tokens=written,
        )
    value = "\n\n".join(texts) if texts else None
    return ModelOutputThunk(value, tool_calls=calls, usage=usage)
