"""Tests for Anthropic transcripts, the Anthropic history validator and ``repair_history``."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    MISSING_RESULT,
    InvalidArgumentError,
    InvalidContextError,
    Message,
    ModelOutputThunk,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    dump_anthropic,
    from_anthropic,
    from_openai,
    load_anthropic,
    load_conversation,
    problems,
    repair_history,
    validate_anthropic,
    validate_openai,
)
from mellea_ctx._formats.transcripts import _parse_anthropic, read_any, transcript_document

from .helpers import CORPUS
from .strategies import histories

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"the transcript corpus is not at {CORPUS} (shared/ beside the repository)",
)
ANTHROPIC_FILES = sorted(p.name for p in CORPUS.glob("*.anthropic.json"))


def use(call_id: str, name: str = "ls") -> ToolCall:
    return ToolCall(call_id, name, "{}")


@needs_corpus
class TestCorpus:
    """The Claude Code transcripts in shared/corpus."""

    @pytest.mark.parametrize("name", ANTHROPIC_FILES)
    def test_same_components_as_the_openai_version(self, name: str) -> None:
        """Each .anthropic.json file reads to the messages, calls and results of its twin.

        The twin (.openai.json) lost the thinking blocks, ``is_error`` and the
        block structure; roles, call ids, names, arguments and result ids agree.
        """
        twin = CORPUS / name.replace(".anthropic.", ".openai.")

        def shape(components: list[Any]) -> list[Any]:
            return [
                (
                    c.role,
                    c.tool_call_id,
                    [(t.id, t.name, json.loads(t.arguments)) for t in c.tool_calls],
                    c.content if c.tool_call_id is None else None,
                )
                for c in components
            ]

        assert shape(load_conversation(twin)) == shape(load_anthropic(CORPUS / name))

    @pytest.mark.parametrize("name", ANTHROPIC_FILES)
    def test_round_trip(self, name: str) -> None:
        """Reading and writing gives the file back: the same JSON value."""
        original = json.loads((CORPUS / name).read_text(encoding="utf-8"))
        written = json.loads(transcript_document(load_anthropic(CORPUS / name), "anthropic"))
        assert original == written

    @pytest.mark.parametrize("name", ANTHROPIC_FILES)
    def test_valid_for_both(self, name: str) -> None:
        """The real histories are valid for OpenAI; for Anthropic only blank text blocks fail.

        Two assistant turns of each Opus file start with a ``"\\n\\n"`` text block
        the API returned and would refuse when sent back; repair removes just
        that block, and leaves every other component as it is.
        """
        components = load_anthropic(CORPUS / name)
        assert [] == validate_openai(components)
        repaired, changes = repair_history(components, provider="openai")
        assert ([], components) == (changes, repaired)
        problems = validate_anthropic(components)
        blank = 2 if "opus46" in name else 0
        assert blank == len(problems)
        assert all("empty or only whitespace ('\\n\\n')" in p for p in problems)
        repaired, changes = repair_history(components, provider="anthropic")
        assert blank == len(changes) and len(components) == len(repaired)
        assert all(c.endswith("removed 1 blank text block") for c in changes)
        differ = [i for i, (a, b) in enumerate(zip(components, repaired, strict=True)) if a != b]
        assert [int(c.split(":")[0].split()[1]) for c in changes] == differ
        for index in differ:
            assert [p for p in components[index].parts if p.text.strip()] == list(  # type: ignore[union-attr]
                repaired[index].parts
            )
        assert [] == validate_anthropic(repaired)

    def test_detected(self) -> None:
        """The command line's reader tells the formats apart by their content."""
        for name in ANTHROPIC_FILES:
            assert "anthropic" == read_any(CORPUS / name).format
            assert "json" == read_any(CORPUS / name.replace(".anthropic.", ".openai.")).format


class TestReadWrite:
    """load_anthropic, dump_anthropic and from_anthropic."""

    def test_object_with_system(self, tmp_path: Path) -> None:
        """A ``{"system", "messages"}`` object keeps its system prompt, and is written back so."""
        document = {
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "List files."},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "x"},
                        {"type": "text", "text": "Listing."},
                        {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                        {"type": "text", "text": "Thanks."},
                    ],
                },
            ],
        }
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        components = load_anthropic(path)
        thinking = ThinkingPart("hmm", signature="x", provider="anthropic")
        assert [
            Message("system", "Be brief."),
            Message("user", "List files."),
            Message(
                "assistant",
                [thinking, TextPart("Listing.")],
                tool_calls=[ToolCall("t1", "ls", {"path": "."})],
            ),
            ToolMessage("a.py", tool_call_id="t1"),
            Message("user", [TextPart("Thanks.")], structured=True),
        ] == components
        out = tmp_path / "out.json"
        dump_anthropic(components, out)
        assert document == json.loads(out.read_text(encoding="utf-8"))

    def test_images(self) -> None:
        """Image blocks become URLs or data URIs, and go back as the same blocks."""
        blocks = [
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
            },
            {"type": "text", "text": "What is this?"},
        ]
        (message,) = from_anthropic([{"role": "user", "content": blocks}])
        assert ("https://x.test/a.png", "data:image/png;base64,AA==") == message.images
        assert [{"role": "user", "content": blocks}] == _document_turns([message])

    @pytest.mark.parametrize(
        ("turns", "expected"),
        [
            (
                [{"role": "system", "content": "x"}],
                "message 0 (line 1): role='system' is not one of",
            ),
            ([{"role": "user"}], "message 0 (line 1): content=None must be a string or a list"),
            (
                [{"role": "user", "content": [7]}],
                "message 0 (line 1): content[0]: 7 is not a content block",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "name": "ls", "input": {}}],
                    }
                ],
                "message 0 (line 1): content[0]: id=None must be a non-empty string",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": 3}],
                    }
                ],
                "message 0 (line 1): content[0]: input=3 must be an object",
            ),
            (
                [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "ls"}]}],
                "message 0 (line 1): content[0]: a tool_use block is only allowed in assistant",
            ),
            (
                [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],
                "message 0 (line 1): content[0]: tool_use_id=None must be a non-empty string",
            ),
            (
                [{"role": "user", "content": [{"type": ""}]}],
                "message 0 (line 1): content[0]: type='' must be a block type",
            ),
        ],
        ids=[
            "system-role",
            "no-content",
            "not-a-block",
            "no-id",
            "bad-input",
            "misplaced",
            "no-use-id",
            "unknown-block",
        ],
    )
    def test_errors_name_the_turn_block_and_field(
        self, tmp_path: Path, turns: list[Any], expected: str
    ) -> None:
        """A bad turn is one error naming the file, the turn, the block and the field."""
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(turns), encoding="utf-8")
        with pytest.raises(InvalidContextError) as caught:
            load_anthropic(path)
        assert str(caught.value).startswith(f"{path} {expected}")


def _document_turns(components: list[Any]) -> Any:
    return json.loads(transcript_document(components, "anthropic"))


texts = st.text(min_size=1, max_size=12).filter(lambda t: t.strip() and not t.startswith("[{"))
inputs = st.dictionaries(
    st.text(max_size=4), st.none() | st.booleans() | st.integers() | st.text(max_size=6), max_size=3
)


@st.composite
def anthropic_documents(draw: Any) -> Any:
    """Transcripts in the canonical shape our writer produces."""
    ids = count()
    turns: list[dict[str, Any]] = []
    pending: list[str] = []
    for index in range(draw(st.integers(0, 8))):
        if index % 2 == 0:
            blocks: list[dict[str, Any]] = [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": draw(st.text(max_size=8)),
                }
                for call_id in pending
            ]
            pending = []
            if not blocks or draw(st.booleans()):
                blocks.append({"type": "text", "text": draw(texts)})
            single = len(blocks) == 1 and blocks[0]["type"] == "text"
            turns.append({"role": "user", "content": blocks[0]["text"] if single else blocks})
            continue
        blocks = [{"type": "text", "text": draw(texts)}] if draw(st.booleans()) else []
        for _ in range(draw(st.integers(0 if blocks else 1, 3))):
            call_id = f"toolu_{next(ids)}"
            pending.append(call_id)
            name = draw(st.sampled_from(["ls", "read", "grep"]))
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": draw(inputs)})
        turns.append({"role": "assistant", "content": blocks})
    system = draw(st.none() | texts)
    return turns if system is None else {"system": system, "messages": turns}


class TestRoundTripProperties:
    @given(anthropic_documents())
    def test_document_round_trip(self, document: Any) -> None:
        """Every canonical transcript reads and writes back to the same JSON."""
        components = _parse_anthropic(document, "doc").components
        assert document == json.loads(transcript_document(components, "anthropic"))
        assert [] == validate_anthropic(components)

    @given(histories())
    def test_openai_round_trip(self, history: list[Any]) -> None:
        """Every history the strategies build writes and reads back through OpenAI JSON."""
        written = json.loads(transcript_document(history, "json"))
        assert written == json.loads(transcript_document(from_openai(written), "json"))


class TestValidateAnthropic:
    @pytest.mark.parametrize(
        ("history", "expected"),
        [
            ([Message("user", "hi"), Message("assistant", "hello")], []),
            (
                [Message("assistant", "hello")],
                [
                    "message 0: the history starts with an assistant turn; "
                    "the Messages API wants user"
                ],
            ),
            (
                [Message("user", "a"), Message("system", "b")],
                [
                    "message 1: a system message after the start has no place in the Messages API; "
                    "move it into the leading system prompt"
                ],
            ),
            (
                [Message("user", "a"), ToolMessage("x", tool_call_id="t9")],
                [
                    "message 1: tool result for tool_call_id='t9' answers no call of the assistant "
                    "turn right before it"
                ],
            ),
            (
                [
                    Message("user", "a"),
                    ModelOutputThunk(None, tool_calls=[use("t1")]),
                    Message("user", "b"),
                    Message("assistant", "c"),
                ],
                [
                    "message 1: tool call 't1' (ls) got no result before message 3; "
                    "add the results right after message 1, or run repair_history"
                ],
            ),
            (
                # user text between a call and its result: one merged user turn, valid here
                [
                    Message("user", "a"),
                    ModelOutputThunk(None, tool_calls=[use("t1")]),
                    Message("user", "b"),
                    ToolMessage("x", tool_call_id="t1"),
                ],
                [],
            ),
            (
                # the last turn's calls may still be answered
                [
                    Message("user", "a"),
                    ModelOutputThunk(None, tool_calls=[use("t1"), use("t2")]),
                    ToolMessage("x", tool_call_id="t1"),
                ],
                [],
            ),
        ],
        ids=["valid", "assistant-first", "late-system", "orphan", "unanswered", "merged", "open"],
    )
    def test_rules(self, history: list[Any], expected: list[str]) -> None:
        """Each rule of the Messages API is reported once, naming the message."""
        assert expected == validate_anthropic(history)


@st.composite
def messy_histories(draw: Any) -> list[Any]:
    """Histories with tool pairs broken every way: valid ones, reshuffled, plus orphans."""
    base = draw(histories())
    pool = [*base, ToolMessage("late", tool_call_id="call_1"), ToolMessage("x", tool_call_id="zz")]
    pool.append(Message("system", "a late rule"))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=24))
    return [pool[i] for i in picks]


# Responses' and Gemini's repairs still disagree with their problems on edge cases the
# thorough profile finds (a call id used twice; a blank system prompt): not in these yet.
REPAIRED = ("openai", "anthropic")
providers = st.sampled_from(REPAIRED)
VALIDATORS = {
    name: (lambda history, name=name: [str(p) for p in problems(history, name)])
    for name in REPAIRED
}


class TestRepair:
    def test_a_result_dropped_before_a_blank_system_message(self) -> None:
        """A dropped orphan result brings a blank system message to the front: dropped too.

        Anthropic refuses blank text, and a leading system message is the system prompt
        (hypothesis found it: the content rules had run before the drop).
        """
        history = [ToolMessage("late", tool_call_id="call_1"), Message("system", "")]
        repaired, changes = repair_history(history, provider="anthropic")
        assert [] == validate_anthropic(repaired)
        assert [] == repaired and 2 == len(changes)

    def test_responses_repair_changes_only_what_responses_refuses(self) -> None:
        """Responses took Anthropic's content rules: ids renamed, blank text dropped.

        A call id with a dot and a blank system prompt are valid items
        (``problems(..., "responses")`` finds nothing); only Anthropic refuses them.
        """
        history = [
            Message("system", ""),
            Message("assistant", "", tool_calls=[ToolCall("call.1:x", "ls")]),
            ToolMessage("out", tool_call_id="call.1:x"),
        ]
        assert [] == problems(history, "responses")
        assert (history, []) == repair_history(history, provider="responses")

    def test_gemini_repair_leaves_an_opening_call_to_the_writer(self) -> None:
        """to_gemini writes a user turn before an opening call; repair added one as well.

        Gemini refuses a call turn that does not follow a user or response turn; the
        history is valid as it stands because the writer opens it, so nothing is changed.
        """
        history = [
            Message("assistant", "", tool_calls=[ToolCall("c1", "ls")]),
            ToolMessage("x", tool_call_id="c1"),
        ]
        assert [] == problems(history, "gemini")
        assert (history, []) == repair_history(history, provider="gemini")

    @given(messy_histories(), providers)
    def test_repaired_history_validates(self, history: list[Any], provider: Any) -> None:
        """Whatever the history, the repaired one is valid, and a change is reported iff needed."""
        repaired, changes = repair_history(history, provider=provider)
        assert [] == VALIDATORS[provider](repaired)
        assert bool(changes) == bool(VALIDATORS[provider](history))

    @given(st.one_of(histories(), messy_histories()), providers)
    def test_valid_history_is_the_identity(self, history: list[Any], provider: Any) -> None:
        """A valid history comes back as the very same components, with no changes."""
        valid = (
            history
            if not VALIDATORS[provider](history)
            else repair_history(history, provider=provider)[0]
        )
        snapshot = list(valid)
        again, changes = repair_history(valid, provider=provider)
        assert [] == changes
        assert len(valid) == len(again)
        assert all(a is b for a, b in zip(again, valid, strict=True))
        assert snapshot == valid  # the input list is not modified

    def test_placeholder_and_orphan(self) -> None:
        """An unanswered call gets MISSING_RESULT after its results; an orphan is dropped."""
        history = [
            Message("user", "go"),
            ModelOutputThunk(None, tool_calls=[use("a"), use("b")]),
            ToolMessage("A", tool_call_id="a"),
            ToolMessage("stray", tool_call_id="q"),
            Message("user", "stop"),
        ]
        repaired, changes = repair_history(history)
        assert [
            history[0],
            history[1],
            history[2],
            ToolMessage(MISSING_RESULT, tool_call_id="b"),
            history[4],
        ] == repaired
        assert [
            "message 1: added a placeholder result for tool call 'b' (ls)",
            "message 3: dropped the tool result for tool_call_id='q'",
        ] == changes

    def test_reused_id(self) -> None:
        """Anthropic: a call whose id was used before is removed, an emptied message with it.

        OpenAI accepts the reuse (each result pairs with the closest preceding
        call), so its repair keeps everything.
        """
        history = [
            Message("user", "go"),
            ModelOutputThunk(None, tool_calls=[use("a")]),
            ToolMessage("A", tool_call_id="a"),
            ModelOutputThunk(None, tool_calls=[use("a")]),
            ToolMessage("A again", tool_call_id="a"),
            Message("assistant", "done"),
        ]
        repaired, _ = repair_history(history, provider="anthropic")
        assert [*history[:3], history[5]] == repaired
        assert (history, []) == repair_history(history, provider="openai")

    def test_anthropic_opener_and_late_system(self) -> None:
        """For Anthropic, a leading assistant gets a user turn first; a late system becomes user."""
        history = [Message("system", "s"), Message("assistant", "hi"), Message("system", "late")]
        repaired, changes = repair_history(history, provider="anthropic")
        assert [
            history[0],
            Message("user", "(earlier conversation)"),
            history[1],
            Message("user", "late"),
        ] == repaired
        assert 2 == len(changes)

    def test_unknown_provider(self) -> None:
        """An unknown provider is refused, naming the choices."""
        expected = "'openai', 'anthropic', 'responses' or 'gemini'"
        with pytest.raises(InvalidArgumentError, match=expected):
            repair_history([], provider="bedrock")  # type: ignore[arg-type]
