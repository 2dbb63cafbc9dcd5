"""What every wire format's reader shares: its error, and the keys it keeps as they came.

Every reader raises :func:`invalid` for a bad value, its message naming
where the value is (``message 3 content[1]``) before what is wrong and the
fix; and keeps the keys of a block it does not model (:func:`other_keys`) in
the component's or part's ``extra``, so that writing gives them back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.exceptions import InvalidContextError


def invalid(where: str, detail: str) -> InvalidContextError:
    """The reader's error: ``"where: detail"``."""
    return InvalidContextError(f"{where}: {detail}")


def other_keys(block: Mapping[str, Any], *known: str) -> dict[str, Any]:
    """The keys of ``block`` other than ``known``, with their values."""
    return {key: value for key, value in block.items() if key not in known}
