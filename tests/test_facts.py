"""Fact extraction: the exact details a summary must keep, found and checked."""

from __future__ import annotations

from mellea_ctx import (
    Checkpoint,
    Fact,
    Message,
    ToolCall,
    ToolMessage,
    extract_facts,
    missing_facts,
)


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
