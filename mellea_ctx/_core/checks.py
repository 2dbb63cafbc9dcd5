"""One family of argument checks, and the converters every component constructor shares.

Every check raises with one message shape,
``{owner}: {name}={value!r} must be {expected}; {fix}``: who was called, the
argument's name, the value given (through :func:`short_repr`, so any value
can be shown), what was expected, and how to fix it. Arguments raise
:class:`~mellea_ctx.InvalidArgumentError`; component fields pass
``error=InvalidComponentError``. An int check refuses ``bool`` (an ``int`` in
Python) and a number check refuses ``bool``, NaN and the infinities.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .exceptions import InvalidArgumentError, InvalidComponentError, MelleaCtxError
from .parts import PART_TYPES, Part, TextPart
from .reprs import short_repr

ErrorType = type[MelleaCtxError]
_FLOAT_MAX = sys.float_info.max


def argument_error(
    owner: str,
    name: str,
    value: object,
    expected: str,
    fix: str | None = None,
    *,
    error: ErrorType = InvalidArgumentError,
) -> MelleaCtxError:
    """The error every check raises: ``{owner}: {name}={value!r} {expected}; {fix}``.

    ``expected`` is a predicate (``"must be an int >= 0"``, ``"is not callable"``);
    an empty ``owner`` (a module-level function named in ``name``) is left out.

    Examples:
        >>> argument_error("WindowCompactor", "size", -1, "must be an int >= 0", "pass 0")
        InvalidArgumentError('WindowCompactor: size=-1 must be an int >= 0; pass 0')
    """
    head = f"{owner}: " if owner else ""
    tail = f"; {fix}" if fix else ""
    return error(f"{head}{name}={short_repr(value, 200)} {expected}{tail}")


def field_error(
    owner: str, field: str, value: object, expected: str, fix: str
) -> InvalidComponentError:
    """:func:`argument_error` for a component field (an :class:`InvalidComponentError`)."""
    return argument_error(owner, field, value, expected, fix, error=InvalidComponentError)  # type: ignore[return-value]


def _bound(number: float) -> str:
    """``number`` as a message shows it: ``2**63 - 1`` rather than nineteen digits."""
    if isinstance(number, int) and number > 2**16 and (number + 1).bit_count() == 1:
        return f"2**{(number + 1).bit_length() - 1} - 1"
    return str(number)


def _expected(noun: str, unit: str | None, bound: str, about: str | None, also: str | None) -> str:
    text = f"must be {noun}"
    if unit:
        text += f" of {unit}"
    if bound:
        text += f" {bound}"
    if about:
        text += f" ({about})"
    if also:
        text += f", or {also}"
    return text


def require_int(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: int | None = 0,
    maximum: int | None = None,
    unit: str | None = None,
    about: str | None = None,
    also: str | None = None,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> int:
    """Return ``value`` if it is an int (never a bool) in [``minimum``, ``maximum``].

    ``unit`` and ``about`` describe it (``"an int of tokens >= 1 (the trigger)"``);
    ``also`` names what else the caller takes, and lets through itself before
    the check (``also="None for unknown"``, ``also="-1 for no limit"``); ``fix``
    says how to mend a wrong value.

    Examples:
        >>> require_int("WindowCompactor", "size", 3)
        3
        >>> require_int("WindowCompactor", "size", True, fix="pass 0 to keep only the pins")
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: WindowCompactor: size=True must be \
an int >= 0; pass 0 to keep only the pins
    """
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (minimum is None or value >= minimum)
        and (maximum is None or value <= maximum)
    ):
        return value
    if maximum is None:
        bound = "" if minimum is None else f">= {_bound(minimum)}"
    elif minimum is None:
        bound = f"<= {_bound(maximum)}"
    else:
        bound = f"from {_bound(minimum)} to {_bound(maximum)}"
    expected = _expected("an int", unit, bound, about, also)
    raise argument_error(owner, name, value, expected, fix, error=error)


def _finite(value: float) -> bool:
    """Whether ``value`` is neither NaN nor infinite (an int: within a float's range)."""
    if isinstance(value, int):
        return -_FLOAT_MAX <= value <= _FLOAT_MAX  # math.isfinite(10**400) raises OverflowError
    return math.isfinite(value)


def require_number(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: float = -math.inf,
    maximum: float = math.inf,
    above: bool = False,
    unit: str | None = None,
    about: str | None = None,
    also: str | None = None,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> float:
    """Return ``value`` (as given) if it is a finite int or float in range.

    The range is [``minimum``, ``maximum``], open at the bottom when ``above``
    (``minimum=0, above=True`` reads "> 0"). A bool, NaN or an infinity is refused.

    Examples:
        >>> require_number("SQLiteStore", "timeout", 5, minimum=0, above=True, unit="seconds")
        5
        >>> require_number("SQLiteStore", "timeout", float("nan"), minimum=0, above=True,
        ...                unit="seconds")
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: SQLiteStore: timeout=nan must be a \
number of seconds > 0
    """
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and _finite(value)
        and (minimum < value if above else minimum <= value)
        and value <= maximum
    ):
        return value
    low = "(" if above else "["
    if minimum == -math.inf and maximum == math.inf:
        noun, bound = "a finite number", ""
    elif maximum == math.inf:
        noun, bound = "a number", f"{'>' if above else '>='} {_bound(minimum)}"
    elif minimum == -math.inf:
        noun, bound = "a number", f"<= {_bound(maximum)}"
    else:
        noun, bound = "a number", f"in {low}{_bound(minimum)}, {_bound(maximum)}]"
    expected = _expected(noun, unit, bound, about, also)
    raise argument_error(owner, name, value, expected, fix, error=error)


def require_bool(
    owner: str,
    name: str,
    value: object,
    *,
    none: str | None = None,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> bool | None:
    """Return ``value`` if it is True or False (or None, when ``none`` says what None means).

    Examples:
        >>> require_bool("ToolSearch", "catalog_snippets", 1)
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: ToolSearch: catalog_snippets=1 must \
be True or False
    """
    if value is True or value is False or (value is None and none is not None):
        return value
    expected = "must be True or False" if none is None else f"must be True, False, or None {none}"
    raise argument_error(owner, name, value, expected.rstrip(), fix, error=error)


def require_choice(
    owner: str,
    name: str,
    value: object,
    choices: Iterable[str] | Mapping[str, str],
    *,
    none: str | None = None,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> Any:
    """Return ``value`` if it is one of ``choices`` (or None, when ``none`` says what it means).

    ``choices`` may map each choice to what it means, shown in brackets after it.

    Examples:
        >>> require_choice("ThresholdCompactor", "measure", "words",
        ...                {"tokens": "exact running total", "usage": "provider-reported"})
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: ThresholdCompactor: measure='words' \
must be 'tokens' (exact running total) or 'usage' (provider-reported)
    """
    if value is None and none is not None:
        return None
    meanings = choices if isinstance(choices, Mapping) else dict.fromkeys(choices, "")
    if isinstance(value, str) and value in meanings:
        return value
    shown = [
        f"{choice!r} ({meaning})" if meaning else repr(choice)
        for choice, meaning in meanings.items()
    ]
    if len(shown) == 2:
        expected = f"must be {shown[0]} or {shown[1]}"
    else:
        expected = f"must be one of {', '.join(shown)}"
    if none is not None:
        expected += f", or None {none}".rstrip()
    raise argument_error(owner, name, value, expected, fix, error=error)


def require_callable(
    owner: str,
    name: str,
    value: object,
    *,
    optional: bool = False,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> Any:
    """Return ``value`` if it can be called (or is None, when ``optional``).

    Examples:
        >>> require_callable("SummarizeSettings", "pin_predicate", 3)
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: SummarizeSettings: pin_predicate=3 \
is not callable
    """
    if callable(value) or (optional and value is None):
        return value
    raise argument_error(owner, name, value, "is not callable", fix, error=error)


def require_method(
    owner: str,
    name: str,
    value: object,
    method: str,
    *,
    optional: bool = False,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> Any:
    """Return ``value`` if it has a callable ``method`` (a protocol, checked by its method).

    ``method`` is shown as written (``"compact()"``, ``"count(component)"``) and
    looked up by the name before its bracket.

    Examples:
        >>> require_method("react", "compactor", 3, "compact()")
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: react: compactor=3 has no compact() \
method
    """
    if callable(getattr(value, method.partition("(")[0], None)) or (optional and value is None):
        return value
    raise argument_error(owner, name, value, f"has no {method} method", fix, error=error)


def require_instance(
    owner: str,
    name: str,
    value: object,
    kind: type,
    *,
    optional: bool = False,
    fix: str | None = None,
    error: ErrorType = InvalidArgumentError,
) -> Any:
    """Return ``value`` if it is a ``kind`` (or None, when ``optional``).

    Examples:
        >>> require_instance("CompactionPlanner", "pricing", 3, dict, optional=True)
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: CompactionPlanner: pricing=3 must be \
a dict
    """
    if isinstance(value, kind) or (optional and value is None):
        return value
    article = "an" if kind.__name__[:1].lower() in "aeiou" else "a"
    expected = f"must be {article} {kind.__name__}"
    raise argument_error(owner, name, value, expected, fix, error=error)


def require_str(
    owner: str,
    field: str,
    value: object,
    *,
    allow_empty: bool = True,
    fix: str = "convert it with str() or json.dumps()",
    error: ErrorType = InvalidComponentError,
) -> str:
    """Return ``value`` if it is a str (and not empty, unless ``allow_empty``).

    Its callers are the component constructors, so it raises
    :class:`~mellea_ctx.InvalidComponentError` unless told otherwise.
    """
    if not isinstance(value, str):
        raise argument_error(owner, field, value, "must be a str", fix, error=error)
    if not allow_empty and not value:
        expected = "must not be empty"
        raise argument_error(
            owner, field, value, expected, f"pass the provider's {field}", error=error
        )
    return value


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


def flag_validator(owner: str, *, error: ErrorType = InvalidComponentError) -> Any:
    """An attrs validator: the field is True or False (a component's by default)."""

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not True and value is not False:
            require_bool(owner, attribute.name, value, error=error)

    return check


def context_validator(owner: str, expected: str) -> Any:
    """An attrs validator: the field is ``None`` or a ``ChatContext`` (``expected`` says which).

    Examples:
        >>> check = context_validator("Checkpoint", "the ChatContext this checkpoint replaced")
        >>> check(None, attrs.fields(attrs.make_class("A", ["replaced"])).replaced, 3)
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidArgumentError: Checkpoint: replaced=3 must be the \
ChatContext this checkpoint replaced, or None
    """

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        from .context import ChatContext  # here: importing it at the top would be circular

        if value is not None and not isinstance(value, ChatContext):
            raise argument_error(owner, attribute.name, value, f"must be {expected}, or None")

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
