"""The immutable values a conversation is made of.

Every component is a frozen, slotted attrs class holding only strings, ints,
``None`` and tuples, so it is hashable and can be shared between any number of
contexts without copying. Each one answers the same few questions a provider's
wire format asks (``role``, ``content``, ``tool_calls``, ``tool_call_id``,
``name``, ``images``), which is all the token counter, the pin predicates and
the format converters need to know about it.

One hidden slot, ``_token_memo``, remembers token counts already computed for
this component (per counter), the way ``str`` caches its hash. It is not an
attrs field, so it takes no part in equality, hashing, ``repr``,
``attrs.asdict`` / ``astuple`` / ``evolve`` or pickling: counting tokens
changes nothing a caller can see.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import attrs

from .exceptions import InvalidComponentError
from .reprs import short_repr

__all__ = [
    "CBlock",
    "Component",
    "Message",
    "ModelOutputThunk",
    "ReactInitiator",
    "Role",
    "ToolCall",
    "ToolMessage",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]

#: Roles a plain :class:`Message` may take; tool results use :class:`ToolMessage`.
MESSAGE_ROLES: Final = ("system", "user", "assistant")
#: The largest count a component holds (tokens, messages): an int64, as stores and JSON
#: readers elsewhere expect; Python's str() refuses ints past 4,300 digits anyway.
MAX_COUNT: Final = 2**63 - 1


def _fail(owner: str, field: str, value: object, expected: str, fix: str) -> InvalidComponentError:
    msg = f"{owner}: {field}={short_repr(value, 200)} {expected}; {fix}"
    return InvalidComponentError(msg)


def _require_str(owner: str, field: str, value: object, *, allow_empty: bool = True) -> None:
    if not isinstance(value, str):
        raise _fail(owner, field, value, "must be a str", "convert it with str() or json.dumps()")
    if not allow_empty and not value:
        raise _fail(owner, field, value, "must not be empty", f"pass the provider's {field}")


def _tuple_of(kind: type, owner: str, field: str, value: object) -> tuple[Any, ...]:
    if value == ():
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise _fail(
            owner, field, value, f"must be a sequence of {kind.__name__}", "wrap it in a tuple"
        )
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise _fail(
                owner,
                field,
                value,
                f"must hold only {kind.__name__} values, got {type(item).__name__}",
                f"build each item as {kind.__name__}(...)",
            )
    return items


def _message_calls(value: object) -> tuple[ToolCall, ...]:
    return _tuple_of(ToolCall, "Message", "tool_calls", value)


def _thunk_calls(value: object) -> tuple[ToolCall, ...]:
    return _tuple_of(ToolCall, "ModelOutputThunk", "tool_calls", value)


def _text(owner: str, *, allow_empty: bool = True) -> Any:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not str or not (value or allow_empty):
            _require_str(owner, attribute.name, value, allow_empty=allow_empty)

    return check


def _optional_text(owner: str) -> Any:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            _require_str(owner, attribute.name, value, allow_empty=False)

    return check


def _images(value: object) -> tuple[str, ...]:
    return _tuple_of(str, "Message", "images", value)


def _json_arguments(value: object) -> object:
    if not isinstance(value, Mapping):
        return value
    try:  # NaN and Infinity are not JSON: a provider would reject them
        return json.dumps(dict(value), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        msg = (
            f"ToolCall: arguments={short_repr(value)} cannot be written as JSON ({reason}); "
            "pass a JSON string or a mapping of JSON values (str, int, finite float, bool, "
            "None, lists and mappings of those)"
        )
        raise InvalidComponentError(msg) from exc


class _TokenMemo:
    """The plain (non-attrs) root of every component.

    It holds the token memo in a plain slot, outside the attrs fields of its
    subclasses, and the wire attributes most components do not have, as
    class-level defaults that a subclass's field overrides (reading a class
    attribute is cheaper than calling a property on the hot paths that ask
    every component whether it is a tool result).
    """

    __slots__ = ("_token_memo",)

    _token_memo: tuple[tuple[object, int], ...]

    #: Tool calls an assistant component asks for; empty for every other role.
    tool_calls: tuple[ToolCall, ...] = ()
    #: For a tool result, the id of the call it answers; otherwise ``None``.
    tool_call_id: str | None = None
    #: An optional participant or tool name sent with the message.
    name: str | None = None
    #: Image URLs or data URIs attached to the message.
    images: tuple[str, ...] = ()


@attrs.define(frozen=True, slots=True)
class Component(_TokenMemo):
    """Base class of everything a :class:`~mellea_ctx.ChatContext` holds.

    Subclass it (with ``@attrs.define(frozen=True, slots=True)``) to add your
    own component kinds; override what differs from the defaults: ``role``
    and ``content`` (properties), and ``tool_calls``, ``tool_call_id``,
    ``name`` and ``images`` (empty or ``None`` unless a subclass has them).
    ``role`` and ``content`` are what a provider sees.
    """

    @property
    def role(self) -> Role:
        """The provider role this component is sent as."""
        return "user"

    @property
    def content(self) -> str:
        """The text sent to the provider for this component."""
        return ""


@attrs.define(frozen=True, slots=True)
class ToolCall:
    """One function call an assistant asks for.

    Args:
        id: The provider's id for the call; the tool result names it.
        name: The function's name.
        arguments: The arguments as a JSON string, as the wire format carries
            them. A mapping is accepted and serialised with :func:`json.dumps`.

    Raises:
        InvalidComponentError: For an empty ``id`` or ``name``, non-string
            arguments, or a mapping that is not JSON (an object, ``NaN``, a
            cycle, nesting too deep to write).

    Examples:
        >>> ToolCall("call_1", "read_file", {"path": "a.py"}).arguments
        '{"path": "a.py"}'
    """

    id: str = attrs.field(validator=_text("ToolCall", allow_empty=False))
    name: str = attrs.field(validator=_text("ToolCall", allow_empty=False))
    arguments: str = attrs.field(
        default="{}", converter=_json_arguments, validator=_text("ToolCall")
    )


@attrs.define(frozen=True, slots=True)
class Usage:
    """Token usage a provider reported for one generation.

    Examples:
        >>> Usage(prompt_tokens=120, completion_tokens=30).total_tokens
        150
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int = attrs.field()

    @total_tokens.default
    def _sum(self) -> int:
        self._check("prompt_tokens", "completion_tokens")  # before adding them up
        return self.prompt_tokens + self.completion_tokens

    def __attrs_post_init__(self) -> None:
        self._check("prompt_tokens", "completion_tokens", "total_tokens")

    def _check(self, *fields: str) -> None:
        for field in fields:
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
                expected = "must be an int from 0 to 2**63 - 1"
                raise _fail("Usage", field, value, expected, "pass the provider's count")


def _message_role(_instance: object, _attribute: object, role: Any) -> None:
    if role in MESSAGE_ROLES:
        return
    if role == "tool":
        msg = (
            "Message: role='tool' needs the id of the call it answers; "
            "use ToolMessage(content, tool_call_id=...) for tool results"
        )
        raise InvalidComponentError(msg)
    raise _fail("Message", "role", role, f"must be one of {MESSAGE_ROLES!r}", "pass a known role")


@attrs.define(frozen=True, slots=True, cache_hash=True)
class Message(Component):
    """A system, user or assistant message.

    Args:
        role: ``"system"``, ``"user"`` or ``"assistant"``. Tool results are
            :class:`ToolMessage`.
        content: The message text.
        tool_calls: Calls an assistant message asks for (assistant only).
        images: Image URLs or data URIs (user messages usually).
        name: An optional participant name.

    Raises:
        InvalidComponentError: For an unknown role, non-string content, or tool
            calls on a non-assistant message.

    Examples:
        >>> Message("user", "Where is the config file?").role
        'user'
    """

    role: Role = attrs.field(validator=_message_role)
    content: str = attrs.field(default="", validator=_text("Message"))
    tool_calls: tuple[ToolCall, ...] = attrs.field(
        default=(), kw_only=True, converter=_message_calls
    )
    images: tuple[str, ...] = attrs.field(default=(), kw_only=True, converter=_images)
    name: str | None = attrs.field(default=None, kw_only=True, validator=_optional_text("Message"))

    def __attrs_post_init__(self) -> None:
        if self.tool_calls and self.role != "assistant":  # a validator cannot see two fields
            raise _fail(
                "Message",
                "tool_calls",
                self.tool_calls,
                f"are only allowed on assistant messages, not role={self.role!r}",
                "move the calls to an assistant message",
            )


@attrs.define(frozen=True, slots=True, cache_hash=True)
class ToolMessage(Component):
    """The result of one tool call.

    Args:
        content: What the tool returned, as text.
        tool_call_id: The id of the :class:`ToolCall` this answers.
        name: The tool's name (optional; some providers want it).

    Raises:
        InvalidComponentError: When ``tool_call_id`` is missing or empty, or
            ``content`` is not a string.

    Examples:
        >>> ToolMessage("42 files", tool_call_id="call_1", name="ls").role
        'tool'
    """

    content: str = attrs.field(validator=_text("ToolMessage"))
    tool_call_id: str = attrs.field(kw_only=True, validator=_text("ToolMessage", allow_empty=False))
    name: str | None = attrs.field(
        default=None, kw_only=True, validator=_optional_text("ToolMessage")
    )

    @property
    def role(self) -> Role:
        """Always ``"tool"``."""
        return "tool"


def _usage(_instance: object, _attribute: object, usage: Any) -> None:
    if usage is not None and not isinstance(usage, Usage):
        raise _fail(
            "ModelOutputThunk", "usage", usage, "must be a Usage or None", "build Usage(...)"
        )


def _optional_value(_instance: object, _attribute: object, value: Any) -> None:
    if value is not None:
        _require_str("ModelOutputThunk", "value", value)


@attrs.define(frozen=True, slots=True, cache_hash=True)
class ModelOutputThunk(Component):
    """What a model generated: text, tool calls, and the usage it reported.

    Args:
        value: The generated text (``None`` when the model only called tools).
        tool_calls: The calls the model asked for.
        usage: Token usage the provider reported for this generation.

    Examples:
        >>> out = ModelOutputThunk("Done.", usage=Usage(prompt_tokens=900, completion_tokens=3))
        >>> out.role, out.content, out.usage.total_tokens
        ('assistant', 'Done.', 903)
    """

    value: str | None = attrs.field(default=None, validator=_optional_value)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), kw_only=True, converter=_thunk_calls)
    usage: Usage | None = attrs.field(default=None, kw_only=True, validator=_usage)

    @property
    def role(self) -> Role:
        """Always ``"assistant"``."""
        return "assistant"

    @property
    def content(self) -> str:
        """The generated text, or ``""`` when there is none."""
        return self.value or ""


@attrs.define(frozen=True, slots=True, cache_hash=True)
class CBlock(Component):
    """A plain block of content, sent as user text.

    Examples:
        >>> CBlock("Here is the diff:").content
        'Here is the diff:'
    """

    value: str = attrs.field(validator=_text("CBlock"))

    @property
    def content(self) -> str:
        """The block's text."""
        return self.value


@attrs.define(frozen=True, slots=True, cache_hash=True)
class ReactInitiator(Component):
    """The goal that opens an agent loop; :func:`~mellea_ctx.pin_react_initiator` pins it.

    It is sent as a user message. Compactors configured with
    ``pin_react_initiator`` keep it, and everything before it, verbatim.

    Examples:
        >>> ReactInitiator("Fix the failing test in tests/test_io.py").content
        'Fix the failing test in tests/test_io.py'
    """

    goal: str = attrs.field(validator=_text("ReactInitiator", allow_empty=False))

    @property
    def content(self) -> str:
        """The goal text."""
        return self.goal
