"""The command line on any input: a status of 0, 1 or 2 and one line, never a traceback.

A property over arbitrary JSON-ish text and bytes, and over mutations of
real transcripts (the corpus, in each format the command line reads), runs
every command in-process; the regressions of issue 22 item 14 follow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mellea_ctx import from_openai, to_gemini, to_responses
from mellea_ctx._cli.app import cli

from .helpers import CORPUS

CORPUS_FILES = sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []

COMMANDS = (["stats"], ["validate"], ["compact", "--window", "1"], ["compact", "--window", "3"])


def run(argv: list[str], stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, argv, input=stdin, env={"COLUMNS": "200"})


def assert_clean(result: Result) -> None:
    """Exit 0, 1 or 2 through click, no traceback, no internal error, one line if it failed."""
    shown = f"{result.stdout}\n{result.stderr}"
    assert result.exit_code in (0, 1, 2), (result.exception, shown)
    assert result.exception is None or isinstance(result.exception, SystemExit), shown
    assert "Traceback" not in shown
    assert "internal error" not in result.stderr, result.stderr
    if result.exit_code == 2:
        assert result.stderr.count("\n") <= 2, result.stderr  # the error and a "Try" hint


# -- inputs ---------------------------------------------------------------------------------

KEYS = (
    "role",
    "content",
    "type",
    "text",
    "tool_calls",
    "tool_call_id",
    "function",
    "name",
    "arguments",
    "id",
    "input",
    "messages",
    "system",
    "contents",
    "parts",
    "systemInstruction",
    "functionCall",
    "functionResponse",
    "args",
    "response",
    "call_id",
    "output",
    "tool_use_id",
    "thinking",
    "signature",
    "summary",
)
WORDS = st.sampled_from(
    [
        "user",
        "assistant",
        "system",
        "tool",
        "model",
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "tool_use",
        "tool_result",
        "text",
        "thinking",
        "c1",
        "",
        "\ud800",
        "\udfff x",
        "é",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    WORDS,
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=4)), inner, max_size=5),
    ),
    max_leaves=24,
)
#: Objects shaped like messages, items, turns, blocks and parts: known keys, any values.
entries = st.dictionaries(st.sampled_from(KEYS), values, min_size=1, max_size=5)
documents = st.one_of(
    st.lists(entries, min_size=1, max_size=5),
    st.builds(lambda items: {"messages": items}, st.lists(entries, max_size=4)),
    st.builds(lambda items: {"input": items}, st.lists(entries, max_size=4)),
    st.builds(
        lambda s, items: {"systemInstruction": s, "contents": items},
        values,
        st.lists(entries, max_size=4),
    ),
    st.builds(
        lambda s, items: {"system": s, "messages": items}, values, st.lists(entries, max_size=4)
    ),
)
texts = st.one_of(
    documents.map(lambda v: json.dumps(v)),  # lone surrogates become "\ud800" escapes
    values.map(lambda v: json.dumps(v)),
    values.map(lambda v: "\n".join(json.dumps(x) for x in (v if isinstance(v, list) else [v]))),
    st.text(max_size=60),
)
raw_bytes = st.one_of(
    texts.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=60)
)


def _slices() -> list[Any]:
    """Short prefixes of each corpus file, and the same messages as Responses items and Gemini."""
    out: list[Any] = []
    for path in CORPUS_FILES:
        data = json.loads(path.read_text(encoding="utf-8"))
        head = data[:8]
        out.append(head)
        if path.name.endswith(".openai.json"):
            components = from_openai(head)
            out.append(to_responses(components))
            out.append({"model": "m", "input": to_responses(components)})
            out.append(to_gemini(components))
    return out


SLICES = _slices()


@st.composite
def mutated(draw: Any, document: Any) -> Any:
    """``document`` with a few values replaced, removed or added, anywhere in it."""
    document = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        node, path = document, []
        while isinstance(node, (list, dict)) and node and draw(st.booleans()):
            key = draw(
                st.sampled_from(list(range(len(node))) if isinstance(node, list) else list(node))
            )
            path.append((node, key))
            node = node[key]
        if not path:
            continue
        parent, key = path[-1]
        action = draw(st.integers(0, 2))
        if action == 0:
            parent[key] = draw(values)
        elif action == 1:
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(KEYS))] = draw(values)
        else:
            parent.insert(key, draw(values))
    return document


class TestNoTraceback:
    @settings(max_examples=150, deadline=None)
    @given(data=raw_bytes, command=st.sampled_from(COMMANDS))
    def test_any_bytes(self, data: bytes, command: list[str]) -> None:
        """Arbitrary JSON-ish text and bytes on stdin: a clean status under every command."""
        assert_clean(run([*command, "-"], data))

    @pytest.mark.skipif(not SLICES, reason=f"the transcript corpus is not at {CORPUS}")
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(data=st.data(), command=st.sampled_from(COMMANDS))
    def test_mutated_corpus(self, data: Any, command: list[str], tmp_path: Path) -> None:
        """A real transcript with a few values changed: a clean status under every command."""
        document = data.draw(mutated(data.draw(st.sampled_from(SLICES))))
        source = tmp_path / "t.json"
        source.write_text(json.dumps(document), encoding="utf-8")
        assert_clean(run([*command, str(source)]))


# -- issue 22 item 14 and issue 20, one regression each ------------------------------------


def write_json(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def lines(result: Result) -> str:
    return " ".join(f"{result.stdout}\n{result.stderr}".split())


RESPONSES_BODY = {
    "model": "gpt-4.1",
    "input": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Sunny, 21 C."},
        {"role": "assistant", "content": "It is sunny in Paris, 21 C."},
        {"role": "user", "content": "Thanks, and in Rome tomorrow?"},
    ],
}
GEMINI_BODY = {
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
        {"role": "model", "parts": [{"text": "Sunny, 21 C."}]},
        {"role": "user", "parts": [{"text": "And in Rome tomorrow?"}]},
    ],
}
SMALL = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
    {"role": "user", "content": "ok"},
    {"role": "assistant", "content": "fine"},
] * 3


class TestIssue20:
    def test_stats_and_validate_agree(self, tmp_path: Path) -> None:
        """[user "hi", assistant null] is invalid for OpenAI in both (stats said "valid").

        OpenAI: assistant ``content`` is "Required unless ``tool_calls`` or
        ``function_call`` is specified" (Chat Completions API reference).
        """
        source = write_json(
            tmp_path,
            "c.json",
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}],
        )
        validated = run(["validate", str(source), "--provider", "openai"])
        assert 1 == validated.exit_code
        assert "1 problem for openai" in lines(validated)
        stats = lines(run(["stats", str(source)]))
        assert (
            "openai │ 1 problem │ message 1 (line 1): an assistant message with content null"
            in stats
        )


class TestNoTracebackRegressions:
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses", "gemini"])
    def test_lone_surrogate_under_stats(self, tmp_path: Path, fmt: str) -> None:
        """A "\\ud800" escape (valid JSON, no UTF-8 code) is shown as \\ud800, status 0.

        Run as a real process: only a real UTF-8 stdout refuses the character.
        """
        documents = {
            "openai": [{"role": "user", "content": "bad \ud800 text"}],
            "anthropic": [
                {"role": "user", "content": [{"type": "text", "text": "bad \ud800 text"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            ],
            "responses": [{"type": "message", "role": "user", "content": "bad \ud800 text"}],
            "gemini": {"contents": [{"role": "user", "parts": [{"text": "bad \ud800 text"}]}]},
        }
        source = write_json(tmp_path, "s.json", documents[fmt])
        env = {**os.environ, "PYTHONIOENCODING": "utf-8", "COLUMNS": "200"}
        done = subprocess.run(
            [sys.executable, "-m", "mellea_ctx", "stats", str(source)],
            capture_output=True,
            env=env,
            check=False,
        )
        assert 0 == done.returncode, done.stderr.decode()
        assert b"Traceback" not in done.stderr
        assert b"bad \\ud800 text" in done.stdout

    @pytest.mark.parametrize("kind", [{"a": 1}, ["message"]])
    @pytest.mark.parametrize("command", COMMANDS)
    def test_type_that_is_an_object_or_array(
        self, tmp_path: Path, kind: Any, command: list[str]
    ) -> None:
        """An item or block whose "type" is an object or array: a clean status, every command."""
        for document in (
            [{"type": kind, "role": "user", "content": "x"}],
            [{"role": "user", "content": [{"type": kind, "text": "x"}]}],
            {"messages": [{"role": kind, "content": "x"}]},
        ):
            assert_clean(run([*command, str(write_json(tmp_path, "t.json", document))]))

    def test_gemini_system_instruction_without_contents(self, tmp_path: Path) -> None:
        """A Gemini body with a system instruction and no contents: measured, and invalid.

        Gemini refuses a request without contents (``contents`` is required, with
        at least one ``Content``: API reference, ``models.generateContent``).
        """
        body = {"contents": [], "systemInstruction": {"parts": [{"text": "Be brief."}]}}
        source = write_json(tmp_path, "g.json", body)
        stats = run(["stats", str(source)])
        assert 0 == stats.exit_code, lines(stats)
        assert "0 contents (1 message as read)" in lines(stats)
        assert "gemini │ 1 problem │ contents: there must be at least one content" in lines(stats)
        assert 1 == run(["validate", str(source)]).exit_code


class TestOwnUnits:
    def test_responses_body_counts_items(self, tmp_path: Path) -> None:
        """A Responses body is counted in items by validate, stats and compact (not 0 messages)."""
        source = write_json(tmp_path, "r.json", RESPONSES_BODY)
        assert "valid for responses (5 items)" in lines(run(["validate", str(source)]))
        assert "(OpenAI Responses) 5 items, " in lines(run(["stats", str(source)]))
        done = run(["compact", str(source), "--window", "1", "-o", str(tmp_path / "o.json")])
        assert "items │ 5 │ 1" in lines(done)
        assert "wrote 1 item to" in lines(done)

    def test_gemini_body_counts_contents(self, tmp_path: Path) -> None:
        """A Gemini body is counted in contents (the system instruction is none of them)."""
        source = write_json(tmp_path, "g.json", GEMINI_BODY)
        assert "valid for gemini (3 contents)" in lines(run(["validate", str(source)]))
        done = run(["compact", str(source), "--window", "1", "-o", str(tmp_path / "o.json")])
        assert "contents │ 3 │ 1" in lines(done)
        assert "wrote 1 content to" in lines(done)

    @pytest.mark.skipif(not CORPUS_FILES, reason=f"the transcript corpus is not at {CORPUS}")
    def test_anthropic_reports_say_turns(self, tmp_path: Path) -> None:
        """--window 10 on an Anthropic file: the header says 10, the table and "wrote" say turns."""
        source = CORPUS / "claudecode_haiku45_subagent_afc096d.anthropic.json"
        done = run(["compact", str(source), "--window", "10", "-o", str(tmp_path / "o.json")])
        shown = lines(done)
        assert "mellea-ctx compact: --window 10 " in shown
        written = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
        assert f"turns │ 36 │ {len(written)}" in shown
        assert f"wrote {len(written)} turns to" in shown
        assert "window widened to 11 turns" in shown

    @pytest.mark.skipif(not CORPUS_FILES, reason=f"the transcript corpus is not at {CORPUS}")
    def test_thinking_rule_named_as_the_reason(self, tmp_path: Path) -> None:
        """A window moved back to a thinking loop's first step says so, not "tool exchanges".

        Anthropic, extended thinking with tool use: the last assistant turn of a
        continuing tool loop must start with its thinking block ("Expected
        `thinking` or `redacted_thinking`, but found `tool_use`").
        """
        source = CORPUS / "claudecode_opus46_session_precompact.anthropic.json"
        shown = lines(
            run(["compact", str(source), "--window", "10", "-o", str(tmp_path / "o.json")])
        )
        assert "kept from its thinking step" in shown
        assert "tool exchanges are kept whole" not in shown

    def test_gemini_window_counts_contents(self, tmp_path: Path) -> None:
        """--window N on a Gemini file counts contents, as the report does (it counted messages).

        A content answering two calls holds two functionResponses: one content,
        two messages once read.
        """
        calls = [{"functionCall": {"name": "ls", "args": {}, "id": f"c{i}"}} for i in (1, 2)]
        answers = [
            {"functionResponse": {"name": "ls", "response": {"files": []}, "id": f"c{i}"}}
            for i in (1, 2)
        ]
        contents = [
            {"role": "user", "parts": [{"text": "q1"}]},
            {"role": "model", "parts": [{"text": "a1"}]},
            {"role": "user", "parts": [{"text": "q2"}]},
            {"role": "model", "parts": calls},
            {"role": "user", "parts": answers},
            {"role": "model", "parts": [{"text": "done"}]},
            {"role": "user", "parts": [{"text": "q3"}]},
        ]
        source = write_json(tmp_path, "g.json", {"contents": contents})
        out = tmp_path / "o.json"
        done = run(["compact", str(source), "--window", "3", "--pin", "none", "-o", str(out)])
        assert 0 == done.exit_code, lines(done)
        # the last 3 contents, the call their responses answer, and the user turn Gemini
        # needs before a call ("function call turn comes immediately after a user turn")
        opener = {"role": "user", "parts": [{"text": "(earlier conversation)"}]}
        written = json.loads(out.read_text(encoding="utf-8"))["contents"]
        assert [opener, *contents[-4:]] == written
        assert "contents │ 7 │ 5" in lines(done)
        assert "window widened to 4 contents: tool exchanges are kept whole" in lines(done)
        stats = lines(run(["stats", str(source), "--window", "3", "--pin", "none"]))
        assert "window │ --window 3 │ drops 3 contents" in stats

    def test_added_opening_turn_is_added_not_changed(self, tmp_path: Path) -> None:
        """The "(earlier conversation)" turn a window puts first is reported as added."""
        turns = [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three"},
            {"role": "assistant", "content": "four"},
        ]
        source = write_json(tmp_path, "a.anthropic.json", turns)
        out = tmp_path / "o.json"
        argv = ["compact", str(source), "--format", "anthropic", "--window", "1", "--pin", "none"]
        done = run([*argv, "-o", str(out)])
        written = json.loads(out.read_text(encoding="utf-8"))
        assert [{"role": "user", "content": "(earlier conversation)"}, turns[-1]] == written
        shown = lines(done)
        assert "added 1 turn" in shown
        assert "changed" not in shown.replace("unchanged", "")


class TestNewcomer:
    @pytest.mark.parametrize("option", [["--summarize"], ["--budget", "10"]])
    def test_summary_of_a_small_file(self, tmp_path: Path, option: list[str]) -> None:
        """A first try on a small file succeeds: nothing to do, said plainly, or a real summary.

        The error was "the summarizer returned an empty summary", status 1.
        """
        source = write_json(tmp_path, "small.json", SMALL)
        out = tmp_path / "o.json"
        done = run(["compact", str(source), *option, "-o", str(out)])
        assert 0 == done.exit_code, lines(done)
        written = json.loads(out.read_text(encoding="utf-8"))
        if "nothing to summarize" in lines(done):
            assert SMALL == written
        else:
            assert "1 checkpoint" in lines(done) and len(written) < len(SMALL)

    def test_budget_that_ends_over_warns(self, tmp_path: Path) -> None:
        """A result over --budget says so (it ended above the budget in silence)."""
        rows: list[dict[str, Any]] = [{"role": "system", "content": "rules " * 3000}]
        for i in range(8):
            rows += [
                {"role": "user", "content": f"Question {i}: what does line {i} of the log say?"},
                {"role": "assistant", "content": f"Line {i} says the build passed at step {i}."},
            ]
        source = write_json(tmp_path, "big.json", rows)
        done = run(["compact", str(source), "--budget", "1000", "-o", str(tmp_path / "o.json")])
        assert 0 == done.exit_code, lines(done)
        assert "warning: the result is" in lines(done) and "over --budget 1,000" in lines(done)

    def test_piped_input_without_a_dash_is_refused(self) -> None:
        """Input on stdin with no FILE is refused with the fix, not replaced by the sample."""
        for command in (["stats"], ["compact", "--window", "2"]):
            done = run(command, json.dumps(SMALL).encode())
            assert 2 == done.exit_code
            assert "pass '-' to read stdin" in done.stderr
        assert 0 == run(["stats"]).exit_code  # nothing piped: the sample, as before

    @pytest.mark.parametrize(("piped", "status"), [(b"[]", 2), (b"", 0)])
    def test_a_real_pipe(self, piped: bytes, status: int) -> None:
        """Through a real pipe: data without '-' is refused; an empty, closed pipe is no input."""
        done = subprocess.run(
            [sys.executable, "-m", "mellea_ctx", "stats", "--top", "1"],
            input=piped,
            capture_output=True,
            check=False,
        )
        assert status == done.returncode, done.stderr.decode()


class TestHugePiece:
    def test_no_piece_longer_than_the_bound_reaches_the_encoder(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """50 MB without spaces reaches tiktoken in bounded pieces (it took ~175 s whole)."""
        from mellea_ctx._core import tokens
        from mellea_ctx._core.encoding import load_o200k_base

        real = load_o200k_base()
        longest: list[int] = [0]

        class Recording:
            def encode_ordinary(self, text: str) -> list[int]:
                longest[0] = max(longest[0], len(text))
                return real.encode_ordinary(text)

        monkeypatch.setattr(tokens, "load_o200k_base", Recording)
        tokens._cut_length.cache_clear()
        for text in ("a" * 50_000_000, " " * 1_000_000, "/" * 1_000_000, "word " * 400_000):
            assert tokens.encoded_length(text) > 0
        tokens._cut_length.cache_clear()
        assert longest[0] <= tokens.LONGEST_PIECE

    @pytest.mark.skipif(not CORPUS_FILES, reason=f"the transcript corpus is not at {CORPUS}")
    def test_normal_text_is_counted_exactly(self) -> None:
        """Every corpus file, as one text, counts exactly what tiktoken counts whole."""
        from mellea_ctx._core.encoding import load_o200k_base
        from mellea_ctx._core.tokens import encoded_length

        encode = load_o200k_base().encode_ordinary
        minified = json.dumps(
            [{"id": i, "v": "x" * (i % 40)} for i in range(20_000)], separators=(",", ":")
        )
        for text in [p.read_text(encoding="utf-8") for p in CORPUS_FILES] + [minified]:
            assert len(encode(text)) == encoded_length(text)


class TestWhatTheOutputCannotCarry:
    """A key the output format does not define is left out, and the command says so."""

    def test_compact_warns_and_names_it(self, tmp_path: Path) -> None:
        turns = [
            {"role": "user", "content": "hi", "x_trace": "abc"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "and?"},
        ]
        source = tmp_path / "chat.anthropic.json"
        source.write_text(json.dumps({"system": "Be brief.", "messages": turns}))
        out = tmp_path / "out.json"
        result = run(
            ["compact", str(source), "--format", "anthropic", "--window", "5", "-o", str(out)]
        )
        assert_clean(result)
        assert result.exit_code == 0
        assert "could not carry 1 item" in result.output and "x_trace" in result.output
        assert "x_trace" not in out.read_text()
