"""Show the summarizer a span within its input budget, and split a span that cannot fit.

A fixed cut (say, every tool output over 4,000 characters) hides what a
budget would have room for and still overflows a small window. Instead the
span is rendered whole when it fits; when it does not, the longest tool
outputs and tool-call argument values are shortened first, all to one common
length (the longest lose most), and a shortened text keeps its head, its
tail, and the lines that hold exact details (paths, errors, results), with a
marker saying how much was left out.

When even that cannot fit (every long text already at the floor), the span is
cut into chunks that each fit; :func:`plan_chunks` says where. Only a single
component too large for the budget on its own is refused, with
:class:`~mellea_ctx.SpanTooLargeError`.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Collection, Sequence

import attrs

from .._core.calls import ToolCall
from .._core.components import Component, ToolMessage
from .._core.exceptions import SpanTooLargeError
from .._core.ledger import (
    BRIEF_KINDS,
    HEADINGS,
    KINDS,
    STATE_HEADING,
    Ledger,
    LedgerEntry,
    LedgerKind,
    entry_line,
    file_root,
    render_entries,
)
from .._formats.quoted import render_conversation

# No text is shortened below this many characters.
_FLOOR = 400
# A kept detail line is cut to this length.
_LINE = 240


@attrs.define(frozen=True, slots=True)
class Shortener:
    """Cuts texts to a length, keeping head, tail and the lines that hold details.

    Args:
        details: Exact details whose lines are kept when a text is cut.
    """

    details: tuple[str, ...] = ()
    _pattern: re.Pattern[str] | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        usable = sorted({d for d in self.details if len(d) >= 4}, key=len, reverse=True)
        if usable:
            pattern = re.compile("|".join(re.escape(d) for d in usable[:200]))
            object.__setattr__(self, "_pattern", pattern)

    def shorten(self, text: str, cap: int) -> str:
        """Return ``text`` cut to about ``cap`` characters (unchanged if already shorter).

        Examples:
            >>> text = "\\n".join(["head"] * 300 + ["error: lib/a.ex broke"] + ["tail"] * 300)
            >>> short = Shortener(("lib/a.ex",)).shorten(text, 500)
            >>> "error: lib/a.ex broke" in short and len(short) < 700
            True
        """
        if len(text) <= cap:
            return text
        head = text[: int(cap * 0.45)]
        tail = text[len(text) - int(cap * 0.2) :]
        middle = text[len(head) : len(text) - len(tail)]
        kept: list[str] = []
        room = cap - len(head) - len(tail)
        if self._pattern is not None:
            for line in middle.splitlines():
                if room <= 0:
                    break
                if self._pattern.search(line):
                    line = line.strip()[:_LINE]
                    kept.append(line)
                    room -= len(line) + 1
        omitted = len(text) - len(head) - len(tail) - sum(len(line) for line in kept)
        marker = f"\n[... {omitted} characters omitted ...]\n"
        middle_text = marker + "\n".join(kept) + ("\n" if kept else "")
        return head + middle_text + tail


def _long_texts(components: Sequence[Component]) -> list[int]:
    """The lengths of every shortenable text: tool outputs and string argument values."""
    lengths: list[int] = []
    for component in components:
        if isinstance(component, ToolMessage):
            lengths.append(len(component.content))
        for call in component.tool_calls:
            lengths.extend(len(value) for value in _string_values(call.arguments))
    return lengths


def _string_values(arguments: str) -> list[str]:
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return [arguments]
    if isinstance(parsed, dict):
        return [value for value in parsed.values() if isinstance(value, str)]
    return []


def _cut(components: Sequence[Component], cap: int, shortener: Shortener) -> list[Component]:
    """The components with every tool output and argument value cut to ``cap``."""
    out: list[Component] = []
    for component in components:
        if isinstance(component, ToolMessage) and len(component.content) > cap:
            component = attrs.evolve(component, content=shortener.shorten(component.content, cap))
        if component.tool_calls and any(
            len(value) > cap
            for call in component.tool_calls
            for value in _string_values(call.arguments)
        ):
            calls = tuple(_cut_call(call, cap, shortener) for call in component.tool_calls)
            component = attrs.evolve(component, tool_calls=calls)  # type: ignore[call-arg]
        out.append(component)
    return out


def _cut_call(call: ToolCall, cap: int, shortener: Shortener) -> ToolCall:
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return attrs.evolve(call, arguments=shortener.shorten(call.arguments, cap))
    if not isinstance(parsed, dict):
        return call
    cut = {
        key: shortener.shorten(value, cap) if isinstance(value, str) else value
        for key, value in parsed.items()
    }
    return attrs.evolve(call, arguments=json.dumps(cut, ensure_ascii=False))


def _cap_for(lengths: list[int], excess: int) -> int | None:
    """The largest common cap that removes ``excess`` characters, or None below the floor."""
    if excess <= 0:
        return max(lengths, default=0) + 1
    low, high = _FLOOR, max(lengths, default=0)
    if sum(max(0, length - low) for length in lengths) < excess:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if sum(max(0, length - middle) for length in lengths) >= excess:
            low = middle
        else:
            high = middle - 1
    return low


def fit_conversation(
    components: Sequence[Component],
    max_tokens: int,
    count: Callable[[str], int],
    shortener: Shortener,
) -> str | None:
    """Render ``components`` within ``max_tokens``; ``None`` when even the floor overflows.

    Args:
        components: The span (or chunk) to render.
        max_tokens: The tokens the rendered conversation may take.
        count: Counts the tokens of a text.
        shortener: Cuts long texts, keeping detail lines.

    Returns:
        The rendered conversation, or ``None`` if it cannot fit with every
        long text at the floor.
    """
    rendered = render_conversation(components, cut_long_output=False)
    tokens = count(rendered)
    if tokens <= max_tokens:
        return rendered
    lengths = _long_texts(components)
    chars_per_token = len(rendered) / max(tokens, 1)
    cap = _cap_for(lengths, len(rendered) - int(max_tokens * chars_per_token * 0.97)) or _FLOOR
    for _ in range(8):
        rendered = render_conversation(_cut(components, cap, shortener), cut_long_output=False)
        tokens = count(rendered)
        if tokens <= max_tokens:
            return rendered
        if cap <= _FLOOR:
            return None
        # Indentation and escapes make rendered text outgrow the raw texts: shrink in proportion.
        cap = max(_FLOOR, int(cap * max_tokens / tokens * 0.95))
    return None


def plan_chunks(
    components: Sequence[Component],
    max_tokens: int,
    count: Callable[[str], int],
    shortener: Shortener,
) -> list[tuple[Component, ...]]:
    """Split ``components`` into consecutive chunks that each fit ``max_tokens`` when rendered.

    Raises:
        SpanTooLargeError: If one component alone cannot fit, even shortened.
    """
    chunks: list[tuple[Component, ...]] = []
    current: list[Component] = []
    for component in components:
        alone = fit_conversation([component], max_tokens, count, shortener)
        if alone is None:
            msg = (
                f"a {type(component).__name__} of the span ({component.role}, "
                f"{len(component.content)} characters) cannot fit the summarizer's input budget "
                f"of {max_tokens} tokens even shortened; use a backend with a larger "
                "context_window= or keep that message out of the span"
            )
            raise SpanTooLargeError(msg)
        if (
            current
            and fit_conversation([*current, component], max_tokens, count, shortener) is None
        ):
            chunks.append(tuple(current))
            current = []
        current.append(component)
    if current:
        chunks.append(tuple(current))
    return chunks


# --- the ledger within the checkpoint's size -----------------------------------------

# Priority tiers: what is never dropped while anything else is shown, then the
# current state, then history. Within a tier, kinds take turns (newest first),
# so one noisy kind cannot starve the others.
_TIERS: tuple[tuple[LedgerKind, ...], ...] = (
    ("rule", "constraint", "goal", "next_step", "error"),
    ("preference", "decision", "fact", "test", "file", "commit", "command", "finding"),
    ("command", "fact", "error", "name"),
)


def _tier(entry: LedgerEntry) -> int:
    if entry.kind == "error":
        return 0 if entry.state != "resolved" else 2
    if entry.kind == "file":
        return 1  # a file's latest state is current state, read or modified
    if entry.kind == "command":
        return 1 if entry.state == "failed" else 2  # a failed command's outcome is still open
    if entry.kind == "fact" and entry.state == "listed":
        return 2  # one of many search results: history, unless the agent used it
    return next(i for i, kinds in enumerate(_TIERS) if entry.kind in kinds)


def _command_words(ledger: Ledger) -> Counter[str]:
    """How many of the ledger's commands have each word (quotes and brackets stripped)."""
    words: Counter[str] = Counter()
    for entry in ledger.entries:
        if entry.kind == "command":
            words.update({word.strip("\"'`,;()") for word in entry.value.split()})
    return words


def _named_by(file: LedgerEntry, words: Counter[str]) -> int:
    """How many commands name ``file``: by its key's path, or by the path as it is shown."""
    paths = {file.key.removeprefix("file:"), file.value.split(" (", 1)[0]}
    return sum(words[path] for path in paths)


def _priority(ledger: Ledger) -> list[LedgerEntry]:
    """Entries most important first: by tier, kinds taking turns, newest first in a kind."""
    ordered: list[LedgerEntry] = []
    for tier in range(len(_TIERS)):
        queues = _queues(ledger, tier)
        if tier == 0:  # never dropped while anything else is shown: all, in kind order
            for kind in _TIERS[0]:
                ordered += queues.get(kind, [])
            continue
        ordered += _taking_turns([queues[kind] for kind in KINDS if kind in queues])
    return ordered


def _queues(ledger: Ledger, tier: int) -> dict[str, list[LedgerEntry]]:
    """The entries of ``tier`` by kind, each kind's most important first (newest by default)."""
    queues: dict[str, list[LedgerEntry]] = {}
    for entry in reversed(ledger.entries):
        if _tier(entry) == tier:
            queues.setdefault(entry.kind, []).append(entry)
    if "fact" in queues:  # facts the agent went on to use first
        queues["fact"].sort(key=lambda e: e.state != "used")
    if "file" in queues:  # the files the session's commands went back to most first
        words = _command_words(ledger)  # one pass: linear in the ledger (issue 24)
        queues["file"].sort(key=lambda e: -_named_by(e, words))
    return queues


def _taking_turns(lists: list[list[LedgerEntry]]) -> list[LedgerEntry]:
    """The first of each list, then the second of each, and so on."""
    ordered: list[LedgerEntry] = []
    for round_ in range(max((len(q) for q in lists), default=0)):
        ordered += [q[round_] for q in lists if round_ < len(q)]
    return ordered


def _entry_cost(
    entry: LedgerEntry, root: str, kinds: set[str], count: Callable[[str], int], short: bool
) -> int:
    """The tokens ``entry`` adds: its line, and its kind's heading when it is the first shown."""
    cost = count(entry_line(entry, root, short=short)) + 1
    if entry.kind not in kinds:
        cost += count(HEADINGS[entry.kind]) + 2
        if entry.kind == "file" and root:
            cost += count(f" (under {root})")
    return cost


def _past_tier_cap(
    entry: LedgerEntry, spent: int, history_tokens: int | None, state_tokens: int | None
) -> bool:
    """Whether a block of ``spent`` tokens is past the cap of ``entry``'s tier."""
    if history_tokens is not None and _tier(entry) == 2 and spent > history_tokens:
        return True
    return state_tokens is not None and _tier(entry) >= 1 and spent > state_tokens


def _estimated(
    ledger: Ledger,
    max_tokens: int,
    count: Callable[[str], int],
    history_tokens: int | None,
    state_tokens: int | None,
    short: bool = False,
    start: Sequence[LedgerEntry] = (),
    start_short: Collection[str] = (),
) -> tuple[list[LedgerEntry], int]:
    """The entries :func:`choose_entries` takes by priority, each line's tokens estimated,
    and the block's estimated tokens; after ``start`` (shown, ``start_short`` of them
    short), when given."""
    chosen: list[LedgerEntry] = list(start)
    spent = count(render_entries(start, short=start_short)) if start else count(STATE_HEADING) + 1
    kinds: set[str] = {entry.kind for entry in start}
    taken = {entry.key for entry in start}
    # Files shown under the folder most of them share: a subset's is as long or longer.
    root = file_root(ledger.entries)
    for entry in _priority(ledger):
        if entry.key in taken:
            continue
        cost = _entry_cost(entry, root, kinds, count, short)
        if spent + cost > max_tokens:
            continue
        if _past_tier_cap(entry, spent + cost, history_tokens, state_tokens):
            continue
        chosen.append(entry)
        kinds.add(entry.kind)
        spent += cost
    return chosen, spent


def state_tokens(ledger: Ledger, count: Callable[[str], int], state_cap: int) -> int:
    """The tokens the ledger's block needs: every rule, constraint, goal and open error,
    and current state while the block is under ``state_cap`` (history left out).

    What a compactor that sizes its own checkpoint reserves for it, so that a
    size budget never pushes the rules out in favour of old verbatim turns.

    Examples:
        >>> ledger = Ledger([LedgerEntry("rule", "r", "Never push to main."),
        ...                  LedgerEntry("command", "c", "ls → ok")])
        >>> state_tokens(ledger, lambda text: len(text.split()), 100)  # the rule, not the command
        14
    """
    if not ledger:
        return 0
    chosen, spent = _estimated(ledger, sys.maxsize, count, 0, state_cap)
    if not chosen:
        return 0
    # As choose_entries estimates it, line by line: with less, it would skip an entry.
    return max(spent, count(render_entries(chosen)))


def choose_entries(
    ledger: Ledger,
    max_tokens: int,
    count: Callable[[str], int],
    history_tokens: int | None = None,
    state_tokens: int | None = None,
    *,
    short: bool = False,
) -> tuple[tuple[str, ...], tuple[LedgerEntry, ...]]:
    """Choose the ledger entries to show in ``max_tokens``; return their keys and the rest.

    Entries are taken by priority (rules, constraints, the goal, the next step
    and open errors; then current state; then history), skipping one that does
    not fit for a shorter one after it; the rendered block, counted whole, is
    at or under ``max_tokens``. History (commands, listed facts, resolved
    errors) is only taken while the block is under ``history_tokens``, and
    current state and history while it is under ``state_tokens``. With
    ``short``, the lines are counted as ``render_entries(..., short=True)``
    shows them.

    Examples:
        >>> ledger = Ledger([LedgerEntry("command", "c", "ls → ok"),
        ...                  LedgerEntry("rule", "r", "Never push to main.")])
        >>> choose_entries(ledger, 14, lambda text: len(text.split()))
        (('r',), (LedgerEntry(kind='command', key='c', value='ls → ok', source='', index=0, \
superseded=(), state=''),))
    """
    if not ledger or max_tokens <= 0:
        return (), tuple(ledger.entries)
    chosen, _ = _estimated(ledger, max_tokens, count, history_tokens, state_tokens, short)
    briefly = {entry.key for entry in chosen} if short else ()
    while chosen and count(render_entries(chosen, short=briefly)) > max_tokens:
        chosen.pop()  # the estimate ran over: drop the least important chosen
    keys = {entry.key for entry in chosen}
    shown = tuple(entry.key for entry in chosen)  # most important first
    return shown, tuple(entry for entry in ledger.entries if entry.key not in keys)


def choose_block(
    ledger: Ledger,
    max_tokens: int,
    count: Callable[[str], int],
    history_tokens: int | None = None,
    brief_saving: int = 0,
) -> tuple[tuple[str, ...], tuple[LedgerEntry, ...], tuple[str, ...]]:
    """The entries to show in ``max_tokens``, and those of them shown short.

    :func:`choose_entries` with the full lines. When those leave out a rule,
    a constraint, the goal, an open error or current state that short lines
    (:func:`~mellea_ctx._core.ledger.brief`) would show, the rules and state
    are chosen by their short lines instead; then, most important first, each
    gets its full line back while the block fits, and history takes what
    room is left: a checkpoint keeps what the next step needs before it keeps
    its wording, and the user's wording before old commands. Returns the shown
    keys (most important first), the entries left out and the keys shown short.

    A checkpoint that shows short lines has a brief frame too (see
    :class:`~mellea_ctx.Checkpoint`): ``brief_saving`` is the tokens that frame
    saves, which short lines may use.
    """
    shown, omitted = choose_entries(ledger, max_tokens, count, history_tokens)
    if not any(_tier(entry) <= 1 for entry in omitted):
        return shown, omitted, ()
    room = max_tokens + brief_saving
    state, state_omitted = choose_entries(ledger, room, count, 0, short=True)
    if _standing(state_omitted) <= _standing(omitted):
        return shown, omitted, ()
    by_key = {entry.key: entry for entry in ledger.entries}
    chosen = [by_key[key] for key in state]
    short = _full_where_room(chosen, room, count)
    if not short:  # every line full again, so the frame is full: its room is max_tokens
        room = max_tokens
        # Within it, lines go short again where they must (the frame then brief again);
        # chosen with the brief frame's room, short lines fit the room it leaves.
        short = _full_where_room(chosen, room, count)
        if not short and count(render_entries(chosen)) > room:
            return shown, omitted, ()
    start = len(chosen)
    chosen, _ = _estimated(
        ledger, room, count, history_tokens, None, start=chosen, start_short=short
    )  # what room is left, full lines
    while len(chosen) > start and count(render_entries(chosen, short=short)) > room:
        chosen.pop()
    keys = {entry.key for entry in chosen}
    left_out = tuple(entry for entry in ledger.entries if entry.key not in keys)
    return tuple(entry.key for entry in chosen), left_out, tuple(k for k in state if k in short)


def shows_more(ledger: Ledger, keys: Collection[str], than: Collection[str]) -> bool:
    """Whether a block of ``keys`` shows more of ``ledger`` than one of ``than``: it leaves out
    fewer rules, constraints, goals and open errors, or as many and less current state, or
    as much of both and all ``than`` shows, and more.

    Examples:
        >>> ledger = Ledger([LedgerEntry("rule", "r", "Never push to main."),
        ...                  LedgerEntry("command", "c", "ls → ok")])
        >>> shows_more(ledger, ["r"], ["c"]), shows_more(ledger, ["r", "c"], ["r"])
        (True, True)
    """
    wider, narrower = set(keys), set(than)
    standing = _standing([e for e in ledger.entries if e.key not in wider])
    before = _standing([e for e in ledger.entries if e.key not in narrower])
    return standing > before or (standing == before and wider > narrower)


def _standing(omitted: Sequence[LedgerEntry]) -> tuple[int, int]:
    """How many of the first two tiers ``omitted`` holds, negated: more shown compares larger."""
    tiers = Counter(_tier(entry) for entry in omitted)
    return -tiers[0], -tiers[1]


def _full_where_room(
    chosen: Sequence[LedgerEntry], max_tokens: int, count: Callable[[str], int]
) -> set[str]:
    """The keys of ``chosen`` (most important first) left short once each, in that order,
    has taken its full line back while the block fits ``max_tokens``."""
    root = file_root(chosen)
    short = {entry.key for entry in chosen if entry.kind in BRIEF_KINDS}
    spent = count(render_entries(chosen, short=short))
    for entry in chosen:
        if entry.key not in short:
            continue
        extra = count(entry_line(entry, root)) - count(entry_line(entry, root, short=True))
        if spent + extra <= max_tokens:
            short.discard(entry.key)
            spent += extra
    for entry in reversed(chosen):  # the lines' estimate ran over: the least important go short
        if count(render_entries(chosen, short=short)) <= max_tokens:
            break
        if entry.kind in BRIEF_KINDS:
            short.add(entry.key)
    return short
