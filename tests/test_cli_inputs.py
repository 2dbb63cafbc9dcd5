"""What the command line reads: an OpenAI request body, and a lone object in a .json file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from mellea_ctx import load_conversation
from mellea_ctx._cli.app import cli


def invoke(*argv: str, code: int = 0) -> Result:
    done = CliRunner().invoke(cli, list(argv), env={"COLUMNS": "200"})
    assert code == done.exit_code, (done.stdout, done.stderr, done.exception)
    return done


class TestRequestBody:
    def test_openai_request_body_is_read_as_its_messages(self, tmp_path: Path) -> None:
        body = {
            "model": "gpt-4o-mini",
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "Be brief."},
                *({"role": "user", "content": f"q{i}"} for i in range(6)),
            ],
        }
        source = tmp_path / "request.json"
        source.write_text(json.dumps(body), encoding="utf-8")
        out = tmp_path / "out.json"
        invoke("compact", str(source), "--window", "2", "-o", str(out))
        assert [c.content for c in load_conversation(out)] == ["Be brief.", "q4", "q5"]

    def test_a_bad_message_in_a_body_is_located(self, tmp_path: Path) -> None:
        source = tmp_path / "request.json"
        source.write_text(json.dumps({"model": "m", "messages": [{"role": "robot"}]}))
        done = invoke("stats", str(source), code=2)
        assert "request.json message 0" in done.stderr


class TestLoneObject:
    def test_lone_object_in_a_json_file_is_refused(self, tmp_path: Path) -> None:
        source = tmp_path / "one.json"
        source.write_text(json.dumps({"role": "user", "content": "hi"}), encoding="utf-8")
        done = invoke("stats", str(source), code=2)
        assert "holds one JSON object, not a JSON array of messages" in done.stderr

    def test_the_same_line_in_a_jsonl_file_is_one_message(self, tmp_path: Path) -> None:
        source = tmp_path / "one.jsonl"
        source.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
        out = tmp_path / "out.jsonl"
        invoke("compact", str(source), "--window", "2", "-o", str(out))
        assert [c.content for c in load_conversation(out)] == ["hi"]


class TestUsageErrors:
    def test_one_form_and_no_blank_line(self) -> None:
        """A usage error reads like every other error: no blank line, the command named."""
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-m", "mellea_ctx", "compact", "-o", "x.json"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        lines = done.stderr.splitlines()
        assert "" not in lines
        assert lines == [
            "mellea-ctx compact: error: choose one strategy: --window N, --budget TOKENS or "
            "--summarize",
            "Try 'mellea-ctx compact --help' for help.",
        ]


class TestNumbers:
    def test_counts_use_thousands_separators_everywhere(self, tmp_path: Path) -> None:
        """One number format: 1,200 in the headline as in the message count beside it."""
        rows = [{"role": "user", "content": "hi"}]
        rows += [{"role": "tool", "tool_call_id": f"t{i}", "content": "x"} for i in range(1200)]
        source = tmp_path / "orphans.json"
        source.write_text(json.dumps(rows), encoding="utf-8")
        done = invoke("validate", str(source), code=1)
        headline = "orphans.json: 1,200 problems for openai (1,201 messages)"
        assert headline in done.stdout + done.stderr


class TestWindowInTurns:
    def test_anthropic_window_counts_turns(self, tmp_path: Path) -> None:
        """On an Anthropic file, --window N keeps the last N turns, whatever blocks they hold."""
        turns = [
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "ls", "input": {"a": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "b.py"},
                    {"type": "text", "text": "Now read them."},
                ],
            },
            {"role": "assistant", "content": "Done."},
        ]
        source = tmp_path / "chat.anthropic.json"
        source.write_text(json.dumps(turns), encoding="utf-8")
        out = tmp_path / "out.json"
        result = CliRunner().invoke(
            cli, ["compact", str(source), "--window", "2", "--pin", "none", "-o", str(out)]
        )
        assert 0 == result.exit_code, result.output
        written = json.loads(out.read_text(encoding="utf-8"))
        # the last 2 turns, and the calls their results answer (a placeholder user turn opens it)
        assert turns[1:] == written[-3:]
