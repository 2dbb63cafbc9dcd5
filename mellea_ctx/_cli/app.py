"""The ``mellea-ctx`` command line: compact, stats, validate, demo.

Built on click (arguments, help, usage errors) and rich (tables, the
progress indicator, the demo's chart). Transcripts are OpenAI Chat
Completions messages (a JSON array or JSONL) or Anthropic Messages turns,
detected from the file (or named with ``--format``) and written back in the
format they were read in.

Streams: ``compact``, and ``validate --repair`` without ``-o``, print their
report on stderr, so stdout carries only the conversation; the others print
their report on stdout.

Exit codes: 0 on success; 1 when ``validate`` finds problems, a model call
fails, or on an internal error; 2 for a usage error or input the command
cannot use (the error names the file, line or message, and field; nothing is
written then).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal, NoReturn

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .._backends.extractive import ExtractiveBackend
from .._compaction.records import CompactionRecord, CompactionWarning
from .._compaction.summarize import LLMSummarizeCompactor
from .._compaction.token_budget import TokenBudgetCompactor
from .._compaction.window import WindowCompactor
from .._core.components import Component
from .._core.context import ChatContext
from .._core.exceptions import InvalidArgumentError, InvalidContextError, MelleaCtxError
from .._core.pins import PinPredicate, pin_nothing, pin_system, pin_system_and_initial_user
from .._core.protocols import Backend, Compactor
from .._formats.history import Provider, _scan_anthropic, repair_history
from .._formats.openai import _problems
from .._formats.transcripts import (
    TranscriptFormat,
    _atomic_write,
    _document,
    _parse_any,
    _read_any,
    _Transcript,
)
from .report import compact_report, problems_table, stats_report

__all__ = ["cli", "main"]

PROG: Final = "mellea-ctx"

#: ``--pin`` choices and the predicates they stand for.
PINS: Final[dict[str, PinPredicate]] = {
    "system": pin_system,
    "system+user": pin_system_and_initial_user,
    "none": pin_nothing,
}

#: ``--format`` choices and the transcript formats they stand for.
FORMATS: Final[dict[str, TranscriptFormat]] = {
    "openai": "json",
    "jsonl": "jsonl",
    "anthropic": "anthropic",
}

#: ``--boundary`` choices: where a budget compaction may begin the recent part.
BOUNDARIES: Final = ("model_step", "user_turn")

#: The model each backend uses when ``--model`` is not given.
DEFAULT_MODELS: Final = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-6"}

_SAMPLE: Final = "data/sample_conversation.json"
_SAMPLE_NAME: Final = "the bundled sample conversation"

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2

_CONTEXT: Final[dict[str, Any]] = {
    "help_option_names": ["-h", "--help"],
    "max_content_width": 100,
}


class InputError(click.ClickException):
    """Input or output the user can fix: one line on stderr, exit status 2."""

    exit_code = EXIT_USAGE

    def show(self, file: Any = None) -> None:
        click.echo(f"{PROG}: error: {self.format_message()}", err=True)


class Failure(InputError):
    """A model call or an internal check failed: one line on stderr, exit status 1."""

    exit_code = EXIT_FAILED


def _tokens(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Return a positive number of tokens; ``8000``, ``8_000`` and ``8,000`` all work."""
    if value is None:
        return None
    try:
        tokens = int(str(value).replace("_", "").replace(",", ""))
    except ValueError:
        tokens = 0
    if tokens <= 0:
        raise click.BadParameter(f"{value!r} is not a positive number of tokens", ctx, param)
    return tokens


def _tokens_option(
    *names: str, **kwargs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that takes a number of tokens."""
    return click.option(*names, metavar="TOKENS", callback=_tokens, **kwargs)


def _count_option(
    *names: str, help: str, default: int | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that takes a number of messages, N >= 0."""
    return click.option(
        *names,
        type=click.IntRange(min=0),
        default=default,
        show_default=default is not None,
        metavar="N",
        help=help,
    )


def _choice_option(
    name: str, choices: Sequence[str], *, help: str, default: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that takes one of ``choices``."""
    return click.option(
        name,
        type=click.Choice(list(choices)),
        default=default,
        show_default=default is not None,
        help=help,
    )


def _format_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--format`` option: the input's format, detected by default."""
    return click.option("--format", "fmt", type=click.Choice(list(FORMATS)), help=help)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _stdout() -> Console:
    return Console(highlight=False)


# -- reading and writing ------------------------------------------------------------


def _load(
    file: str | None, fmt: str | None, *, note: Console | None = None
) -> tuple[_Transcript, str]:
    """Return the parsed transcript and the name to use for it in messages."""
    wanted = FORMATS[fmt] if fmt else None
    try:
        if file is None:
            text = resources.files("mellea_ctx").joinpath(_SAMPLE).read_text(encoding="utf-8")
            transcript = _parse_any(text, _SAMPLE_NAME, wanted, ".json")
            if note is not None:
                count = len(transcript.components)
                note.print(
                    f"{PROG}: no FILE given; reading {_SAMPLE_NAME} "
                    f"(tau-bench airline, {count} messages)",
                    soft_wrap=True,
                )
            return transcript, _SAMPLE_NAME
        if file == "-":
            buffer = getattr(sys.stdin, "buffer", None)
            data = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                msg = f"<stdin>: byte {exc.start} is not UTF-8 ({exc.reason})"
                raise InputError(msg) from exc
            return _parse_any(text, "<stdin>", wanted, ""), "<stdin>"
        try:
            return _read_any(file, wanted), file
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise InputError(f"cannot read {file}: {reason}") from exc
    except InvalidContextError as exc:
        raise InputError(str(exc)) from exc


def _first_problem(problems: list[tuple[int, str]], transcript: _Transcript, source: str) -> str:
    index, problem = problems[0]
    more = len(problems) - 1
    tail = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more else ""
    return f"{source} {transcript.locations[index]}: {problem}{tail}"


def _require_valid(transcript: _Transcript, source: str) -> None:
    """Raise ``InputError`` naming the first way the input breaks the tool-call rules."""
    problems = _problems(transcript.components, transcript.locations.__getitem__)
    if problems:
        raise InputError(_first_problem(problems, transcript, source))


def _write(data: bytes, output: str | None) -> None:
    """Write ``data`` to ``output`` atomically, or to stdout when it is ``None`` or ``-``."""
    if output is None or output == "-":
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:  # a text-only stream, such as io.StringIO
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
        return
    try:
        _atomic_write(Path(output), data)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(f"cannot write {output}: {reason}") from exc


def _to_stdout(output: str | None) -> bool:
    return output is None or output == "-"


# -- compact ---------------------------------------------------------------------------


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


@contextmanager
def _progress(console: Console, what: str) -> Iterator[None]:
    """Show a spinner with the elapsed time on ``console`` while the block runs."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        progress.add_task(what, total=None)
        yield


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


def _build(components: Sequence[Component]) -> ChatContext:
    ctx = ChatContext()
    for component in components:
        ctx = ctx.add(component)
    return ctx


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
    context_settings=_CONTEXT,
)
@click.argument("file", required=False, metavar="[FILE]")
@_count_option(
    "-w",
    "--window",
    help="Keep the pinned prefix and the last N messages (more when a tool exchange needs it).",
)
@_tokens_option("--budget", help="Summarize older dialogue when the conversation passes TOKENS.")
@_tokens_option(
    "--keep-recent",
    help="With --budget: recent dialogue kept verbatim, in whole steps [default: TOKENS/4].",
)
@click.option("--summarize", is_flag=True, help="Summarize all but the last --keep messages.")
@_count_option("--keep", default=6, help="With --summarize: recent messages kept verbatim.")
@_choice_option(
    "--boundary",
    BOUNDARIES,
    default="model_step",
    help="With --budget: keep whole model steps (agent runs) or whole user turns.",
)
@_choice_option(
    "--pin",
    list(PINS),
    default="system",
    help="Always keep the leading system messages, those and the first user message, or nothing.",
)
@_choice_option(
    "--backend",
    ["offline", "openai", "anthropic"],
    default="offline",
    help="Who writes summaries (for --budget and --summarize).",
)
@click.option("--model", metavar="M", help="The model for --backend openai or anthropic.")
@click.option("--base-url", metavar="URL", help="An OpenAI- or Anthropic-compatible server.")
@_format_option("The input's format (and so the output's) [default: detected].")
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
    report = _stderr()
    summarizer = _backend(backend, model, base_url)
    transcript, source = _load(file, fmt, note=_stderr())
    _require_valid(transcript, source)
    ctx = _build(transcript.components)
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
                with _progress(_stderr(), f"Summarizing with {summarizer!r}"):
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
    _write(_document(kept, transcript.format), output)
    record = records[-1] if records else None
    report.print(
        compact_report(
            ctx, compacted, strategy=strategy, options=options, pin=PINS[pin], record=record
        )
    )


# -- stats -----------------------------------------------------------------------------

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


@click.command(
    "stats",
    help=_STATS_HELP,
    short_help="Tokens by role and tool, validity, where each strategy cuts.",
    context_settings=_CONTEXT,
)
@click.argument("file", required=False, metavar="[FILE]")
@_count_option("-w", "--window", default=10, help="The window strategy's size.")
@_tokens_option("--budget", help="The budget strategy's trigger [default: half the tokens].")
@_count_option("--keep", default=6, help="Messages the summarize strategy keeps verbatim.")
@_choice_option(
    "--boundary",
    BOUNDARIES,
    default="model_step",
    help="The budget strategy's unit: whole model steps or whole user turns.",
)
@_choice_option("--pin", list(PINS), default="system", help="The prefix every strategy keeps.")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    metavar="N",
    help="How many of the largest messages to list.",
)
@_format_option("The input's format [default: detected].")
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
    transcript, source = _load(file, fmt)
    ctx = _build(transcript.components)
    budget = budget or max(1, ctx.token_count // 2)
    pin_predicate = PINS[pin]
    backend = ExtractiveBackend()  # never called: only the spans are asked for
    strategies: list[tuple[str, str, Callable[[], tuple[int, int, str]]]] = [
        ("window", f"--window {window}", lambda: _window_span(ctx, window, pin_predicate)),
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
    problems = {
        "openai": _problems(transcript.components, transcript.locations.__getitem__),
        "anthropic": _anthropic_problems(transcript),
    }
    _stdout().print(
        stats_report(
            ctx,
            source=source,
            fmt=transcript.format,
            locations=transcript.locations,
            problems=problems,
            spans=[(name, setting, span()) for name, setting, span in strategies],
            top=top,
        )
    )


def _window_span(ctx: ChatContext, size: int, pin: PinPredicate) -> tuple[int, int, str]:
    from .._core.boundaries import window_cut

    p, k = window_cut(ctx.as_list(), size, pin, loose=True)
    return p, k, "" if k > p else f"the body already fits in {size} messages"


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
    return p, k, "" if k > p else f"nothing older than the last {keep} messages to summarize"


def _anthropic_problems(transcript: _Transcript) -> list[tuple[int, str]]:
    return sorted(_scan_anthropic(transcript.components).problems, key=lambda p: p[0])


# -- validate --------------------------------------------------------------------------

_VALIDATE_HELP = """\
Check a conversation against a provider's rules for tool calls, and repair it.

\b
openai:     every tool result right after the assistant message that called
            it; every call of a closed exchange answered; ids unique.
anthropic:  user first; every tool_result in the user turn right after its
            tool_use; every tool_use of a closed turn answered; ids unique;
            no system message after the start.

The exit status is 0 when the conversation is valid, 1 when it is not. With
--repair, orphan tool results are dropped, unanswered calls get a placeholder
result, reused call ids are removed (and, for anthropic, a leading assistant
turn gets a user message in front and a later system message becomes user
text); the result is written (in the input's format) to OUT or stdout, and the
status is 0.

\b
Examples:
  mellea-ctx validate run.json --provider openai
  mellea-ctx validate run.anthropic.json --provider anthropic --repair -o fixed.json
"""


@click.command(
    "validate",
    help=_VALIDATE_HELP,
    short_help="Check tool calls against OpenAI or Anthropic rules; --repair.",
    context_settings=_CONTEXT,
)
@click.argument("file", metavar="FILE")
@click.option(
    "--provider",
    type=click.Choice(["openai", "anthropic"]),
    help="Whose rules [default: the file's format: anthropic for Anthropic files].",
)
@click.option("--repair", is_flag=True, help="Write a repaired conversation.")
@click.option("-o", "--output", metavar="OUT", help="With --repair: where [default: stdout].")
@_format_option("The input's format (and so the output's) [default: detected].")
def validate(
    file: str, provider: Provider | None, repair: bool, output: str | None, fmt: str | None
) -> None:
    if output is not None and not repair:
        raise click.UsageError("-o/--output goes with --repair")
    transcript, source = _load(file, fmt)
    chosen: Provider = provider or ("anthropic" if transcript.format == "anthropic" else "openai")
    items = transcript.components
    if chosen == "openai":
        problems = _problems(items, transcript.locations.__getitem__)
    else:
        problems = _anthropic_problems(transcript)
    report = _stderr() if repair and _to_stdout(output) else _stdout()
    located = [(transcript.locations[index], text) for index, text in problems]
    if not repair:
        report.print(problems_table(source, chosen, located, len(items)))
        if problems:
            raise click.exceptions.Exit(EXIT_FAILED)
        return
    repaired, changes = repair_history(items, provider=chosen)
    _write(_document(repaired, transcript.format), output)
    located = []
    for change in changes:
        label, _, text = change.partition(": ")
        index = int(label.split()[-1])
        located.append((transcript.locations[index], text))
    report.print(problems_table(source, chosen, located, len(items), repaired=len(repaired)))


# -- demo ------------------------------------------------------------------------------

_DEMO_HELP = """\
Run a simulated agent session with inline compaction, and chart its tokens.

A deterministic, offline agent (no key, no network) works through --turns
model steps, each a tool call and its result, on a context that compacts
itself with a token budget (TokenBudgetCompactor, extractive summaries). The
chart shows the context's token total after each step; the table compares it
with the same session without compaction. --plot also writes the chart as an
image (needs matplotlib: pip install 'mellea-ctx[plot]').

\b
Examples:
  mellea-ctx demo
  mellea-ctx demo --turns 120 --budget 12000 --plot tokens.png
"""


@click.command(
    "demo",
    help=_DEMO_HELP,
    short_help="A simulated agent session compacting inline, charted.",
    context_settings=_CONTEXT,
)
@click.option(
    "--turns",
    type=click.IntRange(1, 2_000),
    default=40,
    show_default=True,
    metavar="N",
    help="Model steps to simulate.",
)
@_tokens_option(
    "--budget",
    default=6_000,
    show_default=True,
    help="The compactor's trigger, in tokens.",
)
@click.option("--plot", metavar="PNG", help="Also write the chart as an image.")
def demo(turns: int, budget: int, plot: str | None) -> None:
    from .demo import chart, plot_png, simulate, summary_table

    if budget < 1_000:
        raise click.UsageError(f"--budget {budget} is too small for the demo; use 1000 or more")
    plotter = None
    if plot is not None:
        try:
            plotter = plot_png()
        except ImportError as exc:
            msg = "--plot needs matplotlib: pip install 'mellea-ctx[plot]'"
            raise InputError(msg) from exc
    console = _stdout()
    with _progress(_stderr(), f"Simulating {turns} model steps"):
        run = simulate(turns, budget)
    console.print(chart(run, width=min(console.width, 120)))
    console.print(summary_table(run))
    if plotter is not None and plot is not None:
        _write(plotter(run), plot)
        console.print(f"wrote {plot}")


# -- the group -------------------------------------------------------------------------

_MAIN_HELP = """\
Keep LLM conversations inside their context window, without breaking tool calls.

Conversations are OpenAI Chat Completions messages (a JSON array, or JSONL
with one message a line) or Anthropic Messages turns; each command detects
which, and writes back the same format.

\b
Examples:
  mellea-ctx compact --window 10 -o compacted.json    # the bundled sample
  mellea-ctx stats run.json
  mellea-ctx validate run.anthropic.json --repair -o fixed.json
  mellea-ctx demo --turns 60

Run 'mellea-ctx COMMAND --help' for a command's options and examples. Exit
status: 0 success, 1 problems found or a model call failed, 2 usage error or
unusable input (nothing is written then).
"""


@click.group(help=_MAIN_HELP, context_settings=_CONTEXT)
@click.version_option(package_name="mellea-ctx", prog_name=PROG, message="%(prog)s %(version)s")
def cli() -> None:
    pass


cli.add_command(compact)
cli.add_command(stats)
cli.add_command(validate)
cli.add_command(demo)


def _quiet_broken_pipe() -> NoReturn:
    """Stop quietly when the reader went away (``mellea-ctx ... | head``)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    raise SystemExit(EXIT_FAILED)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mellea-ctx`` command line and return its exit status.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        0 on success; 1 when ``validate`` finds problems, a model call fails,
        or on an internal error; 2 for a usage error or input the command
        cannot use (nothing is written then).

    Examples:
        >>> import pathlib, tempfile
        >>> from mellea_ctx import load_conversation
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     out = pathlib.Path(folder) / "small.json"
        ...     main(["compact", "--window", "10", "-o", str(out)])  # the bundled sample
        ...     len(load_conversation(out))
        0
        11
    """
    try:
        result = cli.main(
            args=list(argv) if argv is not None else None, prog_name=PROG, standalone_mode=False
        )
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted!", err=True)
        return EXIT_FAILED
    except BrokenPipeError:
        try:
            _quiet_broken_pipe()
        except SystemExit:
            return EXIT_FAILED
    return result if isinstance(result, int) else EXIT_OK
