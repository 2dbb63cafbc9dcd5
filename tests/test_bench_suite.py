"""The benchmark suite's pure functions, at tiny sizes, so the suite cannot rot.

No timing is asserted: these check the cost model, the prefix computation, the
sliding window and the replays on hand-checked cases, and that the report renders.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mellea_ctx import Message, TiktokenCounter, ToolCall, ToolMessage, validate_openai

from .helpers import load_benchmark


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    return load_benchmark("bench_suite", "bench_suite")


TINY_CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent. Work step by step."},
    {"role": "user", "content": "Fix the failing test in tests/test_parse.py."},
    {
        "role": "assistant",
        "content": "Let me look at the test.",
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "pytest -x"}'},
            },
            {
                "id": "b",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "src/parse.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "FAILED tests/test_parse.py::test_x " * 30},
    {"role": "tool", "tool_call_id": "b", "content": "def parse(text): return text.split() " * 40},
    {"role": "user", "content": "Only touch src/parse.py, never the tests."},
]


class TestCostModel:
    def test_bill_reads_the_hit_and_writes_the_rest(self, suite: ModuleType) -> None:
        """1,000 tokens with 800 cached: 0.1 x 800 + 1.25 x 200 = 330 input tokens."""
        assert 330.0 == pytest.approx(suite.bill(1_000, 800, suite.Rates()))
        assert 1_000.0 == pytest.approx(suite.bill(1_000, 0, suite.Rates(write=1.0)))

    def test_replay_bill_adds_the_summary_calls(self, suite: ModuleType) -> None:
        """Requests are billed by the cache model, summary input at 1x, output apart."""
        replay = suite.Replay(lengths=[100, 150], hits=[0, 100], summary_calls=[(40, 10)])
        bill = replay.billed(suite.Rates())
        assert 1.25 * 100 + 0.1 * 100 + 1.25 * 50 == pytest.approx(bill["requests"])
        assert 40 == bill["summary_input"]
        assert bill["requests"] + 40 == pytest.approx(bill["effective_input"])
        assert bill["effective_input"] + 5 * 10 == pytest.approx(bill["effective_with_output"])
        assert 100 + 150 + 40 == bill["no_cache"]


class TestLongestCommonPrefix:
    def test_hand_checked_prefix(self, suite: ModuleType) -> None:
        """Equal messages count whole; the first differing one counts its common tokens."""
        system = (-1, -10, -2, 5, 6, 7, -9)
        old = [system, (-1, -11, -2, 1, 2, 3, -9), (-1, -12, -2, 4, -9)]
        new = [system, (-1, -11, -2, 1, 2, 8, -9)]
        assert 7 + 5 == suite.prefix_hit(old, new)
        assert 7 + 7 + 5 == suite.prefix_hit(old, old)
        assert 0 == suite.prefix_hit([], new)

    def test_matches_the_concatenation(self, suite: ModuleType) -> None:
        """Message by message gives the prefix of the concatenated token sequences."""
        a = [(-1, 1, 2, -9), (-1, 3, -9)]
        b = [(-1, 1, 2, -9), (-1, 3, 4, -9)]
        flat_a = [t for m in a for t in m]
        flat_b = [t for m in b for t in m]
        assert suite.common_prefix(flat_a, flat_b) == suite.prefix_hit(a, b)

    def test_sequence_length_is_the_counters_count(self, suite: ModuleType) -> None:
        """A component's framed token sequence is as long as TiktokenCounter counts it."""
        tokens = suite.Tokens()
        call = ToolCall("c1", "bash", '{"command": "ls -la"}')
        for component in [
            Message("system", "Be brief."),
            Message("assistant", "Listing.", tool_calls=[call]),
            ToolMessage("a.py b.py", tool_call_id="c1", name="bash"),
        ]:
            assert TiktokenCounter().count(component) == len(tokens.of(component))


class TestSlidingWindow:
    def test_drops_oldest_until_it_fits(self, suite: ModuleType) -> None:
        """Pinned 10 tokens, body 5+5+5+5, limit 17: the body keeps its last message."""
        tokens = [10, 5, 5, 5, 5]
        results = [False] * 5
        assert 4 == suite.sliding_cut(tokens, results, 1, 1, 17)
        assert 1 == suite.sliding_cut(tokens, results, 1, 1, 30)

    def test_never_starts_on_a_tool_result(self, suite: ModuleType) -> None:
        """A cut that would keep a result without its call drops the result too."""
        tokens = [10, 5, 5, 2, 5]
        results = [False, False, False, True, False]
        assert 4 == suite.sliding_cut(tokens, results, 1, 1, 21)


class TestReplays:
    def test_both_strategies_fit_and_only_ours_summarizes(self, suite: ModuleType) -> None:
        """On a tiny session both stay under the limit; ours compacts with real summaries."""
        pools = suite.pools_from([TINY_CONVERSATION], "tiny")
        session = suite.agent_session(pools, 30, seed=1)
        assert [] == validate_openai(session)
        tokens = suite.Tokens()
        limit = 2_000
        window = suite.replay_sliding(session, limit, tokens)
        ours = suite.replay_budget(session, limit, limit // 2, tokens)
        for replay in (window, ours):
            assert 30 == len(replay.lengths)
            assert 0 == replay.over_limit
            assert 0 == replay.hits[0]
            assert all(0 <= h <= n for h, n in zip(replay.hits, replay.lengths, strict=True))
        assert window.compactions > 0 and not window.summary_calls
        assert ours.compactions > 0 and len(ours.summary_calls) >= ours.compactions
        row = suite.compare(window, ours, limit, 0.5, main=True)
        assert row["ratio"] > 0

    def test_continuation_summaries_are_billed_from_their_cache_hit(
        self, suite: ModuleType
    ) -> None:
        """A continuation summary request shares the agent's prefix; a quoted one shares none."""
        pools = suite.pools_from([TINY_CONVERSATION], "tiny")
        session = suite.agent_session(pools, 30, seed=1)
        tokens = suite.Tokens()
        quoted = suite.replay_budget(session, 2_000, 1_000, tokens)
        continued = suite.replay_budget(session, 2_000, 1_000, tokens, request="continuation")
        assert quoted.summary_calls and set(quoted.summary_hits) == {None}
        assert continued.summary_calls and None not in continued.summary_hits
        for (length, _), hit in zip(continued.summary_calls, continued.summary_hits, strict=True):
            assert 0 < hit < length  # the agent's last request is a strict prefix
        rates = suite.Rates()
        summary = continued.billed(rates)["summary_input"]
        expected = sum(
            suite.bill(n, h, rates)
            for (n, _), h in zip(continued.summary_calls, continued.summary_hits, strict=True)
        )
        assert expected == summary


@pytest.mark.slow
class TestReport:
    def test_tiny_run_renders(self, suite: ModuleType, tmp_path: Path) -> None:
        """The billing, resource and markdown code runs end to end at tiny sizes."""
        pools = suite.pools_from([TINY_CONVERSATION], "tiny")
        record = {
            "benchmark": "suite",
            "quick": True,
            "created": "now",
            "machine": suite.machine(),
            "seconds": 1.0,
            "loadavg_end": "0",
            "billing": suite.case_billing(True, pools, steps=20, limits=[1_500]),
            "resources": suite.case_resources(True, build_sizes=(50, 100), mb_sizes=(0.01, 0.02)),
        }
        text = suite.render_markdown(record)
        assert "Billed input tokens" in text and "Resource bounds" in text
        assert "(main)" in text

    def test_hot_paths_render_timed_and_counted(self, suite: ModuleType) -> None:
        """The hot-path case's table: both sides, the timed ratio and the instruction ratio."""
        side = {"median_s": 2.0, "best_s": 1.5, "spread": 0.2, "per_item_us": 2.0}
        ours = {"median_s": 0.25, "best_s": 0.2, "spread": 0.4, "per_item_us": 0.25}
        case = {"n": 1_000, "sides": {"mellea": side, "ours": ours}}
        case |= {"ratio_median": 8.0, "ratio_best": 7.5}
        span = {
            "sizes": [500, 2_000],
            "sides": {"500": side, "2000": {**side, "median_s": 6.0}},
            "time_ratio_median": 3.0,
            "time_ratio_best": 2.9,
            "linear": 4.0,
        }
        hot = {
            "rounds": 3,
            "window": case,
            "message": case,
            "span": span,
            "instructions": {
                "window": {"n": 10, "mellea": 1_200, "ours": 100},
                "span": {"500": 10, "2000": 41},
            },
            "big": [
                {
                    "messages": 100,
                    "timeout_s": 120.0,
                    "wall_s": 1.0,
                    "cpu_s": 0.5,
                    "cpu_per_message_us": 5_000.0,
                    "rss_before_mb": 100.0,
                    "rss_peak_mb": 120.0,
                    "compacted": True,
                    "warnings": [],
                }
            ],
        }
        record = {"machine": suite.machine(), "quick": True, "created": "now", "seconds": 1.0}
        text = suite.render_markdown({**record, "loadavg_end": "0", "hot": hot})
        assert "**8.00x** (best 7.50x)" in text and "**12.00x**" in text  # timed, counted
        assert "**3.00x** timed" in text and "**4.10x** in instructions" in text
        assert "| 100 | 1.0 s / 120 s |" in text

    def test_agent_loop_is_one_loop_the_span_can_cut(self, suite: ModuleType) -> None:
        from suite.cases.hot import agent_loop, span_compactor

        ctx = agent_loop(60)
        assert len(ctx) == 60 and [c.role for c in ctx].count("user") == 1
        p, k, _ = span_compactor(ctx).span(ctx)
        assert 0 < p < k < len(ctx)

    def test_transcript_writer_writes_a_valid_transcript(
        self, suite: ModuleType, tmp_path: Path
    ) -> None:
        """The generated transcript loads and keeps every tool exchange whole."""
        from mellea_ctx import load_conversation

        path = tmp_path / "t.json"
        count = suite.write_transcript(path, 0.01, seed=3)
        items = load_conversation(path)
        assert count == len(items)
        assert [] == validate_openai(items)


class TestNoMachinePaths:
    """Committed results and docs name the corpus relative to the repository."""

    def test_results_and_docs_hold_no_absolute_corpus_path(self) -> None:
        root = Path(__file__).resolve().parents[1]
        pages = [*sorted((root / "benchmarks" / "results").glob("*.*")), root / "README.md"]
        pages += sorted((root / "docs").rglob("*.md"))
        found = [
            page.name
            for page in pages
            if page.suffix in {".md", ".json"} and "/work/" in page.read_text(encoding="utf-8")
        ]
        assert found == []

    def test_corpus_name(self) -> None:
        from benchmarks.suite.sessions import BENCHMARKS_DIR, corpus_name

        beside = BENCHMARKS_DIR.parent.resolve().parent / "shared" / "corpus"
        assert corpus_name(beside) == "../shared/corpus"
        assert corpus_name(Path("/somewhere/else/corpus")) == "else/corpus"
