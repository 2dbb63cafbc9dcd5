"""The one registry of wire formats: every caller finds a format here, by name or by its JSON.

Each wire format is a package of ``_formats`` (``openai``, ``anthropic``,
``responses``, ``gemini``) whose ``format`` module builds one frozen
:class:`WireFormat`: how to tell its JSON (``detect``), read it (``read``),
write it (``write``, which reports what it cannot carry through ``lost=``
as every writer does), check a history against its rules (``problems``)
and repair one (``repair``). Nothing else switches over format names: the
transcript files, :func:`~mellea_ctx.problems`,
:func:`~mellea_ctx.repair_history` and the command line all ask
:func:`wire_format` or :func:`detect`.

A new format is a package with its ``format`` module, plus its line in
:func:`formats` below and its name in :data:`Provider`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import attrs

from .._core.components import Component
from .._core.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from .problems import Problem

#: A wire format's name: whose rules :func:`~mellea_ctx.problems` and
#: :func:`~mellea_ctx.repair_history` apply.
Provider = Literal["openai", "anthropic", "responses", "gemini"]

#: Every :data:`Provider` name, in that order (the command line's choices), without
#: loading a format.
PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)

#: What a reader gives: the components, where each was read (``"message 3"``,
#: ``"item 4"``), and a request body's other keys (``None`` for a bare array).
Reading = tuple[list[Component], list[str], dict[str, Any] | None]

#: A change :func:`~mellea_ctx.repair_history` made, as ``(input index, what)``.
Change = tuple[int, str]


@attrs.frozen
class WireFormat:
    """One provider's wire format, as the registry knows it.

    Attributes:
        name: Its :data:`Provider` name (``"gemini"``).
        title: How the command line names a file in it (``"Gemini"``).
        unit: What its file is a list of: ``"message"``, ``"turn"``,
            ``"item"``, ``"content"``.
        grouped: Whether one unit may hold several components (an Anthropic
            turn, a Gemini content), so that ``--window`` counts units.
        precedence: Detection order: a format with a higher one is tried
            first, so a more specific shape wins over a looser one.
        detect: Whether parsed JSON is in this format.
        read: ``(data, source, text) -> Reading``: the file's JSON value, its
            name for errors, and its text (to label entries by line) or ``None``.
        write: ``(components, envelope, lost) -> document``: the JSON value,
            inside ``envelope``'s keys when the file was a request body; what
            the format cannot carry goes to ``lost`` (without it, a
            :class:`~mellea_ctx.LossyConversionWarning`).
        units: A document's units (what :attr:`unit` names), for comparing files.
        problems: ``(components, label) -> problems``, sorted or not; ``label``
            names component ``N`` where the rules name components.
        repair: ``components -> (history, changes)``: the smallest edits that
            make the history valid for these rules.
        empty: What an empty file should have held, when an empty file is its
            own error (``None``: the JSON reader's error stands).
        system: The location its reader gives a system prompt kept apart from
            the units (``None``: system messages are units like the others).
    """

    name: Provider
    title: str
    unit: str
    grouped: bool
    precedence: int
    detect: Callable[[object], bool]
    read: Callable[[object, str, str | None], Reading]
    write: Callable[[Iterable[Component], Mapping[str, Any] | None, list[str] | None], Any]
    units: Callable[[Any], list[Any]]
    problems: Callable[[Sequence[Component], Callable[[int], str]], list[Problem]]
    repair: Callable[[Sequence[Component]], tuple[list[Component], list[Change]]]
    empty: str | None = None
    system: str | None = None


@functools.cache
def formats() -> tuple[WireFormat, ...]:
    """Every wire format, in the order their names are listed (one line each)."""
    from .anthropic.format import FORMAT as ANTHROPIC
    from .gemini.format import FORMAT as GEMINI
    from .openai.format import FORMAT as OPENAI
    from .responses.format import FORMAT as RESPONSES

    found = (OPENAI, ANTHROPIC, RESPONSES, GEMINI)
    assert tuple(wire.name for wire in found) == PROVIDERS, "Provider lists every format"
    return found


@functools.cache
def _by_name() -> dict[str, WireFormat]:
    return {wire.name: wire for wire in formats()}


@functools.cache
def _detection_order() -> tuple[WireFormat, ...]:
    return tuple(sorted(formats(), key=lambda wire: -wire.precedence))


def names() -> str:
    """The names, quoted, for an error message: ``'openai', 'anthropic' ... or 'gemini'``."""
    quoted = [repr(name) for name in PROVIDERS]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def wire_format(name: str) -> WireFormat:
    """Return the format named ``name``.

    Raises:
        InvalidArgumentError: For an unknown name.
    """
    try:
        return _by_name()[name]
    except (KeyError, TypeError):
        msg = f"provider={name!r} must be {names()}"
        raise InvalidArgumentError(msg) from None


def detect(data: object) -> WireFormat | None:
    """Return the format parsed JSON is in, trying the most specific first; ``None``: none."""
    for wire in _detection_order():
        if wire.detect(data):
            return wire
    return None
