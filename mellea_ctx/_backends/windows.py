"""How many tokens a summarizer reads: known defaults and a local server's own report.

A backend's ``context_window`` is what the summary engine fits the span into.
It is the ``context_window=`` a user passed; otherwise a known default for the
models the docs name (looked up by name prefix); otherwise, for a local
OpenAI-compatible server, what the server reports (llama.cpp's ``/props``
gives ``n_ctx``); otherwise ``None``, meaning unknown.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from .._core.exceptions import InvalidArgumentError
from .._core.reprs import short_repr

__all__ = ["check_window", "known_window", "server_window"]

# Longest prefix first wins; the windows the providers document.
_KNOWN: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("claude-", 200_000),
    ("qwen2.5-coder", 32_768),
)


def check_window(owner: str, value: object) -> int | None:
    """Return ``value`` as a context window in tokens, or raise a clear error.

    Examples:
        >>> check_window("ScriptedBackend", 4096)
        4096
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 256:
        msg = (
            f"{owner}: context_window={short_repr(value)} must be an int of tokens >= 256 "
            "(or None for unknown); pass the window your model or server has, e.g. 4096"
        )
        raise InvalidArgumentError(msg)
    return value


def known_window(model: str) -> int | None:
    """Return the documented context window of ``model``, or ``None`` if not known.

    Examples:
        >>> known_window("gpt-4o-mini"), known_window("claude-sonnet-4-6"), known_window("x")
        (128000, 200000, None)
    """
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, window in sorted(_KNOWN, key=lambda item: -len(item[0])):
        if name.startswith(prefix):
            return window
    return None


def server_window(base_url: str, *, timeout: float = 2.0) -> int | None:
    """Return the context window a llama.cpp-style server reports at ``/props``, or ``None``.

    ``base_url`` is the OpenAI-compatible root (``http://127.0.0.1:8080/v1``);
    ``/props`` is read next to it. Any failure (no such route, not JSON, no
    ``n_ctx``) means the server does not say, and gives ``None``.
    """
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=timeout) as response:
            data = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    for holder in (data, settings if isinstance(settings, dict) else {}):
        n_ctx = holder.get("n_ctx")
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
            return n_ctx
    return None
