"""Tool search: BM25 over deferred tool definitions, each delivered once per session.

Every tool definition in a request costs tokens on every turn, and a model
choosing among dozens of tools chooses worse. Mark the rarely needed ones
``deferred`` (``@tool(deferred=True)``) and :class:`ToolSearch` keeps them out
of requests: the model gets one ``tool_search`` tool instead, searches the
deferred tools' names, descriptions and arguments with BM25 (through the
``bm25s`` package, ``pip install 'mellea-ctx[search]'``), and receives the
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
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from .._core.exceptions import InvalidArgumentError
from .._core.tools import Tool, ToolArgumentError, tool
from .._formats.anthropic import tool_references_text

__all__ = [
    "SEARCH_TOOL_NAME",
    "DeliveredTools",
    "InMemoryMetaStore",
    "MetaStore",
    "ToolHit",
    "ToolSearch",
]

#: The name the model calls the search by.
SEARCH_TOOL_NAME = "tool_search"

#: Where :class:`DeliveredTools` keeps its record in a :class:`MetaStore`.
DELIVERED_KEY = "mellea_ctx.tool_search.delivered"

CatalogPlacement = Literal["description", "system", "none"]
_PLACEMENTS = ("description", "system", "none")

# A run of letters, digits, '_' and '-' with a letter or digit in it: a word or an identifier.
_COMPOUND = re.compile(r"[\w-]*[^\W_][\w-]*")
# Letter runs and digit runs, any script.
_RUN = re.compile(r"[^\W\d_]+|\d+")
# bm25s's English list (33 words: articles, pronouns, auxiliaries); kept here so
# that tokenizing needs no import.
_STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
        "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then",
        "there", "these", "they", "this", "to", "was", "will", "with",
    }
)  # fmt: skip
_SNIPPET_CHARS = 100


def _bm25s() -> Any:
    try:
        import bm25s
    except ModuleNotFoundError as exc:
        msg = "ToolSearch needs the bm25s package: pip install 'mellea-ctx[search]'"
        raise InvalidArgumentError(msg) from exc
    return bm25s


def _stem(word: str) -> str:
    """Strip an English plural (Harman's S-stemmer): files -> file, queries -> query."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _words(compound: str) -> list[str]:
    """Split an identifier into words: at '_' and '-', letters from digits, camelCase humps.

    Examples:
        >>> _words("getHTTPResponse_v2")
        ['get', 'HTTP', 'Response', 'v', '2']
    """
    words: list[str] = []
    for run in _RUN.findall(compound):
        start = 0
        for i in range(1, len(run)):
            before, here, after = run[i - 1], run[i], run[i + 1 : i + 2]
            if (before.islower() and here.isupper()) or (
                before.isupper() and here.isupper() and after.islower()
            ):
                words.append(run[start:i])
                start = i
        words.append(run[start:])
    return words


def _terms(text: str) -> list[str]:
    """Return the index terms of ``text``: lowercased, split, stemmed, stopwords dropped.

    An identifier such as ``warehouse_stock`` or ``getInvoice`` yields its
    words and, as one more term, the whole identifier, so the exact name
    ranks its tool first.

    Examples:
        >>> _terms("Check the warehouse_stock of getInvoices")
        ['check', 'warehouse', 'stock', 'warehouse_stock', 'get', 'invoice', 'getinvoices']
    """
    out: list[str] = []
    for compound in _COMPOUND.findall(text):
        out += _compound_terms(compound)
    return out


@functools.lru_cache(maxsize=65_536)
def _compound_terms(compound: str) -> tuple[str, ...]:
    """Return the terms of one word or identifier (memoized: text repeats its words)."""
    if compound.isalpha() and compound.islower():
        return () if compound in _STOPWORDS else (_stem(compound),)
    parts = _words(compound)
    terms = [_stem(word) for word in (part.lower() for part in parts) if word not in _STOPWORDS]
    if len(parts) != 1:
        terms.append(compound.lower())
    return tuple(terms)


def _document(tool: Tool) -> list[str]:
    """Return the terms BM25 indexes for one tool.

    The name counts twice (a name says more about a tool than any one word
    of its description), then the description, then each argument's name and
    description. A name whose words are all stopwords is kept whole, so no
    document is empty.
    """
    name = _terms(tool.name) or [tool.name.lower()]
    terms = name + name + _terms(tool.description)
    for argument, schema in tool.parameters.get("properties", {}).items():
        terms += _terms(argument)
        if isinstance(schema, dict) and isinstance(schema.get("description"), str):
            terms += _terms(schema["description"])
    return terms


def _snippet(description: str) -> str:
    first = re.split(r"(?<=[.!?])\s", description.strip(), maxsplit=1)[0]
    first = " ".join(first.split())
    if len(first) > _SNIPPET_CHARS:
        first = first[: _SNIPPET_CHARS - 1].rstrip() + "…"
    return first


@runtime_checkable
class MetaStore(Protocol):
    """Per-session key/value text: where :class:`DeliveredTools` keeps its record.

    Two methods; a session store adapts in a few lines, for instance::

        class SessionMeta:
            def __init__(self, store): self.store = store
            def get(self, session_id, key): return self.store.load(session_id).meta.get(key)
            def set(self, session_id, key, value): self.store.set_meta(session_id, key, value)
    """

    def get(self, session_id: str, key: str) -> str | None:
        """Return the value under ``key`` for the session, or ``None``."""
        ...

    def set(self, session_id: str, key: str, value: str | None) -> None:
        """Store ``value`` under ``key`` for the session; ``None`` removes it."""
        ...


class InMemoryMetaStore:
    """A :class:`MetaStore` in a dict: lives as long as the object, thread-safe.

    Examples:
        >>> store = InMemoryMetaStore()
        >>> store.set("s1", "k", "v")
        >>> store.get("s1", "k"), store.get("s2", "k")
        ('v', None)
    """

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str, key: str) -> str | None:
        """Return the value under ``key`` for the session, or ``None``."""
        with self._lock:
            return self._values.get((session_id, key))

    def set(self, session_id: str, key: str, value: str | None) -> None:
        """Store ``value`` under ``key`` for the session; ``None`` removes it."""
        with self._lock:
            if value is None:
                self._values.pop((session_id, key), None)
            else:
                self._values[(session_id, key)] = value

    def __repr__(self) -> str:
        return f"InMemoryMetaStore({len(self._values)} values)"


class DeliveredTools:
    """The tool definitions one session has already received, in delivery order.

    The record lives in a :class:`MetaStore` under :data:`DELIVERED_KEY`, as
    a JSON list of names, so a durable store keeps it across restarts and
    workers. Reads go to the store each time; two searches racing in one
    session may both deliver a definition (harmless: a session's turns are
    sequential in practice).

    Args:
        session_id: The session the record belongs to.
        store: Where the record lives; ``None`` keeps it in a new
            :class:`InMemoryMetaStore` owned by this object. Use
            :meth:`ToolSearch.delivered` to share one store across requests.

    Raises:
        InvalidArgumentError: For an empty or non-string session id, or a
            store without ``get`` and ``set``.

    Examples:
        >>> delivered = DeliveredTools("s1")
        >>> delivered.record(["billing_lookup", "read_file"])
        >>> delivered.names, "read_file" in delivered
        (('billing_lookup', 'read_file'), True)
    """

    def __init__(self, session_id: str, store: MetaStore | None = None) -> None:
        if not isinstance(session_id, str) or not session_id:
            msg = f"DeliveredTools: session_id={session_id!r} must be a non-empty string"
            raise InvalidArgumentError(msg)
        if store is not None and not isinstance(store, MetaStore):
            msg = (
                f"DeliveredTools: store={store!r} has no get(session_id, key) and "
                "set(session_id, key, value); pass a MetaStore such as InMemoryMetaStore()"
            )
            raise InvalidArgumentError(msg)
        self.session_id = session_id
        self.store: MetaStore = store if store is not None else InMemoryMetaStore()

    @property
    def names(self) -> tuple[str, ...]:
        """The delivered names, oldest first (an unreadable record reads as empty)."""
        raw = self.store.get(self.session_id, DELIVERED_KEY)
        if raw is None:
            return ()
        try:
            value = json.loads(raw)
        except ValueError:
            return ()
        if not isinstance(value, list):
            return ()
        return tuple(dict.fromkeys(name for name in value if isinstance(name, str)))

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def record(self, names: Iterable[str]) -> None:
        """Add ``names`` to the record (names already there keep their place)."""
        current = self.names
        merged = tuple(dict.fromkeys((*current, *names)))
        if merged != current:
            self.store.set(self.session_id, DELIVERED_KEY, json.dumps(list(merged)))

    def clear(self) -> None:
        """Forget every delivery of this session."""
        self.store.set(self.session_id, DELIVERED_KEY, None)

    def __repr__(self) -> str:
        return f"DeliveredTools({self.session_id!r}, {len(self.names)} delivered)"


@attrs.define(frozen=True, slots=True)
class ToolHit:
    """One search result: a deferred tool and its BM25 score (higher is better)."""

    tool: Tool
    score: float


def _check_int(owner: str, name: str, value: object, *, minimum: int, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        msg = f"{owner}: {name}={value!r} must be an int >= {minimum}; {hint}"
        raise InvalidArgumentError(msg)
    return value


def _check_float(
    owner: str, name: str, value: object, *, low: float, high: float, hint: str
) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        if low == -math.inf:
            expected = "a finite number"
        elif high == math.inf:
            expected = f"a number >= {low}"
        else:
            expected = f"a number in [{low}, {high}]"
        msg = f"{owner}: {name}={value!r} must be {expected}; {hint}"
        raise InvalidArgumentError(msg)
    return float(value)


_INF = math.inf


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
            (for your system prompt), ``"none"`` lists nothing. The list names
            every deferred tool, delivered or not, so the request prefix stays
            the same from turn to turn and the prompt cache keeps hitting.
        catalog_snippets: Follow each listed name with the first sentence of
            its description.
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
        resend_after_compaction: bool = True,
        store: MetaStore | None = None,
    ) -> None:
        owner = "ToolSearch"
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
        self.limit = _check_int(owner, "limit", limit, minimum=1, hint="pass 1 or more")
        self.min_score = _check_float(
            owner, "min_score", min_score, low=-_INF, high=_INF, hint="0.0 finds any match"
        )
        self.k1 = _check_float(owner, "k1", k1, low=0.0, high=_INF, hint="the usual is 1.2-2.0")
        self.b = _check_float(owner, "b", b, low=0.0, high=1.0, hint="the usual is 0.75")
        if catalog not in _PLACEMENTS:
            msg = f"{owner}: catalog={catalog!r} must be one of {', '.join(map(repr, _PLACEMENTS))}"
            raise InvalidArgumentError(msg)
        for flag, value in (
            ("catalog_snippets", catalog_snippets),
            ("resend_after_compaction", resend_after_compaction),
        ):
            if not isinstance(value, bool):
                msg = f"{owner}: {flag}={value!r} must be True or False"
                raise InvalidArgumentError(msg)
        if store is not None and not isinstance(store, MetaStore):
            msg = (
                f"{owner}: store={store!r} has no get(session_id, key) and "
                "set(session_id, key, value); pass a MetaStore such as InMemoryMetaStore()"
            )
            raise InvalidArgumentError(msg)
        self.catalog: CatalogPlacement = catalog
        self.catalog_snippets = catalog_snippets
        self.resend_after_compaction = resend_after_compaction
        self.store: MetaStore = store if store is not None else InMemoryMetaStore()
        self._tools = catalogue
        self._deferred = tuple(item for item in catalogue if item.deferred)
        self._by_name = {item.name: item for item in self._deferred}
        self._index: Any = None
        if self._deferred:
            bm25s = _bm25s()
            self._index = bm25s.BM25(k1=self.k1, b=self.b, dtype="float64")
            self._index.index([_document(item) for item in self._deferred], show_progress=False)
        self._template = self._build_search_tool()

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
        ids = self._index.get_tokens_ids(list(dict.fromkeys(_terms(query))))
        if not ids:
            return {item.name: 0.0 for item in self._deferred}
        values = self._index.get_scores_from_ids(ids)
        return {item.name: float(value) for item, value in zip(self._deferred, values, strict=True)}

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
        count = _check_int(owner, "limit", count, minimum=1, hint="pass 1 or more")
        floor = self.min_score if min_score is None else min_score
        floor = _check_float(owner, "min_score", floor, low=-_INF, high=_INF, hint="pass 0.0")
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
        lines = []
        for item in sorted(self._deferred, key=lambda t: t.name):
            if self.catalog_snippets:
                lines.append(f"- {item.name}: {_snippet(item.description)}")
            else:
                lines.append(f"- {item.name}")
        return lines

    def catalog_text(self) -> str:
        """Return the list of searchable tools for the system prompt, when ``catalog="system"``.

        Empty for the other placements and when nothing is deferred, so it can
        be appended unconditionally.
        """
        if self.catalog != "system" or not self._deferred:
            return ""
        header = (
            f"These tools are available through {SEARCH_TOOL_NAME}; search for one "
            "to load its definition before calling it:"
        )
        return "\n".join([header, *self._catalog_lines()])

    def _build_search_tool(self) -> Tool:
        description = (
            "Search the tools that are not loaded yet and load the definitions that match. "
            "Use keywords for what you need to do, or a tool's exact name; the matching "
            "tools can then be called like any other."
        )
        if self.catalog == "description" and self._deferred:
            description += "\n\nSearchable tools:\n" + "\n".join(self._catalog_lines())

        def tool_search(query: str, limit: int | None = None, score: float | None = None) -> str:
            raise NotImplementedError  # only the schema is read; see search_tool

        tool_search.__doc__ = f"""Search the deferred tools.

        Args:
            query: Keywords for what you need to do, or a tool's exact name.
            limit: At most this many definitions (default and maximum {self.limit}).
            score: Only tools scoring strictly above this BM25 score (default {self.min_score}).
        """
        return tool(name=SEARCH_TOOL_NAME, description=description)(tool_search)

    def _run(
        self,
        delivered: DeliveredTools,
        references: bool,
        query: object,
        limit: object,
        score: object,
    ) -> str:
        if not isinstance(query, str):
            msg = f"{SEARCH_TOOL_NAME}: query={query!r} must be a string of keywords"
            raise ToolArgumentError(msg)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            msg = f"{SEARCH_TOOL_NAME}: limit={limit!r} must be an integer >= 1, or left out"
            raise ToolArgumentError(msg)
        if score is not None and (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            msg = f"{SEARCH_TOOL_NAME}: score={score!r} must be a finite number, or left out"
            raise ToolArgumentError(msg)
        count = self.limit if limit is None else min(limit, self.limit)
        floor = self.min_score if score is None else float(score)
        already = delivered.names
        hits = self.search(query, limit=count, min_score=floor, exclude=already)
        matching = self.search(query, min_score=floor)
        known = [hit.tool.name for hit in matching if hit.tool.name in already]
        delivered.record(hit.tool.name for hit in hits)
        if hits and references:
            return tool_references_text(hit.tool.name for hit in hits)
        loaded = f"Already loaded, call directly: {', '.join(known)}." if known else ""
        if not hits:
            return " ".join(filter(None, [f"No new tool matches {query!r}.", loaded]))
        parts = [f"Loaded {len(hits)} tool definition(s); call them like any other tool."]
        for hit in hits:
            parts.append(
                f"{hit.tool.name}: {hit.tool.description}\nParameters: {hit.tool.schema_json}"
            )
        if loaded:
            parts.append(loaded)
        return "\n\n".join(parts)

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
        if not isinstance(delivered, DeliveredTools):
            msg = (
                f"ToolSearch.search_tool: delivered={delivered!r} must be a DeliveredTools; "
                "get one with search.delivered(session_id)"
            )
            raise InvalidArgumentError(msg)

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
