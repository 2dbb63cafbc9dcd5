"""What a command changed: its output compared with its input, in the file's own unit.

The reports of ``compact`` and ``validate --repair`` come from here, not from
what the code meant to do: a unit (an Anthropic turn, an OpenAI message) that
differs is reported, and a file is "unchanged" only when the output equals
the input as JSON.
"""

from __future__ import annotations

import json
from difflib import SequenceMatcher
from typing import Any

import attrs

from .._formats.transcripts import wire_of


def unit_of(fmt: str) -> str:
    """A transcript format's own unit, what its file is a list of: ``"turn"`` for Anthropic."""
    return wire_of(fmt).shape.unit


@attrs.frozen
class Changes:
    """The differences between an input document and an output document."""

    unit: str  # the format's own unit (:func:`unit_of`): "turn" for Anthropic, "item"...
    before: list[Any]
    after: list[Any]
    removed: list[int]  # input positions
    added: list[int]  # output positions
    changed: list[tuple[int, int]]  # (input position, output position)
    equal: bool  # the documents are equal as JSON, envelope and system prompt included

    def plural(self, count: int) -> str:
        """``"1 turn"``, ``"3 turns"``."""
        return f"{count:,} {self.unit}{'' if count == 1 else 's'}"

    def label(self, index: int) -> str:
        return f"{self.unit} {index}"

    def roles(self, positions: list[int], *, output: bool = False) -> str:
        """The roles of the units at ``positions``, counted: ``"2 assistant, 1 user"``."""
        units = self.after if output else self.before
        counts: dict[str, int] = {}
        for index in positions:
            unit = units[index]
            role = unit.get("role", "?") if isinstance(unit, dict) else "?"
            counts[str(role)] = counts.get(str(role), 0) + 1
        return ", ".join(f"{count} {role}" for role, count in sorted(counts.items()))


def units(document: Any, fmt: str) -> list[Any]:
    """The units of a document (a file's JSON value) in ``fmt``: what :func:`unit_of` names.

    A bare array is its own list of units; a request body holds them under
    ``messages`` (OpenAI, Anthropic), ``input`` (Responses: a list, or one
    string, which is one user item) or ``contents`` (Gemini): each format's
    ``units`` says.
    """
    return wire_of(fmt).rules.units(document)


def _key(unit: Any) -> str:
    return json.dumps(unit, sort_keys=True, ensure_ascii=True)


def parse_output(data: bytes, fmt: str) -> Any:
    """The JSON value of output ``data`` (for JSONL, the list of its lines' values)."""
    text = data.decode("utf-8")
    if fmt == "jsonl":
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    return json.loads(text)


def compare(before: Any, after: Any, fmt: str, fresh: frozenset[int] = frozenset()) -> Changes:
    """Return how ``after`` (the output's JSON value) differs from ``before`` (the input's).

    ``fresh`` names output positions that hold new content by design (a
    summary checkpoint): they count as added, never as an input unit changed.

    Examples:
        >>> changes = compare([{"role": "user", "content": "a"}], [], "json")
        >>> changes.removed, changes.equal
        ([0], False)
    """
    old, new = units(before, fmt), units(after, fmt)
    matcher = SequenceMatcher(None, [_key(u) for u in old], [_key(u) for u in new], autojunk=False)
    removed: list[int] = []
    added: list[int] = []
    changed: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "delete":
            removed += range(i1, i2)
        elif tag == "insert":
            added += range(j1, j2)
        elif tag == "replace":
            targets = [j for j in range(j1, j2) if j not in fresh]
            added += [j for j in range(j1, j2) if j in fresh]
            pairs = min(i2 - i1, len(targets))
            changed += [(i1 + k, targets[k]) for k in range(pairs)]
            removed += range(i1 + pairs, i2)
            added += targets[pairs:]
    return Changes(unit_of(fmt), old, new, removed, added, changed, before == after)
