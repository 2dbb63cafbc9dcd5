"""Where exact details are found in one component: the patterns, memoized per component.

Each component is scanned once. What it yields depends on who wrote the text:
the user's own words give constraints and decisions; the user's and the
agent's words give commands in backticks, paths, ids and numbers; a tool
call's parsed arguments give the files the agent read or edited and the
commands it ran (never its raw JSON, whose escapes can
never match a summary verbatim); a tool's output gives only what output is
good evidence of: commit hashes from git, error lines, test summaries and paths
(not the UUIDs and hex strings of fixture files).

:func:`~mellea_ctx._core.facts.candidates` memoizes what :func:`scan` finds
(components are immutable, like ``str``'s cached hash), so a chain of
compactions never scans the same component twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from .checkpoint import Checkpoint
from .components import Component
from .ledger import command_line

#: ``(kind, text, weight)``: one mention of a detail; heavier mentions rank higher.
Candidate = tuple[str, str, int]

_EXTENSIONS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|toml|yaml|yml|md|rst|txt|cfg|ini|lock|rs|go|c|h|"
    "cc|cpp|hpp|java|kt|rb|php|sh|bash|zsh|sql|html|css|scss|csv|xml|ipynb|env|ex|exs|"
    "erl|swift|scala|lua|vue|svelte|proto|graphql|tf|dockerfile|mk|gradle|conf|log|output"
)
_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+")
# A path: rooted (/, ~/, ./, ../) or with two slashes, or a name with a known
# extension. Not ``render/2`` (an arity), not ``call/result`` (prose).
_PATH = re.compile(
    r"(?<![\w:/.@-])(?:(?:~|\.{1,2})?/)?(?:[\w.@+-]+/)+[\w.@+-]*[A-Za-z_][\w.@+-]*"
    rf"|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})\b"
)
_KNOWN_EXTENSION = re.compile(rf"\.(?:{_EXTENSIONS})$")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TEXT_ID = re.compile(
    r"(?<![#\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"  # hashes, short shas
    r"|(?<![\w-])[A-Z][A-Z0-9]+-\d+\b"  # PROJ-123
    r"|(?<![\w&])#\d{2,5}\b"  # issue #1234 (not a colour, #334155)
    r"|(?<![\w-])(?=[A-Z0-9]*\d)[A-Z](?=[A-Z0-9]*[A-Z][A-Z0-9]*\b)[A-Z0-9]{4,}\b"  # ZFA04Y
    r"|\b[a-z]+_(?=[A-Za-z0-9_]*\d)[A-Za-z0-9_]{4,}\b"  # call_00_x, credit_card_29297
)
# Commit hashes as git prints them: "[main 3bb8701] msg", "3bb8701 msg" in a
# --oneline log, "commit 3bb8701...".
_GIT_COMMIT = re.compile(
    r"^\[[\w./+-]+(?: \(root-commit\))? ([0-9a-f]{7,40})\]"
    r"|^([0-9a-f]{7,12}) (?=\S)"
    r"|^commit ([0-9a-f]{40})\b",
    re.M,
)
_ERROR_LINE = re.compile(
    r"^[ \t]*(?:(?:error|fatal|ERROR|FATAL|panic)(?:\[[\w-]+\])?: .+"
    r"|(?:[\w.]*(?:Error|Exception)|Traceback \(most recent call last\)):.*"
    r"|FAILED .+)$",
    re.M,
)
_TEST_RESULT = re.compile(
    r"\b\d+ (?:tests?|examples?|specs?), \d+ failures?\b[^\n]*"
    r"|\b\d+ (?:passed|failed)(?:, \d+ (?:passed|failed|skipped|errors?|warnings?))*"
    r"(?: in [\d.]+s)?"
    r"|\bRan \d+ tests? in [\d.]+s"
    r"|\bTests: +\d+[^\n]*total"
    r"|\bfound no issues\b|\bfound \d+ (?:issues?|warnings?)\b"
)
_QUANTITY = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?)"
    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hrs|hours|days|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|TiB|bytes|tokens|px|USD|EUR|GBP|%)(?![\w])"
    r"|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?(?: [a-z]{3,})?"  # 4,812 invoices
)
_INLINE_CODE = re.compile(r"`([^`\n]{3,200})`")
# A code symbol in backticks: `helper()`, `Mod.fun`, `snake_name`.
_SYMBOL = re.compile(r"^[A-Za-z_][\w.!?]*\(\)$|^[a-z]\w*_\w+$|^[A-Z]\w*\.[a-z_]\w*$")
# A sentence of the agent's own that reports a failure.
_FAILURE = re.compile(
    r"\b(?:errors?|fail(?:s|ed|ing|ure)?|undefined|too deep|too complex|crash(?:es|ed)?|"
    r"exception|broken|warnings?)\b",
    re.I,
)
# A command starts with a program name and has an argument: `bd show x`, not `render/2`.
_COMMAND_SHAPE = re.compile(r"^[a-z][\w.+-]+ +[^\s=][^\n]*$")
_SHELL_LINE = re.compile(r"^\s*\$ (.{2,300})$", re.M)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|do not|don't|should not|shouldn't|only|required|make sure|"
    r"avoid|at most|at least|no more than|no later than|without|"
    r"keep\b[^.;]{0,60}\b(?:under|below|within|above))\b",
    re.I,
)
# A sentence of the user's that settles a choice: "Agreed: we use Decimal", "let's go with X".
_DECISION = re.compile(
    r"\b(?:agreed|decided|decision|settled on|go with|stick with|switch to|instead of|"
    r"let's|we(?:'ll| will| use| keep| drop| move| pin))\b",
    re.I,
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_PATH_KEYS = frozenset({"file_path", "path", "notebook_path", "filename", "file"})
_COMMAND_KEYS = frozenset({"command", "cmd", "script", "query"})
# File contents an edit writes: its path is the detail, its code is not prose.
_CONTENT_KEYS = frozenset({"content", "new_string", "old_string", "new_str", "old_str", "patch"})
_LONG_COMMAND = 240

# Weights: who said it. Tool-call arguments are what the agent did.
_USER, _AGENT, _CALL, _OUTPUT, _MADE = 3, 2, 3, 1, 6


def scan(component: Component) -> Iterator[Candidate]:
    """Yield every detail mention in ``component`` (not memoized: see ``facts.candidates``)."""
    if isinstance(component, Checkpoint):
        # A summary is not the user's own words: the details it carried, and
        # exact details from its text, but no "constraints" or "decisions" from it.
        for detail in component.preserved:
            yield "detail", detail, _USER
        yield from _prose(component.summary, _AGENT)
        return
    if component.tool_call_id is not None:
        yield from _output(component.content)
        return
    user = component.role == "user"
    text = component.content
    if user:
        yield from _constraints_and_decisions(text)
    yield from _prose(text, _USER if user else _AGENT)
    if not user:
        yield from _failures(text)
    for call in component.tool_calls:
        yield from _arguments(call.arguments)


def _constraints_and_decisions(text: str) -> Iterator[Candidate]:
    """The user's constraints and decisions, a sentence each."""
    for sentence in _SENTENCE_BREAK.split(text):
        sentence = sentence.strip()
        if not 8 <= len(sentence) <= 300:
            continue
        if _CONSTRAINT.search(sentence):
            yield "constraint", sentence, _USER
        elif _DECISION.search(sentence):
            yield "decision", sentence, _USER


def _failures(text: str) -> Iterator[Candidate]:
    """The failures the agent reports, a sentence each."""
    if not text:
        return
    for sentence in _SENTENCE_BREAK.split(text):
        sentence = sentence.strip()
        if 12 <= len(sentence) <= 200 and _FAILURE.search(sentence):
            yield "error", sentence, _AGENT


def _prose(text: str, weight: int) -> Iterator[Candidate]:
    """Details in what a person or the agent wrote."""
    if not text:
        return
    for match in _INLINE_CODE.finditer(text):
        code = match.group(1).strip()
        if _COMMAND_SHAPE.match(code):
            yield "command", code, weight
        elif _SYMBOL.match(code):
            yield "id", code, weight
    for match in _SHELL_LINE.finditer(text):
        yield "command", command_line(match.group(1), _LONG_COMMAND), weight
    yield from _paths_and_urls(text, weight)
    for match in _UUID.finditer(text):
        yield "id", match.group(0), weight
    for match in _TEXT_ID.finditer(text):
        yield "id", match.group(0), weight
    for match in _TEST_RESULT.finditer(text):
        yield "result", match.group(0).rstrip(" .,;:"), weight
    for match in _QUANTITY.finditer(text):
        yield "quantity", match.group(0).rstrip(" .,;:"), weight


def _paths_and_urls(text: str, weight: int, *, urls: bool = True) -> Iterator[Candidate]:
    spans: list[tuple[int, int]] = []
    for match in _URL.finditer(text):
        spans.append(match.span())
        if urls:
            yield "url", match.group(0).rstrip(".,;:\\"), weight
    for match in _PATH.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue  # the path of a URL
        path = match.group(0).rstrip(".,;:\\")
        if _is_path(path):
            yield "path", path, weight


def _is_path(text: str) -> bool:
    if "://" in text or len(text) < 4:
        return False
    if _KNOWN_EXTENSION.search(text):
        return True
    # No known extension: rooted, or at least two slashes with real names.
    rooted = text.startswith(("/", "~/", "./", "../"))
    segments = [segment for segment in text.split("/") if segment]
    return (rooted and len(segments) >= 2) or len(segments) >= 3


def _output(text: str) -> Iterator[Candidate]:
    """Details a tool's output is good evidence of."""
    if not text:
        return
    for match in _GIT_COMMIT.finditer(text):
        made = match.group(1)  # "[branch hash]": a commit made here, not one listed
        yield (
            "commit",
            made or next(group for group in match.groups() if group),
            (_MADE if made else _OUTPUT),
        )
    for match in _ERROR_LINE.finditer(text):
        line = match.group(0).strip()
        yield "error", line[:200].rstrip(), _OUTPUT
    for match in _TEST_RESULT.finditer(text):
        yield "result", match.group(0).rstrip(" .,;:"), _CALL
    yield from _paths_and_urls(text, _OUTPUT, urls=False)


def _arguments(raw: str) -> Iterator[Candidate]:
    """Details in a tool call's parsed argument values."""
    try:
        arguments = json.loads(raw)
    except ValueError:
        return
    if not isinstance(arguments, dict):
        return
    for key, value in arguments.items():
        if not isinstance(value, str) or not value.strip():
            continue
        if key in _PATH_KEYS:
            yield "path", value.strip(), _CALL
        elif key in _COMMAND_KEYS:
            yield "command", command_line(value, _LONG_COMMAND), _CALL
            yield from _paths_and_urls(value, _OUTPUT)
        elif key not in _CONTENT_KEYS:
            yield from _prose(value, _AGENT)
