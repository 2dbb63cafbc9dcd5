"""The wire servers, driven by the real OpenAI and Anthropic SDKs over loopback HTTP.

Each test pins what an SDK makes of one answer or fault, so a backend built on the SDK
can rely on it (and learns when a new SDK version changes it).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import TextBlock, ToolUseBlock
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from . import AnthropicWireServer, OpenAIWireServer, Reply, WireServer
from ._wire import THREAD_PREFIX, tool_use

OPENAI_MODEL = "gpt-wire-test"
# A made-up name: the Anthropic SDK warns (DeprecationWarning, an error here) on retired ones.
CLAUDE_MODEL = "claude-wire-test"
MESSAGES = [{"role": "user", "content": "hi"}]


def openai_client(server: WireServer, **options: Any) -> openai.OpenAI:
    """A real OpenAI client on ``server``: no retries and a 2 s timeout unless overridden."""
    options = {"max_retries": 0, "timeout": 2.0, **options}
    return openai.OpenAI(base_url=server.base_url, api_key="test", **options)


def anthropic_client(server: WireServer, **options: Any) -> anthropic.Anthropic:
    """A real Anthropic client on ``server``: no retries and a 2 s timeout unless overridden."""
    options = {"max_retries": 0, "timeout": 2.0, **options}
    return anthropic.Anthropic(base_url=server.base_url, api_key="test", **options)


def chat(client: openai.OpenAI, **kwargs: Any) -> Any:
    return client.chat.completions.create(model=OPENAI_MODEL, messages=MESSAGES, **kwargs)


def message(client: anthropic.Anthropic, **kwargs: Any) -> Any:
    return client.messages.create(model=CLAUDE_MODEL, max_tokens=64, messages=MESSAGES, **kwargs)


def drain(stream: Any) -> tuple[list[Any], BaseException | None]:
    """Read ``stream`` to its end or its first error; return the items and the error."""
    items: list[Any] = []
    try:
        for item in stream:
            items.append(item)
    except Exception as error:
        return items, error
    return items, None


def post(server: WireServer, path: str, body: object, headers: dict[str, str]) -> tuple[int, Any]:
    """POST ``body`` as JSON with plain http.client; return the status and the JSON answer."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=2)
    try:
        connection.request("POST", path, body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def connection_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"{THREAD_PREFIX}connection")]


def wait_until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


class TestOpenAIReplies:
    def test_text_reply_parses_with_usage(self, openai_server: OpenAIWireServer) -> None:
        """A text reply becomes a ChatCompletion with its content, finish reason and usage."""
        openai_server.reply("summary", usage=(120, 30))
        with openai_client(openai_server) as client:
            completion = chat(client)
        assert "summary" == completion.choices[0].message.content
        assert "stop" == completion.choices[0].finish_reason
        assert (120, 30, 150) == (
            completion.usage.prompt_tokens,
            completion.usage.completion_tokens,
            completion.usage.total_tokens,
        )
        assert OPENAI_MODEL == completion.model
        assert completion._request_id.startswith("req_wire")

    def test_tool_calls_parse_into_typed_objects(self, openai_server: OpenAIWireServer) -> None:
        """Tool calls arrive as function tool-call objects, arguments as JSON text."""
        openai_server.reply(
            tool_calls=[("call_1", "ls", '{"p": "."}'), ("call_2", "cat", {"f": 1})]
        )
        with openai_client(openai_server) as client:
            choice = chat(client).choices[0]
        calls = choice.message.tool_calls
        assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
        assert [("call_1", "ls", '{"p": "."}'), ("call_2", "cat", '{"f": 1}')] == [
            (call.id, call.function.name, call.function.arguments) for call in calls
        ]
        assert ("tool_calls", None) == (choice.finish_reason, choice.message.content)

    def test_empty_reply_has_empty_content(self, openai_server: OpenAIWireServer) -> None:
        """empty() gives content "" and no tool calls."""
        openai_server.empty()
        with openai_client(openai_server) as client:
            reply = chat(client).choices[0].message
        assert ("", None) == (reply.content, reply.tool_calls)

    def test_stream_carries_text_then_a_usage_chunk(self, openai_server: OpenAIWireServer) -> None:
        """With include_usage the last chunk has no choices and the usage; others a null one."""
        openai_server.reply("three small words", usage=(7, 3))
        with openai_client(openai_server) as client:
            chunks, error = drain(chat(client, stream=True, stream_options={"include_usage": True}))
        assert error is None
        *body, last = chunks
        assert "three small words" == "".join(c.choices[0].delta.content or "" for c in body)
        assert "stop" == body[-1].choices[0].finish_reason
        assert all(chunk.usage is None for chunk in body)
        assert ([], 10) == (last.choices, last.usage.total_tokens)

    def test_stream_has_no_usage_chunk_unless_asked(self, openai_server: OpenAIWireServer) -> None:
        """Without stream_options every chunk has a choice and no usage."""
        openai_server.reply("a b")
        with openai_client(openai_server) as client:
            chunks, error = drain(chat(client, stream=True))
        assert error is None
        assert all(len(chunk.choices) == 1 and chunk.usage is None for chunk in chunks)

    def test_stream_helper_assembles_tool_calls(self, openai_server: OpenAIWireServer) -> None:
        """The SDK's stream helper rebuilds text and tool-call arguments from the deltas."""
        openai_server.reply("let me look", tool_calls=[("call_1", "ls", '{"path": "src"}')])
        with (
            openai_client(openai_server) as client,
            client.chat.completions.stream(model=OPENAI_MODEL, messages=MESSAGES) as stream,
        ):
            completion = stream.get_final_completion()
        reply = completion.choices[0].message
        assert "let me look" == reply.content
        assert [("call_1", "ls", '{"path": "src"}')] == [
            (call.id, call.function.name, call.function.arguments) for call in reply.tool_calls
        ]

    def test_async_client_reads_replies_and_streams(self, openai_server: OpenAIWireServer) -> None:
        """AsyncOpenAI parses the same answers, plain and streamed."""
        openai_server.reply("plain")
        openai_server.reply("streamed text")

        async def run() -> tuple[str, str]:
            async with openai.AsyncOpenAI(
                base_url=openai_server.base_url, api_key="test", max_retries=0, timeout=2.0
            ) as client:
                plain = await client.chat.completions.create(model=OPENAI_MODEL, messages=MESSAGES)
                stream = await client.chat.completions.create(
                    model=OPENAI_MODEL, messages=MESSAGES, stream=True
                )
                pieces = [c.choices[0].delta.content or "" async for c in stream]
            return plain.choices[0].message.content, "".join(pieces)

        assert ("plain", "streamed text") == asyncio.run(run())

    def test_models_list_does_not_use_the_script(self, openai_server: OpenAIWireServer) -> None:
        """GET /v1/models lists the configured models; the scripted reply waits its turn."""
        openai_server.reply("scripted")
        with openai_client(openai_server) as client:
            assert ["gpt-4o-mini"] == [model.id for model in client.models.list()]
            assert "scripted" == chat(client).choices[0].message.content

    def test_handler_answers_once_the_script_is_empty(self) -> None:
        """Scripted answers come first, in order; then the handler sees each request body."""
        seen: list[Any] = []

        def handler(body: Any) -> Reply:
            seen.append(body)
            return Reply(body["messages"][-1]["content"].upper())

        with OpenAIWireServer(handler) as server, openai_client(server) as client:
            server.reply("first")
            answers = [chat(client).choices[0].message.content for _ in range(3)]
        assert ["first", "HI", "HI"] == answers
        assert [MESSAGES, MESSAGES] == [body["messages"] for body in seen]

    def test_requests_record_path_headers_and_json(self, openai_server: OpenAIWireServer) -> None:
        """server.requests holds what the SDK sent, JSON parsed, header names lower-cased."""
        with openai_client(openai_server) as client:
            chat(client, temperature=0)
        [request] = openai_server.requests
        assert ("POST", "/v1/chat/completions") == (request.method, request.path)
        assert "Bearer test" == request.headers["authorization"]
        assert {"model": OPENAI_MODEL, "messages": MESSAGES, "temperature": 0} == request.json

    def test_request_the_api_rejects_is_a_400(self, openai_server: OpenAIWireServer) -> None:
        """An empty message list gets the API's 400, and the scripted reply stays queued."""
        openai_server.reply("kept")
        with (
            openai_client(openai_server) as client,
            pytest.raises(openai.BadRequestError) as caught,
        ):
            client.chat.completions.create(model=OPENAI_MODEL, messages=[])
        assert "invalid_request_error" == caught.value.type
        assert 1 == openai_server.pending


class TestOpenAIFaults:
    @pytest.mark.parametrize(
        ("status", "error"),
        [
            (429, openai.RateLimitError),
            (500, openai.InternalServerError),
            (503, openai.InternalServerError),
        ],
    )
    def test_error_status_raises_its_class(
        self, openai_server: OpenAIWireServer, status: int, error: type[openai.APIStatusError]
    ) -> None:
        """Each status raises the SDK's class for it, with the error body's fields."""
        openai_server.fail(status, message="scripted failure")
        with openai_client(openai_server) as client, pytest.raises(error) as caught:
            chat(client)
        assert error is type(caught.value)
        assert (status, "scripted failure") == (
            caught.value.status_code,
            caught.value.body["message"],
        )

    def test_rate_limit_body_has_openai_fields(self, openai_server: OpenAIWireServer) -> None:
        """A 429's body carries OpenAI's type and code."""
        openai_server.fail(429)
        with openai_client(openai_server) as client, pytest.raises(openai.RateLimitError) as caught:
            chat(client)
        assert ("requests", "rate_limit_exceeded") == (caught.value.type, caught.value.code)

    def test_retry_after_is_honoured(self, openai_server: OpenAIWireServer) -> None:
        """Retry-After 0.8 (longer than the SDK's first backoff) is waited out, then retried."""
        openai_server.fail(429, retry_after=0.8)
        start = time.monotonic()
        with openai_client(openai_server, max_retries=1) as client:
            assert "ok" == chat(client).choices[0].message.content
        assert time.monotonic() - start >= 0.8
        assert ["0", "1"] == [r.headers["x-stainless-retry-count"] for r in openai_server.requests]

    def test_retry_after_ms_wins_over_retry_after(self, openai_server: OpenAIWireServer) -> None:
        """retry-after-ms is read first: 20 ms, not the 30 s that Retry-After asks."""
        openai_server.fail(503, retry_after=30, retry_after_ms=20)
        start = time.monotonic()
        with openai_client(openai_server, max_retries=1) as client:
            chat(client)
        assert time.monotonic() - start < 5
        assert 2 == len(openai_server.requests)

    def test_retry_after_past_two_minutes_is_not_retried(
        self, openai_server: OpenAIWireServer
    ) -> None:
        """OpenAI's SDK gives up at once when Retry-After exceeds its 120 s cap."""
        openai_server.fail(429, retry_after=121)
        with (
            openai_client(openai_server, max_retries=2) as client,
            pytest.raises(openai.RateLimitError),
        ):
            chat(client)
        assert 1 == len(openai_server.requests)

    def test_malformed_json_raises_a_bare_json_error(self, openai_server: OpenAIWireServer) -> None:
        """A 200 whose JSON is broken raises json's own error, not an SDK one, and no retry."""
        openai_server.malformed()
        with (
            openai_client(openai_server, max_retries=2) as client,
            pytest.raises(json.JSONDecodeError) as caught,
        ):
            chat(client)
        assert not isinstance(caught.value, openai.OpenAIError)
        assert 1 == len(openai_server.requests)

    def test_non_json_body_comes_back_as_a_string(self, openai_server: OpenAIWireServer) -> None:
        """A 200 with a non-JSON content type is returned as text, in place of a completion."""
        openai_server.raw(b"<html>proxy page</html>", content_type="text/html")
        with openai_client(openai_server) as client:
            assert "<html>proxy page</html>" == chat(client)

    def test_hang_raises_timeout(self, openai_server: OpenAIWireServer) -> None:
        """A request that is never answered raises APITimeoutError after the client timeout."""
        openai_server.hang()
        with (
            openai_client(openai_server, timeout=0.3) as client,
            pytest.raises(openai.APITimeoutError),
        ):
            chat(client)

    def test_timeouts_are_retried(self, openai_server: OpenAIWireServer) -> None:
        """With retries the SDK sends again after a timeout: two hangs, two requests."""
        openai_server.hang()
        openai_server.hang()
        with (
            openai_client(openai_server, timeout=0.2, max_retries=1) as client,
            pytest.raises(openai.APITimeoutError),
        ):
            chat(client)
        assert 2 == len(openai_server.requests)

    def test_reset_raises_connection_error(self, openai_server: OpenAIWireServer) -> None:
        """A connection reset mid-body raises APIConnectionError (not a timeout)."""
        openai_server.reset()
        with (
            openai_client(openai_server) as client,
            pytest.raises(openai.APIConnectionError) as caught,
        ):
            chat(client)
        assert not isinstance(caught.value, openai.APITimeoutError)

    def test_stream_cut_raises_connection_error(self, openai_server: OpenAIWireServer) -> None:
        """A stream dropped after two chunks yields them, then raises APIConnectionError."""
        openai_server.stream_cut(after=2)
        with openai_client(openai_server) as client:
            chunks, error = drain(chat(client, stream=True))
        assert 2 == len(chunks)
        assert type(error) is openai.APIConnectionError

    def test_stream_stall_raises_timeout(self, openai_server: OpenAIWireServer) -> None:
        """A stream that goes silent raises APITimeoutError once the read timeout passes."""
        openai_server.stream_stall(after=2)
        with openai_client(openai_server, timeout=0.3) as client:
            chunks, error = drain(chat(client, stream=True))
        assert 2 == len(chunks)
        assert type(error) is openai.APITimeoutError

    def test_stream_error_event_raises_api_error(self, openai_server: OpenAIWireServer) -> None:
        """An error object inside a stream raises APIError carrying the error body."""
        openai_server.stream_error(after=2, status=500, message="mid-stream failure")
        with openai_client(openai_server) as client:
            chunks, error = drain(chat(client, stream=True))
        assert 2 == len(chunks)
        assert type(error) is openai.APIError
        assert ("mid-stream failure", "server_error") == (error.message, error.type)


class TestAnthropicReplies:
    def test_text_reply_parses_with_usage(self, anthropic_server: AnthropicWireServer) -> None:
        """A text reply becomes a Message with one text block, end_turn and its usage."""
        anthropic_server.reply("summary", usage=(120, 30))
        with anthropic_client(anthropic_server) as client:
            reply = message(client)
        assert [TextBlock(type="text", text="summary")] == reply.content
        assert "end_turn" == reply.stop_reason
        assert (120, 30) == (reply.usage.input_tokens, reply.usage.output_tokens)
        assert CLAUDE_MODEL == reply.model
        assert reply._request_id.startswith("req_wire")

    def test_tool_use_blocks_parse_into_typed_objects(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """Tool calls arrive as ToolUseBlocks after the text, input as a dict."""
        anthropic_server.reply("looking", tool_calls=[("toolu_1", "ls", '{"p": "."}')])
        with anthropic_client(anthropic_server) as client:
            reply = message(client)
        text, call = reply.content
        assert isinstance(text, TextBlock) and isinstance(call, ToolUseBlock)
        assert ("looking", "toolu_1", "ls", {"p": "."}) == (
            text.text,
            call.id,
            call.name,
            call.input,
        )
        assert "tool_use" == reply.stop_reason

    def test_empty_reply_has_no_content_blocks(self, anthropic_server: AnthropicWireServer) -> None:
        """empty() gives content [] (the API sends no empty text block)."""
        anthropic_server.empty()
        with anthropic_client(anthropic_server) as client:
            assert [] == message(client).content

    def test_stream_follows_the_event_sequence(self, anthropic_server: AnthropicWireServer) -> None:
        """A stream is message_start, each block's start/deltas/stop, message_delta, stop."""
        anthropic_server.reply("two words", tool_calls=[("toolu_1", "ls", "{}")], usage=(9, 4))
        with anthropic_client(anthropic_server) as client:
            events, error = drain(message(client, stream=True))
        assert error is None
        assert [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ] == [event.type for event in events]
        assert "two words" == "".join(e.delta.text for e in events[2:4])
        assert ("tool_use", 4) == (events[-2].delta.stop_reason, events[-2].usage.output_tokens)

    def test_stream_helper_assembles_the_message(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """The SDK's stream helper rebuilds text and tool input from the deltas."""
        anthropic_server.reply("let me look", tool_calls=[("toolu_1", "ls", '{"path": "src"}')])
        with (
            anthropic_client(anthropic_server) as client,
            client.messages.stream(model=CLAUDE_MODEL, max_tokens=64, messages=MESSAGES) as stream,
        ):
            reply = stream.get_final_message()
        text, call = reply.content
        assert ("let me look", {"path": "src"}) == (text.text, call.input)
        assert (10, 5) == (reply.usage.input_tokens, reply.usage.output_tokens)

    def test_async_client_reads_replies_and_streams(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """AsyncAnthropic parses the same answers, plain and streamed."""
        anthropic_server.reply("plain")
        anthropic_server.reply("streamed text")

        async def run() -> tuple[str, str]:
            async with anthropic.AsyncAnthropic(
                base_url=anthropic_server.base_url, api_key="test", max_retries=0, timeout=2.0
            ) as client:
                kwargs: dict[str, Any] = {
                    "model": CLAUDE_MODEL,
                    "max_tokens": 64,
                    "messages": MESSAGES,
                }
                plain = await client.messages.create(**kwargs)
                async with client.messages.stream(**kwargs) as stream:
                    streamed = await stream.get_final_text()
            return plain.content[0].text, streamed

        assert ("plain", "streamed text") == asyncio.run(run())

    def test_requests_record_headers_and_json(self, anthropic_server: AnthropicWireServer) -> None:
        """The SDK sends its version header and the key as a bearer token (not x-api-key)."""
        with anthropic_client(anthropic_server) as client:
            message(client)
        [request] = anthropic_server.requests
        assert "Bearer test" == request.headers["authorization"]
        assert "x-api-key" not in request.headers
        assert "anthropic-version" in request.headers
        assert {"model": CLAUDE_MODEL, "max_tokens": 64, "messages": MESSAGES} == request.json


class TestAnthropicFaults:
    @pytest.mark.parametrize(
        ("status", "error", "error_type"),
        [
            (429, anthropic.RateLimitError, "rate_limit_error"),
            (500, anthropic.InternalServerError, "api_error"),
            (503, anthropic.ServiceUnavailableError, "api_error"),
            (529, anthropic.OverloadedError, "overloaded_error"),
        ],
    )
    def test_error_status_raises_its_class(
        self,
        anthropic_server: AnthropicWireServer,
        status: int,
        error: type[anthropic.APIStatusError],
        error_type: str,
    ) -> None:
        """Each status raises the SDK's class for it, with the error body's type and message."""
        anthropic_server.fail(status, message="scripted failure")
        with anthropic_client(anthropic_server) as client, pytest.raises(error) as caught:
            message(client)
        assert error is type(caught.value)
        assert (status, error_type, "scripted failure") == (
            caught.value.status_code,
            caught.value.type,
            caught.value.api_message,
        )

    def test_retry_after_is_honoured(self, anthropic_server: AnthropicWireServer) -> None:
        """Retry-After 0.8 (longer than the SDK's first backoff) is waited out, then retried."""
        anthropic_server.fail(529, retry_after=0.8)
        start = time.monotonic()
        with anthropic_client(anthropic_server, max_retries=1) as client:
            assert "ok" == message(client).content[0].text
        assert time.monotonic() - start >= 0.8
        retry_counts = [r.headers["x-stainless-retry-count"] for r in anthropic_server.requests]
        assert ["0", "1"] == retry_counts

    def test_retry_after_ms_wins_over_retry_after(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """retry-after-ms is read first: 20 ms, not the 30 s that Retry-After asks."""
        anthropic_server.fail(429, retry_after=30, retry_after_ms=20)
        start = time.monotonic()
        with anthropic_client(anthropic_server, max_retries=1) as client:
            message(client)
        assert time.monotonic() - start < 5
        assert 2 == len(anthropic_server.requests)

    def test_malformed_json_raises_a_bare_json_error(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """A 200 whose JSON is broken raises json's own error, not an SDK one, and no retry."""
        anthropic_server.malformed()
        with (
            anthropic_client(anthropic_server, max_retries=2) as client,
            pytest.raises(json.JSONDecodeError) as caught,
        ):
            message(client)
        assert not isinstance(caught.value, anthropic.AnthropicError)
        assert 1 == len(anthropic_server.requests)

    def test_hang_raises_timeout(self, anthropic_server: AnthropicWireServer) -> None:
        """A request that is never answered raises APITimeoutError after the client timeout."""
        anthropic_server.hang()
        with (
            anthropic_client(anthropic_server, timeout=0.3) as client,
            pytest.raises(anthropic.APITimeoutError),
        ):
            message(client)

    def test_reset_raises_connection_error(self, anthropic_server: AnthropicWireServer) -> None:
        """A connection reset mid-body raises APIConnectionError (not a timeout)."""
        anthropic_server.reset()
        with (
            anthropic_client(anthropic_server) as client,
            pytest.raises(anthropic.APIConnectionError) as caught,
        ):
            message(client)
        assert not isinstance(caught.value, anthropic.APITimeoutError)

    def test_stream_cut_raises_the_transport_error(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """A dropped stream raises httpx2's own error, which anthropic 2.17 wraps.

        Up to 2.16 the SDK let the transport error through mid-stream; from 2.17 it
        raises APIConnectionError from it, as it does before the stream starts.
        """
        anthropic_server.stream_cut(after=3)  # message_start, ping, content_block_start
        with anthropic_client(anthropic_server) as client:
            events, error = drain(message(client, stream=True))
        assert ["message_start", "content_block_start"] == [event.type for event in events]
        if isinstance(error, anthropic.APIConnectionError):
            assert not isinstance(error, anthropic.APITimeoutError)
            assert type(error.__cause__) is httpx2.RemoteProtocolError
        else:
            assert type(error) is httpx2.RemoteProtocolError
            assert not isinstance(error, anthropic.AnthropicError)

    def test_stream_stall_raises_the_transport_timeout(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """A stream that goes silent raises httpx2.ReadTimeout, which anthropic 2.17 wraps
        as APITimeoutError (up to 2.16 it came through unwrapped)."""
        anthropic_server.stream_stall(after=3)
        with anthropic_client(anthropic_server, timeout=0.3) as client:
            events, error = drain(message(client, stream=True))
        assert 2 == len(events)
        if isinstance(error, anthropic.APITimeoutError):
            assert type(error.__cause__) is httpx2.ReadTimeout
        else:
            assert type(error) is httpx2.ReadTimeout

    def test_stream_error_event_raises_a_200_status_error(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """An in-stream overloaded_error raises the base APIStatusError with status 200."""
        anthropic_server.stream_error(after=3, status=529)
        with anthropic_client(anthropic_server, max_retries=2) as client:
            events, error = drain(message(client, stream=True))
        assert 2 == len(events)
        assert type(error) is anthropic.APIStatusError
        assert (200, "overloaded_error") == (error.status_code, error.type)
        assert 1 == len(anthropic_server.requests)


class TestWireServer:
    def test_close_ends_hung_stalled_and_idle_connections(self) -> None:
        """close() returns promptly with requests hung, a stream stalled and a connection idle."""
        before = set(threading.enumerate())
        server = OpenAIWireServer(hang_limit=30)
        server.hang()
        server.stream_stall()
        request = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
            b"Content-Length: %d\r\n\r\n%s"
        )
        bodies: list[dict[str, Any]] = [
            {"model": "m", "messages": MESSAGES},
            {"model": "m", "messages": MESSAGES, "stream": True},
        ]
        sockets = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            # One at a time: the script answers in arrival order, so the first socket
            # must be the one that meets the hang, the second the stall.
            for count, (sock, body) in enumerate(zip(sockets[:2], bodies, strict=True), 1):
                data = json.dumps(body).encode()
                sock.sendall(request % (len(data), data))
                wait_until(lambda count=count: len(server.requests) == count)
            wait_until(lambda: len(server.requests) == 2 and len(connection_threads()) == 3)
            start = time.monotonic()
            server.close()
            assert time.monotonic() - start < 2
            assert [] == [t for t in set(threading.enumerate()) - before if t.is_alive()]
            assert [b"", b""] == [sock.recv(1) for sock in sockets[::2]]  # hung, idle: EOF
        finally:
            for sock in sockets:
                sock.close()

    def test_handler_error_is_a_500_then_raised_on_exit(self) -> None:
        """A handler that raises gets the client a 500, and leaving the block raises it."""

        def handler(body: Any) -> Reply:
            raise ValueError("handler bug")

        with (
            pytest.raises(RuntimeError, match="answered 1 request") as caught,
            OpenAIWireServer(handler) as server,
            openai_client(server) as client,
            pytest.raises(openai.InternalServerError, match="handler bug"),
        ):
            chat(client)
        assert isinstance(caught.value.__cause__, ValueError)

    def test_unknown_route_is_a_provider_404(self, anthropic_server: AnthropicWireServer) -> None:
        """A path the server does not serve gets a 404 in the provider's error shape."""
        status, body = post(anthropic_server, "/v1/complete", {}, {})
        assert (404, "not_found_error") == (status, body["error"]["type"])

    @pytest.mark.parametrize(
        ("headers", "body", "status", "message"),
        [
            ({}, {}, 401, "x-api-key header is required"),
            ({"x-api-key": "k"}, {}, 400, "anthropic-version: header is required"),
            (
                {"x-api-key": "k", "anthropic-version": "v"},
                {"model": "m", "messages": []},
                400,
                "max_tokens: Field required",
            ),
        ],
    )
    def test_anthropic_rejects_what_the_api_rejects(
        self,
        anthropic_server: AnthropicWireServer,
        headers: dict[str, str],
        body: object,
        status: int,
        message: str,
    ) -> None:
        """Requests missing a key, the version header or a field get the API's error."""
        answer_status, answer = post(anthropic_server, "/v1/messages", body, headers)
        assert (status, message) == (answer_status, answer["error"]["message"])

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            (("call_1", "ls"), "must be a ToolUse or an (id, name, arguments) tuple"),
            ("abc", "must be a ToolUse or an (id, name, arguments) tuple"),
            (
                ("call_1", "ls", "[1]"),
                "arguments='[1]' of tool call 'call_1' must be a JSON object",
            ),
            (("call_1", "ls", "{"), "arguments='{' of tool call 'call_1' must be a JSON object"),
        ],
    )
    def test_bad_tool_call_is_rejected(self, call: Any, message: str) -> None:
        """A tool call that is not (id, name, JSON object) fails when scripted, naming it."""
        with pytest.raises(ValueError, match=re.escape(message)):
            tool_use(call)

    def test_close_is_idempotent(self) -> None:
        """A second close does nothing; repr says the server is closed."""
        server = AnthropicWireServer()
        server.close()
        server.close()
        assert "<AnthropicWireServer closed>" == repr(server)

    def test_threads_carry_the_prefix(self, openai_server: OpenAIWireServer) -> None:
        """Server and connection threads are named for the leak check in conftest."""
        with openai_client(openai_server) as client:
            chat(client)
            names = {t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)}
        port = openai_server.port
        expected = {f"{THREAD_PREFIX}OpenAIWireServer:{port}", f"{THREAD_PREFIX}connection:{port}"}
        assert expected == names
