"""The session ledger: derivation, supersession, merging across chains, storage, rendering."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    CompactionRecord,
    ExtractiveBackend,
    Ledger,
    LedgerEntry,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    SQLiteStore,
    ToolCall,
    ToolMessage,
    component_from_record,
    component_to_record,
    derive_ledger,
)


def values(ledger: Ledger, kind: str) -> list[str]:
    return [entry.value for entry in ledger.current(kind)]  # type: ignore[arg-type]


class TestDerivation:
    def test_a_rule_keeps_its_value(self) -> None:
        """'Never exceed $500 without explicit approval' is one entry, the amount inside it."""
        ledger = derive_ledger([Message("user", "Never exceed $500 without explicit approval.")])
        assert values(ledger, "rule") == ["Never exceed $500 without explicit approval."]

    def test_a_labelled_statement_takes_its_kind_from_the_label(self) -> None:
        """'HARD CONSTRAINT: ...' is a constraint, shown without its label."""
        said = "HARD CONSTRAINT: Budget cap is $900 total. Never exceed without explicit approval."
        ledger = derive_ledger([Message("user", said)])
        assert values(ledger, "constraint") == [
            "Budget cap is $900 total. Never exceed without explicit approval."
        ]

    def test_the_same_statement_with_a_new_value_supersedes(self) -> None:
        """A deadline moved is one entry: the new date current, the old one history."""
        ledger = derive_ledger(
            [
                Message("user", "The deadline is 2026-11-15."),
                Message("assistant", "Noted."),
                Message("user", "The deadline is 2026-12-01."),
            ]
        )
        (entry,) = [e for e in ledger.entries if "deadline" in e.value]
        assert entry.value == "The deadline is 2026-12-01."
        assert entry.superseded == ("The deadline is 2026-11-15.",)

    def test_an_update_in_other_words_supersedes_the_statement_it_updates(self) -> None:
        """'move the deadline to ...' replaces 'the deadline is ...'; a different limit stays."""
        ledger = derive_ledger(
            [
                Message("user", "The release deadline is 2026-11-15."),
                Message("user", "Conference spending must stay under $300."),
                Message("user", "Update: move the release deadline to 2026-12-01."),
            ]
        )
        shown = [e.value for e in ledger.entries]
        assert "The release deadline is 2026-11-15." not in shown
        assert "Update: move the release deadline to 2026-12-01." in shown
        assert "Conference spending must stay under $300." in shown

    def test_json_tool_output_is_read_by_field(self) -> None:
        """A reservation's id (starting with a digit), status, dates and amounts become facts."""
        result = json.dumps(
            {
                "reservation_id": "2FBBAH",
                "status": "confirmed",
                "flights": [{"flight_number": "HAT001", "date": "2024-05-01", "price": 120}],
                "notes": "x" * 500,
            }
        )
        ledger = derive_ledger(
            [
                Message("assistant", None, tool_calls=[ToolCall("c1", "get_reservation", "{}")]),
                ToolMessage(result, tool_call_id="c1"),
            ]
        )
        (fact,) = ledger.current("fact")
        assert fact.key == "fact:2FBBAH"
        for part in ("2FBBAH", "status=confirmed", "HAT001", "2024-05-01", "price=120"):
            assert part in fact.value
        assert "xxxx" not in fact.value

    def test_a_later_json_result_for_the_same_id_supersedes(self) -> None:
        """A cancelled reservation shows its new status, the old one as history."""
        calls = [
            Message("assistant", None, tool_calls=[ToolCall(f"c{i}", "get", "{}")])
            for i in range(2)
        ]
        ledger = derive_ledger(
            [
                calls[0],
                ToolMessage(
                    '{"reservation_id": "2FBBAH", "status": "confirmed"}', tool_call_id="c0"
                ),
                calls[1],
                ToolMessage(
                    '{"reservation_id": "2FBBAH", "status": "cancelled"}', tool_call_id="c1"
                ),
            ]
        )
        (fact,) = ledger.current("fact")
        assert "cancelled" in fact.value
        assert fact.superseded == ("reservation_id=2FBBAH, status=confirmed",)

    def test_commands_in_code_fences_and_observations_in_user_messages(self) -> None:
        """SWE-agent's shape: a fenced command, its observation as a user message, not a rule."""
        ledger = derive_ledger(
            [
                Message("user", "Fix the bug in the parser so that tabs are accepted."),
                Message("assistant", "Let me run the tests.\n```bash\npytest tests -x\n```"),
                Message(
                    "user",
                    "E   ModuleNotFoundError: No module named 'yaml'\n1 failed in 0.20s\n"
                    "You must never give up.",
                ),
                Message("assistant", "Install it and rerun.\n```bash\npytest tests -x\n```"),
                Message("user", "3 passed in 0.30s"),
            ]
        )
        assert values(ledger, "goal") == ["Fix the bug in the parser so that tabs are accepted."]
        assert values(ledger, "rule") == []  # an observation's words are not the user's rules
        (test,) = ledger.current("test")
        assert (test.value, test.state, test.superseded) == (
            "3 passed in 0.30s",
            "passed",
            ("1 failed in 0.20s",),
        )
        (error,) = ledger.current("error")
        assert "ModuleNotFoundError" in error.value
        assert error.state == "resolved"  # the same command passed later
        (command,) = ledger.current("command")
        assert command.value == "pytest tests -x → ok"

    def test_tool_calls_give_files_and_commands_with_outcomes(self) -> None:
        """OpenAI/Claude Code shape: a file edited stays 'modified' when read again."""
        ledger = derive_ledger(
            [
                Message(
                    "assistant",
                    None,
                    tool_calls=[
                        ToolCall("a", "Edit", json.dumps({"file_path": "src/app.py"})),
                        ToolCall("b", "Read", json.dumps({"file_path": "src/app.py"})),
                        ToolCall("c", "Bash", json.dumps({"command": "make test"})),
                    ],
                ),
                ToolMessage("ok", tool_call_id="a"),
                ToolMessage("text", tool_call_id="b"),
                ToolMessage("error: build failed\nexit code 2", tool_call_id="c"),
                Message(
                    "assistant",
                    None,
                    tool_calls=[ToolCall("d", "Bash", '{"command": "git commit -m x"}')],
                ),
                ToolMessage("[main 3bb8701] Fix the parser", tool_call_id="d"),
            ]
        )
        assert [(e.value, e.state) for e in ledger.current("file")] == [
            ("src/app.py (modified)", "modified")
        ]
        assert "make test → exit 2" in values(ledger, "command")
        assert [e.state for e in ledger.current("error")] == ["open"]
        assert values(ledger, "commit") == ["3bb8701 Fix the parser"]

    def test_derivation_is_deterministic(self) -> None:
        """The same components give the same ledger."""
        said = [Message("user", "Never push to main."), Message("user", "Deadline: 2026-01-02.")]
        assert derive_ledger(said) == derive_ledger(list(said))


class TestMerge:
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.tuples(st.sampled_from("abcd"), st.text(min_size=1, max_size=5)), max_size=20)
    )
    def test_merging_in_pieces_equals_merging_at_once(self, writes: list[tuple[str, str]]) -> None:
        """The current value of every key is the last one written, however the writes are split."""
        entries = [LedgerEntry("fact", key, value) for key, value in writes]
        whole = Ledger().merge(entries)
        for cut in range(len(entries) + 1):
            split = Ledger().merge(entries[:cut]).merge(entries[cut:])
            assert [(e.key, e.value) for e in split.entries] == [
                (e.key, e.value) for e in whole.entries
            ]
        last = {key: value for key, value in writes}
        assert {e.key: e.value for e in whole.entries} == last

    def test_an_update_after_five_compactions_replaces_the_first_value(self) -> None:
        """Chained checkpoints merge ledgers; the checkpoint never shows the stale value."""
        compactor = LLMSummarizeCompactor(
            default_backend=ScriptedBackend(lambda messages, options: "Work went on."), keep_n=0
        )
        ctx = ChatContext().add(Message("user", "The budget cap is $500. Never exceed it."))
        for round_ in range(5):
            for i in range(4):
                ctx = ctx.add(Message("user", f"Step {round_}.{i}: keep working on the parser."))
                ctx = ctx.add(Message("assistant", f"Working on it, round {round_} part {i}."))
            ctx = compactor.compact(ctx)
            assert isinstance(ctx.as_list()[0], Checkpoint)
        ctx = ctx.add(Message("user", "The budget cap is $800. Never exceed it."))
        ctx = ctx.add(Message("assistant", "Understood."))
        ctx = compactor.compact(ctx)
        (checkpoint,) = ctx.as_list()
        assert isinstance(checkpoint, Checkpoint)
        (rule,) = checkpoint.ledger.current("rule")
        assert rule.value == "The budget cap is $800. Never exceed it."
        assert rule.superseded == ("The budget cap is $500. Never exceed it.",)
        assert "$800" in checkpoint.content
        assert "$500" not in checkpoint.content


class TestStorage:
    def checkpoint(self) -> Checkpoint:
        inner = Checkpoint(
            "Early.",
            ledger=Ledger([LedgerEntry("rule", "r", "Never push.", source="user", index=1)]),
        )
        ledger = Ledger(
            [
                LedgerEntry("rule", "r", "Never push to main.", "user", 1, ("Never push.",)),
                LedgerEntry("test", "t", "3 passed", "tool Bash", 2, ("1 failed",), "passed"),
            ]
        )
        return Checkpoint("Later.", span=[inner], ledger=ledger, shown=("r",))

    def test_records_round_trip(self) -> None:
        """The ledger and what the content shows come back from a record, nested ones too."""
        checkpoint = self.checkpoint()
        back = component_from_record(json.loads(json.dumps(component_to_record(checkpoint))))
        assert isinstance(back, Checkpoint)
        assert (back.ledger, back.shown, back.content) == (
            checkpoint.ledger,
            checkpoint.shown,
            checkpoint.content,
        )
        (inner,) = back.span
        assert isinstance(inner, Checkpoint)
        assert inner.ledger == checkpoint.span[0].ledger  # type: ignore[union-attr]

    def test_stores_keep_the_ledger(self, tmp_path: object) -> None:
        """Memory and SQLite stores give the ledger back as it was saved."""
        checkpoint = self.checkpoint()
        for store in (MemoryStore(), SQLiteStore(f"{tmp_path}/s.db")):
            store.append("s", [checkpoint], expected_version=0)
            (back,) = store.load("s").components
            assert isinstance(back, Checkpoint)
            assert (back.ledger, back.shown) == (checkpoint.ledger, checkpoint.shown)

    def test_a_bad_ledger_record_is_refused(self) -> None:
        """A record whose ledger is not a list of entries is reported as damaged."""
        record = component_to_record(self.checkpoint())
        record["ledger"] = [{"kind": "rule"}]
        try:
            component_from_record(record)
        except ValueError as exc:
            assert "ledger" in str(exc)
        else:
            raise AssertionError("a damaged ledger was read")


class TestRendering:
    def test_the_checkpoint_fits_max_tokens_and_reports_what_it_left_out(self) -> None:
        """Summary plus ledger within max_tokens; rules first; the rest named in the record."""
        records: list[CompactionRecord] = []
        ctx = ChatContext().add(Message("user", "Never deploy on Fridays."))
        for i in range(40):
            ctx = ctx.add(
                Message(
                    "assistant",
                    None,
                    tool_calls=[
                        ToolCall(f"c{i}", "Bash", json.dumps({"command": f"ls dir{i} -la"}))
                    ],
                )
            )
            ctx = ctx.add(ToolMessage(f"file{i}.txt", tool_call_id=f"c{i}"))
        ctx = ctx.add(Message("user", "Thanks, carry on."))
        compactor = LLMSummarizeCompactor(
            default_backend=ExtractiveBackend(),
            keep_n=1,
            model_options={"max_tokens": 120},
            on_record=records.append,
        )
        out = compactor.compact(ctx)
        checkpoint = out.as_list()[0]
        assert isinstance(checkpoint, Checkpoint)
        assert ctx.counter.count(checkpoint) <= 120
        assert "Never deploy on Fridays." in checkpoint.content
        record = records[-1]
        assert record.outcome == "applied"
        assert record.ledger_omitted  # forty commands cannot all be shown
        assert {e.key for e in record.ledger_omitted}.isdisjoint(checkpoint.shown or ())
        assert len(checkpoint.ledger.current("command")) == 40  # all kept as data

    def test_the_exact_details_have_room_before_the_prose(self) -> None:
        """A model that writes to its ``max_tokens`` does not crowd out the exact details.

        The whole checkpoint fits ``max_tokens``, so the summary is asked for
        what the ledger leaves; the details the ledger does not hold (a timing
        stated in prose) were left no room and dropped. Seen with a real model
        (tests/llm): "37.5 ms" lost at ``max_tokens=220``.
        """
        prose = " ".join(["The renderer was reviewed line by line for rounding."] * 40)

        def to_the_limit(messages: object, options: dict[str, object]) -> ModelOutputThunk:
            words = prose.split()
            limit = int(options["max_tokens"])  # type: ignore[call-overload]
            while ChatContext().counter.count_text(" ".join(words)) > limit:
                words = words[: len(words) * 9 // 10]
            return ModelOutputThunk(" ".join(words))

        ctx = ChatContext()
        for item in [
            Message("system", "You are a careful coding agent."),
            Message("user", "Invoice INV-58213 is off by one cent. Find the cause."),
            Message(
                "assistant",
                "Each line is rounded before summing. Rendering takes 37.5 ms per invoice.",
            ),
            Message(
                "assistant",
                "Reading the renderer.",
                tool_calls=[ToolCall("c1", "read_file", json.dumps({"path": "src/render.py"}))],
            ),
            ToolMessage(
                "\n".join(f"    line_{i} = round(total * rate_{i}, 2)" for i in range(30)),
                tool_call_id="c1",
            ),
            Message("user", "Fix it by rounding once, then run pytest tests/test_invoice.py."),
            Message("assistant", "Changed the renderer to round once; 12 tests pass."),
            Message("user", "Now check the tax module."),
            Message("assistant", "Looking at the tax module next."),
        ]:
            ctx = ctx.add(item)
        records: list[CompactionRecord] = []
        compactor = LLMSummarizeCompactor(
            default_backend=ScriptedBackend(to_the_limit),
            keep_n=2,
            model_options={"max_tokens": 140},
            on_record=records.append,
        )
        out = compactor.compact(ctx)
        assert "applied" == records[-1].outcome, records[-1]
        checkpoint = out.as_list()[1]
        assert isinstance(checkpoint, Checkpoint)
        assert ctx.counter.count(checkpoint) <= 140
        assert "37.5 ms" in checkpoint.content and "INV-58213" in checkpoint.content
        assert () == records[-1].details_dropped


class TestShapes:
    def test_a_listing_is_history_and_a_lookup_is_state(self) -> None:
        """Of a JSON list of objects each is 'listed'; an object looked up alone is not."""
        listing = json.dumps([{"flight_number": f"HAT00{i}", "price": 100 + i} for i in range(3)])
        ledger = derive_ledger(
            [
                Message("assistant", None, tool_calls=[ToolCall("a", "search", "{}")]),
                ToolMessage(listing, tool_call_id="a"),
                Message("assistant", None, tool_calls=[ToolCall("b", "get", "{}")]),
                ToolMessage('{"reservation_id": "2FBBAH", "price": 107}', tool_call_id="b"),
            ]
        )
        states = {e.key: e.state for e in ledger.current("fact")}
        assert states == {
            "fact:HAT000": "listed",
            "fact:HAT001": "listed",
            "fact:HAT002": "listed",
            "fact:2FBBAH": "",
        }

    def test_a_file_read_names_what_it_defines(self) -> None:
        """Definitions in a read file (any language's def/class/module) join its entry."""
        source = "     1→defmodule App.Panel do\n     2→  def render(assigns) do\n"
        source += "     3→class Widget:\n     4→function initHooks() {\n"
        ledger = derive_ledger(
            [
                Message(
                    "assistant",
                    None,
                    tool_calls=[ToolCall("r", "Read", json.dumps({"file_path": "lib/panel.ex"}))],
                ),
                ToolMessage(source, tool_call_id="r"),
            ]
        )
        assert values(ledger, "file") == [
            "lib/panel.ex (read; defines App.Panel, render, Widget, initHooks)"
        ]

    def test_a_remark_is_not_a_goal_and_a_request_is(self) -> None:
        """'Load test peaked ...' sets no goal; 'Please fix ...' does."""
        remark = derive_ledger([Message("user", "Load test peaked at moderate traffic today.")])
        assert values(remark, "goal") == []
        ask = derive_ledger([Message("user", "Please fix the flaky upload test in CI.")])
        assert values(ask, "goal") == ["Please fix the flaky upload test in CI."]

    def test_shell_commands_name_their_files_and_edit_ranges_are_not_files(self) -> None:
        """'sed -n 1,9p src/a.py' uses src/a.py; SWE-agent's 'edit 12:14' names no file."""
        ledger = derive_ledger(
            [
                Message("user", "Fix the parser."),
                Message("assistant", "```\nsed -n 1,9p src/a.py\n```"),
                Message("user", "line one"),
                Message("assistant", "```\nedit 12:14\n```"),
                Message("user", "File updated."),
            ]
        )
        assert values(ledger, "file") == ["src/a.py (read)"]

    def test_an_update_without_a_label_keeps_the_kind_it_updates(self) -> None:
        """'For reports, show clocks in Pacific Time.' replaces the UTC constraint, as one."""
        ledger = derive_ledger(
            [
                Message("user", "HARD CONSTRAINT: Put every timestamp in UTC."),
                Message("user", "The webhook retries three times before dead-lettering."),
                Message("user", "For status reports, show clocks in Pacific Time."),
            ]
        )
        (entry,) = ledger.current("constraint")
        assert entry.value == "For status reports, show clocks in Pacific Time."
        assert entry.superseded == ("Put every timestamp in UTC.",)


class TestCommitSubjects:
    def test_a_commit_with_a_long_subject_is_an_entry(self) -> None:
        """Regression: a subject over 80 characters hid the commit (git prints it whole)."""
        subject = "feat: rebuild the transcript panel with a light theme and threaded rendering"
        output = f"[main 3bb8701] {subject} (#12)\n 2 files changed, 40 insertions(+)"
        span = [
            Message("user", "Commit it."),
            Message(
                "assistant", "", tool_calls=(ToolCall("c1", "Bash", '{"command": "git commit"}'),)
            ),
            ToolMessage(output, tool_call_id="c1", name="Bash"),
        ]
        commits = [e for e in derive_ledger(span).entries if e.kind == "commit"]
        assert [e.key for e in commits] == ["commit:3bb8701"]
        assert commits[0].value.startswith("3bb8701 feat: rebuild")
