"""OpenAI Chat Completions as the registry sees it (:class:`~.registry.FormatRules`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..._core.components import Component
from ..call_rules import repair_calls, scan_openai
from ..content_rules import content_problems, openai_findings
from ..problems import Problem, per_component
from ..registry import Change, FileShape
from . import call_problems, to_openai
from .files import detect as detect
from .files import read as read
from .files import units as units


def write(
    components: Iterable[Component], envelope: Mapping[str, Any] | None, lost: list[str] | None
) -> Any:
    """The messages, inside a request body's other keys when the file was one."""
    messages = to_openai(components, lost=lost)
    return messages if envelope is None else {**envelope, "messages": messages}


def problems(items: Sequence[Component], label: Callable[[int], str]) -> list[Problem]:
    """The tool-call pairing rules of ``validate_openai``, then the content rules."""
    return per_component(
        call_problems(items, label), content_problems(items, openai_findings), label
    )


def repair(items: Sequence[Component]) -> tuple[list[Component], list[Change]]:
    """Results right after their call's message; content where OpenAI requires it."""
    return repair_calls(items, openai_findings, scan_openai)


#: What its files look like to the command line.
SHAPE = FileShape(title="OpenAI", unit="message")
