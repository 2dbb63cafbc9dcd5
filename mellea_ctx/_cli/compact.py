"""``mellea-ctx compact``: compact a conversation with one strategy and write it back."""

from __future__ import annotations

import warnings
from typing import Any, Final, Literal

import click
from rich.console import Console

from .._backends.extractive import ExtractiveBackend
from .._compaction.records import CompactionRecord, CompactionWarning
from .._compaction.summarize import LLMSummarizeCompactor
from .._compaction.token_budget import TokenBudgetCompactor
from .._compaction.window import WindowCompactor
from .._core.boundaries import prefix_end, thinking_loop_start
from .._core.components import Component
from .._core.context import ChatContext
from .._core.exceptions import EmptySummaryError, InvalidArgumentError, MelleaCtxError
from .._core.pins import PinPredicate
from .._core.protocols import Backend, Compactor
from .._formats.anthropic.write import turns as anthropic_turns
from .._formats.files import Transcript
from .._formats.problems import problems
from .._formats.transcripts import transcript_document
from .changes import Changes, compare, parse_output
from .conversation_io import (
    build,
    load,
    require_valid,
    turn_of,
    window_components,
    window_unit,
    write,
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
from .report import compact_report, lost_note
from .terminal import Failure, InputError, progress, stderr

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
        raise InputError(_command_line_advice(name, str(exc))) from exc


#: The summary's cap with --summarize when --summary-tokens is not given.
DEFAULT_SUMMARY_TOKENS: Final = 4_096

#: The largest context windows in common use (GPT-4.1, Claude with its 1M option); a result
#: above this fits no common model, so the command warns.
LARGEST_COMMON_WINDOW: Final = 1_000_000

#: The variable each backend reads its key from.
KEY_VARIABLES: Final = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def _command_line_advice(name: str, message: str) -> str:
    """Say what to do on the command line, not in Python, for a backend that cannot start."""
    if "API key" in message:
        variable = KEY_VARIABLES[name]
        local = " (or --base-url for a local server that needs none)" if name == "openai" else ""
        return f"--backend {name} needs an API key: set {variable}{local}"
    if "SDK" in message:
        return f"--backend {name} needs the {name} SDK: pip install '.[{name}]' in the clone"
    return message


def _compactor(
    strategy: str,
    options: dict[str, Any],
    pin: PinPredicate,
    backend: Backend,
    records: list[CompactionRecord],
) -> Compactor:
    if strategy == "window":
        return WindowCompactor(size=options["size"], pin_predicate=pin)
    summary_tokens = options["summary_tokens"]
    if strategy == "budget":
        return TokenBudgetCompactor(
            max_tokens=options["budget"],
            keep_recent_tokens=options["keep_recent"],
            summary_tokens=summary_tokens,
            boundary=options["boundary"],
            default_backend=backend,
            pin_predicate=pin,
            on_record=records.append,
            strict=True,
        )
    cap = DEFAULT_SUMMARY_TOKENS if summary_tokens is None else summary_tokens
    return LLMSummarizeCompactor(
        default_backend=backend,
        keep_n=options["keep"],
        model_options={"max_tokens": cap},
        pin_predicate=pin,
        on_record=records.append,
        strict=True,
    )


def _fresh_units(kept: list[Any], original: set[int], fmt: str) -> frozenset[int]:
    """The output positions (messages, or Anthropic turns) written from new components.

    On an Anthropic file the writer's opening user turn, ``"(earlier
    conversation)"`` (put before a history that now starts with the
    assistant), is new too: it is an added turn, not a changed one.
    """
    positions: set[int] = set()
    ignored: list[str] = []  # the write itself reports what the format cannot carry
    if fmt == "anthropic":
        _, bare = anthropic_turns(kept, opener=False, lost=ignored)
        _, opened = anthropic_turns(kept, opener=True, lost=ignored)
        shift = len(opened) - len(bare)  # 1 when the writer added the opening turn
        positions.update(range(shift))
    for index, component in enumerate(kept):
        if id(component) in original:
            continue
        if fmt == "anthropic":
            _, turns = anthropic_turns(kept[: index + 1], opener=True, lost=ignored)
            positions.add(len(turns) - 1)
        else:
            positions.add(index)
    return frozenset(positions)


def _widened(ctx: Any, compacted: Any, options: dict[str, Any], pin: PinPredicate) -> str | None:
    """Why a window kept more than ``--window``: the thinking-loop rule, when it is the reason.

    A window keeps the last ``size`` components, moved back to a safe cut. When the first
    cut would fall inside a continuing tool loop that carries thinking, the cut moves to the
    loop's thinking step (Anthropic refuses a loop whose kept part starts without it).
    """
    size = options.get("size")
    if size is None or compacted is ctx:
        return None
    items = ctx.as_list()
    loop = thinking_loop_start(items)
    kept = len(compacted.as_list())
    if loop is None or len(items) - size <= loop or kept <= size:
        return None
    units = options.get("kept_units", kept)
    return (
        f"window widened to {units:,} {options.get('unit', 'message')}s: the tool loop in "
        "progress is kept from its thinking step (with extended thinking, Anthropic refuses "
        "a continuing loop that does not start with its thinking block)"
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
  --window N        keep the pinned prefix and the last N messages (turns for
                    Anthropic, contents for Gemini)
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


@command("compact", _COMPACT_HELP, "Compact a conversation: window, token budget or summary.")
@FILE
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
@tokens_option(
    "--summary-tokens",
    help=(
        "The summary's length cap, sent as the model's max_tokens "
        f"[default: {DEFAULT_SUMMARY_TOKENS:,} with --summarize; with --budget, "
        "TOKENS/8 up to 4,096]."
    ),
)
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
    summary_tokens: int | None,
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
    _check_together(strategy, budget, keep_recent, summary_tokens, backend)
    report = stderr()
    summarizer = _backend(backend, model, base_url)
    transcript, source = load(file, fmt, note=stderr())
    require_valid(transcript, source)
    ctx = build(transcript.components)
    records: list[CompactionRecord] = []
    options: dict[str, Any] = {
        "window": window,
        "size": window if window is None else window_components(transcript, window),
        "budget": budget,
        "keep_recent": keep_recent,
        "keep": keep,
        "boundary": boundary,
        "summary_tokens": summary_tokens,
    }
    compactor = _compactor(strategy, options, PINS[pin], summarizer, records)
    offline = backend == "offline"
    compacted, reason = _run(compactor, ctx, strategy, summarizer, records, offline=offline)
    kept = compacted.as_list()
    if strategy == "window":
        options["kept_units"] = _kept_units(transcript, kept[prefix_end(kept, PINS[pin]) :])
        options["unit"] = window_unit(transcript.format) or "message"
    _require_pairs(kept)
    lost: list[str] = []
    data = transcript_document(kept, transcript.format, transcript.envelope, lost=lost)
    write(data, output)
    original = {id(component) for component in transcript.components}
    fresh = _fresh_units(kept, original, transcript.format)
    changes = compare(
        transcript.raw, parse_output(data, transcript.format), transcript.format, fresh
    )
    record = records[-1] if records else None
    report.print(
        compact_report(
            ctx,
            compacted,
            strategy=strategy,
            options=options,
            pin=PINS[pin],
            record=record,
            changes=changes,
            reason=reason or _widened(ctx, compacted, options, PINS[pin]),
        )
    )
    _tell(report, changes, output, lost)
    _warn_size(report, compacted, budget if strategy == "budget" else None)


def _tell(report: Console, changes: Changes, output: str | None, lost: list[str]) -> None:
    """Say where the result went, and what its format could not carry."""
    where = output if output is not None and output != "-" else "stdout"
    report.print(
        f"wrote {changes.plural(len(changes.after))} to {where}", soft_wrap=True, highlight=False
    )
    note = lost_note(lost)
    if note is not None:
        report.print(note, soft_wrap=True, highlight=False, markup=False)


def _kept_units(transcript: Transcript, body: list[Component]) -> int:
    """How many of the file's own units (messages, turns, items) ``body`` keeps of them."""
    turn = dict(zip(map(id, transcript.components), turn_of(transcript), strict=True))
    return len({turn.get(id(c), -1) for c in body} - {-1})


def _require_pairs(kept: list[Component]) -> None:
    """Refuse to write a result that breaks the tool-call rules (never expected)."""
    broken = [p for p in problems(kept, "openai") if p.rule == "tool_calls"]
    if broken:  # pragma: no cover - every compactor keeps tool pairs (a property test)
        msg = (
            f"internal error: the compacted conversation breaks the tool-call rules "
            f"({broken[0]}); nothing was written. Please report this."
        )
        raise Failure(msg)


def _check_together(
    strategy: str,
    budget: int | None,
    keep_recent: int | None,
    summary_tokens: int | None,
    backend: str,
) -> None:
    """Refuse options that do not go with the strategy chosen (a usage error)."""
    if keep_recent is not None and strategy != "budget":
        raise click.UsageError("--keep-recent goes with --budget")
    if summary_tokens is not None and strategy == "window":
        raise click.UsageError("--summary-tokens goes with --budget or --summarize")
    if backend != "offline" and strategy == "window":
        raise click.UsageError("--backend is for --budget and --summarize; --window calls no model")
    if budget is not None and keep_recent is not None and keep_recent > budget:
        raise click.UsageError(f"--keep-recent {keep_recent} is above --budget {budget}")


def _run(
    compactor: Compactor,
    ctx: ChatContext,
    strategy: str,
    summarizer: Backend,
    records: list[CompactionRecord],
    *,
    offline: bool,
) -> tuple[ChatContext, str | None]:
    """Compact ``ctx``: the result, and why nothing was done when the compactor said why.

    When the offline summary came out empty, nothing was applied, and the
    ``records`` it made are cleared.
    """
    compacted, reason = _compacted(compactor, ctx, strategy, summarizer, offline=offline)
    if reason is not None:
        records.clear()
    elif compacted is ctx and records and records[-1].outcome == "skipped":
        reason = f"nothing to summarize: {records[-1].reason}"  # a newcomer's small file, say
    return compacted, reason


def _compacted(
    compactor: Compactor, ctx: ChatContext, strategy: str, summarizer: Backend, *, offline: bool
) -> tuple[ChatContext, str | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CompactionWarning)
            if strategy == "window":
                return compactor.compact(ctx), None
            with progress(stderr(), f"Summarizing with {summarizer!r}"):
                return compactor.compact(ctx), None
    except EmptySummaryError as exc:
        if not offline:
            raise Failure(f"the summary failed, nothing was written: {exc}") from exc
        # The offline summarizer keeps whole sentences; a span of short lines has none.
        reason = (
            "nothing to summarize: the offline summarizer keeps whole sentences, and what "
            "it would replace has none worth keeping (the conversation is small)"
        )
        return ctx, reason
    except MelleaCtxError as exc:
        raise Failure(f"the summary failed, nothing was written: {exc}") from exc


def _warn_size(report: Console, compacted: ChatContext, budget: int | None) -> None:
    """Warn when the result is over ``--budget`` (with that strategy) or any common window."""
    if budget is not None and compacted.token_count > budget:
        report.print(
            f"warning: the result is {compacted.token_count:,} tokens, over --budget "
            f"{budget:,}: what is kept verbatim (the pinned prefix and the recent part, "
            "in whole steps) does not fit; lower --keep-recent or --summary-tokens, or "
            "use --pin none",
            soft_wrap=True,
            highlight=False,
        )
    if compacted.token_count > LARGEST_COMMON_WINDOW:
        report.print(
            f"warning: the result is {compacted.token_count:,} tokens, more than the "
            f"{LARGEST_COMMON_WINDOW:,} of the largest common context windows; compact it "
            "further (a smaller --window, --budget or --keep, or --summary-tokens)",
            soft_wrap=True,
            highlight=False,
        )
