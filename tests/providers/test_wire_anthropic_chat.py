"""Issue 22 (Anthropic Messages and Chat Completions side) and issue 20's error-mapping bug.

Every request we build must be one the provider accepts. The oracles are the
providers' own: the official SDKs' request types read strictly
(:mod:`tests.sdk_strict`, unknown keys refused, as the APIs refuse them), the
documented rules quoted in each test, and the real 400 messages.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import MessageParam, TextBlockParam, ToolParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam

from mellea_ctx import (
    AnthropicBackend,
    ChatContext,
    ClearToolResultsCompactor,
    ContextOverflowError,
    DocumentPart,
    InvalidArgumentError,
    InvalidComponentError,
    LossyConversionWarning,
    MalformedResponseError,
    Message,
    ModelOutputThunk,
    OpaquePart,
    OpenAIBackend,
    ScriptedBackend,
    TextPart,
    ThinkingPart,
    ThresholdCompactor,
    TieredCompactor,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    from_anthropic,
    from_openai,
    react,
    to_anthropic,
    to_openai,
    validate_anthropic,
)
from mellea_ctx._backends.anthropic import _parse as parse_anthropic
from mellea_ctx._backends.cache_control import place_breakpoints
from mellea_ctx._backends.errors import map_provider_error, map_sdk_error
from mellea_ctx._backends.windows import output_limit
from mellea_ctx._core.calls import Usage
from mellea_ctx._formats.notes import NOTES

from ..helpers import CORPUS as CORPUS_DIR
from ..sdk_strict import problems
from ..strategies import histories
from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

CORPUS = CORPUS_DIR if CORPUS_DIR.is_dir() else None
EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def _backend(**kwargs: Any) -> AnthropicBackend:
    return AnthropicBackend("claude-sonnet-4-5", api_key="test", **kwargs)


def _request(components: list[Any], **kwargs: Any) -> dict[str, Any]:
    tools = kwargs.pop("tools", ())
    return _backend(**kwargs).request(components, {"max_tokens": 64}, tools)


def _marks(value: Any) -> list[Any]:
    """Every ``cache_control`` in a request body, in the API's order (tools, system, messages)."""
    if isinstance(value, dict):
        found = [value["cache_control"]] if "cache_control" in value else []
        return found + [m for k, v in value.items() if k != "cache_control" for m in _marks(v)]
    if isinstance(value, list):
        return [m for item in value for m in _marks(item)]
    return []


def _ordered(request: dict[str, Any]) -> list[Any]:
    return (
        _marks(request.get("tools", []))
        + _marks(request.get("system"))
        + _marks(request["messages"])
    )


def anthropic_rule_problems(
    system: Any, messages: list[dict[str, Any]], marks: list[Any]
) -> list[str]:
    """The Messages API's documented rules (not our validator's reading of them).

    * "A maximum of 4 blocks with cache_control may be provided" (the 400 text;
      prompt caching: "You can define up to 4 cache breakpoints").
    * Mixing TTLs: "cache entries with longer TTL must appear before shorter
      TTLs (i.e., a 1-hour cache entry must appear before any 5-minute cache
      entries)" (docs.anthropic.com, prompt caching, "Mixing different TTLs").
    * "text content blocks must contain non-whitespace text" / "must be
      non-empty" (the 400 texts), the system prompt included.
    * The first message is a user turn, and turns alternate (the writer
      merges consecutive turns of one role, as the API does).
    """
    found: list[str] = []
    if len(marks) > 4:
        found.append(
            f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}."
        )
    ttls = ["1h" if isinstance(m, dict) and m.get("ttl") == "1h" else "5m" for m in marks]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        found.append(f"a 1-hour cache entry after a 5-minute one: {ttls}")
    if isinstance(system, str) and not system.strip():
        found.append(f"system: blank system prompt {system!r}")
    texts = [b for b in system if b.get("type") == "text"] if isinstance(system, list) else []
    for index, message in enumerate(messages):
        content = message["content"]
        if isinstance(content, str):
            if not content.strip():
                found.append(
                    f"messages.{index}: text content blocks must contain non-whitespace text"
                )
            continue
        if not content and not (index == len(messages) - 1 and message["role"] == "assistant"):
            found.append(f"messages.{index}: all messages must have non-empty content")
        texts += [b for b in content if b.get("type") == "text"]
    found += [f"blank text block {b['text']!r}" for b in texts if not b["text"].strip()]
    if messages and messages[0]["role"] != "user":
        found.append("messages: the first message must use the user role")
    roles = [m["role"] for m in messages]
    found += [
        f"messages.{i}: roles must alternate"
        for i in range(1, len(roles))
        if roles[i] == roles[i - 1]
    ]
    return found


def strict_anthropic(system: Any, messages: list[dict[str, Any]]) -> list[str]:
    found = [p for m in messages for p in problems(m, MessageParam)]
    if isinstance(system, list):
        found += [p for block in system for p in problems(block, TextBlockParam)]
    elif system is not None and not isinstance(system, str):
        found.append(f"system is {system!r:.60}")
    return found


def strict_openai(messages: list[dict[str, Any]], *, extensions: bool = False) -> list[str]:
    """Why ``messages`` are not Chat Completions messages of OpenAI's SDK, read strictly.

    ``extensions=True`` checks what ``to_openai`` writes by default, for any
    Chat server: it may carry two keys that compatible servers define and
    OpenAI's types do not (docs/formats.md), a server's ``reasoning_content``
    (DeepSeek and Kimi refuse a tool loop continued without it) and a streamed
    call's ``index``, each only as a Chat answer or file had it. Without it,
    nothing is exempt.
    """
    found: list[str] = []
    for message in messages:
        if extensions:
            message = {k: v for k, v in message.items() if k != "reasoning_content"}
            if "tool_calls" in message:
                calls = [
                    {k: v for k, v in c.items() if k != "index"} for c in message["tool_calls"]
                ]
                message = {**message, "tool_calls": calls}
        found += problems(message, ChatCompletionMessageParam)
    return found


# -- item 3: cache_control --------------------------------------------------------------


class TestCacheBreakpoints:
    """Marks already in a transcript count, keep their TTL order, and are never overwritten."""

    def _transcript(self, marks: list[dict[str, Any]]) -> list[Any]:
        turns: list[dict[str, Any]] = []
        for index, mark in enumerate(marks):
            turns.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"q{index}", "cache_control": mark}],
                }
            )
            turns.append({"role": "assistant", "content": f"a{index}"})
        turns.append({"role": "user", "content": "and now?"})
        return from_anthropic(turns)

    def test_existing_marks_count_towards_the_limit_of_four(self) -> None:
        """Claude Code's transcripts carry marks: ours are added only while 4 are not reached.

        Anthropic answers 400 "A maximum of 4 blocks with cache_control may be
        provided. Found 6." to more.
        """
        history = [Message("system", "Be brief."), *self._transcript([EPHEMERAL] * 3)]
        tool = {"name": "ls", "description": "List.", "input_schema": {"type": "object"}}
        text, turns = to_anthropic(history)
        system, messages, tools = place_breakpoints(
            {"tools", "system", "history"}, text, turns, [tool]
        )
        marks = _marks(tools) + _marks(system) + _marks(messages)
        assert 4 == len(marks)
        assert "cache_control" in messages[-1]["content"][-1]  # the history mark is kept first
        assert [] == anthropic_rule_problems(system, messages, marks)
        assert [] == problems(tools[0], ToolParam)

    def test_four_marks_get_no_fifth(self) -> None:
        """A transcript that already has 4 marks is sent with those 4 only."""
        body = _request([Message("system", "Be brief."), *self._transcript([EPHEMERAL] * 4)])
        assert 4 == len(_ordered(body))
        assert isinstance(body["system"], str)  # no mark, so no need for blocks

    def test_no_five_minute_mark_ahead_of_a_one_hour_mark(self) -> None:
        """Docs: "a 1-hour cache entry must appear before any 5-minute cache entries".

        With ``ttl: "1h"`` in the history, tools and system get no 5-minute
        mark ahead of it (it caches them already); the end of the history may
        have one, after it.
        """
        history = [Message("system", "Be brief."), *self._transcript([HOUR])]
        tool = {"name": "ls", "description": "List.", "input_schema": {"type": "object"}}
        system, messages, tools = place_breakpoints(
            {"tools", "system", "history"}, "Be brief.", to_anthropic(history)[1], [tool]
        )
        marks = _marks(tools) + _marks(system) + _marks(messages)
        assert [HOUR, EPHEMERAL] == marks
        assert [] == anthropic_rule_problems(system, messages, marks)

    def test_the_transcripts_own_mark_is_not_overwritten(self) -> None:
        """The last block's own 1-hour mark stays as it is: no 5-minute mark replaces it."""
        history = from_anthropic(
            [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": HOUR}]}]
        )
        body = _request(history)
        assert HOUR == body["messages"][-1]["content"][-1]["cache_control"]
        assert [HOUR] == _ordered(body)


class TestValidateCacheMarks:
    def _user(self, *marks: dict[str, Any]) -> Message:
        parts = [TextPart(f"t{i}", extra={"cache_control": m}) for i, m in enumerate(marks)]
        return Message("user", parts, structured=True)

    def test_more_than_four_marks_are_reported(self) -> None:
        """Anthropic: "A maximum of 4 blocks with cache_control may be provided. Found 5."."""
        assert [] == validate_anthropic([self._user(*[EPHEMERAL] * 4)])
        problems_found = validate_anthropic([self._user(*[EPHEMERAL] * 5)])
        assert 1 == len(problems_found) and "A maximum of 4" in problems_found[0]

    def test_a_one_hour_mark_after_a_five_minute_one_is_reported(self) -> None:
        """Docs: "a 1-hour cache entry must appear before any 5-minute cache entries"."""
        later = [self._user(EPHEMERAL), Message("assistant", "x"), self._user(HOUR)]
        assert 1 == len(validate_anthropic(later))
        assert [] == validate_anthropic(
            [self._user(HOUR), Message("assistant", "x"), self._user(EPHEMERAL)]
        )


# -- item 4: a system prompt read as blocks ---------------------------------------------


CLAUDE_CODE = {
    "system": [
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {"type": "text", "text": "Work in /repo.", "cache_control": EPHEMERAL},
    ],
    "messages": [{"role": "user", "content": "List the files."}],
}


class TestSystemBlocks:
    @pytest.mark.parametrize("places", [("tools", "system", "history"), ()])
    def test_backend_sends_a_system_prompt_read_as_blocks(
        self, anthropic_server: AnthropicWireServer, places: tuple[str, ...]
    ) -> None:
        """Claude Code's system blocks go out as blocks (no ``'list'.strip`` crash), marks kept."""
        anthropic_server.reply("ok")
        backend = AnthropicBackend(
            "claude-x", base_url=anthropic_server.base_url, api_key="test", cache_breakpoints=places
        )
        history = from_anthropic(CLAUDE_CODE["messages"], system=CLAUDE_CODE["system"])
        answer = asyncio.run(backend.generate(history))
        assert "ok" == answer.value
        sent = anthropic_server.requests[-1].json
        assert [b["text"] for b in sent["system"]] == [b["text"] for b in CLAUDE_CODE["system"]]
        assert [] == strict_anthropic(sent["system"], sent["messages"])
        assert [] == anthropic_rule_problems(sent["system"], sent["messages"], _ordered(sent))


# -- item 6: keys of other providers ----------------------------------------------------


def _foreign_history() -> list[Any]:
    """Components holding every provider's own keys, as their readers keep them."""
    return [
        Message("user", [TextPart("From Responses.", extra={"annotations": [], "logprobs": []})]),
        Message(
            "assistant",
            [TextPart("From Gemini.", extra={"thoughtSignature": "c2ln"})],
            tool_calls=[
                ToolCall("call_1", "ls", "{}", extra={"index": 0, "thoughtSignature": "c2ln"})
            ],
            extra={"id": "msg_1", "status": "completed", NOTES: {"content": "absent"}},
        ),
        ToolMessage(
            "a.py", tool_call_id="call_1", extra={"is_error": False, "cache_control": EPHEMERAL}
        ),
        Message(
            "user",
            [TextPart("From Anthropic.", extra={"cache_control": EPHEMERAL, "citations": []})],
        ),
    ]


class TestForeignKeys:
    def test_a_result_of_ours_goes_to_chat_without_a_name(self) -> None:
        """Chat's tool message has ``role``, ``content`` and ``tool_call_id``, no ``name``.

        ``ChatCompletionToolMessageParam`` declares no ``name``, and strict compatible
        servers answer 400 to a key they do not define. ``react`` gives every result the
        name of its tool, so every request after a tool step carried one.
        """
        history = [
            Message("user", "List the files."),
            Message("assistant", "", tool_calls=(ToolCall("call_1", "ls", "{}"),)),
            ToolMessage("a.py", tool_call_id="call_1", name="ls"),
        ]
        messages = to_openai(history, lost=[])
        assert "name" not in messages[2]
        assert [] == strict_openai(messages)

    def test_a_chat_file_s_named_tool_message_goes_back_as_it_came(self) -> None:
        """A file that put a ``name`` on its tool messages is still given back exactly."""
        raw = [
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py", "name": "ls"},
        ]
        components = from_openai(raw)
        assert "ls" == components[2].name
        assert raw == to_openai(components, lost=[])

    def test_anthropic_request_carries_only_what_the_messages_api_defines(self) -> None:
        """Chat's ``index``, Responses' ``annotations``, Gemini's ``thoughtSignature`` stay out.

        The Messages API answers 400 "Extra inputs are not permitted" to any of them.
        """
        lost: list[str] = []
        system, messages = to_anthropic(_foreign_history(), lost=lost)
        for key in ("annotations", "logprobs", "thoughtSignature", "index", "status", NOTES):
            assert key not in _keys(messages)
        assert [] == strict_anthropic(system, messages)
        assert any("'index'" in line for line in lost) and any(
            "'annotations'" in line for line in lost
        )
        # what the Messages API defines is kept
        assert {"cache_control": EPHEMERAL, "citations": []}.items() <= messages[-1]["content"][
            -1
        ].items()

    def test_chat_request_carries_no_other_providers_keys(self) -> None:
        """Anthropic's ``cache_control``, ``citations``, ``is_error``... stay out of Chat."""
        lost: list[str] = []
        messages = to_openai(_foreign_history(), lost=lost)
        for key in (
            "cache_control",
            "citations",
            "is_error",
            "annotations",
            "thoughtSignature",
            NOTES,
        ):
            assert key not in _keys(messages)
        assert [] == strict_openai(messages, extensions=True)
        assert any("'cache_control'" in line for line in lost)
        assert 0 == messages[1]["tool_calls"][0]["index"]  # Chat's own key is kept

    def test_for_openai_itself_only_what_its_api_defines(self) -> None:
        """``extensions=False``, and the backend's default for OpenAI's own API: nothing else.

        A compatible server's keys are refused by strict ones: Mistral answers 422
        ``extra_forbidden`` to an assistant message's ``reasoning_content``, and a
        request carries no streamed ``index``. Each one left out is reported.
        """
        history = [
            *_foreign_history(),
            Message("assistant", [ThinkingPart("Why.", provider="openai"), TextPart("Done.")]),
            Message("user", [TextPart("Tag.", extra={"mine": 1})]),
        ]
        lost: list[str] = []
        messages = to_openai(history, lost=lost, extensions=False)
        assert [] == strict_openai(messages)
        assert {"index", "reasoning_content", "mine"}.isdisjoint(_keys(messages))
        assert any("'index'" in line for line in lost)
        assert any("thinking part from 'openai'" in line for line in lost)
        assert any("'mine'" in line for line in lost)
        # The same history for another server keeps what that server sent.
        kept = to_openai(history, lost=[])
        assert (
            "Why." == kept[4]["reasoning_content"]
            and {"mine": 1}.items() <= kept[5]["content"][0].items()
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyConversionWarning)
            official = OpenAIBackend("gpt-4o-mini", api_key="k").request(history, {}, ())
            local = OpenAIBackend("m", base_url="http://127.0.0.1:8000/v1").request(history, {}, ())
        assert [] == strict_openai(official["messages"])
        assert "Why." == local["messages"][4]["reasoning_content"]
        assert not OpenAIBackend("m", base_url="https://api.openai.com/v1").extensions
        assert not OpenAIBackend("m", base_url="http://x.test/v1", extensions=False).extensions
        with pytest.raises(InvalidArgumentError, match="extensions='no' must be True, False"):
            OpenAIBackend("m", base_url="http://x.test/v1", extensions="no")  # type: ignore[arg-type]

    def test_a_chat_history_read_from_anthropic_is_valid_chat(self) -> None:
        """A Claude Code transcript with marks, written for Chat, passes the SDK types."""
        history = from_anthropic(
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi", "cache_control": HOUR}],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Reading.", "citations": None},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "Read",
                            "input": {},
                            "cache_control": EPHEMERAL,
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": "x",
                            "is_error": False,
                        }
                    ],
                },
            ]
        )
        lost: list[str] = []
        assert [] == strict_openai(to_openai(history, lost=lost))
        assert lost


# -- item 7: whitespace and empty text --------------------------------------------------


class TestBlankText:
    def test_whitespace_assistant_is_not_sent(self) -> None:
        """Anthropic answers 400 "text content blocks must contain non-whitespace text"."""
        system, messages = to_anthropic(
            [Message("user", "hello"), Message("assistant", " "), Message("user", "and?")]
        )
        assert [] == anthropic_rule_problems(system, messages, [])
        assert [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "and?"}],
            }
        ] == messages

    def test_empty_system_messages_give_no_system(self) -> None:
        """Two empty system messages are no system prompt, not ``"\\n\\n"`` (a 400)."""
        system, _ = to_anthropic(
            [Message("system", ""), Message("system", " "), Message("user", "hi")]
        )
        assert system is None
        system, _ = to_anthropic(
            [Message("system", ""), Message("system", "Be brief."), Message("user", "hi")]
        )
        assert "Be brief." == system

    def test_blank_system_after_a_call_is_nothing(self) -> None:
        """No ``'[system] '`` text right after a tool call (its result must come first)."""
        history = [
            Message("user", "ok"),
            Message("assistant", "", tool_calls=[ToolCall("c1", "ls")]),
            Message("system", ""),
        ]
        _, messages = to_anthropic(history)
        assert "[system]" not in json.dumps(messages)
        assert ["user", "assistant"] == [m["role"] for m in messages]
        assert [] == validate_anthropic(history)

    def test_a_system_note_after_a_call_is_reported(self) -> None:
        """The API refuses text after tool_use without its tool_result: validate says so.

        Anthropic: "tool_use ids were found without tool_result blocks immediately after".
        """
        history = [
            Message("user", "ok"),
            Message("assistant", "", tool_calls=[ToolCall("c1", "ls")]),
            Message("system", "Be brief."),
        ]
        assert validate_anthropic(history)


class TestSendable:
    def test_a_blank_first_turn_leaves_a_user_turn_first(self) -> None:
        """Dropping a blank user turn must not leave the assistant first.

        Anthropic: "messages: the first message must use the "user" role".
        """
        history = from_anthropic(
            [
                {"role": "user", "content": [{"type": "text", "text": " "}]},
                {"role": "assistant", "content": "ok"},
            ]
        )
        body = _request(history, cache_breakpoints=())
        assert [] == anthropic_rule_problems(body.get("system"), body["messages"], _ordered(body))


# -- item 8: an empty model answer ------------------------------------------------------


class TestEmptyAnswer:
    def test_an_empty_answer_does_not_poison_the_session(self) -> None:
        """``ModelOutputThunk(None)`` is the empty answer: stored as "", and the next turn runs.

        OpenAI: an assistant message's content "is required unless tool_calls
        or function_call is specified" (``null`` without them is refused).
        """
        answers = iter([ModelOutputThunk(None), ModelOutputThunk("second")])
        backend = ScriptedBackend(lambda messages, options: next(answers))
        first = react("Say nothing.", ChatContext(), backend)
        assert ("", "answer") == (first.answer, first.stopped)
        second = react("Now talk.", first.ctx, backend)
        assert "second" == second.answer
        assert [] == strict_openai(to_openai(second.ctx.as_list()))


# -- item 10: overflow wordings ---------------------------------------------------------

ANTHROPIC_INPUT_AND_ANSWER = (
    "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, "
    "decrease input length or `max_tokens` and try again"
)
VLLM_PROMPT = {
    "object": "error",
    "message": "The prompt (total length 10250) is too long to fit into the model (context "
    "length 8192). Make sure that `max_model_len` is no smaller than the number of text tokens "
    "plus multimodal tokens.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}


def _long_history() -> ChatContext:
    ctx = ChatContext()
    for index in range(6):
        ctx = ctx.add(Message("user", f"question {index} " * 20))
        ctx = ctx.add(Message("assistant", f"answer {index} " * 20))
    return ctx


class TestOverflowWordings:
    def test_anthropic_input_and_max_tokens(self, anthropic_server: AnthropicWireServer) -> None:
        """Anthropic's own wording: the prompt against what ``max_tokens`` leaves of the window."""
        anthropic_server.fail(400, message=ANTHROPIC_INPUT_AND_ANSWER)
        backend = AnthropicBackend("claude-x", base_url=anthropic_server.base_url, api_key="test")
        with pytest.raises(ContextOverflowError) as info:
            asyncio.run(backend.generate([Message("user", "hi")]))
        assert (178959, 136000) == (info.value.prompt_tokens, info.value.limit_tokens)

    def test_vllm_prompt_too_long(self, openai_server: OpenAIWireServer) -> None:
        """vLLM: "The prompt (total length N) is too long to fit into the model (...)"."""
        openai_server.raw(json.dumps(VLLM_PROMPT).encode(), status=400)
        backend = OpenAIBackend("m", base_url=openai_server.base_url, api_key="test")
        with pytest.raises(ContextOverflowError) as info:
            asyncio.run(backend.generate([Message("user", "hi")]))
        assert (10250, 8192) == (info.value.prompt_tokens, info.value.limit_tokens)

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_react_compacts_and_retries(
        self, provider: str, request: pytest.FixtureRequest
    ) -> None:
        """Either wording makes react compact once and retry, as for the other providers."""
        server = request.getfixturevalue(f"{provider}_server")
        if provider == "openai":
            server.raw(json.dumps(VLLM_PROMPT).encode(), status=400)
            backend: Any = OpenAIBackend("m", base_url=server.base_url, api_key="test")
        else:
            server.fail(400, message=ANTHROPIC_INPUT_AND_ANSWER)
            backend = AnthropicBackend("claude-x", base_url=server.base_url, api_key="test")
        server.reply("done")
        compactor = ThresholdCompactor(WindowCompactor(size=2), threshold=100_000)
        result = react("Answer.", _long_history(), backend, compactor=compactor)
        assert "done" == result.answer
        sizes = [len(r.json["messages"]) for r in server.requests if r.method == "POST"]
        assert 2 == len(sizes) and sizes[1] < sizes[0]


# -- issue 20: a caller's mistake is not a provider failure ------------------------------


class TestCallerMistakes:
    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_a_bad_component_is_our_argument_error(
        self, provider: str, request: pytest.FixtureRequest
    ) -> None:
        """``generate([Message(...), "not a component"])``: InvalidComponentError, nothing sent."""
        server = request.getfixturevalue(f"{provider}_server")
        cls: Any = OpenAIBackend if provider == "openai" else AnthropicBackend
        backend = cls("m", base_url=server.base_url, api_key="test")
        with pytest.raises(InvalidComponentError, match="not a Component") as info:
            asyncio.run(backend.generate([Message("user", "hi"), "not a component"]))  # type: ignore[list-item]
        assert not isinstance(info.value, MalformedResponseError)
        assert [] == [r for r in server.requests if r.method == "POST"]

    def test_a_plain_value_error_is_not_a_malformed_answer(self) -> None:
        """Only a body that is not JSON is a malformed answer; other ValueErrors are not mapped."""
        assert map_provider_error(ValueError("bad option"), "OpenAI", openai.OpenAIError) is None
        bad_json = json.JSONDecodeError("Expecting value", "<html>", 0)
        assert isinstance(
            map_provider_error(bad_json, "OpenAI", openai.OpenAIError), MalformedResponseError
        )

    @pytest.mark.parametrize("client_name", ["httpx", "httpx2"])
    def test_transport_classes_are_mapped(self, client_name: str) -> None:
        """The HTTP client's own classes (not names): a read timeout and a refused connection.

        The SDKs moved from httpx to httpx2, whose errors escape a dropped or stalled
        stream unwrapped (tests/providers/test_wire_servers.py); the mapping knew only
        httpx's classes and let httpx2's through as they were.
        """
        from mellea_ctx import BackendConnectionError, BackendTimeoutError

        client = pytest.importorskip(client_name)
        req = client.Request("POST", "http://x.test")
        timeout = map_provider_error(
            client.ReadTimeout("slow", request=req), "A", anthropic.AnthropicError
        )
        refused = map_provider_error(
            client.ConnectError("refused", request=req), "A", anthropic.AnthropicError
        )
        assert isinstance(timeout, BackendTimeoutError)
        assert isinstance(refused, BackendConnectionError)

    def test_a_subclass_named_like_an_sdk_error_is_not_one(self) -> None:
        """Mapping uses the SDK's real classes: a look-alike name is not a timeout."""

        class APITimeoutError(openai.OpenAIError):  # an OpenAIError, but not the SDK's timeout
            pass

        assert type(map_sdk_error(APITimeoutError("x"), "OpenAI")).__name__ == "BackendError"


# -- item 15: arguments -----------------------------------------------------------------


class TestArguments:
    def test_keep_tools_one_name(self) -> None:
        """``keep_tools="memory"`` is the memory tool, not the letters m, e, o, r, y."""
        assert frozenset({"memory"}) == ClearToolResultsCompactor(keep_tools="memory").keep_tools

    @pytest.mark.parametrize(
        ("build", "error", "words"),
        [
            (lambda: ClearToolResultsCompactor(keep_tools=5), InvalidArgumentError, "keep_tools=5"),
            (
                lambda: TieredCompactor(WindowCompactor(size=3), max_tokens=1000),
                InvalidArgumentError,
                "must be a list of compactors",
            ),
            (lambda: OpaquePart("anthropic", "x"), InvalidComponentError, "OpaquePart: block="),
            (lambda: DocumentPart(), InvalidComponentError, "DocumentPart: needs"),
            (
                lambda: Usage(prompt_tokens=10, completion_tokens=1, cache_read_tokens=11),
                InvalidComponentError,
                "more than prompt_tokens=10",
            ),
        ],
        ids=["keep_tools=5", "tiered-one", "opaque-block", "empty-document", "usage-cache"],
    )
    def test_invalid_arguments(self, build: Any, error: type[Exception], words: str) -> None:
        """Each mistake raises our typed error naming the argument, never a raw TypeError."""
        with pytest.raises(error, match=words.replace("(", r"\(")):
            build()

    def test_anthropic_usage_without_cache_fields(self) -> None:
        """A usage with no cache fields (a server that does not cache) says None, not 0."""
        response = anthropic.types.Message(
            id="msg_1",
            type="message",
            role="assistant",
            model="claude-x",
            content=[anthropic.types.TextBlock(type="text", text="hi")],
            stop_reason="end_turn",
            usage=anthropic.types.Usage(input_tokens=5, output_tokens=2),
        )
        usage = parse_anthropic(response).usage
        assert usage is not None
        assert (5, None, None) == (
            usage.prompt_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        )

    def test_gpt_4o_first_snapshot_output_limit(self) -> None:
        """OpenAI documents 4,096 output tokens for gpt-4o-2024-05-13 (16,384 for later ones)."""
        assert 4_096 == output_limit("gpt-4o-2024-05-13")
        assert 16_384 == output_limit("gpt-4o-2024-08-06")


# -- the property: every compactor's result is a request the provider accepts ------------


_FOREIGN_PART_KEYS = st.sampled_from(
    [
        {},
        {"cache_control": EPHEMERAL},
        {"cache_control": HOUR},
        {"citations": []},
        {"annotations": []},
        {"thoughtSignature": "c2ln"},
        {NOTES: {"key": "x"}},
    ]
)
_FOREIGN_CALL_KEYS = st.sampled_from(
    [{}, {"index": 0}, {"thoughtSignature": "c2ln"}, {"status": "completed"}]
)


@st.composite
def wire_histories(draw: Any) -> list[Any]:
    """``histories(rich=True)`` with other providers' keys, cache marks and text after calls."""
    items = list(draw(histories(rich=True, max_segments=6)))
    out: list[Any] = []
    for item in items:
        if isinstance(item, Message) and item.role == "user" and draw(st.booleans()):
            part = TextPart(item.content.strip() or "look", extra=draw(_FOREIGN_PART_KEYS))
            item = Message("user", [part, *item.parts[1:]], structured=True)
        elif item.tool_calls and draw(st.booleans()):
            calls = [
                ToolCall(c.id, c.name, c.arguments, extra=draw(_FOREIGN_CALL_KEYS))
                for c in item.tool_calls
            ]
            parts = [*item.parts]
            if draw(st.booleans()):
                parts.append(TextPart("and then this"))  # text after the calls
            item = Message("assistant", parts, tool_calls=calls, structured=True)
        out.append(item)
    return out


COMPACTORS = [
    WindowCompactor(size=3),
    WindowCompactor(size=0),
    ClearToolResultsCompactor(keep_last=1, min_clear_tokens=0),
    TieredCompactor(
        [ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0), WindowCompactor(size=4)],
        max_tokens=200,
    ),
]


def _one_hour_first(history: list[Any]) -> bool:
    """Histories whose own marks break no rule (at most 4, 1-hour ones first)."""
    marks = [
        part.extra["cache_control"]
        for item in history
        for part in item.parts
        if isinstance(part, TextPart) and "cache_control" in part.extra
    ]
    ttls = ["1h" if m.get("ttl") == "1h" else "5m" for m in marks]
    return len(marks) <= 4 and not ("5m" in ttls and "1h" in ttls[ttls.index("5m") :])


class TestEveryRequestIsAccepted:
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(history=wire_histories(), which=st.integers(0, len(COMPACTORS) - 1))
    def test_writers_and_backend_request(self, history: list[Any], which: int) -> None:
        """Any compaction, written by a writer or sent by the backend, passes types and rules."""
        compacted = COMPACTORS[which].compact(_ctx(history))
        items = compacted.as_list()
        if not _one_hour_first(items):
            return
        lost: list[str] = []
        system, messages = to_anthropic(items, lost=lost)
        assert [] == strict_anthropic(system, messages)
        chat = to_openai(items, lost=lost)
        assert [] == strict_openai(chat, extensions=True)
        assert [] == strict_openai(to_openai(items, lost=lost, extensions=False))
        assert NOTES not in _keys([system, messages, chat])
        with warnings.catch_warnings():  # the backend reports its losses as a warning
            warnings.simplefilter("ignore", LossyConversionWarning)
            body = _backend().request(items, {"max_tokens": 64}, ())
            for_openai = OpenAIBackend("gpt-4o-mini", api_key="k").request(items, {}, ())
        assert [] == strict_openai(for_openai["messages"])
        assert [] == strict_anthropic(body.get("system"), body["messages"])
        assert [] == anthropic_rule_problems(body.get("system"), body["messages"], _ordered(body))


def _keys(value: Any) -> set[str]:
    """Every object key anywhere in ``value``."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _ctx(history: list[Any]) -> ChatContext:
    ctx = ChatContext()
    for item in history:
        ctx = ctx.add(item)
    return ctx


@pytest.mark.skipif(CORPUS is None, reason="the transcript corpus is not here")
class TestCorpus:
    def test_read_then_write_is_the_identity(self) -> None:
        """Every corpus file, read and written back in its own format, is the same JSON."""
        assert CORPUS is not None
        files = sorted(CORPUS.glob("*.json"))
        assert files
        for path in files:
            data = json.loads(path.read_text())
            if path.name.endswith(".anthropic.json"):
                assert data == to_anthropic(from_anthropic(data))[1], path.name
            else:
                assert data == to_openai(from_openai(data)), path.name


class TestChatKeepsItsOwnBlocks:
    def test_a_tool_result_block_read_from_chat_goes_back_as_it_came(self) -> None:
        """Regression (found by the reliability fuzzer): Chat's own unknown block in a tool
        message was dropped as "a tool message takes none"; only other providers' are."""
        messages = [
            {"role": "user", "content": "ls"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "content": [{}], "tool_call_id": "c1"},
        ]
        lost: list[str] = []
        assert messages == to_openai(from_openai(messages), lost=lost)
        assert [] == lost
