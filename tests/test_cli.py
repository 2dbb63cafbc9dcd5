"""Tests for the ``mellea-ctx`` command line, driven through click's runner and real processes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import mellea_ctx
from mellea_ctx import (
    ChatContext,
    from_openai,
    load_anthropic,
    load_conversation,
    validate_anthropic,
    validate_openai,
)
from mellea_ctx._cli.app import cli, main

from .helpers import CORPUS

ROOT = Path(__file__).parents[1]
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the transcript corpus is not at {CORPUS}"
)
SAMPLE = Path(mellea_ctx.__file__).parent / "data" / "sample_conversation.json"
CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.json"))


def tokens(messages: list[dict[str, Any]]) -> int:
    ctx = ChatContext()
    for component in from_openai(messages):
        ctx = ctx.add(component)
    return ctx.token_count


def invoke(*argv: str, code: int = 0, stdin: bytes | None = None) -> Result:
    """Run the command line in-process; check the exit status."""
    runner = CliRunner()
    result = runner.invoke(cli, list(argv), input=stdin, env={"COLUMNS": "200"})
    assert code == result.exit_code, (result.stdout, result.stderr, result.exception)
    return result


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


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT), encoding="utf-8")
    return path


def _unnumbered(problem: str) -> str:
    """A validator's problem without its leading ``message N:`` (indices shift in a cut)."""
    return re.sub(r"^message \d+: ", "", problem)


class TestCompact:
    """``mellea-ctx compact``."""

    def test_bundled_sample(self, tmp_path: Path) -> None:
        """The README's command: the sample compacts to a valid, smaller file, figures on stderr."""
        out = tmp_path / "compacted.json"
        done = invoke("compact", "--window", "10", "-o", str(out))
        original = json.loads(SAMPLE.read_text(encoding="utf-8"))
        compacted = json.loads(out.read_text(encoding="utf-8"))
        assert [] == validate_openai(from_openai(compacted))
        assert [original[0], *original[-10:]] == compacted
        assert "" == done.stdout
        assert done.stderr.startswith(
            "mellea-ctx: no FILE given; reading the bundled sample conversation "
            "(tau-bench airline, 62 messages)"
        )
        before, after = tokens(original), tokens(compacted)
        rows = {
            line.split("│")[1].strip(): line for line in done.stderr.splitlines() if "│" in line
        }
        assert ["62", "11"] == rows["messages"].replace("│", " ").split()[1:]
        assert [f"{before:,}", f"{after:,}"] == rows["tokens (o200k_base)"].replace(
            "│", " "
        ).split()[2:]
        assert "removed            51 messages (25 assistant, 22 tool, 4 user)" in done.stderr
        assert "tool pairs         intact" in done.stderr

    def test_json_to_stdout(self, chat: Path) -> None:
        """Without OUT the conversation goes to stdout, and only it."""
        done = invoke("compact", str(chat), "-w", "3")
        assert [CHAT[0], *CHAT[-3:]] == json.loads(done.stdout)

    def test_window_widens(self, chat: Path) -> None:
        """A window edge inside a tool exchange moves back, and the note says so."""
        done = invoke("compact", str(chat), "--window", "2")
        assert [CHAT[0], *CHAT[-3:]] == json.loads(done.stdout)
        assert "window widened to 3 messages: tool exchanges are kept whole" in done.stderr

    def test_already_within(self, chat: Path) -> None:
        """A conversation within the window is written back unchanged, and the note says so."""
        done = invoke("compact", str(chat), "--window", "9")
        assert CHAT == json.loads(done.stdout)
        assert "already within --window 9" in done.stderr

    def test_jsonl_stays_jsonl(self, tmp_path: Path) -> None:
        """A JSONL file (detected by content) is written back as JSONL."""
        source = tmp_path / "chat.log"
        source.write_text("".join(json.dumps(m) + "\n" for m in CHAT), encoding="utf-8")
        done = invoke("compact", str(source), "--window", "4")
        assert [CHAT[0], *CHAT[-4:]] == [json.loads(line) for line in done.stdout.splitlines()]

    def test_stdin(self) -> None:
        """FILE '-' reads the conversation from stdin."""
        done = invoke("compact", "-", "--window", "0", stdin=json.dumps(CHAT).encode())
        assert [CHAT[0]] == json.loads(done.stdout)

    @pytest.mark.parametrize(
        ("pin", "expected"),
        [
            ("system", [CHAT[0], CHAT[-1]]),
            ("system+user", [CHAT[0], CHAT[1], CHAT[-1]]),
            ("none", [CHAT[-1]]),
        ],
    )
    def test_pins(self, chat: Path, pin: str, expected: list[dict[str, Any]]) -> None:
        """``--pin`` chooses the prefix that is always kept."""
        done = invoke("compact", str(chat), "--window", "1", "--pin", pin)
        assert expected == json.loads(done.stdout)

    def test_overwrite_input(self, chat: Path) -> None:
        """OUT may be FILE itself: it is read first and replaced atomically."""
        invoke("compact", str(chat), "--window", "1", "-o", str(chat))
        assert [CHAT[0], CHAT[-1]] == json.loads(chat.read_text(encoding="utf-8"))

    def test_summarize_sample(self, tmp_path: Path) -> None:
        """--summarize keeps the system prompt, one checkpoint and the last --keep messages."""
        out = tmp_path / "s.json"
        done = invoke("compact", "--summarize", "--keep", "4", "-o", str(out))
        written = json.loads(out.read_text(encoding="utf-8"))
        original = json.loads(SAMPLE.read_text(encoding="utf-8"))
        assert original[0] == written[0]
        assert written[1]["content"].startswith("[Checkpoint: earlier conversation, compacted]")
        assert original[-3:] == written[-3:]
        assert [] == validate_openai(from_openai(written))
        assert "added              1 checkpoint" in done.stderr
        assert "exact details (paths, ids, numbers, commands) checked" in done.stderr

    def test_budget_options(self, tmp_path: Path) -> None:
        """--keep-recent and --boundary reach the budget compactor, and the title shows them."""
        out = tmp_path / "b.json"
        done = invoke(
            "compact", "--budget", "6,000", "--keep-recent", "1500", "--boundary", "user_turn",
            "-o", str(out),
        )  # fmt: skip
        written = json.loads(out.read_text(encoding="utf-8"))
        original = json.loads(SAMPLE.read_text(encoding="utf-8"))
        assert tokens(written) < tokens(original)
        assert [] == validate_openai(from_openai(written))
        assert "--budget 6,000 --keep-recent 1,500 --boundary user_turn" in done.stderr
        assert written[2]["role"] == "user"  # the kept dialogue starts on a user turn

    def test_budget_already_met(self, tmp_path: Path) -> None:
        """Under the budget nothing is summarized, and the note says so."""
        done = invoke("compact", "--budget", "1_000_000", "-o", str(tmp_path / "x.json"))
        assert "already within the budget" in done.stderr

    @needs_corpus
    def test_budget_fits(self, tmp_path: Path) -> None:
        """--budget brings a real agent transcript under the budget, tool pairs intact."""
        source = CORPUS / "claudecode_opus46_session_precompact.openai.json"
        out = tmp_path / "b.json"
        invoke("compact", str(source), "--budget", "20000", "-o", str(out))
        written = json.loads(out.read_text(encoding="utf-8"))
        assert tokens(written) <= 20_000
        assert [] == validate_openai(from_openai(written))

    @needs_corpus
    @pytest.mark.parametrize("name", [n for n in CORPUS_FILES if "anthropic" in n])
    def test_anthropic_in_anthropic_out(self, tmp_path: Path, name: str) -> None:
        """An Anthropic transcript compacts to a valid Anthropic transcript of its last messages."""
        out = tmp_path / "out.json"
        invoke("compact", str(CORPUS / name), "--window", "7", "-o", str(out))
        turns = json.loads(out.read_text(encoding="utf-8"))
        assert isinstance(turns, list)
        assert {"user", "assistant"} >= {turn["role"] for turn in turns}
        kept = load_anthropic(out)
        original = load_anthropic(CORPUS / name)
        # Real Claude Code turns hold blank text blocks ("\n\n" before thinking); the
        # lossless writer keeps them as read (the backend leaves them out when it sends),
        # so the compaction must add no problem other than those the input already has.
        inherited = {_unnumbered(p) for p in validate_anthropic(original)}
        assert set() == {_unnumbered(p) for p in validate_anthropic(kept)} - inherited
        body = [c for c in kept if c.content != "(earlier conversation)"]
        assert original[-len(body) :] == body

    @needs_corpus
    @pytest.mark.parametrize("name", CORPUS_FILES)
    def test_round_trip_every_format(self, tmp_path: Path, name: str) -> None:
        """Compacting nothing writes each real file back as it was read: the same JSON."""
        source = CORPUS / name
        out = tmp_path / "out.json"
        invoke("compact", str(source), "--window", "100000", "-o", str(out))
        assert json.loads(source.read_text(encoding="utf-8")) == json.loads(
            out.read_text(encoding="utf-8")
        )

    @needs_corpus
    def test_format_option(self, tmp_path: Path) -> None:
        """--format names the input's format, and the output keeps it."""
        source = tmp_path / "run.txt"
        shutil.copy(CORPUS / "claudecode_haiku45_subagent_afc096d.anthropic.json", source)
        done = invoke("compact", str(source), "--format", "anthropic", "-w", "3")
        assert all("content" in turn for turn in json.loads(done.stdout))
        invoke("compact", str(source), "--format", "jsonl", "-w", "3", code=2)


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
        json.dumps([user("a"), {"role": "robot", "content": "x"}], indent=2),
        "{dir}chat.json message 1 (line 6): role='robot' is not one of",
    ),
    (
        "chat.jsonl",
        json.dumps(user("a")) + "\n\n" + json.dumps(result("c9")) + "\n",
        "{dir}chat.jsonl line 3: tool result for tool_call_id='c9' answers no earlier tool call",
    ),
    (
        "chat.json",
        json.dumps([calls("c1"), user("a")]),
        "{dir}chat.json message 0 (line 1): tool call 'c1' (ls) got no result before message 1",
    ),
    (
        "chat.json",
        json.dumps(
            [user("a"), {"role": "assistant", "content": [{"type": "tool_use", "name": "ls"}]}],
            indent=1,
        ),
        "{dir}chat.json message 1 (line 6): content[0]: id=None must be a non-empty string",
    ),
    (
        "chat.json",
        json.dumps([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]),
        "{dir}chat.json message 0 (line 1): tool result for tool_call_id='t' answers no earlier",
    ),
]
BAD_IDS = [
    "missing",
    "bad-json",
    "not-a-message",
    "unknown-role",
    "orphan",
    "unanswered",
    "anthropic-field",
    "anthropic-orphan",
]


class TestErrors:
    """Bad input: one error line naming file, place and field; status 2; nothing written."""

    @pytest.mark.parametrize(("name", "text", "expected"), BAD_INPUTS, ids=BAD_IDS)
    def test_bad_input(self, tmp_path: Path, name: str, text: str | None, expected: str) -> None:
        """The error names the file, the line or message, and the field; OUT is untouched."""
        source = tmp_path / name
        if text is not None:
            source.write_text(text, encoding="utf-8")
        target = tmp_path / "out.json"
        target.write_text("precious", encoding="utf-8")
        done = invoke("compact", str(source), "-w", "1", "-o", str(target), code=2)
        assert "" == done.stdout
        lines = done.stderr.splitlines()
        assert 1 == len(lines)
        assert lines[0].startswith(
            "mellea-ctx: error: " + expected.format(dir=f"{tmp_path}{os.sep}")
        )
        assert "precious" == target.read_text(encoding="utf-8")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            {name, "out.json"} - (set() if text is not None else {name})
        )

    @pytest.mark.parametrize(
        ("name", "text", "expected"),
        [BAD_INPUTS[i] for i in (1, 2, 3, 6)],
        ids=[BAD_IDS[i] for i in (1, 2, 3, 6)],
    )
    @pytest.mark.parametrize("command", ["stats", "validate"])
    def test_other_commands_refuse_unreadable_input(
        self, tmp_path: Path, name: str, text: str, expected: str, command: str
    ) -> None:
        """stats and validate refuse input they cannot read the same way, with status 2."""
        source = tmp_path / name
        source.write_text(text, encoding="utf-8")
        done = invoke(command, str(source), code=2)
        assert done.stderr.startswith(
            "mellea-ctx: error: " + expected.format(dir=f"{tmp_path}{os.sep}")
        )
        assert "" == done.stdout

    def test_problem_count(self, tmp_path: Path) -> None:
        """With several problems the line shows the first and counts the rest."""
        source = tmp_path / "chat.json"
        source.write_text(json.dumps([result("a"), result("b"), result("c")]), encoding="utf-8")
        done = invoke("compact", str(source), "--window", "1", code=2)
        assert done.stderr.rstrip().endswith("(2 more problems after this one)")

    def test_unwritable_output(self, tmp_path: Path) -> None:
        """An OUT in a missing folder is an error naming it, and nothing is written."""
        target = tmp_path / "missing" / "out.json"
        done = invoke("compact", "--window", "1", "-o", str(target), code=2)
        assert done.stderr.splitlines()[-1] == (
            f"mellea-ctx: error: cannot write {target}: No such file or directory"
        )
        assert not target.parent.exists()

    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            (["compact"], "choose one strategy: --window N, --budget TOKENS or --summarize"),
            (["compact", "-w", "3", "--summarize"], "(got --window and --summarize)"),
            (["compact", "--budget", "0"], "'0' is not a positive number of tokens"),
            (["compact", "--window", "-1"], "-1 is not in the range x>=0"),
            (["compact", "--window", "ten"], "'ten' is not a valid integer"),
            (["compact", "-w", "1", "--pin", "all"], "'all' is not one of"),
            (["compact", "-w", "1", "--keep-recent", "9"], "--keep-recent goes with --budget"),
            (["compact", "-w", "1", "--backend", "openai"], "--window calls no model"),
            (["compact", "--summarize", "--model", "m"], "--model and --base-url need --backend"),
            (["compact", "--budget", "10", "--keep-recent", "20"], "is above --budget 10"),
            (["validate", "x.json", "-o", "y.json"], "-o/--output goes with --repair"),
            (["demo", "--turns", "0"], "0 is not in the range"),
            (["demo", "--budget", "500"], "--budget 500 is too small for the demo"),
            (["shrink"], "No such command 'shrink'"),
        ],
    )
    def test_usage_errors(self, argv: list[str], expected: str) -> None:
        """Bad arguments print the usage and the error, and exit with status 2."""
        done = invoke(*argv, code=2)
        assert "" == done.stdout
        assert "Usage: " in done.stderr
        assert expected in " ".join(done.stderr.split())

    def test_no_command(self) -> None:
        """With no command the help is shown and the status is 2."""
        done = CliRunner().invoke(cli, [])
        assert 2 == done.exit_code
        assert "Commands:" in done.output

    def test_openai_without_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """--backend openai without a key or a server says which variable to set, status 2."""
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        done = invoke("compact", "--summarize", "--backend", "openai", code=2)
        assert "OPENAI_API_KEY" in done.stderr
        assert "api_key=" not in done.stderr  # command-line advice, not Python's
        assert "" == done.stdout

    def test_huge_integer_gets_command_line_advice(self, tmp_path: Path) -> None:
        """A 5,000-digit number: say what to do with the file, not sys.set_int_max_str_digits()."""
        source = tmp_path / "big.json"
        source.write_text('[{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}]")
        done = invoke("compact", str(source), "--window", "5", code=2)
        assert "set_int_max_str_digits" not in done.stderr
        assert "more digits than Python's JSON reader accepts" in done.stderr


class TestStats:
    """``mellea-ctx stats``."""

    def test_sample(self) -> None:
        """Tokens by role and tool, the largest messages, validity and cut points, on stdout."""
        done = invoke("stats")
        out = done.stdout
        total = tokens(json.loads(SAMPLE.read_text(encoding="utf-8")))
        assert f"62 messages, {total:,} tokens (o200k_base)" in out
        for heading in (
            "tokens by role",
            "tokens by tool",
            "largest 5 messages",
            "tool calls and results",
            "where each strategy would cut",
        ):
            assert heading in out
        assert "search_direct_flight" in out
        lines = " ".join(out.split())
        assert "openai │ valid" in lines and "anthropic │ valid" in lines
        assert "window │ --window 10 │ drops 51 messages" in lines
        assert f"--budget {total // 2:,}" in lines
        assert "summarize │ --summarize --keep 6 │ summarizes 55 messages" in lines

    def test_options(self) -> None:
        """The strategies' settings can be chosen; a budget above the total cuts nothing."""
        done = invoke("stats", "--window", "100", "--budget", "1000000", "--top", "2")
        lines = " ".join(done.stdout.split())
        assert "largest 2 messages" in lines
        assert "no cut: the body already fits in 100 messages" in lines
        assert "is within the budget" in lines

    def test_invalid_history(self, tmp_path: Path) -> None:
        """A history with an orphan result is still measured, and its problem shown per provider."""
        source = tmp_path / "chat.jsonl"
        source.write_text(
            "".join(json.dumps(m) + "\n" for m in [user("a"), result("zz")]), encoding="utf-8"
        )
        lines = " ".join(invoke("stats", str(source)).stdout.split())
        assert "openai │ 1 problem │ line 2: tool result for tool_call_id='zz'" in lines
        assert "anthropic │ 1 problem │ line 2:" in lines

    @needs_corpus
    def test_anthropic_file(self) -> None:
        """An Anthropic transcript is read as one, and its tools listed."""
        source = CORPUS / "claudecode_sonnet45_subagent_a2898e3.anthropic.json"
        out = invoke("stats", str(source)).stdout
        assert "(Anthropic Messages)\n24 turns (46 messages as read)" in out
        assert "Read" in out and "Grep" in out


class TestValidate:
    """``mellea-ctx validate``."""

    def test_valid(self, chat: Path) -> None:
        """A valid history: one line, status 0."""
        done = invoke("validate", str(chat), "--provider", "openai")
        assert f"{chat}: valid for openai (10 messages)" == done.stdout.strip()

    def test_problems(self, tmp_path: Path) -> None:
        """Problems are listed with their line, and the status is 1."""
        source = tmp_path / "chat.jsonl"
        source.write_text(
            "".join(json.dumps(m) + "\n" for m in [user("a"), calls("c1"), user("b"), result("q")]),
            encoding="utf-8",
        )
        done = invoke("validate", str(source), code=1)
        lines = " ".join(done.stdout.split())
        assert "2 problems for openai (4 messages)" in lines
        assert "line 2 │ tool call 'c1' (ls) got no result before line 3" in lines
        assert "line 4 │ tool result for tool_call_id='q'" in lines

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_repair(self, tmp_path: Path, provider: str) -> None:
        """--repair writes a valid history in the input's format, and lists the changes."""
        source = tmp_path / "chat.jsonl"
        messages = [calls("c0"), user("a"), calls("c1"), user("b"), result("q")]
        source.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
        out = tmp_path / "fixed.jsonl"
        done = invoke("validate", str(source), "--provider", provider, "--repair", "-o", str(out))
        repaired = load_conversation(out)
        validator = validate_openai if provider == "openai" else validate_anthropic
        assert [] == validator(repaired)
        assert "repaired for " + provider in done.stdout
        assert "dropped the tool result for tool_call_id='q'" in " ".join(done.stdout.split())
        assert out.read_text(encoding="utf-8").count("\n") == len(repaired)  # still JSONL
        invoke("validate", str(out), "--provider", provider)

    def test_repair_to_stdout(self, chat: Path) -> None:
        """Without -o the repaired history goes to stdout and the report to stderr."""
        done = invoke("validate", str(chat), "--repair")
        assert CHAT == json.loads(done.stdout)
        assert "0 changes, 10 -> 10 messages: the history was already valid" in done.stderr

    @needs_corpus
    def test_anthropic_by_default_for_anthropic_files(self) -> None:
        """An Anthropic file is checked against Anthropic's rules unless told otherwise."""
        source = CORPUS / "claudecode_haiku45_subagent_afc096d.anthropic.json"
        assert "valid for anthropic" in invoke("validate", str(source)).stdout


class TestDemo:
    """``mellea-ctx demo``."""

    def test_chart_and_table(self) -> None:
        """The session compacts inline; the chart and the figures are printed."""
        out = invoke("demo", "--turns", "30", "--budget", "2000").stdout
        assert "context tokens after each model step (budget 2,000" in out
        assert "█" in out and "step 30" in out
        lines = " ".join(out.split())
        assert "model steps │ 30 │ 30" in lines
        compactions = lines.split("compactions │ ")[1].split()[0]
        assert int(compactions) >= 1

    def test_deterministic(self) -> None:
        """Two runs print the same thing."""
        assert invoke("demo", "--turns", "12").stdout == invoke("demo", "--turns", "12").stdout

    def test_plot(self, tmp_path: Path) -> None:
        """--plot writes a PNG of the chart."""
        pytest.importorskip("matplotlib")
        out = tmp_path / "tokens.png"
        invoke("demo", "--turns", "20", "--budget", "2000", "--plot", str(out))
        assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")

    def test_plot_without_matplotlib(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without matplotlib, --plot names the extra to install, and writes nothing."""
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        out = tmp_path / "tokens.png"
        done = invoke("demo", "--plot", str(out), code=2)
        assert "pip install '.[plot]' in the mellea-ctx clone" in done.stderr
        assert not out.exists()


class TestHelp:
    """Help and version."""

    @pytest.mark.parametrize("command", [[], ["compact"], ["stats"], ["validate"], ["demo"]])
    def test_help_has_examples(self, command: list[str]) -> None:
        """Every help page shows its options and at least one example."""
        out = invoke(*command, "--help").stdout
        assert "Examples:" in out
        assert f"  mellea-ctx {command[0] if command else ''}".rstrip() in out
        assert "--help" in out

    def test_compact_help_lists_every_option(self) -> None:
        """``compact --help`` documents each option."""
        out = invoke("compact", "--help").stdout
        for option in (
            "--window",
            "--budget",
            "--keep-recent",
            "--summarize",
            "--keep",
            "--boundary",
            "--pin",
            "--backend",
            "--model",
            "--base-url",
            "--format",
            "--output",
        ):
            assert option in out

    def test_version(self) -> None:
        """``--version`` prints the package version."""
        assert f"mellea-ctx {mellea_ctx.__version__}" == invoke("--version").stdout.strip()

    def test_main_returns_the_status(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``main`` returns the exit status instead of exiting."""
        assert 2 == main(["compact"])
        assert 0 == main(["--help"])
        assert "Usage: mellea-ctx" in capsys.readouterr().out


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


@pytest.mark.slow
class TestSubprocess:
    """The command as a user runs it, in a fresh process."""

    @pytest.mark.parametrize("command", launchers())
    def test_readme_command(self, tmp_path: Path, command: list[str]) -> None:
        """``mellea-ctx compact --window 10 -o compacted.json`` works as the README says."""
        completed = subprocess.run(
            [*command, "compact", "--window", "10", "-o", "compacted.json"],
            capture_output=True,
            env=this_checkout(),
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert 0 == completed.returncode, completed.stderr
        compacted = load_conversation(tmp_path / "compacted.json")
        assert [] == validate_openai(compacted)
        assert 11 == len(compacted)
        assert b"" == completed.stdout

    def test_readme_command_line_block(self, tmp_path: Path) -> None:
        """The README's "Command line" lines run, in order, after its set-up command."""
        readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
        section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
        (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
        lines = [line.split("  #", 1)[0].split() for line in block.splitlines() if line.strip()]
        for words in [["mellea-ctx", "compact", "--window", "10", "-o", "compacted.json"], *lines]:
            assert "mellea-ctx" == words[0]
            completed = subprocess.run(
                [sys.executable, "-m", "mellea_ctx", *words[1:]],
                capture_output=True,
                env=this_checkout(),
                cwd=tmp_path,
                timeout=300,
                check=False,
            )
            assert 0 == completed.returncode, (words, completed.stderr[-2000:])

    def test_bad_input_in_a_process(self, tmp_path: Path) -> None:
        """A missing file exits with status 2 and one line on stderr."""
        completed = subprocess.run(
            [sys.executable, "-m", "mellea_ctx", "compact", "nope.json", "-w", "1"],
            capture_output=True,
            env=this_checkout(),
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert 2 == completed.returncode
        assert b"" == completed.stdout
        assert [
            "mellea-ctx: error: cannot read nope.json: No such file or directory"
        ] == completed.stderr.decode("utf-8").splitlines()
