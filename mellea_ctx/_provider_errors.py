"""Map a provider SDK's exceptions to ours, at the backend boundary.

The official ``openai`` and ``anthropic`` SDKs share one exception design
(both are generated from the same toolkit): ``APITimeoutError`` under
``APIConnectionError``, ``APIStatusError`` carrying the HTTP response, and
``APIResponseValidationError`` for an answer that does not parse. We map by
those roles and by HTTP status, so the dozens of status subclasses each SDK
defines (and the ones later versions add) land in the right place:

=====================================  =====================================
SDK exception                          ours
=====================================  =====================================
``APITimeoutError``, HTTP 408          :class:`BackendTimeoutError`
``APIConnectionError``                 :class:`BackendConnectionError`
HTTP 429 (``RateLimitError`` ...)      :class:`RateLimitError`, ``retry_after``
HTTP 409, 5xx, 529 (overloaded)        :class:`ServerError` (retryable)
other HTTP 4xx                         :class:`RequestRejectedError`
``APIResponseValidationError``         :class:`MalformedResponseError`
anything else from the SDK             :class:`BackendError`
=====================================  =====================================

The backend raises the result ``from`` the SDK's exception, so the original
stays in ``__cause__``.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

from ._exceptions import (
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    MalformedResponseError,
    RateLimitError,
    RequestRejectedError,
    ServerError,
)

__all__ = ["map_sdk_error", "retry_after_seconds"]


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


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


def map_sdk_error(exc: BaseException, provider: str) -> BackendError:
    """Return our exception for ``exc``, an exception raised by a provider SDK.

    Args:
        exc: The SDK's exception.
        provider: The provider's name, for the message (``"OpenAI"``).
    """
    names = _class_names(exc)
    detail = str(exc) or type(exc).__name__
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = None
    prefix = f"{provider}: {type(exc).__name__}"
    if "APITimeoutError" in names or status == 408:
        return BackendTimeoutError(f"{prefix}: no answer in time ({detail})", status_code=status)
    if "APIConnectionError" in names:
        return BackendConnectionError(f"{prefix}: {detail}")
    if "APIResponseValidationError" in names:
        return MalformedResponseError(f"{prefix}: {detail}", status_code=status)
    if status == 429:
        response = getattr(exc, "response", None)
        wait = retry_after_seconds(getattr(response, "headers", None))
        return RateLimitError(f"{prefix}: {detail}", retry_after=wait)
    if status is not None and (status >= 500 or status == 409):
        return ServerError(f"{prefix}: HTTP {status}: {detail}", status_code=status)
    if status is not None and 400 <= status < 500:
        return RequestRejectedError(f"{prefix}: HTTP {status}: {detail}", status_code=status)
    return BackendError(f"{prefix}: {detail}", status_code=status)
