"""The session ledger: derivation, supersession, merging across chains, storage, rendering."""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import assume, example, given, settings
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
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    component_from_record,
    component_to_record,
    derive_ledger,
)
from mellea_ctx._core.ledger import BRIEF_KINDS, brief, render_entries


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
        for part in ("2FBBAH", "status=confirmed", "HAT001", "2024-05-01", "price): HAT001"):
            assert part in fact.value
        assert fact.value.endswith(" 120")
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
        return Checkpoint("Later.", span=[inner], ledger=ledger, shown=("r",), short=("r",))

    def test_records_round_trip(self) -> None:
        """The ledger and what the content shows come back from a record, nested ones too."""
        checkpoint = self.checkpoint()
        back = component_from_record(json.loads(json.dumps(component_to_record(checkpoint))))
        assert isinstance(back, Checkpoint)
        assert (back.ledger, back.shown, back.short, back.content) == (
            checkpoint.ledger,
            checkpoint.shown,
            checkpoint.short,
            checkpoint.content,
        )
        assert "- Never push main" in back.content  # shown short, as it was
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
            assert (back.ledger, back.shown, back.short) == (
                checkpoint.ledger,
                checkpoint.shown,
                checkpoint.short,
            )

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

    def test_the_names_index_gives_way_before_an_exact_detail(self) -> None:
        """Over the size asked, the names index goes first, then the exact details.

        A model counts in its own tokens, so its summary can come back a little over
        the room it was asked for. The exact details gave way first while the names
        index (which only points at what entries and details state) stayed: the
        real-model session of tests/llm lost "37.5 ms" this way.
        """
        from tests.llm.test_summarize_real import PLANTED, conversation

        prose = (  # what the real model wrote
            "The user found a rounding error in the `InvoiceRenderer.render` function of the "
            "`src/billing/invoice_renderer.py` file. The function rounds each line of the "
            "invoice total before summing them, which caused an overall rounding error of one "
            "cent. The assistant changed the renderer to sum unrounded values and round once, "
            "then ran the tests to ensure the fix works as expected."
        )

        def a_little_over(messages: object, options: dict[str, object]) -> ModelOutputThunk:
            limit = int(options["max_tokens"])  # type: ignore[call-overload]
            return ModelOutputThunk(" ".join(prose.split()[: limit * 3 // 4]))

        records: list[CompactionRecord] = []
        compactor = LLMSummarizeCompactor(
            default_backend=ScriptedBackend(a_little_over),
            keep_n=2,
            model_options={"max_tokens": 220},
            on_record=records.append,
        )
        out = compactor.compact(conversation())
        visible = "\n".join(c.content for c in out)
        assert [] == [kind for kind, detail in PLANTED.items() if detail not in visible]
        assert () == records[-1].details_dropped
        assert any(e.kind == "name" for e in records[-1].ledger_omitted)


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


class TestShellFiles:
    """Files a shell command names: one entry a file, however the command spells it."""

    def files(self, *commands: str) -> dict[str, str]:
        span: list[Message | ToolMessage] = [Message("user", "Fix the parser.")]
        for i, command in enumerate(commands):
            call = ToolCall(f"c{i}", "bash", json.dumps({"command": command}))
            span += [
                Message("assistant", None, tool_calls=[call]),
                ToolMessage("ok", tool_call_id=f"c{i}"),
            ]
        return {e.key: e.value for e in derive_ledger(span).current("file")}

    def test_inline_code_names_no_file(self) -> None:
        """mini-swe-agent's ``python -c "...np.long..."``: attributes in code are not files."""
        code = 'python -c "import numpy as np; print(type(np.long), name.lower())"'
        assert self.files(code) == {}
        assert self.files("node -e 'require(\"fs\").readFileSync(x.json)'") == {}

    def test_a_name_pattern_is_not_a_file(self) -> None:
        """``find -name "raw.py"`` and ``grep --include="*.py"`` search; they name no file."""
        assert self.files('find /testbed -type f -name "raw_building.py"') == {}
        files = self.files('grep -rn x src/lib --include="*.py"')
        assert files == {"file:src/lib": "src/lib (read)"}

    def test_a_relative_path_after_cd_is_the_file_under_that_folder(self) -> None:
        """``cat > /t/a.py`` then ``cd /t && python a.py``: one file, written then run."""
        files = self.files(
            "cat > /testbed/test_fix.py << 'EOF'", "cd /testbed && python test_fix.py"
        )
        assert list(files) == ["file:/testbed/test_fix.py"]

    def test_a_redirect_target_is_modified(self) -> None:
        """``git diff > patch.txt`` writes patch.txt; ``2>&1`` writes nothing."""
        files = self.files("git diff -- src/a.py > patch.txt 2>&1")
        assert files == {
            "file:src/a.py": "src/a.py (read)",
            "file:patch.txt": "patch.txt (modified)",
        }

    @settings(max_examples=60)
    @given(
        st.from_regex(r"/[a-z]{1,8}(/[a-z]{1,8}){0,2}", fullmatch=True),
        st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8}){0,2}\.py", fullmatch=True),
    )
    def test_a_file_named_both_ways_is_one_entry(self, folder: str, relative: str) -> None:
        """Absolute in one command, relative after ``cd`` in another: the same key."""
        files = self.files(f"cat {folder}/{relative}", f"cd {folder} && python {relative}")
        assert list(files) == [f"file:{folder}/{relative}"]


class TestErrorsResolved:
    def run(self, *steps: tuple[str, str]) -> dict[str, str]:
        span: list[Message | ToolMessage] = [Message("user", "Fix the parser.")]
        for i, (command, output) in enumerate(steps):
            call = ToolCall(f"c{i}", "bash", json.dumps({"command": command}))
            span += [Message("assistant", None, tool_calls=[call])]
            span += [ToolMessage(output, tool_call_id=f"c{i}")]
        return {e.value: e.state for e in derive_ledger(span).current("error")}

    def test_installing_the_missing_module_resolves_its_error(self) -> None:
        """mini-swe-agent: "No module named 'lazy_object_proxy'", then ``pip install
        lazy-object-proxy`` passes: the error is resolved (names compared as pip does)."""
        missing = "ModuleNotFoundError: No module named 'lazy_object_proxy'"
        errors = self.run(
            ("python t.py", f"Traceback (most recent call last):\n{missing}\nexit code 1"),
            ("pip install -q lazy-object-proxy", "exit code 0"),
        )
        assert errors == {missing: "resolved"}

    def test_another_install_leaves_it_open(self) -> None:
        """Installing pytest does not resolve a missing numpy; a failed install does not either."""
        missing = "ModuleNotFoundError: No module named 'numpy'"
        errors = self.run(
            ("python t.py", f"{missing}\nexit code 1"),
            ("pip install pytest", "exit code 0"),
            ("pip install numpy", "ERROR: No matching distribution\nexit code 1"),
        )
        assert errors[missing] == "open"


class TestStatementShapes:
    def test_a_numbered_listing_line_is_not_a_statement(self) -> None:
        """SWE-agent shows files as ``1427:    Must be 'days', ...``: code, not a constraint."""
        listing = "[File: fields.py (1997 lines total)]\n"
        listing += "1427:        (de)serialization. Must be 'days', 'seconds',\n"
        listing += "1432:        Always serializes to an integer value.\n"
        ledger = derive_ledger([Message("user", listing)])
        assert [e for e in ledger.entries if e.kind in ("rule", "constraint")] == []

    def test_a_note_label_lets_the_body_decide(self) -> None:
        """'NOTE: ... make sure to indent' is a constraint; 'NOTE: the db is Postgres 15' a fact."""
        ledger = derive_ledger(
            [
                Message("user", "NOTE: When editing a file, make sure to insert indentation!"),
                Message("user", "Info: The staging deadline is 2027-01-05."),
                Message("user", "FACT: The database must run Postgres 15."),
            ]
        )
        assert values(ledger, "constraint") == [
            "When editing a file, make sure to insert indentation!",
            "The staging deadline is 2027-01-05.",
        ]
        assert values(ledger, "fact") == ["The database must run Postgres 15."]


class TestNamesIndex:
    def test_a_huge_span_s_index_reads_its_newest_messages(self) -> None:
        """The index's cost is bounded: a name only the oldest of 2,500 messages wrote is left.

        A 100,000-message compaction spent a quarter of its time on the index
        (issue 24); names the newest messages write are still indexed.
        """
        old = [Message("assistant", "Calling `fetch_invoice_v2` next.")]
        filler = [Message("user" if i % 2 else "assistant", f"step {i}") for i in range(2_500)]
        new = [Message("assistant", "Then `render_totals_v3` runs.")]
        names = [e.value for e in derive_ledger([*old, *filler, *new]).current("name")]
        assert "render_totals_v3" in names and "fetch_invoice_v2" not in names
        short = [e.value for e in derive_ledger([*old, *filler[:50], *new]).current("name")]
        assert {"fetch_invoice_v2", "render_totals_v3"} <= set(short)


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


class TestJsonShapes:
    """JSON tool results read densely: the values are the state, the field names the glue."""

    def facts(self, *results: object, then: str = "") -> Ledger:
        span: list[Message | ToolMessage] = []
        for i, result in enumerate(results):
            span.append(Message("assistant", None, tool_calls=[ToolCall(f"c{i}", "get", "{}")]))
            span.append(ToolMessage(json.dumps(result), tool_call_id=f"c{i}"))
        if then:
            span.append(Message("assistant", then))
        return derive_ledger(span)

    def test_a_list_of_objects_is_a_table_with_its_field_names_once(self) -> None:
        """Four flights of a reservation: every number, date and price, the names written once."""
        flights = [
            {"origin": o, "destination": d, "flight_number": f"HAT0{i}0", "price": 500 + i}
            for i, (o, d) in enumerate(
                [("DEN", "PHL"), ("PHL", "DEN"), ("DEN", "MIA"), ("MIA", "DEN")]
            )
        ]
        (fact,) = self.facts({"reservation_id": "2FBBAH", "flights": flights}).current("fact")
        assert fact.value == (
            "reservation_id=2FBBAH, flights (origin, destination, flight_number, price): "
            "DEN PHL HAT000 500; PHL DEN HAT010 501; DEN MIA HAT020 502; MIA DEN HAT030 503"
        )

    def test_nested_objects_keep_their_names(self) -> None:
        """Seats and prices both have an 'economy': each number stays with its own object."""
        result = {
            "flight_number": "HAT076",
            "available_seats": {"economy": 15, "business": 14},
            "prices": {"economy": 141, "business": 298},
        }
        (fact,) = self.facts([result, {**result, "flight_number": "HAT077"}]).current("fact")[:1]
        assert "available_seats(economy=15, business=14)" in fact.value
        assert "prices(economy=141, business=298)" in fact.value

    def test_a_group_of_objects_in_a_listing_is_one_fact(self) -> None:
        """One-stop search results are lists of flights: each connection is a fact."""
        legs = [
            [{"flight_number": "HAT229", "price": 113}, {"flight_number": "HAT266", "price": 157}]
        ]
        (fact,) = self.facts(legs).current("fact")
        assert fact.key == "fact:HAT229"
        assert "HAT229 113; HAT266 157" in fact.value

    def test_nested_parts_without_an_id_come_after_the_rest(self) -> None:
        """A cut takes the passengers' names before the payments: parts with ids stay first."""
        result = {
            "reservation_id": "2FBBAH",
            "passengers": [{"first_name": "Omar", "last_name": "Davis"}],
            "payment_history": [{"payment_id": "gift_card_3481935", "amount": 2822}],
            "insurance": "yes",
        }
        (fact,) = self.facts(result).current("fact")
        assert fact.value == (
            "reservation_id=2FBBAH, payment_history (payment_id, amount): gift_card_3481935 2822, "
            "insurance=yes, passengers (first_name, last_name): Omar Davis"
        )

    def test_a_fact_is_used_when_the_agent_names_an_id_among_its_values(self) -> None:
        """The agent wrote a payment method's id: the account that holds it goes first."""
        account = {"user_id": "u_1", "payment_methods": {"gift_card_7091239": {"amount": 31}}}
        (fact,) = self.facts(account, then="Paying with gift_card_7091239.").current("fact")
        assert fact.state == "used"


class TestNames:
    """The index of names the session wrote as code (issue 21: state a sub-agent reports)."""

    def test_code_names_are_indexed_and_words_and_path_parts_are_not(self) -> None:
        """Symbols, snake_case, camelCase, dotted names are names; words, path parts and calls
        (mostly the standard library's: a file's definitions are its entry's) are not."""
        output = (
            "assert Map.has_key?(line, :kind)\nTranscriptRenderer.render(messages)\n"
            "the text of lib/spotter_web/live.ex and tool_use_id"
        )
        ledger = derive_ledger(
            [
                Message("user", "Explore the renderer."),
                Message("assistant", None, tool_calls=[ToolCall("a", "Read", "{}")]),
                ToolMessage(output, tool_call_id="a"),
            ]
        )
        names = set(values(ledger, "name"))
        assert {":kind", "tool_use_id"} <= names
        assert not names & {"text", "spotter_web", "live.ex", "lib", "the", "Map.has_key?"}
        assert "TranscriptRenderer.render" not in names

    def test_what_the_agent_wrote_and_what_recurs_rank_first(self) -> None:
        """Salience is generic: written by the agent > seen in several messages > seen once."""
        span = [
            Message("user", "Look into it."),
            Message("assistant", None, tool_calls=[ToolCall("a", "Read", "{}")]),
            ToolMessage("once_only and twice_seen", tool_call_id="a"),
            Message("assistant", None, tool_calls=[ToolCall("b", "Read", "{}")]),
            ToolMessage("twice_seen again", tool_call_id="b"),
            Message("assistant", "The culprit is `agent_wrote`."),
        ]
        ledger = derive_ledger(span)
        by_name = {e.value: e for e in ledger.current("name")}
        assert by_name["agent_wrote"].state == "used"
        assert by_name["twice_seen"].state == "shared"
        assert by_name["once_only"].state == ""
        rendered = render_entries(ledger.current("name"))
        assert rendered.splitlines()[-1] == "agent_wrote, twice_seen, once_only"

    def test_an_observation_sent_as_a_user_message_is_not_the_user_writing(self) -> None:
        """SWE-agent's observations come as user messages; their names are output, not 'used'."""
        span = [
            Message("user", "Fix the bug."),
            Message("assistant", "```\ncat src/a.py\n```"),
            Message("user", "config_path = DEFAULT_PATH"),
        ]
        (entry,) = [e for e in derive_ledger(span).current("name") if e.value == "config_path"]
        assert entry.state == ""


class TestFileRoot:
    def test_files_are_shown_under_the_folder_they_share(self) -> None:
        """A long shared folder is written once; each path keeps its project folder's name."""
        root = "/home/someone/projects/app/"
        entries = [
            LedgerEntry("file", f"file:{root}{p}", f"{root}{p} (read)", index=i)
            for i, p in enumerate(("lib/a.py", "src/b.py", "README.md"))
        ]
        entries.append(LedgerEntry("file", "file:/tmp/x.log", "/tmp/x.log (read)", index=9))
        text = render_entries(entries)
        assert "Files (under /home/someone/projects/):" in text
        assert "- app/lib/a.py (read)" in text
        assert "- /tmp/x.log (read)" in text
        assert text.count(root) == 0

    def test_ids_and_hashes_are_names_and_css_sizes_are_not(self) -> None:
        """Codes of capitals and digits and hex hashes are ids; '0.5rem' and 'utf8' are not."""
        output = "reservation 2FBBAH on HAT028; commit 3bb8701; padding: 0.5rem; utf8"
        ledger = derive_ledger(
            [
                Message("user", "Check it."),
                Message("assistant", None, tool_calls=[ToolCall("a", "get", "{}")]),
                ToolMessage(output, tool_call_id="a"),
            ]
        )
        names = set(values(ledger, "name"))
        assert {"2FBBAH", "HAT028", "3bb8701"} <= names
        assert not names & {"0.5rem", "utf8"}

    def test_chained_checkpoints_keep_the_index_bounded(self) -> None:
        """Each compaction adds names; the merged index keeps only the newest few hundred."""
        old = Ledger(
            LedgerEntry("name", f"name:old_{i}", f"old_{i}", "session", index=i + 1)
            for i in range(400)
        )
        span = [
            Checkpoint("Earlier work.", ledger=old),
            Message("assistant", None, tool_calls=[ToolCall("a", "Read", "{}")]),
            ToolMessage("new_name here", tool_call_id="a"),
        ]
        names = values(derive_ledger(span), "name")
        assert "new_name" in names
        assert "old_399" in names and "old_0" not in names
        assert len(names) <= 240

    def test_kebab_case_in_code_is_a_name_and_in_prose_is_not(self) -> None:
        """A CSS class or hook in quotes or a selector is a name; "well-known" in prose is not."""
        output = '<div class="is-active" phx-hook="TranscriptSelection">\n.is-tool-use { }\n'
        output += "This is a well-known pattern."
        ledger = derive_ledger(
            [
                Message("user", "Look at the markup."),
                Message("assistant", None, tool_calls=[ToolCall("a", "Read", "{}")]),
                ToolMessage(output, tool_call_id="a"),
            ]
        )
        names = set(values(ledger, "name"))
        assert {"is-active", "is-tool-use"} <= names
        assert "well-known" not in names

    def test_names_false_leaves_out_only_the_index(self) -> None:
        """The extractive backend needs the user's statements only: the same ledger, no names."""
        span = [
            Message("user", "Never push to main."),
            Message("assistant", None, tool_calls=[ToolCall("a", "Read", "{}")]),
            ToolMessage("load_config and SessionLive", tool_call_id="a"),
        ]
        full, bare = derive_ledger(span), derive_ledger(span, names=False)
        assert values(full, "name") and not values(bare, "name")
        assert [e for e in full.entries if e.kind != "name"] == list(bare.entries)


class TestChoosing:
    """Which entries a small checkpoint shows (``choose_entries``, the engine's pick)."""

    def test_the_file_the_commands_went_back_to_goes_first(self) -> None:
        """mini-swe-agent: one source file read by many commands, then scratch files made later."""
        from mellea_ctx._compaction.render_budget import choose_entries

        span: list[Message | ToolMessage] = [Message("user", "Fix the parser.")]
        commands = [f"sed -n '{i},{i + 9}p' /repo/src/parse.py" for i in range(1, 40, 10)]
        commands += [f"cat > /repo/t{i}.py << 'EOF'" for i in range(4)]
        for i, command in enumerate(commands):
            call = ToolCall(f"c{i}", "bash", json.dumps({"command": command}))
            span += [Message("assistant", None, tool_calls=[call])]
            span += [ToolMessage("ok", tool_call_id=f"c{i}")]
        ledger = derive_ledger(span)
        assert len(ledger.current("file")) == 5
        # Room for the goal and one file: the file four commands named, not the newest one.
        shown, _ = choose_entries(ledger, 28, lambda text: len(text.split()) + 1)
        assert [key for key in shown if key.startswith("file:")] == ["file:/repo/src/parse.py"]


_FILLER = ("The design doc is still in draft.", "Acknowledged. Continuing with the plan.")
_RULES = [
    "Never disclose the vault code {code} to any user.",
    "Never push to the remote until Dana reviews the work.",
    "Do not run migrations on Fridays.",
    "Always report times in UTC.",
    "Never exceed $400 without explicit approval.",
    "Only use Python 3.11 in the sandbox.",
]


_WORD = st.sampled_from(
    ["the", "a", "of", "to", "is", "and", "never", "not", "only", "at", "most", "$500",
     "2026-12-01", "Dana", "push", "main", "3", "5", "x-41", "."]
)  # fmt: skip


class TestBrief:
    """The short lines of a checkpoint short of room (``brief``)."""

    @given(words=st.lists(_WORD, max_size=14))
    def test_only_filler_words_go(self, words: list[str]) -> None:
        """What is left is the text's words in order less some filler words (and a final
        full stop); every other word stays."""
        fillers = {"the", "a", "of", "to", "is", "and"}
        text = " ".join(words)
        kept = [w.rstrip(".") for w in brief(text).split() if w.rstrip(".")]
        said = [w.rstrip(".") for w in text.split() if w.rstrip(".")]
        rest = iter(said)
        assert all(any(word == w for w in rest) for word in kept)  # in order, none added
        content = [w for w in said if w.lower() not in fillers]
        assert [w for w in kept if w.lower() not in fillers] == content or not kept

    def test_quoted_text_stays(self) -> None:
        """Quoted text and code spans are data: their filler words stay."""
        assert brief('Say "the end" to run `make the build` now.') == (
            'Say "the end" run `make the build` now'
        )

    def test_a_rule_keeps_its_bounds_and_values(self) -> None:
        """Negations, bounds and the words between two numbers stay."""
        rule = "Never exceed $500 without approval. Only steps 1 to 3 of 5 are done at most."
        short = "Never exceed $500 without approval. Only steps 1 to 3 of 5 done at most"
        assert brief(rule) == short


def _ledger_of(rules: list[str], commands: int) -> Ledger:
    entries = [LedgerEntry("rule", f"r{i}", rule, "user", i) for i, rule in enumerate(rules)]
    entries += [
        LedgerEntry("command", f"c{i}", f"ls dir{i} → ok", "tool", len(rules) + i)
        for i in range(commands)
    ]
    return Ledger(entries)


def _words(text: str) -> int:
    return len(text.split()) + 1


class TestShortLines:
    """A checkpoint whose full lines do not fit shows its rules short (``choose_block``)."""

    @given(
        rules=st.lists(st.sampled_from(_RULES), min_size=1, max_size=6, unique=True),
        commands=st.integers(0, 6),
        room=st.integers(0, 120),
    )
    def test_the_block_fits_and_shows_what_the_full_lines_would(self, rules, commands, room):
        """The block fits its room; lines go short only when a rule or state would be left
        out, only sentences, and then it shows every rule the full lines showed, and more."""
        from mellea_ctx._compaction.render_budget import choose_block, choose_entries

        ledger = _ledger_of(rules, commands)
        shown, omitted, short = choose_block(ledger, room, _words)
        entries = [e for e in ledger.entries if e.key in set(shown)]
        if entries:
            assert _words(render_entries(entries, short=short)) <= room
        assert set(short) <= set(shown)
        assert all(e.kind in BRIEF_KINDS for e in entries if e.key in short)
        assert {e.key for e in omitted} | set(shown) == {e.key for e in ledger.entries}
        full, _ = choose_entries(ledger, room, _words)
        rules_of = lambda keys: {k for k in keys if k.startswith("r")}  # noqa: E731
        if rules_of(full) == {f"r{i}" for i in range(len(rules))}:
            assert short == ()  # every rule fits in full: nothing is reworded
        else:
            assert len(rules_of(shown)) >= len(rules_of(full))

    def test_with_room_nothing_is_short(self) -> None:
        """A checkpoint with room for the full lines shows them: the user's words, unchanged."""
        from mellea_ctx._compaction.render_budget import choose_block

        ledger = _ledger_of(_RULES, 3)
        shown, omitted, short = choose_block(ledger, 10_000, _words)
        assert (len(shown), omitted, short) == (len(ledger), (), ())


def _session(rules: list[str], filler_turns: int) -> ChatContext:
    ctx = ChatContext().add(Message("system", "You are a coding assistant."))
    for rule in rules:
        ctx = ctx.add(Message("user", rule)).add(Message("assistant", "Noted."))
    for _ in range(filler_turns):
        ctx = ctx.add(Message("user", _FILLER[0])).add(Message("assistant", _FILLER[1]))
    return ctx


class TestSizedByTheLedger:
    """TokenBudgetCompactor sizes its checkpoint by what the span's ledger must keep (issue 21)."""

    @settings(max_examples=25, deadline=None)
    @given(count=st.integers(1, len(_RULES)), filler=st.integers(6, 30), slack=st.integers(0, 60))
    def test_every_rule_shows_when_the_target_holds_them(self, count, filler, slack) -> None:
        """With room for the rules and the current turn, old filler turns give way, not rules.

        Before, the checkpoint had an eighth of the target whatever it held, and
        the rules fell out while verbatim filler turns stayed.
        """
        rules = _RULES[:count]
        ctx = _session(rules, filler)
        header = ctx.counter.count(Checkpoint(".", replaced_count=len(ctx) - 1))
        rules_tokens = sum(ctx.counter.count_text(f"- {rule}") + 1 for rule in rules)
        turn = ctx.counter.count(Message("user", _FILLER[0]))
        turn += ctx.counter.count(Message("assistant", _FILLER[1]))
        system = ctx.counter.count(ctx[0])
        target = system + header + rules_tokens + turn + 40 + slack  # headings, least summary
        assume(target < ctx.token_count)  # few filler turns and much slack: nothing is due
        compactor = TokenBudgetCompactor(
            max_tokens=target, target_tokens=target, default_backend=ExtractiveBackend()
        )
        out = compactor.compact(ctx)
        shown = "\n".join(c.content or "" for c in out.as_list())
        for rule in rules:
            assert rule in shown
        assert out.token_count <= target

    def test_rules_too_long_for_the_target_show_short(self) -> None:
        """compaction-conformance-kit at 10-20%: rules whose full lines did not fit were left
        out while their short lines fit; now each shows, without its filler words."""
        ctx = _session(_RULES, 30)
        header = ctx.counter.count(Checkpoint(".", replaced_count=len(ctx) - 1))
        full = sum(ctx.counter.count_text(f"- {rule}") + 1 for rule in _RULES)
        short = sum(ctx.counter.count_text(f"- {brief(rule)}") + 1 for rule in _RULES)
        assert short < full - 10
        turn = ctx.counter.count(Message("user", _FILLER[0]))
        turn += ctx.counter.count(Message("assistant", _FILLER[1]))
        target = ctx.counter.count(ctx[0]) + header + short + turn + 24
        records: list[CompactionRecord] = []
        compactor = TokenBudgetCompactor(
            max_tokens=target,
            target_tokens=target,
            default_backend=ExtractiveBackend(),
            on_record=records.append,
        )
        out = compactor.compact(ctx)
        checkpoint = next(c for c in out.as_list() if isinstance(c, Checkpoint))
        assert checkpoint.short
        for rule in _RULES:
            assert rule in checkpoint.content or brief(rule) in checkpoint.content
        assert out.token_count <= target
        assert records[-1].ledger_omitted == ()

    @pytest.mark.parametrize("size", range(50, 110))
    def test_a_ledger_that_fills_the_size_leaves_the_summary_its_least(self, size) -> None:
        """The conformance kit at 10%: the ledger took all but the summary's least room, the
        blank line between them took part of that, and the summary, with no room for even its
        fallback line, came back empty: the compaction failed (sizes 55, 63, 69, ... here)."""
        ctx = _session(_RULES, 30)
        compactor = LLMSummarizeCompactor(
            default_backend=ExtractiveBackend(), keep_n=4, model_options={"max_tokens": size}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a failed compaction warns and changes nothing
            out = compactor.compact(ctx)
        assert any(isinstance(c, Checkpoint) for c in out.as_list())

    @settings(max_examples=30, deadline=None)
    @given(size=st.integers(40, 140), facts=st.integers(0, 4))
    # The brief frame's room gave every chosen line its full line back, and that block was
    # over the full frame's room: nothing was shown, with a short rule's room unused.
    @example(size=47, facts=0)
    def test_the_room_a_short_summary_leaves_goes_to_the_ledger(self, size, facts) -> None:
        """compaction-conformance-kit at 20%: the summary came back shorter than its room and
        a fact its short line fit in was left out; now the block is chosen again for the room
        left. It fits the size, and shows as much as beside a summary that takes its room."""
        ctx = _session(_RULES, 0)
        for i in range(facts):
            ctx = ctx.add(Message("user", f"The staging host for region {i} is stg-{i}1.internal."))
            ctx = ctx.add(Message("assistant", "Noted."))
        for _ in range(30):
            ctx = ctx.add(Message("user", _FILLER[0])).add(Message("assistant", _FILLER[1]))

        def to_the_limit(messages: object, options: dict[str, object]) -> str:
            return " ".join(["work"] * int(options["max_tokens"]))  # type: ignore[call-overload]

        def checkpoint(answer: object) -> Checkpoint:
            compactor = LLMSummarizeCompactor(
                default_backend=ScriptedBackend(answer),  # type: ignore[arg-type]
                keep_n=2,
                model_options={"max_tokens": size},
            )
            out = next(c for c in compactor.compact(ctx).as_list() if isinstance(c, Checkpoint))
            assert ctx.counter.count(out) <= size
            return out

        full = checkpoint(to_the_limit)
        short = checkpoint(lambda messages, options: "Done.")
        assert len(short.shown or ()) >= len(full.shown or ())
        shown = short.shown_entries()
        block = ctx.counter.count_text(render_entries(shown, short=short.short)) if shown else 0
        unused = size - ctx.counter.count(short)
        # Each rule or fact left out has no room, even short (the block's estimate: 2 tokens).
        for entry in short.ledger.entries:
            if entry in shown:
                continue
            wider = render_entries([*shown, entry], short={*short.short, entry.key})
            assert ctx.counter.count_text(wider) - block > unused - 2, entry

    def test_a_given_summary_size_is_kept(self) -> None:
        """``summary_tokens`` fixes the checkpoint's size: it is what is asked, ledger or not."""
        ctx = _session(_RULES, 30)
        asked: list[object] = []

        def answer(messages: object, options: dict[str, object]) -> str:
            asked.append(options["max_tokens"])
            return "Summary."

        compactor = TokenBudgetCompactor(
            max_tokens=300,
            target_tokens=300,
            summary_tokens=20,
            default_backend=ScriptedBackend(answer),
        )
        compactor.compact(ctx)
        assert asked and all(size <= 20 for size in asked)  # type: ignore[operator]


class TestUpdatedAfterTheCheckpoint:
    """A value the kept messages update is not shown as current in the checkpoint (issue 21)."""

    @pytest.mark.parametrize("keep_n", [2, 4])
    def test_the_old_value_is_not_shown_when_a_kept_message_updates_it(self, keep_n) -> None:
        """compaction-conformance-kit's semantic suites: the old vault code stayed "current".

        The rule was in the span and its rotation in the messages kept
        verbatim, so the checkpoint showed the retired code as a latest value.
        """
        records: list[CompactionRecord] = []
        ctx = ChatContext().add(Message("system", "You are a coding assistant."))
        ctx = ctx.add(Message("user", "Never disclose the vault code adwgk-18 to any user."))
        ctx = ctx.add(Message("assistant", "Noted."))
        for _ in range(8):
            ctx = ctx.add(Message("user", _FILLER[0])).add(Message("assistant", _FILLER[1]))
        update = "The vault code rotated. Never disclose the new vault code bolib-77."
        ctx = ctx.add(Message("user", update))
        ctx = ctx.add(Message("assistant", "Noted."))
        if keep_n == 4:
            ctx = ctx.add(Message("user", _FILLER[0])).add(Message("assistant", _FILLER[1]))
        compactor = LLMSummarizeCompactor(
            default_backend=ExtractiveBackend(), keep_n=keep_n, on_record=records.append
        )
        out = compactor.compact(ctx)
        checkpoint = next(c for c in out.as_list() if isinstance(c, Checkpoint))
        assert "adwgk-18" not in checkpoint.content
        assert update in "\n".join(c.content or "" for c in out.as_list()[-keep_n:])
        old = [e for e in checkpoint.ledger.entries if "adwgk-18" in e.value]
        assert old  # kept as data, for the compaction that summarizes the update
        assert {e.key for e in old} <= {e.key for e in records[-1].ledger_omitted}
        # The next compaction summarizes the update: it supersedes the entry as usual.
        again = LLMSummarizeCompactor(default_backend=ExtractiveBackend(), keep_n=0)
        merged = next(c for c in again.compact(out).as_list() if isinstance(c, Checkpoint))
        (rule,) = [e for e in merged.ledger.entries if "vault code" in e.value]
        assert "bolib-77" in rule.value and any("adwgk-18" in v for v in rule.superseded)
