"""A cleared tool result: a short placeholder standing for a tool result's content.

Old tool results are the bulk of an agent's history and the first thing it
can do without: the call (name and arguments) says what was asked, and the
model can ask again. :class:`ClearedToolResult` is the tool result that
remains after its content was removed. It is still a
:class:`~mellea_ctx.ToolMessage` answering the same call id, so the tool
pair stays whole and every format sends it as the tool result it is, and
its content names the tool, the call id and the size of what was removed.

Like a :class:`~mellea_ctx.Checkpoint` it keeps a handle to what it replaced:
``original`` is the exact result, and ``restore()`` hands back the exact
context the clearing was applied to, so clearing is reversible. Session
stores keep it as the placeholder tool result it reads as (the handles, like
a checkpoint's ``replaced``, live in memory only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .checks import context_validator, require_int
from .components import ToolMessage
from .exceptions import InvalidArgumentError
from .reprs import short_repr

if TYPE_CHECKING:
    from .context import ChatContext


def cleared_text(original: ToolMessage, tokens: int, note: str | None = None) -> str:
    """Return the placeholder text that stands for ``original``, ``tokens`` long.

    Examples:
        >>> print(cleared_text(ToolMessage("x" * 900, tool_call_id="c1", name="ls"), 300))
        [Tool result cleared: ls (call c1), 300 tokens (900 characters) removed to save context. Call the tool again if you need it.]
    """  # noqa: E501
    name = original.name or "tool"
    return (
        f"[Tool result cleared: {name} (call {original.tool_call_id}), {tokens} tokens "
        f"({len(original.content)} characters) removed to save context. "
        + (note or "Call the tool again if you need it.")
        + "]"
    )


def _removed_tokens(_instance: object, _attribute: object, value: object) -> None:
    require_int("ClearedToolResult", "removed_tokens", value)


def _original(_instance: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, ToolMessage) or isinstance(value, ClearedToolResult):
        msg = (
            f"ClearedToolResult: original={short_repr(value)} must be the ToolMessage that was "
            "cleared (not another ClearedToolResult); build one with ClearedToolResult.of(...)"
        )
        raise InvalidArgumentError(msg)


_replaced = context_validator("ClearedToolResult", "the ChatContext the clearing was applied to")


@attrs.define(frozen=True, slots=True, cache_hash=True, repr=False)
class ClearedToolResult(ToolMessage):
    """A tool result whose content was replaced by a placeholder.

    Build one with :meth:`of`. Compared, hashed and sent as the placeholder
    :class:`~mellea_ctx.ToolMessage` it reads as; the handles are extra.

    Args:
        original: The exact tool result that was cleared.
        replaced: The context the clearing was applied to (``None`` when not
            available).
        removed_tokens: The original's size in tokens, under the counter of
            the context it was cleared from.

    Examples:
        >>> before = ToolMessage("a.py\\nb.py", tool_call_id="call_1", name="ls")
        >>> cleared = ClearedToolResult.of(before, tokens=9)
        >>> cleared.tool_call_id, cleared.original is before
        ('call_1', True)
    """

    original: ToolMessage = attrs.field(
        kw_only=True, eq=False, hash=False, repr=False, validator=_original
    )
    replaced: ChatContext | None = attrs.field(
        default=None, kw_only=True, eq=False, hash=False, repr=False, validator=_replaced
    )
    removed_tokens: int = attrs.field(
        default=0, kw_only=True, eq=False, hash=False, validator=_removed_tokens
    )

    @classmethod
    def of(
        cls,
        original: ToolMessage,
        *,
        tokens: int,
        replaced: ChatContext | None = None,
        note: str | None = None,
    ) -> ClearedToolResult:
        """Return the placeholder for ``original``, which is ``tokens`` long.

        Args:
            original: The tool result to stand for.
            tokens: Its size in tokens (named in the placeholder).
            replaced: The context the clearing is applied to.
            note: The placeholder's last sentence (default: call the tool
                again if you need it).

        Raises:
            InvalidArgumentError: When ``original`` is not a plain tool result.
        """
        return cls(
            cleared_text(original, tokens, note),
            tool_call_id=original.tool_call_id,
            name=original.name,
            is_error=original.is_error,
            original=original,
            replaced=replaced,
            removed_tokens=tokens,
        )

    def restore(self) -> ChatContext:
        """Return the exact context this result was cleared from.

        Raises:
            InvalidArgumentError: When the result holds no handle.
        """
        if self.replaced is None:
            msg = (
                "this ClearedToolResult holds no replaced context (it was built without one); "
                "its original result is still at .original"
            )
            raise InvalidArgumentError(msg)
        return self.replaced

    def __repr__(self) -> str:
        return (
            f"ClearedToolResult(tool_call_id={self.tool_call_id!r}, name={self.name!r}, "
            f"removed_tokens={self.removed_tokens})"
        )
