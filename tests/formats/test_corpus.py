"""Every real transcript in ../shared/corpus goes through the command line unchanged.

``compact --window N`` with N above the file's length must write the input
back as the same JSON and say so; ``validate --repair`` must change only what
the provider would reject (four Claude Code turns open with a ``"\\n\\n"``
text block the API returned and would refuse when sent back) and list each
change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mellea_ctx._cli.app import cli

from ..helpers import CORPUS

FILES = sorted(p.name for p in CORPUS.glob("*.json") if not p.name.startswith("."))
pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the transcript corpus is not at {CORPUS}"
)
#: The turns (0-based) of each file whose first text block is only whitespace.
BLANK_TURNS = {
    "claudecode_opus46_session_precompact.anthropic.json": [1, 29],
    "claudecode_opus46_session_postcompact.anthropic.json": [1, 39],
}


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert 0 == result.exit_code, result.output
    return result.stderr if result.stderr_bytes else result.stdout


class TestCorpus:
    def test_the_corpus_is_there(self) -> None:
        """All eleven files (four Anthropic, seven OpenAI) are found."""
        assert (4, 7) == (
            sum(".anthropic." in n for n in FILES),
            sum(".openai." in n for n in FILES),
        )

    @pytest.mark.parametrize("name", FILES)
    def test_compact_above_the_length_gives_the_input_back(self, tmp_path: Path, name: str) -> None:
        """The output equals the input as JSON, and the report says so in the file's unit."""
        source = CORPUS / name
        original = json.loads(source.read_text(encoding="utf-8"))
        out = tmp_path / "out.json"
        # --window counts the file's own unit: messages, or turns for an Anthropic file
        window = str(len(original) + 1)
        report = run("compact", str(source), "--window", window, "-o", str(out))
        assert original == json.loads(out.read_text(encoding="utf-8"))
        assert "the output equals the input" in " ".join(report.split())
        unit = "turns" if ".anthropic." in name else "messages"
        assert f"│ {unit} " in report

    @pytest.mark.parametrize("name", FILES)
    def test_repair_changes_only_what_the_provider_rejects(self, tmp_path: Path, name: str) -> None:
        """Only the blank leading text blocks go; every other turn is written back as read."""
        source = CORPUS / name
        original = json.loads(source.read_text(encoding="utf-8"))
        out = tmp_path / "out.json"
        report = " ".join(run("validate", str(source), "--repair", "-o", str(out)).split())
        repaired = json.loads(out.read_text(encoding="utf-8"))
        blank = BLANK_TURNS.get(name, [])
        assert len(original) == len(repaired)
        differ = [i for i, (a, b) in enumerate(zip(original, repaired, strict=True)) if a != b]
        assert blank == differ
        for index in blank:
            first, *rest = original[index]["content"]
            assert (first["type"], first["text"].strip()) == ("text", "")
            assert rest == repaired[index]["content"]
        if blank:
            assert f"{len(blank)} changes" in report
            for index in blank:
                assert f"message {index} " in report
            assert report.count("removed 1 blank text block") == len(blank)
        else:
            assert "already valid; the output equals the input" in report
