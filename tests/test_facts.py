"""Fact extraction: the exact details a summary must keep, found and checked."""

from __future__ import annotations

import pickle

import pytest

from mellea_ctx import (
    Checkpoint,
    Fact,
    Message,
    ToolCall,
    ToolMessage,
    extract_facts,
    missing_facts,
)
from mellea_ctx._core.facts import candidates, fact_budget


def kinds(facts: list[Fact]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for fact in facts:
        grouped.setdefault(fact.kind, []).append(fact.text)
    return grouped


class TestExtractFacts:
    def test_finds_each_kind(self) -> None:
        """Paths, URLs, ids, quantities and commands are found in agent text."""
        text = (
            "I patched src/app/config.py and docs at https://example.com/guide?x=1. "
            "Order ZFA04Y and ticket PROJ-481 are linked to commit 3f2a9c1d. "
            "The build took 42.5 s and used 1.2 GB. Run `pytest -x tests/test_io.py` next."
        )
        found = kinds(extract_facts([Message("assistant", text)]))
        assert "src/app/config.py" in found["path"]
        assert "https://example.com/guide?x=1" in found["url"]
        assert {"ZFA04Y", "PROJ-481", "3f2a9c1d"} <= set(found["id"])
        assert {"42.5 s", "1.2 GB"} <= set(found["quantity"])
        assert "pytest -x tests/test_io.py" in found["command"]

    def test_user_constraints_come_first(self) -> None:
        """A constraint the user stated outranks every other detail."""
        facts = extract_facts(
            [
                Message("assistant", "Reading lib/big_module.py now."),
                Message("user", "Please never push to main without asking me first."),
            ]
        )
        assert facts[0] == Fact("constraint", "Please never push to main without asking me first.")

    def test_tool_call_commands(self) -> None:
        """A shell tool's command argument is an exact detail."""
        call = ToolCall("c1", "bash", {"command": "git diff -- src/x.py > patch.txt"})
        facts = extract_facts([Message("assistant", "", tool_calls=[call])])
        assert Fact("command", "git diff -- src/x.py > patch.txt") in facts

    def test_tool_output_ranks_below_dialogue(self) -> None:
        """With a tight limit, details the user and agent said win over tool output."""
        listing = "\n".join(f"pkg/mod_{i}.py" for i in range(200))
        facts = extract_facts(
            [ToolMessage(listing, tool_call_id="c1"), Message("assistant", "Edit pkg/core.py.")],
            limit=3,
        )
        assert facts[0].text == "pkg/core.py"
        assert len(facts) == 3

    def test_bounded(self) -> None:
        """However large the span, the result respects its limits."""
        listing = "\n".join(f"/var/data/file_{i}.json" for i in range(5_000))
        facts = extract_facts([ToolMessage(listing, tool_call_id="c1")], limit=10, max_chars=200)
        assert len(facts) <= 10
        assert sum(len(f.text) for f in facts) <= 200

    def test_checkpoint_details_carry_forward(self) -> None:
        """Details an earlier checkpoint carried are kept again, ahead of everything else."""
        earlier = Checkpoint("Worked on the parser.", preserved=("ORD-7781",), replaced_count=9)
        facts = extract_facts([earlier, Message("user", "Now fix tests/test_parse.py please.")])
        assert facts[0] == Fact("detail", "ORD-7781")

    def test_checkpoint_text_is_not_a_user_constraint(self) -> None:
        """A summary's wording ('must', 'never') is not mistaken for the user's own demand."""
        earlier = Checkpoint("The agent must never retry more than twice.", replaced_count=3)
        assert all(f.kind != "constraint" for f in extract_facts([earlier]))


class TestMissingFacts:
    def test_reports_what_the_summary_lost(self) -> None:
        """Only details absent from the summary (up to whitespace) are reported."""
        facts = [Fact("path", "src/a.py"), Fact("command", "make  test"), Fact("id", "X7BYG1")]
        assert missing_facts(facts, "Edited src/a.py; ran make test.") == [Fact("id", "X7BYG1")]


def texts(facts: list[Fact]) -> set[str]:
    return {fact.text for fact in facts}


class TestKindsAndPatterns:
    def test_budget_is_shared_across_kinds(self) -> None:
        """Many early commands do not crowd out a later path, id or commit hash."""
        calls = [
            Message(
                "assistant", "", tool_calls=[ToolCall(f"c{i}", "bash", {"command": f"ls d{i}"})]
            )
            for i in range(40)
        ]
        late = Message("assistant", "Edited src/late.py for PROJ-4; made 3bb8701a.")
        found = kinds(extract_facts([*calls, late], limit=6))
        assert {"path", "id", "command"} <= set(found)
        assert "src/late.py" in found["path"]

    def test_frequency_and_recency_rank_within_a_kind(self) -> None:
        """A path mentioned three times outranks one mentioned once."""
        span = [Message("assistant", "Read lib/once.ex and lib/often.ex.")]
        span += [Message("assistant", f"Again lib/often.ex ({i}).") for i in range(2)]
        paths = kinds(extract_facts(span))["path"]
        assert paths[0] == "lib/often.ex"

    def test_one_trackers_ids_are_not_a_pattern(self) -> None:
        """Issue 21: a tuned span's tracker ids (spotter-fum.1) are not a shape of their own."""
        span = [Message("assistant", "Working on spotter-fum.1 now.")]
        assert "spotter-fum.1" not in kinds(extract_facts(span)).get("id", [])

    def test_commit_hashes_in_git_output(self) -> None:
        """A hash git printed for a commit it made, or in a one-line log, is a commit."""
        output = "[main 3bb8701] feat: enrich renderer\n 2 files changed\n"
        log = "b9288c2 feat: panel\n980e43b docs: readme\n"
        span = [ToolMessage(output, tool_call_id="c1"), ToolMessage(log, tool_call_id="c2")]
        assert {"3bb8701", "b9288c2", "980e43b"} <= set(kinds(extract_facts(span))["commit"])

    def test_errors_and_test_results_in_tool_output(self) -> None:
        """Error and traceback lines and test summaries are kept from tool output."""
        output = (
            "Compiling 2 files (.ex)\n"
            "error: lib/a.ex:12: undefined function row_classes/3\n"
            "Traceback (most recent call last):\n"
            "ValueError: bad size\n"
            "Finished in 0.4 seconds\n49 tests, 0 failures\n"
            "=== 3 passed, 1 failed in 0.52s ===\n"
        )
        found = kinds(extract_facts([ToolMessage(output, tool_call_id="c1")]))
        assert "error: lib/a.ex:12: undefined function row_classes/3" in found["error"]
        assert "ValueError: bad size" in found["error"]
        assert {"49 tests, 0 failures", "3 passed, 1 failed in 0.52s"} <= set(found["result"])

    def test_numbers_with_thousands_separators(self) -> None:
        """A count such as "4,812 invoices" is kept with its noun."""
        found = kinds(extract_facts([Message("user", "Right now 4,812 invoices are stuck.")]))
        assert "4,812 invoices" in found["quantity"]

    def test_commands_from_parsed_arguments(self) -> None:
        """A command with quotes is kept as run, not as JSON-escaped text."""
        call = ToolCall("c1", "Bash", {"command": 'git commit -m "fix: quotes"'})
        facts = extract_facts([Message("assistant", "", tool_calls=[call])])
        assert Fact("command", 'git commit -m "fix: quotes"') in facts
        assert not any("\\" in fact.text for fact in facts)

    def test_long_command_keeps_its_first_line(self) -> None:
        """A multi-line command (a heredoc commit) is kept by its first line."""
        command = "git add lib/a.ex && git commit -m \"$(cat <<'EOF'\nfeat: x\n" + "y" * 400
        call = ToolCall("c1", "Bash", {"command": command})
        found = kinds(extract_facts([Message("assistant", "", tool_calls=[call])]))
        assert found["command"] == ["git add lib/a.ex && git commit -m \"$(cat <<'EOF'"]

    def test_files_the_agent_touched_relative_to_the_project(self) -> None:
        """Paths in Read/Edit arguments under one project root are given relative to it."""
        root = "/home/u/projects/app"
        calls = [
            ToolCall(f"c{i}", "Read", {"file_path": f"{root}/lib/{name}.ex"})
            for i, name in enumerate(["a", "b", "c"])
        ]
        edit = ToolCall("e", "Edit", {"file_path": f"{root}/lib/a.ex", "new_string": "`x y`"})
        found = kinds(extract_facts([Message("assistant", "", tool_calls=[*calls, edit])]))
        assert found["path"][0] == "lib/a.ex"
        assert {"lib/b.ex", "lib/c.ex"} <= set(found["path"])
        assert "command" not in found  # the edit's code is not prose

    @pytest.mark.parametrize(
        "text",
        [
            "Call `render/2` with the option.",  # an arity, not a path
            "Each call/result pair is threaded.",  # prose, not a path
            "The panel uses #334155 as its border.",  # a colour
            "Stamped 2026-02-10T22:14:03Z.",  # a timestamp piece
            "Use `classify_line` here.",  # a lone identifier is not a command
        ],
    )
    def test_false_positives(self, text: str) -> None:
        """Arities, prose pairs, colours, timestamps, lone identifiers: not paths or commands."""
        found = kinds(extract_facts([Message("assistant", text)]))
        assert not found.get("path") and not found.get("command")
        assert not {"#334155", "10T22", "T22"} & set(found.get("id", []))

    def test_uuids_in_tool_output_are_not_ids(self) -> None:
        """UUIDs in a fixture file the agent read are not details worth carrying."""
        output = '{"parentUuid":"8019f489-dbd3-41b0-8da1-f7204a882125"}'
        assert "id" not in kinds(extract_facts([ToolMessage(output, tool_call_id="c1")]))

    def test_budget_grows_with_the_span(self) -> None:
        """A longer span gets a larger default budget, up to a bound."""
        assert fact_budget(10)[0] < fact_budget(1_000)[0] < fact_budget(10_000)[0]
        assert fact_budget(10**9)[0] == 400


class TestMemo:
    def test_candidates_are_computed_once_per_component(self) -> None:
        """A component is scanned once; later extractions reuse its memo."""
        message = Message("assistant", "Edited src/app.py.")
        first = candidates(message)
        assert candidates(message) is first
        assert extract_facts([message]) == extract_facts([message])

    def test_memo_is_invisible(self) -> None:
        """The memo takes no part in equality, hashing or pickling."""
        message = Message("assistant", "Edited src/app.py.")
        fresh = Message("assistant", "Edited src/app.py.")
        candidates(message)
        assert message == fresh
        assert hash(message) == hash(fresh)
        restored = pickle.loads(pickle.dumps(message))
        assert restored == fresh
        assert not hasattr(restored, "_facts_memo")


class TestUserDecisions:
    """A choice the user settled is kept word for word, as a constraint is."""

    def test_a_user_decision_is_a_detail_with_the_names_in_it(self) -> None:
        said = Message("user", "Agreed with Priya Raman: we use Decimal instead of float. Go.")
        facts = extract_facts([said])
        assert (
            Fact("decision", "Agreed with Priya Raman: we use Decimal instead of float.") in facts
        )

    def test_the_agents_own_plans_are_not_decisions(self) -> None:
        """Only the user settles a choice; the agent's "let's" is its own plan."""
        facts = extract_facts([Message("assistant", "Let's switch to the new parser next.")])
        assert all(f.kind != "decision" for f in facts)

    def test_a_limit_to_keep_under_is_a_constraint(self) -> None:
        said = Message("user", "Please keep every response under 420 ms.")
        assert extract_facts([said]) == [
            Fact("constraint", "Please keep every response under 420 ms.")
        ]


class TestChains:
    """A detail a compaction checked is checked again by every later one."""

    def test_a_detail_the_summary_held_is_checked_again_later(self) -> None:
        """The first summary kept the decision in its text; the next check still looks for it."""
        said = Message("user", "Agreed: we use Decimal instead of float for money.")
        first = Checkpoint(
            "The user agreed: we use Decimal instead of float for money.",
            span=(said, Message("assistant", "Done.")),
            replaced_count=2,
        )
        later = extract_facts([first, Message("user", "Now the exporter.")])
        assert Fact("detail", "Agreed: we use Decimal instead of float for money.") in later

    def test_a_checkpoint_without_its_span_stands_for_what_it_carried(self) -> None:
        first = Checkpoint("Worked on the parser.", preserved=("src/parser.py",))
        assert extract_facts([first]) == [Fact("detail", "src/parser.py")]

    def test_a_deep_chain_read_back_is_not_recursed(self) -> None:
        """5,000 nested checkpoints with no memo (as read from a store): no RecursionError."""
        checkpoint = Checkpoint("start", span=(Message("user", "Deploy with `make ship` only."),))
        for depth in range(5_000):
            said = Message("user", f"Step {depth}: touch src/mod_{depth}.py")
            checkpoint = Checkpoint(f"summary {depth}", span=(checkpoint, said), replaced_count=2)
        facts = extract_facts([checkpoint])
        assert facts and all(f.kind == "detail" for f in facts)

    def test_the_budget_grows_with_the_messages_a_checkpoint_covers(self) -> None:
        """A checkpoint of 400 messages and one new message: the budget of 401, not of 2."""
        plenty = tuple(Message("user", f"Read src/pkg/file_{i}.py please.") for i in range(400))
        first = Checkpoint("Read many files.", span=plenty, replaced_count=400)
        assert len(extract_facts([first, Message("user", "next")])) > 24

    def test_what_the_engine_remembers_is_what_a_fresh_reading_finds(self) -> None:
        """The engine memoizes the details it checked; a checkpoint read back finds the same."""
        from mellea_ctx import ChatContext, LLMSummarizeCompactor, ScriptedBackend

        ctx = ChatContext().add(Message("system", "Be brief."))
        said = ["Agreed: we use `make ship` only.", "Read src/a.py", "ok", "Next: ORD-1234"]
        for text in said:
            role = "assistant" if text == "ok" else "user"
            ctx = ctx.add(Message(role, f"{text} " + "and some ordinary talk " * 20))
        backend = ScriptedBackend(lambda messages, options: "We agreed on make ship.")
        result = LLMSummarizeCompactor(default_backend=backend, keep_n=1).compact(ctx)
        [made] = [c for c in result if isinstance(c, Checkpoint)]
        fresh = Checkpoint(made.summary, preserved=made.preserved, span=made.span, replaced_count=3)
        assert candidates(made) == candidates(fresh)
