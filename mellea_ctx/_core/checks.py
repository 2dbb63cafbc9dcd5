"""The checks every component constructor shares: clear errors, text and parts converters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .exceptions import InvalidComponentError
from .parts import PART_TYPES, Part, TextPart
from .reprs import short_repr

__all__ = ["text_of"]


def field_error(
    owner: str, field: str, value: object, expected: str, fix: str
) -> InvalidComponentError:
    msg = f"{owner}: {field}={short_repr(value, 200)} {expected}; {fix}"
    return InvalidComponentError(msg)


def require_str(owner: str, field: str, value: object, *, allow_empty: bool = True) -> None:
    if not isinstance(value, str):
        raise field_error(
            owner, field, value, "must be a str", "convert it with str() or json.dumps()"
        )
    if not allow_empty and not value:
        raise field_error(owner, field, value, "must not be empty", f"pass the provider's {field}")


def tuple_of(kind: type, owner: str, field: str, value: object) -> tuple[Any, ...]:
    if value == ():
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise field_error(
            owner, field, value, f"must be a sequence of {kind.__name__}", "wrap it in a tuple"
        )
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise field_error(
                owner,
                field,
                value,
                f"must hold only {kind.__name__} values, got {type(item).__name__}",
                f"build each item as {kind.__name__}(...)",
            )
    return items


def text_validator(owner: str, *, allow_empty: bool = True) -> Any:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not str or not (value or allow_empty):
            require_str(owner, attribute.name, value, allow_empty=allow_empty)

    return check


def optional_text_validator(owner: str) -> Any:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            require_str(owner, attribute.name, value, allow_empty=False)

    return check


def image_tuple(value: object) -> tuple[str, ...]:
    return tuple_of(str, "Message", "images", value)


def parts_converter(owner: str) -> Any:
    """A converter: text, ``None`` (no content) or a sequence of parts, to a tuple of parts."""

    def convert(value: object) -> tuple[Part, ...]:
        if value is None:
            return ()
        if type(value) is str:
            return (TextPart(value),)
        if isinstance(value, PART_TYPES):
            return (value,)
        if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
            raise field_error(
                owner,
                "content",
                value,
                "must be a str, None, or a sequence of parts",
                "pass text, or parts such as TextPart(...) and ImagePart(...)",
            )
        items = tuple(value)
        for item in items:
            if not isinstance(item, PART_TYPES):
                raise field_error(
                    owner,
                    "content",
                    value,
                    f"must hold only parts, got {type(item).__name__}",
                    "build each item as TextPart(...), ImagePart(...), ... or wrap text in "
                    "TextPart",
                )
        return items

    return convert


def text_of(parts: tuple[Part, ...]) -> str:
    """The text view of ``parts``: their text parts, joined by a blank line.

    Examples:
        >>> from mellea_ctx._core.parts import ImagePart
        >>> print(text_of((TextPart("a"), ImagePart(url="https://x/y.png"), TextPart("b"))))
        a
        <BLANKLINE>
        b
    """
    if len(parts) == 1:
        only = parts[0]
        return only.text if type(only) is TextPart else ""
    return "\n\n".join(part.text for part in parts if type(part) is TextPart)


def is_plain(parts: tuple[Part, ...]) -> bool:
    """Whether ``parts`` can travel as one plain string (no list of blocks needed)."""
    return not parts or (len(parts) == 1 and type(parts[0]) is TextPart and not parts[0].extra)
