"""Transcript files: conversations on disk, read and written in every format.

:func:`load_conversation` and :func:`dump_conversation` read and write
OpenAI Chat Completions messages as a JSON array or as JSONL (one message per
line); :func:`load_anthropic` and :func:`dump_anthropic` do the same for
Anthropic Messages API turns. The command line reads any of them, detecting
the format from the file's name and text (``read_any``), and writes its
output back in the input's format (``transcript_document``). Writes are atomic.

Every error names the file and where in it the bad value is (its line, or
the message index), the field, the value with ``repr``, what was expected
and the fix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import attrs

from .._core.components import Component
from .._core.exceptions import InvalidArgumentError, InvalidContextError
from .anthropic import anthropic_document
from .anthropic_files import looks_anthropic, parse_anthropic
from .files import atomic_write, dumps_messages
from .locate import array_labels
from .openai import parse_message as _parse_message
from .openai import to_openai
from .wire_files import detect, parse, wire_document

__all__ = [
    "Format",
    "dump_anthropic",
    "dump_conversation",
    "load_anthropic",
    "load_conversation",
]

#: A transcript's file format: a JSON array of messages, or one message per line.
Format = Literal["json", "jsonl"]

#: A transcript as the command line reads and writes it: the two OpenAI file
#: formats, or Anthropic Messages turns (a JSON array, or an object with
#: ``system`` and ``messages``), OpenAI Responses API items, or Gemini contents
#: (both read and written by ``wire_files``).
TranscriptFormat = Literal["json", "jsonl", "anthropic", "responses", "gemini"]


def _unreadable(exc: Exception) -> str:
    """Why ``json.loads`` failed other than with a syntax error."""
    if isinstance(exc, RecursionError):
        return (
            "the JSON nests too deeply to read; a transcript holds flat message objects, "
            "so this is not one (or it is damaged)"
        )
    return f"invalid JSON ({exc})"  # e.g. a number with more than 4,300 digits


@attrs.define(frozen=True, slots=True)
class Transcript:
    """A parsed transcript: its components, its format, and where each one was read."""

    components: list[Component]
    format: TranscriptFormat
    locations: list[str]  # "line 7" (JSONL) or "message 6" (JSON), per component
    #: A request body's other keys (``model``, ``tools``, ...), written back around
    #: the messages; ``None`` when the file is a bare array of messages.
    envelope: dict[str, Any] | None = None
    #: The file's JSON value as read (for JSONL, the list of its lines' values),
    #: so the command line can compare its output with its input.
    raw: Any = None


def _detect(text: str, suffix: str) -> Format:
    if suffix.lower() == ".jsonl":
        return "jsonl"
    stripped = text.lstrip()
    return "json" if stripped.startswith("[") or not stripped else "jsonl"


def _parse_json(text: str, source: str, *, lines: bool = False) -> Transcript:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{source} line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        raise InvalidContextError(msg) from exc
    except (RecursionError, ValueError) as exc:
        raise InvalidContextError(f"{source}: {_unreadable(exc)}") from exc
    if not isinstance(data, list):
        msg = (
            f"{source}: holds a JSON {type(data).__name__}, expected a JSON array of messages "
            "(or JSONL, one message per line)"
        )
        raise InvalidContextError(msg)
    locations = array_labels(text if lines else None, len(data))
    components = [
        _parse_message(raw, f"{source} {where}") for raw, where in zip(data, locations, strict=True)
    ]
    return Transcript(components, "json", locations, raw=data)


def _parse_jsonl(text: str, source: str) -> Transcript:
    components: list[Component] = []
    locations: list[str] = []
    values: list[Any] = []
    # Split on "\n" only: str.splitlines() would also split inside a message
    # whose text holds U+2028 or similar, which json.dumps leaves unescaped.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = ""
            if not components and text.lstrip().startswith("{"):
                hint = (
                    "; the file looks like one JSON object, but a transcript is a JSON array "
                    "of messages or JSONL with one message per line"
                )
            msg = f"{source} {where} column {exc.colno}: invalid JSON ({exc.msg}){hint}"
            raise InvalidContextError(msg) from exc
        except (RecursionError, ValueError) as exc:
            raise InvalidContextError(f"{source} {where}: {_unreadable(exc)}") from exc
        components.append(_parse_message(raw, f"{source} {where}"))
        locations.append(where)
        values.append(raw)
    return Transcript(components, "jsonl", locations, raw=values)


def _request_body(text: str) -> dict[str, Any] | None:
    """Return the parsed text when it is one JSON object with a ``messages`` list.

    An object with a ``role`` is a message, whatever else it carries: a one-line JSONL file
    holding a message with an extra ``messages`` key is that message, not an empty body.
    """
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except (RecursionError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("messages"), list) and "role" not in data:
        return data
    return None


def _parse_body(body: dict[str, Any], source: str) -> Transcript:
    """A Chat Completions request body: its messages, and its other keys as the envelope."""
    locations = [f"message {index}" for index in range(len(body["messages"]))]
    components = [
        _parse_message(raw, f"{source} {where}")
        for raw, where in zip(body["messages"], locations, strict=True)
    ]
    envelope = {key: value for key, value in body.items() if key != "messages"}
    return Transcript(components, "json", locations, envelope, raw=body)


def _parse_transcript(text: str, source: str, fmt: Format, *, lines: bool = False) -> Transcript:
    body = _request_body(text)
    if body is not None:
        return _parse_body(body, source)
    if fmt == "json" and not text.strip():
        msg = f"{source}: the file is empty; expected a JSON array of messages ([] for none)"
        raise InvalidContextError(msg)
    if fmt == "json":
        return _parse_json(text, source, lines=lines)
    return _parse_jsonl(text, source)


def _parse_anthropic(data: object, source: str, text: str | None = None) -> Transcript:
    components, locations, envelope = parse_anthropic(data, source, text)
    return Transcript(components, "anthropic", locations, envelope, raw=data)


def _loads(text: str, source: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{source} line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        raise InvalidContextError(msg) from exc
    except (RecursionError, ValueError) as exc:
        raise InvalidContextError(f"{source}: {_unreadable(exc)}") from exc


def parse_any(text: str, source: str, fmt: TranscriptFormat | None, suffix: str) -> Transcript:
    """Parse a transcript in ``fmt``, or in the format its name and text show."""
    if fmt == "anthropic":
        if not text.strip():
            msg = f"{source}: the file is empty; expected a JSON array of Messages API turns"
            raise InvalidContextError(msg)
        return _parse_anthropic(_loads(text, source), source, text)
    if fmt == "responses" or fmt == "gemini":
        data = _loads(text, source)
        components, locations, body = parse(data, fmt, source)
        return Transcript(components, fmt, locations, body, raw=data)
    if fmt is not None:
        return _parse_transcript(text, source, fmt, lines=True)
    detected = _detect(text, suffix)
    stripped = text.lstrip()
    if detected == "json" or stripped.startswith("{"):
        try:
            data = json.loads(text)
        except (RecursionError, ValueError):
            data = None  # let the OpenAI reader report it, with its hints
        wire = detect(data)
        if wire is not None:
            components, locations, body = parse(data, wire, source)
            return Transcript(components, wire, locations, body, raw=data)
        if data is not None and looks_anthropic(data):
            return _parse_anthropic(data, source, text)
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            # An OpenAI request body, {"model": ..., "messages": [...]}: kept whole.
            return _parse_body(data, source)
        if isinstance(data, dict) and suffix.lower() == ".json":
            msg = (
                f"{source}: holds one JSON object, not a JSON array of messages; put it in "
                "[...], or name the file .jsonl if it is JSONL (one message per line)"
            )
            raise InvalidContextError(msg)
    return _parse_transcript(text, source, detected, lines=True)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = f"{source}: byte {exc.start} is not UTF-8 ({exc.reason}); save the file as UTF-8"
        raise InvalidContextError(msg) from exc


def read_any(path: str | os.PathLike[str], fmt: TranscriptFormat | None = None) -> Transcript:
    """Read a transcript in any format the command line knows (see ``parse_any``)."""
    file = Path(path)
    return parse_any(_decode(file.read_bytes(), str(file)), str(file), fmt, file.suffix)


def transcript_document(
    components: Iterable[Component],
    fmt: TranscriptFormat,
    envelope: dict[str, Any] | None = None,
    *,
    lost: list[str] | None = None,
) -> bytes:
    """Return ``components`` serialised in ``fmt`` (inside ``envelope``), as UTF-8 bytes.

    ``lost`` collects what the format could not carry, as the writers' own
    ``lost=`` does (without it, a :class:`~mellea_ctx.LossyConversionWarning`).
    """
    if fmt == "anthropic" or fmt == "responses" or fmt == "gemini":
        if fmt == "anthropic":
            document = anthropic_document(components, envelope=envelope, lost=lost)
        else:
            document = wire_document(components, fmt, envelope, lost=lost)
        try:
            return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate read from a "\\ud800" escape
            return (json.dumps(document, indent=2) + "\n").encode("ascii")
    if envelope is not None:
        body = {**envelope, "messages": to_openai(components, lost=lost)}
        try:
            return (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        except UnicodeEncodeError:
            return (json.dumps(body, indent=2) + "\n").encode("ascii")
    return dumps_messages(to_openai(components, lost=lost), fmt)


def load_anthropic(path: str | os.PathLike[str]) -> list[Component]:
    """Return the components of an Anthropic Messages API transcript file.

    The file (UTF-8 JSON) is either an array of turns ``{"role", "content"}``
    or an object ``{"system": ..., "messages": [...]}`` (a request body's
    other fields are not components; the command line writes them back).
    Turns are read as :func:`~mellea_ctx.from_anthropic` reads them, with
    nothing dropped: thinking blocks, ``is_error`` and extra keys such as
    ``cache_control`` are kept. The history's tool rules are not checked here (see
    :func:`validate_anthropic`).

    Args:
        path: The file to read.

    Returns:
        One component per message, tool result and system prompt, in order.

    Raises:
        OSError: When the file cannot be read.
        InvalidContextError: For invalid UTF-8 or JSON, or a bad turn; the
            error names the file, the turn (``message 3``), the block
            (``content[1]``) and the field.

    Examples:
        >>> import json, pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "chat.json"
        ...     _ = path.write_text(json.dumps({"system": "Be brief.", "messages": [
        ...         {"role": "user", "content": [{"type": "text", "text": "hi"}]}]}))
        ...     [(c.role, c.content) for c in load_anthropic(path)]
        [('system', 'Be brief.'), ('user', 'hi')]
    """
    return read_any(path, "anthropic").components


def dump_anthropic(components: Iterable[Component], path: str | os.PathLike[str]) -> None:
    """Write ``components`` to ``path`` as an Anthropic Messages API transcript.

    The turns are :func:`~mellea_ctx.to_anthropic`'s (consecutive messages
    of one role merged, tool results first in their user turn), with a user
    turn of plain text written as a string. Without leading system messages
    the file is a JSON array of turns; with them, an object
    ``{"system": ..., "messages": [...]}``. The write is atomic, as for
    :func:`dump_conversation`.

    Raises:
        OSError: When the file cannot be written.

    Examples:
        >>> import pathlib, tempfile
        >>> from mellea_ctx import Message
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "chat.json"
        ...     dump_anthropic([Message("user", "hi")], path)
        ...     load_anthropic(path) == [Message("user", "hi")]
        True
    """
    atomic_write(Path(path), transcript_document(components, "anthropic"))


def _read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read and parse a transcript file, detecting its format (see ``load_conversation``)."""
    file = Path(path)
    data = file.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = f"{file}: byte {exc.start} is not UTF-8 ({exc.reason}); save the file as UTF-8"
        raise InvalidContextError(msg) from exc
    return _parse_transcript(text, str(file), _detect(text, file.suffix))


def load_conversation(path: str | os.PathLike[str]) -> list[Component]:
    """Return the components of a transcript file of OpenAI Chat Completions messages.

    The file is a JSON array of messages, JSONL (one message per line, blank
    lines skipped), or a request body ``{"model": ..., "messages": [...]}``
    (its other keys are kept for the command line to write back). A
    ``.jsonl`` name means JSONL; otherwise a file whose text starts with
    ``[`` is a JSON array and any other is JSONL.
    An empty file is an empty conversation only under a ``.jsonl`` name.
    Messages are read as :func:`from_openai` reads them; the history's tool
    rules are not checked here (see :func:`validate_openai`).

    Args:
        path: The file to read (UTF-8).

    Returns:
        One component per message, in order.

    Raises:
        OSError: When the file cannot be read (``FileNotFoundError``...).
        InvalidContextError: For invalid UTF-8 or JSON, or a bad message; the
            error names the file, then the line (JSONL, counted from 1) or the
            message index (JSON, from 0), then the field.

    Examples:
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "chat.jsonl"
        ...     _ = path.write_text('{"role": "user", "content": "hi"}\\n')
        ...     load_conversation(path)
        [Message(role='user', content='hi')]
    """
    return _read_transcript(path).components


def dump_conversation(
    components: Iterable[Component],
    path: str | os.PathLike[str],
    *,
    format: Format | None = None,
) -> None:
    """Write ``components`` to ``path`` as OpenAI Chat Completions messages.

    The messages are those of :func:`to_openai`, as an indented JSON array or
    as JSONL (one message per line), in UTF-8. The write is atomic: the text
    goes to a temporary file in the same folder, which then replaces
    ``path``, so a reader never sees half a file, and when anything fails
    nothing is written and an existing file is left as it was.

    Args:
        components: The history to write, oldest first (a ``ChatContext`` works).
        path: Where to write; an existing file is replaced.
        format: ``"json"`` or ``"jsonl"``; by default JSONL when ``path`` ends
            in ``.jsonl``, a JSON array otherwise.

    Raises:
        InvalidArgumentError: For an unknown ``format``.
        InvalidComponentError: For an item :func:`to_openai` cannot write.
        OSError: When the file cannot be written.

    Examples:
        >>> import pathlib, tempfile
        >>> from mellea_ctx import Message
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "chat.jsonl"
        ...     dump_conversation([Message("user", "hi")], path)
        ...     path.read_text()
        '{"role": "user", "content": "hi"}\\n'
    """
    file = Path(path)
    if format is None:
        format = "jsonl" if file.suffix.lower() == ".jsonl" else "json"
    elif format not in ("json", "jsonl"):
        msg = (
            f"dump_conversation: format={format!r} must be 'json' (an array) or 'jsonl' "
            "(one message per line); pass None to choose by the file name"
        )
        raise InvalidArgumentError(msg)
    data = dumps_messages(to_openai(components), format)
    atomic_write(file, data)
