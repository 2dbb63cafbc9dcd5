"""The OpenAI Responses API as the registry sees it (:class:`~.registry.FormatRules`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..._core.components import Component
from ..call_rules import repair_calls, scan_openai
from ..content_rules import Finding
from ..problems import Problem, from_line
from ..registry import Change, FileShape
from . import _write
from .files import detect as detect
from .files import read as read
from .files import units as units
from .files import write as write
from .rules import item_problems


def problems(items: Sequence[Component], label: Callable[[int], str]) -> list[Problem]:
    """The item rules, on the items ``to_responses`` writes, each owned by its component."""
    written, owners, _ = _write(items)  # item -> the component it came from
    found = item_problems(written)
    return [
        from_line(owners[at] if at < len(owners) else None, line, "items") for at, line in found
    ]


def repair(items: Sequence[Component]) -> tuple[list[Component], list[Change]]:
    """Outputs paired with calls as in Chat Completions (by call id, right after the call)."""
    return repair_calls(items, _no_findings, scan_openai)


def _no_findings(items: Sequence[Component]) -> list[Finding]:
    """No content rule of Chat's or Anthropic's applies to items: the item rules say it all."""
    return []


#: What its files look like to the command line.
SHAPE = FileShape(title="OpenAI Responses", unit="item")
