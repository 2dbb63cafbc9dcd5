"""Typed content parts: everything a provider may put inside one message.

A message's content is a tuple of parts. Each part says what it is (text, an
image, a document or file, audio, the model's thinking, a refusal), and
:class:`OpaquePart` carries any provider block we do not model, verbatim, with
the provider named. Every part keeps the keys it came with that we do not model
(``cache_control``, ``citations``, ...) in ``extra``, a frozen mapping written
back unchanged, so reading a history and writing it back loses nothing.

Parts are frozen, slotted attrs classes holding only strings, ints, ``None``
and frozen JSON values (pyrsistent ``PMap`` / ``PVector``), so they hash and
can be shared between any number of contexts.

Each class names what it is in ``kind``, a class constant (not a field: it is in
no ``__init__``, equality, hash, repr or pickle) holding a :data:`PartKind`,
the same word a part's record carries in ``"part"``. Code that handles every
kind dispatches with ``match part:`` over the classes of :data:`Part` ending in
``case _: assert_never(part)``, so mypy proves no kind is forgotten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, NoReturn, Union

import attrs
from pyrsistent import PMap, freeze, pmap, thaw

from .exceptions import InvalidComponentError
from .reprs import field_repr, short_repr

#: The empty frozen mapping every ``extra`` field defaults to.
EMPTY: Final[PMap[str, Any]] = pmap()


def _fail(owner: str, field: str, value: object, expected: str, fix: str) -> InvalidComponentError:
    return InvalidComponentError(f"{owner}: {field}={short_repr(value, 200)} {expected}; {fix}")


def _check_json(owner: str, field: str, value: object) -> None:
    try:  # NaN and Infinity are not JSON: a provider would reject them
        json.dumps(thaw(value), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        expected = f"is not a JSON value ({reason})"
        fix = "pass str, int, float, bool, None, lists and dicts of those"
        raise _fail(owner, field, value, expected, fix) from exc


def freeze_json(value: object) -> Any:
    """Return ``value`` (JSON data: dicts, lists, scalars) as frozen pyrsistent values.

    Dicts become ``PMap``, lists and tuples ``PVector``; already frozen values pass through.

    Examples:
        >>> frozen = freeze_json({"cache_control": {"type": "ephemeral"}})
        >>> frozen["cache_control"]["type"], hash(frozen) == hash(freeze_json(thaw_json(frozen)))
        ('ephemeral', True)
    """
    return freeze(value, strict=True)  # type: ignore[call-overload]  # stubs lack strict


def thaw_json(value: object) -> Any:
    """Return frozen JSON data as plain dicts and lists, ready for :func:`json.dumps`.

    Examples:
        >>> thaw_json(freeze_json({"a": [1, 2]}))
        {'a': [1, 2]}
    """
    return thaw(value)


def to_extra(value: object, owner: str = "extra", field: str = "extra") -> PMap[str, Any]:
    """Return ``value`` (a mapping of JSON values, or ``None``) as a frozen mapping.

    ``owner`` and ``field`` name what is checked in the error message.

    Raises:
        InvalidComponentError: When ``value`` is not a mapping with str keys
            and JSON values.

    Examples:
        >>> to_extra({"cache_control": {"type": "ephemeral"}})["cache_control"]["type"]
        'ephemeral'
    """
    if value is None or (value.__class__ is dict and not value):  # nothing to check or freeze
        return EMPTY
    if isinstance(value, PMap):
        return value
    if not isinstance(value, Mapping):
        raise _fail(owner, field, value, "must be a mapping", "pass a dict of JSON values")
    for key in value:
        if not isinstance(key, str):
            raise _fail(owner, field, value, "must have str keys", "use JSON object keys")
    _check_json(owner, field, value)
    return freeze_json(dict(value))  # type: ignore[no-any-return]


def _text(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not str:
        owner = type(instance).__name__
        raise _fail(owner, attribute.name, value, "must be a str", "convert it with str()")


def _opt(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and type(value) is not str:
        owner = type(instance).__name__
        raise _fail(owner, attribute.name, value, "must be a str or None", "convert it with str()")


def _size(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**31:
        owner = type(instance).__name__
        expected = "must be a positive int (pixels) or None"
        raise _fail(owner, attribute.name, value, expected, "pass the image's size in pixels")


@attrs.define(frozen=True, slots=True, repr=False)
class TextPart:
    """Plain text.

    Examples:
        >>> TextPart("Run the tests.").text
        'Run the tests.'
    """

    kind: ClassVar[Literal["text"]] = "text"
    text: str = attrs.field(validator=_text)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)


#: A ``data:`` URI of base64 data, the inverse of :attr:`ImagePart.data_uri`: every
#: format that reads or writes one (``fullmatch``) gives ``media`` and ``data`` apart.
DATA_URI: Final = re.compile(r"data:(?P<media>[\w/+.-]+);base64,(?P<data>.*)", re.S)


@attrs.define(frozen=True, slots=True, repr=False)
class ImagePart:
    """An image, by URL, by provider file id, or as base64 data with its media type.

    ``width`` and ``height`` (pixels), when known, let the token counter apply
    each provider's published formula; ``detail`` is OpenAI's ``low`` / ``high``
    / ``auto``.

    Examples:
        >>> ImagePart(url="https://example.com/cat.png").url
        'https://example.com/cat.png'
        >>> ImagePart(data="iVBORw0KGgo=", media_type="image/png").data_uri
        'data:image/png;base64,iVBORw0KGgo='
    """

    kind: ClassVar[Literal["image"]] = "image"
    url: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    data: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    media_type: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    file_id: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    width: int | None = attrs.field(default=None, kw_only=True, validator=_size)
    height: int | None = attrs.field(default=None, kw_only=True, validator=_size)
    detail: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)

    def __attrs_post_init__(self) -> None:
        if self.url is None and self.data is None and self.file_id is None:
            msg = "ImagePart: needs url=, data= (base64, with media_type=) or file_id=; got none"
            raise InvalidComponentError(msg)

    @property
    def data_uri(self) -> str | None:
        """The image as a ``data:`` URI when it is inline data, else ``None``."""
        if self.data is None:
            return None
        return f"data:{self.media_type or 'application/octet-stream'};base64,{self.data}"


@attrs.define(frozen=True, slots=True, repr=False)
class DocumentPart:
    """A document or file: a PDF, a plain-text source, or a provider file id.

    Holds whichever the provider sent: ``data`` (base64) with ``media_type``,
    ``text`` (a plain-text document), ``url``, or ``file_id``; ``name`` is the
    file name or title when one was given.

    Examples:
        >>> DocumentPart(file_id="file-abc", name="report.pdf").name
        'report.pdf'
    """

    kind: ClassVar[Literal["document"]] = "document"
    data: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    text: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    url: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    file_id: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    media_type: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    name: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)

    def __attrs_post_init__(self) -> None:
        if self.data is None and self.text is None and self.url is None and self.file_id is None:
            msg = (
                "DocumentPart: needs data= (base64, with media_type=), text=, url= or "
                "file_id=; got none"
            )
            raise InvalidComponentError(msg)


@attrs.define(frozen=True, slots=True, repr=False)
class AudioPart:
    """Audio as base64 data with its format (``wav``, ``mp3``), or a provider id.

    Examples:
        >>> AudioPart(data="UklGRg==", format="wav").format
        'wav'
    """

    kind: ClassVar[Literal["audio"]] = "audio"
    data: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    format: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    id: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)


@attrs.define(frozen=True, slots=True, repr=False)
class ThinkingPart:
    """The model's reasoning, with the provider's signature when it sent one.

    A thinking block must go back to its provider exactly as it came (Anthropic
    checks the signature), so nothing in the package ever edits one.

    Examples:
        >>> part = ThinkingPart("io is imported twice.", signature="EqQB", provider="anthropic")
        >>> part.signature
        'EqQB'
    """

    kind: ClassVar[Literal["thinking"]] = "thinking"
    text: str = attrs.field(validator=_text)
    signature: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    provider: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)


@attrs.define(frozen=True, slots=True, repr=False)
class RedactedThinkingPart:
    """Reasoning the provider sent encrypted (Anthropic ``redacted_thinking``).

    Examples:
        >>> RedactedThinkingPart("EmwKAhgB...", provider="anthropic").provider
        'anthropic'
    """

    kind: ClassVar[Literal["redacted_thinking"]] = "redacted_thinking"
    data: str = attrs.field(validator=_text)
    provider: str | None = attrs.field(default=None, kw_only=True, validator=_opt)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)


@attrs.define(frozen=True, slots=True, repr=False)
class RefusalPart:
    """A model's refusal to answer (OpenAI ``refusal``).

    Examples:
        >>> RefusalPart("I can't help with that.").text
        "I can't help with that."
    """

    kind: ClassVar[Literal["refusal"]] = "refusal"
    text: str = attrs.field(validator=_text)
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)


def _block(value: object) -> PMap[str, Any]:
    return to_extra(value, "OpaquePart", "block")


@attrs.define(frozen=True, slots=True, repr=False)
class OpaquePart:
    """A provider block we do not model, carried verbatim and sent back unchanged.

    Anthropic's ``compaction``, ``server_tool_use``, ``web_search_tool_result``
    and ``search_result`` blocks, for instance. ``block`` is the whole block as
    the provider wrote it (``type`` included), frozen.

    Examples:
        >>> part = OpaquePart("anthropic", {"type": "compaction", "content": "..."})
        >>> part.type, part.provider
        ('compaction', 'anthropic')
    """

    kind: ClassVar[Literal["opaque"]] = "opaque"
    provider: str = attrs.field(validator=_text)
    block: PMap[str, Any] = attrs.field(converter=_block)

    @property
    def type(self) -> str:
        """The block's ``type`` key, or ``""`` when it has none."""
        kind = self.block.get("type", "")
        return kind if isinstance(kind, str) else ""


#: Any content part.
Part = Union[  # noqa: UP007 (a runtime alias on 3.10)
    TextPart,
    ImagePart,
    DocumentPart,
    AudioPart,
    ThinkingPart,
    RedactedThinkingPart,
    RefusalPart,
    OpaquePart,
]
#: What a part is: the ``kind`` of each class of :data:`Part`, and its record's ``"part"``.
PartKind = Literal[
    "text", "image", "document", "audio", "thinking", "redacted_thinking", "refusal", "opaque"
]


def assert_never(part: NoReturn) -> NoReturn:
    """End an exhaustive ``match`` over :data:`Part`: mypy rejects the call if a kind is left.

    ``typing.assert_never`` is Python 3.11's; this is the same check on 3.10.

    Raises:
        AssertionError: Always (only a value outside :data:`Part` reaches it).
    """
    msg = f"not a content part: {short_repr(part, 200)}"
    raise AssertionError(msg)


#: The part classes, for ``isinstance`` checks.
PART_TYPES: Final = (
    TextPart,
    ImagePart,
    DocumentPart,
    AudioPart,
    ThinkingPart,
    RedactedThinkingPart,
    RefusalPart,
    OpaquePart,
)
#: Parts that hold the model's reasoning: never edited, never quoted into a summary.
THINKING_TYPES: Final = (ThinkingPart, RedactedThinkingPart)

# Reprs leave out fields at their defaults (an empty ``extra``, unset ``None`` fields).
for _cls in PART_TYPES:
    _cls.__repr__ = field_repr  # type: ignore[method-assign]
