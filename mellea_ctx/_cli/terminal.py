"""How the command line meets the terminal: its name, exit statuses, errors, consoles.

Errors the user can fix are one line on stderr (:class:`InputError`, status 2;
:class:`Failure`, status 1); reports go to a rich console on stdout or stderr,
and a spinner shows on stderr while a model works.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Final

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

PROG: Final = "mellea-ctx"

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


class InputError(click.ClickException):
    """Input or output the user can fix: one line on stderr, exit status 2."""

    exit_code = EXIT_USAGE

    def show(self, file: Any = None) -> None:
        click.echo(f"{PROG}: error: {self.format_message()}", err=True)


class Failure(InputError):
    """A model call or an internal check failed: one line on stderr, exit status 1."""

    exit_code = EXIT_FAILED


#: The width of a report written to a file or a pipe, where no terminal sets one and rich
#: would cut every row at 80 columns; ``COLUMNS`` still wins when it is set.
PIPE_WIDTH: Final = 160


class _Escaping:
    """A text stream that writes what its encoding cannot hold as escapes, never failing.

    A history may hold a lone surrogate (JSON's ``"\\ud800"`` escape reads as
    one), which no UTF-8 stream can write: rich raised ``UnicodeEncodeError``
    half-way through a report. Such a character is written ``\\ud800``.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "utf-8"
            return self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _console(*, to_stderr: bool) -> Console:
    file = _Escaping(sys.stderr if to_stderr else sys.stdout)
    console = Console(file=file, highlight=False)  # type: ignore[arg-type]
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(file=file, highlight=False, width=PIPE_WIDTH)  # type: ignore[arg-type]


def stderr() -> Console:
    return _console(to_stderr=True)


def stdout() -> Console:
    return _console(to_stderr=False)


@contextmanager
def progress(console: Console, what: str) -> Iterator[None]:
    """Show a spinner with the elapsed time on ``console`` while the block runs."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as shown:
        shown.add_task(what, total=None)
        yield
