"""Tool search: BM25 over deferred tool definitions, each delivered once per session.

Every tool definition in a request costs tokens on every turn, and a model
choosing among dozens of tools chooses worse. Mark the rarely needed ones
``deferred`` (``@tool(deferred=True)``) and :class:`ToolSearch` keeps them out
of requests: the model gets one ``tool_search`` tool instead, searches the
deferred tools' names, descriptions and arguments with BM25 (through the
``bm25s`` package, ``pip install '.[search]' in the clone``), and receives the
definitions that match.

:class:`DeliveredTools` remembers, per session, which definitions the model
already received, so a later search never sends one twice; a compaction
that replaces the messages that carried them clears the record
(:meth:`ToolSearch.reset_after_compaction`), so the model can find them again.

Requests are shaped per provider. Chat Completions only accepts calls to
declared tools, so :meth:`ToolSearch.offered` and
:meth:`ToolSearch.openai_tools` declare a deferred tool from the request after
the search that delivered it. Anthropic's Messages API can instead keep every
deferred tool in the request with ``"defer_loading": true``, out of the
prompt until a ``tool_reference`` block in a tool result loads it
(:meth:`ToolSearch.anthropic_tools` and ``search_tool(..., references=True)``);
the request prefix then never changes, so the prompt cache keeps hitting.

The parts live beside this module: ``bm25`` (terms and the index),
``delivered`` (the record and its store), ``search_tool`` (the tool's
definition and replies) and ``search_checks`` (what each accepts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import attrs

from .._core.checks import (
    require_bool,
    require_choice,
    require_instance,
    require_int,
    require_number,
)
from .._core.exceptions import InvalidArgumentError
from .._core.tools import Tool
from .bm25 import ToolHit, ToolIndex
from .delivered import DeliveredTools, InMemoryMetaStore, MetaStore
from .search_checks import check_call, check_catalog
from .search_tool import SEARCH_TOOL_NAME, answer, catalog_lines, search_tool_template

CatalogPlacement = Literal["description", "system", "none"]
_PLACEMENTS = ("description", "system", "none")


class ToolSearch:
    """BM25 search over the deferred tools of a catalog, and the requests that go with it.

    Give it the whole catalog; the tools marked ``deferred`` become
    searchable, the others are always offered. Each search ranks the deferred
    tools by BM25 over their terms (name, description, argument names and
    descriptions; lowercased, identifiers split into words, English plurals
    stripped, a few stopwords dropped) and returns those scoring strictly
    above ``min_score``, best first, ties by name.

    Args:
        tools: Every tool of the agent, deferred or not.
        limit: At most this many results per search (a search may ask for
            fewer, never more through the tool).
        min_score: Only tools scoring strictly above it are found; BM25
            scores are >= 0 and 0 means no term matched.
        k1: BM25 term-frequency saturation (>= 0; 0 counts a term once).
        b: BM25 length normalization, from 0 (none) to 1 (full).
        catalog: Where the model learns which tools exist before it
            searches: ``"description"`` lists them in the search tool's
            description, ``"system"`` leaves that to :meth:`catalog_text`
            (for your system prompt; ``react`` puts it there itself), ``"none"``
            lists nothing. The list names
            every deferred tool, delivered or not, so the request prefix stays
            the same from turn to turn and the prompt cache keeps hitting.
        catalog_snippets: Follow each listed name with the first sentence of
            its description.
        catalog_guidelines: Follow each listed tool with its guidelines, the
            rest of its description (when and how to use it), as zett's
            option of that name does. Off by default: it lengthens the list.
        resend_after_compaction: :meth:`reset_after_compaction` clears the
            session's record, so definitions the compaction removed can be
            found again. ``False`` keeps suppressing them.
        store: Where :meth:`delivered` keeps each session's record; ``None``
            keeps it in memory for the life of this object.

    Raises:
        InvalidArgumentError: For a bad setting, a tool that is not a
            :class:`~mellea_ctx.Tool`, two tools with one name, a tool named
            ``tool_search``, or bm25s missing.

    Examples:
        >>> from mellea_ctx import tool
        >>> @tool(deferred=True)
        ... def warehouse_stock(sku: str) -> int:
        ...     '''Count the units of a product in stock at the warehouse.'''
        ...     return 3
        >>> @tool(deferred=True)
        ... def billing_lookup(invoice_id: str) -> str:
        ...     '''Look up an invoice and its payment status.'''
        ...     return "paid"
        >>> search = ToolSearch([warehouse_stock, billing_lookup])
        >>> [hit.tool.name for hit in search.search("how many units in stock")]
        ['warehouse_stock']
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        limit: int = 20,
        min_score: float = 0.0,
        k1: float = 1.5,
        b: float = 0.75,
        catalog: CatalogPlacement = "description",
        catalog_snippets: bool = True,
        catalog_guidelines: bool = False,
        resend_after_compaction: bool = True,
        store: MetaStore | None = None,
    ) -> None:
        owner = "ToolSearch"
        catalogue = check_catalog(owner, tools)
        self.limit = require_int(owner, "limit", limit, minimum=1, fix="pass 1 or more")
        self.min_score = float(
            require_number(owner, "min_score", min_score, fix="0.0 finds any match")
        )
        self.k1 = float(require_number(owner, "k1", k1, minimum=0.0, fix="the usual is 1.2-2.0"))
        self.b = float(
            require_number(owner, "b", b, minimum=0.0, maximum=1.0, fix="the usual is 0.75")
        )
        require_choice(owner, "catalog", catalog, _PLACEMENTS)
        for flag, value in (
            ("catalog_snippets", catalog_snippets),
            ("catalog_guidelines", catalog_guidelines),
            ("resend_after_compaction", resend_after_compaction),
        ):
            require_bool(owner, flag, value)
        if store is not None and not isinstance(store, MetaStore):
            msg = (
                f"{owner}: store={store!r} has no get(session_id, key) and "
                "set(session_id, key, value); pass a MetaStore such as InMemoryMetaStore()"
            )
            raise InvalidArgumentError(msg)
        self.catalog: CatalogPlacement = catalog
        self.catalog_snippets = catalog_snippets
        self.catalog_guidelines = catalog_guidelines
        self.resend_after_compaction = resend_after_compaction
        self.store: MetaStore = store if store is not None else InMemoryMetaStore()
        self._tools = catalogue
        self._deferred = tuple(item for item in catalogue if item.deferred)
        self._by_name = {item.name: item for item in self._deferred}
        self._index = ToolIndex(self._deferred, k1=self.k1, b=self.b) if self._deferred else None
        listed = self._catalog_lines() if catalog == "description" else []
        self._template = search_tool_template(listed, limit=self.limit, min_score=self.min_score)

    def __repr__(self) -> str:
        return (
            f"ToolSearch({len(self._tools)} tools, {len(self._deferred)} deferred, "
            f"limit={self.limit}, catalog={self.catalog!r})"
        )

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Every tool given, in order."""
        return self._tools

    @property
    def deferred(self) -> tuple[Tool, ...]:
        """The searchable tools, in the order given."""
        return self._deferred

    # -- searching ---------------------------------------------------------------------

    def scores(self, query: str) -> dict[str, float]:
        """Return every deferred tool's BM25 score for ``query``, by name.

        A query term counts once however often it is repeated.

        Raises:
            InvalidArgumentError: When ``query`` is not a string.
        """
        if not isinstance(query, str):
            msg = f"ToolSearch.search: query={query!r} must be a string of keywords"
            raise InvalidArgumentError(msg)
        if self._index is None:
            return {}
        return self._index.scores(query)

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        exclude: Iterable[str] = (),
    ) -> list[ToolHit]:
        """Return the deferred tools matching ``query``, best first.

        Args:
            query: Keywords, or a tool's exact name.
            limit: At most this many hits (default: the search's ``limit``).
            min_score: Only hits scoring strictly above it (default: the
                search's ``min_score``).
            exclude: Names never returned, such as the definitions a session
                already has; the limit counts only what remains.

        Returns:
            Hits by descending score, ties by name.

        Raises:
            InvalidArgumentError: For a query that is not a string, a bad
                limit or min_score, or ``exclude`` given as one string.
        """
        owner = "ToolSearch.search"
        count = self.limit if limit is None else limit
        count = require_int(owner, "limit", count, minimum=1, fix="pass 1 or more")
        floor = self.min_score if min_score is None else min_score
        floor = float(require_number(owner, "min_score", floor, fix="pass 0.0"))
        if isinstance(exclude, str) or not isinstance(exclude, Iterable):
            msg = f"{owner}: exclude={exclude!r} must be an iterable of names, such as a list"
            raise InvalidArgumentError(msg)
        skip = frozenset(exclude)
        scored = self.scores(query)
        hits = [
            ToolHit(item, scored[item.name])
            for item in self._deferred
            if scored[item.name] > floor and item.name not in skip
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.tool.name))
        return hits[:count]

    # -- the search tool ----------------------------------------------------------------

    def _catalog_lines(self) -> list[str]:
        return catalog_lines(
            self._deferred,
            snippets=self.catalog_snippets,
            with_guidelines=self.catalog_guidelines,
        )

    def catalog_text(self) -> str:
        """Return the list of searchable tools for the system prompt, when ``catalog="system"``.

        Empty for the other placements and when nothing is deferred, so it can
        be appended unconditionally. :func:`~mellea_ctx.react` adds it to each
        request's system prompt by itself.
        """
        if self.catalog != "system" or not self._deferred:
            return ""
        header = (
            f"These tools are available through {SEARCH_TOOL_NAME}; search for one "
            "to load its definition before calling it:"
        )
        return "\n".join([header, *self._catalog_lines()])

    def _run(
        self,
        delivered: DeliveredTools,
        references: bool,
        query: object,
        limit: object,
        score: object,
    ) -> str:
        query, limit, score = check_call(query, limit, score)
        count = self.limit if limit is None else min(limit, self.limit)
        floor = self.min_score if score is None else float(score)
        already = delivered.names
        hits = self.search(query, limit=count, min_score=floor, exclude=already)
        matching = self.search(query, min_score=floor)
        known = [hit.tool.name for hit in matching if hit.tool.name in already]
        delivered.record(hit.tool.name for hit in hits)
        return answer(query, hits, known, references=references)

    def search_tool(self, delivered: DeliveredTools, *, references: bool = False) -> Tool:
        """Return the ``tool_search`` tool for one session.

        The model calls it with ``query`` and optionally ``limit`` (capped at
        the search's ``limit``) and ``score`` (overrides ``min_score``). It
        skips definitions ``delivered`` already holds, records the ones it
        returns, and answers with each one's name, description and JSON
        parameters, or, with ``references=True``, with Anthropic
        ``tool_reference`` blocks (JSON text that
        :func:`~mellea_ctx.to_anthropic` sends as blocks) for requests shaped
        by :meth:`anthropic_tools`. Bad arguments raise
        :class:`~mellea_ctx.ToolArgumentError`.

        The definition is the same for every session, so it never moves the
        request prefix.

        Examples:
            >>> import asyncio
            >>> from mellea_ctx import tool
            >>> read_file = tool(lambda path: "", name="read_file", description="Read a text file.")
            >>> search = ToolSearch([attrs.evolve(read_file, deferred=True)])
            >>> delivered = search.delivered("s1")
            >>> finder = search.search_tool(delivered)
            >>> print(asyncio.run(finder.ainvoke('{"query": "read a file"}')))
            Loaded 1 tool definition(s); call them like any other tool.
            <BLANKLINE>
            read_file: Read a text file.
            Parameters: {"properties": {"path": {}}, "required": ["path"], "type": "object"}
            >>> delivered.names
            ('read_file',)
        """
        fix = "get one with search.delivered(session_id)"
        require_instance("ToolSearch.search_tool", "delivered", delivered, DeliveredTools, fix=fix)

        def tool_search(query: str, limit: int | None = None, score: float | None = None) -> str:
            return self._run(delivered, references, query, limit, score)

        function: Callable[..., Any] = tool_search
        return attrs.evolve(self._template, function=function)

    # -- sessions -----------------------------------------------------------------------

    def delivered(self, session_id: str) -> DeliveredTools:
        """Return the record of one session's delivered definitions, in this search's store."""
        return DeliveredTools(session_id, self.store)

    def reset_after_compaction(self, delivered: DeliveredTools) -> bool:
        """Clear the session's record after a compaction, if ``resend_after_compaction``.

        Call it when a compaction replaced the messages that carried the
        definitions: the model no longer sees them and must be able to find
        them again.

        Returns:
            Whether the record was cleared.
        """
        if not self.resend_after_compaction:
            return False
        delivered.clear()
        return True

    # -- requests -----------------------------------------------------------------------

    def offered(self, delivered: DeliveredTools) -> list[Tool]:
        """Return the tools a request should declare, for any backend.

        Every tool that is not deferred, then ``tool_search``, then the
        deferred tools this session already received, in delivery order (so
        earlier requests' tool lists stay a prefix of later ones). Chat
        Completions only accepts calls to declared tools, so a delivered tool
        must be declared to be called. With nothing deferred this is the
        catalog as given, without a search tool.
        """
        if not self._deferred:
            return list(self._tools)
        offered = [item for item in self._tools if not item.deferred]
        offered.append(self.search_tool(delivered))
        offered += [self._by_name[name] for name in delivered.names if name in self._by_name]
        return offered

    def openai_tools(self, delivered: DeliveredTools) -> list[dict[str, Any]]:
        """Return :meth:`offered` as Chat Completions function tools."""
        return [item.to_openai() for item in self.offered(delivered)]

    def anthropic_tools(
        self, delivered: DeliveredTools | None = None, *, defer_loading: bool = True
    ) -> list[dict[str, Any]]:
        """Return the ``tools`` of an Anthropic Messages request.

        With ``defer_loading`` (the default) every tool is declared on every
        request and each deferred one carries ``"defer_loading": true``: the
        API keeps it out of the prompt until a ``tool_reference`` block in a
        tool result names it, so answer searches with
        ``search_tool(delivered, references=True)``. The list never changes
        with what was delivered, so the prompt cache keeps hitting.
        ``delivered`` is not needed. Pass the list as the
        ``tools`` model option of :class:`~mellea_ctx.AnthropicBackend`.

        With ``defer_loading=False`` the request is shaped as for Chat
        Completions (:meth:`offered`, which needs ``delivered``), and the
        search answers with definitions as text.

        Raises:
            InvalidArgumentError: When ``defer_loading=False`` and no
                ``delivered`` is given.
        """
        if not defer_loading:
            if delivered is None:
                msg = (
                    "ToolSearch.anthropic_tools: defer_loading=False declares delivered tools, "
                    "so it needs delivered=search.delivered(session_id)"
                )
                raise InvalidArgumentError(msg)
            return [item.to_anthropic() for item in self.offered(delivered)]
        if not self._deferred:
            return [item.to_anthropic() for item in self._tools]
        tools = [item.to_anthropic() for item in self._tools if not item.deferred]
        tools.append(self._template.to_anthropic())
        tools += [{**item.to_anthropic(), "defer_loading": True} for item in self._deferred]
        return tools
