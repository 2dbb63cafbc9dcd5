"""Transcript files' JSON, shared by every format: decoding, encoding, atomic writes.

:func:`loads` decodes a file's text with an error that names the file, the
line and the column; :func:`dumps_document` and :func:`dumps_messages`
encode (a lone surrogate read from a ``"\\ud800"`` escape falls back to
ASCII escapes); :func:`atomic_write` writes. :class:`Transcript` is what
every format's reading gives the command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import attrs

from .._core.components import Component
from .._core.exceptions import InvalidContextError
from .registry import Provider

#: A transcript's file format: a JSON array of messages, or one message per line.
Format = Literal["json", "jsonl"]

#: A transcript as the command line reads and writes it: the two OpenAI Chat file
#: formats (``"json"``, ``"jsonl"``), or a wire format of the registry by name
#: (Anthropic Messages turns, OpenAI Responses items, Gemini contents...).
TranscriptFormat = Format | Provider


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


def body_units(document: Any, key: str) -> list[Any]:
    """A document's units: a bare array is its own list, a request body's are under ``key``."""
    if isinstance(document, list):
        return list(document)
    held = document.get(key) if isinstance(document, dict) else None
    return list(held) if isinstance(held, list) else []


@contextlib.contextmanager
def named(source: str) -> Iterator[None]:
    """Start an :class:`InvalidContextError` raised inside with ``source``, the file's name."""
    try:
        yield
    except InvalidContextError as exc:
        raise InvalidContextError(f"{source} {exc}") from exc


def unreadable(exc: Exception) -> str:
    """Why ``json.loads`` failed other than with a syntax error."""
    if isinstance(exc, RecursionError):
        return (
            "the JSON nests too deeply to read; a transcript holds flat message objects, "
            "so this is not one (or it is damaged)"
        )
    return f"invalid JSON ({exc})"  # e.g. a number with more than 4,300 digits


def loads(text: str, source: str) -> object:
    """Decode a file's JSON text; the error names ``source``, the line and the column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{source} line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        raise InvalidContextError(msg) from exc
    except (RecursionError, ValueError) as exc:
        raise InvalidContextError(f"{source}: {unreadable(exc)}") from exc


def dumps_document(document: Any) -> bytes:
    """Return a JSON value as indented UTF-8 text ending in a newline."""
    try:
        return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate read from a "\\ud800" escape
        return (json.dumps(document, indent=2) + "\n").encode("ascii")


def dumps_messages(messages: list[dict[str, Any]], fmt: Format) -> bytes:
    """Return ``messages`` serialised as UTF-8 JSON (``fmt="json"``) or JSONL."""
    try:
        return _serialise(messages, fmt, ascii_only=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate read from a "\\ud800" escape
        return _serialise(messages, fmt, ascii_only=True).encode("ascii")


def _serialise(messages: list[dict[str, Any]], fmt: Format, *, ascii_only: bool) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(m, ensure_ascii=ascii_only) + "\n" for m in messages)
    return json.dumps(messages, ensure_ascii=ascii_only, indent=2) + "\n"


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder.

    Readers see the old file or the new one, never a part; on failure the
    old file (if any) is left as it was and the temporary file is removed.
    A new file gets the usual permissions (0o666 less the umask); a replaced
    file keeps its own.
    """
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temporary, flags, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
