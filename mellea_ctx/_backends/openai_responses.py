"""``OpenAIResponsesBackend``: the OpenAI Responses API through the official ``openai`` SDK.

Stateless by default, as an agent that keeps its own context must be:
every request sends the whole history as input items with ``store=False``,
and asks for ``include=["reasoning.encrypted_content"]`` so that each
reasoning item comes back encrypted, is kept (verbatim, in a
:class:`~mellea_ctx._core.parts.ThinkingPart` of the step it belongs to) and
is sent back with the calls it preceded, which reasoning models require.

A class of its own rather than ``OpenAIBackend(api="responses")``: the two
APIs share the SDK, its settings and the error boundary (``OpenAISDKBackend``), but not the
request (``input`` items, ``instructions``, flat tool definitions, ``store``,
``include``) nor the answer (output items, ``input_tokens`` usage), so one
class per wire protocol keeps each one small and its options honest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._core.calls import Usage
from .._core.components import Component, ModelOutputThunk
from .._core.exceptions import InvalidContextError, MalformedResponseError
from .._core.tools import Tool
from .._formats.responses import from_responses, to_responses
from .openai import OpenAISDKBackend, cached_tokens

#: What every request carries unless ``model_options`` says otherwise.
STATELESS: Mapping[str, Any] = {"store": False, "include": ["reasoning.encrypted_content"]}


def _tool(definition: Tool) -> dict[str, Any]:
    """A Responses API function tool: the Chat Completions definition, flattened."""
    chat = definition.to_openai()
    return {"type": "function", **chat["function"]}


class OpenAIResponsesBackend(OpenAISDKBackend):
    """A backend on OpenAI's Responses API (``client.responses.create``).

    Args:
        model: The model name (``"gpt-5-mini"``).
        api_key: The key; defaults to ``OPENAI_API_KEY``. A local server given
            by ``base_url`` needs none.
        base_url: The API's base URL; defaults to ``OPENAI_BASE_URL`` or OpenAI's.
        timeout: Seconds the SDK waits for one response.
        max_retries: The SDK's own retries (off: the compactors retry).
        model_options: Defaults for every request (``reasoning``,
            ``max_output_tokens``...), over ``store=False`` and
            ``include=["reasoning.encrypted_content"]``; per-call options
            override them.
        context_window: The model's window in tokens, as for
            :class:`~mellea_ctx.OpenAIBackend` (``"server"`` asks a local
            server's ``/props``); by default the model's known window, else
            unknown (``None``).
        reasoning: Whether the model takes ``reasoning_effort`` (the option the
            summarizers send), sent as ``reasoning={"effort": ...}``. ``None``
            guesses from the name as ``OpenAIBackend`` does (o-series, gpt-5,
            gpt-oss); for others the option is dropped.

    Raises:
        InvalidArgumentError: When the SDK is missing, or no key is given for
            OpenAI itself.

    Examples:
        >>> OpenAIResponsesBackend("gpt-5-mini", base_url="http://127.0.0.1:8080/v1")
        OpenAIResponsesBackend(model='gpt-5-mini', base_url='http://127.0.0.1:8080/v1')
    """

    sdk_call = "responses.create"
    default_options = STATELESS

    def send_reasoning_effort(self, options: dict[str, Any], effort: str) -> None:
        """``reasoning={"effort": ...}``; an ``effort`` already in ``reasoning`` is kept."""
        config = dict(options.get("reasoning") or {})
        config.setdefault("effort", effort)
        options["reasoning"] = config

    def request(
        self, messages: Sequence[Component], options: dict[str, Any], tools: Sequence[Tool]
    ) -> dict[str, Any]:
        """The Responses request: the whole history as input items, the tool definitions."""
        request = {"model": self.model, "input": to_responses(messages), **options}
        if tools:
            request["tools"] = [_tool(definition) for definition in tools]
        return request

    def parse(self, response: Any) -> ModelOutputThunk:
        """Return the output items as one model step: reasoning, text, calls, usage."""
        return _parse(response)


def _parse(response: Any) -> ModelOutputThunk:
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        msg = f"OpenAI Responses: the response has no output list: {str(response)[:200]}"
        raise MalformedResponseError(msg)
    items = [
        item.model_dump(mode="json", exclude_none=True) if hasattr(item, "model_dump") else item
        for item in output
    ]
    try:
        steps = from_responses(items)
    except InvalidContextError as exc:
        raise MalformedResponseError(f"OpenAI Responses: {exc}") from exc
    if any(not isinstance(step, ModelOutputThunk) for step in steps):
        msg = f"OpenAI Responses: the output holds items that are not model output: {items!r:.200}"
        raise MalformedResponseError(msg)
    return _one_step(steps, _usage(response))


def _one_step(steps: list[Any], usage: Usage | None) -> ModelOutputThunk:
    """The output's model steps as one, with the response's ``usage``."""
    if len(steps) == 1:
        only = steps[0]
        return ModelOutputThunk(
            parts=only.parts,
            tool_calls=only.tool_calls,
            usage=usage,
            extra=only.extra,
            structured=only.structured,
        )
    # An empty output, or one the reader splits (reasoning after the message): one step.
    parts = [part for step in steps for part in step.parts]
    calls = [call for step in steps for call in step.tool_calls]
    extra = next((step.extra for step in steps if step.extra), None)
    return ModelOutputThunk(parts=parts, tool_calls=calls, usage=usage, extra=extra)


def _usage(response: Any) -> Usage | None:
    raw = getattr(response, "usage", None)
    if raw is None:
        return None
    prompt, completion = raw.input_tokens or 0, raw.output_tokens or 0
    cached = cached_tokens(getattr(raw, "input_tokens_details", None))
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cache_read_tokens=cached)
