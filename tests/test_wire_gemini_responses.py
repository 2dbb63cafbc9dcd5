"""Gemini and Responses requests the providers accept: issue 22's regressions, one class each.

Each test is written from the provider's documented rule or its real 400 answer
(cited in the docstring), not from our reader: the request we build must be one
the provider takes, and a file read then written must come back as it was.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import warnings
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from mellea_ctx import (
    ChatContext,
    ClearToolResultsCompactor,
    Message,
    ModelOutputThunk,
    OpaquePart,
    OpenAIResponsesBackend,
    ToolCall,
    ToolMessage,
    Usage,
    WindowCompactor,
    components_from_json,
    components_to_json,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
    react,
    to_gemini,
    to_responses,
    tool,
    validate_gemini,
    validate_responses,
)
from mellea_ctx._cli.app import cli
from mellea_ctx._formats import transcripts as wire_files
from mellea_ctx._formats.notes import NOTES, OPENER
from mellea_ctx._formats.problems import problems
from tests._postgres import postgres_server_fixture  # noqa: F401 (a fixture)
from tests._redis import redis_server_fixture  # noqa: F401 (a fixture)
from tests._stores import store_factory_fixture, store_fixture  # noqa: F401 (fixtures)
from tests.providers.responses_server import ResponsesWireServer

USER = {"role": "user", "parts": [{"text": "Weather in Paris?"}]}
CALL_THEN_TEXT = {
    "role": "model",
    "parts": [
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
        {"text": "Let me check."},
    ],
}
ANSWER = {
    "role": "user",
    "parts": [{"functionResponse": {"name": "weather", "response": {"result": "sunny"}}}],
}


def _read(body: dict[str, Any]) -> list[Any]:
    return from_gemini(body["contents"], body.get("systemInstruction"))


def _keys(value: Any) -> set[str]:
    """Every object key anywhere inside a JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


class TestGeminiPartAfterCall:
    """Item 1. Gemini's function-calling guide shows a model content whose parts hold calls
    and text in any order ("parts": [{"functionCall": ...}, {"text": ...}]); it is one model
    turn, and its responses come in the next user content."""

    def test_one_model_content_is_one_step(self) -> None:
        """`[functionCall, text]` is one step; the response answers that step's call."""
        out = from_gemini([USER, CALL_THEN_TEXT, ANSWER])
        assert ["user", "assistant", "tool"] == [c.role for c in out]
        step = out[1]
        assert ["Let me check."] == [p.text for p in step.parts]
        assert out[2].tool_call_id == step.tool_calls[0].id
        assert "orphan" not in out[2].tool_call_id

    def test_written_back_as_it_came(self) -> None:
        """Writing gives the same one content, parts in their order (not a call turn then a
        text turn, which Gemini refuses: a text turn cannot sit between a call and its
        response)."""
        contents = [USER, CALL_THEN_TEXT, ANSWER, {"role": "model", "parts": [{"text": "Sunny."}]}]
        before = copy.deepcopy(contents)
        assert {"contents": before} == to_gemini(from_gemini(contents))
        assert [] == validate_gemini(contents)

    def test_the_command_line_accepts_it_and_names_the_right_content(self, tmp_path: Any) -> None:
        """`validate` says valid; a real problem later is reported at its own content."""
        good = tmp_path / "good.json"
        good.write_text(json.dumps({"contents": [USER, CALL_THEN_TEXT, ANSWER]}))
        result = CliRunner().invoke(cli, ["validate", str(good)], env={"COLUMNS": "200"})
        assert 0 == result.exit_code, result.output
        dangling = {"role": "model", "parts": [{"functionCall": {"name": "weather"}}]}
        closing = {"role": "user", "parts": [{"text": "Never mind."}]}
        data = {"contents": [USER, CALL_THEN_TEXT, ANSWER, dangling, closing]}
        components, labels, _ = wire_files.parse(data, "gemini", "f.json")
        found = problems(components, "gemini")
        assert [("content 4", "content 4: 1 functionCall(s) get 0 functionResponse(s)")] == [
            (labels[p.index], str(p)) for p in found if p.index is not None
        ]


class TestGeminiOpensWithACall:
    """Item 2. Gemini answers 400 "Please ensure that function call turn comes immediately
    after a user turn or after a function response turn." to contents that open with one."""

    def _history(self) -> list[Any]:
        return from_gemini(
            [
                USER,
                {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {}}}]},
                ANSWER,
                {"role": "model", "parts": [{"text": "Sunny."}]},
            ]
        )

    def test_the_validator_checks_the_first_content(self) -> None:
        """A first content that is a call turn is a problem."""
        contents = [{"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]}]
        assert ["content 0: a function call turn must come right after a user turn"] == (
            validate_gemini(contents)
        )

    def test_the_writer_opens_with_a_user_turn(self) -> None:
        """`WindowCompactor(size=3)` cuts the opening user turn: the writer puts one back."""
        ctx = ChatContext().with_history(self._history())
        kept = WindowCompactor(size=3).compact(ctx).as_list()
        assert "assistant" == kept[0].role
        body = to_gemini(kept)
        assert {"role": "user", "parts": [{"text": OPENER}]} == body["contents"][0]
        assert [] == validate_gemini(body)


class TestGeminiEmptyContents:
    """Gemini refuses a content without parts ("contents.parts must not be empty") and a call
    turn after a model turn; a message Gemini can hold nothing of is left out, and reported."""

    def test_a_call_after_model_turns_joined_by_empty_user_turns(self) -> None:
        """Found by the property: the user turns between model turns held only Anthropic
        search results; the model turns and the call become one content after a user turn."""
        search = OpaquePart("anthropic", {"type": "search_result", "source": "s", "content": []})
        lost: list[str] = []
        body = to_gemini(
            [
                Message("user", "go"),
                Message("assistant", "a"),
                Message("user", [search]),
                Message("assistant", "b"),
                Message("user", [search]),
                ModelOutputThunk(tool_calls=[ToolCall("toolu_0", "ls")]),
            ],
            lost=lost,
        )
        assert [] == validate_gemini(body)
        assert [
            {"text": "a"},
            {"text": "b"},
            {"functionCall": {"name": "ls", "args": {}, "id": "toolu_0"}},
        ] == body["contents"][1]["parts"]
        assert 4 == len(lost)  # two opaque blocks, two user contents left empty


class TestKeysThatBelongElsewhere:
    """Item 6. Gemini answers `Invalid JSON payload received. Unknown name "cache_control"`
    and the Responses API `Unknown parameter: 'input[0].content[0].cache_control'` for a key
    they do not define; our notes key is ours alone (docs/formats.md: no writer sends it)."""

    def _foreign(self) -> list[Any]:
        anthropic = from_anthropic(
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "Read a.py",
                            "cache_control": {"type": "ephemeral"},
                            "citations": [{"type": "char_location", "cited_text": "a"}],
                        }
                    ],
                },
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": "boom",
                            "is_error": True,
                        }
                    ],
                },
            ]
        )
        chat = from_openai(
            [
                {"role": "user", "content": "List"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "ls", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            ]
        )
        responses = from_responses(
            [
                {"role": "user", "content": "Go"},
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_1",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}],
                },
            ]
        )
        gemini = from_gemini(
            [
                USER,
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "w", "args": {}}, "thoughtSignature": "c2"}
                    ],
                },
                {"role": "user", "parts": [{"functionResponse": {"name": "w"}}]},
            ]
        )
        assert any(NOTES in c.extra for c in [*chat, *gemini])  # notes are there to leak
        return [*anthropic, *chat, *responses, *gemini]

    def test_gemini_gets_only_its_fields_and_the_losses_are_reported(self) -> None:
        """No `cache_control`, `citations`, `index`, `annotations` or `mellea_ctx` in Gemini."""
        lost: list[str] = []
        body = to_gemini(self._foreign(), lost=lost)
        keys = _keys(body)
        assert not keys & {"cache_control", "citations", "index", "annotations", NOTES}
        assert "thoughtSignature" in keys  # Gemini's own key goes back
        for word in ("cache_control", "citations", "index", "is_error"):
            assert any(word in line for line in lost), (word, lost)

    def test_responses_gets_only_its_fields_and_the_losses_are_reported(self) -> None:
        """No `cache_control`, `citations`, `index`, `thoughtSignature` or `mellea_ctx`."""
        lost: list[str] = []
        items = to_responses(self._foreign(), lost=lost)
        keys = _keys(items)
        assert not keys & {"cache_control", "citations", "index", "thoughtSignature", NOTES}
        assert "annotations" in keys  # the Responses API's own key goes back
        for word in ("cache_control", "citations", "index", "thoughtSignature", "is_error"):
            assert any(word in line for line in lost), (word, lost)

    def test_the_validators_judge_components_without_a_warning(self) -> None:
        """Validating components (as the writers send them) is not a conversion to report."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            validate_gemini(self._foreign())
            validate_responses(self._foreign())

    def test_without_lost_one_warning(self) -> None:
        """The loss policy of the other writers: one LossyConversionWarning without `lost=`."""
        from mellea_ctx import LossyConversionWarning

        with pytest.warns(LossyConversionWarning, match="to_gemini could not carry"):
            to_gemini(self._foreign())
        with pytest.warns(LossyConversionWarning, match="to_responses could not carry"):
            to_responses(self._foreign())


class TestCustomToolCalls:
    """Item 5. The Responses API refuses `function_call_output` for a `custom_tool_call`
    (its output item is `custom_tool_call_output`), and a custom tool's `input` is
    free-form text (the custom tools guide: "custom tools ... take free-form text")."""

    ITEMS: list[dict[str, Any]] = [
        {"role": "user", "content": "Patch it."},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** x"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "line\n" * 400},
        {"role": "user", "content": "Thanks."},
    ]

    def test_clearing_keeps_a_custom_output_a_custom_output(self) -> None:
        """The placeholder answers the custom call in kind."""
        ctx = ChatContext().with_history(from_responses(self.ITEMS))
        cleared = ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0).compact(ctx)
        items = to_responses(cleared)
        assert "custom_tool_call_output" == items[2]["type"]
        assert items[2]["output"] != self.ITEMS[2]["output"]
        assert [] == validate_responses(items)

    def test_react_answers_a_custom_call_with_its_free_form_input(self) -> None:
        """`react` passes the input text to the tool and answers with a custom output."""
        seen: list[str] = []

        @tool
        def apply_patch(patch: str) -> str:
            """Apply a patch."""
            seen.append(patch)
            return "applied"

        with _CustomServer({"apply_patch"}) as server:
            server.reply(tool_calls=[("c1", "apply_patch", {"input": "*** Begin Patch\n+x\n"})])
            server.reply("Done.")
            backend = OpenAIResponsesBackend("gpt-5-mini", base_url=server.base_url)
            result = react("Patch a.py", ChatContext(), backend, tools=[apply_patch])
            assert [] == server.errors
            sent = server.requests[1].json["input"]
        assert ("Done.", ["*** Begin Patch\n+x\n"]) == (result.answer, seen)
        outputs = [item for item in sent if item.get("call_id") == "c1"]
        assert ["custom_tool_call", "custom_tool_call_output"] == [i["type"] for i in outputs]
        assert "applied" == outputs[1]["output"]

    def test_a_custom_call_of_a_tool_of_two_arguments_is_an_error_result(self) -> None:
        """Free-form text fills one argument only: the model gets an error naming them."""
        from mellea_ctx._agent.react import _run_tool

        @tool
        def edit(path: str, patch: str) -> str:
            """Edit a file."""
            return "edited"

        call = ToolCall("c1", "edit", "*** x", extra={"type": "custom_tool_call"})
        text, error = asyncio.run(_run_tool({"edit": edit}, call))
        assert error is not None
        assert "free-form text, which goes to a tool of one argument; it takes patch, path" in text


class _CustomServer(ResponsesWireServer):
    """A Responses server whose calls of the named tools are `custom_tool_call` items."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        super().__init__(reasoning=False)

    def render(self, reply: Any, body: Any, response_id: str) -> object:
        response: Any = super().render(reply, body, response_id)
        for item in response["output"]:
            if item["type"] == "function_call" and item["name"] in self.names:
                item["type"] = "custom_tool_call"
                item["input"] = json.loads(item.pop("arguments"))["input"]
                del item["status"]
        return response


class TestExactRoundTrips:
    """Item 13. Read then write is the identity (docs/formats.md), on what providers send."""

    def test_a_real_gemini_id_that_looks_made_up_is_kept(self) -> None:
        """A call id Gemini sent is sent back, whatever it starts with."""
        contents = [
            USER,
            {"role": "model", "parts": [{"functionCall": {"id": "gemini-call-7", "name": "w"}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "gemini-call-7", "name": "w", "response": {}}}
                ],
            },
        ]
        assert {"contents": contents} == to_gemini(from_gemini(copy.deepcopy(contents)))

    def test_a_response_without_response_stays_without(self) -> None:
        """`functionResponse` without `response` does not gain `{"result": ""}`."""
        contents = [
            USER,
            {"role": "model", "parts": [{"functionCall": {"name": "w"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "w"}}]},
        ]
        assert {"contents": contents} == to_gemini(from_gemini(copy.deepcopy(contents)))

    def test_a_reasoning_item_without_summary_stays_without(self) -> None:
        """A reasoning item does not gain `summary: []`."""
        items = [
            {"role": "user", "content": "Go"},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        ]
        assert items == to_responses(from_responses(copy.deepcopy(items)))

    def test_a_string_input_comes_back_a_string(self) -> None:
        """A body whose `input` is a string (the API reference: "input: string or array")."""
        body = {"model": "gpt-5", "input": "Hello there."}
        components, _, kept = wire_files.parse(body, "responses", "f.json")
        assert body == wire_files.wire_document(components, "responses", kept)


class TestNotJson:
    """Item 11. `NaN` and `Infinity` are not JSON (RFC 8259 section 6); Gemini answers 400
    `Invalid JSON payload received` to a body holding them."""

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
    def test_refused_on_read(self, value: float) -> None:
        """`args` or `response` holding one is refused, naming the content."""
        from mellea_ctx import InvalidContextError

        call = {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"x": value}}}]}
        with pytest.raises(InvalidContextError, match=r"content 1 parts\[0\].*NaN or Infinity"):
            from_gemini([USER, call])
        answer = {
            "role": "user",
            "parts": [{"functionResponse": {"name": "w", "response": {"x": [value]}}}],
        }
        plain = {"role": "model", "parts": [{"functionCall": {"name": "w"}}]}
        with pytest.raises(InvalidContextError, match=r"content 2 parts\[0\].*NaN or Infinity"):
            from_gemini([USER, plain, answer])

    def test_never_written(self) -> None:
        """Arguments or a result whose text is `NaN` are written as text, not as a number."""
        body = to_gemini(
            [
                Message("user", "go"),
                ModelOutputThunk(tool_calls=[ToolCall("c1", "w", '{"x": NaN}')]),
                ToolMessage('{"y": Infinity}', tool_call_id="c1", name="w"),
            ]
        )
        json.dumps(body, allow_nan=False)  # raises on a NaN or Infinity
        assert [] == validate_gemini(body)

    def test_the_validator_says_invalid(self) -> None:
        """`validate_gemini` reports them."""
        contents = [
            USER,
            {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"x": math.nan}}}]},
        ]
        assert [
            "content 1 parts[0]: functionCall args holds NaN or Infinity, which JSON (and Gemini) "
            "refuse"
        ] == validate_gemini(contents)


class TestStrictValidators:
    """Item 12. Both APIs refuse fields they do not define and values of the wrong type:
    Gemini `Invalid JSON payload received. Unknown name "foo" at 'contents[0].parts[0]'`,
    `Invalid value at 'contents[0].parts[0].thought' (TYPE_BOOL)`; Responses `Unknown
    parameter: 'input[0].foo'`, `Invalid value: 'done'. Supported values are: 'in_progress',
    'completed', and 'incomplete'.`"""

    @pytest.mark.parametrize(
        ("contents", "fragment"),
        [
            (
                [{"role": "user", "parts": [{"text": "a", "cache_control": {}}]}],
                "no field 'cache_control'",
            ),
            ([{"role": "user", "parts": [{"text": "a"}], "id": "x"}], "content has no field 'id'"),
            (
                [{"role": "user", "parts": [{"text": "a", "thought": "yes"}]}],
                "thought='yes' must be a boolean",
            ),
            (
                [USER, {"role": "model", "parts": [{"functionCall": {"name": "w", "index": 0}}]}],
                "functionCall has no field 'index'",
            ),
            (
                [
                    {
                        "role": "user",
                        "parts": [{"inlineData": {"mimeType": "image/png", "data": "AA", "x": 1}}],
                    }
                ],
                "inlineData has no field 'x'",
            ),
            (
                [USER, {"role": "model", "parts": [{"functionCall": {"name": "w", "id": 7}}]}],
                "functionCall id=7 must be a string",
            ),
        ],
    )
    def test_gemini(self, contents: list[Any], fragment: str) -> None:
        """Each unknown key or wrong type is a problem."""
        assert any(fragment in line for line in validate_gemini(contents)), validate_gemini(
            contents
        )

    def test_gemini_system_instruction(self) -> None:
        """`systemInstruction` is a `Content` too."""
        body = {
            "contents": [USER],
            "systemInstruction": {"parts": [{"text": "x", "cache_control": {}}]},
        }
        assert [
            "systemInstruction parts[0]: part has no field 'cache_control' (Gemini refuses "
            "unknown fields)"
        ] == validate_gemini(body)

    @pytest.mark.parametrize(
        ("item", "fragment"),
        [
            ({"role": "user", "content": "a", "cache_control": {}}, "no field 'cache_control'"),
            (
                {"role": "user", "content": [{"type": "input_text", "text": "a", "citations": []}]},
                "input_text has no field 'citations'",
            ),
            (
                {"type": "message", "role": "user", "content": "a", "status": "done"},
                "status='done'",
            ),
            (
                {
                    "type": "function_call",
                    "call_id": "c",
                    "name": "n",
                    "arguments": "{}",
                    "index": 0,
                },
                "no field 'index'",
            ),
            (
                {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}", "id": 3},
                "id=3",
            ),
            (
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "input_image",
                            "image_url": "https://x.test/a.png",
                            "detail": "max",
                        }
                    ],
                },
                "detail='max'",
            ),
            (
                {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": 5},
                "encrypted_content",
            ),
        ],
    )
    def test_responses(self, item: dict[str, Any], fragment: str) -> None:
        """Each unknown key or wrong type is a problem."""
        lines = validate_responses([item])
        assert any(fragment in line for line in lines), lines

    def test_responses_null_detail_only_in_a_function_call_output(self) -> None:
        """`detail: null` is `Optional` in a `function_call_output`'s image
        (`ResponseInputImageContentParam`), not in a custom output's (`ResponseInputImageParam`)."""
        image = {"type": "input_image", "image_url": "https://x.test/a.png", "detail": None}
        calls = [
            {"type": "function_call", "call_id": "f", "name": "n", "arguments": "{}"},
            {"type": "custom_tool_call", "call_id": "c", "name": "n", "input": ""},
        ]
        outputs = [
            {"type": "function_call_output", "call_id": "f", "output": [image]},
            {"type": "custom_tool_call_output", "call_id": "c", "output": [image]},
        ]
        assert [
            "item 4 output content[0]: input_image detail=None must be one of "
            "['low', 'high', 'auto', 'original']"
        ] == validate_responses([{"role": "user", "content": "go"}, *calls, *outputs])


class TestUsageCacheFields:
    """Item 9. `Usage.cache_read_tokens` / `cache_write_tokens` are what a provider billed
    (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens` and
    `cache_creation_input_tokens`): storing them must not drop them."""

    USAGE = Usage(1_000, 20, cache_read_tokens=900, cache_write_tokens=64)

    def test_components_to_json_keeps_them(self) -> None:
        """A round trip through JSON records gives the same usage."""
        out = components_from_json(components_to_json([ModelOutputThunk("ok", usage=self.USAGE)]))
        assert self.USAGE == out[0].usage

    def test_records_written_before_them_still_load(self) -> None:
        """An old record of three counts loads, with the cache fields unknown."""
        out = components_from_json('[{"kind":"output","value":"x","usage":[1,2,3]}]')
        assert Usage(1, 2, 3) == out[0].usage

    def test_every_store_keeps_them(self, store: Any) -> None:
        """Memory, SQLite and Redis stores, sync and async, load what they were given."""
        store.append("s1", [ModelOutputThunk("ok", usage=self.USAGE)], expected_version=0)
        assert self.USAGE == store.load("s1").components[0].usage


class TestThunkSubclasses:
    """Item 16. A subclass made with `@attrs.define` is built like its base, as `Message`'s
    are (attrs generates the subclass's own `__init__` from the fields)."""

    def test_built_from_a_value(self) -> None:
        """`MyThunk("", usage=...)` and `MyThunk("hi")` work."""

        @attrs.define
        class MyThunk(ModelOutputThunk):
            pass

        usage = Usage(10, 2)
        assert (usage, (), "") == (MyThunk("", usage=usage).usage, MyThunk("").parts, "")
        assert ModelOutputThunk("hi").parts == MyThunk("hi").parts
