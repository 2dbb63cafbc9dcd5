"""Responses API and Gemini transcripts as the command line reads, checks and writes them.

A Responses transcript is a JSON array of items (objects with a ``type``,
or a ``message`` without one), or a request body with ``input`` (a list, or
a string); a Gemini transcript is a body with ``contents`` (and perhaps
``systemInstruction``). A body's other keys (``model``, ``tools``,
``instructions``, ``generationConfig``...) are kept and written back
around the compacted history, so the output is the input's format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from .._core.components import Component
from .._core.exceptions import InvalidContextError
from . import gemini, responses

__all__ = ["WireFormat", "detect", "parse", "wire_document"]

WireFormat = Literal["responses", "gemini"]

#: Item types that only the Responses API has (a Chat Completions message has no ``type``).
_ITEM_TYPES: Final = frozenset(
    {"message", "reasoning", "compaction", "item_reference"} | set(responses.CALLS)
) | frozenset(responses.OUTPUTS)


def detect(data: object) -> WireFormat | None:
    """Return the wire format parsed JSON is in, when it is one of these two, else ``None``."""
    if isinstance(data, Mapping):
        if isinstance(data.get("contents"), list):
            return "gemini"
        if "input" in data and "messages" not in data:
            return "responses"
        return None
    if isinstance(data, list) and data:
        typed = [item for item in data if isinstance(item, Mapping) and "type" in item]
        if any(isinstance(item["type"], str) and item["type"] in _ITEM_TYPES for item in typed):
            return "responses"
        if all(isinstance(c, Mapping) and isinstance(c.get("parts"), list) for c in data):
            return "gemini"
    return None


def _input(data: object, source: str) -> list[Any]:
    items = data.get("input") if isinstance(data, Mapping) else data
    if isinstance(items, str):  # a body may give its input as one user text
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        msg = (
            f"{source}: a Responses transcript is a JSON array of items or a body whose "
            "'input' is a list of items (or a string)"
        )
        raise InvalidContextError(msg)
    return items


def parse(
    data: object, fmt: WireFormat, source: str
) -> tuple[list[Component], list[str], dict[str, Any] | None]:
    """Return the components, a location per component, and the body around them (if any)."""
    body = dict(data) if isinstance(data, Mapping) else None
    try:
        if fmt == "responses":
            components, starts = responses._read(_input(data, source))
            labels = [f"item {start}" for start in starts]
        else:
            contents = body.get("contents") if body is not None else data
            if not isinstance(contents, list):
                msg = f"{source}: a Gemini transcript is a body with a 'contents' list"
                raise InvalidContextError(msg)
            system = body.get("systemInstruction") if body is not None else None
            components, starts = gemini._read(contents, system)
            if system is not None:  # the system prompt is no content: it has no index
                starts = [-1, *starts[1:]]
            labels = [f"content {s}" if s >= 0 else "systemInstruction" for s in starts]
    except InvalidContextError as exc:
        raise InvalidContextError(f"{source} {exc}") from exc
    return components, labels, body


def wire_document(
    components: Iterable[Component],
    fmt: WireFormat,
    body: Mapping[str, Any] | None,
    *,
    lost: list[str] | None = None,
) -> Any:
    """Return ``components`` in ``fmt``, inside ``body``'s other keys when there was a body.

    What ``fmt`` cannot carry goes to ``lost`` (or a warning), as for the writers.
    """
    if fmt == "responses":
        items = responses.to_responses(components, lost=lost)
        if body is None:
            return items
        if isinstance(body.get("input"), str) and _one_user_text(items):
            return {**body, "input": items[0]["content"]}  # as it came: one user text
        return {**body, "input": items}
    written = gemini.to_gemini(components, lost=lost)
    if body is None:
        return written["contents"]
    rest = {k: v for k, v in body.items() if k not in ("contents", "systemInstruction")}
    return {**rest, **written}


def _one_user_text(items: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``items`` is the one user text a body's string ``input`` stands for."""
    return (
        len(items) == 1
        and set(items[0]) == {"role", "content"}
        and items[0]["role"] == "user"
        and isinstance(items[0]["content"], str)
    )
