"""Gemini ``contents`` as the registry sees it (:class:`~.registry.FormatRules`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from ..._core.components import Component
from ..call_rules import repair_calls, scan_anthropic
from ..content_rules import anthropic_findings
from ..problems import Problem, from_line
from ..registry import Change, FileShape
from . import _write
from .files import detect as detect
from .files import read as read
from .files import units as units
from .files import write as write
from .rules import contents_problems, system_problems


def problems(items: Sequence[Component], label: Callable[[int], str]) -> list[Problem]:
    """The contents rules, on the body ``to_gemini`` writes, each owned by its component."""
    body, owners, _ = _write(items)
    system = body.get("systemInstruction")
    found = [from_line(0, line, "contents") for line in system_problems(system)] if system else []
    found += [
        from_line(owners[at] if at is not None and at < len(owners) else None, line, "contents")
        for at, line in contents_problems(body["contents"])
    ]
    return found


def repair(items: Sequence[Component]) -> tuple[list[Component], list[Change]]:
    """Responses in the next user turn, as for the Messages API.

    An opening model turn is left as it is: ``to_gemini`` writes a user turn before it.
    """
    return repair_calls(items, anthropic_findings, partial(scan_anthropic, opener=False))


#: What its files look like to the command line.
SHAPE = FileShape(title="Gemini", unit="content", grouped=True, system="systemInstruction")
