"""The failure backoff of a model-calling compactor riding inline.

Riding inline (``ChatContext(compactor=TokenBudgetCompactor(...))``, or
behind a :class:`~mellea_ctx.ThresholdCompactor`), a compaction that called
the backend and left the context unchanged (it failed, or the summary was not
smaller) starts a failure backoff: the context it returns skips the next
``backoff_adds`` adds' compaction (doubling with each consecutive failure,
up to 16 times), so a backend that is down is not asked again on every add.
See ``ChatContext.compaction_backoff``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.checks import require_int

if TYPE_CHECKING:
    from .._core.context import ChatContext


def validate_backoff(owner: str, adds: object) -> int:
    """Return ``adds`` if it is a valid ``backoff_adds`` setting of ``owner``.

    Args:
        owner: The compactor's class name, for the message.
        adds: The ``backoff_adds`` argument as given.

    Returns:
        ``adds``, an int from 0 to 10,000.

    Raises:
        InvalidArgumentError: When ``adds`` is not such an int.

    Examples:
        >>> validate_backoff("TokenBudgetCompactor", 8)
        8
    """
    about = "adds to wait after a failed inline compaction"
    fix = "pass 0 to try again on every add"
    return require_int(owner, "backoff_adds", adds, maximum=10_000, about=about, fix=fix)


def backed_off(result: ChatContext, ctx: ChatContext, adds: int) -> ChatContext:
    """``result``, or when the model call left ``ctx`` as it was, ``ctx`` backing off.

    ``adds == 0`` (a ``compact`` call of your own) returns ``result`` as it is.
    """
    return ctx.with_backoff(adds) if result is ctx else result
