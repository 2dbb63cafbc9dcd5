"""BM25 over tool definitions: the terms a tool is indexed by, the index, a hit.

A tool's document is its name (twice), its description and its arguments'
names and descriptions, reduced to terms: lowercased, identifiers split into
words (and kept whole as one more term), English plurals stripped, a few
stopwords dropped. The index ranks through the ``bm25s`` package
(``pip install '.[search]' in the clone``), imported only when one is built.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import attrs

from .._core.exceptions import InvalidArgumentError
from .._core.tools import Tool

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


def _bm25s() -> Any:
    try:
        import bm25s
    except ModuleNotFoundError as exc:
        msg = "ToolSearch needs the bm25s package: pip install '.[search]' in the mellea-ctx clone"
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


@attrs.define(frozen=True, slots=True)
class ToolHit:
    """One search result: a deferred tool and its BM25 score (higher is better)."""

    tool: Tool
    score: float


class ToolIndex:
    """A BM25 index over some tools' definitions, built once and only read after.

    Args:
        tools: The tools to index, in the order their scores are reported.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalization.

    Raises:
        InvalidArgumentError: When bm25s is not installed.
    """

    def __init__(self, tools: Sequence[Tool], *, k1: float, b: float) -> None:
        self.tools = tuple(tools)
        bm25s = _bm25s()
        self._bm25 = bm25s.BM25(k1=k1, b=b, dtype="float64")
        self._bm25.index([_document(item) for item in self.tools], show_progress=False)

    def scores(self, query: str) -> dict[str, float]:
        """Return every tool's BM25 score for ``query``, by name (a repeated term counts once)."""
        ids = self._bm25.get_tokens_ids(list(dict.fromkeys(_terms(query))))
        if not ids:
            return {item.name: 0.0 for item in self.tools}
        values = self._bm25.get_scores_from_ids(ids)
        return {item.name: float(value) for item, value in zip(self.tools, values, strict=True)}
