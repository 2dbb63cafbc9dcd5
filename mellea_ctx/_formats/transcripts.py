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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._core.components import Component
from .._core.exceptions import InvalidArgumentError, InvalidContextError
from .files import (
    Format,
    Transcript,
    TranscriptFormat,
    atomic_write,
    dumps_document,
    dumps_messages,
    loads,
)
from .openai import to_openai
from .openai.files import parse_text, text_format
from .registry import Provider, Reading, WireFormat, detect, wire_format

#: The file formats of OpenAI Chat messages; every other transcript format is a wire format.
_CHAT_FILES: tuple[Format, ...] = ("json", "jsonl")


def wire_of(fmt: str) -> WireFormat:
    """The wire format a transcript format is written in (``"json"``, ``"jsonl"``: OpenAI Chat)."""
    return wire_format("openai" if fmt in _CHAT_FILES else fmt)


def title(fmt: str) -> str:
    """How the command line names a file format: ``"OpenAI JSONL"``, ``"Gemini"``."""
    shown = wire_of(fmt).shape.title
    return f"{shown} {fmt.upper()}" if fmt in _CHAT_FILES else shown


def parse(data: object, fmt: Provider, source: str) -> Reading:
    """Read a file's JSON value in wire format ``fmt``: components, locations, envelope."""
    return wire_format(fmt).rules.read(data, source, None)


def wire_document(
    components: Iterable[Component],
    fmt: Provider,
    body: Mapping[str, Any] | None,
    *,
    lost: list[str] | None = None,
) -> Any:
    """Return ``components`` as wire format ``fmt``'s JSON value, inside ``body``'s other keys."""
    return wire_format(fmt).rules.write(components, body, lost)


def _read_as(wire: WireFormat, data: object, source: str, text: str | None) -> Transcript:
    components, locations, envelope = wire.rules.read(data, source, text)
    fmt: TranscriptFormat = "json" if wire.name == "openai" else wire.name
    return Transcript(components, fmt, locations, envelope, raw=data)


def _parse_anthropic(data: object, source: str, text: str | None = None) -> Transcript:
    """An Anthropic transcript's parsed JSON, read (the other half of ``dump_anthropic``)."""
    return _read_as(wire_format("anthropic"), data, source, text)


def parse_any(text: str, source: str, fmt: TranscriptFormat | None, suffix: str) -> Transcript:
    """Parse a transcript in ``fmt``, or in the format its name and text show.

    A wire format named is read from the file's JSON; with no format, the
    registry's detectors are asked (the most specific first), and a file none
    of them claims is read as OpenAI Chat messages (a JSON array or JSONL).
    """
    if fmt == "json" or fmt == "jsonl":
        return parse_text(text, source, fmt, lines=True)
    if fmt is not None:
        return _parse_as(wire_format(fmt), text, source)
    detected = text_format(text, suffix)
    if detected == "json" or text.lstrip().startswith("{"):
        found = _detected_json(text, source, suffix)
        if found is not None:
            return found
    return parse_text(text, source, detected, lines=True)


def _parse_as(wire: WireFormat, text: str, source: str) -> Transcript:
    """A file named to be in ``wire``'s format (an empty one is refused, with what to expect)."""
    if wire.shape.empty is not None and not text.strip():
        msg = f"{source}: the file is empty; expected {wire.shape.empty}"
        raise InvalidContextError(msg)
    return _read_as(wire, loads(text, source), source, text)


def _detected_json(text: str, source: str, suffix: str) -> Transcript | None:
    """A JSON file a detector claims, read; ``None`` for the OpenAI reader to read (and report).

    One JSON object no detector claims in a ``.json`` file is refused: it is no message array.
    """
    try:
        data = json.loads(text)
    except (RecursionError, ValueError):
        data = None  # let the OpenAI reader report it, with its hints
    found = None if data is None else detect(data)
    if found is not None:  # an OpenAI request body too, {"model": ..., "messages": [...]}
        return _read_as(found, data, source, text)
    if isinstance(data, dict) and suffix.lower() == ".json":
        msg = (
            f"{source}: holds one JSON object, not a JSON array of messages; put it in "
            "[...], or name the file .jsonl if it is JSONL (one message per line)"
        )
        raise InvalidContextError(msg)
    return None


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
    if fmt == "jsonl" and envelope is None:
        return dumps_messages(to_openai(components, lost=lost), fmt)
    return dumps_document(wire_of(fmt).rules.write(components, envelope, lost))


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
    text = _decode(file.read_bytes(), str(file))
    return parse_text(text, str(file), text_format(text, file.suffix))


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
