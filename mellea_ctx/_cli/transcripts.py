"""Reading, checking and writing the conversations the subcommands work on.

A FILE argument is a path, ``-`` for stdin, or nothing for the bundled sample
conversation; output goes to a file (replaced atomically) or stdout. Input the
command cannot use raises ``InputError``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Final

from rich.console import Console

from .._core.components import Component
from .._core.context import ChatContext
from .._core.exceptions import InvalidContextError
from .._formats.content_rules import content_problems
from .._formats.files import _atomic_write
from .._formats.history import _scan_anthropic
from .._formats.openai import _problems
from .._formats.transcripts import _parse_any, _read_any, _Transcript
from .options import FORMATS
from .terminal import PROG, InputError

__all__ = [
    "anthropic_problems",
    "build",
    "load",
    "require_valid",
    "to_stdout",
    "write",
]

_SAMPLE: Final = "data/sample_conversation.json"
_SAMPLE_NAME: Final = "the bundled sample conversation"


def load(
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
                    f"(tau-bench airline, {count:,} messages)",
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
        message = str(exc)
        if "set_int_max_str_digits" in message:  # Python-API advice; say it for the file
            message = (
                f"{file or _SAMPLE_NAME}: a number in the file has more digits than Python's "
                "JSON reader accepts (4300); shorten it or write it as a string"
            )
        raise InputError(message) from exc


def _first_problem(problems: list[tuple[int, str]], transcript: _Transcript, source: str) -> str:
    index, problem = problems[0]
    more = len(problems) - 1
    tail = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more else ""
    return f"{source} {transcript.locations[index]}: {problem}{tail}"


def require_valid(transcript: _Transcript, source: str) -> None:
    """Raise ``InputError`` naming the first way the input breaks the tool-call rules."""
    problems = _problems(transcript.components, transcript.locations.__getitem__)
    if problems:
        raise InputError(_first_problem(problems, transcript, source))


def write(data: bytes, output: str | None) -> None:
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


def to_stdout(output: str | None) -> bool:
    return output is None or output == "-"


def build(components: Sequence[Component]) -> ChatContext:
    ctx = ChatContext()
    for component in components:
        ctx = ctx.add(component)
    return ctx


def anthropic_problems(transcript: _Transcript) -> list[tuple[int, str]]:
    """The Messages API's tool rules and content rules, by component index."""
    items = transcript.components
    problems = _scan_anthropic(items).problems + content_problems(items, "anthropic")
    return sorted(problems, key=lambda p: p[0])
