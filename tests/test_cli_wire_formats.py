"""The command line reads Responses API items and Gemini contents, and writes them back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mellea_ctx import validate_gemini, validate_responses
from mellea_ctx._cli.app import cli

RESPONSES_BODY: dict[str, Any] = {
    "model": "gpt-5",
    "instructions": "Be brief.",
    "store": False,
    "input": [
        {"role": "user", "content": "List the files."},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {"role": "user", "content": "And the tests?"},
        {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "tests/"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ],
}
GEMINI_BODY: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "generationConfig": {"temperature": 0},
    "contents": [
        {"role": "user", "parts": [{"text": "List the files."}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "c2ln"}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "ls", "response": {"result": "a.py"}}}],
        },
        {"role": "user", "parts": [{"text": "And the tests?"}]},
        {"role": "model", "parts": [{"text": "tests/"}]},
    ],
}


def invoke(*argv: str, code: int = 0) -> Result:
    """Run the command line in-process; check the exit status."""
    result = CliRunner().invoke(cli, list(argv), env={"COLUMNS": "200"})
    assert code == result.exit_code, (result.stdout, result.stderr, result.exception)
    return result


def _write(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


class TestDetection:
    """validate and stats recognise both formats without --format."""

    @pytest.mark.parametrize(
        ("value", "provider"),
        [
            (RESPONSES_BODY, "responses"),
            (RESPONSES_BODY["input"], "responses"),
            (GEMINI_BODY, "gemini"),
        ],
    )
    def test_validate_detects(self, tmp_path: Path, value: Any, provider: str) -> None:
        """A valid file validates under its own provider's rules."""
        out = invoke("validate", str(_write(tmp_path, "t.json", value)))
        assert f"valid for {provider}" in out.stdout

    def test_invalid_responses(self, tmp_path: Path) -> None:
        """An orphan output is reported, naming the item, with exit status 1."""
        items = [{"type": "function_call_output", "call_id": "zz", "output": "x"}]
        out = invoke("validate", str(_write(tmp_path, "t.json", items)), code=1)
        assert "call_id='zz' answers no earlier function_call" in out.stdout

    def test_gemini_body_without_contents_list_names_the_file_once(self, tmp_path: Path) -> None:
        """A body forced to Gemini whose ``contents`` is no list: the error names the file once."""
        path = _write(tmp_path, "g.json", {"contents": 3})
        out = invoke("validate", "--format", "gemini", str(path), code=2)
        assert f"error: {path}: a Gemini transcript is a body with a 'contents' list" in out.stderr

    def test_responses_body_without_input_list_names_the_file_once(self, tmp_path: Path) -> None:
        """A body whose ``input`` is neither a list nor a string: the error names the file once."""
        path = _write(tmp_path, "r.json", {"input": 3})
        out = invoke("validate", "--format", "responses", str(path), code=2)
        assert f"error: {path}: a Responses transcript is a JSON array" in out.stderr

    def test_stats(self, tmp_path: Path) -> None:
        """stats reads a Gemini body and names its contents."""
        out = invoke("stats", str(_write(tmp_path, "g.json", GEMINI_BODY)), "--budget", "10")
        assert "content 0" in out.stdout


class TestWriteBack:
    """compact and validate --repair write the input's format, body keys kept."""

    def test_compact_responses(self, tmp_path: Path) -> None:
        """A window compaction keeps the body's keys and writes valid items."""
        src, dst = _write(tmp_path, "r.json", RESPONSES_BODY), tmp_path / "out.json"
        invoke("compact", str(src), "--window", "2", "-o", str(dst))
        written = json.loads(dst.read_text())
        assert {"model", "instructions", "store", "input"} == set(written)
        assert [] == validate_responses(written["input"])
        assert RESPONSES_BODY["input"][-3:] == written["input"][-3:]

    def test_compact_gemini(self, tmp_path: Path) -> None:
        """A window compaction keeps systemInstruction and generationConfig."""
        src, dst = _write(tmp_path, "g.json", GEMINI_BODY), tmp_path / "out.json"
        invoke("compact", str(src), "--window", "2", "-o", str(dst))
        written = json.loads(dst.read_text())
        assert GEMINI_BODY["systemInstruction"] == written["systemInstruction"]
        assert GEMINI_BODY["generationConfig"] == written["generationConfig"]
        assert [] == validate_gemini(written)

    def test_repair_unchanged_is_identity(self, tmp_path: Path) -> None:
        """Repairing a valid file writes it back exactly (lossless)."""
        for name, body in (("r.json", RESPONSES_BODY), ("g.json", GEMINI_BODY)):
            src, dst = _write(tmp_path, name, body), tmp_path / f"fixed-{name}"
            invoke("validate", str(src), "--repair", "-o", str(dst))
            assert body == json.loads(dst.read_text())

    def test_format_option(self, tmp_path: Path) -> None:
        """--format gemini reads a body the detector would also find."""
        out = invoke("validate", str(_write(tmp_path, "g.json", GEMINI_BODY)), "--format", "gemini")
        assert "valid for gemini" in out.stdout
