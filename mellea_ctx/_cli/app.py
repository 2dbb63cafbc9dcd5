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
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from .compact import compact
from .cost import cost
from .demo import demo
from .options import CONTEXT
from .stats import stats
from .terminal import EXIT_FAILED, EXIT_OK, PROG, Failure
from .validate import validate

_MAIN_HELP = """\
Keep LLM conversations inside their context window, without breaking tool calls.

Conversations are OpenAI Chat Completions messages (a JSON array, or JSONL
with one message a line), Anthropic Messages turns, OpenAI Responses items or
Gemini contents; each command detects which, counts in the file's own unit,
and writes back the same format.

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


class _Group(click.Group):
    """The command group; an error no command foresaw is one line too, never a traceback.

    Such an error is a bug: it says so, names the exception, and exits 1
    (``MELLEA_CTX_DEBUG=1`` shows the traceback instead).
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise
        except Exception as exc:
            if os.environ.get("MELLEA_CTX_DEBUG"):
                raise
            detail = " ".join(str(exc).split())[:200]
            msg = (
                f"internal error ({type(exc).__name__}: {detail}); please report this "
                "with the input (MELLEA_CTX_DEBUG=1 shows the traceback)"
            )
            raise Failure(msg) from exc


@click.group(cls=_Group, help=_MAIN_HELP, context_settings=CONTEXT)
@click.version_option(package_name="mellea-ctx", prog_name=PROG, message="%(prog)s %(version)s")
def cli() -> None:
    pass


cli.add_command(compact)
cli.add_command(stats)
cli.add_command(validate)
cli.add_command(demo)
cli.add_command(cost)


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
    except click.UsageError as exc:
        # One form for every error (click's own puts a blank line before "Error:").
        command = exc.ctx.command_path if exc.ctx is not None else PROG
        click.echo(f"{command}: error: {exc.format_message()}", err=True)
        click.echo(f"Try '{command} --help' for help.", err=True)
        return exc.exit_code
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
