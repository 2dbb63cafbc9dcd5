"""Reading, checking and writing the conversations the subcommands work on.

A FILE argument is a path, ``-`` for stdin, or nothing for the bundled sample
conversation; output goes to a file (replaced atomically) or stdout. Input the
command cannot use raises ``InputError``.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Final

from rich.console import Console

from .._core.components import Component
from .._core.context import ChatContext
from .._core.exceptions import InvalidContextError
from .._formats.files import Transcript, TranscriptFormat, atomic_write
from .._formats.problems import Problem, problems
from .._formats.registry import Provider
from .._formats.transcripts import parse_any, read_any, wire_of
from .options import FORMATS
from .terminal import PROG, InputError

_SAMPLE: Final = "data/sample_conversation.json"
_SAMPLE_NAME: Final = "the bundled sample conversation"


def load(
    file: str | None, fmt: str | None, *, note: Console | None = None
) -> tuple[Transcript, str]:
    """Return the parsed transcript and the name to use for it in messages."""
    wanted = FORMATS[fmt] if fmt else None
    try:
        if file is None:
            return _sample(wanted, note), _SAMPLE_NAME
        if file == "-":
            return parse_any(_stdin_text(), "<stdin>", wanted, ""), "<stdin>"
        try:
            return read_any(file, wanted), file
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


def _sample(wanted: TranscriptFormat | None, note: Console | None) -> Transcript:
    """The sample conversation, read when no FILE is given (unless input is piped in)."""
    if _piped():
        msg = (
            "input is piped in but no FILE is given; pass '-' to read stdin "
            f"(with no FILE, {_SAMPLE_NAME} is read)"
        )
        raise InputError(msg)
    text = resources.files("mellea_ctx").joinpath(_SAMPLE).read_text(encoding="utf-8")
    transcript = parse_any(text, _SAMPLE_NAME, wanted, ".json")
    if note is not None:
        count = len(transcript.components)
        note.print(
            f"{PROG}: no FILE given; reading {_SAMPLE_NAME} "
            f"(tau-bench airline, {count:,} messages)",
            soft_wrap=True,
        )
    return transcript


def _stdin_text() -> str:
    """Standard input as text (UTF-8, a byte-order mark allowed)."""
    buffer = getattr(sys.stdin, "buffer", None)
    data = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
    try:
        return str(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        msg = f"<stdin>: byte {exc.start} is not UTF-8 ({exc.reason})"
        raise InputError(msg) from exc


def _piped() -> bool:
    """Whether stdin holds input: a non-empty file, or a pipe with data waiting.

    An idle pipe (a runner's stdin nobody writes to), an empty closed one, a
    terminal and ``/dev/null`` are not input.
    """
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    if stream is None:
        return False
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream (click's test runner)
        if not getattr(stream, "seekable", lambda: False)():
            return False
        at = stream.tell()
        waiting = bool(stream.read(1))
        stream.seek(at)
        return waiting
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISREG(mode):
        return os.fstat(fd).st_size > os.lseek(fd, 0, os.SEEK_CUR)
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        ready, _, _ = select.select([fd], [], [], 0.1)
        # Readable is data or the end: one byte tells (an empty, closed pipe is no input;
        # a byte read is lost, but the command then refuses the input anyway).
        return bool(ready) and bool(os.read(fd, 1))
    return False


def file_problems(transcript: Transcript, provider: Provider) -> list[Problem]:
    """:func:`~mellea_ctx.problems` of the file's components, named by the file's own labels."""
    return problems(transcript.components, provider, label=transcript.locations.__getitem__)


def located(transcript: Transcript, found: Sequence[Problem]) -> list[tuple[str, str]]:
    """``(where in the file, problem)`` per problem.

    OpenAI and Anthropic problems are located by the file's own labels
    already; a Responses or Gemini problem names the written item or content
    (``item 4 content[0]``), shown after the file position it came from.
    """
    rows = []
    for problem in found:
        if problem.rule in ("tool_calls", "content") or problem.index is None:
            rows.append((problem.location, problem.message))
        else:
            rows.append((transcript.locations[problem.index], str(problem)))
    return rows


def require_valid(transcript: Transcript, source: str) -> None:
    """Raise ``InputError`` naming the first way the input breaks the tool-call rules."""
    broken = [p for p in file_problems(transcript, "openai") if p.rule == "tool_calls"]
    if broken:
        more = len(broken) - 1
        tail = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more else ""
        raise InputError(f"{source} {broken[0]}{tail}")


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
        atomic_write(Path(output), data)
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


def window_unit(fmt: str) -> str | None:
    """What ``--window`` counts in ``fmt`` when not messages: a grouped format's own unit.

    One Anthropic turn or Gemini content may hold several messages (tool
    results, a call and its text); other formats count messages (``None``).
    """
    wire = wire_of(fmt)
    return wire.shape.unit if wire.shape.grouped else None


def turn_of(transcript: Transcript) -> list[int]:
    """Each component's turn (Anthropic) or content (Gemini), -1 for the system prompt.

    Other formats: each component's own index. The reader gives every
    component of one turn that turn's label, so a new label starts a new
    turn; the labels are compared, never parsed.
    """
    if window_unit(transcript.format) is None:
        return list(range(len(transcript.components)))
    out: list[int] = []
    turn, previous = -1, None
    system = wire_of(transcript.format).shape.system  # the system prompt belongs to no turn
    for label in transcript.locations:
        if system is not None and label == system:
            out.append(-1)
            continue
        if label != previous:
            turn += 1
        previous = label
        out.append(turn)
    return out


def window_components(transcript: Transcript, window: int) -> int:
    """``--window`` in components: an Anthropic turn or a Gemini content may hold several."""
    turns = turn_of(transcript)
    if window_unit(transcript.format) is None or not turns:
        return window
    last = turns[-1]
    return sum(1 for turn in turns if turn > last - window)
