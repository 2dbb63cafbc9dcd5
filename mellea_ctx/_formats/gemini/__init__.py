"""Gemini ``contents`` in and out.

A Gemini request holds ``contents``, a list of ``{"role": "user" | "model",
"parts": [...]}``, and the system prompt apart, in ``systemInstruction``.
A part holds one of ``text``, ``inlineData`` (base64 with its ``mimeType``),
``fileData`` (a ``fileUri``), ``functionCall`` or ``functionResponse``, and
may carry ``thought: true`` (the model's thinking) and a ``thoughtSignature``
that Gemini 3 requires back, verbatim, on every step of a tool loop.

:func:`from_gemini` reads each ``model`` content as one
:class:`ModelOutputThunk` (thoughts as :class:`ThinkingPart` with
``provider="google"`` and the signature, text as :class:`TextPart` keeping
any ``thoughtSignature`` in ``extra``, calls as :class:`ToolCall` keeping
theirs), each ``functionResponse`` as a :class:`ToolMessage`, any other
``user`` content as a :class:`Message`, and ``systemInstruction`` as a
system message. A call without an ``id`` gets one, ``gemini-call-N``
(:data:`SYNTHETIC_ID_PREFIX`), noted as made up so that :func:`to_gemini`
leaves it out again (a real id that starts the same way is kept), and a
response without an ``id`` answers the earliest unanswered call of that name
in the model content before it. Parts we do not model (``executableCode``,
``codeExecutionResult``, ...) are :class:`OpaquePart`. A model content is one
model step, whatever the order of its parts: when a part follows a call
(``[functionCall, text]``), the order is noted and written back.
``NaN`` and ``Infinity`` in ``args`` or ``response`` are refused: they are
not JSON, and Gemini refuses them.

Reading then writing is the identity, with two documented normalisations:
a content without ``role`` is written with ``"role": "user"``; a user
content that mixes function responses with other parts is written as two
contents (responses first). Writing a history that did not come from
Gemini as it was (a compactor's cut, another provider's context) adds what
Gemini requires: a model step with calls right after another model step
joins that step's content, and contents that open with a function call turn
get a user turn in front (:data:`~mellea_ctx._formats.notes.OPENER`), since
Gemini wants a function call turn right after a user turn. Only the fields
Gemini's ``Content``, ``Part``, ``FunctionCall`` and ``FunctionResponse``
define are written (:data:`PART_FIELDS`...); another provider's keys
(``cache_control``, ``citations``, a Chat tool call's ``index``) and parts
Gemini has no place for are left out and reported through ``lost=``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..._core import parts as pt
from ..._core.calls import ToolCall
from ..._core.components import Component, Message, ModelOutputThunk, ToolMessage
from ..._core.exceptions import InvalidComponentError
from ..._core.reprs import short_repr
from ..notes import OPENER, note, provider_keys, report_losses, with_notes
from ..reading import invalid, other_keys

__all__ = [
    "CONTENT_FIELDS",
    "DATA_FIELDS",
    "INNER_FIELDS",
    "PART_FIELDS",
    "PROVIDER",
    "SYNTHETIC_ID_PREFIX",
    "from_gemini",
    "to_gemini",
]

#: ``provider`` of the thinking and opaque parts read from Gemini contents.
PROVIDER: Final = "google"
#: The start of the id :func:`from_gemini` gives a call Gemini sent without one.
SYNTHETIC_ID_PREFIX: Final = "gemini-call-"

# The fields below are google-genai's ``types.Content``, ``types.Part`` and the types
# of a part's data, by their JSON names (tests/test_wire_gemini_responses.py checks them
# against the SDK). A key outside them is one Gemini refuses.
#: The fields of a ``Content``.
CONTENT_FIELDS: Final = frozenset({"role", "parts"})
#: The fields of a ``Part`` that hold its data; a part holds exactly one.
DATA_FIELDS: Final = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
#: Every field of a ``Part``: its data and what may sit beside it.
PART_FIELDS: Final = frozenset(
    {
        *DATA_FIELDS,
        "thought",
        "thoughtSignature",
        "videoMetadata",
        "partMetadata",
        "mediaResolution",
        "audioTranscription",
        "mediaProcessing",
        "speechMetadata",
        "documentMetadata",
        "spreadsheetMetadata",
        "audioMetadata",
    }
)
#: The fields of the object each data field of a part holds, where we write one.
INNER_FIELDS: Final = {
    "functionCall": frozenset({"id", "name", "args", "partialArgs", "willContinue"}),
    "functionResponse": frozenset(
        {"id", "name", "response", "parts", "scheduling", "willContinue"}
    ),
    "inlineData": frozenset({"mimeType", "data", "displayName"}),
    "fileData": frozenset({"mimeType", "fileUri", "displayName"}),
    "executableCode": frozenset({"id", "code", "language"}),
    "codeExecutionResult": frozenset({"id", "outcome", "output"}),
}
_BESIDE: Final = PART_FIELDS - frozenset(DATA_FIELDS)


def _json_text(value: Mapping[str, Any], where: str, field: str) -> str:
    try:  # NaN and Infinity are not JSON: Gemini refuses them
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        msg = f"{field}={short_repr(value)} holds NaN or Infinity, which JSON (and Gemini) refuse"
        raise invalid(where, msg) from exc


def _loads(text: str) -> Any:
    """``text`` as JSON, or ``None`` when it is not JSON (``NaN`` and ``Infinity`` are not)."""

    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        return json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return None


def _is_media(inner: Any, fields: tuple[str, str], *, needs_mime: bool) -> bool:
    """Whether ``inner`` holds only ``fields``: a string payload and a string (or no) mime."""
    if not isinstance(inner, Mapping) or not set(inner) <= set(fields):
        return False
    mime, payload = (inner.get(f) for f in fields)
    if needs_mime and mime is None:
        return False
    return type(payload) is str and (mime is None or type(mime) is str)


def _media(part: Mapping[str, Any], key: str, fields: tuple[str, str]) -> pt.Part | None:
    inline = key == "inlineData"  # base64 data, which needs its mime; else a file's uri
    inner = part[key]
    if not _is_media(inner, fields, needs_mime=inline):
        return None
    mime, payload = (inner.get(f) for f in fields)
    extra = other_keys(part, key)
    kind = pt.ImagePart if mime is not None and mime.startswith("image/") else pt.DocumentPart
    if inline:
        return kind(data=payload, media_type=mime, extra=extra)
    return kind(url=payload, media_type=mime, extra=extra)


def _read_part(part: Mapping[str, Any]) -> pt.Part:
    """One non-function part; anything we cannot model exactly stays opaque."""
    try:
        text = part.get("text")
        if type(text) is str and part.get("thought") is True:
            signature = part.get("thoughtSignature")
            if type(signature) is str:
                extra = other_keys(part, "text", "thoughtSignature")
                return pt.ThinkingPart(text, signature=signature, provider=PROVIDER, extra=extra)
            return pt.ThinkingPart(text, provider=PROVIDER, extra=other_keys(part, "text"))
        if type(text) is str:
            return pt.TextPart(text, extra=other_keys(part, "text"))
        for key, fields in (
            ("inlineData", ("mimeType", "data")),
            ("fileData", ("mimeType", "fileUri")),
        ):
            if key in part and (media := _media(part, key, fields)) is not None:
                return media
    except InvalidComponentError:
        pass
    return pt.OpaquePart(PROVIDER, part)


def _inner_extra(part: Mapping[str, Any], key: str, known: tuple[str, ...]) -> dict[str, Any]:
    """The part's keys beside ``key``, plus ``key``'s own unknown keys under ``key``."""
    extra = other_keys(part, key)
    inner = other_keys(part[key], *known)
    if inner:
        extra[key] = inner
    return extra


def _named(part: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """``part[key]``, a call or response, which must be an object with a non-empty name."""
    inner = part[key]
    if not isinstance(inner, Mapping) or type(inner.get("name")) is not str or not inner["name"]:
        raise invalid(where, f"{key}={short_repr(inner)} needs a non-empty 'name'")
    return inner


def _given_id(inner: Mapping[str, Any]) -> str | None:
    """The call or response's own ``id``, or ``None`` when it has no usable one."""
    given = inner.get("id")
    return given if type(given) is str and given else None


def _read_keys(inner: Mapping[str, Any], payload: str) -> tuple[str, ...]:
    """The keys of ``inner`` read into the component; an invalid id or a ``payload``
    that is not an object stays under extra, verbatim."""
    keys = ["name"]
    if _given_id(inner) is not None:
        keys.append("id")
    if isinstance(inner.get(payload), Mapping):
        keys.append(payload)
    return tuple(keys)


def _payload_text(inner: Mapping[str, Any], payload: str, where: str, field: str) -> str:
    """``inner[payload]`` as JSON text, or ``""`` when it is not an object."""
    value = inner.get(payload)
    return _json_text(value, where, field) if isinstance(value, Mapping) else ""


def _read_call(part: Mapping[str, Any], number: int, where: str) -> ToolCall:
    inner = _named(part, "functionCall", where)
    given = _given_id(inner)
    call_id = f"{SYNTHETIC_ID_PREFIX}{number}" if given is None else given
    arguments = _payload_text(inner, "args", where, "functionCall args")
    extra = _inner_extra(part, "functionCall", _read_keys(inner, "args"))
    if given is None:
        extra = with_notes(extra, id="absent")
    return ToolCall(call_id, inner["name"], arguments, extra=extra)


def _answered(pending: list[ToolCall], given: str | None, name: str) -> tuple[str, ToolCall | None]:
    """The id a response answers and the pending call it matches: by its id, or without
    one, the earliest pending call of its name (none: an orphan id made from the name)."""
    if given is not None:
        return given, next((c for c in pending if c.id == given), None)
    match = next((c for c in pending if c.name == name), None)
    return (match.id if match is not None else f"{SYNTHETIC_ID_PREFIX}orphan-{name}"), match


def _read_response(part: Mapping[str, Any], pending: list[ToolCall], where: str) -> ToolMessage:
    inner = _named(part, "functionResponse", where)
    name = inner["name"]
    given = _given_id(inner)
    call_id, match = _answered(pending, given, name)
    if match is not None:
        pending.remove(match)
    text = _payload_text(inner, "response", where, "functionResponse response")
    extra = _inner_extra(part, "functionResponse", _read_keys(inner, "response"))
    extra = with_notes(
        extra,
        id="absent" if given is None else None,
        response="absent" if "response" not in inner else None,
    )
    return ToolMessage(text, tool_call_id=call_id, name=name, extra=extra)


def _parts_of(content: Mapping[str, Any], where: str) -> Sequence[Any]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise invalid(where, f"parts={short_repr(parts)} must be a list of parts")
    for index, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise invalid(f"{where} parts[{index}]", f"{short_repr(part)} must be an object")
    return parts


def from_gemini(
    contents: Iterable[Mapping[str, Any]], system_instruction: Mapping[str, Any] | None = None
) -> list[Component]:
    """Return the components of Gemini ``contents`` (and its ``systemInstruction``).

    Args:
        contents: The request's ``contents`` (plain dicts).
        system_instruction: The request's ``systemInstruction``, if any,
            read as a leading system message.

    Returns:
        The components, oldest first (see the module docs).

    Raises:
        InvalidContextError: For a content that is not an object with a
            ``parts`` list, a role other than ``user`` or ``model``, a call
            or response without a name, or ``NaN`` / ``Infinity`` in its
            ``args`` or ``response``; the error names the content and part.

    Examples:
        >>> out = from_gemini([
        ...     {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        ...     {"role": "model", "parts": [{"functionCall": {"name": "weather",
        ...         "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]},
        ...     {"role": "user", "parts": [{"functionResponse": {"name": "weather",
        ...         "response": {"result": "sunny"}}}]},
        ... ])
        >>> [c.role for c in out], out[1].tool_calls[0].id == out[2].tool_call_id
        (['user', 'assistant', 'tool'], True)
    """
    return _read(contents, system_instruction)[0]


def _read(
    contents: Iterable[Mapping[str, Any]], system_instruction: Mapping[str, Any] | None = None
) -> tuple[list[Component], list[int]]:
    """The components, and the index of the content each came from (-1: systemInstruction)."""
    out: list[Component] = []
    starts: list[int] = []
    if system_instruction is not None:
        out.append(_read_system(system_instruction))
        starts.append(-1)
    pending: list[ToolCall] = []  # the calls of the last model content, not yet answered
    calls = 0
    for index, content in enumerate(contents):
        where = f"content {index}"
        if not isinstance(content, Mapping):
            raise invalid(where, f"{short_repr(content)} must be an object with 'role' and 'parts'")
        role = content.get("role", "user")
        raw: Sequence[Mapping[str, Any]] = _parts_of(content, where)
        extra = other_keys(content, "role", "parts")
        try:
            if role == "model":
                step = _read_model(raw, extra, calls, where)
                out.append(step)
                pending = list(step.tool_calls)
                calls += len(pending)
            elif role == "user":
                out += _read_user(raw, extra, pending, where)
                pending = []
            else:
                raise invalid(where, f"role={short_repr(role)} must be 'user' or 'model'")
        except InvalidComponentError as exc:
            raise invalid(where, str(exc)) from exc
        starts += [index] * (len(out) - len(starts))
    return out, starts


def _read_system(system_instruction: Mapping[str, Any]) -> Message:
    """``systemInstruction``, read as a system message."""
    if not isinstance(system_instruction, Mapping):
        raise invalid("systemInstruction", f"{short_repr(system_instruction)} must be an object")
    try:
        parts = tuple(_read_part(p) for p in _parts_of(system_instruction, "systemInstruction"))
        extra = other_keys(system_instruction, "parts")
        return Message("system", parts, extra=extra, structured=True)
    except InvalidComponentError as exc:
        raise invalid("systemInstruction", str(exc)) from exc


def _read_model(
    raw: Sequence[Mapping[str, Any]], extra: dict[str, Any], calls: int, where: str
) -> ModelOutputThunk:
    """A model content: one model step, whatever the order of its parts (``calls``: the
    calls read so far, which number the ids made up for calls without one)."""
    made: list[ToolCall] = []
    held: list[pt.Part] = []
    layout = ""
    for at, block in enumerate(raw):
        if "functionCall" in block:
            made.append(_read_call(block, calls + len(made), f"{where} parts[{at}]"))
            layout += "c"
        else:
            held.append(_read_part(block))
            layout += "p"
    if "cp" in layout:  # a part after a call: note the order to write it back
        extra = with_notes(extra, gemini_parts=layout)
    return ModelOutputThunk(parts=held, tool_calls=made, extra=extra, structured=True)


def _read_user(
    raw: Sequence[Mapping[str, Any]], extra: dict[str, Any], pending: list[ToolCall], where: str
) -> list[Component]:
    """A user content: its function responses (answering ``pending``), then the rest as a
    user message (kept when there is no response, so an empty content stays one)."""
    answers = [p for p in raw if "functionResponse" in p]
    out: list[Component] = [
        _read_response(block, pending, f"{where} parts[{at}]") for at, block in enumerate(answers)
    ]
    rest = [_read_part(p) for p in raw if "functionResponse" not in p]
    if rest or not answers:
        out.append(Message("user", rest, extra=extra, structured=True))
    return out


# -- writing -----------------------------------------------------------------------------------


def _file_data(uri: str, mime: str | None) -> dict[str, Any]:
    """A ``fileData`` part's object: the uri, with its mime when known."""
    return {"mimeType": mime, "fileUri": uri} if mime is not None else {"fileUri": uri}


def _response_field(result: Component) -> dict[str, Any] | None:
    """A result's ``response``: its text's JSON object, else ``{"result": text}``; ``None``
    for an empty result read from a response without one."""
    text = result.content
    if not text and note(result.extra, "response") == "absent":
        return None
    response = _loads(text) if text else None
    return response if isinstance(response, dict) else {"result": text}


class _Writer:
    """One pass of :func:`to_gemini`: what it could not carry, by component."""

    def __init__(self) -> None:
        self.lost: list[str] = []
        self.where = ""

    def keys(self, extra: Any, allowed: frozenset[str], what: str) -> dict[str, Any]:
        """The provider keys of ``extra`` that ``allowed`` has; the others are reported."""
        kept = {}
        for key, value in provider_keys(extra).items():
            if key in allowed:
                kept[key] = value
            else:
                self.lost.append(f"{self.where}: key {key!r} (a Gemini {what} has no such field)")
        return kept

    def inner(self, extra: Any, key: str, inner: dict[str, Any]) -> dict[str, Any]:
        """A part holding ``key``: ``inner`` plus the kept keys of ``extra[key]`` and ``extra``."""
        part = self.keys(extra, _BESIDE | {key}, "part")
        nested = part.pop(key, {})
        if isinstance(nested, Mapping):
            for name, value in nested.items():
                if name in INNER_FIELDS[key] and name not in inner:
                    inner[name] = value
                elif name not in inner:
                    self.lost.append(f"{self.where}: key {key}.{name} (Gemini has no such field)")
        return {key: inner, **part}

    def part(self, part: pt.Part) -> dict[str, Any] | None:
        """``part`` as a Gemini part, or ``None`` (reported) when Gemini has no place for it."""
        match part:
            case pt.ThinkingPart():
                return self.thinking(part)
            case pt.TextPart() | pt.RefusalPart():
                return {"text": part.text, **self.keys(part.extra, _BESIDE, "part")}
            case pt.ImagePart() | pt.DocumentPart():
                return self.media(part)
            case pt.AudioPart():
                return self.audio(part)
            case pt.OpaquePart():
                return self.opaque(part)
            case pt.RedactedThinkingPart():
                self.lose("redacted thinking (Gemini cannot verify it)")
                return None
            case _:
                pt.assert_never(part)

    def lose(self, what: str) -> None:
        """Report ``what`` as left out."""
        self.lost.append(f"{self.where}: {what}")

    def thinking(self, part: pt.ThinkingPart) -> dict[str, Any] | None:
        if part.provider != PROVIDER:  # another provider's thinking: Gemini cannot verify it
            self.lose(f"a thinking part from {part.provider!r}")
            return None
        block = {"text": part.text, "thought": True, **self.keys(part.extra, _BESIDE, "part")}
        if part.signature is not None:
            block["thoughtSignature"] = part.signature
        return block

    def media(self, part: pt.ImagePart | pt.DocumentPart) -> dict[str, Any] | None:
        """Inline data, else a file by uri, else a document's text; a provider file id is lost."""
        if part.data is not None:
            mime = part.media_type or "application/octet-stream"
            return self.inner(part.extra, "inlineData", {"mimeType": mime, "data": part.data})
        if part.url is not None:
            return self.inner(part.extra, "fileData", _file_data(part.url, part.media_type))
        if isinstance(part, pt.DocumentPart) and part.text is not None:
            return {"text": part.text}
        what = "an image" if isinstance(part, pt.ImagePart) else "a document"
        self.lose(f"{what} given only by a provider file id")
        return None

    def audio(self, part: pt.AudioPart) -> dict[str, Any] | None:
        if part.data is None:
            self.lose(f"an audio part given only by id {part.id!r}")
            return None
        return {"inlineData": {"mimeType": f"audio/{part.format or 'wav'}", "data": part.data}}

    def opaque(self, part: pt.OpaquePart) -> dict[str, Any] | None:
        if part.provider != PROVIDER:
            self.lose(f"an opaque {part.provider} block of type {part.type!r}")
            return None
        return pt.thaw_json(part.block)  # type: ignore[no-any-return]

    def parts(self, parts: Iterable[pt.Part]) -> list[dict[str, Any]]:
        return [block for block in map(self.part, parts) if block is not None]

    def call(self, call: ToolCall) -> dict[str, Any]:
        inner: dict[str, Any] = {"name": call.name}
        if call.arguments:
            args = _loads(call.arguments)
            inner["args"] = args if isinstance(args, dict) else {"arguments": call.arguments}
        if note(call.extra, "id") != "absent":
            inner["id"] = call.id
        return self.inner(call.extra, "functionCall", inner)

    def response(self, result: Component, names: Mapping[str, str], idless: set[str]) -> Any:
        # Gemini pairs a response with its call by name: a result without one takes its call's.
        call_id = result.tool_call_id or ""
        inner: dict[str, Any] = {"name": result.name or names.get(call_id, "tool")}
        if call_id and call_id not in idless and note(result.extra, "id") != "absent":
            inner["id"] = call_id
        if (response := _response_field(result)) is not None:
            inner["response"] = response
        if result.is_error:
            self.lost.append(f"{self.where}: the is_error flag of the result for {call_id!r}")
        return self.inner(result.extra, "functionResponse", inner)

    def model(self, component: Component) -> list[dict[str, Any]]:
        """A model step's parts and calls, in the order its content had them."""
        parts = [self.part(p) for p in component.parts]
        calls = [self.call(c) for c in component.tool_calls]
        layout = note(component.extra, "gemini_parts")
        if isinstance(layout, str) and layout.count("c") == len(calls):
            in_parts, in_calls = iter(parts), iter(calls)
            blocks = [next(in_calls if c == "c" else in_parts, None) for c in layout]
            blocks += list(in_parts)
        else:
            blocks = [*parts, *calls]
        return [block for block in blocks if block is not None]

    def empty(self, role: str) -> None:
        """Report a content left out for having no parts (Gemini refuses an empty one)."""
        self.lost.append(f"{self.where}: a {role} content with nothing Gemini can hold")

    def content_keys(self, component: Component) -> None:
        """Report the keys of ``component`` a ``Content`` cannot hold (only role and parts)."""
        for key in provider_keys(component.extra):
            if key != "role":
                self.lost.append(f"{self.where}: key {key!r} (a Gemini content has no such field)")


def to_gemini(components: Iterable[Component], *, lost: list[str] | None = None) -> dict[str, Any]:
    """Return ``components`` as a Gemini request's ``contents`` (and ``systemInstruction``).

    Leading system and developer messages become ``systemInstruction``
    (their parts joined); later ones are sent as user text. The tool results
    after a model turn form one user content of ``functionResponse`` parts,
    right after that turn, as Gemini wants every response to one model turn
    together (user text after the turn follows them, as for Anthropic). A
    model step with calls right after another model step joins its content,
    and contents that would open with a function call turn get a user turn
    in front, as Gemini wants a function call turn right after a user turn.

    Only fields Gemini defines are written. What cannot be carried (another
    provider's keys or thinking, a file given only by a provider's id, the
    ``is_error`` flag) is appended to ``lost``, one line each, or, without
    it, reported in one :class:`~mellea_ctx.LossyConversionWarning`.

    Args:
        components: The history, oldest first (a ``ChatContext`` works).
        lost: A list to receive one line per thing that could not be written.

    Returns:
        ``{"contents": [...]}``, with ``"systemInstruction"`` when there is one.

    Examples:
        >>> from mellea_ctx import Message
        >>> to_gemini([Message("system", "Be brief."), Message("user", "hi")])
        ... # doctest: +NORMALIZE_WHITESPACE
        {'contents': [{'role': 'user', 'parts': [{'text': 'hi'}]}],
         'systemInstruction': {'parts': [{'text': 'Be brief.'}]}}
    """
    body, _, found = _write(components)
    report_losses(lost, found, "to_gemini")
    return body


def _write(components: Iterable[Component]) -> tuple[dict[str, Any], list[int], list[str]]:
    """The body, for each content the index of the component it starts with, and the losses."""
    items = list(components)
    writer = _Writer()
    start = 0
    while start < len(items) and items[start].role in ("system", "developer"):
        start += 1
    body = {"systemInstruction": _system_instruction(items[:start], writer)} if start else {}
    built = _Contents(writer)
    for index in range(start, len(items)):
        writer.where = f"component {index}"
        built.add(items[index], index)
    built.open_with_user()
    return {"contents": built.contents, **body}, built.owners, writer.lost


def _system_instruction(leading: Sequence[Component], writer: _Writer) -> dict[str, Any]:
    """The leading system and developer messages, their parts joined, as one instruction."""
    writer.where = "component 0"
    extra = writer.keys(leading[0].extra, CONTENT_FIELDS - {"parts"}, "content")
    parts = []
    for index, component in enumerate(leading):
        writer.where = f"component {index}"
        parts += writer.parts(component.parts)
    return {**extra, "parts": parts}


class _Contents:
    """The contents :func:`to_gemini` builds, and the index of the component each starts with."""

    def __init__(self, writer: _Writer) -> None:
        self.writer = writer
        self.contents: list[dict[str, Any]] = []
        self.owners: list[int] = []
        self.answers: dict[str, Any] | None = (
            None  # the user content of the last model turn's responses
        )
        self.run = 0  # where the user contents after the last model turn start
        self.names: dict[str, str] = {}  # call id -> tool name
        self.idless: set[str] = set()  # the ids of calls written without one

    def add(self, component: Component, index: int) -> None:
        """Write ``component``, the ``index``-th, where its role puts it."""
        by_role = {"tool": self.result, "assistant": self.model}
        by_role.get(component.role, self.user)(component, index)

    def result(self, component: Component, index: int) -> None:
        if self.answers is None:  # responses come first in their user turn, as Gemini wants
            self.answers = {"role": "user", "parts": []}
            self.contents.insert(self.run, self.answers)
            self.owners.insert(self.run, index)
        self.answers["parts"].append(self.writer.response(component, self.names, self.idless))

    def model(self, component: Component, index: int) -> None:
        self.writer.content_keys(component)
        parts = self.writer.model(component)
        if not parts:
            self.writer.empty("model")
        elif component.tool_calls and self.contents and self.contents[-1]["role"] == "model":
            self.join_model_run()["parts"] += parts
        else:
            self.append("model", parts, index)
        self.answers, self.run = None, len(self.contents)
        calls = component.tool_calls
        self.names.update((call.id, call.name) for call in calls)
        self.idless.update(c.id for c in calls if note(c.extra, "id") == "absent")

    def join_model_run(self) -> dict[str, Any]:
        """Join the run of model contents at the end into its first, and return that one.

        A call turn must follow a user turn: after a cut (or a user turn left empty),
        the model turns before it become one.
        """
        contents = self.contents
        first = len(contents) - 1
        while first > 0 and contents[first - 1]["role"] == "model":
            first -= 1
        for joined in contents[first + 1 :]:
            contents[first]["parts"] += joined["parts"]
        del contents[first + 1 :], self.owners[first + 1 :]
        return contents[first]

    def user(self, component: Component, index: int) -> None:
        self.writer.content_keys(component)
        if parts := self.writer.parts(component.parts):
            self.append("user", parts, index)
        else:
            self.writer.empty("user")

    def append(self, role: str, parts: list[dict[str, Any]], index: int) -> None:
        self.contents.append({"role": role, "parts": parts})
        self.owners.append(index)

    def open_with_user(self) -> None:
        """Put a user turn before an opening function call turn.

        "function call turn comes immediately after a user turn or after a function
        response turn": a history cut before its first user turn gets one, as to_anthropic.
        """
        contents = self.contents
        if contents and contents[0]["role"] == "model" and _has_call(contents[0]):
            contents.insert(0, {"role": "user", "parts": [{"text": OPENER}]})
            self.owners.insert(0, self.owners[0])


def _has_call(content: Mapping[str, Any]) -> bool:
    return any("functionCall" in part for part in content["parts"])
