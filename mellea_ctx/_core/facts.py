"""Exact details a summary must not lose, and the check that it did not.

Summaries paraphrase, and a paraphrase loses exactly what an agent needs
later: the file path, the order id, the command that worked, the commit it
made, the test result, the limit the user set. Before summarizing we extract
such details from the span being replaced (see :mod:`.fact_patterns` for
where each kind is looked for); afterwards we look each one up, verbatim, in
the summary, and the checkpoint carries the ones it lost in a short appendix.

Choice is by kind, then by use: the budget is filled across kinds in turn
(what an earlier checkpoint carried, user constraints and decisions, commit
hashes, test results, errors, files, commands, ids, numbers, URLs), and within a kind the
detail mentioned most often, by the weightiest source (the user, the agent's
own tool calls), and most recently comes first. The budget grows with the
span, as the square root of the number of messages it covers (an earlier
checkpoint counts for the messages it replaced), and is bounded.

A checkpoint that kept its span stands for the details its own compaction
checked, whether its summary held them or its appendix carried them: they
are checked again by every later summary, so a detail a chain of
compactions once kept is not lost because a later summary dropped it. Those
details are worked out bottom-up, with no recursion over the chain's depth,
and memoized on the checkpoint as a component's are.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal, get_args

import attrs

from .checkpoint import Checkpoint
from .checks import require_int
from .components import Component
from .fact_patterns import Candidate, scan

FactKind = Literal[
    "detail",
    "constraint",
    "decision",
    "commit",
    "result",
    "error",
    "path",
    "command",
    "id",
    "quantity",
    "url",
]

# The order kinds take turns in when the budget is filled: the order FactKind names them in.
_KIND_ORDER: tuple[FactKind, ...] = get_args(FactKind)
# The deepest directory holding this share of the files the agent named in its
# tool calls is the project root; paths under it are kept relative to it.
_ROOT_SHARE = 0.75
_ROOT_DEPTH = 3
# A detail an earlier compaction checked weighs as the agent's own words.
_CHECKED = 2


@attrs.define(frozen=True, slots=True)
class Fact:
    """One exact detail found in a span of conversation.

    Attributes:
        kind: What sort of detail it is.
        text: The detail exactly as it appeared.
    """

    kind: FactKind
    text: str


def fact_budget(span_length: int) -> tuple[int, int]:
    """Return ``(limit, max_chars)`` for a span of ``span_length`` components.

    The budget grows as the square root of the span: 24 details for a dozen
    messages, 76 for 160, at most 400.

    Examples:
        >>> fact_budget(10), fact_budget(160), fact_budget(100_000)
        ((24, 1536), (76, 4864), (400, 25600))
    """
    limit = max(24, min(400, round(6 * math.sqrt(max(span_length, 0)))))
    return limit, 64 * limit


def _project_root(paths: Iterable[str]) -> str | None:
    absolute = [path for path in paths if path.startswith("/")]
    if len(absolute) < 2:
        return None
    counts: Counter[str] = Counter()
    for path in set(absolute):
        parts = path.split("/")[1:-1]
        for depth in range(_ROOT_DEPTH, len(parts)):  # a file keeps its own folder
            counts["/" + "/".join(parts[:depth])] += 1
    needed = _ROOT_SHARE * len(set(absolute))
    best = [root for root, count in counts.items() if count >= needed]
    return max(best, key=len) if best else None


def extract_facts(
    components: Sequence[Component], *, limit: int | None = None, max_chars: int | None = None
) -> list[Fact]:
    """Return the exact details of ``components`` worth keeping, most important first.

    The budget is filled across kinds in turn (details an earlier checkpoint
    carried, user constraints, user decisions, commit hashes, test results, errors, paths,
    commands, ids, quantities, URLs); within a kind, the detail with the most
    mentions (weighted: the user and the agent's own tool calls count more
    than tool output) and the latest mention comes first. Paths under the
    project the agent worked in are given relative to it. Each component is
    scanned once and its details memoized on it.

    Args:
        components: The span to take details from.
        limit: At most this many details; by default :func:`fact_budget`'s
            for the number of messages the span covers.
        max_chars: At most this many characters in all; by default
            :func:`fact_budget`'s.

    Returns:
        The chosen details, in the order the budget took them.

    Examples:
        >>> from mellea_ctx import Message
        >>> said = Message("user", "Never touch config/prod.yaml. Deploy in 30 s.")
        >>> facts = extract_facts([said])
        >>> [(f.kind, f.text) for f in facts]  # the path travels inside the constraint
        [('constraint', 'Never touch config/prod.yaml.'), ('quantity', '30 s')]
    """
    for name, value in (("limit", limit), ("max_chars", max_chars)):
        if value is not None:
            require_int("extract_facts", name, value, also="None for fact_budget's")
    default_limit, default_chars = fact_budget(_covered(components))
    limit = default_limit if limit is None else limit
    max_chars = default_chars if max_chars is None else max_chars
    scores = _scores(components)
    by_kind: dict[int, list[str]] = {}
    for text, (rank, score, last) in sorted(
        scores.items(), key=lambda item: (-item[1][1], -item[1][2])
    ):
        del score, last
        by_kind.setdefault(rank, []).append(text)
    return _fill(by_kind, limit, max_chars)


def _covered(components: Sequence[Component]) -> int:
    """How many messages ``components`` cover: a checkpoint, those it replaced."""
    return sum(max(c.replaced_count, 1) if isinstance(c, Checkpoint) else 1 for c in components)


def _scores(components: Sequence[Component]) -> dict[str, list[int]]:
    """Each detail's [kind rank, score, last index], paths relative to the project's root."""
    scores: dict[str, list[int]] = {}
    called_paths: list[str] = []
    for index, component in enumerate(components):
        for kind, text, weight in candidates(component):
            if kind == "path" and weight >= 3:
                called_paths.append(text)
            _add_score(scores, text, _KIND_ORDER.index(kind), weight, index)
    root = _project_root(called_paths)
    return scores if root is None else _rebase(scores, root + "/")


def candidates(component: Component) -> tuple[Candidate, ...]:
    """Return every detail mention in ``component``, computed once and memoized on it.

    For a checkpoint that kept its span, the mentions include the details
    its compaction checked (see the module docstring).
    """
    try:
        return component._facts_memo
    except AttributeError:
        pass
    if isinstance(component, Checkpoint) and component.span:
        _settle(component)
        return component._facts_memo
    found = tuple(scan(component))
    # A benign race: two threads may both compute and store the same tuple.
    object.__setattr__(component, "_facts_memo", found)
    return found


def _settle(top: Checkpoint) -> None:
    """Memoize ``top``'s mentions and those of the checkpoints nested in its span, deepest first."""
    order: list[Checkpoint] = []
    stack = [top]
    while stack:
        checkpoint = stack.pop()
        order.append(checkpoint)
        for inner in checkpoint.span:
            if isinstance(inner, Checkpoint) and inner.span and not hasattr(inner, "_facts_memo"):
                stack.append(inner)
    for checkpoint in reversed(order):  # each one's nested checkpoints are memoized by now
        if not hasattr(checkpoint, "_facts_memo"):
            remember_checked(checkpoint, extract_facts(checkpoint.span))


def remember_checked(checkpoint: Checkpoint, checked: Sequence[Fact]) -> None:
    """Memoize ``checkpoint``'s mentions, given what its compaction checked.

    ``checked`` must be ``extract_facts(checkpoint.span)``: the summary engine
    passes the list it has just checked, so the next compaction does not
    choose it again.
    """
    carried = set(checkpoint.preserved)
    found = tuple(scan(checkpoint)) + tuple(
        ("detail", fact.text, _CHECKED) for fact in checked if fact.text not in carried
    )
    object.__setattr__(checkpoint, "_facts_memo", found)


def _rebase(scores: dict[str, list[int]], root: str) -> dict[str, list[int]]:
    """Paths under ``root`` given relative to it; the two spellings become one detail."""
    rebased: dict[str, list[int]] = {}
    for text, (rank, score, last) in scores.items():
        if text.startswith(root) and len(text) > len(root):
            text = text[len(root) :]
        _add_score(rebased, text, rank, score, last)
    return rebased


def _add_score(scores: dict[str, list[int]], text: str, rank: int, weight: int, last: int) -> None:
    """Count ``text`` once more: its best kind's rank, its summed weight, where it was last."""
    entry = scores.get(text)
    if entry is None:
        scores[text] = [rank, weight, last]
    else:
        entry[0] = min(entry[0], rank)
        entry[1] += weight
        entry[2] = max(entry[2], last)


def _fill(by_kind: dict[int, list[str]], limit: int, max_chars: int) -> list[Fact]:
    """Take details kind by kind in turn until the count or character budget runs out."""
    queues = [(rank, iter(by_kind[rank])) for rank in sorted(by_kind)]
    facts: list[Fact] = []
    constraints: list[str] = []
    budget = max_chars
    while queues and len(facts) < limit:
        still: list[tuple[int, Iterator[str]]] = []
        for rank, queue in queues:
            if len(facts) >= limit:
                break
            text = _next_fitting(queue, budget, constraints)
            if text is None:
                continue  # the kind is spent: it drops out of the turns
            kind = _KIND_ORDER[rank]
            facts.append(Fact(kind, text))
            if kind in ("constraint", "decision"):
                constraints.append(text)
            budget -= len(text)
            still.append((rank, queue))
        queues = still
    return facts


def _next_fitting(queue: Iterator[str], budget: int, constraints: list[str]) -> str | None:
    """The next detail of a kind that fits: not too long for what is left, nor inside a
    user's sentence already taken (``None``: the kind has no more)."""
    for text in queue:
        if len(text) <= budget and not any(text in said for said in constraints):
            return text
    return None


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
