"""``mellea-ctx stats``: where a conversation's tokens go and where each strategy would cut."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import click

from .._backends.extractive import ExtractiveBackend
from .._compaction.summarize import LLMSummarizeCompactor
from .._compaction.token_budget import TokenBudgetCompactor
from .._core.context import ChatContext
from .._core.pins import PinPredicate
from .._core.protocols import Backend
from .._formats.transcripts import wire_of
from .changes import unit_of, units
from .conversation_io import (
    build,
    file_problems,
    load,
    located,
    turn_of,
    window_components,
    window_unit,
)
from .options import (
    BOUNDARIES,
    FILE,
    PINS,
    choice_option,
    command,
    count_option,
    format_option,
    tokens_option,
)
from .report import stats_report
from .terminal import stdout

_STATS_HELP = """\
Show where a conversation's tokens go and where each strategy would cut it.

Tokens by role and by tool, the largest messages, whether the tool calls and
results are valid for OpenAI and for Anthropic, and the cut each strategy
would make: --window N, --budget TOKENS (default: half the conversation) and
--summarize keeping --keep messages. Nothing is compacted, no model is called.

\b
Examples:
  mellea-ctx stats
  mellea-ctx stats run.anthropic.json --window 20 --budget 50000
"""


@command("stats", _STATS_HELP, "Tokens by role and tool, validity, where each strategy cuts.")
@FILE
@count_option("-w", "--window", default=10, help="The window strategy's size.")
@tokens_option("--budget", help="The budget strategy's trigger [default: half the tokens].")
@count_option("--keep", default=6, help="Messages the summarize strategy keeps verbatim.")
@choice_option(
    "--boundary",
    BOUNDARIES,
    default="model_step",
    help="The budget strategy's unit: whole model steps or whole user turns.",
)
@choice_option("--pin", list(PINS), default="system", help="The prefix every strategy keeps.")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    metavar="N",
    help="How many of the largest messages to list.",
)
@format_option("The input's format [default: detected].")
def stats(
    file: str | None,
    window: int,
    budget: int | None,
    keep: int,
    boundary: Literal["model_step", "user_turn"],
    pin: str,
    top: int,
    fmt: str | None,
) -> None:
    transcript, source = load(file, fmt)
    ctx = build(transcript.components)
    budget = budget or max(1, ctx.token_count // 2)
    pin_predicate = PINS[pin]
    backend = ExtractiveBackend()  # never called: only the spans are asked for
    size = window_components(transcript, window)
    grouped = window_unit(transcript.format)  # what --window counts, if not messages
    noun = f"{grouped or 'message'}s"
    fits = f"{window:,} {noun}"
    strategies: list[tuple[str, str, Callable[[], tuple[int, int, str]]]] = [
        (
            "window",
            f"--window {window}",
            lambda: _window_span(ctx, size, fits, pin_predicate),
        ),
        (
            "budget",
            f"--budget {budget:,}",
            lambda: _budget_span(ctx, budget, boundary, pin_predicate, backend),
        ),
        (
            "summarize",
            f"--summarize --keep {keep}",
            lambda: _summarize_span(ctx, keep, pin_predicate, backend),
        ),
    ]
    providers = ["openai", "anthropic"]  # the Chat and Messages rules, and the file's own
    own = wire_of(transcript.format).name
    if own not in providers:
        providers.append(own)
    problems = {
        provider: located(transcript, file_problems(transcript, provider))  # type: ignore[arg-type]
        for provider in providers
    }
    unit = unit_of(transcript.format)
    stdout().print(
        stats_report(
            ctx,
            source=source,
            fmt=transcript.format,
            locations=transcript.locations,
            problems=problems,
            spans=[(name, setting, span()) for name, setting, span in strategies],
            top=top,
            unit=unit,
            file_units=len(units(transcript.raw, transcript.format)),
            turns=turn_of(transcript) if grouped else None,
            turn_unit=grouped or "turn",
        )
    )


def _window_span(
    ctx: ChatContext, size: int, window: str, pin: PinPredicate
) -> tuple[int, int, str]:
    from .._core.boundaries import window_cut

    p, k = window_cut(ctx.as_list(), size, pin, loose=True)
    return p, k, "" if k > p else f"the body already fits in {window}"


def _budget_span(
    ctx: ChatContext,
    budget: int,
    boundary: Literal["model_step", "user_turn"],
    pin: PinPredicate,
    backend: Backend,
) -> tuple[int, int, str]:
    compactor = TokenBudgetCompactor(
        max_tokens=budget, boundary=boundary, pin_predicate=pin, default_backend=backend
    )
    if not compactor.due(ctx):
        return 0, 0, f"{ctx.token_count:,} tokens is within the budget"
    return compactor.span(ctx)


def _summarize_span(
    ctx: ChatContext, keep: int, pin: PinPredicate, backend: Backend
) -> tuple[int, int, str]:
    p, k = LLMSummarizeCompactor(default_backend=backend, keep_n=keep, pin_predicate=pin).span(ctx)
    return p, k, "" if k > p else f"nothing older than the last {keep:,} messages to summarize"
