"""``mellea-ctx compact``: compact a conversation with one strategy and write it back."""

from __future__ import annotations

import warnings
from typing import Any, Final, Literal

import click

from .._backends.extractive import ExtractiveBackend
from .._compaction.records import CompactionRecord, CompactionWarning
from .._compaction.summarize import LLMSummarizeCompactor
from .._compaction.token_budget import TokenBudgetCompactor
from .._compaction.window import WindowCompactor
from .._core.exceptions import InvalidArgumentError, MelleaCtxError
from .._core.pins import PinPredicate
from .._core.protocols import Backend, Compactor
from .._formats.openai import _problems
from .._formats.transcripts import _document
from .options import (
    BOUNDARIES,
    CONTEXT,
    PINS,
    choice_option,
    count_option,
    format_option,
    tokens_option,
)
from .report import compact_report
from .terminal import Failure, InputError, progress, stderr
from .transcripts import build, load, require_valid, write

__all__ = ["compact"]

#: The model each backend uses when ``--model`` is not given.
DEFAULT_MODELS: Final = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-6"}


def _backend(name: str, model: str | None, base_url: str | None) -> Backend:
    if name == "offline":
        if model is not None or base_url is not None:
            raise click.UsageError("--model and --base-url need --backend openai or anthropic")
        return ExtractiveBackend()
    from .._backends.anthropic import AnthropicBackend
    from .._backends.openai import OpenAIBackend

    chosen = model or DEFAULT_MODELS[name]
    try:
        if name == "openai":
            return OpenAIBackend(chosen, base_url=base_url)
        return AnthropicBackend(chosen, base_url=base_url)
    except InvalidArgumentError as exc:
        raise InputError(str(exc)) from exc


def _compactor(
    strategy: str,
    options: dict[str, Any],
    pin: PinPredicate,
    backend: Backend,
    records: list[CompactionRecord],
) -> Compactor:
    if strategy == "window":
        return WindowCompactor(size=options["window"], pin_predicate=pin)
    if strategy == "budget":
        return TokenBudgetCompactor(
            max_tokens=options["budget"],
            keep_recent_tokens=options["keep_recent"],
            boundary=options["boundary"],
            default_backend=backend,
            pin_predicate=pin,
            on_record=records.append,
            strict=True,
        )
    return LLMSummarizeCompactor(
        default_backend=backend,
        keep_n=options["keep"],
        pin_predicate=pin,
        on_record=records.append,
        strict=True,
    )


def _strategy(window: int | None, budget: int | None, summarize: bool) -> str:
    chosen = [
        name
        for name, given in (("window", window is not None), ("budget", budget is not None))
        if given
    ] + (["summarize"] if summarize else [])
    if len(chosen) != 1:
        msg = "choose one strategy: --window N, --budget TOKENS or --summarize"
        if chosen:
            msg += f" (got {' and '.join('--' + name for name in chosen)})"
        raise click.UsageError(msg)
    return chosen[0]


_COMPACT_HELP = """\
Compact a conversation with one strategy and write it in the format it was read in.

\b
  --window N        keep the pinned prefix and the last N messages
  --budget TOKENS   past TOKENS, summarize older dialogue into one checkpoint,
                    keeping at least --keep-recent tokens of recent model steps
  --summarize       summarize everything but the last --keep messages

FILE is OpenAI Chat Completions JSON, JSONL (one message a line) or Anthropic
Messages JSON (detected, or named with --format); '-' reads stdin, and with no
FILE the bundled sample conversation is used. A tool exchange (a call and the
results answering it) is never split. Summaries come from --backend: offline
(the default: extractive, no key, no network), openai or anthropic (keys from
OPENAI_API_KEY / ANTHROPIC_API_KEY). A table of before/after figures goes to
stderr, so stdout carries only the conversation.

\b
Examples:
  mellea-ctx compact --window 10 -o compacted.json
  mellea-ctx compact chat.json --window 20 --pin system+user -o chat.small.json
  mellea-ctx compact run.jsonl --budget 8000 --keep-recent 2000 -o run.small.jsonl
  mellea-ctx compact run.anthropic.json --summarize --keep 6 -o small.json
  mellea-ctx compact run.json --summarize --backend openai --model gpt-4o-mini
  cat chat.json | mellea-ctx compact - --window 4 > small.json
"""


@click.command(
    "compact",
    help=_COMPACT_HELP,
    short_help="Compact a conversation: window, token budget or summary.",
    context_settings=CONTEXT,
)
@click.argument("file", required=False, metavar="[FILE]")
@count_option(
    "-w",
    "--window",
    help="Keep the pinned prefix and the last N messages (more when a tool exchange needs it).",
)
@tokens_option("--budget", help="Summarize older dialogue when the conversation passes TOKENS.")
@tokens_option(
    "--keep-recent",
    help="With --budget: recent dialogue kept verbatim, in whole steps [default: TOKENS/4].",
)
@click.option("--summarize", is_flag=True, help="Summarize all but the last --keep messages.")
@count_option("--keep", default=6, help="With --summarize: recent messages kept verbatim.")
@choice_option(
    "--boundary",
    BOUNDARIES,
    default="model_step",
    help="With --budget: keep whole model steps (agent runs) or whole user turns.",
)
@choice_option(
    "--pin",
    list(PINS),
    default="system",
    help="Always keep the leading system messages, those and the first user message, or nothing.",
)
@choice_option(
    "--backend",
    ["offline", "openai", "anthropic"],
    default="offline",
    help="Who writes summaries (for --budget and --summarize).",
)
@click.option("--model", metavar="M", help="The model for --backend openai or anthropic.")
@click.option("--base-url", metavar="URL", help="An OpenAI- or Anthropic-compatible server.")
@format_option("The input's format (and so the output's) [default: detected].")
@click.option(
    "-o",
    "--output",
    metavar="OUT",
    help="Where to write the result [default: stdout]; replaced atomically.",
)
def compact(
    file: str | None,
    window: int | None,
    budget: int | None,
    keep_recent: int | None,
    summarize: bool,
    keep: int,
    boundary: Literal["model_step", "user_turn"],
    pin: str,
    backend: str,
    model: str | None,
    base_url: str | None,
    fmt: str | None,
    output: str | None,
) -> None:
    strategy = _strategy(window, budget, summarize)
    if keep_recent is not None and strategy != "budget":
        raise click.UsageError("--keep-recent goes with --budget")
    if backend != "offline" and strategy == "window":
        raise click.UsageError("--backend is for --budget and --summarize; --window calls no model")
    if budget is not None and keep_recent is not None and keep_recent > budget:
        raise click.UsageError(f"--keep-recent {keep_recent} is above --budget {budget}")
    report = stderr()
    summarizer = _backend(backend, model, base_url)
    transcript, source = load(file, fmt, note=stderr())
    require_valid(transcript, source)
    ctx = build(transcript.components)
    records: list[CompactionRecord] = []
    options = {
        "window": window,
        "budget": budget,
        "keep_recent": keep_recent,
        "keep": keep,
        "boundary": boundary,
    }
    compactor = _compactor(strategy, options, PINS[pin], summarizer, records)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CompactionWarning)
            if strategy == "window":
                compacted = compactor.compact(ctx)
            else:
                with progress(stderr(), f"Summarizing with {summarizer!r}"):
                    compacted = compactor.compact(ctx)
    except MelleaCtxError as exc:
        raise Failure(f"the summary failed, nothing was written: {exc}") from exc
    kept = compacted.as_list()
    broken = _problems(kept)
    if broken:  # pragma: no cover - every compactor keeps tool pairs (a property test)
        index, problem = broken[0]
        msg = (
            f"internal error: the compacted conversation breaks the tool-call rules "
            f"(message {index}: {problem}); nothing was written. Please report this."
        )
        raise Failure(msg)
    write(_document(kept, transcript.format, transcript.body), output)
    record = records[-1] if records else None
    report.print(
        compact_report(
            ctx, compacted, strategy=strategy, options=options, pin=PINS[pin], record=record
        )
    )
