"""Format notes: what a reader records so that its writer gives back the very same JSON.

A component keeps the keys a provider sent that we do not model in ``extra``.
A few facts about the *shape* of the wire JSON belong to no modelled field and
no provider key: that an Anthropic turn started here although the previous
component has the same role, that its ``tool_use`` blocks sat between other
blocks, that an OpenAI message had no ``content`` key at all. Readers record
those under one reserved key of ``extra``, :data:`NOTES` (``"mellea_ctx"``),
and every writer reads them back and never sends that key to a provider.
docs/formats.md lists each note.

Converting to another provider's format can lose data (thinking has no place
in OpenAI Chat, an OpenAI audio part none in Anthropic). Writers then say so:
they append one line per loss to the ``lost`` list the caller passes, or,
without one, warn with :class:`LossyConversionWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Final

from pyrsistent import PMap

from .._core.components import Component
from .._core.exceptions import InvalidComponentError
from .._core.parts import thaw_json
from .._core.reprs import short_repr

#: The reserved ``extra`` key under which readers record wire-shape notes.
NOTES: Final = "mellea_ctx"
#: The text of the user turn a writer puts before a history that opens with the model
#: where the provider wants a user turn first (a compactor's cut can leave one).
OPENER: Final = "(earlier conversation)"


class LossyConversionWarning(UserWarning):
    """A writer could not carry something into the target format (see its ``lost=``)."""


def note(extra: PMap[str, Any], key: str, default: Any = None) -> Any:
    """Return the note ``key`` recorded in ``extra``, or ``default``.

    Examples:
        >>> from pyrsistent import pmap
        >>> note(pmap({NOTES: pmap({"anthropic_turn": "new"})}), "anthropic_turn")
        'new'
    """
    notes = extra.get(NOTES)
    if not isinstance(notes, Mapping):
        return default
    return notes.get(key, default)


def provider_keys(extra: PMap[str, Any]) -> dict[str, Any]:
    """Return ``extra`` as plain JSON, without the notes: the keys to write back.

    Examples:
        >>> from pyrsistent import pmap
        >>> provider_keys(pmap({"cache_control": pmap({"type": "ephemeral"}), NOTES: pmap()}))
        {'cache_control': {'type': 'ephemeral'}}
    """
    if not extra:
        return {}
    return {key: thaw_json(value) for key, value in extra.items() if key != NOTES}


def with_notes(extra: Mapping[str, Any], **notes: Any) -> dict[str, Any]:
    """Return ``extra`` (plain) with ``notes`` recorded; ``None`` values are left out."""
    kept = {key: value for key, value in notes.items() if value is not None}
    if not kept:
        return dict(extra)
    return {**extra, NOTES: kept}


def report_losses(lost: list[str] | None, found: list[str], target: str) -> None:
    """Hand ``found`` losses to the caller: into ``lost``, or as one warning."""
    if not found:
        return
    if lost is not None:
        lost.extend(found)
        return
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    msg = (
        f"{target} could not carry {len(found)} item(s): {shown}. Pass lost=[] to collect "
        "them instead of this warning"
    )
    warnings.warn(msg, LossyConversionWarning, stacklevel=3)


def carried_keys(
    extra: PMap[str, Any],
    where: str,
    lost: list[str],
    *,
    allowed: frozenset[str] | None = None,
    refused: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Return the keys of ``extra`` that the target API defines; report the others in ``lost``.

    With ``allowed`` (an API that refuses every key it does not define, as
    the Messages API does), only those keys are carried; otherwise every key
    but the ``refused`` ones (other providers' keys, for an API many servers
    speak, each with fields of its own). The notes are never carried.

    Examples:
        >>> from pyrsistent import pmap
        >>> lost = []
        >>> carried_keys(pmap({"index": 0, "cache_control": {}}), "call 1", lost,
        ...              allowed=frozenset({"cache_control"}))
        {'cache_control': {}}
        >>> lost
        ["call 1: the key 'index' (the target API does not define it)"]
    """
    keys = provider_keys(extra)
    kept: dict[str, Any] = {}
    for key, value in keys.items():
        if (key in allowed) if allowed is not None else (key not in refused):
            kept[key] = value
        else:
            lost.append(f"{where}: the key {key!r} (the target API does not define it)")
    return kept


def writable(component: object, index: int) -> Component:
    """Return ``component`` if a writer can write it, else raise naming it.

    Raises:
        InvalidComponentError: When ``component`` is not a ``Component``.
    """
    if not isinstance(component, Component):
        msg = (
            f"component {index}: {short_repr(component)} is not a Component; "
            "build it with Message(...) or from_openai(...)"
        )
        raise InvalidComponentError(msg)
    return component
