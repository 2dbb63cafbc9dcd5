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

from .._core.parts import thaw_json

__all__ = [
    "NOTES",
    "OPENER",
    "LossyConversionWarning",
    "note",
    "provider_keys",
    "report_losses",
    "with_notes",
]

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
