"""OpenAI Chat Completions messages in and out, and transcripts on disk.

:func:`from_openai` and :func:`to_openai` convert between the ``messages``
list of a Chat Completions request and our components; the round trip gives
back the same JSON for every message this module reads (the exceptions are
listed in :func:`from_openai`). :func:`validate_openai` checks the provider's
rules for tool calls in a history. :func:`load_conversation` and
:func:`dump_conversation` read and write such a list as a JSON array or as
JSONL (one message per line).

Every error names where the bad value is (``message 12``, or the file and
its line), the field, the value with ``repr``, what was expected and the fix.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from .._core.components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from .._core.exceptions import InvalidArgumentError, InvalidComponentError, InvalidContextError
from .._core.reprs import short_repr
from .anthropic import anthropic_document, read_turns

__all__ = [
    "Format",
    "dump_anthropic",
    "dump_conversation",
    "from_openai",
    "load_anthropic",
    "load_conversation",
    "to_openai",
    "validate_openai",
]

#: A transcript's file format: a JSON array of messages, or one message per line.
Format = Literal["json", "jsonl"]

#: A transcript as the command line reads and writes it: the two OpenAI file
#: formats, or Anthropic Messages turns (a JSON array, or an object with
#: ``system`` and ``messages``).
TranscriptFormat = Literal["json", "jsonl", "anthropic"]

#: The roles a Chat Completions message may have here.
OPENAI_ROLES: Final = ("system", "user", "assistant", "tool")

_ROLE_FIXES: Final = {
    "developer": "send developer instructions as role 'system'",
    "function": "legacy function results are not supported; send them as role 'tool' "
    "with the tool_call_id of the call they answer",
}


def _short(value: object, limit: int = 80) -> str:
    """Return ``repr(value)``, cut to ``limit`` characters so an error stays one line."""
    return short_repr(value, limit)


def _unreadable(exc: Exception) -> str:
    """Why ``json.loads`` failed other than with a syntax error."""
    if isinstance(exc, RecursionError):
        return (
            "the JSON nests too deeply to read; a transcript holds flat message objects, "
            "so this is not one (or it is damaged)"
        )
    return f"invalid JSON ({exc})"  # e.g. a number with more than 4,300 digits


def _fail(where: str, detail: str) -> InvalidContextError:
    return InvalidContextError(f"{where}: {detail}")


# -- reading one message ---------------------------------------------------------


def _text_part(part: Mapping[str, Any], where: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise _fail(where, f"text={_short(text)} must be a string")
    return text


def _image_part(part: Mapping[str, Any], where: str) -> str:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else None
    if not isinstance(url, str) or not url:
        msg = f'image_url={_short(image)} must be an object {{"url": "..."}} with a non-empty url'
        raise _fail(where, msg)
    return url


def _parts(parts: Sequence[Any], role: str, where: str) -> tuple[str, tuple[str, ...]]:
    """Return the text (text parts joined with newlines) and image urls of a parts list."""
    texts: list[str] = []
    images: list[str] = []
    for index, part in enumerate(parts):
        here = f"{where}: content[{index}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(_text_part(part, here))
        elif kind == "image_url" and role == "user":
            images.append(_image_part(part, here))
        elif kind == "image_url":
            msg = f"type='image_url' is only allowed in user messages, not role={role!r}"
            raise InvalidContextError(f"{here}: {msg}; move the image to a user message")
        elif isinstance(part, Mapping):
            expected = "'text' or 'image_url'" if role == "user" else "'text'"
            msg = f"type={_short(kind)} is not supported here; expected {expected}"
            raise InvalidContextError(f"{here}: {msg}")
        else:
            msg = f"{_short(part)} is not a content part; expected an object with a 'type'"
            raise InvalidContextError(f"{here}: {msg}")
    return "\n".join(texts), tuple(images)


def _content(raw: Mapping[str, Any], role: str, where: str) -> tuple[str | None, tuple[str, ...]]:
    """Return a message's text (``None`` for an assistant's null content) and its images."""
    if "content" not in raw and role != "assistant":
        raise _fail(where, "'content' is missing; pass a string ('' for an empty message)")
    content = raw.get("content")
    if content is None:
        if role == "assistant":
            return None, ()
        msg = f"content=None is not allowed for role={role!r}; pass a string ('' when empty)"
        raise _fail(where, msg)
    if isinstance(content, str):
        return content, ()
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return _parts(content, role, where)
    msg = (
        f"content={_short(content)} must be a string, a list of content parts, "
        "or null (assistant messages only)"
    )
    raise _fail(where, msg)


def _name(raw: Mapping[str, Any], where: str) -> str | None:
    name = raw.get("name")
    if name is None or (isinstance(name, str) and name):
        return name
    raise _fail(where, f"name={_short(name)} must be a non-empty string; leave it out if unknown")


def _required_str(value: object, where: str, field: str, fix: str) -> str:
    if isinstance(value, str) and value:
        return value
    raise _fail(where, f"{field}={_short(value)} must be a non-empty string; {fix}")


def _tool_call(raw: object, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        msg = f"{_short(raw)} is not a tool call; expected an object with id, type and function"
        raise _fail(where, msg)
    kind = raw.get("type", "function")
    if kind != "function":
        msg = f"type={_short(kind)} is not supported; only 'function' tool calls are"
        raise _fail(where, msg)
    call_id = _required_str(raw.get("id"), where, "id", "pass the provider's call id")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        msg = f"function={_short(function)} must be an object with 'name' and 'arguments'"
        raise _fail(where, msg)
    name = _required_str(function.get("name"), where, "function.name", "pass the tool's name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        msg = (
            f"function.arguments={_short(arguments)} must be a JSON string, as the wire format "
            "carries it; serialise it with json.dumps()"
        )
        raise _fail(where, msg)
    return ToolCall(call_id, name, arguments)


def _tool_calls(raw: Mapping[str, Any], role: str, where: str) -> tuple[ToolCall, ...]:
    calls = raw.get("tool_calls")
    if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes, bytearray)):
        if calls is None:
            return ()
        raise _fail(where, f"tool_calls={_short(calls)} must be a list of tool calls")
    if not calls:
        return ()
    if role != "assistant":
        msg = f"tool_calls are only allowed on assistant messages, not role={role!r}"
        raise _fail(where, f"{msg}; move the calls to an assistant message")
    return tuple(
        _tool_call(call, f"{where}: tool_calls[{index}]") for index, call in enumerate(calls)
    )


def _parse_message(raw: object, where: str) -> Component:
    """Return the component for one Chat Completions message; ``where`` prefixes errors."""
    if not isinstance(raw, Mapping):
        msg = f"{_short(raw)} is not a message; expected an object with 'role' and 'content'"
        raise _fail(where, msg)
    if "role" not in raw:
        roles = ", ".join(map(repr, OPENAI_ROLES))
        msg = f"'role' is missing; every message needs one of {roles}"
        if "messages" in raw:
            msg += " (this looks like a request body: pass or save its 'messages' list)"
        raise _fail(where, msg)
    role = raw["role"]
    if role not in OPENAI_ROLES:
        fix = "use one of these roles"
        if isinstance(role, str):
            fix = _ROLE_FIXES.get(role, fix)
        msg = f"role={_short(role)} is not one of {OPENAI_ROLES!r}; {fix}"
        raise _fail(where, msg)
    text, images = _content(raw, role, where)
    name = _name(raw, where)
    calls = _tool_calls(raw, role, where)
    try:
        if role == "tool":
            call_id = _required_str(
                raw.get("tool_call_id"),
                where,
                "tool_call_id",
                "name the id of the call this result answers",
            )
            assert text is not None  # null content was refused above
            return ToolMessage(text, tool_call_id=call_id, name=name)
        if text is None and name is None:  # assistant with null content
            return ModelOutputThunk(None, tool_calls=calls)
        return Message(role, text or "", tool_calls=calls, images=images, name=name)
    except InvalidComponentError as exc:  # pragma: no cover - every field is checked above
        raise _fail(where, str(exc)) from exc


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Component]:
    """Return the components for a list of OpenAI Chat Completions messages.

    ``system`` and ``user`` messages become :class:`~mellea_ctx.Message`; an
    ``assistant`` message becomes a ``Message`` carrying its
    :class:`~mellea_ctx.ToolCall` values, except that one whose ``content`` is
    ``null`` becomes a :class:`~mellea_ctx.ModelOutputThunk` with ``value=None``
    (the component for output with no text), so that :func:`to_openai` writes
    ``null`` back where the input had it and ``""`` where it had ``""``. A
    ``tool`` message becomes a :class:`~mellea_ctx.ToolMessage`.

    ``content`` may also be a list of parts: ``{"type": "text"}`` parts (any
    role) are joined with ``"\\n"``, ``{"type": "image_url"}`` parts (user
    messages only) go to ``images``.

    Unknown keys are ignored, since providers and SDKs add their own
    (``refusal``, ``audio``, ``function_call``, a tool call's ``index``); so
    are an image's ``detail``, ``"name": null`` and an empty ``tool_calls``
    list. These do not survive the round trip, nor does the shape of a parts
    list without images (it is written back as a string), a missing assistant
    ``content`` (written back as ``null``) or the ``null`` content of an
    assistant message with a ``name`` (read as ``""``, since a
    ``ModelOutputThunk`` has no name). Everything else does, key order aside.

    This checks each message on its own; whether tool results match their
    calls is :func:`validate_openai`'s job.

    Args:
        messages: The ``messages`` of a Chat Completions request, as parsed JSON.

    Returns:
        One component per message, in order.

    Raises:
        InvalidArgumentError: When ``messages`` is a mapping or a string
            rather than a list of messages.
        InvalidContextError: For a message that is not an object, an unknown
            role, or a field of the wrong type; the error names the message
            index and the field.

    Examples:
        >>> from_openai([
        ...     {"role": "user", "content": "List the files"},
        ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1",
        ...      "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        ...     {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
        ... ])  # doctest: +NORMALIZE_WHITESPACE
        [Message(role='user', content='List the files'),
         ModelOutputThunk(value=None, tool_calls=(ToolCall(id='call_1', name='ls',
           arguments='{}'),)),
         ToolMessage(content='a.py', tool_call_id='call_1')]
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        msg = (
            f"from_openai: messages={_short(messages)} must be a list of message objects; "
            "for a request body pass body['messages']"
        )
        raise InvalidArgumentError(msg)
    return [_parse_message(raw, f"message {index}") for index, raw in enumerate(messages)]


# -- writing ----------------------------------------------------------------------


def _message_dict(component: Component, index: int) -> dict[str, Any]:
    if not isinstance(component, Component):
        msg = (
            f"component {index}: {_short(component)} is not a Component; "
            "build it with Message(...) or from_openai(...)"
        )
        raise InvalidComponentError(msg)
    role = component.role
    call_id = component.tool_call_id
    if (role == "tool") != (call_id is not None):
        msg = (
            f"component {index}: role={role!r} with tool_call_id={call_id!r}; a tool result "
            "needs both role 'tool' and the id of its call, other components neither"
        )
        raise InvalidComponentError(msg)
    content: str | list[dict[str, Any]] | None
    content = component.value if isinstance(component, ModelOutputThunk) else component.content
    images = component.images
    if images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
        parts.extend({"type": "image_url", "image_url": {"url": url}} for url in images)
        content = parts
    message: dict[str, Any] = {"role": role, "content": content}
    if component.name is not None:
        message["name"] = component.name
    calls = component.tool_calls
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


def to_openai(components: Iterable[Component]) -> list[dict[str, Any]]:
    """Return OpenAI Chat Completions messages for ``components``.

    Each component is written from what it tells a provider (``role``,
    ``content``, ``name``, ``tool_calls``, ``tool_call_id``, ``images``), so
    your own component classes work too. A
    :class:`~mellea_ctx.ModelOutputThunk` is an assistant message (``content``
    is ``null`` when its ``value`` is ``None``); a :class:`~mellea_ctx.CBlock`
    or :class:`~mellea_ctx.ReactInitiator` is a user message. A message with
    images gets ``content`` as a list of parts: its text (when not empty),
    then one ``image_url`` part per image.

    Args:
        components: The components, oldest first (a ``ChatContext`` works).

    Returns:
        New dicts, ready for ``json.dumps`` or an SDK's ``messages=``.

    Raises:
        InvalidComponentError: For an item that is not a ``Component``, or one
            whose ``role`` is ``"tool"`` without a ``tool_call_id`` (or the
            other way round).

    Examples:
        >>> from mellea_ctx import CBlock, ModelOutputThunk
        >>> to_openai([CBlock("Hi"), ModelOutputThunk("Hello!")])
        [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello!'}]
    """
    return [_message_dict(component, index) for index, component in enumerate(components)]


# -- history rules ------------------------------------------------------------------


def _message_label(index: int) -> str:
    return f"message {index}"


def _problems(
    components: Sequence[Component], label: Callable[[int], str] = _message_label
) -> list[tuple[int, str]]:
    """Return ``(index, problem)`` pairs, sorted by index; ``label`` names a position."""
    problems: list[tuple[int, str]] = []
    call_at: dict[str, int] = {}  # every call id seen -> the message that made it
    answered_at: dict[str, int] = {}  # call id -> the result that answered it
    exchange: int | None = None  # the assistant whose results may still follow
    pending: dict[str, str] = {}  # its unanswered call ids -> tool names

    def close(before: int) -> None:
        if exchange is not None and pending:
            calls = ", ".join(f"{call_id!r} ({name})" for call_id, name in pending.items())
            noun = "call" if len(pending) == 1 else "calls"
            msg = (
                f"tool {noun} {calls} got no result before {label(before)}; add the results "
                f"right after {label(exchange)} or drop the {noun}"
            )
            problems.append((exchange, msg))

    for index, component in enumerate(components):
        call_id = component.tool_call_id
        if call_id is None:
            if component.role == "tool":
                msg = "role='tool' without a tool_call_id; name the call this result answers"
                problems.append((index, msg))
            close(index)
            exchange, pending = None, {}
            for call in component.tool_calls:
                if call.id in call_at:
                    msg = (
                        f"tool call id {call.id!r} is already used by {label(call_at[call.id])}; "
                        "give every call its own id"
                    )
                    problems.append((index, msg))
                else:
                    call_at[call.id] = index
                pending[call.id] = call.name  # its result still pairs with this call
            if component.tool_calls:
                exchange = index
            continue
        if call_id in pending:
            del pending[call_id]
            answered_at[call_id] = index
            continue
        if call_id in answered_at:
            detail = f"was already answered by {label(answered_at[call_id])}; drop the duplicate"
        elif call_id in call_at and exchange is None:
            detail = (
                f"is called in {label(call_at[call_id])}, but a non-tool message comes between; "
                "put each result right after the assistant message that called it"
            )
        elif call_id in call_at:
            assert exchange is not None
            detail = (
                f"is called in {label(call_at[call_id])}, not in the closest preceding "
                f"assistant message ({label(exchange)}); put each result right after its call"
            )
        elif exchange is None:
            detail = "answers no earlier tool call; drop the orphan result or restore its call"
        else:
            detail = (
                f"matches no call of the closest preceding assistant message "
                f"({label(exchange)}); drop the orphan result or restore its call"
            )
        problems.append((index, f"tool result for tool_call_id={call_id!r} {detail}"))
    # A trailing exchange still waiting for results is open, not broken.
    problems.sort(key=lambda problem: problem[0])
    return problems


def validate_openai(components: Iterable[Component]) -> list[str]:
    """Return the ways a history breaks the provider's rules for tool calls (empty: valid).

    The rules OpenAI (and every Chat Completions compatible provider) enforces:

    * every tool result answers a call of the closest preceding assistant
      message, and comes before any message that is not a tool result;
    * every call of a *closed* exchange (one followed by a message that is not
      a tool result) has its result;
    * tool-call ids are unique in the history, and each call is answered once.

    An *open* exchange, the calls that end the history, is valid: its results
    may still come. Nothing else (such as content) is checked.

    Args:
        components: The history, oldest first (a ``ChatContext`` works).

    Returns:
        One line per problem, ``"message N: ..."``, in message order.

    Examples:
        >>> from mellea_ctx import ToolMessage
        >>> validate_openai([ToolMessage("ok", tool_call_id="call_9")])  # doctest: +ELLIPSIS
        ["message 0: tool result for tool_call_id='call_9' answers no earlier tool call; ..."]
    """
    items = components if isinstance(components, Sequence) else list(components)
    return [f"{_message_label(index)}: {problem}" for index, problem in _problems(items)]


# -- files ------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class _Transcript:
    """A parsed transcript: its components, its format, and where each one was read."""

    components: list[Component]
    format: TranscriptFormat
    locations: list[str]  # "line 7" (JSONL) or "message 6" (JSON), per component


def _detect(text: str, suffix: str) -> Format:
    if suffix.lower() == ".jsonl":
        return "jsonl"
    stripped = text.lstrip()
    return "json" if stripped.startswith("[") or not stripped else "jsonl"


_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, at: int) -> int:
    """Return the index of the first character at or after ``at`` that is not JSON whitespace."""
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _element_lines(text: str) -> list[int] | None:
    """Return the line (from 1) where each element of a top-level JSON array starts.

    ``None`` when ``text`` is not a well-formed JSON array.
    """
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    if text[at : at + 1] != "[":
        return None
    at = _skip_space(text, at + 1)
    lines: list[int] = []
    line, counted = 1, 0
    if text[at : at + 1] == "]":
        return lines
    try:
        while True:
            line += text.count("\n", counted, at)
            counted = at
            lines.append(line)
            _, end = decoder.raw_decode(text, at)
            at = _skip_space(text, end)
            if text[at : at + 1] != ",":
                return lines
            at = _skip_space(text, at + 1)
    except ValueError:
        return None


def _array_labels(text: str | None, count: int) -> list[str]:
    """Return ``"message N"`` per element, with its line when ``text`` is given."""
    lines = _element_lines(text) if text is not None else None
    if lines is None or len(lines) != count:
        return [f"message {index}" for index in range(count)]
    return [f"message {index} (line {line})" for index, line in enumerate(lines)]


def _parse_json(text: str, source: str, *, lines: bool = False) -> _Transcript:
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
    locations = _array_labels(text if lines else None, len(data))
    components = [
        _parse_message(raw, f"{source} {where}") for raw, where in zip(data, locations, strict=True)
    ]
    return _Transcript(components, "json", locations)


def _parse_jsonl(text: str, source: str) -> _Transcript:
    components: list[Component] = []
    locations: list[str] = []
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
    return _Transcript(components, "jsonl", locations)


def _parse_transcript(text: str, source: str, fmt: Format, *, lines: bool = False) -> _Transcript:
    if fmt == "json" and not text.strip():
        msg = f"{source}: the file is empty; expected a JSON array of messages ([] for none)"
        raise InvalidContextError(msg)
    if fmt == "json":
        return _parse_json(text, source, lines=lines)
    return _parse_jsonl(text, source)


#: Content block types only the Anthropic Messages API has.
_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)


def _looks_anthropic(data: object) -> bool:
    """Return whether parsed JSON is an Anthropic transcript rather than OpenAI messages.

    An object is one when it has a ``messages`` list and either a ``system``
    field or no message with an OpenAI-only role; an array is one when a
    message holds an Anthropic-only block, or an assistant message holds a
    list of blocks (OpenAI assistants send strings).
    """
    if isinstance(data, dict):
        messages = data.get("messages")
        if not isinstance(messages, list):
            return False
        if "system" in data:
            return True
        roles = {m.get("role") for m in messages if isinstance(m, dict)}
        return bool(messages) and not roles & {"system", "tool", "developer"}
    if not isinstance(data, list):
        return False
    for message in data:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        if message.get("role") == "assistant" and content:
            return True
        if any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content):
            return True
    return False


def _parse_anthropic(data: object, source: str, text: str | None = None) -> _Transcript:
    locations: list[str] = []
    if isinstance(data, dict):
        if not isinstance(data.get("messages"), list):
            msg = (
                f"{source}: holds a JSON object without a 'messages' list; an Anthropic "
                'transcript is a JSON array of turns or {"system": ..., "messages": [...]}'
            )
            raise InvalidContextError(msg)
        components = read_turns(
            data["messages"], data.get("system"), source=source, locations=locations
        )
    elif isinstance(data, list):
        labels = _array_labels(text, len(data))
        components = read_turns(data, source=source, locations=locations, labels=labels)
    else:
        msg = (
            f"{source}: holds a JSON {type(data).__name__}; an Anthropic transcript is a JSON "
            'array of turns or {"system": ..., "messages": [...]}'
        )
        raise InvalidContextError(msg)
    return _Transcript(components, "anthropic", locations)


def _loads(text: str, source: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{source} line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        raise InvalidContextError(msg) from exc
    except (RecursionError, ValueError) as exc:
        raise InvalidContextError(f"{source}: {_unreadable(exc)}") from exc


def _parse_any(text: str, source: str, fmt: TranscriptFormat | None, suffix: str) -> _Transcript:
    """Parse a transcript in ``fmt``, or in the format its name and text show."""
    if fmt == "anthropic":
        if not text.strip():
            msg = f"{source}: the file is empty; expected a JSON array of Messages API turns"
            raise InvalidContextError(msg)
        return _parse_anthropic(_loads(text, source), source, text)
    if fmt is not None:
        return _parse_transcript(text, source, fmt, lines=True)
    detected = _detect(text, suffix)
    stripped = text.lstrip()
    if detected == "json" or stripped.startswith("{"):
        try:
            data = json.loads(text)
        except (RecursionError, ValueError):
            data = None  # let the OpenAI reader report it, with its hints
        if data is not None and _looks_anthropic(data):
            return _parse_anthropic(data, source, text)
    return _parse_transcript(text, source, detected, lines=True)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = f"{source}: byte {exc.start} is not UTF-8 ({exc.reason}); save the file as UTF-8"
        raise InvalidContextError(msg) from exc


def _read_any(path: str | os.PathLike[str], fmt: TranscriptFormat | None = None) -> _Transcript:
    """Read a transcript in any format the command line knows (see ``_parse_any``)."""
    file = Path(path)
    return _parse_any(_decode(file.read_bytes(), str(file)), str(file), fmt, file.suffix)


def _document(components: Iterable[Component], fmt: TranscriptFormat) -> bytes:
    """Return ``components`` serialised in ``fmt``, as UTF-8 bytes."""
    if fmt == "anthropic":
        document = anthropic_document(components)
        try:
            return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate read from a "\\ud800" escape
            return (json.dumps(document, indent=2) + "\n").encode("ascii")
    return _dumps(to_openai(components), fmt)


def load_anthropic(path: str | os.PathLike[str]) -> list[Component]:
    """Return the components of an Anthropic Messages API transcript file.

    The file (UTF-8 JSON) is either an array of turns ``{"role", "content"}``
    or an object ``{"system": ..., "messages": [...]}`` (a request body's
    other fields are ignored). Turns are read as
    :func:`~mellea_ctx.from_anthropic` reads them: ``thinking`` blocks, the
    ``is_error`` flag and extra keys such as ``cache_control`` are not kept.
    The history's tool rules are not checked here (see
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
    return _read_any(path, "anthropic").components


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
    _atomic_write(Path(path), _document(components, "anthropic"))


def _read_transcript(path: str | os.PathLike[str]) -> _Transcript:
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

    The file is either a JSON array of messages or JSONL, one message per
    line (blank lines are skipped). A ``.jsonl`` name means JSONL; otherwise a
    file whose text starts with ``[`` is a JSON array and any other is JSONL.
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


def _dumps(messages: list[dict[str, Any]], fmt: Format) -> bytes:
    """Return ``messages`` serialised as UTF-8 JSON (``fmt="json"``) or JSONL."""
    try:
        return _serialise(messages, fmt, ascii_only=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate read from a "\\ud800" escape
        return _serialise(messages, fmt, ascii_only=True).encode("ascii")


def _serialise(messages: list[dict[str, Any]], fmt: Format, *, ascii_only: bool) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(m, ensure_ascii=ascii_only) + "\n" for m in messages)
    return json.dumps(messages, ensure_ascii=ascii_only, indent=2) + "\n"


def _atomic_write(path: Path, data: bytes) -> None:
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
    data = _dumps(to_openai(components), format)
    _atomic_write(file, data)
