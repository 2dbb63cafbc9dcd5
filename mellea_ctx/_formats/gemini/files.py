"""Gemini transcripts as the command line reads, checks and writes them.

A Gemini transcript is a request body with ``contents`` (and perhaps
``systemInstruction``), or a bare JSON array of contents. A body's other
keys (``model``, ``tools``, ``generationConfig``...) are kept and written
back around the compacted history, so the output is the input's format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..._core.components import Component
from ..._core.exceptions import InvalidContextError
from ..files import body_units, named
from . import _read, to_gemini


def detect(data: object) -> bool:
    """Whether parsed JSON is a Gemini transcript: a body with a ``contents`` list, or contents."""
    if isinstance(data, Mapping):
        return isinstance(data.get("contents"), list)
    if isinstance(data, list) and data:
        return all(isinstance(c, Mapping) and isinstance(c.get("parts"), list) for c in data)
    return False


def read(
    data: object, source: str, text: str | None = None
) -> tuple[list[Component], list[str], dict[str, Any] | None]:
    """Return the components, a location per component, and the body around them (if any)."""
    body = dict(data) if isinstance(data, Mapping) else None
    contents = body.get("contents") if body is not None else data
    if not isinstance(contents, list):
        msg = f"{source}: a Gemini transcript is a body with a 'contents' list"
        raise InvalidContextError(msg)
    system = body.get("systemInstruction") if body is not None else None
    with named(source):
        components, starts = _read(contents, system)
    if system is not None:  # the system prompt is no content: it has no index
        starts = [-1, *starts[1:]]
    labels = [f"content {s}" if s >= 0 else "systemInstruction" for s in starts]
    return components, labels, body


def write(
    components: Iterable[Component],
    body: Mapping[str, Any] | None,
    lost: list[str] | None = None,
) -> Any:
    """Return ``components`` as contents, inside ``body``'s other keys when there was a body.

    What the contents cannot carry goes to ``lost`` (or a warning), as for the writers.
    """
    written = to_gemini(components, lost=lost)
    if body is None:
        return written["contents"]
    rest = {k: v for k, v in body.items() if k not in ("contents", "systemInstruction")}
    return {**rest, **written}


def units(document: Any) -> list[Any]:
    """A document's contents: a bare array, or a body's ``contents``."""
    return body_units(document, "contents")
