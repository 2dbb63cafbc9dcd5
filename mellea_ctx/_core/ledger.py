"""The session ledger: typed state derived from components, carried by every checkpoint.

A summary is prose for the model; the ledger is data for us. Each
:class:`LedgerEntry` has a kind (a user's rule, constraint or preference, a
decision, the goal and next step, a fact from a tool result, a file, a
command and its outcome, a test run, an error, a commit), a key, a value, the
component it came from, and the values it superseded. An entry whose key an
earlier entry already has replaces it: the ledger holds current values, and
the old ones only as history.

Derivation is deterministic and reads data shapes, not one project's words:
the user's sentences by the words that make a rule ("never", "always",
"must", "do not", "only", "at most", a limit with an amount or a date) or a
label (``RULE:``, ``Constraint:``, ``Goal:``), with the value kept inside its
rule; tool calls by their parsed arguments (paths, commands); tool results
by their structure (JSON objects by field names and values; exit codes, test
summaries, error lines and commits as the common tools print them); agents
that send observations as user messages and commands in code fences
(SWE-agent, mini-swe-agent, aider-style chats) by that shape. Chained
checkpoints merge their ledgers (:meth:`Ledger.merge`); nothing is ever
re-derived from a summary's prose. See docs/summarization.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal, TypeGuard, get_args

import attrs

from .checks import require_bool

if TYPE_CHECKING:
    from .components import Component

LedgerKind = Literal[
    "rule",
    "constraint",
    "preference",
    "goal",
    "next_step",
    "decision",
    "error",
    "test",
    "fact",
    "file",
    "commit",
    "command",
    "finding",
    "name",
]
KINDS: tuple[LedgerKind, ...] = get_args(LedgerKind)

# How many superseded values an entry keeps.
_HISTORY = 3
_MAX_VALUE = 300
# A JSON object's fields, shown as one fact, are cut at this length.
_MAX_JSON = 320


def _kind(value: object) -> LedgerKind:
    if value not in KINDS:
        msg = f"LedgerEntry: kind={value!r} must be one of {', '.join(KINDS)}"
        raise ValueError(msg)
    return value


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(item) for item in value)


@attrs.define(frozen=True, slots=True)
class LedgerEntry:
    """One piece of state: what it is, its key, its current value, and what it replaced.

    Attributes:
        kind: What sort of state it is.
        key: Its identity: a later entry with the same key supersedes this one.
        value: The current value, as shown to the model.
        source: Which component it came from (``user``, ``assistant``,
            ``tool <name>``, ``call <name>``).
        index: Its position in the session (later entries have larger ones).
        superseded: Earlier values of the same key, oldest first.
        state: ``open`` or ``resolved`` for an error, ``passed`` or ``failed``
            for a test or command, ``read`` or ``modified`` for a file; for a
            fact, ``used`` (named again elsewhere) or ``listed`` (one of many);
            for a name, ``used`` (the agent or the user wrote it) or ``shared``
            (in several messages); else empty.

    Examples:
        >>> LedgerEntry("constraint", "budget", "Never exceed $500 without approval.").value
        'Never exceed $500 without approval.'
    """

    kind: LedgerKind = attrs.field(converter=_kind)
    key: str
    value: str
    source: str = ""
    index: int = 0
    superseded: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    state: str = ""

    def to_record(self) -> dict[str, object]:
        """Return the entry as a JSON-able mapping (what stores and files hold)."""
        record: dict[str, object] = {"kind": self.kind, "key": self.key, "value": self.value}
        if self.source:
            record["source"] = self.source
        if self.index:
            record["index"] = self.index
        if self.superseded:
            record["superseded"] = list(self.superseded)
        if self.state:
            record["state"] = self.state
        return record

    @classmethod
    def from_record(cls, record: object) -> LedgerEntry:
        """Read an entry written by :meth:`to_record`.

        Raises:
            ValueError: For a record that is not one.
        """
        if not isinstance(record, dict) or not all(
            isinstance(record.get(name), str) for name in ("kind", "key", "value")
        ):
            msg = f"ledger entry record {record!r:.120} must have string kind, key and value"
            raise ValueError(msg)
        index = record.get("index", 0)
        superseded = record.get("superseded", [])
        if not isinstance(index, int) or not isinstance(superseded, list):
            msg = f"ledger entry record {record!r:.120} has a bad index or superseded list"
            raise ValueError(msg)
        return cls(
            record["kind"],
            record["key"],
            record["value"],
            source=str(record.get("source", "")),
            index=index,
            superseded=superseded,
            state=str(record.get("state", "")),
        )


def _entries(value: Iterable[LedgerEntry]) -> tuple[LedgerEntry, ...]:
    entries = tuple(value)
    for entry in entries:
        if not isinstance(entry, LedgerEntry):
            msg = f"Ledger: entries must be LedgerEntry values, got {entry!r:.80}"
            raise ValueError(msg)
    return entries


@attrs.define(frozen=True, slots=True)
class Ledger:
    """Current state, one entry per key, in the order keys were last set.

    Returns new ledgers from every operation; a ledger is never modified.

    Examples:
        >>> first = Ledger().add(LedgerEntry("fact", "deadline", "deadline is 2026-11-15"))
        >>> later = first.add(LedgerEntry("fact", "deadline", "deadline is 2026-12-01"))
        >>> [(e.value, e.superseded) for e in later.entries]
        [('deadline is 2026-12-01', ('deadline is 2026-11-15',))]
    """

    entries: tuple[LedgerEntry, ...] = attrs.field(default=(), converter=_entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def get(self, key: str) -> LedgerEntry | None:
        """The current entry for ``key``, or ``None``."""
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    def add(self, entry: LedgerEntry) -> Ledger:
        """Return a ledger with ``entry`` added; it supersedes an entry with its key."""
        return self.merge(Ledger((entry,)))

    def merge(self, later: Ledger | Iterable[LedgerEntry]) -> Ledger:
        """Return this ledger updated by ``later``'s entries, which come after it.

        An entry of ``later`` with a key already here supersedes it: the value
        is the later one and the earlier values move to ``superseded``. An
        error whose command later succeeded is marked resolved (see
        :func:`derive_ledger`). ``self`` is not modified.
        """
        current: dict[str, LedgerEntry] = {entry.key: entry for entry in self.entries}
        base = max((entry.index for entry in self.entries), default=0)
        incoming = later.entries if isinstance(later, Ledger) else tuple(later)
        for entry in incoming:
            index = max(entry.index, base + 1)
            base = index
            entry = _supersede(current.pop(entry.key, None), entry, index)
            if entry.kind in ("command", "test") and entry.state == "passed":
                _resolve(current, entry.key)
            current[entry.key] = entry
        return Ledger(sorted(current.values(), key=lambda e: e.index))

    def current(self, *kinds: LedgerKind) -> list[LedgerEntry]:
        """The entries of ``kinds`` (all when none is given), oldest first."""
        return [e for e in self.entries if not kinds or e.kind in kinds]

    def to_records(self) -> list[dict[str, object]]:
        """The entries as JSON-able mappings."""
        return [entry.to_record() for entry in self.entries]

    @classmethod
    def from_records(cls, records: object) -> Ledger:
        """Read a ledger written by :meth:`to_records`.

        Raises:
            ValueError: For records that are not a list of entry records.
        """
        if not isinstance(records, list):
            msg = f"ledger records {records!r:.80} must be a list"
            raise ValueError(msg)
        return cls(LedgerEntry.from_record(record) for record in records)


# A package manager's install (``pip install a b``, ``npm i a``, ``uv add a``) and what it names.
_INSTALL = re.compile(
    r"\b(?:pip3?|uv pip|python3? -m pip|conda|mamba|npm|pnpm|yarn|gem|cargo|go)\s+"
    r"(?:install|add|i|get)\b([^;&|>]*)"
)
# A missing module an error names (Python's "No module named 'a.b'", Node's "Cannot find module").
_MISSING_MODULE = re.compile(r"(?:No module named|Cannot find module) ['\"]?([\w.@/-]+)")


def _package(name: str) -> str:
    """A package's name as installers compare it: top-level, any case, ``-`` and ``_`` alike."""
    return name.split(".", 1)[0].lower().replace("_", "-")


def _supersede(old: LedgerEntry | None, entry: LedgerEntry, index: int) -> LedgerEntry:
    """``entry`` at ``index``, superseding ``old`` (the entry of its key before it, if any)."""
    if old is None:
        return attrs.evolve(entry, index=index)
    if old.kind == "file" and old.state != "read" == entry.state:
        entry = old  # reading a file again leaves its latest state "modified"
    history = old.superseded + entry.superseded
    if old.value != entry.value:
        history += (old.value,)
    return attrs.evolve(entry, superseded=history[-_HISTORY:], index=index)


def _resolve(current: dict[str, LedgerEntry], command_key: str) -> None:
    """Mark open errors resolved: a later run of their command passed, or an install passed of
    the module they found missing (``pip install numpy`` after "No module named 'numpy'")."""
    command = ": " + command_key.split(":", 1)[1]
    installed = _installed(command)
    for key, entry in list(current.items()):
        if entry.kind == "error" and entry.state == "open" and _resolves(entry, command, installed):
            current[key] = attrs.evolve(entry, state="resolved")


def _installed(command: str) -> set[str]:
    """The packages a command installs (``pip install numpy``), if it is an install."""
    install = _INSTALL.search(command)
    if not install:
        return set()
    return {_package(word) for word in install.group(1).split() if not word.startswith("-")}


def _resolves(error: LedgerEntry, command: str, installed: set[str]) -> bool:
    """Whether a passing ``command`` resolves ``error``: it reran the command that failed, or
    installed the module the error found missing."""
    if error.source.endswith(command):
        return True
    if not installed:
        return False
    missing = _MISSING_MODULE.search(error.value)
    return missing is not None and _package(missing[1]) in installed


# --- derivation ------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])")
# A leading label: "SAFETY RULE:", "Hard constraint:", "Goal:", "Note -".
_LABEL = re.compile(r"^\s*(?:\*\*)?([A-Za-z][A-Za-z _/-]{1,30}?)(?:\*\*)?\s*:\s+(?=\S)")
_LABEL_KINDS: tuple[tuple[re.Pattern[str], LedgerKind], ...] = (
    (re.compile(r"\b(?:rule|policy|safety|security|never)\b", re.I), "rule"),
    (re.compile(r"\b(?:constraint|limit|requirement|budget|deadline|must)\b", re.I), "constraint"),
    (re.compile(r"\b(?:preference|prefer|style)\b", re.I), "preference"),
    (re.compile(r"\b(?:decision|decided|agreed)\b", re.I), "decision"),
    (re.compile(r"\bnext(?: step)?\b", re.I), "next_step"),
    (re.compile(r"\b(?:goal|task|objective|state|status|todo|plan)\b", re.I), "goal"),
    (re.compile(r"\bfact\b", re.I), "fact"),
)
# A label that says little of its kind ("NOTE:", "Info:"): the body's own words decide, and a
# body that states no rule, constraint, preference or decision is a fact.
_WEAK_LABEL = re.compile(r"\b(?:note|info|context)\b", re.I)
_RULE = re.compile(
    r"\b(?:never|always|do not|don't|must not|mustn't|under no circumstances|"
    r"forbidden|not allowed|prohibited|stop and)\b",
    re.I,
)
_CONSTRAINT = re.compile(
    r"(?:^|[.;:] )only\b|\b(?:must|required?|make sure|ensure|at most|at least|no more than|"
    r"no later than|no external|without|limit|cap|ceiling|budget|deadline|due|"
    r"(?:keep|stay)\b[^.;]{0,60}\b(?:under|below|within|above|at or below))\b",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer(?:s|red)?|i(?:'d| would) rather|i like|i want|user wants|"
    r"please (?:use|make|keep)|style|tone)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:agreed|decided|decision|settled on|go with|stick with|switch to|instead of|"
    r"let's|we(?:'ll| will| use| keep| drop| pin))\b",
    re.I,
)
_NEXT = re.compile(
    r"\b(?:next step(?: is)?|next,? (?:i|we)(?:'ll| will)|then (?:i|we)(?:'ll| will)|"
    r"(?:i|we)(?:'ll| will) now|now (?:i|we)(?:'ll| will| need to))\b",
    re.I,
)
_FINDING = re.compile(
    r"\b(?:root cause|the (?:bug|issue|problem) (?:is|was)|found (?:that|the)|turns out|"
    r"(?:is|was) caused by|fixed|resolved|the fix)\b",
    re.I,
)
# A sentence about what the agent is going to do, not what it found.
_PLAN = re.compile(r"(?:let me|let's|i'll|i will|i need|now|actually|first|next|then)\b", re.I)
_UPDATE = re.compile(
    r"\b(?:update|updated|now|changed?|moved?|from now on|rotated|rotation|switched|new|"
    r"no longer|instead|rather|rebased|replaces?|replaced|revised|anymore)\b",
    re.I,
)
_AMOUNT = re.compile(
    r"[$€£]\s?\d[\d,]*(?:\.\d+)?[kKmM]?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|euros)\b"
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|fifty)"
    r"(?: (?:hundred|thousand|million))+(?: dollars| euros)?\b",
    re.I,
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    rf"|\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"
    rf"|\b\d{{1,2}} (?:{_MONTHS})(?: \d{{4}})?\b|\b\d{{2}}-\d{{2}}\b",
    re.I,
)
# An id: letters and digits mixed (2FBBAH, HAT001, spike-fum.3, abcde-12, PROJ-123), a hash.
_ID = re.compile(
    r"(?<![\w/.-])(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.-]{3,40}[A-Za-z0-9](?![\w/])"
)
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_PERSON = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")
_WORD = re.compile(r"[a-z][a-z0-9]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "with",
        "from",
        "by",
        "as",
        "all",
        "any",
        "our",
        "your",
        "my",
        "we",
        "you",
        "i",
        "they",
        "them",
        "their",
        "its",
        "not",
        "no",
        "now",
        "new",
        "from",
        "on",
        "into",
        "onto",
        "until",
        "than",
        "then",
        "there",
        "here",
        "has",
        "have",
        "had",
        "will",
        "would",
        "should",
        "can",
        "could",
        "must",
        "never",
        "always",
        "only",
        "please",
        "keep",
        "use",
        "make",
        "get",
        "set",
        "also",
        "still",
        "just",
        "more",
        "most",
        "very",
        "so",
        "such",
        "each",
        "every",
        "one",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "do",
        "does",
        "did",
        "done",
        "doing",
        "going",
        "been",
        "being",
    ]
)
# Concepts that several words name: two statements about the same concept in
# different words can be the same state. Common English of sessions, not any
# one project's vocabulary.
_CONCEPTS: dict[str, tuple[str, ...]] = {
    "money": (
        "budget",
        "spend",
        "spending",
        "spent",
        "cost",
        "costs",
        "expense",
        "expenses",
        "ceiling",
        "cap",
        "price",
        "limit",
        "dollars",
        "allowance",
    ),
    "date": (
        "deadline",
        "date",
        "due",
        "ship",
        "ships",
        "launch",
        "release",
        "timing",
        "scheduled",
        "schedule",
        "freeze",
        "eta",
    ),
    "owner": (
        "owner",
        "owns",
        "on-call",
        "oncall",
        "pager",
        "support",
        "duty",
        "escalation",
        "rotation",
        "reviewer",
        "approver",
        "assignee",
        "responsible",
        "belongs",
        "handling",
    ),
    "name": ("codename", "called", "calling", "label", "designated", "alias", "renamed"),
    "timezone": (
        "timezone",
        "utc",
        "gmt",
        "pacific",
        "eastern",
        "central",
        "clocks",
        "timestamp",
        "timestamps",
    ),
    "branch": ("branch", "rebased", "rebase", "checkout", "checked"),
    "style": (
        "answers",
        "responses",
        "replies",
        "tone",
        "style",
        "terse",
        "verbose",
        "playful",
        "formal",
        "units",
        "measurements",
    ),
    "secret": ("code", "password", "passcode", "secret", "token", "key", "credentials"),
}
_CONCEPT_OF = {word: concept for concept, words in _CONCEPTS.items() for word in words}
# A concept that holds one value at a time for the whole session: a later
# statement about it replaces the earlier one whatever it is scoped to.
_SINGLE = frozenset({"timezone", "style", "branch", "name"})

_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*?)```", re.S)
_EXIT = re.compile(
    r"(?:exit(?:ed)?(?: with)?(?: code| status)?|return ?code|returncode|status code)"
    r"\W{0,3}(-?\d{1,3})\b",
    re.I,
)
_ERROR_LINE = re.compile(
    r"^[ \t]*(?:[\w.]*(?:Error|Exception|Failure)\b(?:\[\w+\])?:? .{0,300}"
    r"|(?:error|fatal|ERROR|FATAL|panic)(?:\[[\w-]+\])?: .{1,300}"
    r"|E {2,}\S.{0,300}"
    r"|FAILED \S.{0,300})$",
    re.M,
)
_TEST = re.compile(
    r"\b\d+ (?:passed|failed)(?:, \d+ (?:passed|failed|skipped|errors?|warnings?|xfailed|xpassed))*"
    r"(?: in [\d.]+s)?"
    r"|\bRan \d+ tests? in [\d.]+s"
    r"|^(?:OK|FAILED)(?: \([^)\n]*\))?$"
    r"|\btest result: \w+\. \d+ passed; \d+ failed[^\n]*"
    r"|\bTests?: +\d+[^\n]*total"
    r"|\b\d+ (?:tests?|examples?|specs?), \d+ failures?[^\n]*"
    r"|^(?:ok|FAIL|---) +\S+(?: +[\d.]+s)?$",
    re.M,
)
_ERROR_WORDS = re.compile(r"rror|xception|ailure|atal|FATAL|panic|^E {2}|FAILED", re.M)
# A cheap look for the words every test summary has, before the full pattern runs.
_TEST_WORDS = re.compile(r"passed|failed|failures?\b|Ran \d|^(?:OK|FAILED|ok|FAIL)\b|Tests?:", re.M)
_FAILING = re.compile(r"\b(?:[1-9]\d* failed|failures?=\d|FAILED|FAIL\b|[1-9]\d* failures?)")
_COMMIT = re.compile(
    r"^\[[\w./+-]+(?: \(root-commit\))? ([0-9a-f]{7,40})\] ([^\n]*)$|^commit ([0-9a-f]{40})\b",
    re.M,
)
_PATH_KEYS = frozenset({"file_path", "path", "notebook_path", "filename", "file", "target_file"})
_COMMAND_KEYS = frozenset({"command", "cmd", "script", "code"})
_WRITES = re.compile(r"(?:edit|write|create|replace|patch|insert|apply|str_replace|update)", re.I)
_READS = re.compile(r"(?:read|view|open|cat|show|get|glob|grep|search|find|list)", re.I)
_WRITE_COMMANDS = re.compile(
    r"^(?:edit|create|write|insert|str_replace|sed -i|apply_patch|patch)\b"
)
# A JSON field worth keeping, by its name.
_FIELD = re.compile(
    r"(?:^|_)(?:id|ids|number|num|code|status|state|date|time|at|amount|price|total|balance|"
    r"cost|fee|name|email|phone|type|class|origin|destination|city|count|quantity|method|"
    r"tier|membership|level|reason|result|error|message|title|version|url|sha|branch)$",
    re.I,
)
_ID_FIELD = re.compile(r"(?:^|_)(?:id|number|code|sha)$", re.I)
_LONG_COMMAND = 200
# Cheap looks before the full patterns run: a line that could be a statement, a text
# that could hold a next step or a finding.
# Words one of the statement patterns needs (lowercase substrings): a line with none
# of them, no label, no amount and no date is passed over with substring looks only.
_STATEMENT_KEYS = (
    "never", "always", "not", "n't", "must", "only", "requir", "sure", "at most", "at least",
    "no more", "no later", "without", "limit", "cap", "ceiling", "budget", "deadline", "due",
    "keep", "stay", "prefer", "rather", "like", "want", "please", "style", "tone", "agree",
    "decid", "decision", "settled", "go with", "stick with", "switch", "instead", "let's",
    "we'll", "we will", "we use", "we keep", "we drop", "we pin", "updat", "now", "chang",
    "move", "rotat", "new", "no longer", "rebas", "replac", "revis", "anymore", "forbidden",
    "prohibited", "allowed", "stop and", "dollar", "euro", "hundred", "thousand", "$", "€",
    "£", "utc", "gmt", "pacific", "eastern", "central", "clock", "timestamp", "timezone",
    "branch", "checkout", "checked", "codename", "called", "calling", "label", "designated",
    "alias", "renamed", "answers", "responses", "replies", "terse", "verbose", "playful",
    "formal", "units", "measurements",
)  # fmt: skip
_MONTH_WORDS = frozenset(_MONTHS.split("|"))


def _maybe_statement(line: str) -> bool:
    """Whether ``line`` could hold a statement (cheap: substring looks, one anchored match)."""
    low = line.lower()
    if any(key in low for key in _STATEMENT_KEYS) or _LABEL.match(line):
        return True
    if any(ch.isdigit() for ch in line) and ("-" in line or "/" in line):
        return True  # a date, maybe
    return any(word.strip(".,;:") in _MONTH_WORDS for word in low.split())


_AGENT_WORDS = re.compile(f"{_NEXT.pattern}|{_FINDING.pattern}", re.I)


def _mask(text: str) -> str:
    """A statement's identity with its values masked: the same rule with a new value matches."""
    key = text.lower()
    key = _DATE.sub("<date>", key)
    key = _AMOUNT.sub("<amount>", key)
    key = re.sub(r"\b[0-9a-f]{7,40}\b", "<hash>", key)
    key = _NUMBER.sub("<n>", key)
    return " ".join(key.split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _strip_label(text: str) -> tuple[LedgerKind | None, str]:
    match = _LABEL.match(text)
    if match is None:
        return None, text
    label = match.group(1)
    for pattern, kind in _LABEL_KINDS:
        if pattern.search(label):
            return kind, text[match.end() :].strip()
    if _WEAK_LABEL.search(label):
        body = text[match.end() :].strip()
        return _statement_kind(body) or "fact", body
    return None, text


def _statement_kind(text: str) -> LedgerKind | None:
    if _RULE.search(text):
        return "rule"
    if _PREFERENCE.search(text):
        return "preference"
    if _CONSTRAINT.search(text) or (
        (_AMOUNT.search(text) or _DATE.search(text)) and _UPDATE.search(text)
    ):
        return "constraint"
    if _DECISION.search(text):
        return "decision"
    return None


def _statements(text: str) -> Iterator[tuple[LedgerKind, str]]:
    """The user's rules, constraints, preferences, decisions and facts in ``text``.

    A line is one statement when it is short: "Budget cap is $500. Never exceed
    it without approval." keeps its value inside its rule.
    """
    for line in _statement_lines(text):
        labelled, body = _strip_label(line)
        pieces = [body] if len(body) <= _MAX_VALUE else _SENTENCE.split(body)
        for piece in pieces:
            piece = piece.strip()
            if not 8 <= len(piece) <= _MAX_VALUE or piece.endswith("?"):
                continue
            kind = labelled or _statement_kind(piece)
            if kind is None and _states_value(piece):
                kind = "fact"  # a value, or an update of one: its key may give it its kind
            if kind is not None:
                yield kind, piece


def _statement_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` that may state something, without their bullets."""
    for raw in text.splitlines():
        line = raw.strip().lstrip("-*• ").strip()
        # Not too short, a statement maybe, and not a numbered line of a file's listing.
        if len(line) >= 8 and _maybe_statement(line) and not LISTING_LINE.match(raw):
            yield line


def _states_value(piece: str) -> bool:
    """Whether a statement of no other kind states a value (a date, an amount), or updates one."""
    if _DATE.search(piece) or _AMOUNT.search(piece):
        return True
    if _UPDATE.search(piece) and _concepts(piece):
        return True
    return bool(_concepts(piece) & _SINGLE) and not _CODE.search(piece)


def strip_label(text: str) -> str:
    """``text`` without a leading label a ledger kind is read from ("SAFETY RULE: ...")."""
    return _strip_label(text.strip())[1]


def _concepts(text: str) -> set[str]:
    low = text.lower()
    found = {_CONCEPT_OF[w] for w in re.findall(r"[a-z][a-z-]+", low) if w in _CONCEPT_OF}
    if _AMOUNT.search(text):
        found.add("money")
    return found


def _value_types(text: str) -> set[str]:
    """What sorts of value a statement carries: an update replaces a value of its own sort."""
    found = set()
    for name, pattern in (("date", _DATE), ("amount", _AMOUNT), ("person", _PERSON)):
        if pattern.search(text):
            found.add(name)
    if re.search(r"\w/\w", text):
        found.add("path")
    elif _ID.search(text):
        found.add("id")
    return found


_Traits = tuple[set[str], set[str], set[str]]  # a statement's word stems, concepts, value sorts


def _match_score(update: bool, said: _Traits, known: _Traits) -> int | None:
    """How well a new statement (``update``: worded as one) matches a known one as the same
    state: ``None`` unless they share a concept, and a word or a single-valued concept."""
    words, concepts, types = said
    known_words, known_concepts, known_types = known
    shared = concepts & known_concepts
    single = bool(shared & _SINGLE)
    if not shared or not (update or single):
        return None
    overlap = len(words & known_words)
    if not single and overlap == 0:
        return None
    same_type = bool(types & known_types)
    return 3 * overlap + (4 if single else 1) + (2 if same_type else 0)


class _Keys:
    """Chooses the key of a user statement: the same state said again (or updated) shares one."""

    def __init__(self) -> None:
        self.known: list[tuple[str, str, set[str], set[str]]] = []  # key, masked, words, concepts
        self.kinds: dict[str, LedgerKind] = {}
        self.types: list[set[str]] = []  # the sorts of value each known statement carries

    def key(self, kind: LedgerKind, text: str) -> str:
        masked = _mask(text)
        for key, known_mask, _, _ in self.known:
            if known_mask == masked:
                return key
        words = {_stem(w) for w in _words(text)}
        concepts = _concepts(text)
        key = f"{kind}:{masked[:80]}"
        types: set[str] | None = None
        update = bool(_UPDATE.search(text))
        if update or concepts & _SINGLE:
            types = _value_types(text)
            updated = self._updated(update, (words, concepts, types))
            if updated is not None:
                key = updated
        self.known.append((key, masked, words, concepts))
        self.types.append(types if types is not None else _value_types(text))
        return key

    def _updated(self, update: bool, said: _Traits) -> str | None:
        """The key of the known statement a new one updates: the best match, the newest of
        equals (``None``: it updates none)."""
        best: tuple[int, int] | None = None
        key = None
        for position, (known_key, _, known_words, known_concepts) in enumerate(self.known):
            score = _match_score(update, said, (known_words, known_concepts, self.types[position]))
            if score is not None and (best is None or (score, position) >= best):
                best = (score, position)
                key = known_key
        return key

    def remember(self, key: str, text: str) -> None:
        """Know an entry carried by an earlier checkpoint, so an update can supersede it."""
        self.known.append((key, _mask(text), {_stem(w) for w in _words(text)}, _concepts(text)))
        self.types.append(_value_types(text))


def command_line(text: str, limit: int = _LONG_COMMAND) -> str:
    """Return a command as it is kept: its first line, cut at a word under ``limit`` characters.

    Examples:
        >>> command_line("git commit -m \\"$(cat <<'EOF'\\nfix\\nEOF\\n)\\"")
        'git commit -m "$(cat <<\\'EOF\\''
    """
    line = text.strip().split("\n", 1)[0].strip()
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, limit)
    return line[: cut if cut > 0 else limit].rstrip()


def _fenced_commands(text: str) -> list[str]:
    commands: list[str] = []
    for match in _FENCE.finditer(text):
        body = match.group(1).strip()
        if body and len(body.splitlines()) <= 40:
            commands.append(command_line(body))
    return commands


def _is_leaf(value: object) -> TypeGuard[str | int | float]:
    """A JSON leaf that can be state: a string or a number (a boolean is neither here)."""
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _holds_value(value: str | int | float, text: str) -> bool:
    """A number, or a short text that holds one (a price, a code); not free prose."""
    if isinstance(value, (int, float)):
        return True
    return any(ch.isdigit() for ch in text) and text.count(" ") <= 3


def _members(
    value: dict[object, object] | list[object], prefix: str
) -> Iterator[tuple[str, object]]:
    """The path and value of each member of an object, or of a list's first eight items."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield (f"{prefix}.{name}" if prefix else str(name)), item
    else:
        for position, item in enumerate(value[:8]):
            yield f"{prefix}[{position}]", item


def _flatten(value: object, prefix: str, out: list[tuple[str, str]], depth: int = 0) -> None:
    if len(out) >= 40 or depth > 4:
        return
    if isinstance(value, (dict, list)):
        for path, item in _members(value, prefix):
            _flatten(item, path, out, depth + 1)
    elif _is_leaf(value):
        field = prefix.rsplit(".", 1)[-1].split("[", 1)[0]
        text = str(value)
        # A field named for state (an id, a status, a date, an amount, a name), or a
        # value that is a number or holds one (a price, a code); not free prose.
        if 0 < len(text) <= 60 and (_holds_value(value, text) or _FIELD.search(field)):
            out.append((field or prefix, text))


def _kept_leaf(field: str, value: object) -> str | None:
    """A JSON leaf's text when it is state worth showing: an id, a number, a status, a date."""
    if not _is_leaf(value):
        return None
    text = str(value).strip()
    if not 0 < len(text) <= 60 or "\n" in text:
        return None
    # A field named for state (an id, a status, a date, an amount, a name), a value that
    # is a number or holds one (a price, a code), or one word (a category: "business").
    one_word = " " not in text and len(text) <= 24
    if _holds_value(value, text) or _FIELD.search(field) or one_word:
        return text
    return None


def _nested_rank(value: object) -> int:
    """0 for a nested object or list of objects with an id field among its keys, else 1."""
    items = value if isinstance(value, list) else [value]
    for item in items[:8]:
        if isinstance(item, dict) and any(_ID_FIELD.search(str(name)) for name in item):
            return 0
    return 1


def _render_json(value: object, field: str, seen: set[tuple[str, str]], depth: int = 0) -> str:
    """A JSON value, densely: ``field=value`` pairs, a nested object as ``field(...)``, a list
    of objects as a table (``field (a, b): 1 2; 3 4``); a pair already shown is not repeated."""
    if depth > 4:
        return ""
    if isinstance(value, dict):
        return _render_object(value, seen, depth)
    if isinstance(value, list):
        return _render_list(value, field)
    return ""


def _render_object(value: dict[object, object], seen: set[tuple[str, str]], depth: int) -> str:
    """An object's members shown, those without an id nesting under them last."""
    members = (_render_member(str(name), item, seen, depth) for name, item in value.items())
    parts = [part for part in members if part is not None]  # (rank, text)
    # In the object's order, but what nests under it without an id (a list of names)
    # after the rest, so a cut takes it first (flights by number, payments by id stay).
    return ", ".join(text for _, text in sorted(parts, key=lambda part: part[0]))


def _render_member(
    name: str, item: object, seen: set[tuple[str, str]], depth: int
) -> tuple[int, str] | None:
    """One member of an object as (rank, text): what a cut should keep ranks first."""
    if isinstance(item, (dict, list)):
        inner = _render_json(item, name, seen, depth + 1)
        if not inner:
            return None
        return _nested_rank(item), f"{name}({inner})" if isinstance(item, dict) else inner
    text = _kept_leaf(name, item)
    if text is None or (name, text) in seen:
        return None
    seen.add((name, text))
    return 0, f"{name}={text}"


def _render_list(value: list[object], field: str) -> str:
    """A list: its objects as a table, else its leaves as ``field=[a, b]``."""
    items = value[:8]
    more = ", …" if len(value) > len(items) else ""
    objects = [item for item in items if isinstance(item, dict)]
    if items and len(objects) == len(items):
        return _render_table(objects, field, more)
    texts = [t for t in (_kept_leaf(field, item) for item in items) if t is not None]
    return f"{field}=[{', '.join(texts)}{more}]" if texts else ""


def _render_table(items: list[dict[object, object]], field: str, more: str) -> str:
    """Objects as ``field (a, b): 1 2; 3 4``: a column per field any of them shows."""
    columns: list[str] = []
    for item in items:
        for name, leaf in item.items():
            if str(name) not in columns and _kept_leaf(str(name), leaf) is not None:
                columns.append(str(name))
    if not columns:
        return ""
    rows = [" ".join(_kept_leaf(c, item.get(c)) or "-" for c in columns) for item in items]
    return f"{field} ({', '.join(columns)}): {'; '.join(rows)}{more}"


def _json_facts(text: str, source: str) -> Iterator[LedgerEntry]:
    """Facts from a JSON tool result: one entry per object, keyed by its id."""
    objects = _json_objects(text)
    # One of many objects is a listing (search results); an object alone was looked up.
    state = "listed" if len(objects) > 1 else ""
    for item in objects[:20]:
        entry = _object_fact(item, source, state)
        if entry is not None:
            yield entry


def _json_objects(text: str) -> list[object]:
    """A JSON tool result's values: a list's items, or the one value (none if not JSON)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return []
    try:
        data = json.loads(stripped)
    except ValueError:
        return []
    return data if isinstance(data, list) else [data]


def _object_or_group(item: object) -> bool:
    """An object, or a group of objects (a connection's flights, a row of a join)."""
    if isinstance(item, dict):
        return True
    return isinstance(item, list) and bool(item) and all(isinstance(i, dict) for i in item)


def _object_fact(item: object, source: str, state: str) -> LedgerEntry | None:
    """The fact an object (or a group of objects) states, keyed by its id."""
    if not _object_or_group(item):
        return None
    fields: list[tuple[str, str]] = []
    _flatten(item, "", fields)
    value = _render_json(item, "", set()).removeprefix(" ")
    if not fields or not value:
        return None
    anchor = next((value for name, value in fields if _ID_FIELD.search(name)), fields[0][1])
    if len(value) > _MAX_JSON:
        value = value[:_MAX_JSON].rsplit(" ", 1)[0] + " …"
    return LedgerEntry("fact", f"fact:{anchor}", value, source=source, state=state)


def _output_entries(
    text: str, source: str, command: str | None, is_error: bool
) -> Iterator[LedgerEntry]:
    """Entries from a tool's output (or an observation sent as a user message)."""
    yield from _json_facts(text, source)
    origin = f"{source}: {command}" if command else source
    errors = _error_lines(text)
    for line in dict.fromkeys(errors[-3:]):
        yield LedgerEntry("error", f"error:{_mask(line)[:120]}", line, source=origin, state="open")
    test = _test_entry(text, command or source, origin)
    if test is not None:
        yield test
    yield from _commit_entries(text, source)
    if command is not None:
        failed = is_error or (test is not None and test.state == "failed") or bool(errors)
        yield _command_entry(text, command, source, failed)


def _error_lines(text: str) -> list[str]:
    """The error lines an output prints."""
    if not _ERROR_WORDS.search(text):
        return []
    return [m.group(0).strip() for m in _ERROR_LINE.finditer(text)]


def _test_entry(text: str, target: str, origin: str) -> LedgerEntry | None:
    """The outcome of a test run, from the last test summary an output prints."""
    if not _TEST_WORDS.search(text):
        return None
    tests = [m.group(0).strip() for m in _TEST.finditer(text)]
    if not tests:
        return None
    summary = tests[-1]
    state = "failed" if _FAILING.search(summary) else "passed"
    return LedgerEntry("test", f"test:{target}", summary, source=origin, state=state)


def _commit_entries(text: str, source: str) -> Iterator[LedgerEntry]:
    """The commits an output reports (``git commit``'s ``[main abc1234] subject``, ``git log``)."""
    if "commit " not in text and "] " not in text:
        return
    for match in _COMMIT.finditer(text):
        sha = match.group(1) or match.group(3)
        message = (match.group(2) or "").strip()[:80]  # the subject, however long it runs
        yield LedgerEntry("commit", f"commit:{sha}", f"{sha} {message}".strip(), source=source)


def _command_entry(text: str, command: str, source: str, failed: bool) -> LedgerEntry:
    """A command's outcome: its exit code when the output prints one, else whether it failed."""
    exit_code = _EXIT.search(text)
    if exit_code is not None:
        code = int(exit_code.group(1))
        state = "passed" if code == 0 else "failed"
        outcome = f"exit {code}"
    elif failed:
        state, outcome = "failed", "failed"
    else:
        state, outcome = "passed", "ok"
    return LedgerEntry(
        "command", f"command:{command}", f"{command} → {outcome}", source=source, state=state
    )


def derive_ledger(components: Sequence[Component], *, names: bool = True) -> Ledger:
    """Return the ledger of ``components``: their state, later values superseding earlier ones.

    An earlier :class:`~mellea_ctx.Checkpoint` among them contributes its own
    ledger (merged, never re-derived from its summary). Deterministic: the
    same components always give the same ledger. ``names=False`` leaves out
    the index of names written as code (the ``name`` entries), the costliest
    part to derive, for a caller that does not show them.

    Examples:
        >>> from mellea_ctx import Message
        >>> said = [Message("user", "Never exceed $500 without explicit approval."),
        ...         Message("user", "Update: never exceed $800 without explicit approval.")]
        >>> [(e.kind, e.value, e.superseded) for e in derive_ledger(said).entries]
        [('rule', 'Update: never exceed $800 without explicit approval.', \
('Never exceed $500 without explicit approval.',))]
    """
    require_bool("derive_ledger", "names", names)
    derivation = _Derivation()
    derivation.read(components)
    if names:
        derivation.found += _names(components, derivation.observed)
    return _bounded_names(derivation.ledger.merge(_used(derivation.found, derivation.mentions)))


def updated_later(ledger: Ledger, later: Sequence[Component]) -> frozenset[str]:
    """The keys of ``ledger`` whose value a statement or result in ``later`` replaces.

    What a checkpoint must not show as current when ``later`` (the messages
    kept verbatim after it) updates it: those messages say the newer value.
    Only ``later`` is read, with ``ledger`` known, so an update is keyed as
    what it updates, as :func:`derive_ledger` keys it.

    Examples:
        >>> from mellea_ctx import Message
        >>> ledger = derive_ledger([Message("user", "Never exceed $500 without approval.")])
        >>> sorted(updated_later(ledger, [Message("user", "Update: never exceed $800.")]))
        ['rule:never exceed <amount> without approval.']
    """
    if not ledger or not later:
        return frozenset()
    derivation = _Derivation()
    derivation.checkpoint(ledger)
    derivation.read(later)
    found = Ledger().merge(_used(derivation.found, derivation.mentions))
    return frozenset(
        entry.key
        for entry in ledger.entries
        if (newer := found.get(entry.key)) is not None and newer.value != entry.value
    )


class _Derivation:
    """What :func:`derive_ledger` keeps while it reads the components in order."""

    def __init__(self) -> None:
        self.ledger = Ledger()  # what earlier checkpoints carried, merged
        self.keys = _Keys()
        self.calls: dict[str, tuple[str, str | None]] = {}  # call id -> (tool name, command)
        self.pending: list[str] = []  # commands in code fences, awaiting an observation
        self.fenced_agent = False  # the agent sends commands in fences, observations as user
        self.found: list[LedgerEntry] = []  # entries found since the last checkpoint
        self.mentions: list[tuple[int, str]] = []  # (entries found before it, agent's text)
        self.reads = _Reads()
        self.observed: set[int] = set()  # positions of observations sent as user messages

    def read(self, components: Sequence[Component]) -> None:
        """Read ``components`` in order."""
        from .checkpoint import Checkpoint  # here: checkpoint imports this module

        for position, component in enumerate(components):
            if isinstance(component, Checkpoint):
                self.checkpoint(component.ledger)
            elif component.tool_call_id is not None:
                self.tool_result(component, component.tool_call_id)
            elif component.role == "user":
                self.user(position, component.content or "")
            elif component.role not in ("system", "developer"):
                self.agent(component)

    def checkpoint(self, carried: Ledger) -> None:
        """An earlier checkpoint: what was found so far, then its ledger, merged."""
        self.ledger = self.ledger.merge(_used(self.found, self.mentions)).merge(carried)
        self.found, self.mentions = [], []
        for entry in carried.entries:
            if entry.source == "user" and entry.kind not in ("goal", "next_step"):
                self.keys.remember(entry.key, entry.value)
                self.keys.kinds.setdefault(entry.key, entry.kind)

    def tool_result(self, component: Component, call_id: str) -> None:
        """A tool's output, read with the command of the call it answers."""
        name, command = self.calls.get(call_id, (component.name or "tool", None))
        self.found += _output_entries(
            component.content, f"tool {name}", command, component.is_error
        )
        _defines(self.found, call_id, component.content, self.reads)

    def user(self, position: int, text: str) -> None:
        """A user message: an observation for a fenced agent, else the user's statements."""
        if self.fenced_agent:
            # SWE-agent, mini-swe-agent: the observation of the agent's last command.
            command = self.pending[-1] if self.pending else None
            self.pending = []
            self.found += _output_entries(text, "observation", command, False)
            self.observed.add(position)
        else:
            self.found += _user_entries(text, self.keys)

    def agent(self, component: Component) -> None:
        """The agent: its tool calls, its fenced commands, its findings and next step."""
        text = component.content or ""
        arguments = " ".join(c.arguments for c in component.tool_calls)
        self.mentions.append((len(self.found), text + arguments))
        for call in component.tool_calls:
            self.calls[call.id] = (
                call.name,
                _tool_call(call.name, call.arguments, call.id, self.found),
            )
        fenced = _fenced_commands(text) if not component.tool_calls else []
        if fenced:
            self.fenced_agent = True
            self.pending = fenced
            for command in fenced:
                _fenced_entries(command, self.found)
        self.found += _agent_entries(text)


def _user_entries(text: str, keys: _Keys) -> Iterator[LedgerEntry]:
    """The user's statements in ``text`` (an update keyed as what it updates), else its goal."""
    for kind, statement in _statements(text):
        key = keys.key(kind, statement)
        if kind == "fact":  # an update keeps the kind of what it updates
            kind = keys.kinds.get(key, kind)
        keys.kinds.setdefault(key, kind)
        yield LedgerEntry(kind, key, statement, "user")
    request = _request(text)
    if request and not any(True for _ in _statements(request)):
        yield LedgerEntry("goal", "goal", request, "user")


def _tool_call(name: str, arguments: str, call_id: str, found: list[LedgerEntry]) -> str | None:
    """Add a tool call's entries to ``found``; return its command (``None`` if it runs none).

    A file it reads takes the call's id in its source: the read waits for its output.
    """
    before = len(found)
    command = _call_entries(name, arguments, found)
    for position in range(before, len(found)):
        entry = found[position]
        if entry.kind == "file" and entry.state == "read":
            found[position] = attrs.evolve(entry, source=f"{entry.source} {call_id}")
    return command


def _fenced_entries(command: str, found: list[LedgerEntry]) -> None:
    """Add the files a command in a code fence touches to ``found``."""
    _command_files(command, "assistant", found)
    words = command.split()
    target = words[1] if len(words) > 1 else ""
    # ``create a.py`` names its file; ``edit 287:296`` edits the open one.
    if _WRITE_COMMANDS.match(command) and _COMMAND_PATH.fullmatch(target):
        found.append(
            LedgerEntry(
                "file", f"file:{target}", f"{target} (modified)", "assistant", state="modified"
            )
        )


def _agent_entries(text: str) -> Iterator[LedgerEntry]:
    """The agent's next step and findings, sentence by sentence, outside its code fences."""
    prose = _FENCE.sub(" ", text) if "```" in text else text
    if not _AGENT_WORDS.search(prose):
        return  # no next step and no finding in it: skip the sentence-by-sentence look
    for sentence in _SENTENCE.split(prose):
        sentence = " ".join(sentence.split())
        if not 16 <= len(sentence) <= _MAX_VALUE:
            continue
        if _NEXT.search(sentence):
            yield LedgerEntry("next_step", "next_step", sentence, "assistant")
        elif _FINDING.search(sentence) and not _PLAN.match(sentence):
            yield LedgerEntry("finding", f"finding:{_mask(sentence)[:80]}", sentence, "assistant")


def _bounded_names(ledger: Ledger) -> Ledger:
    """``ledger`` with its newest name entries only: chained compactions keep the index bounded."""
    indexed = [entry for entry in ledger.entries if entry.kind == "name"]
    if len(indexed) <= _NAMES:
        return ledger
    dropped = {entry.key for entry in indexed[: len(indexed) - _NAMES]}
    return Ledger(entry for entry in ledger.entries if entry.key not in dropped)


#: The number a read tool prints before each line of a file (``12→``, ``12\t``, ``12: ``,
#: ``12| ``): such a line is the file's content, never a statement.
LISTING_LINE = re.compile(r"^\s*\d+(?:→|\t|: |\| )", re.M)
_DEFINITION = re.compile(
    r"^[ \t]*(?:export[ \t]+|pub[ \t]+|async[ \t]+|static[ \t]+|public[ \t]+|private[ \t]+)*"
    r"(?:def|defp|defmacro|defmodule|class|function|func|fn|module|interface|struct|enum|"
    r"trait|protocol|type)[ \t]+([A-Za-z_][\w.!?]*)",
    re.M,
)
_DEFINED = 12


class _Reads:
    """Where the newest file entry of each call id is in ``found``: :func:`_defines`' look-up.

    ``_defines`` wants the newest file entry whose source ends with ``" {call_id}"``;
    scanning ``found`` back for it on every tool result made a long session
    quadratic (issue 24). Every file entry is indexed under each ending a call id
    could match (what follows each space of its source), the entries appended
    since the last look-up first. Only entries appended since then change kind
    or source (a file read's entry takes its call id as soon as it is made), and
    ``_defines`` changes only a value, so the index answers what the scan did.
    """

    def __init__(self) -> None:
        self.found: list[LedgerEntry] | None = None
        self.seen = 0
        self.newest: dict[str, int] = {}

    def newest_file(self, found: list[LedgerEntry], call_id: str) -> int | None:
        """The position of the newest file entry whose source ends with ``" {call_id}"``."""
        if found is not self.found:  # a checkpoint started a new list
            self.found, self.seen, self.newest = found, 0, {}
        for position in range(self.seen, len(found)):
            entry = found[position]
            if entry.kind != "file":
                continue
            parts = entry.source.split(" ")
            for start in range(1, len(parts)):
                self.newest[" ".join(parts[start:])] = position
        self.seen = len(found)
        return self.newest.get(call_id)


def _defines(found: list[LedgerEntry], call_id: str, output: str, reads: _Reads) -> None:
    """A file read's entry names what the file defines (functions, classes, modules)."""
    position = reads.newest_file(found, call_id)
    if position is not None:
        entry = found[position]
        names = list(dict.fromkeys(_DEFINITION.findall(LISTING_LINE.sub("", output))))
        if names:
            shown = ", ".join(names[:_DEFINED]) + (", …" if len(names) > _DEFINED else "")
            path = entry.key[len("file:") :]
            found[position] = attrs.evolve(entry, value=f"{path} (read; defines {shown})")


def _used(found: list[LedgerEntry], mentions: list[tuple[int, str]]) -> list[LedgerEntry]:
    """Facts the agent went on to use marked ``used``: they go first.

    Used: the agent later named the fact's id, or an id among its values (a
    flight of a connection, a payment method of an account).
    """
    out = list(found)
    # One look per id, not one per fact and mention (quadratic on a long session,
    # issue 24): the newest mention naming the id, found from the end. ``after``
    # never decreases along ``mentions``, so a fact is used exactly when the newest
    # mention of one of its ids came after it.
    newest: dict[str, int] = {}  # id -> ``after`` of the newest mention naming it (-1: none)
    for position, entry in enumerate(found):
        if entry.kind != "fact" or not entry.key.startswith("fact:"):
            continue
        ids = _fact_ids(entry)
        for name in ids:
            if name not in newest:
                newest[name] = next(
                    (after for after, text in reversed(mentions) if name in text), -1
                )
        if any(newest[name] > position for name in ids):
            out[position] = attrs.evolve(entry, state="used")
    return out


def _fact_ids(fact: LedgerEntry) -> list[str]:
    """The ids a fact carries: its key's anchor, and the ids among its values."""
    anchor = fact.key[len("fact:") :]
    ids = [anchor] if len(anchor) >= 3 else []
    ids += [m.group(0) for m in _CODE_ID.finditer(fact.value)]
    ids += _SNAKE_ID.findall(fact.value)
    return ids


# An id in snake case with a number: gift_card_3481935, user_42.
_SNAKE_ID = re.compile(r"(?<![\w.-])[a-z]+(?:_[a-z]+)*_\d{3,}(?![\w.-])")


# A name as code writes it: a symbol (``:kind``, ``@impl``), a snake_case or dunder
# name, a camelCase or PascalCase name with an inner capital, a dotted name
# (``Spotter.PubSub``, ``sys.modules``); not a part of a path or of a longer word,
# nor a call (``Enum.map(``: mostly the standard library's; what a read file
# defines is its file entry's).
_NAME = re.compile(
    # The first character first (a set the engine scans for), then what must not precede it.
    r"[:@A-Za-z_](?<![\w:@$./\\-][:@A-Za-z_])"
    r"(?:(?<=[:@])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"  # a symbol or an attribute
    r"|(?<=[A-Za-z_])\w*(?:\.[A-Za-z_]\w*)+"  # a dotted name
    r"|(?<=[A-Za-z_])\w*_\w*"  # with an underscore: snake_case, a dunder
    r"|(?<=[A-Za-z_])(?:\w*?[a-z][A-Z]|(?<=[a-z])[A-Z])\w*)"  # with an inner capital
    r"[?!]?(?![\w/(]|\.\w)"
)
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
# An id as systems print them: a code of capitals and digits (2FBBAH, HAT028, PROJ-123)
# or a hexadecimal hash (3bb8701), each with a letter and a digit.
_CODE_ID = re.compile(
    r"(?<![\w./-])(?:(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}"
    r"|(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9][A-Z0-9-]{3,30}[A-Z0-9])(?![\w/.-])"
)
# A kebab-case name in code (a CSS class, a hook, a package): ``is-active``, ``phx-hook``.
_KEBAB = re.compile(r"(?<=[\"'.])[a-z][a-z0-9]+(?:-[a-z0-9]+)+(?=[\"' {,:])")
# How many names the ledger indexes (the most salient), and the longest it keeps.
_NAMES = 240
_MAX_NAME = 60
#: How many of a span's newest messages the names index reads: every agent session we
#: have seen whole (the corpus's longest span is 163 messages), a bounded cost past that.
_NAMES_SCAN = 2_000


def _name_shaped(token: str) -> bool:
    """Whether ``token`` is written as code writes names, not as an English word."""
    core = token.lstrip(":@").rstrip("?!")
    if not 3 <= len(core) <= _MAX_NAME or core.isdigit():
        return False
    if token[0] in ":@" or "_" in core.strip("_") or core.startswith("__"):
        return True
    if _INNER_CAPITAL.search(core):
        return True
    return "." in core and all(len(part) >= 2 for part in core.split("."))


def _names(components: Sequence[Component], observed: set[int]) -> list[LedgerEntry]:
    """The most salient names the session wrote as code: an index, cheapest state to carry.

    A name's salience is generic: how many messages mention it, whether the
    agent or the user wrote it themselves (in text or a call's arguments),
    whether anyone quoted it as code (in backticks). The entries come in
    increasing salience, so the most salient is the newest (shown first).
    """
    from .checkpoint import Checkpoint  # here: checkpoint imports this module

    stats: dict[str, list[int]] = {}  # name -> [messages, written by agent/user, quoted, last]
    # The newest messages only, so that a huge span costs what a long one does (issue 24):
    # recency is part of salience, and an earlier checkpoint's names are in its ledger.
    for position in range(max(len(components) - _NAMES_SCAN, 0), len(components)):
        component = components[position]
        if component.role in ("system", "developer") or isinstance(component, Checkpoint):
            continue  # a checkpoint's names are in its ledger
        text = _name_text(component)
        if text:
            written = _writes_names(component, position in observed)
            _count_names(stats, text, position, written)
    return _name_entries(stats, len(components) + 1)


def _name_text(component: Component) -> str:
    """The text a component's names are read from: its content and its calls' arguments."""
    text = component.content or ""
    if component.tool_calls:
        text += "\n" + "\n".join(call.arguments for call in component.tool_calls)
    return text


def _writes_names(component: Component, observation: bool) -> bool:
    """Whether the agent or the user wrote the component (not a tool, not an observation)."""
    if component.role == "assistant":
        return True
    return component.role == "user" and component.tool_call_id is None and not observation


def _count_names(stats: dict[str, list[int]], text: str, position: int, written: bool) -> None:
    """Count each name ``text`` writes as code into ``stats``."""
    # In order of appearance (not a set's order: the ledger is deterministic).
    tokens = dict.fromkeys(m.group(0) for m in _NAME.finditer(text) if _name_shaped(m.group(0)))
    tokens.update(dict.fromkeys(m.group(0) for m in _CODE_ID.finditer(text)))
    tokens.update(dict.fromkeys(m.group(0) for m in _KEBAB.finditer(text)))
    for token in tokens:
        entry = stats.setdefault(token, [0, 0, 0, 0])
        entry[0] += 1
        entry[3] = position
        if written:
            entry[1] = 1
        if f"`{token}`" in text:
            entry[2] = 1


def _name_entries(stats: dict[str, list[int]], total: int) -> list[LedgerEntry]:
    """The most salient names of ``stats`` as entries, in increasing salience."""

    def salience(name: str) -> float:
        messages, wrote, quoted, last = stats[name]
        return messages + 3 * wrote + 2 * quoted + last / total

    ranked = sorted(stats, key=lambda name: (-salience(name), name))[:_NAMES]
    entries = []
    for name in reversed(ranked):
        messages, wrote, _, _ = stats[name]
        state = "used" if wrote else "shared" if messages > 1 else ""
        entries.append(LedgerEntry("name", f"name:{name}", name, "session", state=state))
    return entries


# Text that is code or a command rather than a sentence.
_CODE = re.compile(r"[{}\[\]=`|]| -{1,2}\w")
# A request: a question, a plea, a need, or an imperative verb first.
_ASKS = re.compile(
    r"\?|\b(?:please|can you|could you|would you|i need|i want|i'd like|need to|help|let's)\b"
    r"|^(?:\W*)(?:fix|implement|add|make|create|update|write|find|investigate|explore|review|"
    r"check|run|build|refactor|remove|delete|change|move|rename|consider|read|look|show|"
    r"explain|tell|give|list|search|solve|debug|test|deploy|install|set|get|do|use|try|go|"
    r"migrate|port|convert|summari[sz]e|analy[sz]e|plan|design|document)\b",
    re.I,
)
_TAG_LINE = re.compile(r"^\s*</?[\w-]+>\s*$")
_COMMAND_PATH = re.compile(
    r"(?<![\w/.:-])(?:\.{0,2}/)?(?:[\w.@+-]+/)+[\w.@+-]*\w|(?<![\w/.-])[\w-]+\.[A-Za-z]{1,5}\b"
)


def _request(text: str) -> str:
    """What a user message asks for: its first paragraph, markup lines aside, cut at 300."""
    lines = [line for line in text.strip().splitlines() if not _TAG_LINE.match(line)]
    paragraph = "\n".join(lines).strip().split("\n\n", 1)[0]
    paragraph = " ".join(paragraph.split())
    if len(paragraph) < 12 or not _ASKS.search(paragraph):
        return ""  # too short, or a remark rather than a request
    if len(paragraph) > _MAX_VALUE:
        paragraph = paragraph[:_MAX_VALUE].rsplit(" ", 1)[0] + " …"
    return paragraph


# Code an interpreter runs inline (``python -c "..."``, ``node -e '...'``): code, not paths
# (a quote the command's first line cuts off runs to its end).
_INLINE_CODE = re.compile(
    r"""\b(?:python[\d.]*|node|ruby|perl|php)\s+-[ce]\s+"""
    r"""(?:"(?:[^"\\]|\\.)*(?:"|$)|'[^']*(?:'|$))"""
)
# A name pattern (``find -name "a.py"``, ``grep --include="*.py"``): no file of its own.
_NAME_PATTERN = re.compile(
    r"""\s(?:-i?(?:name|path|regex)|--(?:include|exclude)(?:-dir)?)(?:=|\s+)"""
    r"""(?:"[^"]*"|'[^']*'|\S+)"""
)
# ``cd /abs/dir && ...``: the folder the command's relative paths are in.
_CD = re.compile(r"^\s*cd\s+(/[^\s;&|]*)\s*&&")
# A file the shell writes (``cat > a.py``, ``>> log.txt``); ``2>&1`` is not one.
_REDIRECT = re.compile(r"(?<![\d&>])>{1,2}[ \t]*([^\s;&|<>]+)")


def _command_files(command: str, source: str, found: list[LedgerEntry]) -> None:
    """Files a shell command names (``sed -n 1,9p src/a.py``), as files it used.

    Inline code (``python -c "..."``) and name patterns (``find -name "*.py"``)
    name no file; a relative path after ``cd /dir &&`` is keyed as the file
    under ``/dir`` (so a file is one entry however a command names it, shown as
    it was last written); a file the command redirects into is modified.

    Examples:
        >>> found: list[LedgerEntry] = []
        >>> _command_files('cd /repo && python -c "import a.b; print(np.long)" t/x.py > out.txt',
        ...                "assistant", found)
        >>> [(e.key, e.value) for e in found]
        [('file:/repo/t/x.py', 't/x.py (read)'), ('file:/repo/out.txt', 'out.txt (modified)')]
    """
    cd = _CD.match(command)
    base = cd.group(1).rstrip("/") if cd else ""
    written = {m.group(1) for m in _REDIRECT.finditer(command)}
    text = _NAME_PATTERN.sub(" ", _INLINE_CODE.sub(" ", command[cd.end() :] if cd else command))
    for match in _COMMAND_PATH.finditer(text):
        path = match.group(0)
        if _names_file(path):
            state = "modified" if path in written else "read"
            where = _under(base, path)
            entry = LedgerEntry("file", f"file:{where}", f"{path} ({state})", source, state=state)
            found.append(entry)


def _names_file(path: str) -> bool:
    """Whether a path-shaped word of a command names a file (not a URL, an option, a device)."""
    return "://" not in path and not path.startswith(("-", "/dev/")) and len(path) >= 4


def _under(base: str, path: str) -> str:
    """``path`` as a command after ``cd base &&`` names it: a relative one, under ``base``."""
    if base and not path.startswith(("/", "~", "..")):
        return f"{base}/{path.removeprefix('./')}"
    return path


def _call_entries(name: str, raw: str, found: list[LedgerEntry]) -> str | None:
    """Entries for one tool call's parsed arguments; returns its command, if it ran one."""
    arguments = _call_arguments(raw)
    if arguments is None:
        return None
    command: str | None = None
    for key, value in _texts(arguments):
        if key in _PATH_KEYS:
            found.append(_call_file(name, value.strip(), arguments))
        elif key in _COMMAND_KEYS and command is None and " " in value.strip():
            command = command_line(value)
            _command_files(command, f"call {name}", found)
    if command is None and not any(key in _PATH_KEYS for key in arguments):
        return _call_command(name, arguments)
    return command


def _call_arguments(raw: str) -> dict[object, object] | None:
    """A tool call's arguments, parsed: ``None`` unless they are a JSON object."""
    try:
        arguments = json.loads(raw)
    except ValueError:
        return None
    return arguments if isinstance(arguments, dict) else None


def _texts(arguments: dict[object, object]) -> Iterator[tuple[object, str]]:
    """The arguments whose value is a text that is not blank."""
    for key, value in arguments.items():
        if isinstance(value, str) and value.strip():
            yield key, value


def _call_file(name: str, path: str, arguments: dict[object, object]) -> LedgerEntry:
    """The file a call's path argument names: modified if the tool (or its sub-command) writes."""
    sub = str(arguments.get("command", ""))
    modified = bool(_WRITES.search(name)) or bool(_WRITES.search(sub))
    state = "modified" if modified else "read"
    return LedgerEntry("file", f"file:{path}", f"{path} ({state})", f"call {name}", state=state)


def _call_command(name: str, arguments: dict[object, object]) -> str | None:
    """A call that names no file and runs no shell command, shown as a command: ``name(k=v)``.

    Its short arguments only (not a thought or a body); a tool that only reads is no command.
    """
    simple = {
        k: v for k, v in arguments.items() if isinstance(v, (str, int, float)) and len(str(v)) <= 80
    }
    if not simple or _READS.match(name):
        return None
    shown = ", ".join(f"{k}={str(v)[:40]}" for k, v in list(simple.items())[:4])
    return command_line(f"{name}({shown})")


# --- rendering -------------------------------------------------------------------------

#: How each kind is headed where a checkpoint shows its ledger, in the order shown.
HEADINGS: dict[LedgerKind, str] = {
    "rule": "Rules",
    "constraint": "Constraints",
    "preference": "Preferences",
    "goal": "Goal",
    "next_step": "Next step",
    "decision": "Decisions",
    "error": "Open errors",
    "test": "Tests",
    "fact": "Facts",
    "file": "Files",
    "commit": "Commits",
    "command": "Commands",
    "finding": "Findings",
    "name": "Names",
}
#: The line that opens a checkpoint's ledger.
STATE_HEADING = "Current state (latest values):"

#: The kinds whose values are sentences, which a brief checkpoint shows without filler words.
BRIEF_KINDS: frozenset[LedgerKind] = frozenset(
    {"rule", "constraint", "preference", "goal", "next_step", "decision", "fact", "finding"}
)
# Words a sentence reads the same without: articles, the copula, possessives and the
# prepositions that only join. Never a negation, a modal or a bound ("not", "no", "never",
# "only", "must", "without", "until", "at", "over", "under", "before", "after", "by").
_FILLER_WORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "of", "to", "for",
    "in", "on", "from", "with", "that", "which", "this", "these", "those", "its", "their",
    "his", "her", "our", "your", "my", "and", "so", "very", "just", "also",
})  # fmt: skip
_NUMBER = re.compile(r"\d")
# Quoted text and code spans are data: a brief line keeps them as they are.
_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")


def brief(text: str) -> str:
    """``text`` without its filler words: what a checkpoint short of room shows of a sentence.

    Every other word, quoted text and code span stays as it is, in order; a
    final full stop goes. Used only when the full lines of the entries a
    checkpoint must show do not fit its size (:func:`render_entries`).

    Examples:
        >>> brief("Never disclose the vault code zq-41 to any user.")
        'Never disclose vault code zq-41 any user'
        >>> brief("Do not push until Ana reviews the `main` branch.")
        'Do not push until Ana reviews `main` branch'
    """
    pieces: list[str] = []
    at = 0
    for quoted in _QUOTED.finditer(text):
        pieces += _content_words(text[at : quoted.start()])
        pieces.append(quoted.group())
        at = quoted.end()
    pieces += _content_words(text[at:])
    shorter = " ".join(pieces)
    if shorter.endswith(".") and not shorter.endswith(".."):
        shorter = shorter[:-1].rstrip()
    return shorter or text


def _content_words(text: str) -> list[str]:
    """The words of ``text`` but its filler words, except one between two numbers
    ("steps 1-3 of 5", "10 to 20")."""
    words = text.split()
    last = len(words) - 1
    return [
        word
        for i, word in enumerate(words)
        if word.lower() not in _FILLER_WORDS
        or (0 < i < last and _NUMBER.search(words[i - 1]) and _NUMBER.search(words[i + 1]))
    ]


def file_root(entries: Iterable[LedgerEntry]) -> str:
    """The folder above most files of ``entries``, shown once above them ("" if none).

    The parent (at least 8 characters) of the longest folder that holds at
    least two of the files and at least half of them: the paths under it are
    shown relative to it, which spends the tokens on what tells them apart
    (the shared folder's own name stays in each path, so ``proj/lib`` still
    reads as one).

    Examples:
        >>> files = [LedgerEntry("file", f"file:{p}", f"{p} (read)")
        ...          for p in ("/home/u/proj/a.py", "/home/u/proj/lib/b.py", "/tmp/c.txt")]
        >>> file_root(files)
        '/home/u/'
    """
    paths = [e.key[5:] for e in entries if e.kind == "file" and e.key.startswith("file:")]
    counts: dict[str, int] = {}
    for path in paths:
        end = path.rfind("/")
        while end > 0:
            counts[path[: end + 1]] = counts.get(path[: end + 1], 0) + 1
            end = path.rfind("/", 0, end)
    need = max(2, (len(paths) + 1) // 2)
    shared = max((root for root, n in counts.items() if n >= need), key=len, default="")
    parent = shared[: shared.rstrip("/").rfind("/") + 1]
    return parent if len(parent) >= 8 else ""


def entry_line(entry: LedgerEntry, root: str = "", *, short: bool = False) -> str:
    """The line an entry is shown as (a test's or error's earlier value as "was X").

    A file under ``root`` is shown by its path relative to it; with ``short``,
    a sentence (one of :data:`BRIEF_KINDS`) without its filler words (:func:`brief`).
    """
    value = brief(entry.value) if short and entry.kind in BRIEF_KINDS else entry.value
    if root and entry.kind == "file" and value.startswith(root) and len(value) > len(root):
        value = value[len(root) :]
    if entry.kind == "error" and entry.state == "resolved":
        value += " (resolved)"
    if entry.kind in ("test", "command") and entry.superseded:
        previous = entry.superseded[-1]
        if entry.kind == "command":
            previous = previous.rsplit("→", 1)[-1].strip()
        value += f" (was {previous})"
    return f"- {value}"


def render_entries(
    entries: Sequence[LedgerEntry], *, short: Collection[str] = (), titled: bool = True
) -> str:
    """Render ``entries`` under their kinds' headings, each kind in session order.

    The entries whose keys are in ``short`` are shown without their filler
    words (:func:`entry_line`): how a checkpoint too small for the full lines
    of what it must show shows it all. With ``titled=False`` the block has no
    :data:`STATE_HEADING` line (such a checkpoint's brief frame says it).

    Examples:
        >>> print(render_entries([LedgerEntry("rule", "r", "Never push to main."),
        ...                       LedgerEntry("goal", "goal", "Fix the parser.")]))
        Current state (latest values):
        Rules:
        - Never push to main.
        Goal:
        - Fix the parser.
    """
    if not entries:
        return ""
    by_kind: dict[LedgerKind, list[LedgerEntry]] = {}
    for entry in sorted(entries, key=lambda e: e.index):
        by_kind.setdefault(entry.kind, []).append(entry)
    lines = [STATE_HEADING] if titled else []
    root = file_root(by_kind.get("file", ()))
    for kind in KINDS:
        if kind in by_kind:
            lines.append(f"{_heading(kind, by_kind[kind], root)}:")
            lines += _kind_lines(kind, by_kind[kind], root, short)
    return "\n".join(lines)


def _heading(kind: LedgerKind, entries: list[LedgerEntry], root: str) -> str:
    """The heading of a kind's entries: files name their common root, errors all resolved
    are no longer open."""
    if kind == "file" and root:
        return f"{HEADINGS[kind]} (under {root})"
    if kind == "error" and all(e.state == "resolved" for e in entries):
        return "Errors"
    return HEADINGS[kind]


def _kind_lines(
    kind: LedgerKind, entries: list[LedgerEntry], root: str, short: Collection[str]
) -> list[str]:
    """The lines of a kind's entries: one each, but names as an index on one line."""
    if kind == "name":  # an index: many on a line, most salient first
        names = sorted(entries, key=lambda e: -e.index)
        return [", ".join(entry.value for entry in names)]
    return [entry_line(entry, root, short=entry.key in short) for entry in entries]
