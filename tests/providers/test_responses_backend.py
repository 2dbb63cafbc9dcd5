"""OpenAIResponsesBackend over a loopback server speaking the Responses API, with the real SDK."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from mellea_ctx import (
    BackendConnectionError,
    BackendError,
    ChatContext,
    Component,
    ContextOverflowError,
    Message,
    ModelOutputThunk,
    OpenAIResponsesBackend,
    RateLimitError,
    RequestRejectedError,
    ServerError,
    ToolMessage,
    WindowCompactor,
    pin_react_initiator,
    react,
    tool,
    validate_responses,
)
from mellea_ctx._core.parts import ThinkingPart

from ._wire import Reply
from .responses_server import ResponsesWireServer

HISTORY: list[Component] = [Message("system", "Be brief."), Message("user", "Where is the config?")]


@pytest.fixture
def server() -> Iterator[ResponsesWireServer]:
    """A `ResponsesWireServer` on a free loopback port."""
    with ResponsesWireServer() as wire:
        yield wire


def generate(backend: Any, messages: list[Component] = HISTORY, **options: Any) -> ModelOutputThunk:
    return asyncio.run(backend.generate(messages, model_options=options or None))  # type: ignore[no-any-return]


@tool
def ls(path: str) -> str:
    """List the files under a path."""
    return f"{path}/a.py {path}/b.py"


@tool
def read_file(path: str) -> str:
    """Read one file."""
    return f"contents of {path}: return 42"


class TestRequests:
    def test_stateless_request_and_answer(self, server: ResponsesWireServer) -> None:
        """The request is stateless input items; the answer's text and usage come back."""
        server.reply("It is in config.toml.", usage=(120, 30))
        out = generate(OpenAIResponsesBackend("gpt-5-mini", base_url=server.base_url))
        body = server.requests[0].json
        assert (False, ["reasoning.encrypted_content"]) == (body["store"], body["include"])
        assert [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Where is the config?"},
        ] == body["input"]
        assert ("It is in config.toml.", 150) == (out.content, out.usage.total_tokens)

    def test_reasoning_is_kept_and_sent_back_verbatim(self, server: ResponsesWireServer) -> None:
        """A reasoning item comes back as a signed ThinkingPart and goes back unchanged."""
        server.reply(tool_calls=[("call_1", "ls", '{"path": "src"}')])
        server.reply("Two files.")
        backend = OpenAIResponsesBackend("gpt-5-mini", base_url=server.base_url)
        step = generate(backend)
        thinking = step.parts[0]
        assert isinstance(thinking, ThinkingPart) and thinking.signature == "gAAAA-enc-1"
        answer = generate(backend, [*HISTORY, step, ToolMessage("a.py", tool_call_id="call_1")])
        assert "Two files." == answer.content
        sent = server.requests[1].json["input"]
        assert server.issued["rs_1"] == sent[2]
        assert [] == server.errors

    def test_options_override_the_stateless_defaults(self, server: ResponsesWireServer) -> None:
        """model_options may turn storage on; tools go out flat."""
        server.reply("ok")
        backend = OpenAIResponsesBackend(
            "m", base_url=server.base_url, model_options={"store": True}
        )
        asyncio.run(backend.generate(HISTORY, tools=[ls]))
        body = server.requests[0].json
        assert body["store"] is True
        assert {"type": "function", "name": "ls"} == {
            k: body["tools"][0][k] for k in ("type", "name")
        }

    def test_reasoning_effort_goes_in_reasoning(self, server: ResponsesWireServer) -> None:
        """reasoning_effort is reasoning={"effort": ...} for a reasoning model, else dropped."""
        server.reply("ok")
        server.reply("ok")
        server.reply("ok")
        generate(
            OpenAIResponsesBackend("gpt-5-mini", base_url=server.base_url), reasoning_effort="low"
        )
        kept = OpenAIResponsesBackend(
            "gpt-5-mini", base_url=server.base_url, model_options={"reasoning": {"effort": "high"}}
        )
        generate(kept, reasoning_effort="low")
        generate(
            OpenAIResponsesBackend("gpt-4.1", base_url=server.base_url), reasoning_effort="low"
        )
        bodies = [request.json for request in server.requests]
        assert [{"effort": "low"}, {"effort": "high"}, None] == [b.get("reasoning") for b in bodies]
        assert all("reasoning_effort" not in body for body in bodies)

    def test_cached_tokens_and_window(self, server: ResponsesWireServer) -> None:
        """cached_tokens are cache reads (no writes reported); context_window is as given."""
        server.enqueue(Reply("ok", usage=(1000, 5), cache=(900, 0)))
        backend = OpenAIResponsesBackend("m", base_url=server.base_url, context_window=32_000)
        usage = generate(backend).usage
        assert (900, None) == (usage.cache_read_tokens, usage.cache_write_tokens)
        assert 32_000 == backend.context_window


class TestFaults:
    @pytest.mark.parametrize(
        ("status", "expected"),
        [
            (429, RateLimitError),
            (500, ServerError),
            (503, ServerError),
            (400, RequestRejectedError),
        ],
    )
    def test_http_errors_map_to_ours(
        self, server: ResponsesWireServer, status: int, expected: type
    ) -> None:
        """Each HTTP failure is our typed error, chained to the SDK's; 429 keeps Retry-After."""
        server.fail(status, retry_after=2 if status == 429 else None)
        with pytest.raises(expected) as info:
            generate(OpenAIResponsesBackend("m", base_url=server.base_url))
        assert isinstance(info.value.__cause__, openai.OpenAIError)
        if status == 429:
            assert 2.0 == info.value.retry_after  # type: ignore[attr-defined]

    def test_context_overflow_is_a_rejected_request(self, server: ResponsesWireServer) -> None:
        """context_length_exceeded is refused as a 400, its message kept for the caller."""
        server.fail(
            400,
            message="Your input exceeds the context window of this model.",
            error_type="context_length_exceeded",
        )
        with pytest.raises(ContextOverflowError, match="context window"):
            generate(OpenAIResponsesBackend("m", base_url=server.base_url))

    def test_transport_failures_map_to_ours(self, server: ResponsesWireServer) -> None:
        """A reset is a connection error, a broken body a backend error."""
        backend = OpenAIResponsesBackend("m", base_url=server.base_url, timeout=2)
        server.reset()
        with pytest.raises(BackendConnectionError):
            generate(backend)
        server.malformed()
        with pytest.raises(BackendError):
            generate(backend)

    def test_empty_answer(self, server: ResponsesWireServer) -> None:
        """An empty answer is an empty step, not an error: the caller decides."""
        server.reply("")
        out = generate(OpenAIResponsesBackend("m", base_url=server.base_url))
        assert ("", ()) == (out.content, out.tool_calls)


class TestReact:
    @pytest.mark.parametrize("reasoning", [True, False])
    def test_tool_loop_with_parallel_calls_and_compaction(self, reasoning: bool) -> None:
        """react runs a multi-step loop under a window; every request it sent validates.

        The window cuts the running loop midway, with or without reasoning items:
        the API refuses only a reasoning item parted from the item it preceded
        (one step here, never split). With reasoning the kept part of the loop
        starts with a reasoning item, sent back verbatim (the boundaries'
        thinking-loop rule: no cut after the loop's last thinking step).
        """
        with ResponsesWireServer(reasoning=reasoning) as server:
            self._loop(server, reasoning)

    def _loop(self, server: ResponsesWireServer, reasoning: bool) -> None:
        server.reply(
            tool_calls=[("c1", "ls", '{"path": "src"}'), ("c2", "ls", '{"path": "tests"}')]
        )
        server.reply(
            tool_calls=[
                ("c3", "read_file", '{"path": "src/a.py"}'),
                ("c4", "read_file", '{"path": "src/b.py"}'),
            ]
        )
        server.reply(tool_calls=[("c5", "read_file", '{"path": "tests/a.py"}')])
        server.reply("a.py returns 42.")
        backend = OpenAIResponsesBackend("gpt-5-mini", base_url=server.base_url)
        compactor = WindowCompactor(size=3, pin_predicate=pin_react_initiator)
        ctx = ChatContext().add(Message("system", "You are a careful agent."))
        result = react(
            "What does a.py return?", ctx, backend, tools=[ls, read_file], compactor=compactor
        )
        assert ("a.py returns 42.", 4) == (result.answer, result.turns)
        assert [] == server.errors
        inputs = [request.json["input"] for request in server.requests]
        assert all(validate_responses(items) == [] for items in inputs)
        ids = [{item.get("call_id") for item in items} for items in inputs]
        assert "c1" in ids[1]
        # the window dropped the oldest step; the kept loop starts with its reasoning
        assert "c1" not in ids[-1]
        sent = [i for i in inputs[-1] if i.get("type") == "reasoning"]
        assert all(server.issued[r["id"]] == r for r in sent)  # verbatim
        loop = [i for i in inputs[-1] if i.get("type") in ("reasoning", "function_call")]
        assert bool(sent) is reasoning
        if reasoning:
            assert "reasoning" == loop[0]["type"]
