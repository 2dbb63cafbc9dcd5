"""OpenAI Chat transcript files: a JSON array of messages, JSONL, or a request body.

The command line reads any transcript (``transcripts.read_any``); these are
its Chat Completions half, the format a file is read as when no other
format's detector claims it. A ``.jsonl`` name means JSONL; otherwise text
that starts with ``[`` is a JSON array and any other is JSONL. One JSON
object with a ``messages`` list (and no ``role``) is a request body, whose
other keys are written back around the messages.
"""

from __future__ import annotations

import json
from typing import Any

from ..._core.components import Component
from ..._core.exceptions import InvalidContextError
from ..files import Format, Transcript, body_units, loads, unreadable
from ..locate import array_labels
from .read import parse_message


def text_format(text: str, suffix: str) -> Format:
    """The file format a file's name and text show: ``"jsonl"`` or ``"json"``."""
    if suffix.lower() == ".jsonl":
        return "jsonl"
    stripped = text.lstrip()
    return "json" if stripped.startswith("[") or not stripped else "jsonl"


def _parse_json(text: str, source: str, *, lines: bool = False) -> Transcript:
    data = loads(text, source)
    if not isinstance(data, list):
        msg = (
            f"{source}: holds a JSON {type(data).__name__}, expected a JSON array of messages "
            "(or JSONL, one message per line)"
        )
        raise InvalidContextError(msg)
    locations = array_labels(text if lines else None, len(data))
    components = [
        parse_message(raw, f"{source} {where}") for raw, where in zip(data, locations, strict=True)
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
            raise InvalidContextError(f"{source} {where}: {unreadable(exc)}") from exc
        components.append(parse_message(raw, f"{source} {where}"))
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


def parse_body(body: dict[str, Any], source: str) -> Transcript:
    """A Chat Completions request body: its messages, and its other keys as the envelope."""
    locations = [f"message {index}" for index in range(len(body["messages"]))]
    components = [
        parse_message(raw, f"{source} {where}")
        for raw, where in zip(body["messages"], locations, strict=True)
    ]
    envelope = {key: value for key, value in body.items() if key != "messages"}
    return Transcript(components, "json", locations, envelope, raw=body)


def parse_text(text: str, source: str, fmt: Format, *, lines: bool = False) -> Transcript:
    """Read a Chat transcript's text in ``fmt`` (a request body whatever ``fmt`` says)."""
    body = _request_body(text)
    if body is not None:
        return parse_body(body, source)
    if fmt == "json" and not text.strip():
        msg = f"{source}: the file is empty; expected a JSON array of messages ([] for none)"
        raise InvalidContextError(msg)
    if fmt == "json":
        return _parse_json(text, source, lines=lines)
    return _parse_jsonl(text, source)


def detect(data: object) -> bool:
    """Whether parsed JSON is a Chat Completions request body (``{"messages": [...]}``)."""
    return isinstance(data, dict) and isinstance(data.get("messages"), list)


def read(
    data: object, source: str, text: str | None = None
) -> tuple[list[Component], list[str], dict[str, Any] | None]:
    """Read parsed JSON: a request body, or an array of messages (labelled by line)."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        body = parse_body(data, source)
        return body.components, body.locations, body.envelope
    if not isinstance(data, list):
        msg = (
            f"{source}: holds a JSON {type(data).__name__}, expected a JSON array of messages "
            "(or JSONL, one message per line)"
        )
        raise InvalidContextError(msg)
    locations = array_labels(text, len(data))
    components = [
        parse_message(raw, f"{source} {where}") for raw, where in zip(data, locations, strict=True)
    ]
    return components, locations, None


def units(document: Any) -> list[Any]:
    """A document's messages: a bare array, or a body's ``messages``."""
    return body_units(document, "messages")
