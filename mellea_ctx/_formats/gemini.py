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
(:data:`SYNTHETIC_ID_PREFIX`), which :func:`to_gemini` leaves out again, and
a response without an ``id`` answers the earliest unanswered call of that
name in the model content before it. Parts we do not model
(``executableCode``, ``codeExecutionResult``, ...) are :class:`OpaquePart`.

Reading then writing is the identity, with three documented normalisations:
a content without ``role`` is written with ``"role": "user"``; a user
content that mixes function responses with other parts is written as two
contents (responses first); and a model content whose text follows one of
its calls is read as two model steps. Writing adds one: a model step with
calls right after another model step (which a compactor's cut can leave,
keeping an answer before the calls of a later turn) joins that step's
content, since Gemini wants a function call turn right after a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .._core.calls import ToolCall
from .._core.components import Component, Message, ModelOutputThunk, ToolMessage
from .._core.exceptions import InvalidComponentError, InvalidContextError
from .._core.parts import (
    AudioPart,
    DocumentPart,
    ImagePart,
    OpaquePart,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    thaw_json,
)
from .._core.reprs import short_repr

__all__ = ["PROVIDER", "SYNTHETIC_ID_PREFIX", "from_gemini", "to_gemini"]

#: ``provider`` of the thinking and opaque parts read from Gemini contents.
PROVIDER: Final = "google"
#: The start of the id :func:`from_gemini` gives a call Gemini sent without one.
SYNTHETIC_ID_PREFIX: Final = "gemini-call-"


def _fail(where: str, detail: str) -> InvalidContextError:
    return InvalidContextError(f"{where}: {detail}")


def _rest(block: Mapping[str, Any], *known: str) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key not in known}


def _media(part: Mapping[str, Any], key: str, fields: tuple[str, str]) -> Part | None:
    inner = part[key]
    if not isinstance(inner, Mapping) or not set(inner) <= set(fields):
        return None
    mime, payload = (inner.get(f) for f in fields)
    if type(payload) is not str or (mime is not None and type(mime) is not str):
        return None
    if key == "inlineData" and mime is None:
        return None
    extra = _rest(part, key)
    is_image = mime is not None and mime.startswith("image/")
    if key == "inlineData":
        kind = ImagePart if is_image else DocumentPart
        return kind(data=payload, media_type=mime, extra=extra)
    if is_image:
        return ImagePart(url=payload, media_type=mime, extra=extra)
    return DocumentPart(url=payload, media_type=mime, extra=extra)


def _read_part(part: Mapping[str, Any]) -> Part:
    """One non-function part; anything we cannot model exactly stays opaque."""
    try:
        text = part.get("text")
        if type(text) is str and part.get("thought") is True:
            signature = part.get("thoughtSignature")
            if type(signature) is str:
                extra = _rest(part, "text", "thoughtSignature")
                return ThinkingPart(text, signature=signature, provider=PROVIDER, extra=extra)
            return ThinkingPart(text, provider=PROVIDER, extra=_rest(part, "text"))
        if type(text) is str:
            return TextPart(text, extra=_rest(part, "text"))
        for key, fields in (
            ("inlineData", ("mimeType", "data")),
            ("fileData", ("mimeType", "fileUri")),
        ):
            if key in part and (media := _media(part, key, fields)) is not None:
                return media
    except InvalidComponentError:
        pass
    return OpaquePart(PROVIDER, part)


def _inner_extra(part: Mapping[str, Any], key: str, known: tuple[str, ...]) -> dict[str, Any]:
    """The part's keys beside ``key``, plus ``key``'s own unknown keys under ``key``."""
    extra = _rest(part, key)
    inner = _rest(part[key], *known)
    if inner:
        extra[key] = inner
    return extra


def _read_call(part: Mapping[str, Any], number: int, where: str) -> ToolCall:
    inner = part["functionCall"]
    if not isinstance(inner, Mapping) or type(inner.get("name")) is not str or not inner["name"]:
        raise _fail(where, f"functionCall={short_repr(inner)} needs a non-empty 'name'")
    call_id = inner.get("id")
    known: tuple[str, ...] = ("name", "args", "id")
    if type(call_id) is not str or not call_id:
        call_id = f"{SYNTHETIC_ID_PREFIX}{number}"
        known = ("name", "args")  # an invalid id stays under extra, verbatim
    args = inner.get("args")
    if "args" in inner and not isinstance(args, Mapping):
        known = tuple(k for k in known if k != "args")  # kept verbatim under extra
    arguments = json.dumps(args, ensure_ascii=False) if isinstance(args, Mapping) else ""
    return ToolCall(
        call_id, inner["name"], arguments, extra=_inner_extra(part, "functionCall", known)
    )


def _read_response(part: Mapping[str, Any], pending: list[ToolCall], where: str) -> ToolMessage:
    inner = part["functionResponse"]
    if not isinstance(inner, Mapping) or type(inner.get("name")) is not str or not inner["name"]:
        raise _fail(where, f"functionResponse={short_repr(inner)} needs a non-empty 'name'")
    name = inner["name"]
    call_id = inner.get("id")
    known: tuple[str, ...] = ("name", "id", "response")
    if type(call_id) is str and call_id:
        match = next((c for c in pending if c.id == call_id), None)
    else:
        known = ("name", "response")
        match = next((c for c in pending if c.name == name), None)
        call_id = match.id if match is not None else f"{SYNTHETIC_ID_PREFIX}orphan-{name}"
    if match is not None:
        pending.remove(match)
    response = inner.get("response")
    if not isinstance(response, Mapping):
        known = tuple(k for k in known if k != "response")
    text = json.dumps(response, ensure_ascii=False) if isinstance(response, Mapping) else ""
    extra = _inner_extra(part, "functionResponse", known)
    return ToolMessage(text, tool_call_id=call_id, name=name, extra=extra)


def _parts_of(content: Mapping[str, Any], where: str) -> Sequence[Any]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise _fail(where, f"parts={short_repr(parts)} must be a list of parts")
    for index, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise _fail(f"{where} parts[{index}]", f"{short_repr(part)} must be an object")
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
            ``parts`` list, a role other than ``user`` or ``model``, or a call
            or response without a name; the error names the content and part.

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
        if not isinstance(system_instruction, Mapping):
            raise _fail("systemInstruction", f"{short_repr(system_instruction)} must be an object")
        parts = tuple(_read_part(p) for p in _parts_of(system_instruction, "systemInstruction"))
        out.append(
            Message("system", parts, extra=_rest(system_instruction, "parts"), structured=True)
        )
    pending: list[ToolCall] = []
    calls = 0
    for index, content in enumerate(contents):
        where = f"content {index}"
        if not isinstance(content, Mapping):
            raise _fail(where, f"{short_repr(content)} must be an object with 'role' and 'parts'")
        role = content.get("role", "user")
        raw: Sequence[Mapping[str, Any]] = _parts_of(content, where)
        extra = _rest(content, "role", "parts")
        try:
            if role == "model":
                pending = []
                held: list[Part] = []
                for at, block in enumerate(raw):
                    if "functionCall" in block:
                        pending.append(_read_call(block, calls, f"{where} parts[{at}]"))
                        calls += 1
                        continue
                    if pending:  # a part after a call starts the next model step
                        out.append(
                            ModelOutputThunk(
                                parts=held, tool_calls=pending, extra=extra, structured=True
                            )
                        )
                        held, pending = [], []
                    held.append(_read_part(block))
                step = ModelOutputThunk(
                    parts=held, tool_calls=pending, extra=extra, structured=True
                )
                out.append(step)
                pending = list(step.tool_calls)
            elif role == "user":
                answers = [p for p in raw if "functionResponse" in p]
                for at, block in enumerate(answers):
                    out.append(_read_response(block, pending, f"{where} parts[{at}]"))
                rest = [_read_part(p) for p in raw if "functionResponse" not in p]
                if rest or not answers:
                    out.append(Message("user", rest, extra=extra, structured=True))
                pending = []
            else:
                raise _fail(where, f"role={short_repr(role)} must be 'user' or 'model'")
        except InvalidComponentError as exc:
            raise _fail(where, str(exc)) from exc
        starts += [index] * (len(out) - len(starts))
    return out, starts


# -- writing -----------------------------------------------------------------------------------


def _write_part(part: Part) -> dict[str, Any] | None:
    extra = thaw_json(part.extra) if not isinstance(part, OpaquePart) else {}
    if isinstance(part, ThinkingPart):
        if part.provider != PROVIDER:
            return None  # another provider's thinking: Gemini cannot verify it
        block = {"text": part.text, "thought": True, **extra}
        if part.signature is not None:
            block["thoughtSignature"] = part.signature
        return block
    if isinstance(part, (TextPart, RefusalPart)):
        return {"text": part.text, **extra}
    if isinstance(part, (ImagePart, DocumentPart)):
        if part.data is not None:
            mime = part.media_type or "application/octet-stream"
            return {"inlineData": {"mimeType": mime, "data": part.data}, **extra}
        if part.url is not None:
            media = {"fileUri": part.url}
            if part.media_type is not None:
                media = {"mimeType": part.media_type, **media}
            return {"fileData": media, **extra}
        if isinstance(part, DocumentPart) and part.text is not None:
            return {"text": part.text}
        return None  # a provider file id means nothing to Gemini
    if isinstance(part, AudioPart) and part.data is not None:
        return {"inlineData": {"mimeType": f"audio/{part.format or 'wav'}", "data": part.data}}
    if isinstance(part, OpaquePart) and part.provider == PROVIDER:
        return thaw_json(part.block)  # type: ignore[no-any-return]
    return None


def _with_inner(extra: Mapping[str, Any], key: str, inner: dict[str, Any]) -> dict[str, Any]:
    part = thaw_json(extra)
    inner.update(part.pop(key, {}))
    return {key: inner, **part}


def _write_call(call: ToolCall) -> dict[str, Any]:
    inner: dict[str, Any] = {"name": call.name}
    if call.arguments:
        try:
            args = json.loads(call.arguments)
        except ValueError:
            args = None
        inner["args"] = args if isinstance(args, dict) else {"arguments": call.arguments}
    if not call.id.startswith(SYNTHETIC_ID_PREFIX):
        inner["id"] = call.id
    return _with_inner(call.extra, "functionCall", inner)


def _write_response(result: Component, names: Mapping[str, str]) -> dict[str, Any]:
    # Gemini pairs a response with its call by name: a result without one takes its call's.
    name = result.name or names.get(result.tool_call_id or "", "tool")
    inner: dict[str, Any] = {"name": name}
    call_id = result.tool_call_id
    if call_id and not call_id.startswith(SYNTHETIC_ID_PREFIX):
        inner["id"] = call_id
    text = result.content
    try:
        response = json.loads(text) if text else None
    except ValueError:
        response = None
    if text or "response" not in thaw_json(result.extra).get("functionResponse", {}):
        inner["response"] = response if isinstance(response, dict) else {"result": text}
    return _with_inner(result.extra, "functionResponse", inner)


def _written(parts: Iterable[Part]) -> list[dict[str, Any]]:
    return [block for block in map(_write_part, parts) if block is not None]


def to_gemini(components: Iterable[Component]) -> dict[str, Any]:
    """Return ``components`` as a Gemini request's ``contents`` (and ``systemInstruction``).

    Leading system and developer messages become ``systemInstruction``
    (their parts joined); later ones are sent as user text. The tool results
    after a model turn form one user content of ``functionResponse`` parts,
    right after that turn, as Gemini wants every response to one model turn
    together (user text after the turn follows them, as for Anthropic). A
    model step with calls right after another model step joins its content,
    as Gemini wants a function call turn right after a user turn.

    Args:
        components: The history, oldest first (a ``ChatContext`` works).

    Returns:
        ``{"contents": [...]}``, with ``"systemInstruction"`` when there is one.

    Examples:
        >>> from mellea_ctx import Message
        >>> to_gemini([Message("system", "Be brief."), Message("user", "hi")])
        ... # doctest: +NORMALIZE_WHITESPACE
        {'contents': [{'role': 'user', 'parts': [{'text': 'hi'}]}],
         'systemInstruction': {'parts': [{'text': 'Be brief.'}]}}
    """
    return _write(components)[0]


def _write(components: Iterable[Component]) -> tuple[dict[str, Any], list[int]]:
    """The body, and for each content the index of the component it starts with."""
    items = list(components)
    body: dict[str, Any] = {}
    owners: list[int] = []
    start = 0
    while start < len(items) and items[start].role in ("system", "developer"):
        start += 1
    if start:
        extra = thaw_json(items[0].extra)
        parts = [block for c in items[:start] for block in _written(c.parts)]
        body["systemInstruction"] = {**extra, "parts": parts}
    contents: list[dict[str, Any]] = []
    answers: dict[str, Any] | None = None  # the user content of the last model turn's responses
    run = 0  # where the user contents after the last model turn start
    names: dict[str, str] = {}  # call id -> tool name
    for offset, component in enumerate(items[start:]):
        extra = thaw_json(component.extra)
        if component.role == "tool":
            if answers is None:  # responses come first in their user turn, as Gemini wants
                answers = {"role": "user", "parts": []}
                contents.insert(run, answers)
                owners.insert(run, start + offset)
            answers["parts"].append(_write_response(component, names))
        elif component.role == "assistant":
            parts = _written(component.parts) + [_write_call(c) for c in component.tool_calls]
            if component.tool_calls and not extra and contents and contents[-1]["role"] == "model":
                # a call turn must follow a user turn: after a cut, join the model turn before
                contents[-1]["parts"] += parts
            else:
                contents.append({**extra, "role": "model", "parts": parts})
                owners.append(start + offset)
            answers, run = None, len(contents)
            names.update((call.id, call.name) for call in component.tool_calls)
        else:
            contents.append({"role": "user", "parts": _written(component.parts), **extra})
            owners.append(start + offset)
    return {"contents": contents, **body}, owners
