"""A loopback server that speaks OpenAI's Chat Completions wire protocol.

Routes: ``POST /v1/chat/completions`` (the scripted one, JSON or SSE) and ``GET /v1/models``.
Point the real SDK at it:

>>> import openai
>>> with OpenAIWireServer() as server, openai.OpenAI(
...     base_url=server.base_url, api_key="test", max_retries=0
... ) as client:
...     server.reply("summary", usage=(120, 30))
...     completion = client.chat.completions.create(
...         model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
...     )
...     (completion.choices[0].message.content, completion.usage.total_tokens)
('summary', 150)
>>> server.requests[0].json["messages"]
[{'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ._wire import (
    Fail,
    Handler,
    Raw,
    RecordedRequest,
    Reply,
    WireServer,
    halves,
    json_bytes,
    sse_data,
    text_pieces,
)

__all__ = ["OpenAIWireServer"]

# What OpenAI puts in `error.type` (and `error.code`) for a status, and a message like its own.
_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", None, "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The server is overloaded or not ready yet."),
}


class OpenAIWireServer(WireServer):
    """OpenAI's Chat Completions API on ``127.0.0.1``: ``base_url`` ends with ``/v1``.

    Args:
        handler: ``handler(request_json) -> action`` when nothing is scripted.
        models: the ids ``GET /v1/models`` lists.
        hang_limit: the longest, in seconds, a hung or stalled request is held open.
    """

    completion_path = "/v1/chat/completions"
    base_path = "/v1"
    request_id_header = "x-request-id"

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        models: Sequence[str] = ("gpt-4o-mini",),
        hang_limit: float = 30.0,
    ) -> None:
        self.models = tuple(models)
        super().__init__(handler, hang_limit=hang_limit)

    def check(self, request: RecordedRequest) -> Fail | None:
        """Reject what the real API rejects: no bearer token, no model, no messages."""
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return Fail(401, "You didn't provide an API key.")
        body = request.json
        if not isinstance(body, Mapping):
            return Fail(400, "We could not parse the JSON body of your request.")
        if not isinstance(body.get("model"), str):
            return Fail(400, "you must provide a model parameter")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return Fail(400, "[] is too short - 'messages'")
        if body.get("stream_options") is not None and body.get("stream") is not True:
            return Fail(
                400, "The 'stream_options' parameter is only allowed when 'stream' is enabled."
            )
        return None

    def route(self, request: RecordedRequest) -> Raw | None:
        """``GET /v1/models``: the configured model list."""
        if (request.method, urlsplit(request.path).path) != ("GET", "/v1/models"):
            return None
        models = [
            {"id": model, "object": "model", "created": 0, "owned_by": "wire-test"}
            for model in self.models
        ]
        return Raw(json_bytes({"object": "list", "data": models}))

    def render(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> object:
        """A ``chat.completion`` object."""
        message: dict[str, Any] = {
            "role": "assistant",
            # The API sends null content beside tool calls, and "" for an empty answer.
            "content": reply.text
            if reply.text or not (reply.tool_calls or reply.refusal)
            else None,
            "refusal": reply.refusal,
            "annotations": [],
        }
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in reply.tool_calls
            ]
        return {
            **_envelope(reply, body, response_id, "chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _finish_reason(reply),
                }
            ],
            "usage": _usage(reply),
        }

    def render_events(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> list[bytes]:
        """``chat.completion.chunk`` events, a usage chunk if asked for, then ``[DONE]``."""
        options = body.get("stream_options")
        include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
        envelope = _envelope(reply, body, response_id, "chat.completion.chunk")
        if include_usage:
            envelope["usage"] = None  # every chunk but the last carries a null usage

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return sse_data({**envelope, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        events += [chunk({"content": piece}) for piece in text_pieces(reply.text)]
        for index, call in enumerate(reply.tool_calls):
            start = {"index": index, "id": call.id, "type": "function"}
            start["function"] = {"name": call.name, "arguments": ""}
            events.append(chunk({"tool_calls": [start]}))
            events += [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                for part in halves(call.arguments)
            ]
        events.append(chunk({}, _finish_reason(reply)))
        if include_usage:
            events.append(sse_data({**envelope, "choices": [], "usage": _usage(reply)}))
        events.append(b"data: [DONE]\n\n")
        return events

    def error_body(self, fail: Fail) -> object:
        """``{"error": {"message", "type", "param", "code"}}``."""
        default_type, code, message = _ERRORS.get(
            fail.status,
            ("server_error" if fail.status >= 500 else "invalid_request_error", None, "Error."),
        )
        return {
            "error": {
                "message": fail.message or message,
                "type": fail.error_type or default_type,
                "param": None,
                "code": code,
            }
        }

    def error_event(self, fail: Fail) -> bytes:
        """A ``data:`` event whose JSON is the error body, as the API sends mid-stream."""
        return sse_data(self.error_body(fail))


def _envelope(reply: Reply, body: Mapping[str, Any], response_id: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-wire{response_id}",
        "object": kind,
        "created": int(time.time()),
        "model": reply.model or str(body.get("model", "gpt-4o-mini")),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def _finish_reason(reply: Reply) -> str:
    return reply.stop or ("tool_calls" if reply.tool_calls else "stop")


def _usage(reply: Reply) -> dict[str, Any]:
    prompt, completion = reply.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": reply.cache[0], "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
