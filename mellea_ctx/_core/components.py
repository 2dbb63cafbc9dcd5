"""The immutable values a conversation is made of.

Every component is a frozen, slotted attrs class holding only strings, ints,
``None``, tuples, typed content parts (:mod:`._core.parts`) and frozen
mappings, so it is hashable and can be shared between any number of contexts
without copying. Each one answers the same few questions a provider's wire
format asks (``role``, ``parts``, ``content`` as a text view, ``tool_calls``,
``tool_call_id``, ``name``, ``extra``), which is all the token counter, the pin
predicates and the format converters need to know about it.

``extra`` holds the keys a provider sent on a message that we do not model,
frozen, so a format writer can put them back; ``structured`` says whether the
content travelled as a list of blocks (``True``) or as one string.

Two hidden slots, ``_token_memo`` and ``_facts_memo``, remember token counts
already computed for this component (per counter) and the exact details found
in it, the way ``str`` caches its hash. They are not attrs fields, so they
take no part in equality, hashing, ``repr``, ``attrs.asdict`` / ``astuple`` /
``evolve`` or pickling: counting tokens or finding details changes nothing a
caller can see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

import attrs
from pyrsistent import PMap

from .calls import ToolCall as ToolCall
from .calls import Usage as Usage
from .checks import (
    field_error,
    flag_validator,
    image_tuple,
    is_plain,
    optional_text_validator,
    parts_converter,
    require_bool,
    require_str,
    text_of,
    text_validator,
    tuple_of,
)
from .exceptions import InvalidComponentError
from .parts import EMPTY, ImagePart, Part, TextPart, to_extra
from .reprs import field_repr, short_repr

Role = Literal["system", "developer", "user", "assistant", "tool"]

#: Roles a plain :class:`Message` may take; tool results use :class:`ToolMessage`.
MESSAGE_ROLES: Final = ("system", "developer", "user", "assistant")
#: The largest count a component holds (tokens, messages): an int64, as stores and JSON


def _message_calls(value: object) -> tuple[ToolCall, ...]:
    return tuple_of(ToolCall, "Message", "tool_calls", value)


def _thunk_calls(value: object) -> tuple[ToolCall, ...]:
    return tuple_of(ToolCall, "ModelOutputThunk", "tool_calls", value)


# The content converters' checks, each built once (not a closure per call).
_MESSAGE_CONTENT: Final = parts_converter("Message")
_TOOL_CONTENT: Final = parts_converter("ToolMessage")
_THUNK_CONTENT: Final = parts_converter("ModelOutputThunk")


def _message_parts(value: object) -> tuple[Part, ...]:
    return _MESSAGE_CONTENT(value)  # type: ignore[no-any-return]


def _tool_parts(value: object) -> tuple[Part, ...]:
    return _TOOL_CONTENT(value)  # type: ignore[no-any-return]


def _thunk_parts(value: object) -> tuple[Part, ...]:
    return _THUNK_CONTENT(value)  # type: ignore[no-any-return]


def _structured(instance: Any) -> bool:
    return not is_plain(instance.parts)


class _TokenMemo:
    """The plain (non-attrs) root of every component.

    It holds the token memo in a plain slot, outside the attrs fields of its
    subclasses, and the wire attributes most components do not have, as
    class-level defaults that a subclass's field overrides (reading a class
    attribute is cheaper than calling a property on the hot paths that ask
    every component whether it is a tool result).
    """

    __slots__ = ("_facts_memo", "_token_memo")

    _token_memo: tuple[tuple[object, int], ...]
    _facts_memo: tuple[tuple[str, str, int], ...]

    #: Tool calls an assistant component asks for; empty for every other role.
    tool_calls: tuple[ToolCall, ...] = ()
    #: For a tool result, the id of the call it answers; otherwise ``None``.
    tool_call_id: str | None = None
    #: An optional participant or tool name sent with the message.
    name: str | None = None
    #: Keys the provider sent on this message that we do not model, frozen.
    extra: PMap[str, Any] = EMPTY
    #: Whether the content travelled as a list of blocks rather than one string.
    structured: bool = False
    #: For a tool result, whether the tool reported an error.
    is_error: bool = False


@attrs.define(frozen=True, slots=True)
class Component(_TokenMemo):
    """Base class of everything a :class:`~mellea_ctx.ChatContext` holds.

    Subclass it (with ``@attrs.define(frozen=True, slots=True)``) to add your
    own component kinds; override what differs from the defaults: ``role``
    and ``content`` (properties), and ``tool_calls``, ``tool_call_id``,
    ``name`` (empty or ``None`` unless a subclass has them). ``role`` and
    ``parts`` are what a provider sees; a component with only text gets
    ``parts`` from ``content``.
    """

    @property
    def role(self) -> Role:
        """The provider role this component is sent as."""
        return "user"

    @property
    def content(self) -> str:
        """The text sent to the provider for this component."""
        return ""

    @property
    def parts(self) -> tuple[Part, ...]:
        """The content as typed parts; by default one text part holding ``content``."""
        text = self.content
        return (TextPart(text),) if text else ()

    @property
    def images(self) -> tuple[str, ...]:
        """The image parts as URLs or ``data:`` URIs (file ids are left out)."""
        out = []
        for part in self.parts:
            if type(part) is ImagePart:
                ref = part.url if part.url is not None else part.data_uri
                if ref is not None:
                    out.append(ref)
        return tuple(out)


def _message_role(_instance: object, _attribute: object, role: Any) -> None:
    if role in MESSAGE_ROLES:
        return
    if role == "tool":
        msg = (
            "Message: role='tool' needs the id of the call it answers; "
            "use ToolMessage(content, tool_call_id=...) for tool results"
        )
        raise InvalidComponentError(msg)
    raise field_error(
        "Message", "role", role, f"must be one of {MESSAGE_ROLES!r}", "pass a known role"
    )


@attrs.define(frozen=True, slots=True, init=False, repr=False)
class Message(Component):
    """A system, developer, user or assistant message.

    Args:
        role: ``"system"``, ``"developer"``, ``"user"`` or ``"assistant"``.
            Tool results are :class:`ToolMessage`.
        content: The message text, or its typed parts (``TextPart``,
            ``ImagePart``, ``ThinkingPart``, ...), or ``None`` for no content
            (an assistant message that only calls tools, as OpenAI writes it).
        tool_calls: Calls an assistant message asks for (assistant only).
        images: Image URLs or data URIs, appended to the parts as ``ImagePart``.
        name: An optional participant name.
        extra: Keys the provider sent on the message that we do not model.
        structured: Whether the content travels as a list of blocks; by
            default, whenever it is anything but one plain text.

    Raises:
        InvalidComponentError: For an unknown role, content that is not text
            or parts, or tool calls on a non-assistant message.

    Examples:
        >>> Message("user", "Where is the config file?").content
        'Where is the config file?'
        >>> from mellea_ctx._core.parts import ThinkingPart
        >>> msg = Message("assistant", [ThinkingPart("...", signature="s"), TextPart("Done.")])
        >>> msg.content, msg.structured
        ('Done.', True)
    """

    role: Role = attrs.field(validator=_message_role)
    parts: tuple[Part, ...] = attrs.field(alias="content", converter=_message_parts)
    tool_calls: tuple[ToolCall, ...] = attrs.field(
        default=(), kw_only=True, converter=_message_calls
    )
    name: str | None = attrs.field(
        default=None, kw_only=True, validator=optional_text_validator("Message")
    )
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)
    structured: bool = attrs.field(default=False, kw_only=True)

    def __init__(
        self,
        role: Role,
        content: str | Iterable[Part] | None = "",
        *,
        tool_calls: Iterable[ToolCall] = (),
        images: Iterable[str] = (),
        name: str | None = None,
        extra: Mapping[str, Any] | None = None,
        structured: bool | None = None,
    ) -> None:
        if (
            content.__class__ is str
            and role.__class__ is str
            and role in _PLAIN_ROLES
            and tool_calls is _NOTHING
            and images is _NOTHING
            and name is None
            and extra is None
            and structured is None
            and self.__class__ is Message
        ):
            # The plain-text path, Message(role, text): every field is known valid,
            # so set them as __attrs_init__ would, with no converter or validator.
            part = _new(TextPart)
            _set_text(part, content)
            _set_part_extra(part, EMPTY)
            _set_role(self, role)
            _set_parts(self, (part,))
            _set_calls(self, ())
            _set_name(self, None)
            _set_extra(self, EMPTY)
            _set_structured(self, False)  # one plain text part travels as a string
            return
        parts = _MESSAGE_CONTENT(content)
        if images:
            parts += tuple(_image_part(ref) for ref in image_tuple(images))
        if structured is None:
            structured = not is_plain(parts)
        self.__attrs_init__(
            role, parts, tool_calls=tool_calls, name=name, extra=extra, structured=structured
        )

    def __attrs_post_init__(self) -> None:
        if self.tool_calls and self.role != "assistant":  # a validator cannot see two fields
            raise field_error(
                "Message",
                "tool_calls",
                self.tool_calls,
                f"are only allowed on assistant messages, not role={self.role!r}",
                "move the calls to an assistant message",
            )
        if type(self.structured) is not bool:
            require_bool("Message", "structured", self.structured, error=InvalidComponentError)

    @property
    def content(self) -> str:
        """The text view: the text parts joined by a blank line (``""`` when none)."""
        return text_of(self.parts)


_NOTHING: Final = ()  # the default of tool_calls= and images=, told apart by identity
_PLAIN_ROLES: Final = frozenset(MESSAGE_ROLES)
_new: Final = object.__new__


def _setters(cls: type, *names: str) -> tuple[Callable[[object, object], None], ...]:
    """The setters of ``cls``'s slots ``names``, for a plain-text path that sets known-valid
    fields itself (a frozen attrs class refuses setattr; ``__attrs_init__`` goes around it
    the same way)."""
    return tuple(vars(cls)[name].__set__ for name in names)


_set_text, _set_part_extra = _setters(TextPart, "text", "extra")
_set_role, _set_parts, _set_calls, _set_name, _set_extra, _set_structured = _setters(
    Message, "role", "parts", "tool_calls", "name", "extra", "structured"
)


def _image_part(ref: str) -> ImagePart:
    """An image part from a URL or a ``data:<type>;base64,<data>`` URI."""
    if ref.startswith("data:") and ";base64," in ref:
        media_type, data = ref[5:].split(";base64,", 1)
        return ImagePart(data=data, media_type=media_type or None)
    return ImagePart(url=ref)


def _is_error(_instance: object, _attribute: object, value: object) -> None:
    if type(value) is not bool:
        require_bool("ToolMessage", "is_error", value, error=InvalidComponentError)


@attrs.define(frozen=True, slots=True, cache_hash=True, repr=False)
class ToolMessage(Component):
    """The result of one tool call.

    Args:
        content: What the tool returned: text, or typed parts (text and
            images, say).
        tool_call_id: The id of the :class:`ToolCall` this answers.
        name: The tool's name (optional; some providers want it).
        is_error: Whether the tool reported an error (Anthropic ``is_error``).
        extra: Keys the provider sent on the result that we do not model.
        structured: Whether the content travels as a list of blocks.

    Raises:
        InvalidComponentError: When ``tool_call_id`` is missing or empty, or
            ``content`` is not text or parts.

    Examples:
        >>> ToolMessage("42 files", tool_call_id="call_1", name="ls").role
        'tool'
        >>> ToolMessage("No such file", tool_call_id="call_2", is_error=True).is_error
        True
    """

    parts: tuple[Part, ...] = attrs.field(alias="content", converter=_tool_parts)
    tool_call_id: str = attrs.field(
        kw_only=True, validator=text_validator("ToolMessage", allow_empty=False)
    )
    name: str | None = attrs.field(
        default=None, kw_only=True, validator=optional_text_validator("ToolMessage")
    )
    is_error: bool = attrs.field(default=False, kw_only=True, validator=_is_error)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)
    structured: bool = attrs.field(
        default=attrs.Factory(_structured, takes_self=True),
        kw_only=True,
        validator=flag_validator("ToolMessage"),
    )

    @property
    def role(self) -> Role:
        """Always ``"tool"``."""
        return "tool"

    @property
    def content(self) -> str:
        """The text view: the text parts joined by a blank line."""
        return text_of(self.parts)


def _usage(_instance: object, _attribute: object, usage: Any) -> None:
    if usage is not None and not isinstance(usage, Usage):
        raise field_error(
            "ModelOutputThunk", "usage", usage, "must be a Usage or None", "build Usage(...)"
        )


def _optional_value(_instance: object, _attribute: object, value: Any) -> None:
    if value is not None:
        require_str("ModelOutputThunk", "value", value)


@attrs.define(frozen=True, slots=True, init=False, repr=False)
class ModelOutputThunk(Component):
    """What a model generated: text, other parts (thinking, refusals), tool calls, usage.

    Args:
        value: The generated text (``None`` when the model only called tools).
        parts: Everything the model generated besides tool calls, in order
            (thinking, text, refusals, provider blocks); by default one text
            part holding ``value``. When both are given, ``value`` must be the
            text view of ``parts``.
        tool_calls: The calls the model asked for.
        usage: Token usage the provider reported for this generation.
        extra: Keys the provider sent on the message that we do not model.

    Examples:
        >>> out = ModelOutputThunk("Done.", usage=Usage(prompt_tokens=900, completion_tokens=3))
        >>> out.role, out.content, out.usage.total_tokens
        ('assistant', 'Done.', 903)
    """

    value: str | None = attrs.field(default=None, validator=_optional_value)
    # The default serves subclasses made with ``@attrs.define`` (their generated __init__
    # has no derivation of parts from a value), so ``MyThunk("hi")`` works as Message's do.
    parts: tuple[Part, ...] = attrs.field(
        kw_only=True,
        converter=_thunk_parts,
        default=attrs.Factory(
            lambda self: (TextPart(self.value),) if self.value else (), takes_self=True
        ),
    )
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), kw_only=True, converter=_thunk_calls)
    usage: Usage | None = attrs.field(default=None, kw_only=True, validator=_usage)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)
    structured: bool = attrs.field(
        default=False, kw_only=True, validator=flag_validator("ModelOutputThunk")
    )

    def __init__(
        self,
        value: str | None = None,
        *,
        parts: Iterable[Part] | None = None,
        tool_calls: Iterable[ToolCall] = (),
        usage: Usage | None = None,
        extra: Mapping[str, Any] | None = None,
        structured: bool | None = None,
    ) -> None:
        if (
            value.__class__ is str
            and parts is None
            and tool_calls is _NOTHING
            and (usage is None or usage.__class__ is Usage)
            and extra is None
            and structured is None
            and self.__class__ is ModelOutputThunk
        ):
            # The plain answer, ModelOutputThunk(text) (with its usage): every field is
            # known valid, so set them as __attrs_init__ would (see Message's own path).
            if value:
                part = _new(TextPart)
                _set_text(part, value)
                _set_part_extra(part, EMPTY)
                _set_thunk_parts(self, (part,))
            else:
                _set_thunk_parts(self, ())
            _set_value(self, value)
            _set_thunk_calls(self, ())
            _set_usage(self, usage)
            _set_thunk_extra(self, EMPTY)
            _set_thunk_structured(self, False)
            return
        if parts is None:
            if value is not None:
                require_str("ModelOutputThunk", "value", value)
            held = (TextPart(value),) if value else ()
        else:
            held = _THUNK_CONTENT(parts)
            view = text_of(held)
            if value is None:
                value = view if any(type(p) is TextPart for p in held) else None
            elif value != view:
                raise field_error(
                    "ModelOutputThunk",
                    "value",
                    value,
                    f"differs from the text of parts ({short_repr(view, 80)})",
                    "pass only parts=, or a value equal to their text",
                )
        if structured is None:
            structured = not is_plain(held)
        self.__attrs_init__(
            value,
            parts=held,
            tool_calls=tool_calls,
            usage=usage,
            extra=extra,
            structured=structured,
        )

    @property
    def role(self) -> Role:
        """Always ``"assistant"``."""
        return "assistant"

    @property
    def content(self) -> str:
        """The generated text, or ``""`` when there is none."""
        return self.value or ""


(
    _set_value,
    _set_thunk_parts,
    _set_thunk_calls,
    _set_usage,
    _set_thunk_extra,
    _set_thunk_structured,
) = _setters(ModelOutputThunk, "value", "parts", "tool_calls", "usage", "extra", "structured")


@attrs.define(frozen=True, slots=True, cache_hash=True)
class CBlock(Component):
    """A plain block of content, sent as user text.

    Examples:
        >>> CBlock("Here is the diff:").content
        'Here is the diff:'
    """

    value: str = attrs.field(validator=text_validator("CBlock"))

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

    goal: str = attrs.field(validator=text_validator("ReactInitiator", allow_empty=False))

    @property
    def content(self) -> str:
        """The goal text."""
        return self.goal


# Reprs leave out fields at their defaults, so a plain message reads as it was written.
for _cls in (ToolCall, Message, ToolMessage, ModelOutputThunk):
    _cls.__repr__ = field_repr  # type: ignore[method-assign]
