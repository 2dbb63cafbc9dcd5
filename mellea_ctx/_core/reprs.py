"""``short_repr``: a value shown in an error message, on one short line, whatever it is.

An error message shows the bad value with ``repr``, but some values cannot be
shown that way: ``repr`` of a list nested 100,000 deep raises
``RecursionError``, and that of an int with more than 4,300 digits raises
``ValueError``. Raising those while building the message would replace the
clear error with an internal one, so every message goes through here.
"""

from __future__ import annotations

__all__ = ["short_repr"]


def short_repr(value: object, limit: int = 80) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters, or a placeholder when it fails.

    Examples:
        >>> short_repr("x" * 100, limit=12)
        "'xxxxxxxx..."
        >>> short_repr(10**5000)
        '<int too large to show>'
    """
    if isinstance(value, (str, bytes)) and len(value) > limit:
        value = value[:limit]  # the repr of a 1 MB string is cut anyway
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deep, or an int too long for str()
        text = f"<{type(value).__name__} too large to show>"
    except Exception:  # a user's object whose __repr__ itself fails
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
