"""``ExtractiveBackend``: an offline summarizer that needs no key, network or model.

It is not a language model and does not pretend to be one. Asked to
summarize, it picks the most informative sentences of the conversation,
verbatim, in their original order, within a token budget, and lists the
exact details (paths, ids, commands, numbers, user constraints) it found. It
never invents a word: everything it writes was in its input.

Sentences are scored by how much rare vocabulary they carry (a TF-IDF weight
with each sentence as a document), with bonuses for exact details, for what
the user said, for words that mark outcomes (``error``, ``fixed``,
``decided``, ...), and for recency. It is what the command line's
``--summarize`` uses by default, so the summarize strategy works on a fresh,
offline machine.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ._components import Component, Message, ModelOutputThunk, Usage
from ._exceptions import InvalidArgumentError
from ._facts import extract_facts
from ._tokens import default_counter
from ._tools import Tool

__all__ = ["ExtractiveBackend"]

# The transcript block: the tags stand on lines of their own (the prompt's
# instructions may mention the tags in running text).
_CONVERSATION = re.compile(r"^<conversation>\n(.*)\n</conversation>$", re.S | re.M)
_HEADER = re.compile(r"^\[([^\]\n]{1,80})\] ?", re.M)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|\d[\d.,]*")
_OUTCOME = re.compile(
    r"\b(?:error|errors|failed|fails|failure|fixed|fix|decided|decision|because|cause|"
    r"root cause|resolved|done|todo|next|remaining|must|never|always|result|works|passed)\b",
    re.I,
)
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "that",
        "this",
        "with",
        "from",
        "have",
        "has",
        "was",
        "were",
        "are",
        "not",
        "but",
        "you",
        "your",
        "they",
        "them",
        "then",
        "than",
        "there",
        "their",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "would",
        "can",
        "could",
        "should",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "also",
        "just",
        "like",
        "some",
        "such",
        "only",
        "very",
        "more",
        "most",
        "other",
        "each",
        "been",
        "being",
        "its",
        "it's",
        "let's",
        "here",
        "use",
        "using",
        "used",
    ]
)


@attrs.define(frozen=True, slots=True)
class _Sentence:
    position: int
    speaker: str
    text: str
    tokens: int


def _speaker(header: str) -> str:
    return header.split()[0] if header else "text"


def _sentences(text: str) -> list[_Sentence]:
    counter = default_counter()
    found: list[_Sentence] = []
    headers = list(_HEADER.finditer(text))
    spans: list[tuple[str, str]] = []
    if not headers:
        spans.append(("text", text))
    else:
        for index, header in enumerate(headers):
            end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
            spans.append((header.group(1), text[header.end() : end]))
    for label, body in spans:
        speaker = _speaker(label)
        for piece in _SENTENCE_BREAK.split(body):
            piece = piece.strip()
            if len(piece) < 12 or not _WORD.search(piece):
                continue
            if len(piece) > 400:
                piece = piece[:400].rstrip() + " …"
            found.append(_Sentence(len(found), speaker, piece, counter.count_text(piece) + 3))
    return found


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOPWORDS]


@attrs.define(frozen=True, slots=True)
class ExtractiveBackend:
    """Summarize by extraction, offline: the most informative sentences, verbatim.

    It reads the conversation between ``<conversation>`` tags in the last
    message it is given (the whole last message when there are none), and
    answers within ``model_options["max_tokens"]`` tokens, or ``ratio`` of the
    input's tokens when that option is absent.

    Args:
        ratio: The share of the input's tokens to aim for without a
            ``max_tokens`` option (between 0 and 1).
        min_tokens: The smallest budget it will work with.

    Example:
        >>> import asyncio
        >>> from mellea_ctx import Message
        >>> said = "[user] Deploy to staging only. The build failed with error E42."
        >>> prompt = Message("user", f"<conversation>\\n{said}\\n</conversation>")
        >>> out = asyncio.run(ExtractiveBackend().generate([prompt]))
        >>> "error E42" in out.value
        True
    """

    ratio: float = 0.25
    min_tokens: int = 64

    def __attrs_post_init__(self) -> None:
        if not 0 < self.ratio <= 1:
            msg = f"ExtractiveBackend: ratio={self.ratio!r} must be in (0, 1]; try 0.25"
            raise InvalidArgumentError(msg)

    async def generate(
        self,
        messages: Sequence[Component],
        *,
        model_options: Mapping[str, Any] | None = None,
        tools: Sequence[Tool] | None = None,
    ) -> ModelOutputThunk:
        """Return an extractive summary of the conversation in the last message."""
        prompt = messages[-1].content if messages else ""
        match = _CONVERSATION.search(prompt)
        text = match.group(1) if match else prompt
        counter = default_counter()
        input_tokens = sum(counter.count(message) for message in messages)
        options = dict(model_options or {})
        budget = options.get("max_tokens")
        if not isinstance(budget, int) or budget <= 0:
            budget = max(self.min_tokens, int(counter.count_text(text) * self.ratio))
        summary = self.summarize(text, budget)
        completion = counter.count_text(summary)
        return ModelOutputThunk(
            summary,
            usage=Usage(prompt_tokens=input_tokens, completion_tokens=completion),
        )

    def summarize(self, text: str, budget: int) -> str:
        """Return the extractive summary of ``text`` in at most about ``budget`` tokens."""
        sentences = _sentences(text)
        if not sentences:
            return ""
        counter = default_counter()
        facts = extract_facts([Message("user", text)], limit=12, max_chars=600)
        detail_line = "Exact details: " + "; ".join(f.text for f in facts) if facts else ""
        budget -= counter.count_text(detail_line) if detail_line else 0
        documents = [set(_words(s.text)) for s in sentences]
        frequency: Counter[str] = Counter()
        for words in documents:
            frequency.update(words)
        total = len(sentences)
        fact_texts = [f.text for f in facts]

        def score(sentence: _Sentence, words: set[str]) -> float:
            weight = sum(math.log(1 + total / frequency[w]) for w in words)
            weight /= math.sqrt(max(len(words), 1))
            if sentence.speaker == "user":
                weight *= 1.6
            elif sentence.speaker == "tool":
                weight *= 0.7
            if _OUTCOME.search(sentence.text):
                weight *= 1.4
            if any(fact in sentence.text for fact in fact_texts):
                weight *= 1.3
            return weight * (1 + 0.5 * sentence.position / total)

        ranked = sorted(
            zip(sentences, documents, strict=True),
            key=lambda pair: score(*pair),
            reverse=True,
        )
        chosen: list[_Sentence] = []
        spent = 0
        for sentence, _ in ranked:
            if spent + sentence.tokens > budget:
                continue
            chosen.append(sentence)
            spent += sentence.tokens
        chosen.sort(key=lambda s: s.position)
        lines = [f"- {s.speaker}: {s.text}" for s in chosen]
        if detail_line:
            lines.append(detail_line)
        return "\n".join(lines)
