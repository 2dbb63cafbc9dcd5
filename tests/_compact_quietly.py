"""Run a compactor the way a caller that tolerates failure does: failures leave the input."""

from __future__ import annotations

import warnings
from typing import Any

from mellea_ctx import BackendError, ChatContext, CompactionError, Component


def compact_quietly(compactor: Any, items: list[Component]) -> list[Component]:
    """Return the components of ``compactor.compact`` on ``items``; the input when it fails."""
    ctx = ChatContext()
    for component in items:
        ctx = ctx.add(component)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return compactor.compact(ctx).as_list()  # type: ignore[no-any-return]
        except (BackendError, CompactionError):
            return items
