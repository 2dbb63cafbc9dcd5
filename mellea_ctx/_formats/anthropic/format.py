"""Anthropic Messages as the registry sees it (:class:`~.registry.WireFormat`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..._core.components import Component
from ..call_rules import repair_calls, scan_anthropic
from ..content_rules import anthropic_findings, content_problems
from ..problems import Problem, per_component
from ..registry import Change, WireFormat
from .files import looks_anthropic, parse_anthropic, units
from .write import anthropic_document


def write(
    components: Iterable[Component], envelope: Mapping[str, Any] | None, lost: list[str] | None
) -> Any:
    """The turns (with ``system``), inside a request body's other keys when the file was one."""
    body = None if envelope is None else dict(envelope)
    return anthropic_document(components, envelope=body, lost=lost)


def problems(items: Sequence[Component], label: Callable[[int], str]) -> list[Problem]:
    """The turn and tool-call rules of ``validate_anthropic``, then the content rules."""
    return per_component(
        scan_anthropic(items).problems, content_problems(items, anthropic_findings), label
    )


def repair(items: Sequence[Component]) -> tuple[list[Component], list[Change]]:
    """Results in the next user turn, a user turn first; what the Messages API rejects fixed."""
    return repair_calls(items, anthropic_findings, scan_anthropic)


FORMAT = WireFormat(
    name="anthropic",
    title="Anthropic Messages",
    unit="turn",
    grouped=True,
    precedence=1,
    detect=looks_anthropic,
    read=parse_anthropic,
    write=write,
    units=units,
    problems=problems,
    repair=repair,
    empty="a JSON array of Messages API turns",
    system="system",
)
