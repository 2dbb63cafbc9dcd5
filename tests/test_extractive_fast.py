"""The big-compaction paths of issue 24 give exactly what the straightforward code gave.

- ``_defines`` finds the newest file entry of a call id through ``_Reads``'
  index; the plain code scanned ``found`` back from its end.
- ``_used`` looks for each id once, from the newest mention; the plain code
  tested every later mention for every fact.
- ``_pick`` weighs each word once (``rarity``); the plain code took the
  logarithm per word per sentence. ``_sentences`` counts a repeated sentence once.

Each reference below is the code as it stood before (kept here, not in the
package, so the two cannot drift together), and each property compares the two
on inputs hypothesis builds with few distinct values, so that ids, anchors,
sources and sentences collide often, spaces included.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import ExtractiveBackend, Message, ToolCall, ToolMessage, derive_ledger
from mellea_ctx._backends import extractive
from mellea_ctx._compaction.prompts import (
    DEFAULT_PROMPT_TEMPLATE,
    fill_template,
    validate_prompt_template,
)
from mellea_ctx._core import ledger
from mellea_ctx._core.ledger import LedgerEntry
from mellea_ctx._core.tokens import default_counter
from mellea_ctx._formats.quoted import read_transcript, render_conversation

from .strategies import histories

# Few symbols, so that values collide; "\0" is the separator _used joins with.
_PIECES = st.sampled_from(
    ["a", "b", "ab", " ", "\0", "call", "x y", "id_1", "/", "HAT028", "user_123"]
)
_SHORT = st.lists(_PIECES, max_size=5).map("".join)


def _plain_defines(found: list[LedgerEntry], call_id: str, output: str) -> None:
    for position in range(len(found) - 1, -1, -1):
        entry = found[position]
        if entry.kind == "file" and entry.source.endswith(f" {call_id}"):
            names = list(
                dict.fromkeys(ledger._DEFINITION.findall(ledger.LISTING_LINE.sub("", output)))
            )
            if names:
                shown = ", ".join(names[: ledger._DEFINED]) + (
                    ", …" if len(names) > ledger._DEFINED else ""
                )
                path = entry.key[len("file:") :]
                found[position] = attrs.evolve(entry, value=f"{path} (read; defines {shown})")
            return


def _plain_used(found: list[LedgerEntry], mentions: list[tuple[int, str]]) -> list[LedgerEntry]:
    out = list(found)
    for position, entry in enumerate(found):
        if entry.kind != "fact" or not entry.key.startswith("fact:"):
            continue
        anchor = entry.key[len("fact:") :]
        ids = [anchor] if len(anchor) >= 3 else []
        ids += [m.group(0) for m in ledger._CODE_ID.finditer(entry.value)]
        ids += ledger._SNAKE_ID.findall(entry.value)
        later = [text for after, text in mentions if after > position]
        if any(i in text for i in ids for text in later):
            out[position] = attrs.evolve(entry, state="used")
    return out


_ENTRIES = st.builds(
    lambda kind, key, source: LedgerEntry(kind, f"{kind}:{key}", key or "v", source=source),
    st.sampled_from(["file", "fact", "command"]),
    _SHORT,
    st.lists(_PIECES, max_size=4).map(" ".join),
)
# A step: append entries (and tag the new file entries with a call id, as a
# tool call does), or look one call id up with an output defining names.
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(_ENTRIES, max_size=3), _SHORT),
        st.tuples(st.just("look"), _SHORT, st.sampled_from(["def f():", "class A:\nx", ""])),
        st.tuples(st.just("reset"), st.just(""), st.just("")),
    ),
    max_size=12,
)


@settings(max_examples=300)
@given(_STEPS)
def test_defines_index_agrees_with_the_backward_scan(steps: list[tuple[object, ...]]) -> None:
    fast: list[LedgerEntry] = []
    plain: list[LedgerEntry] = []
    reads = ledger._Reads()
    for step in steps:
        if step[0] == "reset":  # a checkpoint starts a new list
            fast, plain = [], []
        elif step[0] == "add":
            entries, call_id = step[1], step[2]
            assert isinstance(entries, list) and isinstance(call_id, str)
            for found in (fast, plain):
                before = len(found)
                found.extend(entries)
                for position in range(before, len(found)):
                    entry = found[position]
                    if entry.kind == "file" and call_id:
                        found[position] = attrs.evolve(entry, source=f"{entry.source} {call_id}")
        else:
            call_id, output = step[1], step[2]
            assert isinstance(call_id, str) and isinstance(output, str)
            ledger._defines(fast, call_id, output, reads)
            _plain_defines(plain, call_id, output)
        assert fast == plain


@settings(max_examples=300)
@given(
    st.lists(_ENTRIES, max_size=10),
    st.lists(st.tuples(st.integers(0, 12), _SHORT), max_size=8),
)
def test_used_agrees_with_the_mention_by_mention_test(
    found: list[LedgerEntry], raw: list[tuple[int, str]]
) -> None:
    # ``after`` (entries found before the mention) never decreases along the mentions.
    mentions = sorted(raw, key=lambda pair: pair[0])
    assert ledger._used(found, mentions) == _plain_used(found, mentions)


def _plain_sentences(text: str) -> list[extractive._Sentence]:
    counter = default_counter()
    found: list[extractive._Sentence] = []
    headers = list(extractive._HEADER.finditer(text))
    bodies = [("text", text)] if not headers else []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        bodies.append((header.group(1), text[header.end() : end]))
    for label, body in bodies:
        speaker = extractive._speaker(label)
        for piece in extractive._SENTENCE_BREAK.split(body):
            piece = piece.strip()
            if len(piece) < 12 or not extractive._WORD.search(piece):
                continue
            if len(piece) > 400:
                piece = piece[:400].rstrip() + " …"
            found.append(
                extractive._Sentence(len(found), speaker, piece, counter.count_text(piece) + 3)
            )
    return found


def _plain_pick(sentences: list[extractive._Sentence], budget: int) -> str:
    if not sentences or budget <= 0:
        return ""
    counter = default_counter()
    documents = [set(extractive._words(s.text)) for s in sentences]
    frequency: Counter[str] = Counter()
    for words in documents:
        frequency.update(words)
    total = len(sentences)

    def score(sentence: extractive._Sentence, words: set[str]) -> float:
        weight = sum(math.log(1 + total / frequency[w]) for w in words)
        weight /= math.sqrt(max(len(words), 1))
        if sentence.speaker == "user":
            weight *= 1.6
        elif sentence.speaker == "tool":
            weight *= 0.7
        if extractive._OUTCOME.search(sentence.text):
            weight *= 1.4
        return weight * (1 + 0.5 * sentence.position / total)

    ranked = sorted(zip(sentences, documents, strict=True), key=lambda p: score(*p), reverse=True)
    chosen: list[extractive._Sentence] = []
    seen: set[str] = set()
    spent = 0
    for sentence, _ in ranked:
        if sentence.text in seen or spent + sentence.tokens > budget:
            continue
        chosen.append(sentence)
        seen.add(sentence.text)
        spent += sentence.tokens
    while chosen:
        ordered = sorted(chosen, key=lambda s: s.position)
        summary = "\n".join(f"- {s.speaker}: {s.text}" for s in ordered)
        if counter.count_text(summary) <= budget:
            return summary
        chosen.pop()
    return ""


_WORDS = st.sampled_from(
    ["Deploy", "staging", "error", "E42", "fixed", "the", "parser", "tabs", "3.14", "never", "🙂"]
)
_LINE = st.tuples(
    st.sampled_from(["user", "assistant", "tool read result id=c1", "assistant called x id=c1"]),
    st.lists(st.lists(_WORDS, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=3),
).map(lambda pair: f"[{pair[0]}] " + ". ".join(pair[1]) + ".")


@settings(max_examples=200)
@given(st.lists(_LINE, min_size=1, max_size=12).map("\n".join), st.integers(1, 300))
def test_sentences_and_pick_agree_with_the_plain_code(text: str, budget: int) -> None:
    sentences = extractive._sentences(text)
    assert sentences == _plain_sentences(text)

    def keep(speaker: str, said: str) -> bool:  # the summary's filter, in kind
        return speaker != "call" and "error" not in said

    kept = [s for s in sentences if keep(s.speaker, s.text)]  # at their unfiltered positions
    assert extractive._sentences(text, keep=keep) == kept
    assert extractive._pick(sentences, budget) == _plain_pick(sentences, budget)


def test_a_long_session_ledger_is_derived_in_linear_time_and_marks_reads() -> None:
    """Every read's definitions still land on its own file entry, however long the session."""
    history: list[object] = []
    for n in range(300):
        call = ToolCall(f"c{n}", "Read", f'{{"file_path": "src/m{n}.py"}}')
        history.append(Message("assistant", "Reading it.", tool_calls=[call]))
        history.append(ToolMessage(f"def f{n}():\n    pass", tool_call_id=f"c{n}", name="Read"))
    values = [entry.value for entry in derive_ledger(history).current("file")]  # type: ignore[arg-type]
    assert values == [f"src/m{n}.py (read; defines f{n})" for n in range(300)]


def test_the_backend_counts_its_request_through_the_memo() -> None:
    """The backend's prompt count is the memoized one (the summary engine has made it)."""
    prompt = Message("user", "<conversation>\n[user] Ship it today, please.\n</conversation>")
    out = asyncio.run(ExtractiveBackend().generate([prompt]))
    assert out.usage is not None
    assert out.usage.prompt_tokens == default_counter().count(prompt)
    assert prompt._token_memo == ((default_counter(), out.usage.prompt_tokens),)  # type: ignore[attr-defined]


# -- one copy of a long span's prompt ----------------------------------------------------------

_TEMPLATE_TEXT = st.lists(
    st.sampled_from(["Summarize", " ", "\n", "{{", "}}", "{{x}}", "é", "🙂", "{conversation}"]),
    max_size=8,
).map("".join)


@settings(max_examples=300)
@given(
    _TEMPLATE_TEXT.filter(lambda t: "{conversation}" in t.replace("{{", "").replace("}}", "")),
    st.lists(st.text(max_size=6), max_size=5),
    st.text(max_size=6),
)
def test_fill_template_is_format_then_the_tail(template: str, lines: list[str], tail: str) -> None:
    validate_prompt_template(template)
    assert fill_template(template, lines, tail) == (
        template.format(conversation="\n".join(lines)) + tail
    )


@settings(max_examples=100, deadline=None)
@given(histories(), st.integers(1, 400))
def test_the_backend_reads_the_transcript_in_place(history: list[Any], budget: int) -> None:
    """Summarizing the prompt is summarizing the transcript cut out of it, and reading it too."""
    transcript = render_conversation(history)
    prompt = DEFAULT_PROMPT_TEMPLATE.format(conversation=transcript) + "\n\n<focus>x</focus>"
    options = {"max_tokens": budget}
    out = asyncio.run(
        ExtractiveBackend().generate([Message("user", prompt)], model_options=options)
    )
    assert out.value == ExtractiveBackend().summarize(transcript, budget)
    start = prompt.index(transcript) if transcript else 0
    if transcript and prompt[start - 1] == "\n":
        end = start + len(transcript)
        assert read_transcript(prompt, start=start, end=end) == read_transcript(transcript)
        assert extractive._sentences(prompt, start, end) == extractive._sentences(transcript)
