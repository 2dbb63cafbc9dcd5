"""Tests for the OpenAI Chat Completions converters, the history validator and transcript files."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

import mellea_ctx
from mellea_ctx import (
    CBlock,
    ChatContext,
    ImagePart,
    InvalidArgumentError,
    InvalidComponentError,
    InvalidContextError,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    TextPart,
    ToolCall,
    ToolMessage,
    dump_conversation,
    from_openai,
    load_conversation,
    repair_history,
    to_openai,
    validate_openai,
)
from mellea_ctx._formats.notes import NOTES
from mellea_ctx._formats.transcripts import read_any, transcript_document

from .helpers import CORPUS

CORPUS_FILES = (
    "claudecode_haiku45_subagent_afc096d.openai.json",
    "claudecode_opus46_session_postcompact.openai.json",
    "claudecode_opus46_session_precompact.openai.json",
    "claudecode_sonnet45_subagent_a2898e3.openai.json",
    "minisweagent2_deepseek-chat_astroid-1978.openai.json",
    "sweagent_gpt4_pydicom-1458.openai.json",
    "taubench_gpt-4o_airline_task2_trial1.openai.json",
)
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"the transcript corpus is not at {CORPUS} (shared/ beside the repository)",
)


def corpus(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    return data


def call(call_id: str, name: str = "ls", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


USER = {"role": "user", "content": "hi"}
CALLS = {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]}
RESULT_1 = {"role": "tool", "tool_call_id": "c1", "content": "one"}
RESULT_2 = {"role": "tool", "tool_call_id": "c2", "content": "two"}


class TestExports:
    """The package's public surface."""

    def test_format_names_are_exported(self) -> None:
        """The converters and file helpers are importable from the package root."""
        names = {
            "dump_conversation",
            "from_openai",
            "load_conversation",
            "to_openai",
            "validate_openai",
        }
        assert names <= set(mellea_ctx.__all__)
        assert all(getattr(mellea_ctx, name) is not None for name in names)

    def test_all_is_sorted(self) -> None:
        """``__all__`` keeps ruff's isort-style order: constants, classes, then functions."""

        def key(name: str) -> tuple[int, str]:
            return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

        assert sorted(mellea_ctx.__all__, key=key) == mellea_ctx.__all__


class TestFromOpenai:
    """Reading Chat Completions messages into components."""

    def test_roles_map_to_components(self) -> None:
        """system/user/assistant become Message, tool becomes ToolMessage with its call id."""
        components = from_openai(
            [
                {"role": "system", "content": "Be brief."},
                USER,
                {"role": "assistant", "content": "Let me look.", "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.py", "name": "ls"},
                {"role": "assistant", "content": "Done."},
            ]
        )
        assert [
            Message("system", "Be brief."),
            Message("user", "hi"),
            Message("assistant", "Let me look.", tool_calls=(ToolCall("c1", "ls", "{}"),)),
            # Chat has no name on a tool message: a note says this one came with it.
            ToolMessage("a.py", tool_call_id="c1", name="ls", extra={NOTES: {"name": "present"}}),
            Message("assistant", "Done."),
        ] == components

    def test_null_content_becomes_a_thunk_without_value(self) -> None:
        """An assistant's ``content: null`` reads as ModelOutputThunk(value=None)."""
        [component] = from_openai([CALLS])
        assert ModelOutputThunk(None, tool_calls=(ToolCall("c1", "ls"), ToolCall("c2", "ls"))) == (
            component
        )

    def test_null_and_empty_content_both_round_trip(self) -> None:
        """``null`` and ``""`` next to tool calls each come back as they were.

        An assistant ``null`` without calls, which OpenAI rejects, is written as ``""``.
        """
        messages: list[dict[str, Any]] = [
            {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": ""},
            {"role": "assistant", "content": "", "tool_calls": [call("c2")]},
            {"role": "assistant", "content": None},
        ]
        expected = [*messages[:3], {"role": "assistant", "content": ""}]
        assert expected == to_openai(from_openai(messages))

    def test_arguments_stay_the_exact_string(self) -> None:
        """Tool-call arguments are kept byte for byte, whitespace and key order included."""
        arguments = '{ "b": 1,\n  "a": "x" }'
        [component] = from_openai(
            [{"role": "assistant", "content": "", "tool_calls": [call("c1", "edit", arguments)]}]
        )
        assert arguments == component.tool_calls[0].arguments

    def test_user_parts_stay_parts(self) -> None:
        """A content-part array reads as typed parts, in order, and stays an array."""
        [component] = from_openai(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in"},
                        {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
                        {"type": "text", "text": "this picture?"},
                    ],
                }
            ]
        )
        parts = (
            TextPart("What is in"),
            ImagePart(url="https://x/a.png"),
            TextPart("this picture?"),
        )
        assert Message("user", parts, structured=True) == component
        assert ("https://x/a.png",) == component.images

    def test_images_are_written_back_as_parts(self) -> None:
        """A message with images is written as one text part followed by image parts."""
        message = {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "https://x/b.png"}},
            ],
        }
        assert [message] == to_openai(from_openai([message]))

    def test_text_only_parts_stay_an_array(self) -> None:
        """Parts without images come back as the same array, on any role."""
        parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        messages = [
            {"role": "system", "content": parts},
            {"role": "tool", "tool_call_id": "c", "content": parts},
        ]
        assert [parts, parts] == [m["content"] for m in to_openai(from_openai(messages))]

    def test_unknown_keys_are_kept(self) -> None:
        """Fields a provider or SDK adds (refusal, index, audio...) are read and written back."""
        message = {
            "role": "assistant",
            "content": "ok",
            "refusal": None,
            "audio": None,
            "tool_calls": [{**call("c1"), "index": 0}],
        }
        assert [message] == to_openai(from_openai([message]))

    def test_names_round_trip(self) -> None:
        """A participant name on a message and a tool name on a result are kept."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "hi", "name": "alice"},
            {"role": "assistant", "content": "", "name": "bot", "tool_calls": [call("c1")]},
            {"role": "tool", "content": "x", "tool_call_id": "c1", "name": "ls"},
        ]
        assert messages == to_openai(from_openai(messages))

    def test_accepts_any_iterable(self) -> None:
        """A generator of messages reads like a list."""
        assert [Message("user", "hi")] == from_openai(m for m in [USER])

    @pytest.mark.parametrize(
        ("messages", "expected"),
        [
            ([42], "message 0: 42 is not a message; expected an object with 'role'"),
            ([USER, {"content": "x"}], "message 1: 'role' is missing"),
            (
                [USER] * 12 + [{"role": "robot", "content": "x"}],
                "message 12: role='robot' is not one of ('system', 'developer', 'user', "
                "'assistant', 'tool')",
            ),
            ([{"role": "function", "content": "x", "name": "f"}], "send them as role 'tool'"),
            ([{"role": None, "content": "x"}], "message 0: role=None is not one of"),
            ([{"role": "user"}], "message 0: 'content' is missing"),
            ([{"role": "user", "content": None}], "content=None is not allowed for role='user'"),
            ([{"role": "user", "content": 7}], "message 0: content=7 must be a string"),
            ([{"role": "user", "content": ["x"]}], "content[0]: 'x' is not a content part"),
            ([{"role": "user", "content": [{"type": "text"}]}], "content[0]: text=None must be"),
            (
                [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}],
                "content[0]: image_url='u' must be an object",
            ),
            (
                [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
                "type='image_url' is only allowed in user messages, not role='system'",
            ),
            ([{"role": "user", "content": "x", "name": ""}], "message 0: name='' must be"),
            ([{"role": "tool", "content": "x"}], "message 0: tool_call_id=None must be"),
            ([{"role": "tool", "content": "x", "tool_call_id": 3}], "tool_call_id=3 must be"),
            (
                [{"role": "user", "content": "x", "tool_calls": [call("c1")]}],
                "message 0: tool_calls are only allowed on assistant messages, not role='user'",
            ),
            (
                [{"role": "assistant", "content": "", "tool_calls": "c1"}],
                "tool_calls='c1' must be a list",
            ),
            (
                [{"role": "assistant", "content": "", "tool_calls": [None]}],
                "message 0: tool_calls[0]: None is not a tool call",
            ),
            (
                [{"role": "assistant", "content": "", "tool_calls": [{**call("c"), "type": "x"}]}],
                "tool_calls[0]: type='x' is not supported",
            ),
            (
                [{"role": "assistant", "content": "", "tool_calls": [{**call("c"), "id": ""}]}],
                "tool_calls[0]: id='' must be a non-empty string",
            ),
            (
                [{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": 1}]}],
                "tool_calls[0]: function=1 must be an object",
            ),
            (
                [{"role": "assistant", "content": "", "tool_calls": [call("c", "")]}],
                "tool_calls[0]: function.name='' must be a non-empty string",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}],
                    }
                ],
                "tool_calls[0]: function.arguments={} must be a JSON string",
            ),
        ],
    )
    def test_invalid_messages(self, messages: list[Any], expected: str) -> None:
        """A bad message raises InvalidContextError naming its index, the field and the value."""
        with pytest.raises(InvalidContextError) as info:
            from_openai(messages)
        assert expected in str(info.value)

    @pytest.mark.parametrize(
        "messages", [{"messages": [USER]}, '[{"role": "user"}]', b"[]", 42, None]
    )
    def test_invalid_argument(self, messages: Any) -> None:
        """Something other than a list of messages raises InvalidArgumentError."""
        with pytest.raises(InvalidArgumentError, match="must be a list of message objects"):
            from_openai(messages)


class TestToOpenai:
    """Writing components as Chat Completions messages."""

    def test_components_of_every_kind(self) -> None:
        """Thunks are assistant messages; CBlock and ReactInitiator are user messages."""
        components = [
            ReactInitiator("Fix the bug"),
            CBlock("Here is the log"),
            ModelOutputThunk("On it.", tool_calls=(ToolCall("c1", "run", {"cmd": "ls"}),)),
            ToolMessage("a.py", tool_call_id="c1"),
            ModelOutputThunk(None),
        ]
        assert [
            {"role": "user", "content": "Fix the bug"},
            {"role": "user", "content": "Here is the log"},
            {
                "role": "assistant",
                "content": "On it.",
                "tool_calls": [call("c1", "run", '{"cmd": "ls"}')],
            },
            {"role": "tool", "content": "a.py", "tool_call_id": "c1"},
            {"role": "assistant", "content": ""},
        ] == to_openai(components)

    def test_reads_a_context(self) -> None:
        """A ChatContext is written like the list of its components."""
        ctx = ChatContext().add(Message("system", "s")).add(Message("user", "u"))
        assert (to_openai(ctx)) == [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
        ]

    def test_output_is_fresh(self) -> None:
        """Each call returns new dicts that the caller may change freely."""
        components = from_openai([CALLS])
        first = to_openai(components)
        first[0]["tool_calls"].clear()
        assert len(to_openai(components)[0]["tool_calls"]) == 2

    @pytest.mark.parametrize(
        ("components", "expected"),
        [
            ([Message("user", "x"), "hello"], "component 1: 'hello' is not a Component"),
            ([{"role": "user", "content": "x"}], "component 0: {'role': 'user'"),
        ],
    )
    def test_invalid_components(self, components: list[Any], expected: str) -> None:
        """An item that is not a Component raises InvalidComponentError naming its index."""
        with pytest.raises(InvalidComponentError) as info:
            to_openai(components)
        assert expected in str(info.value)

    def test_tool_role_without_call_id(self) -> None:
        """A custom component claiming role 'tool' without a call id is refused."""

        class Orphan(CBlock):
            @property
            def role(self) -> Any:
                return "tool"

        with pytest.raises(InvalidComponentError, match="component 0: role='tool' with"):
            to_openai([Orphan("x")])


@needs_corpus
class TestCorpus:
    """The real transcripts in shared/corpus."""

    @pytest.mark.parametrize("name", CORPUS_FILES)
    def test_round_trip_is_exact(self, name: str) -> None:
        """``to_openai(from_openai(messages))`` gives back the very same JSON."""
        messages = corpus(name)
        assert messages == to_openai(from_openai(messages))

    @pytest.mark.parametrize("name", CORPUS_FILES)
    def test_history_is_valid(self, name: str) -> None:
        """Every transcript follows the tool-call rules (an open final exchange included)."""
        assert validate_openai(from_openai(corpus(name))) == []

    @pytest.mark.parametrize("name", CORPUS_FILES)
    def test_file_round_trip(self, name: str, tmp_path: Path) -> None:
        """load, dump as JSONL, load again: the same components."""
        components = load_conversation(CORPUS / name)
        dump_conversation(components, tmp_path / "copy.jsonl")
        assert components == load_conversation(tmp_path / "copy.jsonl")

    def test_open_final_exchange_becomes_a_problem_once_closed(self) -> None:
        """mini-swe-agent's unanswered last call is fine until another message follows it."""
        components = from_openai(corpus("minisweagent2_deepseek-chat_astroid-1978.openai.json"))
        assert components[-1].tool_calls
        problems = validate_openai([*components, Message("user", "Are you done?")])
        assert len(problems) == 1
        assert problems[0].startswith("message 130: tool call ")
        assert "got no result before message 131" in problems[0]

    def test_reused_ids_are_valid_and_repair_keeps_them(self) -> None:
        """tau-bench's original, reused call ids (OpenAI accepts them) pass, and repair keeps all.

        Each result pairs with the closest preceding assistant message, as the
        corpus README describes; the earlier rule (ids unique in the whole
        history) rejected five messages and made repair drop ten.
        """
        text = (CORPUS / "taubench_gpt-4o_airline_task2_trial1.openai.json").read_text("utf-8")
        original = json.loads(re.sub(r"_dup\d", "", text))
        components = from_openai(original)
        assert 5 == sum(len(m.get("tool_calls", [])) for m in original) - len(
            {c["id"] for m in original for c in m.get("tool_calls", [])}
        )
        assert [] == validate_openai(components)
        repaired, changes = repair_history(components, provider="openai")
        assert ([], 62) == (changes, len(repaired))
        assert original == to_openai(repaired)


class TestRequestBodies:
    """A Chat Completions request body is a transcript too, written back whole."""

    def test_body_round_trips(self, tmp_path: Path) -> None:
        """``{"model", "messages", "tools", ...}`` reads its messages and keeps the rest."""
        body = {
            "model": "gpt-4o",
            "temperature": 0,
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ],
            "tools": [],
        }
        path = tmp_path / "body.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        transcript = read_any(path)
        assert [
            Message("developer", "Be brief."),
            Message("user", [TextPart("hi")], structured=True),
        ] == (load_conversation(path))
        assert body == json.loads(
            transcript_document(transcript.components, "json", transcript.envelope)
        )


class TestValidateOpenai:
    """The provider's rules for tool calls in a history."""

    @pytest.mark.parametrize(
        "messages",
        [
            [],
            [USER],
            [USER, CALLS, RESULT_1, RESULT_2, {"role": "assistant", "content": "done"}],
            [USER, CALLS, RESULT_2, RESULT_1, USER],
            [USER, CALLS],
            [USER, CALLS, RESULT_1],
        ],
        ids=["empty", "no-tools", "closed", "results-reordered", "open", "open-partly-answered"],
    )
    def test_valid_histories(self, messages: list[dict[str, Any]]) -> None:
        """Answered exchanges and an open final exchange are valid."""
        assert validate_openai(from_openai(messages)) == []

    @pytest.mark.parametrize(
        ("messages", "expected"),
        [
            (
                [RESULT_1],
                [
                    "message 0: tool result for tool_call_id='c1' answers no earlier tool call; "
                    "drop the orphan result or restore its call"
                ],
            ),
            (
                [CALLS, RESULT_1, USER, RESULT_2],
                [
                    "message 0: tool call 'c2' (ls) got no result before message 2; add the "
                    "results right after message 0 or drop the call",
                    "message 3: tool result for tool_call_id='c2' is called in message 0, but "
                    "a non-tool message comes between; put each result right after the "
                    "assistant message that called it",
                ],
            ),
            (
                [CALLS, {"role": "assistant", "content": "", "tool_calls": [call("c3")]}, RESULT_1],
                [
                    "message 0: tool calls 'c1' (ls), 'c2' (ls) got no result before message 1; "
                    "add the results right after message 0 or drop the calls",
                    "message 2: tool result for tool_call_id='c1' is called in message 0, not in "
                    "the closest preceding assistant message (message 1); put each result right "
                    "after its call",
                ],
            ),
            (
                [CALLS, RESULT_1, RESULT_2, RESULT_1],
                [
                    "message 3: tool result for tool_call_id='c1' was already answered by "
                    "message 1; drop the duplicate"
                ],
            ),
            (
                [
                    {"role": "assistant", "content": "", "tool_calls": [call("c1"), call("c1")]},
                    RESULT_1,
                ],
                ["message 0: tool call id 'c1' appears twice in this message"],
            ),
            (
                [CALLS, {"role": "tool", "tool_call_id": "zz", "content": ""}, RESULT_1, RESULT_2],
                [
                    "message 1: tool result for tool_call_id='zz' matches no call of the "
                    "closest preceding assistant message (message 0); drop the orphan result "
                    "or restore its call"
                ],
            ),
            (
                [USER, {"role": "assistant", "content": "ok"}, RESULT_1],
                ["message 2: tool result for tool_call_id='c1' answers no earlier tool call"],
            ),
        ],
        ids=[
            "orphan",
            "user-between",
            "older-assistant",
            "answered-twice",
            "same-id-twice-in-one-message",
            "unknown-id",
            "assistant-without-calls",
        ],
    )
    def test_problems(self, messages: list[dict[str, Any]], expected: list[str]) -> None:
        """Each broken rule is one line naming the message, the id and the fix."""
        problems = validate_openai(from_openai(messages))
        assert len(expected) == len(problems)
        for want, got in zip(expected, problems, strict=True):
            assert got.startswith(want)

    def test_custom_tool_role_without_id(self) -> None:
        """A component with role 'tool' but no call id is reported."""

        class Odd(CBlock):
            @property
            def role(self) -> Any:
                return "tool"

        assert validate_openai([Odd("x")]) == [
            "message 0: role='tool' without a tool_call_id; name the call this result answers"
        ]

    def test_accepts_a_context(self) -> None:
        """A ChatContext is checked like the list of its components."""
        ctx = ChatContext()
        for component in from_openai([USER, CALLS, RESULT_1, USER]):
            ctx = ctx.add(component)
        assert len(validate_openai(ctx)) == 1


class TestLoadConversation:
    """Reading transcript files."""

    def test_json_array(self, tmp_path: Path) -> None:
        """A JSON array file reads as its messages."""
        path = tmp_path / "chat.json"
        path.write_text(json.dumps([USER, CALLS, RESULT_1, RESULT_2]), encoding="utf-8")
        assert from_openai([USER, CALLS, RESULT_1, RESULT_2]) == load_conversation(path)

    def test_jsonl_with_blank_lines_and_crlf(self, tmp_path: Path) -> None:
        """JSONL skips blank lines and tolerates Windows line ends and a BOM."""
        path = tmp_path / "chat.jsonl"
        lines = ["", json.dumps(USER), "  ", json.dumps(CALLS), ""]
        path.write_bytes(("\ufeff" + "\r\n".join(lines)).encode("utf-8"))
        assert from_openai([USER, CALLS]) == load_conversation(str(path))

    @pytest.mark.parametrize(
        ("name", "text"),
        [
            ("chat.txt", json.dumps(USER) + "\n" + json.dumps(USER) + "\n"),
            ("chat.json", json.dumps(USER) + "\n" + json.dumps(USER) + "\n"),
            ("chat", "\n  " + json.dumps([USER, USER], indent=2)),
        ],
        ids=["jsonl-as-txt", "jsonl-as-json", "array-without-suffix"],
    )
    def test_format_is_detected_by_content(self, tmp_path: Path, name: str, text: str) -> None:
        """Without a .jsonl name, text starting with '[' is an array and any other is JSONL."""
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert from_openai([USER, USER]) == load_conversation(path)

    def test_line_separators_inside_text(self, tmp_path: Path) -> None:
        """U+2028 in a message's text (left unescaped by json.dumps) does not split a line."""
        message = {"role": "user", "content": "a\u2028b\u0085c"}
        path = tmp_path / "chat.jsonl"
        dump_conversation(from_openai([message]), path)
        assert [message] == to_openai(load_conversation(path))

    @pytest.mark.parametrize(
        ("name", "text", "expected"),
        [
            (
                "bad.json",
                '[{"role": "user", "content": "x"},\n {"role": ',
                "bad.json line 2 column 11: invalid JSON (Expecting value)",
            ),
            (
                "bad.jsonl",
                json.dumps(USER) + "\n" + '{"role": "user", content}\n',
                "bad.jsonl line 2 column 18: invalid JSON (Expecting property name",
            ),
            (
                "bad.jsonl",
                json.dumps(USER) + "\n\n" + "[1, 2]\n",
                "bad.jsonl line 3: [1, 2] is not a message",
            ),
            (
                "bad.jsonl",
                json.dumps(USER) + "\n" + json.dumps({"role": "robot", "content": "x"}),
                "bad.jsonl line 2: role='robot' is not one of",
            ),
            (
                "bad.json",
                json.dumps([USER, USER, {"role": "tool", "content": "x"}]),
                "bad.json message 2: tool_call_id=None must be a non-empty string",
            ),
            ("bad.json", " \n", "bad.json: the file is empty; expected a JSON array"),
            ("bad", "", "bad: the file is empty; expected a JSON array"),
        ],
        ids=[
            "json-syntax",
            "jsonl-syntax",
            "not-an-object",
            "unknown-role",
            "missing-call-id",
            "empty-json",
            "empty-without-suffix",
        ],
    )
    def test_invalid_files(self, tmp_path: Path, name: str, text: str, expected: str) -> None:
        """A bad file raises InvalidContextError naming the file, the line or message, the field."""
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidContextError) as info:
            load_conversation(path)
        assert str(info.value).startswith(f"{tmp_path}{os.sep}{expected}")

    def test_wrapped_object_is_a_request_body(self, tmp_path: Path) -> None:
        """A pretty-printed request body is read as its messages."""
        path = tmp_path / "body.json"
        path.write_text(json.dumps({"messages": [USER]}, indent=2), encoding="utf-8")
        assert [Message("user", USER["content"])] == load_conversation(path)

    def test_a_message_with_a_messages_key_is_a_message(self, tmp_path: Path) -> None:
        """One JSONL line with a role is that message, though it carries a ``messages`` list."""
        path = tmp_path / "one.jsonl"
        path.write_text(json.dumps({**USER, "messages": []}) + "\n", encoding="utf-8")
        (message,) = load_conversation(path)
        assert message.role == "user"
        assert message.extra == {"messages": []}

    def test_empty_jsonl_is_an_empty_conversation(self, tmp_path: Path) -> None:
        """A JSONL file with no lines holds no messages."""
        path = tmp_path / "empty.jsonl"
        path.write_text("\n", encoding="utf-8")
        assert load_conversation(path) == []

    def test_not_utf8(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 are reported with their offset."""
        path = tmp_path / "latin1.json"
        path.write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
        with pytest.raises(InvalidContextError, match=r"latin1.json: byte 33 is not UTF-8"):
            load_conversation(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file raises FileNotFoundError, which names it."""
        with pytest.raises(FileNotFoundError, match=r"nope\.json"):
            load_conversation(tmp_path / "nope.json")


class TestDumpConversation:
    """Writing transcript files."""

    def test_json_by_default(self, tmp_path: Path) -> None:
        """A name not ending in .jsonl gets an indented JSON array with a final newline."""
        path = tmp_path / "out.json"
        dump_conversation(from_openai([USER, CALLS]), path)
        text = path.read_text(encoding="utf-8")
        assert text.endswith("]\n")
        assert json.loads(text) == [USER, CALLS]

    def test_jsonl_by_suffix(self, tmp_path: Path) -> None:
        """A .jsonl name gets one message per line."""
        path = tmp_path / "out.JSONL"
        dump_conversation(from_openai([USER, CALLS]), path)
        lines = path.read_text(encoding="utf-8").splitlines()
        assert [json.loads(line) for line in lines] == [USER, CALLS]

    def test_explicit_format(self, tmp_path: Path) -> None:
        """``format=`` overrides the file name."""
        path = tmp_path / "out.json"
        dump_conversation(from_openai([USER, USER]), path, format="jsonl")
        assert len(path.read_text(encoding="utf-8").splitlines()) == 2

    def test_non_ascii_is_written_as_utf8(self, tmp_path: Path) -> None:
        """Text outside ASCII is written as UTF-8, not as escapes."""
        path = tmp_path / "out.jsonl"
        dump_conversation([Message("user", "café ☕")], path)
        assert "café ☕" in path.read_text(encoding="utf-8")

    def test_lone_surrogate_is_escaped(self, tmp_path: Path) -> None:
        """A lone surrogate (from a "\\ud800" escape) is written escaped, so it reads back."""
        path = tmp_path / "out.json"
        components = from_openai(json.loads('[{"role": "user", "content": "x\\ud800"}]'))
        dump_conversation(components, path)
        assert components == load_conversation(path)

    def test_replaces_an_existing_file_and_keeps_its_mode(self, tmp_path: Path) -> None:
        """An existing file is replaced whole and keeps its permission bits."""
        path = tmp_path / "out.json"
        path.write_text("old", encoding="utf-8")
        path.chmod(0o640)
        dump_conversation([Message("user", "new")], path)
        assert [Message("user", "new")] == load_conversation(path)
        if sys.platform != "win32":
            assert stat.S_IMODE(path.stat().st_mode) == 0o640
        assert [p.name for p in tmp_path.iterdir()] == ["out.json"]

    def test_failure_writes_nothing(self, tmp_path: Path) -> None:
        """When conversion fails, the old file is untouched and no temporary file is left."""
        path = tmp_path / "out.json"
        path.write_text("old", encoding="utf-8")
        with pytest.raises(InvalidComponentError):
            dump_conversation([Message("user", "x"), "not a component"], path)  # type: ignore[list-item]
        assert path.read_text(encoding="utf-8") == "old"
        assert [p.name for p in tmp_path.iterdir()] == ["out.json"]

    def test_failed_replace_cleans_up(self, tmp_path: Path) -> None:
        """When the final rename fails, the temporary file is removed and the error raised."""
        target = tmp_path / "a-directory"
        (target / "inside").mkdir(parents=True)
        with pytest.raises(OSError):
            dump_conversation([Message("user", "x")], target)
        assert [p.name for p in tmp_path.iterdir()] == ["a-directory"]

    def test_missing_folder(self, tmp_path: Path) -> None:
        """Writing into a folder that does not exist raises FileNotFoundError."""
        with pytest.raises(FileNotFoundError):
            dump_conversation([Message("user", "x")], tmp_path / "no" / "out.json")

    def test_unknown_format(self, tmp_path: Path) -> None:
        """An unknown ``format`` raises InvalidArgumentError and writes nothing."""
        with pytest.raises(InvalidArgumentError, match=r"format='yaml' must be 'json'"):
            dump_conversation([USER], tmp_path / "x", format="yaml")  # type: ignore[arg-type, list-item]
        assert list(tmp_path.iterdir()) == []
