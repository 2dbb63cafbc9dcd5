"""The compaction checkpoint: one component that stands for the history it replaced.

A checkpoint is sent to the model as a user message (never with system
authority) that says plainly it is a summary of earlier conversation, then
the summary, then any exact details the summary lost, carried over verbatim.
It keeps a handle to the exact context it replaced, so compaction can be
undone (``restore()``) or a span looked up again; contexts are immutable and
share their components, so the handle costs no copy.

Compactors recognise an earlier checkpoint by its type, never by its text, so
a user message that imitates the checkpoint header is treated as the user
text it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from .calls import MAX_COUNT
from .checks import (
    context_validator,
    require_instance,
    require_int,
    require_str,
    text_validator,
    tuple_of,
)
from .components import Component, Role
from .exceptions import InvalidArgumentError
from .ledger import Ledger, LedgerEntry, render_entries

if TYPE_CHECKING:
    from .context import ChatContext

#: The first line of every checkpoint's content.
CHECKPOINT_HEADER = "[Checkpoint: earlier conversation, compacted]"
# The ledger kinds that are the user's instructions to the agent, in force until changed.
_STANDING = frozenset({"rule", "constraint", "preference"})
_KEEPS_RULES = "Its rules hold; it gives no other instructions."
_RECORD = "It records what happened; it gives no instructions."
# The same, for a checkpoint short of room.
_BRIEF_KEEPS_RULES = "Its rules hold; no other instructions."
_BRIEF_RECORD = "A record; no instructions."


def _details(value: object) -> tuple[str, ...]:
    return tuple_of(str, "Checkpoint", "preserved", value)


def _span(value: Iterable[Component]) -> tuple[Component, ...]:
    return tuple_of(Component, "Checkpoint", "span", value)


def _ledger(value: object) -> Ledger:
    return require_instance("Checkpoint", "ledger", value, Ledger)  # type: ignore[no-any-return]


def _short(value: object) -> tuple[str, ...]:
    return tuple_of(str, "Checkpoint", "short", value)


def _shown(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple_of(str, "Checkpoint", "shown", value)


_replaced = context_validator("Checkpoint", "the ChatContext this checkpoint replaced")


@attrs.define(frozen=True, slots=True, cache_hash=True)
class Checkpoint(Component):
    """A summary that replaced part of a conversation.

    Args:
        summary: The summary text.
        preserved: Exact details (paths, ids, numbers, commands, user
            constraints) from the replaced span that the summary did not
            contain, carried over verbatim.
        replaced: The context as it was just before this checkpoint replaced
            part of it. ``None`` when it is not available (for example, a
            checkpoint read back from a transcript file).
        span: The components this checkpoint replaced, exactly (an earlier
            checkpoint among them stands for its own span). Kept by session
            stores, so ``recall`` still works after a restart.
        replaced_count: How many original messages the checkpoint stands for.
        ledger: The state of the replaced span (:class:`~mellea_ctx.Ledger`),
            merged with the ledgers of the checkpoints it folded in: typed
            data, carried by every store and format.
        shown: The keys of the ledger entries its content shows (the engine
            picks them within the checkpoint's size); ``None`` shows them all.
        short: The keys of the shown entries whose sentences the content
            shows without their filler words, as the engine does when the full
            lines of what the checkpoint must show do not fit the size asked.
            When it is not empty, the frame is brief too: the message count
            on the header's line, no blank lines, no state heading.

    Examples:
        >>> cp = Checkpoint("Fixed the parser.", preserved=("src/parse.py",), replaced_count=12)
        >>> print(cp.content)
        [Checkpoint: earlier conversation, compacted]
        This summarizes 12 earlier messages. It records what happened; it gives no instructions.
        <BLANKLINE>
        Fixed the parser.
        <BLANKLINE>
        Exact details from the summarized messages:
        - src/parse.py
    """

    summary: str = attrs.field(validator=text_validator("Checkpoint", allow_empty=False))
    preserved: tuple[str, ...] = attrs.field(default=(), kw_only=True, converter=_details)
    replaced: ChatContext | None = attrs.field(
        default=None, kw_only=True, eq=False, hash=False, repr=False, validator=_replaced
    )
    span: tuple[Component, ...] = attrs.field(
        default=(), kw_only=True, eq=False, hash=False, repr=False, converter=_span
    )
    replaced_count: int = attrs.field(default=0, kw_only=True)
    ledger: Ledger = attrs.field(factory=Ledger, kw_only=True, converter=_ledger)
    shown: tuple[str, ...] | None = attrs.field(default=None, kw_only=True, converter=_shown)
    short: tuple[str, ...] = attrs.field(default=(), kw_only=True, converter=_short)
    _rendered: str = attrs.field(init=False, eq=False, hash=False, repr=False)

    @_rendered.default
    def _render(self) -> str:
        # Defaults are computed before validators run: check what is used here first.
        require_str("Checkpoint", "summary", self.summary, allow_empty=False)
        require_int("Checkpoint", "replaced_count", self.replaced_count, maximum=MAX_COUNT)
        shown = self.shown_entries()
        # A record gives no instructions, but the user's standing rules it carries still hold:
        # saying otherwise would tell the model to drop them.
        standing = any(entry.kind in _STANDING for entry in shown)
        # Short of room (its sentences lost their filler words), its frame is brief too: the
        # same said in one line, with no blank lines and no heading over the state.
        brief = bool(self.short)
        if brief:
            lines = [
                f"{CHECKPOINT_HEADER} {self.replaced_count} earlier messages. "
                + (_BRIEF_KEEPS_RULES if standing else _BRIEF_RECORD)
            ]
        else:
            lines = [
                CHECKPOINT_HEADER,
                f"This summarizes {self.replaced_count} earlier messages. "
                + (_KEEPS_RULES if standing else _RECORD),
                "",
            ]
        lines.append(self.summary.strip())
        gap = [] if brief else [""]
        state = render_entries(shown, short=self.short, titled=not brief)
        if state:
            lines += [*gap, state]
        if self.preserved:
            lines += [*gap, "Exact details from the summarized messages:"]
            lines += [f"- {detail}" for detail in self.preserved]
        return "\n".join(lines)

    def shown_entries(self) -> list[LedgerEntry]:
        """The ledger entries the content shows, in session order."""
        if self.shown is None:
            return list(self.ledger.entries)
        keys = set(self.shown)
        return [entry for entry in self.ledger.entries if entry.key in keys]

    def with_span(self, span: Iterable[Component]) -> Checkpoint:
        """Return a copy with ``span`` and no replaced handle (how stores rebuild one).

        ``self`` is not modified.
        """
        return Checkpoint(
            self.summary,
            preserved=self.preserved,
            replaced_count=self.replaced_count,
            span=span,
            ledger=self.ledger,
            shown=self.shown,
            short=self.short,
        )

    @property
    def role(self) -> Role:
        """Always ``"user"``: a checkpoint never speaks with system authority."""
        return "user"

    @property
    def content(self) -> str:
        """The header, the summary and the preserved details, as sent to the model."""
        return self._rendered

    def restore(self) -> ChatContext:
        """Return the exact context this checkpoint replaced.

        Raises:
            InvalidArgumentError: When the checkpoint holds no handle (it was
                built without one, or read back from a file).
        """
        if self.replaced is None:
            msg = (
                "this Checkpoint holds no replaced context (it was built without one or read "
                "from a transcript); only checkpoints made by a compactor can be restored"
            )
            raise InvalidArgumentError(msg)
        return self.replaced
