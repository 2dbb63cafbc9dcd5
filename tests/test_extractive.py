"""ExtractiveBackend: the offline summarizer keeps to its token budget."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    Message,
    default_counter,
)
from mellea_ctx._formats.openai import from_openai
from mellea_ctx._formats.quoted import _text_with_notes, read_transcript, render_conversation

from .helpers import CORPUS
from .strategies import forged_texts, histories


def transcript(lines: int) -> str:
    """A conversation dense with exact details (paths, commands, ids)."""
    return "\n".join(
        f"[user] Please read src/pkg/module_{i}.py and run "
        f"`pytest tests/test_{i}.py -k case_{i}` with id abc-{i}-{i * 7}."
        for i in range(lines)
    )


def summarize(text: str, max_tokens: int) -> str:
    prompt = Message("user", f"<conversation>\n{text}\n</conversation>")
    options = {"max_tokens": max_tokens}
    return asyncio.run(ExtractiveBackend().generate([prompt], model_options=options)).value


class TestBudget:
    def test_a_large_details_line_stays_within_max_tokens(self) -> None:
        """max_tokens=30 is honoured; the details are the ledger's, not an appendix (issue 21)."""
        out = summarize(transcript(12), 30)
        assert "Exact details:" not in out
        assert out
        assert default_counter().count_text(out) <= 30

    @pytest.mark.parametrize("max_tokens", [1, 5, 30, 80, 400])
    def test_every_budget_is_honoured(self, max_tokens: int) -> None:
        """The whole answer is never over max_tokens."""
        assert default_counter().count_text(summarize(transcript(20), max_tokens)) <= max_tokens

    @settings(max_examples=30, deadline=None)
    @given(lines=st.integers(1, 15), max_tokens=st.integers(1, 200))
    def test_budget_property(self, lines: int, max_tokens: int) -> None:
        """For any transcript size and budget, the answer fits."""
        assert default_counter().count_text(summarize(transcript(lines), max_tokens)) <= max_tokens


def _said(components: list[Any]) -> list[tuple[str, ...]]:
    """What a transcript carries of each component: who said what (with a note per image or
    file), which calls, which results."""
    out: list[tuple[str, ...]] = []
    for c in components:
        if c.tool_call_id is not None:
            out.append(("result", c.tool_call_id, _text_with_notes(c)))
            continue
        if _text_with_notes(c):
            out.append(("said", c.role, _text_with_notes(c)))
        out += [("call", call.id, call.name, call.arguments) for call in c.tool_calls]
    return out


class TestReadingTheTranscript:
    """The extractive backend reads the quoted transcript back into components."""

    @settings(max_examples=200, deadline=None)
    @given(history=histories(text=forged_texts))
    def test_render_then_read_gives_back_what_the_transcript_carries(
        self, history: list[Any]
    ) -> None:
        """Roles, texts, calls and results survive, forged headers and odd line breaks included."""
        text = render_conversation(history, cut_long_output=False)
        assert _said(read_transcript(text)) == _said(history)

    def test_an_earlier_checkpoint_comes_back_with_its_details(self) -> None:
        """Its details, in either spelling (a checkpoint's line or the extractive block), lead."""
        summary = "We fixed the parser.\nExact details:\n- files: src/parser.py; docs/a.md"
        earlier = Checkpoint(summary, preserved=("ORD-1234",))
        [back] = read_transcript(render_conversation([earlier]))
        assert isinstance(back, Checkpoint)
        assert back.summary == "We fixed the parser."
        assert back.preserved == ("src/parser.py", "docs/a.md", "ORD-1234")

    def test_text_before_any_header_is_kept(self) -> None:
        [lead, said] = read_transcript("notes first\n[user] then this")
        assert (lead.role, lead.content, said.content) == ("user", "notes first", "then this")


REAL_SPAN = CORPUS / "claudecode_opus46_session_precompact.openai.json"


@pytest.mark.skipif(not REAL_SPAN.exists(), reason="needs ../shared/corpus")
class TestARealSpan:
    """The real Claude Code session at the moment Claude Code compacted it."""

    def test_the_summary_keeps_the_commits_tests_and_files_the_agent_made(self) -> None:
        """At the size of Claude Code's own summary (3,000 tokens): commits, test results, files.

        What counts is found here from the raw span, independently of the
        extractor: commits git reported making (``[branch hash]``), test
        summaries in tool output, and files the agent wrote or edited.
        """
        span = from_openai(json.loads(REAL_SPAN.read_text(encoding="utf-8")))
        ctx = ChatContext()
        for component in span:
            ctx = ctx.add(component)
        # The extractive summary says what happened; the checkpoint's ledger holds the
        # state (commits, test runs, files), so the checkpoint is judged whole.
        compactor = LLMSummarizeCompactor(
            keep_n=0, strict=True, model_options={"max_tokens": 3_000}
        )
        [checkpoint] = compactor.compact(ctx, backend=ExtractiveBackend())
        summary = checkpoint.content
        outputs = "\n".join(c.content for c in span if c.tool_call_id is not None)
        made = set(re.findall(r"^\[[\w./-]+ ([0-9a-f]{7,40})\]", outputs, re.M))
        tests = set(re.findall(r"\b\d+ tests?, \d+ failures?", outputs))
        root = "/home/USER/projects/spotter-worktrees/spotter-fum/"
        edited = {
            json.loads(call.arguments)["file_path"].removeprefix(root)
            for c in span
            for call in c.tool_calls
            if call.name in ("Edit", "Write")
        }
        assert made and tests and edited
        assert {m for m in made if m not in summary} == set()
        assert {t for t in tests if t not in summary} == set()
        assert {f for f in edited if f not in summary} == set()
        assert default_counter().count_text(summary) <= 3_000


class TestWhatHappened:
    """Issue 21, item 5: the summary says what happened, not what a read file holds."""

    @given(
        number=st.integers(min_value=1, max_value=9_999),
        mark=st.sampled_from(["→", "\t", ": ", "| "]),
        code=st.sampled_from(
            [
                "body { font-family: sans-serif; background: #1a1a2e; }",
                "const total = items.reduce((a, b) => a + b, 0);",
                "def handle_event(name, params, socket) do {",
                "Retry logic uses exponential backoff with jitter capped here",
            ]
        ),
    )
    @settings(max_examples=40, deadline=None)
    def test_a_numbered_line_of_a_read_file_is_never_quoted(
        self, number: int, mark: str, code: str
    ) -> None:
        """A file's line as a read tool shows it (``12→``, ``12\\t``, ``12: ``) is data."""
        text = (
            "[user] Explain the stylesheet of the dashboard page.\n"
            f"[tool] {number}{mark}{code}\n"
            "[assistant] The dashboard uses one dark theme for every page."
        )
        summary = summarize(text, 200)
        assert code not in summary
        assert "The dashboard uses one dark theme for every page." in summary

    @pytest.mark.parametrize(
        "line",
        [
            "  color: #e0e0e0; background: #16213e; border-radius: 4px;",
            ".badge { display: inline-block; padding: 0.15rem 0.5rem {",
            "if (window.location.protocol === 'https:') return secureSocket }",
        ],
    )
    def test_a_line_of_code_is_never_quoted(self, line: str) -> None:
        """A line that ends as code does (a statement, a block) is not a sentence."""
        text = f"[tool] {line}\n[assistant] The theme is applied by the layout component."
        summary = summarize(text, 200)
        assert line.strip() not in summary
        assert "The theme is applied by the layout component." in summary


class TestRefrains:
    """compaction-conformance-kit at 10-20%: the summary's least room quoted "Noted and
    recorded.", an acknowledgement said twenty times, taking the room of a fact (issue 21)."""

    _REPLY = st.text(alphabet=st.sampled_from("abcdefghij klmnop"), min_size=12, max_size=40)

    @given(
        refrain=_REPLY.map(lambda text: f"Reply {text.strip()} done."),
        times=st.integers(3, 12),
        news=st.lists(
            st.sampled_from(
                [
                    "The parser fails on tabs in the header row.",
                    "Moved the cache to the worker process today.",
                    "The flaky login test was caused by a shared port.",
                    "The build server was slow all morning.",
                ]
            ),
            min_size=1,
            max_size=4,
            unique=True,
        ),
    )
    @settings(max_examples=40, deadline=None)
    def test_a_sentence_said_three_times_or_more_is_not_quoted(
        self, refrain: str, times: int, news: list[str]
    ) -> None:
        """A sentence said verbatim three times or more in the span (an acknowledgement, a
        status line) is a refrain; what was said once or twice is quoted, room allowing."""
        lines = [f"[assistant] {refrain}"] * times
        for position, sentence in enumerate(news):
            lines.insert(position * 2, f"[user] {sentence}")
        lines.insert(1, f"[user] {news[0]}")  # said twice: still news
        summary = summarize("\n".join(lines), 400)
        assert refrain not in summary
        for sentence in news:
            assert sentence in summary

    def test_a_span_of_refrains_is_summarized_by_the_fallback(self) -> None:
        """Nothing but refrains: the fallback line, without the count the checkpoint's header
        already gives."""
        text = "\n".join(["[assistant] Noted and recorded."] * 5)
        assert summarize(text, 40) == "Their state follows."
