"""The command line on big inputs: the summary is capped, an oversized result is flagged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mellea_ctx import TiktokenCounter, load_conversation
from mellea_ctx._cli import compact as compact_module
from mellea_ctx._cli.app import cli

SENTENCES = [
    "The migration of the billing service moved every invoice table to the new cluster.",
    "Reviewers asked for a rollback plan before the weekend freeze starts.",
    "The team agreed that the retry queue should drain before the cutover.",
    "Latency on the read path stayed flat while the replicas caught up.",
]


def invoke(*argv: str, code: int = 0) -> Result:
    done = CliRunner().invoke(cli, list(argv), env={"COLUMNS": "200"})
    assert code == done.exit_code, (done.stdout, done.stderr, done.exception)
    return done


def long_chat(path: Path, messages: int) -> Path:
    rows: list[dict[str, Any]] = []
    for i in range(messages):
        role = "user" if i % 2 == 0 else "assistant"
        text = " ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(6))
        rows.append({"role": role, "content": text})
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def summary_tokens(path: Path) -> int:
    """The tokens of the checkpoint's summary (written as a user message: header, then body)."""
    first = load_conversation(path)[0]
    assert first.content.startswith("[Checkpoint: earlier conversation, compacted]")
    body = first.content.split("\n\n", 1)[1]
    return TiktokenCounter().count_text(body)


class TestSummaryCap:
    def test_summary_tokens_caps_the_summary(self, tmp_path: Path) -> None:
        source = long_chat(tmp_path / "big.json", 400)
        out = tmp_path / "small.json"
        invoke("compact", str(source), "--summarize", "--summary-tokens", "150", "-o", str(out))
        assert summary_tokens(out) <= 150

    def test_summarize_caps_by_default(self, tmp_path: Path) -> None:
        source = long_chat(tmp_path / "big.json", 1200)
        out = tmp_path / "small.json"
        invoke("compact", str(source), "--summarize", "-o", str(out))
        assert summary_tokens(out) <= compact_module.DEFAULT_SUMMARY_TOKENS

    def test_summary_tokens_is_not_for_a_window(self, tmp_path: Path) -> None:
        done = invoke("compact", "--window", "4", "--summary-tokens", "100", code=2)
        assert "--summary-tokens goes with --budget or --summarize" in done.stderr


class TestReport:
    def test_says_where_the_output_went(self, tmp_path: Path) -> None:
        out = tmp_path / "small.json"
        done = invoke("compact", "--window", "4", "-o", str(out))
        assert f"messages to {out}" in done.stderr

    def test_warns_when_the_result_fits_no_common_window(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(compact_module, "LARGEST_COMMON_WINDOW", 500)
        source = long_chat(tmp_path / "chat.json", 40)
        done = invoke("compact", str(source), "--window", "30", "-o", str(tmp_path / "o.json"))
        assert "warning: the result is" in done.stderr
        assert "more than the 500 of the largest common context windows" in done.stderr

    def test_no_warning_for_a_small_result(self, tmp_path: Path) -> None:
        done = invoke("compact", "--window", "4", "-o", str(tmp_path / "o.json"))
        assert "warning:" not in done.stderr


class TestLayout:
    def test_rows_are_not_cut_at_80_columns_in_a_pipe(self, tmp_path: Path) -> None:
        """Without a terminal or COLUMNS, a report row longer than 80 columns stays one line."""
        done = CliRunner().invoke(
            cli,
            ["compact", "--summarize", "-o", str(tmp_path / "o.json")],
            env={"COLUMNS": None},
        )
        assert done.exit_code == 0, done.stderr
        row = next(line for line in done.stderr.splitlines() if "details preserved" in line)
        assert len(row.rstrip()) > 80
        assert "carried over verbatim" in row

    def test_demo_marks_compactions_without_colour(self) -> None:
        """The chart marks each compaction with a sign under its column, not only in yellow."""
        done = CliRunner().invoke(
            cli, ["demo", "--turns", "30", "--budget", "2000"], env={"COLUMNS": "200"}
        )
        assert done.exit_code == 0
        assert "▲ below: a compaction ran" in done.stdout
        marks = [line for line in done.stdout.splitlines() if line.strip().startswith("▲")]
        assert len(marks) == 1
