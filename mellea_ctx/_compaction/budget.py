"""Token budgets as counts or as fractions of a model's context window.

A compactor's trigger and target are token counts (``max_tokens=100_000``)
or fractions of a window (``max_tokens=0.8, window="gpt-4o"``): a float in
(0, 1] is a fraction, and ``window`` is a token count or a model name known
to :func:`~mellea_ctx.context_window`. :func:`resolve_budget` turns either
into tokens, once, at construction.
"""

from __future__ import annotations

from .._backends.windows import context_window
from .._core.checks import require_int
from .._core.exceptions import InvalidArgumentError
from .._core.reprs import short_repr

#: A context window: tokens, a model name, or ``None`` (not given).
Window = int | str | None


def resolve_window(owner: str, window: Window) -> int | None:
    """Return ``window`` in tokens (``None`` when not given).

    Raises:
        InvalidArgumentError: For an unknown model name or a count that is not > 0.

    Examples:
        >>> resolve_window("TieredCompactor", "gpt-4o-mini")
        128000
    """
    if window is None:
        return None
    if isinstance(window, str):
        tokens = context_window(window)
        if tokens is None:
            msg = (
                f"{owner}: window={short_repr(window)} is not a model in the table of known "
                "windows; pass the window as a token count instead (window=32_768)"
            )
            raise InvalidArgumentError(msg)
        return tokens
    also = "a model name such as 'gpt-4o'"
    return require_int(owner, "window", window, minimum=1, unit="tokens", also=also)


def resolve_budget(owner: str, name: str, value: object, window: Window) -> int:
    """Return the budget ``value`` in tokens: an int as given, a fraction of ``window``.

    Args:
        owner: The compactor, for messages.
        name: The argument, for messages.
        value: An int > 0 (tokens) or a float in (0, 1] (a fraction of ``window``).
        window: The context window (tokens or a model name), needed for a fraction.

    Raises:
        InvalidArgumentError: For anything else, or a fraction without a window.

    Examples:
        >>> resolve_budget("TieredCompactor", "max_tokens", 0.8, 200_000)
        160000
        >>> resolve_budget("TieredCompactor", "max_tokens", 50_000, None)
        50000
    """
    if isinstance(value, float) and 0.0 < value <= 1.0:
        tokens = resolve_window(owner, window)
        if tokens is None:
            msg = (
                f"{owner}: {name}={value!r} is a fraction of the context window, but no "
                "window was given; pass window=<tokens> or window='<model name>'"
            )
            raise InvalidArgumentError(msg)
        return max(int(tokens * value), 1)
    also = "a float in (0, 1] (a fraction of window)"
    return require_int(owner, name, value, minimum=1, unit="tokens", also=also)
