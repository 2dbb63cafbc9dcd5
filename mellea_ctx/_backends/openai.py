"""``OpenAIBackend``: Chat Completions through the official ``openai`` SDK.

Works with OpenAI and with any server that speaks the same API: vLLM,
Ollama's ``/v1``, llama.cpp's server, LM Studio. The SDK is an optional
dependency (``pip install '.[openai]'`` in the clone), imported on first use.

What the model sends is kept in the ``ModelOutputThunk``'s parts, in the
order the format reader uses: the ``reasoning_content`` (or ``reasoning``)
string that DeepSeek, vLLM and other compatible servers add becomes a
``ThinkingPart`` (``provider="openai"``), sent back in the same field while
a tool loop continues, as DeepSeek requires; a ``refusal`` becomes a
``RefusalPart``; the text a ``TextPart``. An empty answer (no text, no
refusal, no tool call) is stored as empty text, never as ``content: null``
without tool calls, which the API refuses when it is sent back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from .._core.checks import require_bool
from .._core.components import Component, ModelOutputThunk, ToolCall, Usage
from .._core.exceptions import InvalidArgumentError, MalformedResponseError
from .._core.parts import Part, RefusalPart, TextPart, ThinkingPart
from .._core.tools import Tool
from .._formats.notes import with_notes
from .._formats.openai import to_openai
from .sdk import SDKBackend

#: The host of OpenAI's own API, whose requests carry only what its API defines.
_OPENAI_HOST = "api.openai.com"
# OpenAI's reasoning models, by name (a "provider/" prefix, as vLLM may serve it, is ignored).
_REASONING_MODEL = re.compile(r"o\d|gpt-5|gpt-oss")


def openai_credentials(
    owner: str, api_key: str | None, base_url: str | None
) -> tuple[str, str | None]:
    """The key and base URL an OpenAI-SDK backend uses: as given, else from the environment.

    A local server (a ``base_url``) needs no key; OpenAI itself does.

    Raises:
        InvalidArgumentError: When no key is given or set for OpenAI itself.
    """
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if key is None:
        if base_url is None:
            msg = (
                f"{owner} needs an API key for OpenAI: pass api_key=... or set "
                "OPENAI_API_KEY (a local server given by base_url needs none)"
            )
            raise InvalidArgumentError(msg)
        key = "not-needed"
    return key, base_url


class OpenAISDKBackend(SDKBackend):
    """The base of the backends on the ``openai`` SDK: its settings, key, URL and reasoning models.

    Each subclass names its call (``sdk_call``), builds its request and parses
    its answer; ``default_options`` go under every request's ``model_options``.
    """

    provider = "OpenAI"
    sdk_module = "openai"
    sdk_error = "OpenAIError"
    extra = "openai"
    sdk_client = "AsyncOpenAI"
    #: What every request carries unless ``model_options`` says otherwise.
    default_options: ClassVar[Mapping[str, Any]] = {}

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 0,
        model_options: Mapping[str, Any] | None = None,
        context_window: int | Literal["server"] | None = None,
        reasoning: bool | None = None,
    ) -> None:
        key, base_url = openai_credentials(type(self).__name__, api_key, base_url)
        super().__init__(
            model,
            api_key=key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            model_options={**self.default_options, **dict(model_options or {})},
            context_window=context_window,
            reasoning=reasoning,
        )

    @classmethod
    def model_takes_reasoning_effort(cls, model: str) -> bool:
        """Whether ``model`` is a reasoning model (o1, o3, o4-mini, gpt-5, gpt-oss...).

        Examples:
            >>> OpenAIBackend.model_takes_reasoning_effort("o4-mini")
            True
            >>> OpenAIBackend.model_takes_reasoning_effort("gpt-4o-mini")
            False
        """
        return _REASONING_MODEL.match(model.rsplit("/", 1)[-1].lower()) is not None


class OpenAIBackend(OpenAISDKBackend):
    """A backend on the Chat Completions API of OpenAI or any compatible server.

    A new ``AsyncOpenAI`` client is opened for each call and closed after
    it, so the backend can be used from any event loop, including the
    short-lived ones the blocking bridge makes. The SDK's own retries are off
    by default (``max_retries=0``): the compactors retry retryable errors
    themselves, with a bound, and two layers of retries would multiply.

    Args:
        model: The model name (``"gpt-4o-mini"``, or what your server serves).
        api_key: The key; defaults to ``OPENAI_API_KEY``. A local server given
            by ``base_url`` needs none.
        base_url: The API's base URL (``http://localhost:8000/v1`` for vLLM,
            ``http://localhost:11434/v1`` for Ollama); defaults to
            ``OPENAI_BASE_URL`` or OpenAI's.
        timeout: Seconds the SDK waits for one response.
        max_retries: The SDK's own retries.
        model_options: Defaults for every request (``temperature``,
            ``max_tokens``...); per-call options override them.
        context_window: The model's window in tokens, which the summary
            engine fits its requests into. ``"server"`` reads what a local
            server reports at ``/props`` (llama.cpp's ``n_ctx``), once. By
            default the known window of the models the docs name, else
            unknown (``None``).
        reasoning: Whether the model takes ``reasoning_effort`` (the option the
            summarizers send, ``"low"`` by default). ``None`` guesses from the
            name: o-series, gpt-5 and gpt-oss models do; for others the option
            is dropped. Pass ``True`` for a reasoning model served under
            another name.
        extensions: Whether requests carry the keys only compatible servers
            define (a server's ``reasoning_content``, a streamed call's
            ``index``), as they were read: see :func:`~mellea_ctx.to_openai`.
            ``None`` sends them to any server but OpenAI's own, whose API does
            not define them; pass ``False`` for a compatible server that
            refuses unknown keys.

    Raises:
        InvalidArgumentError: When the SDK is missing, or no key is given for
            OpenAI itself.

    Examples:
        >>> backend = OpenAIBackend("qwen2.5-coder", base_url="http://127.0.0.1:8080/v1")
        >>> backend
        OpenAIBackend(model='qwen2.5-coder', base_url='http://127.0.0.1:8080/v1')
    """

    sdk_call = "chat.completions.create"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 0,
        model_options: Mapping[str, Any] | None = None,
        context_window: int | Literal["server"] | None = None,
        reasoning: bool | None = None,
        extensions: bool | None = None,
    ) -> None:
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            model_options=model_options,
            context_window=context_window,
            reasoning=reasoning,
        )
        if extensions is None:
            extensions = (
                self.base_url is not None and urlsplit(self.base_url).hostname != _OPENAI_HOST
            )
        else:
            none = "(send a compatible server's own keys to any server but OpenAI's)"
            require_bool("OpenAIBackend", "extensions", extensions, none=none)
        self.extensions = extensions

    def send_reasoning_effort(self, options: dict[str, Any], effort: str) -> None:
        """Chat Completions' own ``reasoning_effort`` field."""
        options["reasoning_effort"] = effort

    def request(
        self, messages: Sequence[Component], options: dict[str, Any], tools: Sequence[Tool]
    ) -> dict[str, Any]:
        """The Chat Completions request: the history as messages, the tool definitions."""
        chat = to_openai(messages, extensions=self.extensions)
        request = {"model": self.model, "messages": chat, **options}
        if tools:
            request["tools"] = [definition.to_openai() for definition in tools]
        return request

    def parse(self, response: Any) -> ModelOutputThunk:
        """Return the first choice: reasoning, text, refusal, tool calls and usage."""
        return _parse(response)


def _parse(response: Any) -> ModelOutputThunk:
    choices = getattr(response, "choices", None)
    if not choices:
        msg = f"OpenAI: the response has no choices: {str(response)[:200]}"
        raise MalformedResponseError(msg)
    message = choices[0].message
    calls = _calls(message)
    usage = _usage(response)
    return ModelOutputThunk(
        parts=_parts(message, calls), tool_calls=calls, usage=usage, structured=False
    )


def _calls(message: Any) -> list[ToolCall]:
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:
            continue  # a custom (non-function) tool call: nothing we can replay
        calls.append(ToolCall(call.id, function.name, function.arguments or "{}"))
    return calls


def _usage(response: Any) -> Usage | None:
    usage = response.usage
    if usage is None:
        return None
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        total_tokens=usage.total_tokens or 0,
        cache_read_tokens=cached_tokens(getattr(usage, "prompt_tokens_details", None)),
    )


def _parts(message: Any, calls: list[ToolCall]) -> list[Part]:
    """The answer's parts: a server's reasoning, the text (or the empty answer), a refusal."""
    parts: list[Part] = []
    for key in ("reasoning_content", "reasoning"):
        reasoning = getattr(message, key, None)
        if isinstance(reasoning, str):
            extra = {} if key == "reasoning_content" else with_notes({}, key=key)
            parts.append(ThinkingPart(reasoning, provider="openai", extra=extra))
            break
    content = message.content
    refusal = getattr(message, "refusal", None)
    if isinstance(content, str) and (content or not (calls or refusal)):
        parts.append(TextPart(content))
    elif content is None and not calls and not refusal:
        parts.append(TextPart(""))  # an empty answer: "" is what can be sent back
    if isinstance(refusal, str):
        parts.append(RefusalPart(refusal))
    return parts


def cached_tokens(details: Any) -> int | None:
    """The prompt tokens served from the cache: ``cached_tokens`` of the usage's details
    (Chat Completions' ``prompt_tokens_details``, Responses' ``input_tokens_details``)."""
    cached = getattr(details, "cached_tokens", None)
    return cached if isinstance(cached, int) and not isinstance(cached, bool) else None
