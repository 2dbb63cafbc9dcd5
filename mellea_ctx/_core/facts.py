"""Exact details a summary must not lose, and the check that it did not.

Summaries paraphrase, and a paraphrase loses exactly what an agent needs
later: the file path, the order id, the command that worked, the limit the
user set. Before summarizing we extract such details from the span being
replaced; afterwards we look each one up, verbatim, in the summary, and the
checkpoint carries the ones it lost in a short appendix.

Extraction is by pattern, deliberately conservative, and bounded: a tool
result that lists ten thousand files must not turn into a ten-thousand-line
appendix. Details from what the user said come first, then what the agent
said or ran, then tool output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Literal

import attrs

from .checkpoint import Checkpoint
from .components import Component

__all__ = ["Fact", "FactKind", "extract_facts", "missing_facts"]

FactKind = Literal["detail", "constraint", "command", "path", "url", "id", "quantity"]

# Lower sorts first: details an earlier checkpoint already carried, then what
# the user demanded.
_KIND_ORDER: dict[str, int] = {
    "detail": -1,
    "constraint": 0,
    "command": 1,
    "path": 2,
    "id": 3,
    "url": 4,
    "quantity": 5,
}

_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+")
_PATH = re.compile(
    r"(?<![\w:/.])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+"
    r"|\b[\w-]+\.(?:py|pyi|js|ts|tsx|jsx|json|jsonl|toml|yaml|yml|md|rst|txt|cfg|ini|lock|"
    r"rs|go|c|h|cc|cpp|hpp|java|kt|rb|php|sh|bash|sql|html|css|csv|xml|ipynb|env)\b"
)
_ID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # UUID
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"  # hashes, short shas
    r"|\b[A-Z][A-Z0-9]+-\d+\b"  # PROJ-123
    r"|(?<![\w&])#\d{2,}\b"  # issue #1234
    r"|\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,}\b"  # booking codes like ZFA04Y
    r"|\b[a-z]+_(?=[A-Za-z0-9_]*\d)[A-Za-z0-9_]{4,}\b"  # call_00_x, credit_card_29297
)
_QUANTITY = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?)"
    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hrs|hours|days|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|TiB|bytes|tokens|px|USD|EUR|GBP|%)(?![\w])"
)
_INLINE_CODE = re.compile(r"`([^`\n]{3,200})`")
_SHELL_LINE = re.compile(r"^\s*\$ (.{2,200})$", re.M)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|do not|don't|should not|shouldn't|only|required|make sure|"
    r"avoid|at most|at least|no more than|no later than|without)\b",
    re.I,
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_COMMAND_KEYS = ("command", "cmd", "script", "query")


@attrs.define(frozen=True, slots=True)
class Fact:
    """One exact detail found in a span of conversation.

    Attributes:
        kind: What sort of detail it is.
        text: The detail exactly as it appeared.
    """

    kind: FactKind
    text: str


def _source_rank(component: Component) -> int:
    if component.tool_call_id is not None:
        return 2  # tool output: plentiful, least curated
    return 0 if component.role == "user" else 1


def _candidates(component: Component) -> Iterable[tuple[FactKind, str]]:
    text = component.content
    if isinstance(component, Checkpoint):
        # A summary is not the user's own words: take the details it carried,
        # and exact details from its text, but no "constraints" from it.
        for detail in component.preserved:
            yield "detail", detail
        text = component.summary
    elif component.role == "user" and component.tool_call_id is None:
        for sentence in _SENTENCE_BREAK.split(text):
            sentence = sentence.strip()
            if 8 <= len(sentence) <= 300 and _CONSTRAINT.search(sentence):
                yield "constraint", sentence
    for call in component.tool_calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            for key in _COMMAND_KEYS:
                value = arguments.get(key)
                if isinstance(value, str) and 2 <= len(value) <= 300:
                    yield "command", value.strip()
        text = f"{text}\n{call.arguments}"
    for match in _INLINE_CODE.finditer(text):
        yield "command", match.group(1).strip()
    for match in _SHELL_LINE.finditer(text):
        yield "command", match.group(1).strip()
    for match in _URL.finditer(text):
        yield "url", match.group(0).rstrip(".,;:")
    for match in _PATH.finditer(text):
        candidate = match.group(0).rstrip(".,;:")
        if "/" in candidate or "." in candidate:
            yield "path", candidate
    for match in _ID.finditer(text):
        yield "id", match.group(0)
    for match in _QUANTITY.finditer(text):
        yield "quantity", match.group(0)


def extract_facts(
    components: Sequence[Component], *, limit: int = 24, max_chars: int = 1_600
) -> list[Fact]:
    """Return the exact details of ``components`` worth keeping, most important first.

    User constraints come first, then commands, paths, ids, URLs and
    quantities; within a kind, what the user said before what the agent said,
    before tool output, and earlier before later. At most ``limit`` details
    and ``max_chars`` characters in all.

    Examples:
        >>> from mellea_ctx import Message
        >>> said = Message("user", "Never touch config/prod.yaml. Deploy in 30 s.")
        >>> facts = extract_facts([said])
        >>> [(f.kind, f.text) for f in facts]  # the path travels inside the constraint
        [('constraint', 'Never touch config/prod.yaml.'), ('quantity', '30 s')]
    """
    seen: dict[str, tuple[int, int, int, FactKind]] = {}
    for index, component in enumerate(components):
        rank = _source_rank(component)
        for kind, text in _candidates(component):
            if text not in seen:
                seen[text] = (_KIND_ORDER[kind], rank, index, kind)
    ordered = sorted(seen.items(), key=lambda item: item[1][:3])
    facts: list[Fact] = []
    budget = max_chars
    for text, (_, _, _, kind) in ordered:
        if len(facts) >= limit:
            break
        if len(text) > budget:
            continue
        if any(text in kept.text for kept in facts if kept.kind == "constraint"):
            continue  # already carried inside a constraint sentence
        facts.append(Fact(kind, text))
        budget -= len(text)
    return facts


def _normalize(text: str) -> str:
    return " ".join(text.split())


def missing_facts(facts: Iterable[Fact], summary: str) -> list[Fact]:
    """Return the facts that do not appear verbatim (up to whitespace) in ``summary``.

    Examples:
        >>> missing_facts([Fact("path", "src/app.py"), Fact("id", "ZFA04Y")], "Edited src/app.py.")
        [Fact(kind='id', text='ZFA04Y')]
    """
    flat = _normalize(summary)
    return [fact for fact in facts if _normalize(fact.text) not in flat]
