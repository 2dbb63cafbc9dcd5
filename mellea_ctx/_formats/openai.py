"""OpenAI Chat Completions messages in and out, and their history rules.

:func:`from_openai` and :func:`to_openai` convert between the ``messages``
list of a Chat Completions request and our components; the round trip gives
back the same JSON for every message this module reads (the exceptions are
listed in :func:`from_openai`). :func:`validate_openai` checks the provider's
rules for tool calls in a history. Files of such lists are read and written
in the ``transcripts`` module (:func:`~mellea_ctx.load_conversation`).

Every error names where the bad value is (``message 12``, or the file and
its line), the field, the value with ``repr``, what was expected and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from .._core.components import Component, Message, ModelOutputThunk, ToolCall, ToolMessage
from .._core.exceptions import InvalidArgumentError, InvalidComponentError, InvalidContextError
from .._core.reprs import short_repr

__all__ = ["from_openai", "to_openai", "validate_openai"]

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
