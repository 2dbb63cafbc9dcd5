"""Tests for the ``mellea-ctx`` command line."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mellea_ctx
from mellea_ctx import ChatContext, from_openai, load_conversation, validate_openai
from mellea_ctx._cli import main

ROOT = Path(__file__).parents[1]
CORPUS = Path(__file__).parents[2] / "shared" / "corpus"
SAMPLE = Path(mellea_ctx.__file__).parent / "data" / "sample_conversation.json"
SUMMARY = re.compile(
    r"^(?P<before>[\d,]+) -> (?P<after>[\d,]+) messages, "
    r"(?P<tokens_before>[\d,]+) -> (?P<tokens_after>[\d,]+) tokens \(o200k_base\), "
    r"(tool pairs intact|no tool calls)(; .*)?$"
)


def tokens(messages: list[dict[str, Any]]) -> int:
    ctx = ChatContext()
    for component in from_openai(messages):
        ctx = ctx.add(component)
    return ctx.token_count


def number(text: str) -> int:
    return int(text.replace(",", ""))


def run(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> tuple[str, list[str]]:
    """Run ``main`` in-process; return stdout and the lines of stderr."""
    assert code == main(list(argv))
    captured = capsys.readouterr()
    return captured.out, captured.err.splitlines()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            for i in ids
        ],
    }


def result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": f"result of {call_id}"}


CHAT = [
    {"role": "system", "content": "You are terse."},
    user("Task: list the files."),
    calls("c1", "c2"),
    result("c1"),
    result("c2"),
    {"role": "assistant", "content": "Two files."},
    user("And now?"),
    calls("c3"),
    result("c3"),
    {"role": "assistant", "content": "Done."},
]


class TestCompactSample:
    """``mellea-ctx compact`` without a FILE uses the bundled sample."""

    def test_bundled_sample(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The sample compacts to a valid, smaller conversation that keeps its system prompt."""
        out, err = run(capsys, "compact", "--window", "10")
        original = json.loads(SAMPLE.read_text(encoding="utf-8"))
        compacted = json.loads(out)
        assert validate_openai(from_openai(compacted)) == []
        assert original[0] == compacted[0]
        assert compacted[0]["role"] == "system"
        assert compacted[1:] == original[len(original) - len(compacted) + 1 :]
        assert len(compacted) < len(original)
        assert tokens(compacted) < tokens(original)
        assert len(err) == 2
        assert err[0] == (
            "mellea-ctx: no FILE given; reading the bundled sample conversation "
            "(tau-bench airline, 62 messages)"
        )
        match = SUMMARY.match(err[1])
        assert match is not None, err[1]
        assert number(match["before"]) == len(original)
        assert number(match["after"]) == len(compacted)
        assert number(match["tokens_before"]) == tokens(original)
        assert number(match["tokens_after"]) == tokens(compacted)

    def test_sample_ships_in_the_package(self) -> None:
        """The sample and its licence note sit in the package, and the sample is valid."""
        assert (SAMPLE.parent / "README.md").is_file()
        components = load_conversation(SAMPLE)
        assert len(components) == 62
        assert validate_openai(components) == []


class TestCompactFiles:
    """``mellea-ctx compact FILE``."""

    def test_json_to_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A JSON array in gives a JSON array out, in OUT, with nothing on stdout."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps(CHAT), encoding="utf-8")
        out, err = run(capsys, "compact", str(source), "-w", "3", "-o", str(tmp_path / "o.json"))
        assert out == ""
        compacted = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
        assert compacted == [CHAT[0], *CHAT[-3:]]
        assert err == [
            f"10 -> 4 messages, {tokens(CHAT)} -> {tokens(compacted)} tokens (o200k_base), "
            "tool pairs intact"
        ]

    def test_window_widens(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A window edge inside a tool exchange moves back, and the summary says so."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps(CHAT), encoding="utf-8")
        out, err = run(capsys, "compact", str(source), "--window", "2")
        assert json.loads(out) == [CHAT[0], *CHAT[-3:]]
        assert err[0].endswith(
            "tool pairs intact; window widened to 3: tool exchanges are kept whole"
        )

    def test_jsonl_stays_jsonl(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A JSONL file (detected by content here) is written back as JSONL."""
        source = tmp_path / "chat.log"
        source.write_text("".join(json.dumps(m) + "\n" for m in CHAT), encoding="utf-8")
        out, _ = run(capsys, "compact", str(source), "--window", "4")
        assert [json.loads(line) for line in out.splitlines()] == [CHAT[0], *CHAT[-4:]]

    def test_stdin(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """FILE '-' reads the conversation from stdin."""
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(CHAT)))
        out, _ = run(capsys, "compact", "-", "--window", "0")
        assert json.loads(out) == [CHAT[0]]

    @pytest.mark.parametrize(
        ("pin", "expected"),
        [
            ("system", [CHAT[0], CHAT[-1]]),
            ("system+user", [CHAT[0], CHAT[1], CHAT[-1]]),
            ("none", [CHAT[-1]]),
        ],
    )
    def test_pins(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        pin: str,
        expected: list[dict[str, Any]],
    ) -> None:
        """``--pin`` chooses the prefix that is always kept."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps(CHAT), encoding="utf-8")
        out, _ = run(capsys, "compact", str(source), "--window", "1", "--pin", pin)
        assert json.loads(out) == expected

    def test_nothing_to_drop(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A conversation already within the window is written back unchanged."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps(CHAT), encoding="utf-8")
        out, err = run(capsys, "compact", str(source), "--window", "9")
        assert json.loads(out) == CHAT
        total = tokens(CHAT)
        assert err == [
            f"10 -> 10 messages, {total} -> {total} tokens (o200k_base), tool pairs intact; "
            "already within --window 9"
        ]

    def test_overwrite_input(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """OUT may be FILE itself: it is read first and replaced atomically."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps(CHAT), encoding="utf-8")
        run(capsys, "compact", str(source), "--window", "1", "-o", str(source))
        assert json.loads(source.read_text(encoding="utf-8")) == [CHAT[0], CHAT[-1]]

    @pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the transcript corpus is not at {CORPUS}")
    @pytest.mark.parametrize("window", [0, 5, 40])
    @pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.openai.json")))
    def test_corpus(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, window: int
    ) -> None:
        """Every real transcript compacts to a valid history, never larger, prefix kept."""
        source = CORPUS / name
        original = json.loads(source.read_text(encoding="utf-8"))
        target = tmp_path / "out.json"
        _, err = run(capsys, "compact", str(source), "--window", str(window), "-o", str(target))
        compacted = json.loads(target.read_text(encoding="utf-8"))
        assert validate_openai(from_openai(compacted)) == []
        assert tokens(compacted) <= tokens(original)
        system = [m for m in original[:1] if m["role"] == "system"]
        assert compacted[: len(system)] == system
        assert compacted[len(system) :] == original[len(original) - len(compacted) + len(system) :]
        assert len(err) == 1
        match = SUMMARY.match(err[0])
        assert match is not None, err[0]
        assert number(match["tokens_after"]) == tokens(compacted)


BAD_INPUTS = [
    ("chat.json", None, "cannot read {dir}chat.json: No such file or directory"),
    (
        "chat.json",
        '[{"role": "user", "content": "hi"}',
        "{dir}chat.json line 1 column 35: invalid JSON",
    ),
    (
        "chat.jsonl",
        '{"role": "user", "content": "hi"}\n"hello"\n',
        "{dir}chat.jsonl line 2: 'hello' is not a message",
    ),
    (
        "chat.json",
        json.dumps([user("a"), {"role": "robot", "content": "x"}]),
        "{dir}chat.json message 1: role='robot' is not one of",
    ),
    (
        "chat.jsonl",
        json.dumps(user("a")) + "\n\n" + json.dumps(result("c9")) + "\n",
        "{dir}chat.jsonl line 3: tool result for tool_call_id='c9' answers no earlier tool call",
    ),
    (
        "chat.json",
        json.dumps([calls("c1"), user("a")]),
        "{dir}chat.json message 0: tool call 'c1' (ls) got no result before message 1",
    ),
]


class TestSummarizingStrategies:
    """--budget and --summarize work offline, on the extractive backend."""

    def test_summarize_sample(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--summarize keeps the system prompt, one checkpoint, and the last --keep messages."""
        out = tmp_path / "s.json"
        _, err = run(capsys, "compact", "--summarize", "--keep", "4", "-o", str(out))
        written = json.loads(out.read_text(encoding="utf-8"))
        original = json.loads(SAMPLE.read_text(encoding="utf-8"))
        assert written[0] == original[0]
        assert written[1]["role"] == "user"
        assert written[1]["content"].startswith("[Checkpoint: earlier conversation, compacted]")
        assert written[-3:] == original[-3:]
        assert validate_openai(from_openai(written)) == []
        line = SUMMARY.match(err[-1])
        assert line is not None
        assert number(line["tokens_after"]) < number(line["tokens_before"])
        assert "messages summarized into one checkpoint" in err[-1]

    def test_budget_fits(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--budget brings a real agent transcript under the budget, tool pairs intact."""
        source = CORPUS / "claudecode_opus46_session_precompact.openai.json"
        if not source.exists():
            pytest.skip(f"the shared corpus is not at {CORPUS}")
        out = tmp_path / "b.json"
        _, err = run(capsys, "compact", str(source), "--budget", "20000", "-o", str(out))
        written = json.loads(out.read_text(encoding="utf-8"))
        assert tokens(written) <= 20_000
        assert validate_openai(from_openai(written)) == []
        assert "exact details checked" in err[-1]

    def test_budget_already_met(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Under the budget nothing is summarized, and the line says so."""
        _, err = run(capsys, "compact", "--budget", "1000000", "-o", str(tmp_path / "x.json"))
        assert err[-1].endswith("; already within the budget")


class TestCompactErrors:
    """Bad input gives one error line, exit status 2, and writes nothing."""

    @pytest.mark.parametrize(
        ("name", "text", "expected"),
        BAD_INPUTS,
        ids=["missing", "bad-json", "not-a-message", "unknown-role", "orphan", "unanswered"],
    )
    def test_bad_input(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        name: str,
        text: str | None,
        expected: str,
    ) -> None:
        """The error names the file, the line or message, and the field; no output appears."""
        source = tmp_path / name
        if text is not None:
            source.write_text(text, encoding="utf-8")
        target = tmp_path / "out.json"
        out, err = run(capsys, "compact", str(source), "-w", "1", "-o", str(target), code=2)
        assert out == ""
        assert len(err) == 1
        assert err[0].startswith("mellea-ctx: error: " + expected.format(dir=f"{tmp_path}{os.sep}"))
        assert not target.exists()

    def test_bad_input_to_stdout(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Without OUT, a bad input leaves stdout empty."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps([result("c1")]), encoding="utf-8")
        out, err = run(capsys, "compact", str(source), "--window", "1", code=2)
        assert (out, len(err)) == ("", 1)

    def test_problem_count(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """With several problems the line shows the first and counts the rest."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps([result("a"), result("b"), result("c")]), encoding="utf-8")
        _, err = run(capsys, "compact", str(source), "--window", "1", code=2)
        assert err[0].endswith("(2 more problems after this one)")

    def test_unwritable_output(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An OUT in a missing folder is an error naming it, and nothing is written."""
        target = tmp_path / "missing" / "out.json"
        out, err = run(capsys, "compact", "--window", "1", "-o", str(target), code=2)
        assert out == ""
        assert err[-1] == f"mellea-ctx: error: cannot write {target}: No such file or directory"
        assert not target.parent.exists()

    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            (["compact"], "one of the arguments -w/--window --budget --summarize is required"),
            (["compact", "-w", "3", "--summarize"], "not allowed with argument -w/--window"),
            (["compact", "--budget", "0"], "argument --budget: '0' is not a positive number"),
            (["compact", "--window", "-1"], "argument -w/--window: '-1' is not an int >= 0"),
            (["compact", "--window", "ten"], "argument -w/--window: 'ten' is not an int >= 0"),
            (["compact", "-w", "1", "--pin", "all"], "argument --pin: invalid choice: 'all'"),
            ([], "the following arguments are required: COMMAND"),
            (["shrink"], "invalid choice: 'shrink'"),
        ],
    )
    def test_usage_errors(
        self, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
    ) -> None:
        """Bad arguments print argparse's usage and error, and exit with status 2."""
        out, err = run(capsys, *argv, code=2)
        assert out == ""
        assert err[0].startswith("usage: mellea-ctx")
        assert expected in err[-1]

    def test_internal_error_writes_nothing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """If compaction ever broke a tool pair, nothing is written and the status is 1."""

        class Broken:
            def __init__(self, **kwargs: Any) -> None:
                pass

            def compact(self, ctx: ChatContext) -> ChatContext:
                return ChatContext().add(from_openai([result("c1")])[0])

        monkeypatch.setattr("mellea_ctx._cli.WindowCompactor", Broken)
        target = tmp_path / "out.json"
        out, err = run(capsys, "compact", "-w", "1", "-o", str(target), code=1)
        assert err[-1].startswith("mellea-ctx: internal error: the compacted conversation breaks")
        assert (out, target.exists()) == ("", False)

    def test_broken_pipe(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A reader that goes away mid-write ends the command quietly with status 1."""

        class ClosedPipe(io.StringIO):
            def write(self, text: str) -> int:
                raise BrokenPipeError

        monkeypatch.setattr(sys, "stdout", ClosedPipe())
        assert main(["compact", "--window", "1"]) == 1


class TestHelp:
    """Help and version."""

    def test_compact_help_has_examples(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``compact --help`` shows the options and a runnable example."""
        out, _ = run(capsys, "compact", "--help")
        assert "--window N" in out
        assert "examples:" in out
        assert "mellea-ctx compact chat.json --window 20 -o chat.small.json" in out

    def test_top_level_help(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``--help`` lists the commands."""
        out, _ = run(capsys, "--help")
        assert "compact" in out

    def test_version(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``--version`` prints the package version."""
        out, _ = run(capsys, "--version")
        assert out.strip() == f"mellea-ctx {mellea_ctx.__version__}"


def this_checkout() -> dict[str, str]:
    """Return an environment whose Python imports this checkout's package first."""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def launchers() -> list[Any]:
    script = shutil.which("mellea-ctx")
    module = [sys.executable, "-m", "mellea_ctx"]
    if script is None:
        return [pytest.param(module, id="python-m")]
    return [pytest.param([script], id="console-script"), pytest.param(module, id="python-m")]


class TestSubprocess:
    """The command as a user runs it, in a fresh process."""

    @pytest.mark.parametrize("command", launchers())
    def test_runs(self, tmp_path: Path, command: list[str]) -> None:
        """The installed ``mellea-ctx`` (or ``python -m mellea_ctx``) compacts the sample."""
        env = this_checkout()
        completed = subprocess.run(
            [*command, "compact", "--window", "10"],
            capture_output=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
        compacted = json.loads(completed.stdout)
        assert validate_openai(from_openai(compacted)) == []
        assert compacted[0]["role"] == "system"
        err = completed.stderr.decode("utf-8").splitlines()
        assert len(err) == 2
        assert SUMMARY.match(err[1]), err[1]

    def test_bad_input_in_a_process(self, tmp_path: Path) -> None:
        """A missing file exits with status 2 and one line on stderr."""
        env = this_checkout()
        completed = subprocess.run(
            [sys.executable, "-m", "mellea_ctx", "compact", "nope.json", "-w", "1"],
            capture_output=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert completed.returncode == 2
        assert completed.stdout == b""
        assert completed.stderr.decode("utf-8").splitlines() == [
            "mellea-ctx: error: cannot read nope.json: No such file or directory"
        ]
