"""The outside benchmarks' harnesses, on one seed and one file, so they cannot silently rot.

``benchmarks/conformance.py`` adapts our compactors to compaction-conformance-kit
(``nox -s conformance`` installs it; skipped here without it) and
``benchmarks/corpus_loo.py`` scores checkpoints on the real corpus. No score is
asserted (the numbers live in benchmarks/results/): these check that the adapter
runs through the kit's own benchmark, hands the kit what our compactor made, and
continues a chain from its own checkpoint; and that the corpus needs are derived
without the extractor.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import pytest

from .helpers import BENCHMARKS, load_benchmark


@pytest.fixture(scope="module")
def conformance() -> ModuleType:
    pytest.importorskip("compaction_kit")
    return load_benchmark("conformance")


@pytest.fixture(scope="module")
def corpus_loo() -> ModuleType:
    return load_benchmark("corpus_loo")


def test_the_kit_benchmarks_each_of_our_specs(conformance: ModuleType) -> None:
    from compaction_kit.benchmark import run_budget_benchmark

    factories = {cls.name: cls for cls in (conformance.Summarize, conformance.Tiered)}
    payload = run_budget_benchmark(factories, budgets=(0.2,), seeds=(1,), rounds=2)
    assert {e["compactor"] for e in payload["entries"]} == set(factories)
    for entry in payload["entries"]:
        # Something survives and the output is a fraction of the input: our compactor ran.
        assert entry["randomized"]["overall_final_survival"] > 0
        assert 0 < entry["mean_final_output_ratio"] < 0.5


def test_a_round_is_our_rendered_checkpoint_and_the_chain_continues_from_it(
    conformance: ModuleType,
) -> None:
    from compaction_kit.corpus import build_random_session
    from compaction_kit.session import Turn

    from mellea_ctx import CHECKPOINT_HEADER

    session, _ = build_random_session(1)
    adapter = conformance.Summarize()
    first = adapter.compact(session.transcript(), round_num=1, budget_chars=2_000)
    assert first.text.startswith("[system] You are a coding assistant.")
    assert CHECKPOINT_HEADER.split("\n")[0].strip() in first.text
    # The kit feeds the output back as one system turn: we continue from our own context
    # (its system prompt stays a system prompt), not from a re-read of the text.
    second = adapter.compact([Turn("system", first.text)], round_num=2, budget_chars=2_000)
    assert second.text.startswith("[system] You are a coding assistant.")
    assert "[user] [system]" not in second.text
    # Someone else's text is compacted as body, never pinned.
    other = conformance.Summarize()
    foreign = other.compact([Turn("system", first.text)], round_num=2, budget_chars=2_000)
    assert foreign.text.startswith("[user]")


def test_budget_in_tokens_follows_the_inputs_own_ratio(conformance: ModuleType) -> None:
    from compaction_kit.session import Turn

    seen: list[int] = []

    class Probe(conformance.TokenBudget):  # type: ignore[name-defined,misc]
        def make(self, budget_tokens: int, ctx: object) -> object:
            seen.append(budget_tokens)
            return super().make(budget_tokens, ctx)

    turns = [Turn("system", "Be brief.")] + [
        Turn("user" if i % 2 == 0 else "assistant", f"message number {i} about the parser")
        for i in range(40)
    ]
    text = "\n".join(f"[{t.role}] {t.text}" for t in turns)
    Probe().compact(turns, round_num=1, budget_chars=len(text) // 2)
    ctx = Probe().context(turns, 1)
    assert seen[0] == int((len(text) // 2) * ctx.token_count / len(text))


def test_corpus_needs_do_not_use_the_extractor(corpus_loo: ModuleType) -> None:
    tree = ast.parse((BENCHMARKS / "corpus_loo.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    assert not {m for m in imported if "facts" in m or "fact_patterns" in m or "_core" in m}
    assert "extract_facts" not in (BENCHMARKS / "corpus_loo.py").read_text(encoding="utf-8")


def test_corpus_needs_from_structure(corpus_loo: ModuleType) -> None:
    from mellea_ctx import Message, ToolCall, ToolMessage

    span = [
        Message("user", "Fix the parser. Never push to main without a review."),
        Message(
            "assistant",
            "",
            tool_calls=[ToolCall("c1", "bash", {"command": "pytest tests/test_parse.py -q"})],
        ),
        ToolMessage('{"reservation_id": "2FBBAH", "amount": 1234, "ok": true}', tool_call_id="c1"),
        Message("assistant", "Now:\n```\nopen src/parse.py 293\n```"),
        Message("user", "Traceback (most recent call last):\nValueError: bad token at 3"),
    ]
    flags = corpus_loo._observation_flags(span)
    assert flags == [False, False, True, False, True]
    found = corpus_loo.candidates(span, flags)
    assert found["command"] == {"pytest tests/test_parse.py -q", "open src/parse.py 293"}
    assert {"tests/test_parse.py", "src/parse.py"} <= found["path"]
    assert found["value"] == {"2FBBAH", "1234"}
    assert found["error"] == {"ValueError: bad token at 3"}
    assert found["rule"] == {"Never push to main without a review"}
    need = corpus_loo.needed(found, "I will refund 2FBBAH; the ValueError is gone.", "")
    assert need["value"] == ["2FBBAH"]  # 1234 is not used again
    assert need["error"] == ["ValueError: bad token at 3"]
    assert need["rule"] == ["Never push to main without a review"]  # rules stay in force
    assert not corpus_loo.contains("x 21234 y", "1234")


def test_a_numbered_listing_line_is_no_rule_candidate(corpus_loo: ModuleType) -> None:
    """SWE-agent shows a file as ``1427:    (de)serialization. Must be 'days', ...``: the
    docstring's "not a numbered file-listing line" holds after the line is cut in sentences."""
    from mellea_ctx import Message

    listing = "[File: fields.py]\n1427:        (de)serialization. Must be 'days', 'seconds',\n"
    span = [Message("user", listing + "Never push to main without a review.")]
    found = corpus_loo.candidates(span, [False])
    assert found["rule"] == {"Never push to main without a review"}


def test_corpus_one_file_end_to_end(corpus_loo: ModuleType) -> None:
    path = corpus_loo.CORPUS / "taubench_gpt-4o_airline_task2_trial1.openai.json"
    if not path.exists():
        pytest.skip(f"no corpus at {corpus_loo.CORPUS}")
    result = corpus_loo.evaluate(path)
    for share in ("5%", "10%"):
        row = result["shares"][share]
        assert row["needed"] > 0 and row["applied"]
        assert 0 <= row["kept"] <= row["needed"]
        assert row["checkpoint_tokens"] > 0


def test_junk_is_an_item_not_grounded_in_the_transcript(corpus_loo: ModuleType) -> None:
    flat = corpus_loo.norm("ran ls -la /srv/app-0rt/ then edit 1:1; the vault code yopum-31")
    words = set(flat.replace(";", " ").split())
    assert corpus_loo.grounded("ls -la /srv/app-0rt/ → ok", flat, words)  # renderer glue
    assert corpus_loo.grounded("1:1 (modified)", flat, words)
    assert corpus_loo.grounded("the vault code yopum-31 …", flat, words)  # clipped
    assert not corpus_loo.grounded("vault code yopum-32", flat, words)  # invented id
    assert not corpus_loo.grounded("blue cats sang", flat, words)
    assert corpus_loo.trivial("42") and corpus_loo.trivial("ok") and not corpus_loo.trivial("$297")


def test_loaders_read_the_agent_formats(corpus_loo: ModuleType, tmp_path: Path) -> None:
    import json

    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    swe = {
        "history": [
            {"role": "system", "content": "You are an agent.", "agent": "main"},
            {"role": "assistant", "content": "ls", "tool_calls": [call], "thought": "x"},
            {"role": "tool", "content": "a.py", "tool_call_ids": ["c1"]},
        ]
    }
    mini = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Fix it."}]}]}
    tau = [
        {"task_id": 3, "trial": 0, "traj": [{"role": "user", "content": "Hi", "name": "u"}]},
        {"task_id": 3, "trial": 1, "traj": [{"role": "user", "content": "Other"}]},
    ]
    anthropic = [
        {"role": "user", "content": "List files."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    ]
    for name, data in [
        ("s.traj", swe),
        ("m.traj.json", mini),
        ("t.json", tau),
        ("a.json", anthropic),
    ]:
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    _, span = corpus_loo.load(str(tmp_path / "s.traj"))
    assert [c.role for c in span] == ["system", "assistant", "tool"]
    assert span[2].tool_call_id == "c1"
    _, span = corpus_loo.load(str(tmp_path / "m.traj.json"))
    assert span[0].content == "Fix it."
    name, span = corpus_loo.load(str(tmp_path / "t.json") + "#3:1")
    assert span[0].content == "Other" and name.endswith("task3_trial1")
    _, span = corpus_loo.load(str(tmp_path / "a.json"))
    assert [c.role for c in span] == ["user", "assistant", "tool"]


def test_claude_code_log_merges_a_response_and_orders_its_results(
    corpus_loo: ModuleType,
) -> None:
    import json

    def line(kind: str, content: object, mid: str | None = None) -> str:
        message: dict[str, object] = {"role": kind, "content": content}
        if mid:
            message["id"] = mid
        return json.dumps({"type": kind, "message": message})

    use = {"type": "tool_use", "name": "Read", "input": {"file_path": "/a.py"}}
    log = [
        line("user", "Look at a.py and b.py."),
        json.dumps({"type": "progress"}),
        line("assistant", [{"type": "text", "text": "Reading."}], "m1"),
        line("assistant", [{**use, "id": "t1"}], "m1"),
        # A finished tool's result arrives between the lines of one response, and out of order.
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
        line("assistant", [{**use, "id": "t2"}], "m1"),
        line("assistant", [{**use, "id": "t3"}], "m1"),
        line("user", [{"type": "tool_result", "tool_use_id": "t3", "content": "C"}]),
        line("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "B"}]),
        line("assistant", [{"type": "thinking", "thinking": "x", "signature": "s"}], "m2"),
        line("assistant", [{"type": "text", "text": "Done."}], "m2"),
    ]
    turns = corpus_loo._claude_code(log)
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in turns[1]["content"]] == ["text", *["tool_use"] * 3]
    assert [b["tool_use_id"] for b in turns[2]["content"]] == ["t1", "t2", "t3"]
    assert turns[3]["content"] == [{"type": "text", "text": "Done."}]  # thinking left out
