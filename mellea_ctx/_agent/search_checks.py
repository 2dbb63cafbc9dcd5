"""What ToolSearch and its ``tool_search`` tool accept: the catalog, the settings, a call.

Each check raises with the argument's name, its repr, what was expected and
how to fix it: :class:`~mellea_ctx.InvalidArgumentError` for the program's
own arguments, :class:`~mellea_ctx.ToolArgumentError` for the model's.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from .._core.exceptions import InvalidArgumentError
from .._core.tools import Tool, ToolArgumentError
from .search_tool import SEARCH_TOOL_NAME


def check_catalog(owner: str, tools: object) -> tuple[Tool, ...]:
    """Return ``tools`` as a tuple after checking it is a catalog ToolSearch can take.

    Raises:
        InvalidArgumentError: For something other than an iterable of
            :class:`~mellea_ctx.Tool`, two tools with one name, or a tool named
            ``tool_search``.
    """
    if isinstance(tools, Tool | str) or not isinstance(tools, Iterable):
        msg = f"{owner}: tools={tools!r} must be an iterable of Tool; pass a list"
        raise InvalidArgumentError(msg)
    catalogue = tuple(tools)
    for item in catalogue:
        if not isinstance(item, Tool):
            msg = f"{owner}: {item!r} in tools is not a Tool; wrap functions with tool(fn)"
            raise InvalidArgumentError(msg)
    names = [item.name for item in catalogue]
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        listed = ", ".join(map(repr, repeated))
        msg = f"{owner}: more than one tool is named {listed}; names must be unique"
        raise InvalidArgumentError(msg)
    if SEARCH_TOOL_NAME in names:
        msg = (
            f"{owner}: a tool is named {SEARCH_TOOL_NAME!r}, the search tool's own name; "
            "rename it with tool(name=...)(fn)"
        )
        raise InvalidArgumentError(msg)
    return catalogue


def check_call(query: object, limit: object, score: object) -> tuple[str, int | None, float | None]:
    """Return the arguments of one call of the search tool, as given, once checked.

    Raises:
        ToolArgumentError: For a query that is not a string, a limit that is
            not an integer >= 1, or a score that is not a finite number.
    """
    if not isinstance(query, str):
        msg = f"{SEARCH_TOOL_NAME}: query={query!r} must be a string of keywords"
        raise ToolArgumentError(msg)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        msg = f"{SEARCH_TOOL_NAME}: limit={limit!r} must be an integer >= 1, or left out"
        raise ToolArgumentError(msg)
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
    ):
        msg = f"{SEARCH_TOOL_NAME}: score={score!r} must be a finite number, or left out"
        raise ToolArgumentError(msg)
    return query, limit, score
