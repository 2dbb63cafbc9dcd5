"""Responses API transcripts as the command line reads, checks and writes them.

A Responses transcript is a JSON array of items (objects with a ``type``,
or a ``message`` without one), or a request body with ``input`` (a list, or
a string). A body's other keys (``model``, ``tools``, ``instructions``...)
are kept and written back around the compacted history, so the output is
the input's format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..._core.components import Component
from ..._core.exceptions import InvalidContextError
from ..files import body_units, named
from . import CALLS, OUTPUTS, _read, to_responses

#: Item types that only the Responses API has (a Chat Completions message has no ``type``).
_ITEM_TYPES: Final = frozenset(
    {"message", "reasoning", "compaction", "item_reference"} | set(CALLS)
) | frozenset(OUTPUTS)


def detect(data: object) -> bool:
    """Whether parsed JSON is a Responses transcript.

    A body has ``input`` and neither ``messages`` (a Chat Completions body)
    nor a ``contents`` list (a Gemini body); an array holds an item of a
    type only the Responses API has.
    """
    if isinstance(data, Mapping):
        return (
            "input" in data
            and "messages" not in data
            and not isinstance(data.get("contents"), list)
        )
    return isinstance(data, list) and any(map(_responses_only, data))


def _responses_only(item: object) -> bool:
    """Whether ``item`` has a type only the Responses API has."""
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type")
    return isinstance(kind, str) and kind in _ITEM_TYPES


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


def read(
    data: object, source: str, text: str | None = None
) -> tuple[list[Component], list[str], dict[str, Any] | None]:
    """Return the components, a location per component, and the body around them (if any)."""
    body = dict(data) if isinstance(data, Mapping) else None
    items = _input(data, source)
    with named(source):
        components, starts = _read(items)
    return components, [f"item {start}" for start in starts], body


def write(
    components: Iterable[Component],
    body: Mapping[str, Any] | None,
    lost: list[str] | None = None,
) -> Any:
    """Return ``components`` as items, inside ``body``'s other keys when there was a body.

    What the items cannot carry goes to ``lost`` (or a warning), as for the writers.
    """
    items = to_responses(components, lost=lost)
    if body is None:
        return items
    if isinstance(body.get("input"), str) and _one_user_text(items):
        return {**body, "input": items[0]["content"]}  # as it came: one user text
    return {**body, "input": items}


def units(document: Any) -> list[Any]:
    """A document's items: a bare array, or a body's ``input`` (one string is one item)."""
    held = document.get("input") if isinstance(document, dict) else None
    return [held] if isinstance(held, str) else body_units(document, "input")


def _one_user_text(items: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``items`` is the one user text a body's string ``input`` stands for."""
    return (
        len(items) == 1
        and set(items[0]) == {"role", "content"}
        and items[0]["role"] == "user"
        and isinstance(items[0]["content"], str)
    )
