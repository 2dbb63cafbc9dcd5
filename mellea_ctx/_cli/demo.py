"""``mellea-ctx demo``: a long simulated agent session with inline compaction.

The session is deterministic and offline: a scripted agent fixes a bug in a
made-up repository, one model step (a tool call and its result) at a time,
with tool results of varied sizes full of paths, ids and numbers. The
context carries a :class:`~mellea_ctx.TokenBudgetCompactor` with the
offline :class:`~mellea_ctx.ExtractiveBackend`, so it compacts itself
inline whenever it passes the budget. The chart is drawn with rich; the
image (``--plot``) with matplotlib, an optional extra. The click command
itself, :func:`demo`, is at the end.
"""

from __future__ import annotations

import io
import json
import random
import warnings
from collections.abc import Callable
from typing import Final

import attrs
import click
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .._backends.extractive import ExtractiveBackend
from .._compaction.records import CompactionRecord, CompactionWarning
from .._compaction.token_budget import TokenBudgetCompactor
from .._core.components import Message, ToolCall, ToolMessage
from .._core.context import ChatContext
from .._core.pins import pin_system_and_initial_user
from .._core.tokens import count_memoized
from .conversation_io import write
from .options import command, tokens_option
from .terminal import InputError, progress, stderr, stdout

SEED: Final = 20_240_611

_SYSTEM = (
    "You are a coding agent working in the repository at /srv/app. Use the tools to read, "
    "search and test the code; change only what the task needs; report what you did."
)
_GOAL = (
    "The nightly job fails with `KeyError: 'retry_limit'` in src/app/config.py. Find the "
    "cause, fix it, keep the public API unchanged, and make sure tests/test_config.py passes."
)
_FILES = (
    "src/app/config.py",
    "src/app/jobs/nightly.py",
    "src/app/settings/defaults.toml",
    "src/app/cli.py",
    "tests/test_config.py",
    "tests/test_nightly.py",
    "docs/operations.md",
)
_WORDS = (
    "config loader merges defaults with the environment before the job starts",
    "retry_limit was renamed to max_retries in release 2.4.0 but one caller kept the old key",
    "the scheduler passes a frozen mapping, so the fallback branch never runs",
    "tests cover the happy path only; the nightly profile is not exercised",
    "a deprecation shim would keep the old key readable for one more release",
    "the settings file sets max_retries = 5 and backoff_seconds = 30",
)


@attrs.define(frozen=True)
class DemoRun:
    """The figures of one simulated session.

    Attributes:
        budget: The compactor's trigger, in tokens.
        totals: The context's token total after each model step.
        uncompacted: What the total would have been without compaction.
        compacted_at: The steps (from 1) after which a compaction applied.
        records: Every compaction record, applied or not.
    """

    budget: int
    totals: tuple[int, ...]
    uncompacted: tuple[int, ...]
    compacted_at: tuple[int, ...]
    records: tuple[CompactionRecord, ...]


def _result(rng: random.Random, tool: str, path: str, step: int) -> str:
    lines = rng.randint(4, 40)
    if tool == "read_file":
        body = [f"{n:4d}  {rng.choice(_WORDS)}" for n in range(1, lines + 1)]
        return f"{path} ({lines} lines)\n" + "\n".join(body)
    if tool == "grep":
        hits = [f"{rng.choice(_FILES)}:{rng.randint(1, 400)}: {rng.choice(_WORDS)}"]
        hits += [
            f"{rng.choice(_FILES)}:{rng.randint(1, 400)}: retry_limit" for _ in range(lines // 4)
        ]
        return "\n".join(hits)
    failed = rng.randint(0, 3) if step % 5 else 0
    report = [f"tests/test_config.py::test_case_{n} PASSED" for n in range(lines // 2)]
    report.append(f"== {lines // 2} passed, {failed} failed in {rng.randint(1, 90) / 10}s ==")
    return "\n".join(report)


def simulate(turns: int, budget: int, *, seed: int = SEED) -> DemoRun:
    """Run the simulated session for ``turns`` model steps; return its figures.

    Examples:
        >>> run = simulate(30, 2_000)
        >>> len(run.totals), max(run.uncompacted) > max(run.totals), bool(run.compacted_at)
        (30, True, True)
    """
    rng = random.Random(seed)
    records: list[CompactionRecord] = []
    compactor = TokenBudgetCompactor(
        max_tokens=budget,
        target_tokens=budget * 3 // 4,
        boundary="model_step",
        default_backend=ExtractiveBackend(),
        pin_predicate=pin_system_and_initial_user,
        on_record=records.append,
    )
    ctx = ChatContext(compactor=compactor)
    ctx = ctx.add(Message("system", _SYSTEM)).add(Message("user", _GOAL))
    uncompacted = ctx.token_count
    totals: list[int] = []
    plain: list[int] = []
    compacted_at: list[int] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompactionWarning)
        for step in range(1, turns + 1):
            tool = rng.choice(("read_file", "grep", "run_tests"))
            path = rng.choice(_FILES)
            arguments = {"path": path} if tool != "run_tests" else {"selection": "tests/"}
            call = ToolCall(f"call_{step:04d}", tool, json.dumps(arguments))
            thought = f"Step {step}: {rng.choice(_WORDS)}; next, {tool} on {path}."
            applied = len([r for r in records if r.outcome == "applied"])
            for component in (
                Message("assistant", thought, tool_calls=(call,)),
                ToolMessage(_result(rng, tool, path, step), tool_call_id=call.id),
            ):
                ctx = ctx.add(component)
                uncompacted += count_memoized(ctx.counter, component)
            if len([r for r in records if r.outcome == "applied"]) > applied:
                compacted_at.append(step)
            totals.append(ctx.token_count)
            plain.append(uncompacted)
    return DemoRun(budget, tuple(totals), tuple(plain), tuple(compacted_at), tuple(records))


_BLOCKS: Final = " ▁▂▃▄▅▆▇█"
#: Marks, under the chart, each column in which a compaction ran.
_COMPACTED: Final = "▲"


def chart(run: DemoRun, *, width: int = 100, height: int = 12) -> RenderableType:
    """Return a bar chart of the token total per step, drawn with block characters.

    Each column is one step (or the highest of a few steps, when there are
    more steps than columns); yellow columns are steps that compacted, the
    dashed row is the budget.
    """
    label = len(f"{max(run.budget, *run.totals):,}") + 1
    columns = max(10, width - label - 2)
    n = len(run.totals)
    shown = min(n, columns)
    bounds = [(c * n // shown, (c + 1) * n // shown) for c in range(shown)]  # steps per column
    marked = set(run.compacted_at)
    values = [max(run.totals[start:end]) for start, end in bounds]
    flags = [any(step in marked for step in range(start + 1, end + 1)) for start, end in bounds]
    top = max(run.budget, *values) * 1.2
    budget_row = min(height - 1, int(run.budget / top * height))
    text = Text()
    for row in range(height - 1, -1, -1):
        floor = top * row / height
        mark = _row_mark(row, height, budget_row, run.budget, top)
        text.append(mark.rjust(label) + " ┤", style="dim")
        for value, flag in zip(values, flags, strict=True):
            fill = (value - floor) / (top / height)
            text.append(*_cell(fill, on_budget=row == budget_row, compacted=flag))
        text.append("\n")
    axis = " " * label + " └" + "─" * len(values)
    text.append(axis + "\n", style="dim")
    # Compactions are marked by a sign too, not only by colour (a pipe or a log has none).
    signs = "".join(_COMPACTED if flag else " " for flag in flags).rstrip()
    if signs:
        text.append(" " * (label + 2) + signs + "\n", style="yellow")
    text.append(" " * (label + 2) + _ticks(n, len(values)), style="dim")
    title = Text(
        f"context tokens after each model step (budget {run.budget:,}, red dashes; "
        f"yellow, {_COMPACTED} below: a compaction ran)",
        style="bold",
    )
    return Group(title, text)


def _ticks(steps: int, columns: int) -> str:
    """The step axis under ``columns`` columns: its two ends, or the range when too narrow."""
    last = f"step {steps}"
    if columns >= len(last) + 8:
        return "step 1".ljust(columns - len(last)) + last
    return f"steps 1-{steps}"


def _row_mark(row: int, height: int, budget_row: int, budget: int, top: float) -> str:
    """The axis label of a chart row: the budget, the top, zero, or none."""
    if row == budget_row:
        return f"{budget:,}"
    if row == height - 1:
        return f"{int(top):,}"
    return "0" if row == 0 else ""


def _cell(fill: float, *, on_budget: bool, compacted: bool) -> tuple[str, str]:
    """One chart cell and its style: a block filled ``fill`` of a row (``<= 0``: empty)."""
    if fill <= 0:
        return ("╌", "red") if on_budget else (" ", "")
    return _BLOCKS[min(8, max(1, round(fill * 8)))], "yellow" if compacted else "cyan"


def summary_table(run: DemoRun) -> RenderableType:
    """Return the figures of the run as a table."""
    applied = [r for r in run.records if r.outcome == "applied"]
    table = Table(title="simulated session", title_justify="left")
    table.add_column("")
    table.add_column("with compaction", justify="right")
    table.add_column("without", justify="right")
    table.add_row("model steps", f"{len(run.totals):,}", f"{len(run.totals):,}")
    table.add_row("final tokens", f"{run.totals[-1]:,}", f"{run.uncompacted[-1]:,}")
    table.add_row("peak tokens", f"{max(run.totals):,}", f"{max(run.uncompacted):,}")
    table.add_row("tokens sent, all steps", f"{sum(run.totals):,}", f"{sum(run.uncompacted):,}")
    table.add_row("compactions", f"{len(applied):,}", "0")
    carried = sum(len(r.facts_carried) for r in applied)
    checked = sum(len(r.facts_checked) for r in applied)
    table.add_row("exact details checked / carried", f"{checked:,} / {carried:,}", "-")
    return table


def plot_png() -> Callable[[DemoRun], bytes]:
    """Return a function that draws a run as PNG bytes.

    Raises:
        ImportError: When matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    def draw(run: DemoRun) -> bytes:
        figure = Figure(figsize=(9, 4.5), dpi=100)
        axes = figure.add_subplot()
        steps = range(1, len(run.totals) + 1)
        axes.plot(steps, run.uncompacted, color="grey", linestyle=":", label="without compaction")
        axes.plot(steps, run.totals, color="tab:blue", label="with TokenBudgetCompactor")
        axes.axhline(run.budget, color="tab:red", linestyle="--", label=f"budget {run.budget:,}")
        marks = [run.totals[step - 1] for step in run.compacted_at]
        axes.scatter(run.compacted_at, marks, color="tab:orange", zorder=3, label="compaction")
        axes.set_xlabel("model step")
        axes.set_ylabel("context tokens (o200k_base)")
        axes.set_title("mellea-ctx demo: a simulated agent session")
        axes.legend(loc="upper left")
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        return buffer.getvalue()

    return draw


# -- the command ----------------------------------------------------------------------

_DEMO_HELP = """\
Run a simulated agent session with inline compaction, and chart its tokens.

A deterministic, offline agent (no key, no network) works through --turns
model steps, each a tool call and its result, on a context that compacts
itself with a token budget (TokenBudgetCompactor, extractive summaries). The
chart shows the context's token total after each step; the table compares it
with the same session without compaction. --plot also writes the chart as an
image (needs matplotlib: pip install '.[plot]' in the clone).

\b
Examples:
  mellea-ctx demo
  mellea-ctx demo --turns 120 --budget 12000 --plot tokens.png
"""


@command("demo", _DEMO_HELP, "A simulated agent session compacting inline, charted.")
@click.option(
    "--turns",
    type=click.IntRange(1, 2_000),
    default=40,
    show_default=True,
    metavar="N",
    help="Model steps to simulate.",
)
@tokens_option(
    "--budget",
    default=6_000,
    show_default=True,
    help="The compactor's trigger, in tokens.",
)
@click.option("--plot", metavar="PNG", help="Also write the chart as an image.")
def demo(turns: int, budget: int, plot: str | None) -> None:
    if budget < 1_000:
        raise click.UsageError(f"--budget {budget} is too small for the demo; use 1000 or more")
    plotter = None
    if plot is not None:
        try:
            plotter = plot_png()
        except ImportError as exc:
            msg = "--plot needs matplotlib: pip install '.[plot]' in the mellea-ctx clone"
            raise InputError(msg) from exc
    console = stdout()
    with progress(stderr(), f"Simulating {turns} model steps"):
        run = simulate(turns, budget)
    console.print(chart(run, width=min(console.width, 120)))
    console.print(summary_table(run))
    if plotter is not None and plot is not None:
        write(plotter(run), plot)
        console.print(f"wrote {plot}")
