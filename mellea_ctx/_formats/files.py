"""Writing transcript files: JSON or JSONL text, written atomically."""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Literal

__all__: list[str] = []

#: A transcript's file format: a JSON array of messages, or one message per line.
Format = Literal["json", "jsonl"]


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
