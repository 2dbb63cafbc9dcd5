"""What the command line prints: rich tables built from plain figures (no I/O here)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .._compaction.records import CompactionRecord
from .._core.boundaries import prefix_end
from .._core.components import Component, Message
from .._core.context import ChatContext
from .._core.pins import PinPredicate
from .._core.tokens import TokenCounter, count_memoized
from .._formats.transcripts import title
from .changes import Changes


def _plural(count: int, unit: str) -> str:
    """``"1 item"``, ``"1,200 messages"``."""
    return f"{count:,} {unit}{'' if count == 1 else 's'}"


def _encoding(ctx: ChatContext) -> str:
    encoding = getattr(getattr(ctx.counter, "encoding", None), "name", None)
    return str(encoding) if encoding else type(ctx.counter).__name__


def _by_role(components: Sequence[Component]) -> str:
    roles = Counter(component.role for component in components)
    return ", ".join(f"{count} {role}" for role, count in sorted(roles.items()))


def _setting(strategy: str, options: dict[str, Any]) -> str:
    if strategy == "window":
        return f"--window {options['window']}"
    if strategy == "budget":
        keep = options["keep_recent"]
        recent = f" --keep-recent {keep:,}" if keep is not None else ""
        return f"--budget {options['budget']:,}{recent} --boundary {options['boundary']}"
    return f"--summarize --keep {options['keep']}"


def _note(
    ctx: ChatContext,
    compacted: ChatContext,
    strategy: str,
    options: dict[str, Any],
    pin: PinPredicate,
    record: CompactionRecord | None,
) -> str:
    if record is not None and record.outcome != "applied":
        return f"nothing compacted: {record.reason}"
    if strategy == "window":
        if compacted is ctx:
            return f"already within --window {options['window']}: nothing removed"
        kept = compacted.as_list()
        body = len(kept) - prefix_end(kept, pin)
        if body > options["size"]:
            units = options.get("kept_units", body)
            unit = options.get("unit", "message")
            return f"window widened to {units:,} {unit}s: tool exchanges are kept whole"
        return ""
    if record is None:
        return "already within the budget" if strategy == "budget" else "nothing to summarize"
    return ""


def compact_report(
    ctx: ChatContext,
    compacted: ChatContext,
    *,
    strategy: str,
    options: dict[str, Any],
    pin: PinPredicate,
    record: CompactionRecord | None,
    changes: Changes,
    reason: str | None = None,
) -> RenderableType:
    """Return the before/after table ``compact`` prints.

    The counts and the removed / added / changed rows come from ``changes``:
    the output compared with the input, in the file's own unit. ``reason``,
    when given, is the note (why nothing was done, or why a window widened).
    """
    before = ctx.as_list()
    title = Text(f"mellea-ctx compact: {_setting(strategy, options)}", style="bold")
    figures = Table()
    figures.add_column("")
    figures.add_column("before", justify="right")
    figures.add_column("after", justify="right")
    unit = f"{changes.unit}s"
    figures.add_row(unit, f"{len(changes.before):,}", f"{len(changes.after):,}")
    figures.add_row(
        f"tokens ({_encoding(ctx)})", f"{ctx.token_count:,}", f"{compacted.token_count:,}"
    )
    details = Table.grid(padding=(0, 2))
    details.add_column(style="bold")
    details.add_column()
    for label, text in _change_rows(ctx, compacted, changes):
        details.add_row(label, text)
    preserved = _preserved(record, strategy, changes)
    if preserved:
        details.add_row("details preserved", preserved)
    pairs = "intact" if any(c.tool_calls for c in before) else "no tool calls"
    details.add_row("tool pairs", pairs)
    note = reason or _note(ctx, compacted, strategy, options, pin, record)
    if changes.equal:
        note = f"{note}; the output equals the input" if note else "the output equals the input"
    if note:
        details.add_row("note", note)
    return Group(title, figures, details)


def _preserved(record: CompactionRecord | None, strategy: str, changes: Changes) -> str:
    """The "details preserved" row: what a summary kept exactly, or that a window kept all."""
    if record is not None and record.outcome == "applied":
        return (
            f"{len(record.facts_checked):,} exact details (paths, ids, numbers, commands) "
            f"checked; {len(record.facts_carried):,} the summary lost, carried over verbatim"
        )
    if strategy == "window" and not changes.changed:
        return f"kept {changes.unit}s are unchanged; nothing is summarized"
    return ""


def _missing(components: Sequence[Component], other: Sequence[Component]) -> list[Component]:
    """The components (by identity) of ``components`` that are not in ``other``."""
    present = {id(component) for component in other}
    return [component for component in components if id(component) not in present]


def _change_rows(
    ctx: ChatContext, compacted: ChatContext, changes: Changes
) -> Iterator[tuple[str, str]]:
    """The report's removed / added / changed rows, in the file's own unit."""
    before, after = ctx.as_list(), compacted.as_list()
    removed, added = _missing(before, after), _missing(after, before)
    if changes.removed:
        tokens = sum(count_memoized(ctx.counter, component) for component in removed)
        yield (
            "removed",
            f"{changes.plural(len(changes.removed))} ({changes.roles(changes.removed)}), "
            f"{tokens:,} tokens",
        )
    else:
        yield "removed", "nothing"
    if changes.added:
        if added and len(added) == len(changes.added):
            yield "added", f"{len(added):,} checkpoint (a summary, sent as a user message)"
        else:
            yield "added", changes.plural(len(changes.added))
    if changes.changed:
        shown = ", ".join(changes.label(i) for i, _ in changes.changed[:6])
        more = "" if len(changes.changed) <= 6 else f", and {len(changes.changed) - 6} more"
        yield (
            "changed",
            f"{changes.plural(len(changes.changed))} differ from the input: {shown}{more}",
        )


def lost_note(lost: Sequence[str]) -> str | None:
    """The warning line for what the output format could not carry (``None``: nothing)."""
    if not lost:
        return None
    shown = "; ".join(lost[:3]) + (f"; and {len(lost) - 3} more" if len(lost) > 3 else "")
    return (
        f"warning: the output format could not carry {_plural(len(lost), 'item')} of the "
        f"input, left out: {shown}"
    )


def problems_table(
    source: str,
    provider: str,
    located: Sequence[tuple[str, str]],
    count: int,
    *,
    repaired: int | None = None,
    unit: str = "message",
    unchanged: bool = True,
) -> RenderableType:
    """Return what ``validate`` prints: the problems found, or the changes a repair made.

    ``count`` and ``repaired`` are in ``unit`` (the file's own: turns for
    Anthropic, messages for OpenAI); "already valid" is said only when
    ``unchanged`` (the output equals the input as JSON).
    """
    units = f"{unit}s"
    if repaired is not None:
        title = (
            f"{source}: repaired for {provider}: {len(located):,} change"
            f"{'' if len(located) == 1 else 's'}, {count:,} -> {repaired:,} {units}"
        )
    elif not located:
        return Text(f"{source}: valid for {provider} ({_plural(count, unit)})")
    else:
        title = (
            f"{source}: {len(located):,} problem{'' if len(located) == 1 else 's'} "
            f"for {provider} ({_plural(count, unit)})"
        )
    if not located and unchanged:
        return Text(f"{title}: the history was already valid; the output equals the input")
    table = Table()
    table.add_column("where", no_wrap=True)
    table.add_column("change" if repaired is not None else "problem")
    for where, text in located:
        table.add_row(where, text)
    return Group(Text(title), table)


def _call_tokens(counter: TokenCounter, component: Component) -> dict[str, tuple[str, int]]:
    """Return call id -> (tool name, tokens the call adds to its message)."""
    bare = counter.count(Message("assistant", ""))
    return {
        call.id: (call.name, counter.count(Message("assistant", "", tool_calls=(call,))) - bare)
        for call in component.tool_calls
    }


def _preview(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def stats_report(
    ctx: ChatContext,
    *,
    source: str,
    fmt: str,
    locations: Sequence[str],
    problems: dict[str, list[tuple[str, str]]],
    spans: Sequence[tuple[str, str, tuple[int, int, str]]],
    top: int,
    unit: str = "message",
    file_units: int | None = None,
    turns: Sequence[int] | None = None,
    turn_unit: str = "turn",
) -> RenderableType:
    """Return the tables ``stats`` prints.

    ``problems`` maps a provider to its ``(where, problem)`` rows; the head
    counts ``file_units`` of the file's own ``unit`` (items, contents, turns),
    and, on an Anthropic or Gemini file, ``turns`` (each component's turn or
    content, named ``turn_unit``) lets the cuts count them as ``--window`` does.
    """
    items = ctx.as_list()
    counter = ctx.counter
    sizes = [count_memoized(counter, component) for component in items]
    total = ctx.token_count
    count = len(items) if file_units is None else file_units
    plural = _plural(count, unit)
    read = "" if count == len(items) else f" ({_plural(len(items), 'message')} as read)"
    head = Text(f"{source} ({title(fmt)})\n{plural}{read}, {total:,} tokens ({_encoding(ctx)})")
    names: dict[str, str] = {}  # call id -> tool name, filled by the tools table
    return Group(
        head,
        _roles_table(items, sizes, total),
        _tools_table(counter, items, sizes, names),
        _largest_table(items, sizes, names, locations, top),
        _validity_table(problems),
        _cuts_table(spans, sizes, total, locations, turns, turn_unit),
    )


def _roles_table(items: Sequence[Component], sizes: Sequence[int], total: int) -> Table:
    roles = Table(title="tokens by role", title_justify="left")
    for name, justify in (("role", "left"), ("messages", "right"), ("tokens", "right")):
        roles.add_column(name, justify=justify)  # type: ignore[arg-type]
    roles.add_column("share", justify="right")
    by_role: dict[str, list[int]] = {}
    for component, size in zip(items, sizes, strict=True):
        entry = by_role.setdefault(component.role, [0, 0])
        entry[0] += 1
        entry[1] += size
    for role, (count, tokens) in sorted(by_role.items(), key=lambda kv: -kv[1][1]):
        share = f"{tokens / total:.0%}" if total else "-"
        roles.add_row(role, f"{count:,}", f"{tokens:,}", share)
    return roles


def _tools_table(
    counter: TokenCounter,
    items: Sequence[Component],
    sizes: Sequence[int],
    names: dict[str, str],
) -> Table:
    """The tokens by tool; fills ``names`` (call id -> tool name) for the tables after it."""
    tools: dict[str, list[int]] = {}  # name -> [calls, call tokens, results, result tokens]
    for component, size in zip(items, sizes, strict=True):
        for call_id, (name, tokens) in _call_tokens(counter, component).items():
            names[call_id] = name
            entry = tools.setdefault(name, [0, 0, 0, 0])
            entry[0] += 1
            entry[1] += tokens
        if component.tool_call_id is not None:
            name = names.get(component.tool_call_id, "(unknown call)")
            entry = tools.setdefault(name, [0, 0, 0, 0])
            entry[2] += 1
            entry[3] += size
    by_tool = Table(title="tokens by tool", title_justify="left")
    by_tool.add_column("tool")
    for name in ("calls", "call tokens", "results", "result tokens"):
        by_tool.add_column(name, justify="right")
    for name, (calls, call_tokens, results, result_tokens) in sorted(
        tools.items(), key=lambda kv: -(kv[1][1] + kv[1][3])
    ):
        by_tool.add_row(
            name, f"{calls:,}", f"{call_tokens:,}", f"{results:,}", f"{result_tokens:,}"
        )
    if not tools:
        by_tool.add_row("(no tool calls)", "0", "0", "0", "0")
    return by_tool


def _largest_table(
    items: Sequence[Component],
    sizes: Sequence[int],
    names: dict[str, str],
    locations: Sequence[str],
    top: int,
) -> Table:
    shown_top = min(top, len(items))
    largest = Table(title=f"largest {_plural(shown_top, 'message')}", title_justify="left")
    largest.add_column("where", no_wrap=True, min_width=10)
    largest.add_column("role", no_wrap=True, max_width=30)
    largest.add_column("tokens", justify="right", no_wrap=True, min_width=6)
    largest.add_column("text", overflow="ellipsis", no_wrap=True, max_width=28)
    order = sorted(range(len(items)), key=lambda i: (-sizes[i], i))[:top]
    for index in order:
        component = items[index]
        role: str = component.role
        if component.tool_call_id is not None:
            role = f"tool ({names.get(component.tool_call_id, '?')})"
        elif component.tool_calls:
            role = f"{role} (calls {', '.join(c.name for c in component.tool_calls)})"
        largest.add_row(locations[index], role, f"{sizes[index]:,}", _preview(component.content))
    return largest


def _validity_table(problems: dict[str, list[tuple[str, str]]]) -> Table:
    validity = Table(title="tool calls and results", title_justify="left")
    validity.add_column("provider")
    validity.add_column("status")
    validity.add_column("first problem")
    for provider, found in problems.items():
        if not found:
            validity.add_row(provider, "valid", "")
            continue
        where, text = found[0]
        status = f"{len(found):,} problem{'' if len(found) == 1 else 's'}"
        validity.add_row(provider, status, f"{where}: {text}")
    return validity


def _cuts_table(
    spans: Sequence[tuple[str, str, tuple[int, int, str]]],
    sizes: Sequence[int],
    total: int,
    locations: Sequence[str],
    turns: Sequence[int] | None,
    turn_unit: str,
) -> Table:
    cuts = Table(title="where each strategy would cut", title_justify="left")
    for name, justify in (
        ("strategy", "left"),
        ("setting", "left"),
        ("cuts", "left"),
        ("kept tokens", "right"),
    ):
        cuts.add_column(name, justify=justify)  # type: ignore[arg-type]
    for strategy, setting, (p, k, reason) in spans:
        if k <= p:
            cuts.add_row(strategy, setting, f"no cut: {reason}", f"{total:,}")
            continue
        span_tokens = sum(sizes[p:k])
        verb = "drops" if strategy == "window" else "summarizes"
        where = f"{locations[p]} to {locations[k - 1]}" if k - p > 1 else locations[p]
        if turns is not None:
            amount = _plural(len(set(turns[p:k]) - {-1}), turn_unit)
        else:
            amount = f"{k - p:,} message{'' if k - p == 1 else 's'}"
        text = f"{verb} {amount} ({span_tokens:,} tokens): {where}"
        kept = f"{total - span_tokens:,}" + ("" if strategy == "window" else " + summary")
        cuts.add_row(strategy, setting, text, kept)
    return cuts
