"""Known context windows and output limits, by model name.

Compactors take budgets as fractions of a model's window ("compact at 80%,
aim at 50%"), so they need the window: :func:`context_window` looks it up in
a small table of the models our docs and examples name, as the providers
document them (OpenAI's model pages, Anthropic's models overview, checked
December 2026). A dated snapshot (``gpt-4o-2024-08-06``,
``claude-haiku-4-5-20251001``) and a routing prefix (``openai/gpt-4o``)
resolve to their family. Anything else returns ``None``: pass the window as
a token count (a local server's ``n_ctx``, say) instead of guessing.

A backend's ``context_window`` (what the summary engine fits its requests
into) is the ``context_window=`` a user passed; otherwise this table's
window for the backend's model; with ``context_window="server"``, what a local
OpenAI-compatible server reports (llama.cpp's ``/props`` gives ``n_ctx``);
otherwise ``None``, unknown.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import NamedTuple

from .._core.checks import require_int
from .._core.exceptions import InvalidArgumentError
from .._core.reprs import short_repr


class ModelLimits(NamedTuple):
    """A model's documented limits, in tokens."""

    #: Input and output together (what the prompt must fit in, with the answer).
    context_window: int
    #: The most the model may generate in one answer.
    max_output: int | None


_LIMITS: dict[str, ModelLimits] = {
    # OpenAI (platform.openai.com/docs/models)
    "gpt-4o": ModelLimits(128_000, 16_384),
    "gpt-4o-2024-05-13": ModelLimits(128_000, 4_096),  # the first snapshot: 4,096 out
    "gpt-4o-mini": ModelLimits(128_000, 16_384),
    "gpt-4.1": ModelLimits(1_047_576, 32_768),
    "gpt-4.1-mini": ModelLimits(1_047_576, 32_768),
    "gpt-4.1-nano": ModelLimits(1_047_576, 32_768),
    "o3": ModelLimits(200_000, 100_000),
    "o4-mini": ModelLimits(200_000, 100_000),
    # Anthropic (platform.claude.com/docs/en/about-claude/models/overview)
    "claude-opus-4-6": ModelLimits(1_000_000, 128_000),
    "claude-sonnet-4-6": ModelLimits(1_000_000, 128_000),
    "claude-sonnet-4-5": ModelLimits(200_000, 64_000),
    "claude-haiku-4-5": ModelLimits(200_000, 64_000),
    # The local model of our tests and benchmarks (its trained window; a
    # server may run it with a smaller n_ctx).
    "qwen2.5-coder-1.5b-instruct": ModelLimits(32_768, None),
}


_SNAPSHOT = re.compile(r"\d{4}-\d{2}-\d{2}|\d{8}|latest")


def model_limits(model: str) -> ModelLimits | None:
    """Return the documented limits of ``model``, or ``None`` when it is not in the table.

    Args:
        model: A model name as sent to the provider.

    Raises:
        InvalidArgumentError: When ``model`` is not a str.

    Examples:
        >>> model_limits("gpt-4o-2024-08-06")
        ModelLimits(context_window=128000, max_output=16384)
        >>> model_limits("my-fine-tune") is None
        True
    """
    if not isinstance(model, str):
        msg = f"model={short_repr(model)} must be a model name (str), such as 'gpt-4o'"
        raise InvalidArgumentError(msg)
    name = model.strip().lower().rsplit("/", 1)[-1]
    found = _LIMITS.get(name)
    if found is not None:
        return found
    # A dated snapshot of a family (or its "-latest" alias).
    families = [
        key
        for key in _LIMITS
        if name.startswith(key + "-") and _SNAPSHOT.fullmatch(name[len(key) + 1 :])
    ]
    if not families:
        return None
    return _LIMITS[max(families, key=len)]


def context_window(model: str) -> int | None:
    """Return ``model``'s context window in tokens, or ``None`` when it is not known.

    Args:
        model: A model name as sent to the provider.

    Raises:
        InvalidArgumentError: When ``model`` is not a str.

    Examples:
        >>> context_window("gpt-4o")
        128000
        >>> context_window("claude-haiku-4-5-20251001")
        200000
    """
    limits = model_limits(model)
    return None if limits is None else limits.context_window


def output_limit(model: str) -> int | None:
    """Return the most tokens ``model`` may generate in one answer, or ``None`` when unknown.

    Examples:
        >>> output_limit("claude-sonnet-4-6")
        128000
    """
    limits = model_limits(model)
    return None if limits is None else limits.max_output


def known_window(model: str) -> int | None:
    """The window a backend defaults to for ``model``: :func:`context_window`, or ``None``.

    Examples:
        >>> known_window("gpt-4o-mini"), known_window("my-local-model")
        (128000, None)
    """
    return context_window(model) if isinstance(model, str) else None


def check_window(owner: str, value: object) -> int | None:
    """Return ``value`` as a context window in tokens, or raise a clear error.

    Examples:
        >>> check_window("ScriptedBackend", 4096)
        4096
    """
    if value is None:
        return None
    fix = "pass the window your model or server has, e.g. 4096"
    also = "None for unknown"
    return require_int(
        owner, "context_window", value, minimum=256, unit="tokens", also=also, fix=fix
    )


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
