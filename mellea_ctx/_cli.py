"""The ``mellea-ctx`` command line.

``mellea-ctx compact`` reads a transcript of OpenAI Chat Completions messages
(a JSON array or JSONL), compacts it with one strategy (``--window``: keep the
last N messages; ``--budget``: summarize older dialogue to fit a token budget;
``--summarize``: summarize all but the last few messages) and writes the
result in the same format. Summaries come from the offline
:class:`~mellea_ctx.ExtractiveBackend`, so every strategy works without a key
or a network. Everything it reports goes to stderr, so stdout carries
only the conversation.

Exit codes: 0 on success, 2 for a usage error or input the command cannot
use (nothing is written then), 1 for an internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Final, TextIO

from ._boundaries import prefix_end
from ._compactors import Compactor, WindowCompactor
from ._context import ChatContext
from ._exceptions import InvalidContextError
from ._extractive import ExtractiveBackend
from ._formats import (
    _atomic_write,
    _detect,
    _dumps,
    _parse_transcript,
    _problems,
    _read_transcript,
    _Transcript,
    to_openai,
)
from ._pins import PinPredicate, pin_nothing, pin_system, pin_system_and_initial_user
from ._records import CompactionRecord
from ._summarize import LLMSummarizeCompactor, TokenBudgetCompactor

__all__ = ["main"]

PROG: Final = "mellea-ctx"

#: ``--pin`` choices and the predicates they stand for.
PINS: Final[dict[str, PinPredicate]] = {
    "system": pin_system,
    "system+user": pin_system_and_initial_user,
    "none": pin_nothing,
}

_SAMPLE: Final = "data/sample_conversation.json"
_SAMPLE_NAME: Final = "the bundled sample conversation"

_EXIT_OK: Final = 0
_EXIT_INTERNAL: Final = 1
_EXIT_USAGE: Final = 2

_DESCRIPTION = """\
Keep LLM conversations inside their context window, without breaking tool calls.

Conversations are OpenAI Chat Completions messages, as a JSON array or as JSONL
(one message per line)."""

_COMPACT_DESCRIPTION = """\
Compact a conversation with one of three strategies:

  --window N        keep the pinned prefix and the last N messages
  --budget TOKENS   past TOKENS, summarize older dialogue into one checkpoint,
                    keeping at least --keep-recent tokens of recent model steps
  --summarize       summarize everything but the last --keep messages

A tool exchange (an assistant message with tool calls and the results that
answer it) is never split. Summaries are extractive and made offline (the most
informative sentences, verbatim, plus every exact detail): no key, no network.
The result is written in the input's format to OUT, or to stdout; one summary
line goes to stderr."""

_COMPACT_EPILOG = """\
examples:
  mellea-ctx compact chat.json --window 20 -o chat.small.json
  mellea-ctx compact run.jsonl --window 10 --pin system+user > run.small.jsonl
  mellea-ctx compact run.json --budget 4000 --keep-recent 1000 -o run.small.json
  mellea-ctx compact run.json --summarize --keep 6 -o run.small.json
  mellea-ctx compact --window 10     # try it on the bundled sample conversation

exit status: 0 on success, 2 for a usage error or input that cannot be used
(nothing is written then), 1 for an internal error."""


class _UsageError(Exception):
    """A problem with the input or output that the user can fix; exit status 2."""


def _window(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        size = -1
    if size < 0:
        msg = f"{text!r} is not an int >= 0; pass 0 to keep only the pinned prefix"
        raise argparse.ArgumentTypeError(msg)
    return size


def _tokens(text: str) -> int:
    try:
        tokens = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        tokens = 0
    if tokens <= 0:
        msg = f"{text!r} is not a positive number of tokens"
        raise argparse.ArgumentTypeError(msg)
    return tokens


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'mellea-ctx COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    commands.required = True
    compact = commands.add_parser(
        "compact",
        help="keep the pinned prefix and the last N messages",
        description=_COMPACT_DESCRIPTION,
        epilog=_COMPACT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compact.add_argument(
        "file",
        nargs="?",
        metavar="FILE",
        help="the conversation to read ('-' for stdin; default: the bundled sample)",
    )
    strategy = compact.add_mutually_exclusive_group(required=True)
    strategy.add_argument(
        "-w",
        "--window",
        type=_window,
        metavar="N",
        help="messages to keep after the pinned prefix (more when a tool exchange needs it)",
    )
    strategy.add_argument(
        "--budget",
        type=_tokens,
        metavar="TOKENS",
        help="summarize older dialogue when the conversation is over TOKENS tokens",
    )
    strategy.add_argument(
        "--summarize",
        action="store_true",
        help="summarize all but the last --keep messages into one checkpoint",
    )
    compact.add_argument(
        "--keep-recent",
        type=_tokens,
        metavar="TOKENS",
        help="with --budget: recent dialogue kept verbatim, in whole steps (default: TOKENS/4)",
    )
    compact.add_argument(
        "--keep",
        type=_window,
        default=6,
        metavar="N",
        help="with --summarize: recent messages kept verbatim (default: 6)",
    )
    compact.add_argument(
        "--boundary",
        choices=("model_step", "user_turn"),
        default="model_step",
        help="with --budget: keep whole model steps (default; suits agent runs, which are "
        "one long user turn) or whole user turns",
    )
    compact.add_argument(
        "--pin",
        choices=tuple(PINS),
        default="system",
        help="what is always kept: the leading system messages (default), those and the "
        "first user message after them, or nothing",
    )
    compact.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write the result (default: stdout); an existing file is replaced atomically",
    )
    return parser


def _read_input(file: str | None, stdin: TextIO, stderr: TextIO) -> tuple[_Transcript, str]:
    """Return the parsed input and the name to use for it in messages."""
    if file is None:
        text = resources.files("mellea_ctx").joinpath(_SAMPLE).read_text(encoding="utf-8")
        transcript = _parse_transcript(text, _SAMPLE_NAME, "json")
        count = len(transcript.components)
        print(
            f"{PROG}: no FILE given; reading {_SAMPLE_NAME} (tau-bench airline, {count} messages)",
            file=stderr,
        )
        return transcript, _SAMPLE_NAME
    if file == "-":
        text = stdin.read()
        return _parse_transcript(text, "<stdin>", _detect(text, "")), "<stdin>"
    try:
        return _read_transcript(file), file
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise _UsageError(f"cannot read {file}: {reason}") from exc


def _check(transcript: _Transcript, source: str) -> None:
    """Raise ``_UsageError`` naming the first way the input breaks the tool-call rules."""
    problems = _problems(transcript.components, transcript.locations.__getitem__)
    if not problems:
        return
    index, problem = problems[0]
    more = len(problems) - 1
    tail = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more else ""
    raise _UsageError(f"{source} {transcript.locations[index]}: {problem}{tail}")


def _write(data: bytes, output: str | None, stdout: TextIO) -> None:
    if output is None or output == "-":
        stdout.flush()
        buffer = getattr(stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:  # a text-only stream, such as io.StringIO
            stdout.write(data.decode("utf-8"))
            stdout.flush()
        return
    try:
        _atomic_write(Path(output), data)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise _UsageError(f"cannot write {output}: {reason}") from exc


def _compactor(
    args: argparse.Namespace, pin: PinPredicate, records: list[CompactionRecord]
) -> Compactor:
    if args.window is not None:
        return WindowCompactor(size=args.window, pin_predicate=pin)
    backend = ExtractiveBackend()
    if args.budget is not None:
        return TokenBudgetCompactor(
            max_tokens=args.budget,
            keep_recent_tokens=args.keep_recent,
            boundary=args.boundary,
            default_backend=backend,
            pin_predicate=pin,
            on_record=records.append,
        )
    return LLMSummarizeCompactor(
        default_backend=backend, keep_n=args.keep, pin_predicate=pin, on_record=records.append
    )


def _describe(record: CompactionRecord) -> str:
    if record.outcome == "applied":
        carried = len(record.facts_carried)
        return (
            f"; {record.removed} messages summarized into one checkpoint, "
            f"{len(record.facts_checked)} exact details checked, {carried} carried over"
        )
    return f"; nothing compacted: {record.reason}"


def _compact(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    transcript, source = _read_input(args.file, stdin, stderr)
    _check(transcript, source)
    pin = PINS[args.pin]
    ctx = ChatContext()
    for component in transcript.components:
        ctx = ctx.add(component)
    records: list[CompactionRecord] = []
    compacted = _compactor(args, pin, records).compact(ctx)
    kept = compacted.as_list()
    broken = _problems(kept)
    if broken:
        index, problem = broken[0]
        msg = (
            f"{PROG}: internal error: the compacted conversation breaks the tool-call rules "
            f"(message {index}: {problem}); nothing was written. Please report this."
        )
        print(msg, file=stderr)
        return _EXIT_INTERNAL
    data = _dumps(to_openai(kept), transcript.format)
    _write(data, args.output, stdout)

    encoding = getattr(getattr(ctx.counter, "encoding", None), "name", type(ctx.counter).__name__)
    if any(component.tool_calls for component in transcript.components):
        pairs = "tool pairs intact"
    else:
        pairs = "no tool calls"
    summary = (
        f"{len(ctx):,} -> {len(kept):,} messages, "
        f"{ctx.token_count:,} -> {compacted.token_count:,} tokens ({encoding}), {pairs}"
    )
    if records:
        summary += _describe(records[-1])
    elif args.window is None:
        summary += "; already within the budget" if args.budget else "; nothing to summarize"
    elif compacted is ctx:
        summary += f"; already within --window {args.window}"
    elif len(kept) - prefix_end(kept, pin) > args.window:
        body = len(kept) - prefix_end(kept, pin)
        summary += f"; window widened to {body}: tool exchanges are kept whole"
    print(summary, file=stderr)
    return _EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mellea-ctx`` command line and return its exit status.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        0 on success, 2 for a usage error or input the command cannot use
        (nothing is written then), 1 for an internal error.

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
    stdin, stdout, stderr = sys.stdin, sys.stdout, sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse reported
        return exc.code if isinstance(exc.code, int) else _EXIT_USAGE
    try:
        return _compact(args, stdin, stdout, stderr)
    except (_UsageError, InvalidContextError) as exc:
        print(f"{PROG}: error: {exc}", file=stderr)
        return _EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``mellea-ctx ... | head``): stop quietly, and
        # point stdout at devnull so the interpreter's final flush cannot fail.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return _EXIT_INTERNAL
