"""Where in a transcript file each message starts, so an error can name its line.

A JSON array of messages is read with ``json.loads``, which forgets
positions; :func:`array_labels` scans the text once more for the line each
element starts on, and labels an element ``message 3 (line 12)``.
"""

from __future__ import annotations

import json
import re
from typing import Final

_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, at: int) -> int:
    """Return the index of the first character at or after ``at`` that is not JSON whitespace."""
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _element_lines(text: str) -> list[int] | None:
    """Return the line (from 1) where each element of a top-level JSON array starts.

    ``None`` when ``text`` is not a well-formed JSON array.
    """
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    if text[at : at + 1] != "[":
        return None
    at = _skip_space(text, at + 1)
    lines: list[int] = []
    line, counted = 1, 0
    if text[at : at + 1] == "]":
        return lines
    try:
        while True:
            line += text.count("\n", counted, at)
            counted = at
            lines.append(line)
            _, end = decoder.raw_decode(text, at)
            at = _skip_space(text, end)
            if text[at : at + 1] != ",":
                return lines
            at = _skip_space(text, at + 1)
    except ValueError:
        return None


def array_labels(text: str | None, count: int) -> list[str]:
    """Return ``"message N"`` per element, with its line when ``text`` is given."""
    lines = _element_lines(text) if text is not None else None
    if lines is None or len(lines) != count:
        return [f"message {index}" for index in range(count)]
    return [f"message {index} (line {line})" for index, line in enumerate(lines)]
