"""Map a provider SDK's exceptions to ours, at the backend boundary.

The official ``openai`` and ``anthropic`` SDKs share one exception design
(both are generated from the same toolkit): ``APITimeoutError`` under
``APIConnectionError``, ``APIStatusError`` carrying the HTTP response, and
``APIResponseValidationError`` for an answer that does not parse. We map by
those roles and by HTTP status, so the dozens of status subclasses each SDK
defines (and the ones later versions add) land in the right place:

======================================  =====================================
SDK exception                           ours
======================================  =====================================
``APITimeoutError``, HTTP 408           :class:`BackendTimeoutError`
``APIConnectionError``                  :class:`BackendConnectionError`
HTTP 429 (``RateLimitError`` ...)       :class:`RateLimitError`, ``retry_after``
HTTP 409, 5xx, 529 (overloaded)         :class:`ServerError` (retryable)
HTTP 4xx saying the prompt is too long  :class:`ContextOverflowError`
other HTTP 4xx                          :class:`RequestRejectedError`
``APIResponseValidationError``          :class:`MalformedResponseError`
anything else from the SDK              :class:`BackendError`
======================================  =====================================

Two failures escape the SDKs' own hierarchy, and are mapped too: a 200
answer whose body is not JSON raises a bare ``json.JSONDecodeError``
(:class:`MalformedResponseError`), and some transport failures surface as
their HTTP client's own exceptions (``TimeoutException`` as
:class:`BackendTimeoutError`, any other ``TransportError`` as
:class:`BackendConnectionError`), from ``httpx`` or from ``httpx2`` (which recent
releases of both SDKs use instead). Every class is the SDK's
(or its client's) own, never matched by name.

:func:`mapped_errors` is the one place this happens: a backend builds its
request first and wraps only the SDK call in it (as httpx wraps httpcore in
``map_httpcore_exceptions``), so a caller's mistake (a bad component, a bad
option) is raised as it is, never reported as a provider failure.

A context overflow is told apart from other rejections by the provider's
own words, since each says it differently (:func:`overflow_sizes`):
OpenAI's ``code`` ``context_length_exceeded`` ("This model's maximum context
length is N tokens. However, your messages resulted in M tokens"), vLLM's
"maximum context length is N tokens. However, you requested M tokens",
Anthropic's "prompt is too long: M tokens > N maximum" and "input length and
``max_tokens`` exceed context limit: M + K > N" (the prompt M against the
N - K tokens the answer leaves it), vLLM's "The prompt (total length M) is
too long to fit into the model (context length N)", and llama.cpp's
``exceed_context_size_error`` ("request (M tokens) exceeds the available
context size (N tokens)", with ``n_prompt_tokens`` and ``n_ctx``).

The backend raises the result ``from`` the SDK's exception, so the original
stays in ``__cause__``.
"""

from __future__ import annotations

import contextlib
import email.utils
import importlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

from .._core.exceptions import (
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    ContextOverflowError,
    MalformedResponseError,
    RateLimitError,
    RequestRejectedError,
    ServerError,
)

# The status classes both SDKs define, for an instance that carries no
# ``status_code`` of its own (the first class it is an instance of wins,
# so the most derived ones come first).
#: The HTTP clients the SDKs are built on: httpx, and its successor httpx2 (the same classes).
_HTTP_CLIENTS = ("httpx", "httpx2")

_STATUS_CLASSES = (
    ("OverloadedError", 529),
    ("ServiceUnavailableError", 503),
    ("InternalServerError", 500),
    ("RateLimitError", 429),
    ("UnprocessableEntityError", 422),
    ("ConflictError", 409),
    ("RequestTimeoutError", 408),
    ("NotFoundError", 404),
    ("PermissionDeniedError", 403),
    ("AuthenticationError", 401),
    ("BadRequestError", 400),
)


def _sdk_of(exc: BaseException) -> ModuleType | None:
    """The SDK package that defines ``exc``'s class (``openai``, ``anthropic``), if importable."""
    package = type(exc).__module__.partition(".")[0]
    try:
        return importlib.import_module(package)
    except ImportError:
        return None


def _is(exc: BaseException, sdk: ModuleType | None, name: str) -> bool:
    cls = getattr(sdk, name, None)
    return isinstance(cls, type) and isinstance(exc, cls)


def _status(exc: BaseException, sdk: ModuleType | None) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return status
    for name, code in _STATUS_CLASSES:
        if _is(exc, sdk, name):
            return code
    return None


def _detail(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # some SDK errors cannot render themselves half-built
        return type(exc).__name__


def retry_after_seconds(headers: Any) -> float | None:
    """Return the wait a response asks for (``retry-after-ms`` or ``retry-after``), if any."""
    if headers is None:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(float(milliseconds) / 1000, 0.0)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(parsed.timestamp() - time.time(), 0.0)


# (pattern, which group is the request's size, which the limit)
_OVERFLOW_WORDINGS = (
    # OpenAI and vLLM
    (
        re.compile(
            r"maximum context length is (\d+) tokens.*?(?:resulted in|requested|has) (\d+)", re.S
        ),
        2,
        1,
    ),
    # Anthropic
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum"), 1, 2),
    # vLLM, when the prompt alone is longer than the window
    (
        re.compile(
            r"prompt \(total length (\d+)\) is too long to fit into the model "
            r"\(context length (\d+)\)"
        ),
        1,
        2,
    ),
    # llama.cpp (newer servers)
    (
        re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"),
        1,
        2,
    ),
)
# Anthropic, when the prompt plus the answer's max_tokens exceed the window:
# the prompt is held against the room the answer leaves it.
_INPUT_AND_ANSWER = re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)")
_OVERFLOW_PHRASES = (
    "exceed context limit",
    "is too long to fit into the model",
    "maximum context length",
    "prompt is too long",
    "exceeds the available context size",
    "context_length_exceeded",
    "input exceeds the context window",
)
_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error"}


def _error_fields(exc: BaseException) -> Mapping[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            return inner
    return {}


def overflow_sizes(exc: BaseException, detail: str) -> tuple[int | None, int | None] | None:
    """Return ``(prompt_tokens, limit_tokens)`` when ``exc`` says the prompt is too long.

    ``None`` when it is some other error; either size is ``None`` when the
    provider did not state it.

    Examples:
        >>> overflow_sizes(ValueError(), "prompt is too long: 208656 tokens > 200000 maximum")
        (208656, 200000)
        >>> overflow_sizes(ValueError(), "Invalid request.") is None
        True
    """
    fields = _error_fields(exc)
    codes = {str(fields.get("code")), str(fields.get("type")), str(getattr(exc, "code", None))}
    message = str(fields.get("message") or "")
    text = f"{message}\n{detail}"
    lowered = text.lower()
    if not (codes & _OVERFLOW_CODES or any(phrase in lowered for phrase in _OVERFLOW_PHRASES)):
        return None
    prompt, limit = fields.get("n_prompt_tokens"), fields.get("n_ctx")
    if isinstance(prompt, int) and isinstance(limit, int):
        return prompt, limit
    found = _INPUT_AND_ANSWER.search(text)
    if found:
        prompt_size, answer, window = (int(group) for group in found.groups())
        return prompt_size, window - answer
    for pattern, used, allowed in _OVERFLOW_WORDINGS:
        found = pattern.search(text)
        if found:
            return int(found.group(used)), int(found.group(allowed))
    return None, None


def map_sdk_error(exc: BaseException, provider: str) -> BackendError:
    """Return our exception for ``exc``, an exception raised by a provider SDK.

    Args:
        exc: The SDK's exception.
        provider: The provider's name, for the message (``"OpenAI"``).
    """
    sdk = _sdk_of(exc)
    detail = _detail(exc)
    status = _status(exc, sdk)
    prefix = f"{provider}: {type(exc).__name__}"
    if _is(exc, sdk, "APITimeoutError") or status == 408:
        return BackendTimeoutError(f"{prefix}: no answer in time ({detail})", status_code=status)
    if _is(exc, sdk, "APIConnectionError"):
        return BackendConnectionError(f"{prefix}: {detail}")
    if _is(exc, sdk, "APIResponseValidationError"):
        return MalformedResponseError(f"{prefix}: {detail}", status_code=status)
    if status == 429:
        response = getattr(exc, "response", None)
        wait = retry_after_seconds(getattr(response, "headers", None))
        return RateLimitError(f"{prefix}: {detail}", retry_after=wait)
    if status is not None and (status >= 500 or status == 409):
        return ServerError(f"{prefix}: HTTP {status}: {detail}", status_code=status)
    if status is not None and 400 <= status < 500:
        sizes = overflow_sizes(exc, detail)
        if sizes is not None:
            return ContextOverflowError(
                f"{prefix}: HTTP {status}: the request is longer than the model's context "
                f"window ({detail})",
                status_code=status,
                prompt_tokens=sizes[0],
                limit_tokens=sizes[1],
            )
        return RequestRejectedError(f"{prefix}: HTTP {status}: {detail}", status_code=status)
    return BackendError(f"{prefix}: {detail}", status_code=status)


def map_provider_error(
    exc: BaseException, provider: str, sdk_error: type[BaseException]
) -> BackendError | None:
    """Return our exception for anything a provider call raised, or ``None`` to let it go.

    ``sdk_error`` is the SDK's root exception class. What is neither the
    SDK's, nor a body that is not JSON, nor an httpx transport failure (a
    ``TypeError`` from a bad option, say) is a bug in the caller's code and
    is not mapped.
    """
    if isinstance(exc, sdk_error):
        return map_sdk_error(exc, provider)
    if isinstance(exc, json.JSONDecodeError):
        return MalformedResponseError(f"{provider}: the answer is not valid JSON ({_detail(exc)})")
    for name in _HTTP_CLIENTS:
        # An instance of a module's class means the module is loaded: nothing to import, and
        # no error when a client is not installed at all.
        client = sys.modules.get(name)
        if client is None:
            continue
        if isinstance(exc, client.TimeoutException):
            detail = _detail(exc)
            return BackendTimeoutError(
                f"{provider}: {type(exc).__name__}: no answer in time ({detail})"
            )
        if isinstance(exc, client.TransportError):
            return BackendConnectionError(f"{provider}: {type(exc).__name__}: {_detail(exc)}")
    return None


@contextlib.contextmanager
def mapped_errors(
    provider: str,
    sdk_error: type[BaseException],
    on_failure: Callable[[BaseException], None] | None = None,
) -> Iterator[None]:
    """Map what the SDK call inside the block raises to ours (``raise ... from exc``).

    Wrap only the call to the SDK: the request is built before it, so that a
    caller's mistake is not reported as a provider failure. ``on_failure``
    sees every failure (the mapped exception, or the original when it is not
    the provider's), for telemetry.

    Examples:
        >>> import openai
        >>> nobody = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9", max_retries=0)
        >>> try:
        ...     with mapped_errors("OpenAI", openai.OpenAIError):
        ...         nobody.models.list()  # port 9 refuses the connection
        ... except BackendConnectionError as exc:
        ...     print(exc)
        OpenAI: APIConnectionError: Connection error.
    """
    try:
        yield
    except Exception as exc:
        mapped = map_provider_error(exc, provider, sdk_error)
        if on_failure is not None:
            on_failure(exc if mapped is None else mapped)
        if mapped is None:
            raise
        raise mapped from exc
