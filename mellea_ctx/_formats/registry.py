"""The one registry of wire formats: every caller finds a format here, by name or by its JSON.

Each wire format is a package of ``_formats`` (``openai``, ``anthropic``,
``responses``, ``gemini``) whose ``format`` module defines its rules (a
:class:`FormatRules`): how to tell its JSON (``detect``), read it (``read``),
write it (``write``, which reports what it cannot carry through ``lost=``
as every writer does), its units, check a history against its rules
(``problems``), repair one (``repair``), and its :class:`FileShape`. From
each, :func:`formats` builds one frozen :class:`WireFormat`. Nothing else
switches over format names: the transcript files, :func:`~mellea_ctx.problems`,
:func:`~mellea_ctx.repair_history` and the command line all ask
:func:`wire_format` or :func:`detect`.

A new format is a package with its ``format`` module, plus its module in
:func:`formats` below, its name in :data:`Provider` and its place in the
detection order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, get_args

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
class FileShape:
    """What a format's files look like to the command line, beside the format's rules.

    Attributes:
        title: How the command line names a file in it (``"Gemini"``).
        unit: What its file is a list of: ``"message"``, ``"turn"``,
            ``"item"``, ``"content"``.
        grouped: Whether one unit may hold several components (an Anthropic
            turn, a Gemini content), so that ``--window`` counts units.
        empty: What an empty file should have held, when an empty file is its
            own error (``None``: the JSON reader's error stands).
        system: The location its reader gives a system prompt kept apart from
            the units (``None``: system messages are units like the others).
    """

    title: str
    unit: str
    grouped: bool = False
    empty: str | None = None
    system: str | None = None


class FormatRules(Protocol):
    """What each format package's ``format`` module defines: its file shape and six functions.

    The module itself is the value (mypy checks a module against a protocol),
    so no format lists its own functions a second time.

    Attributes:
        SHAPE: What its files look like (:class:`FileShape`).
    """

    SHAPE: FileShape

    def detect(self, data: object, /) -> bool:
        """Whether parsed JSON is in this format."""
        ...

    def read(self, data: object, source: str, text: str | None, /) -> Reading:
        """Read the file's JSON value; ``source`` names it for errors, ``text`` labels by line.

        ``text`` is the file's text, or ``None``.
        """
        ...

    def write(
        self,
        components: Iterable[Component],
        envelope: Mapping[str, Any] | None,
        lost: list[str] | None,
        /,
    ) -> Any:
        """The JSON value, inside ``envelope``'s keys when the file was a request body.

        What the format cannot carry goes to ``lost`` (without it, a
        :class:`~mellea_ctx.LossyConversionWarning`).
        """
        ...

    def units(self, document: Any, /) -> list[Any]:
        """A document's units (what :attr:`FileShape.unit` names), for comparing files."""
        ...

    def problems(self, items: Sequence[Component], label: Callable[[int], str], /) -> list[Problem]:
        """The history's problems, sorted or not; ``label`` names component ``N`` in them."""
        ...

    def repair(self, items: Sequence[Component], /) -> tuple[list[Component], list[Change]]:
        """The smallest edits that make the history valid for these rules, and what they were."""
        ...


@attrs.frozen
class WireFormat:
    """One provider's wire format, as the registry knows it.

    Attributes:
        name: Its :data:`Provider` name (``"gemini"``).
        rules: Its package's ``format`` module (:class:`FormatRules`).
    """

    name: Provider
    rules: FormatRules

    @property
    def shape(self) -> FileShape:
        """What its files look like (:class:`FileShape`)."""
        return self.rules.SHAPE


#: The order :func:`detect` tries formats in: a more specific shape before a looser one
#: (Responses before Gemini: an array of typed items may also hold ``"parts"``; any
#: format before OpenAI Chat messages, the reading of a file nothing else claims).
_DETECTION_ORDER: Final[tuple[Provider, ...]] = ("responses", "gemini", "anthropic", "openai")


@functools.cache
def formats() -> tuple[WireFormat, ...]:
    """Every wire format, in the order their names are listed (one line each)."""
    from .anthropic import format as anthropic
    from .gemini import format as gemini
    from .openai import format as openai
    from .responses import format as responses

    found = (
        WireFormat("openai", openai),
        WireFormat("anthropic", anthropic),
        WireFormat("responses", responses),
        WireFormat("gemini", gemini),
    )
    assert tuple(wire.name for wire in found) == PROVIDERS, "Provider lists every format"
    return found


@functools.cache
def _by_name() -> dict[str, WireFormat]:
    return {wire.name: wire for wire in formats()}


@functools.cache
def _detection_order() -> tuple[WireFormat, ...]:
    assert sorted(_DETECTION_ORDER) == sorted(PROVIDERS), "the order lists every format once"
    return tuple(_by_name()[name] for name in _DETECTION_ORDER)


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
        if wire.rules.detect(data):
            return wire
    return None
