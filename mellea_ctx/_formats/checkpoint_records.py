"""Checkpoint records, flat at any depth: the chain of folded checkpoints as one table.

A checkpoint's span can hold the checkpoint it folded in, whose span holds the
one before, and so on: a session that compacted 5,000 times holds a chain
5,000 deep. Nothing here recurses over that depth, and the record it writes
does not nest with it either (JSON readers and writers recurse over nesting),
so any chain that can be built can be written and read back.

The record of a checkpoint is::

    {"kind": "checkpoint", "summary": ..., "preserved": [...], "replaced_count": n,
     "ledger": [{"kind": ..., "key": ..., "value": ...}, ...], "shown": [key, ...],
     "short": [key, ...], "span": [<record>, {"kind": "ref", "checkpoint": 0}, ...],
     "checkpoints": [{"summary": ..., "preserved": [...], "replaced_count": n,
                      "span": [...]}, ...]}

``checkpoints`` lists every checkpoint reached through spans, each before any
that folds it in (so a ``ref`` always points to an earlier entry, and the
list reads in one pass); a span names one of them as ``{"kind": "ref",
"checkpoint": i}``. The key is left out when there is none. Records written
before this layout, with checkpoint records nested inside spans, are read
too, without recursion.

The records of the span's other components are made and read by the
functions the caller passes in (:mod:`.serialize`), so this module owns only
the walk over the chain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from .._core.checkpoint import Checkpoint
from .._core.components import Component
from .._core.exceptions import InvalidComponentError
from .._core.ledger import Ledger
from .._core.reprs import short_repr

LeafWriter = Callable[[Component], dict[str, Any]]
LeafReader = Callable[[Mapping[str, Any]], Component]


def _folded(component: object) -> TypeGuard[Checkpoint]:
    return type(component) is Checkpoint


def _never(_checkpoint: Checkpoint) -> bool:
    return False


def chain(checkpoint: Checkpoint, known: Callable[[Checkpoint], bool] = _never) -> list[Checkpoint]:
    """Every checkpoint reachable from ``checkpoint``'s span, each after those it folds in.

    ``checkpoint`` itself comes last; the walk does not go into (nor list) a
    checkpoint for which ``known`` is true. An explicit stack, not recursion.

    Examples:
        >>> first = Checkpoint("Early work.")
        >>> [c.summary for c in chain(Checkpoint("Later.", span=[first]))]
        ['Early work.', 'Later.']
    """
    order: list[Checkpoint] = []
    placed: set[int] = set()
    stack: list[tuple[Checkpoint, bool]] = [(checkpoint, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in placed:
            continue
        if expanded:
            placed.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend(
            (c, False)
            for c in reversed(node.span)
            if _folded(c) and id(c) not in placed and not known(c)
        )
    return order


def _entry(checkpoint: Checkpoint, index: Mapping[int, int], leaf: LeafWriter) -> dict[str, Any]:
    span = [
        {"kind": "ref", "checkpoint": index[id(c)]} if _folded(c) else leaf(c)
        for c in checkpoint.span
    ]
    entry: dict[str, Any] = {
        "summary": checkpoint.summary,
        "preserved": list(checkpoint.preserved),
        "replaced_count": checkpoint.replaced_count,
        "span": span,
    }
    if checkpoint.ledger:
        entry["ledger"] = checkpoint.ledger.to_records()
    if checkpoint.shown is not None:
        entry["shown"] = list(checkpoint.shown)
    if checkpoint.short:
        entry["short"] = list(checkpoint.short)
    return entry


def checkpoint_to_record(checkpoint: Checkpoint, leaf: LeafWriter) -> dict[str, Any]:
    """Return the flat record of ``checkpoint``, its folded chain as a table.

    Args:
        checkpoint: The checkpoint to write.
        leaf: Writes the record of any span component that is not a checkpoint.

    Returns:
        A JSON-able record whose nesting does not grow with the chain's depth.

    Examples:
        >>> first = Checkpoint("Early work.", span=())
        >>> record = checkpoint_to_record(Checkpoint("Later.", span=[first]), leaf=dict)
        >>> record["span"], [entry["summary"] for entry in record["checkpoints"]]
        ([{'kind': 'ref', 'checkpoint': 0}], ['Early work.'])
    """
    order = chain(checkpoint)
    index: dict[int, int] = {}
    entries: list[dict[str, Any]] = []
    for node in order:
        entries.append(_entry(node, index, leaf))
        index[id(node)] = len(entries) - 1
    record: dict[str, Any] = {"kind": "checkpoint", **entries.pop()}
    if entries:
        record["checkpoints"] = entries
    return record


def _damaged(what: str, value: object) -> InvalidComponentError:
    return InvalidComponentError(
        f"checkpoint record is damaged: {what} {short_repr(value, 120)}; "
        "it was not written by mellea-ctx, or was changed since"
    )


def _span_of(record: Mapping[str, Any]) -> Sequence[Any]:
    span = record.get("span", ())
    if not isinstance(span, (list, tuple)):
        raise _damaged("span must be a list, got", span)
    return span


def _is_nested(item: object) -> bool:
    return isinstance(item, Mapping) and item.get("kind") == "checkpoint"


def _build(
    record: Mapping[str, Any],
    table: Sequence[Checkpoint],
    nested: Mapping[int, Checkpoint],
    leaf: LeafReader,
) -> Checkpoint:
    span: list[Component] = []
    for item in _span_of(record):
        if _is_nested(item):
            span.append(nested[id(item)])
        elif isinstance(item, Mapping) and item.get("kind") == "ref":
            at = item.get("checkpoint")
            if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < len(table):
                raise _damaged("ref points to no earlier checkpoint:", item)
            span.append(table[at])
        else:
            span.append(leaf(item))
    try:
        ledger = Ledger.from_records(record.get("ledger", []))
    except ValueError as exc:
        raise _damaged("ledger is not a list of entries:", record.get("ledger")) from exc
    return Checkpoint(
        record["summary"],
        preserved=record.get("preserved", ()),
        replaced_count=record.get("replaced_count", 0),
        span=span,
        ledger=ledger,
        shown=record.get("shown"),
        short=record.get("short", ()),
    )


def _read(record: Mapping[str, Any], table: Sequence[Checkpoint], leaf: LeafReader) -> Checkpoint:
    """Read one entry; checkpoint records nested in its span (the older layout) too."""
    built: dict[int, Checkpoint] = {}
    keep: list[Mapping[str, Any]] = []  # holds the records whose ids key ``built``
    stack: list[tuple[Mapping[str, Any], bool]] = [(record, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            built[id(node)] = _build(node, table, built, leaf)
            keep.append(node)
            continue
        stack.append((node, True))
        stack.extend((item, False) for item in _span_of(node) if _is_nested(item))
    return built[id(record)]


def checkpoint_from_record(record: Mapping[str, Any], leaf: LeafReader) -> Checkpoint:
    """Return the checkpoint a record made by :func:`checkpoint_to_record` describes.

    Args:
        record: The record (older nested records are accepted too).
        leaf: Reads the record of any span component that is not a checkpoint.

    Returns:
        The checkpoint, with the chain it folded in rebuilt.

    Raises:
        InvalidComponentError: For a damaged record or table.
        KeyError: For a record or entry without a summary (the caller words it).

    Examples:
        >>> record = {"kind": "checkpoint", "summary": "Later.",
        ...           "span": [{"kind": "ref", "checkpoint": 0}],
        ...           "checkpoints": [{"summary": "Early work.", "span": []}]}
        >>> checkpoint_from_record(record, leaf=dict).span[0].summary
        'Early work.'
    """
    entries = record.get("checkpoints", ())
    if not isinstance(entries, (list, tuple)):
        raise _damaged("checkpoints must be a list, got", entries)
    table: list[Checkpoint] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            raise _damaged("checkpoints entry must be an object, got", entry)
        table.append(_read(entry, table, leaf))
    return _read(record, table, leaf)
