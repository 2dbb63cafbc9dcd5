"""OpenAI Chat Completions messages in: every part typed, every unknown key kept.

Roles ``system``, ``developer``, ``user``, ``assistant`` and ``tool``.
Content parts ``text``, ``image_url``, ``input_audio``, ``file`` and
``refusal`` become typed parts; any other part type becomes an
:class:`~mellea_ctx.OpaquePart`. A content-part array stays an array
(``structured=True``). The assistant's ``refusal`` string and the
``reasoning_content`` / ``reasoning`` string that DeepSeek, vLLM and other
compatible servers send become a :class:`~mellea_ctx.RefusalPart` and a
:class:`~mellea_ctx.ThinkingPart` (``provider="openai"``) with a note saying
which key they travel in. Every key we do not model is kept in ``extra``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..._core import parts as pt
from ..._core.components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from ..._core.exceptions import InvalidArgumentError, InvalidComponentError, InvalidContextError
from ..._core.reprs import short_repr
from ..notes import with_notes
from ..reading import invalid, other_keys

#: The roles a Chat Completions message may have here.
OPENAI_ROLES: Final = ("system", "developer", "user", "assistant", "tool")
#: Message keys that carry the model's reasoning on compatible servers.
REASONING_KEYS: Final = ("reasoning_content", "reasoning")

_ROLE_FIXES: Final = {
    "function": "legacy function results are not supported; send them as role 'tool' "
    "with the tool_call_id of the call they answer",
}


def _inner(part: Mapping[str, Any], key: str, fields: Sequence[str]) -> Mapping[str, Any] | None:
    """Return ``part[key]`` when it is an object whose ``fields`` are strings (or absent)."""
    inner = part.get(key)
    if not isinstance(inner, Mapping):
        return None
    if all(inner.get(name) is None or isinstance(inner[name], str) for name in fields):
        return inner
    return None


def _extra(
    part: Mapping[str, Any], key: str, inner: Mapping[str, Any], known: Sequence[str]
) -> Any:
    extra = other_keys(part, "type", key)
    unknown = other_keys(inner, *known)
    unknown.update({name: None for name in known if name in inner and inner[name] is None})
    if unknown:
        extra[key] = unknown  # keys of the inner object we do not model
    return extra


def _part(part: object, role: str, where: str) -> pt.Part:
    if not isinstance(part, Mapping):
        raise invalid(
            where, f"{short_repr(part)} is not a content part; expected an object with a 'type'"
        )
    kind = part.get("type")
    read = _PART_READERS.get(kind) if isinstance(kind, str) else None
    found = read(part, role, where) if read is not None else None
    return found if found is not None else pt.OpaquePart("openai", part)


def _text(part: Mapping[str, Any], role: str, where: str) -> pt.Part | None:
    text = part.get("text")
    if not isinstance(text, str):
        raise invalid(where, f"text={short_repr(text)} must be a string")
    return pt.TextPart(text, extra=other_keys(part, "type", "text"))


def _refusal(part: Mapping[str, Any], role: str, where: str) -> pt.Part | None:
    if not isinstance(part.get("refusal"), str):
        return None
    return pt.RefusalPart(part["refusal"], extra=other_keys(part, "type", "refusal"))


def _image_url(part: Mapping[str, Any], role: str, where: str) -> pt.Part | None:
    """An image, only in a user message, with a non-empty url."""
    if role != "user":
        msg = f"type='image_url' is only allowed in user messages, not role={role!r}"
        raise invalid(where, f"{msg}; move the image to a user message")
    inner = _inner(part, "image_url", ("url", "detail"))
    if inner is None or not inner.get("url"):
        image = part.get("image_url")
        msg = (
            f'image_url={short_repr(image)} must be an object {{"url": "..."}} with a non-empty url'
        )
        raise invalid(where, msg)
    extra = _extra(part, "image_url", inner, ("url", "detail"))
    return pt.ImagePart(url=inner["url"], detail=inner.get("detail"), extra=extra)


def _input_audio(part: Mapping[str, Any], role: str, where: str) -> pt.Part | None:
    inner = _inner(part, "input_audio", ("data", "format"))
    if inner is None or not isinstance(inner.get("data"), str):
        return None
    extra = _extra(part, "input_audio", inner, ("data", "format"))
    return pt.AudioPart(data=inner["data"], format=inner.get("format"), extra=extra)


def _file_part(part: Mapping[str, Any], role: str, where: str) -> pt.Part | None:
    inner = _inner(part, "file", ("file_data", "file_id", "filename"))
    if inner is None or not (inner.get("file_data") or inner.get("file_id")):
        return None
    return _file(part, inner)


#: The readers of the content part types we model, by ``type``; ``None``: kept opaque.
_PART_READERS: Final[dict[str, Callable[[Mapping[str, Any], str, str], pt.Part | None]]] = {
    "text": _text,
    "refusal": _refusal,
    "image_url": _image_url,
    "input_audio": _input_audio,
    "file": _file_part,
}


def _file(part: Mapping[str, Any], inner: Mapping[str, Any]) -> pt.DocumentPart:
    extra = _extra(part, "file", inner, ("file_data", "file_id", "filename"))
    data, media = inner.get("file_data"), None
    if data is not None:
        match = pt.DATA_URI.fullmatch(data)
        if match:
            data, media = match["data"], match["media"]
        else:
            extra = with_notes(extra, file_data="raw")
    return pt.DocumentPart(
        data=data,
        media_type=media,
        file_id=inner.get("file_id"),
        name=inner.get("filename"),
        extra=extra,
    )


def _content(raw: Mapping[str, Any], role: str, where: str) -> tuple[list[pt.Part], bool, bool]:
    """Return the content parts, whether they were a list, and whether content was null."""
    if "content" not in raw and role != "assistant":
        raise invalid(where, "'content' is missing; pass a string ('' for an empty message)")
    content = raw.get("content")
    if content is None:
        if role == "assistant":
            return [], False, True
        msg = f"content=None is not allowed for role={role!r}; pass a string ('' when empty)"
        raise invalid(where, msg)
    if isinstance(content, str):
        return [pt.TextPart(content)], False, False
    if isinstance(content, list):
        parts = [_part(part, role, f"{where}: content[{i}]") for i, part in enumerate(content)]
        return parts, True, False
    msg = (
        f"content={short_repr(content)} must be a string, a list of content parts, "
        "or null (assistant messages only)"
    )
    raise invalid(where, msg)


def _required_str(value: object, where: str, field: str, fix: str) -> str:
    if isinstance(value, str) and value:
        return value
    raise invalid(where, f"{field}={short_repr(value)} must be a non-empty string; {fix}")


def _tool_call(raw: object, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        msg = f"{short_repr(raw)} is not a tool call; expected an object with id, type and function"
        raise invalid(where, msg)
    kind = raw.get("type", "function")
    if kind != "function":
        raise invalid(
            where, f"type={short_repr(kind)} is not supported; only 'function' tool calls are"
        )
    call_id = _required_str(raw.get("id"), where, "id", "pass the provider's call id")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        msg = f"function={short_repr(function)} must be an object with 'name' and 'arguments'"
        raise invalid(where, msg)
    name = _required_str(function.get("name"), where, "function.name", "pass the tool's name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        msg = (
            f"function.arguments={short_repr(arguments)} must be a JSON string, as the wire format "
            "carries it; serialise it with json.dumps()"
        )
        raise invalid(where, msg)
    extra = other_keys(raw, "id", "type", "function")
    inner = other_keys(function, "name", "arguments")
    if inner:
        extra["function"] = inner
    if "type" not in raw:
        extra = with_notes(extra, type="absent")
    return ToolCall(call_id, name, arguments, extra=extra)


def _tool_calls(raw: Mapping[str, Any], role: str, where: str) -> tuple[ToolCall, ...]:
    calls = raw.get("tool_calls")
    if calls is None or calls == []:
        return ()
    if not isinstance(calls, list):
        raise invalid(where, f"tool_calls={short_repr(calls)} must be a list of tool calls")
    if role != "assistant":
        msg = f"tool_calls are only allowed on assistant messages, not role={role!r}"
        raise invalid(where, f"{msg}; move the calls to an assistant message")
    return tuple(_tool_call(call, f"{where}: tool_calls[{i}]") for i, call in enumerate(calls))


def _modelled(raw: Mapping[str, Any], role: str) -> list[str]:
    """The keys of ``raw`` this reader turns into fields (the rest go to ``extra``)."""
    keys = ["role", "content"]
    if isinstance(raw.get("name"), str):
        keys.append("name")
    if raw.get("tool_calls"):
        keys.append("tool_calls")
    if role == "tool":
        keys.append("tool_call_id")
    if role == "assistant":
        keys += [key for key in ("refusal", *REASONING_KEYS) if isinstance(raw.get(key), str)]
    return keys


def _parse_message(raw: object, where: str) -> Component:
    """Return the component for one Chat Completions message; ``where`` prefixes errors."""
    role = _role(raw, where)
    assert isinstance(raw, Mapping)  # _role refuses anything else
    parts, structured, null = _content(raw, role, where)
    name = _message_name(raw, where)
    calls = _tool_calls(raw, role, where)
    extra = with_notes(
        other_keys(raw, *_modelled(raw, role)),
        content=None if "content" in raw else "absent",
        # Chat defines no name on a tool message (the SDK's types have none): one read with
        # it goes back with it, and a result of ours goes without (its call has the name).
        name="present" if role == "tool" and name is not None else None,
    )
    if role == "assistant":
        parts = _with_side_keys(raw, parts)
    try:
        if role == "tool":
            call_id = _required_str(
                raw.get("tool_call_id"),
                where,
                "tool_call_id",
                "name the id of the call this result answers",
            )
            return ToolMessage(
                parts, tool_call_id=call_id, name=name, extra=extra, structured=structured
            )
        if null and name is None:
            return ModelOutputThunk(
                None, parts=parts, tool_calls=calls, extra=extra, structured=False
            )
        return Message(role, parts, tool_calls=calls, name=name, extra=extra, structured=structured)
    except InvalidComponentError as exc:  # pragma: no cover - every field is checked above
        raise invalid(where, str(exc)) from exc


def _role(raw: object, where: str) -> Any:
    """The role of message ``raw``, which must be an object with a Chat role."""
    if not isinstance(raw, Mapping):
        msg = f"{short_repr(raw)} is not a message; expected an object with 'role' and 'content'"
        raise invalid(where, msg)
    if "role" not in raw:
        roles = ", ".join(map(repr, OPENAI_ROLES))
        msg = f"'role' is missing; every message needs one of {roles}"
        if "messages" in raw:
            msg += " (this looks like a request body: pass or save its 'messages' list)"
        raise invalid(where, msg)
    role = raw["role"]
    if role not in OPENAI_ROLES:
        fix = _ROLE_FIXES.get(role, "use one of these roles") if isinstance(role, str) else ""
        raise invalid(
            where, f"role={short_repr(role)} is not one of {OPENAI_ROLES!r}; {fix or 'fix it'}"
        )
    return role


def _message_name(raw: Mapping[str, Any], where: str) -> str | None:
    name = raw.get("name")
    if name is not None and not (isinstance(name, str) and name):
        raise invalid(
            where, f"name={short_repr(name)} must be a non-empty string; leave it out if unknown"
        )
    return name


def _with_side_keys(raw: Mapping[str, Any], parts: list[pt.Part]) -> list[pt.Part]:
    """An assistant's parts with its side keys: reasoning first, as thinking, a refusal last."""
    for key in REASONING_KEYS:
        if isinstance(raw.get(key), str):
            thinking = pt.ThinkingPart(raw[key], provider="openai", extra=with_notes({}, key=key))
            parts.insert(0, thinking)
    if isinstance(raw.get("refusal"), str):
        parts.append(pt.RefusalPart(raw["refusal"], extra=with_notes({}, key="refusal")))
    return parts


_TEXT_ROLES: Final = frozenset(("system", "developer", "user", "assistant"))


def _read_plain(raw: dict[str, Any]) -> Component | None:
    """Read the two commonest shapes directly; ``None`` for any other message.

    ``{"role", "content": str}`` and ``{"role": "tool", "content": str,
    "tool_call_id"}``: every key is modelled, so there is nothing to keep in
    ``extra`` and nothing to check but the types. The result equals what
    :func:`_parse_message` builds (``tests/test_fast_paths.py`` compares them).
    """
    content = raw.get("content")
    if content.__class__ is not str:
        return None
    size = len(raw)
    role = raw.get("role")
    if size == 2:
        if role.__class__ is str and role in _TEXT_ROLES:
            return Message(role, content)  # type: ignore[arg-type]  # a role of _TEXT_ROLES
    elif size == 3 and role == "tool":
        call_id = raw.get("tool_call_id")
        if call_id.__class__ is str and call_id:
            return ToolMessage(content, tool_call_id=call_id, structured=False)
    return None


def parse_message(raw: object, where: str) -> Component:
    """Read one message (see :func:`_parse_message`); a non-JSON kept value is a context error."""
    if raw.__class__ is dict:
        plain = _read_plain(raw)
        if plain is not None:
            return plain
    try:
        return _parse_message(raw, where)
    except InvalidComponentError as exc:  # a key we keep verbatim holds a non-JSON value
        msg = f"{where}: {exc}; a transcript holds only JSON values"
        raise InvalidContextError(msg) from exc


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Component]:
    """Return the components for a list of OpenAI Chat Completions messages.

    ``system``, ``developer`` and ``user`` messages become
    :class:`~mellea_ctx.Message`; an ``assistant`` message becomes a
    ``Message`` carrying its :class:`~mellea_ctx.ToolCall` values, except that
    one whose ``content`` is ``null`` (or missing) becomes a
    :class:`~mellea_ctx.ModelOutputThunk` with ``value=None``. A ``tool``
    message becomes a :class:`~mellea_ctx.ToolMessage`.

    ``content`` may be a string or a list of parts; a list stays a list
    (``structured=True``), each part a typed part: ``text``, ``image_url``
    (with its ``detail``), ``input_audio``, ``file`` and ``refusal``; any
    other type is kept verbatim as an :class:`~mellea_ctx.OpaquePart`. The
    assistant's ``refusal`` and ``reasoning_content`` strings become a
    :class:`~mellea_ctx.RefusalPart` and a :class:`~mellea_ctx.ThinkingPart`.
    Every other key (``audio``, ``function_call``, a tool call's ``index``,
    ``"name": null``, ...) is kept in ``extra``. :func:`to_openai` writes the
    same JSON back (docs/formats.md lists the few normalizations).

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
            f"from_openai: messages={short_repr(messages)} must be a list of message objects; "
            "for a request body pass body['messages']"
        )
        raise InvalidArgumentError(msg)
    return [parse_message(raw, f"message {index}") for index, raw in enumerate(messages)]
