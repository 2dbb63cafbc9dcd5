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

Given tools, it can also drive an agent loop offline (:meth:`ExtractiveBackend.next_step`):
it calls each tool whose description shares words with the goal, once, then
answers with the most informative sentences of the results. That is enough to
run ``react`` end to end with no key and no network, and no more.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from .._core.checks import require_int, require_number
from .._core.components import Component, ModelOutputThunk, ReactInitiator, ToolCall, Usage
from .._core.ledger import LISTING_LINE, derive_ledger, strip_label
from .._core.protocols import BaseBackend
from .._core.tokens import count_all, default_counter
from .._core.tools import Tool
from .._formats.quoted import read_transcript
from .windows import check_window

# The transcript block: the tags stand on lines of their own (the prompt's
# instructions may mention the tags in running text).
# The final turn of a continuation summary request (mellea_ctx/_compaction/continuation.py).
_CONTINUATION = re.compile(r'^<checkpoint_request first="(\d+)" keep_last="(\d+)">', re.M)
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


# Tools an agent loop adds for its own housekeeping; the offline agent leaves them be.
_HOUSEKEEPING = frozenset({"compact_context", "recall", "tool_search"})
_QUOTED = re.compile(r"[\"“']([^\"”']{1,200})[\"”']")
_PATHLIKE = re.compile(r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.[A-Za-z]{1,5}\b")
_INTEGER = re.compile(r"-?\b\d+\b")
_NUMBER = re.compile(r"-?\b\d+(?:\.\d+)?\b")


def _integer_from(goal: str) -> int:
    found = _INTEGER.search(goal)
    return int(found.group(0)) if found else 1


def _number_from(goal: str) -> float:
    found = _NUMBER.search(goal)
    return float(found.group(0)) if found else 1.0


def _text_from(goal: str) -> str:
    """A quoted string of the goal, else a path in it, else the goal itself."""
    quoted = _QUOTED.search(goal)
    if quoted:
        return quoted.group(1)
    pathlike = _PATHLIKE.search(goal)
    return pathlike.group(0) if pathlike else goal


# How an argument of each JSON Schema type is filled from the goal (any other: its text).
_FILL_BY_TYPE: dict[str, Callable[[str], Any]] = {
    "integer": _integer_from,
    "number": _number_from,
    "boolean": lambda _goal: True,
    "array": lambda _goal: [],
    "object": lambda _goal: {},
}


def _arguments_for(chosen: Tool, goal: str) -> str:
    """Fill a tool's required arguments from the goal's text."""
    schema = chosen.parameters
    properties = schema.get("properties", {})
    values: dict[str, Any] = {}
    for name in schema.get("required", []):
        enum = properties.get(name, {}).get("enum")
        if enum:
            values[name] = enum[0]
            continue
        kind = properties.get(name, {}).get("type")  # a list of types is not a key: text
        fill = _FILL_BY_TYPE.get(kind, _text_from) if isinstance(kind, str) else _text_from
        values[name] = fill(goal)
    return json.dumps(values, ensure_ascii=False)


@attrs.define(frozen=True, slots=True)
class _Sentence:
    position: int
    speaker: str
    text: str
    tokens: int


def _speaker(header: str) -> str:
    if " called " in header:
        return "call"  # a tool call's arguments: data, not a sentence
    return header.split()[0] if header else "text"


def _sentences(
    text: str,
    start: int = 0,
    end: int | None = None,
    keep: Callable[[str, str], bool] | None = None,
) -> list[_Sentence]:
    """The sentences of ``text[start:end]`` (``start`` is 0 or follows a newline).

    With ``keep``, only those it keeps (given speaker and text) are made, each at
    the position it has among all of them.
    """
    counter = default_counter()
    found: list[_Sentence] = []
    stop = len(text) if end is None else end
    headers = list(_HEADER.finditer(text, start, stop))

    def bodies() -> Iterator[tuple[str, str]]:  # one at a time, not a second copy of text
        if not headers:
            yield "text", text[start:stop]
        for index, header in enumerate(headers):
            until = headers[index + 1].start() if index + 1 < len(headers) else stop
            yield header.group(1), text[header.end() : until]

    counts: dict[str, int] = {}  # a sentence said again is counted once (issue 24)
    position = 0
    for label, body in bodies():
        speaker = _speaker(label)
        for piece in _SENTENCE_BREAK.split(body):
            piece = piece.strip()
            if len(piece) < 12 or not _WORD.search(piece):
                continue
            if len(piece) > 400:
                piece = piece[:400].rstrip() + " …"
            position += 1
            if keep is not None and not keep(speaker, piece):
                continue
            tokens = counts.get(piece)
            if tokens is None:
                tokens = counts[piece] = counter.count_text(piece) + 3
            found.append(_Sentence(position - 1, speaker, piece, tokens))
    return found


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOPWORDS]


def _continued_span(messages: Sequence[Component], asked: re.Match[str]) -> str:
    """The transcript of the messages a ``<checkpoint_request>`` names."""
    first, keep = int(asked.group(1)), int(asked.group(2))
    span = messages[first : len(messages) - 1 - keep]
    return "\n\n".join(f"[{m.role}] {m.content}" for m in span if m.content)


def _current_goal(messages: Sequence[Component]) -> tuple[str, Sequence[Component]]:
    """The goal and the messages that count for it.

    The newest ``ReactInitiator`` and what followed it; without one, the first
    user message's text and every message.
    """
    starts = [i for i, m in enumerate(messages) if isinstance(m, ReactInitiator)]
    if starts:
        return messages[starts[-1]].content, messages[starts[-1] :]
    return next((m.content for m in messages if m.role == "user"), ""), messages


def _best_tool(tools: Sequence[Tool], called: set[str], goal: str) -> Tool | None:
    """The tool not called yet that shares most words with the goal (ties: the greater name).

    ``None`` when none shares any; housekeeping tools are never chosen.
    """
    wanted = set(_words(goal))
    best: tuple[int, str] | None = None
    chosen: Tool | None = None
    for candidate in tools:
        if candidate.name in called or candidate.name in _HOUSEKEEPING:
            continue
        text = " ".join(
            [candidate.name.replace("_", " "), candidate.description, candidate.schema_json]
        )
        overlap = len(wanted & set(_words(text)))
        if overlap and (best is None or (overlap, candidate.name) > best):
            best, chosen = (overlap, candidate.name), candidate
    return chosen


@attrs.define(frozen=True, slots=True)
class ExtractiveBackend(BaseBackend):
    """Summarize by extraction, offline: the most informative sentences, verbatim.

    It reads the conversation between ``<conversation>`` tags in the last
    message it is given (the whole last message when there are none; for a
    continuation request, whose last message is a ``<checkpoint_request>``,
    the messages it names), and answers within ``model_options["max_tokens"]``
    tokens, or ``ratio`` of the input's tokens when that option is absent.

    Args:
        ratio: The share of the input's tokens to aim for without a
            ``max_tokens`` option (between 0 and 1).
        min_tokens: The smallest budget it will work with.
        context_window: A window in tokens to simulate (``None``: unbounded);
            the summary engine fits what it sends into it.

    Examples:
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
    context_window: int | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        check_window("ExtractiveBackend", self.context_window)
        require_int("ExtractiveBackend", "min_tokens", self.min_tokens)
        require_number(
            "ExtractiveBackend",
            "ratio",
            self.ratio,
            minimum=0,
            maximum=1,
            above=True,
            fix="try 0.25",
        )

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Summarize the conversation in the last message, or act as a simple offline agent.

        Given a summary request (a ``<conversation>`` block), it summarizes. Given
        tools and no summary request, it plays an agent: see :meth:`next_step`.
        """
        prompt = messages[-1].content if messages else ""
        match = _CONVERSATION.search(prompt)
        counter = default_counter()
        # Memoized: the summary engine has counted this request already (issue 24).
        input_tokens = count_all(counter, messages)
        asked = _CONTINUATION.search(prompt) if match is None else None
        if asked is not None:  # a continuation request: summarize the span it names
            prompt = _continued_span(messages, asked)
        elif match is None and tools:
            step = self.next_step(messages, tools)
            completion = counter.count(step)
            usage = Usage(prompt_tokens=input_tokens, completion_tokens=completion)
            return ModelOutputThunk(step.value, tool_calls=step.tool_calls, usage=usage)
        # The transcript is read where it stands in the prompt, not copied out of it: on a
        # long span it is most of the prompt, four bytes a character when any one
        # character is outside Latin-1 (issue 24).
        start, end = match.span(1) if match else (0, len(prompt))
        budget = self._budget(options, prompt, start, end)
        summary = self._summarize(prompt, budget, start, end)
        completion = counter.count_text(summary)
        return ModelOutputThunk(
            summary,
            usage=Usage(prompt_tokens=input_tokens, completion_tokens=completion),
        )

    def _budget(self, options: Mapping[str, Any], prompt: str, start: int, end: int) -> int:
        """The summary's budget: ``max_tokens`` when a positive int, else ``ratio`` of the input."""
        budget = options.get("max_tokens")
        if isinstance(budget, int) and budget > 0:
            return budget
        counted = default_counter().count_text(prompt[start:end])
        return max(self.min_tokens, int(counted * self.ratio))

    def next_step(self, messages: Sequence[Component], tools: Sequence[Tool]) -> ModelOutputThunk:
        """Choose the next agent step offline: call one more relevant tool, or answer.

        The goal is the newest ``ReactInitiator`` (else the first user
        message); only what followed it counts. When a ``tool_search`` tool is
        offered, it first searches with the goal. Then each tool not called
        yet is scored by the words it shares with the goal (its name,
        description and argument descriptions); the best one that shares any
        is called once, its required arguments filled from the goal (a quoted
        string, a path, a number) or with the goal itself. When no such tool
        is left, the answer is the most informative sentences of the tool
        results. Deterministic, and honest about being word overlap, not
        reasoning: for demos, tests and offline runs.
        """
        # Call ids must be unique in the whole history, earlier goals included.
        number = sum(1 for m in messages for _ in m.tool_calls) + 1
        goal, messages = _current_goal(messages)
        called = {call.name for m in messages for call in m.tool_calls}
        if "tool_search" not in called and any(t.name == "tool_search" for t in tools):
            query = json.dumps({"query": goal}, ensure_ascii=False)
            call = ToolCall(f"call_{number}", "tool_search", query)
            return ModelOutputThunk("Searching the tool catalog.", tool_calls=[call])
        chosen = _best_tool(tools, called, goal)
        if chosen is not None:
            call = ToolCall(f"call_{number}", chosen.name, _arguments_for(chosen, goal))
            return ModelOutputThunk(f"Calling {chosen.name}.", tool_calls=[call])
        return self._report(messages)

    def _report(self, messages: Sequence[Component]) -> ModelOutputThunk:
        """The final answer: the most informative sentences of the tool results."""
        results = "\n".join(
            f"[tool] {m.content}"
            for m in messages
            if m.tool_call_id and m.name not in _HOUSEKEEPING
        )
        if not results:
            return ModelOutputThunk("No tool matched the goal, so there is nothing to report.")
        counter = default_counter()
        budget = max(self.min_tokens, int(counter.count_text(results) * self.ratio))
        answer = _pick(_sentences(results), budget) or results[:200]
        return ModelOutputThunk("From the tool results:\n" + answer)

    def summarize(self, text: str, budget: int) -> str:
        """Return the extractive summary of ``text`` in at most ``budget`` tokens.

        It writes what happened: the most informative sentences of what the
        user and the agent wrote (a sub-agent's findings included), verbatim,
        in their original order. The state a checkpoint carries as data (the
        user's rules, constraints and preferences, facts, files, commands and
        their outcomes: :func:`~mellea_ctx.derive_ledger` over the
        components the transcript was rendered from) is left to the
        checkpoint's ledger, and a statement a later one superseded is never
        repeated; tool-call arguments are never quoted, nor a tool output's lines
        of data (JSON, markup, a read file's numbered lines, lines of code), nor a
        refrain (a sentence said verbatim three times or more: an acknowledgement,
        a status line). With nothing else to say, it is the line "Their state
        follows." (the checkpoint's header gives the count). The result, counted
        as a whole under ``o200k_base``, is never over ``budget``.

        Examples:
            >>> ExtractiveBackend().summarize("[user] Ship the build to staging today.", 40)
            '- user: Ship the build to staging today.'
            >>> said = "[user] Never push to main.\\n[assistant] The parser fails on tabs."
            >>> ExtractiveBackend().summarize(said, 40)
            '- assistant: The parser fails on tabs.'
        """
        return self._summarize(text, budget, 0, len(text))

    def _summarize(self, text: str, budget: int, start: int, end: int) -> str:
        """:meth:`summarize` of ``text[start:end]``, read in place (``start`` follows a newline)."""
        if budget <= 0:
            return ""
        counter = default_counter()
        components = read_transcript(text, start=start, end=end)
        ledger = derive_ledger(components, names=False)  # only the user's statements count
        carried = [
            value
            for entry in ledger.entries
            if entry.source == "user" and entry.key != "goal"  # requests tell what happened
            for value in (entry.value, *entry.superseded)
        ]
        del components, ledger  # a long span's are big; the sentences come next (issue 24)
        sentences = _sentences(
            text,
            start,
            end,
            # Tool-call arguments are data; a tool's output may say what happened.
            lambda speaker, said: (
                speaker != "call" and not _is_data(said) and not _carried(said, carried)
            ),
        )
        # The checkpoint's header says how many messages there were: the fallback does not.
        fallback = "Their state follows."
        summary = _pick(_news(sentences), budget)
        if summary:
            return summary
        return fallback if counter.count_text(fallback) <= budget else ""


# How much what each speaker says weighs against what the agent says (1).
_SPEAKER_WEIGHT = {"user": 1.6, "tool": 0.7}
# A sentence said this many times in a span is a refrain, not news.
_REFRAIN = 3


def _news(sentences: list[_Sentence]) -> list[_Sentence]:
    """``sentences`` but the refrains: a sentence said verbatim :data:`_REFRAIN` times or more
    (an acknowledgement, a status line, a template's line) tells nothing of what happened."""
    said = Counter(sentence.text for sentence in sentences)
    return [sentence for sentence in sentences if said[sentence.text] < _REFRAIN]


def _pick(sentences: list[_Sentence], budget: int) -> str:
    """The most informative ``sentences`` in their order, within ``budget`` tokens ("" if none)."""
    if not sentences or budget <= 0:
        return ""
    ranked = _ranked(sentences)
    return _fit(_greedy(ranked, budget), budget)


def _ranked(sentences: list[_Sentence]) -> list[_Sentence]:
    """``sentences``, most informative first: rare words, the user's, outcomes, later ones."""
    # Each sentence's distinct words, in set order, as a tuple of shared strings: a set
    # per sentence and a copy of each word per sentence cost most of the memory of a
    # 100,000-message span (issue 24).
    shared: dict[str, str] = {}
    keep = shared.setdefault
    documents = [tuple([keep(w, w) for w in set(_words(s.text))]) for s in sentences]
    frequency: Counter[str] = Counter()
    for words in documents:
        frequency.update(words)
    total = len(sentences)
    # Each word's weight once, not once per sentence that has it: the same floats.
    rarity = {w: math.log(1 + total / n) for w, n in frequency.items()}

    def score(sentence: _Sentence, words: tuple[str, ...]) -> float:
        weight = sum(map(rarity.__getitem__, words))
        weight /= math.sqrt(max(len(words), 1))
        if sentence.speaker in _SPEAKER_WEIGHT:
            weight *= _SPEAKER_WEIGHT[sentence.speaker]
        if _OUTCOME.search(sentence.text):
            weight *= 1.4
        return weight * (1 + 0.5 * sentence.position / total)

    ranked = sorted(
        zip(sentences, documents, strict=True),
        key=lambda pair: score(*pair),
        reverse=True,
    )
    return [sentence for sentence, _ in ranked]


def _greedy(ranked: list[_Sentence], budget: int) -> list[_Sentence]:
    """The best of ``ranked`` whose estimated tokens fit ``budget``, each text once."""
    chosen: list[_Sentence] = []
    seen: set[str] = set()
    spent = 0
    for sentence in ranked:
        if sentence.text in seen or spent + sentence.tokens > budget:
            continue
        chosen.append(sentence)
        seen.add(sentence.text)
        spent += sentence.tokens
    return chosen


def _fit(chosen: list[_Sentence], budget: int) -> str:
    """``chosen`` in their order, the least informative dropped until the exact count fits."""
    # ``tokens`` estimates each line; the whole is checked exactly here.
    counter = default_counter()
    while chosen:
        ordered = sorted(chosen, key=lambda s: s.position)
        summary = "\n".join(f"- {s.speaker}: {s.text}" for s in ordered)
        if counter.count_text(summary) <= budget:
            return summary
        chosen.pop()  # the least informative sentence left
    return ""


def _carried(sentence: str, carried: list[str]) -> bool:
    """Whether a ledger statement (current or superseded) holds ``sentence`` or it holds one."""
    bare = strip_label(sentence)
    return any(bare in value or value in sentence for value in carried)


# How a line of code ends (a statement, a block, an item of a literal): never a sentence's end.
_CODE_ENDS = (";", "{", "}", "};")


def _is_data(text: str) -> bool:
    """A line of JSON, code or markup rather than a sentence someone wrote.

    Examples:
        >>> _is_data("12→      body { margin: 0; }"), _is_data("The parser fails on tabs.")
        (True, False)
    """
    stripped = text.strip()
    if stripped[:1] in "{[<" or stripped.startswith(("```", "$ ", ">>>")):
        return True
    if LISTING_LINE.match(stripped) or stripped.endswith(_CODE_ENDS):
        return True  # a file's line as a read tool shows it, or a line of code
    symbols = sum(1 for ch in stripped if ch in '{}[]<>=;"\\|`')
    return symbols > max(4, len(stripped) // 12)
