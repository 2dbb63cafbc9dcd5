"""Anthropic Messages as the registry sees it (:class:`~.registry.FormatRules`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..._core.components import Component
from ..call_rules import repair_calls, scan_anthropic
from ..content_rules import anthropic_findings, content_problems
from ..problems import Problem, per_component
from ..registry import Change, FileShape
from .files import detect as detect
from .files import read as read
from .files import units as units
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


#: What its files look like to the command line.
SHAPE = FileShape(
    title="Anthropic Messages",
    unit="turn",
    grouped=True,
    empty="a JSON array of Messages API turns",
    system="system",
)
