"""The ``tool_search`` tool the model calls: its definition, its catalog, its answers.

:class:`~mellea_ctx.ToolSearch` builds the definition once
(:func:`search_tool_template`, the same for every session, so it never moves
the request prefix) and words each reply (:func:`answer`): the definitions
found, as text or as Anthropic ``tool_reference`` blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .._core.tools import Tool, tool
from .._formats.anthropic import tool_references_text
from .bm25 import ToolHit

#: The name the model calls the search by.
SEARCH_TOOL_NAME = "tool_search"

_SNIPPET_CHARS = 100


def _snippet(description: str) -> str:
    first = re.split(r"(?<=[.!?])\s", description.strip(), maxsplit=1)[0]
    first = " ".join(first.split())
    if len(first) > _SNIPPET_CHARS:
        first = first[: _SNIPPET_CHARS - 1].rstrip() + "…"
    return first


def guidelines(description: str) -> str:
    """Return a description's guidelines: what follows its first sentence, whitespace folded.

    Examples:
        >>> guidelines("Read a file. Use it before editing; paths are relative.")
        'Use it before editing; paths are relative.'
        >>> guidelines("Read a file.")
        ''
    """
    parts = re.split(r"(?<=[.!?])\s", description.strip(), maxsplit=1)
    return " ".join(parts[1].split()) if len(parts) > 1 else ""


def catalog_lines(
    deferred: Iterable[Tool], *, snippets: bool, with_guidelines: bool = False
) -> list[str]:
    """Return a ``- name`` line per tool, by name, with its first sentence if ``snippets``.

    With ``with_guidelines`` each line is followed by the tool's guidelines
    (the rest of its description), indented, when it has any.
    """
    lines = []
    for item in sorted(deferred, key=lambda t: t.name):
        if snippets:
            lines.append(f"- {item.name}: {_snippet(item.description)}")
        else:
            lines.append(f"- {item.name}")
        extra = guidelines(item.description) if with_guidelines else ""
        if extra:
            lines.append(f"  {extra}")
    return lines


def search_tool_template(catalog: Sequence[str], *, limit: int, min_score: float) -> Tool:
    """Return the search tool's definition, listing ``catalog`` lines in its description.

    Only the schema is meant to be read: :meth:`~mellea_ctx.ToolSearch.search_tool`
    gives each session a copy with a function that runs the search.
    """
    description = (
        "Search the tools that are not loaded yet and load the definitions that match. "
        "Use keywords for what you need to do, or a tool's exact name; the matching "
        "tools can then be called like any other."
    )
    if catalog:
        description += "\n\nSearchable tools:\n" + "\n".join(catalog)

    def tool_search(query: str, limit: int | None = None, score: float | None = None) -> str:
        raise NotImplementedError  # only the schema is read; see ToolSearch.search_tool

    tool_search.__doc__ = f"""Search the deferred tools.

        Args:
            query: Keywords for what you need to do, or a tool's exact name.
            limit: At most this many definitions (default and maximum {limit}).
            score: Only tools scoring strictly above this BM25 score (default {min_score}).
        """
    return tool(name=SEARCH_TOOL_NAME, description=description)(tool_search)


def answer(query: str, hits: Sequence[ToolHit], known: Sequence[str], *, references: bool) -> str:
    """Return the search tool's reply to the model.

    Args:
        query: What the model searched for.
        hits: The definitions delivered now, best first.
        known: Matching tools the session already holds (named, not resent).
        references: Answer with Anthropic ``tool_reference`` blocks instead of
            the definitions as text (when there are hits).
    """
    if hits and references:
        return tool_references_text(hit.tool.name for hit in hits)
    loaded = f"Already loaded, call directly: {', '.join(known)}." if known else ""
    if not hits:
        return " ".join(filter(None, [f"No new tool matches {query!r}.", loaded]))
    parts = [f"Loaded {len(hits)} tool definition(s); call them like any other tool."]
    for hit in hits:
        parts.append(f"{hit.tool.name}: {hit.tool.description}\nParameters: {hit.tool.schema_json}")
    if loaded:
        parts.append(loaded)
    return "\n\n".join(parts)
