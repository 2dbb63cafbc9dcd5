"""A loopback server that speaks Anthropic's Messages wire protocol.

Route: ``POST /v1/messages`` (the scripted one, JSON or SSE). Point the real SDK at it:

>>> import anthropic
>>> with AnthropicWireServer() as server, anthropic.Anthropic(
...     base_url=server.base_url, api_key="test", max_retries=0
... ) as client:
...     server.reply(tool_calls=[("toolu_1", "ls", '{"p": "."}')], usage=(120, 30))
...     message = client.messages.create(
...         model="claude-wire-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
...     )
...     (message.stop_reason, message.content[0].input, message.usage.output_tokens)
('tool_use', {'p': '.'}, 30)
>>> server.requests[0].headers["authorization"]  # the SDK sends the key as a bearer token
'Bearer test'

With ``prompt_cache=PromptCache()`` (``anthropic_cache.py``) the server bills each request's
input by Anthropic's documented prompt-caching rules instead of the scripted counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ._wire import Fail, RecordedRequest, Reply, WireServer, halves, sse_data, text_pieces
from .anthropic_cache import PromptCache
from .anthropic_rules import request_violations, sign

__all__ = ["AnthropicWireServer"]

# What Anthropic puts in `error.type` for a status, and a message like its own.
_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low."),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}


class AnthropicWireServer(WireServer):
    """Anthropic's Messages API on ``127.0.0.1``: ``base_url`` has no path, like the SDK's.

    Args:
        handler: ``handler(request_json) -> action`` when nothing is scripted.
        hang_limit: the longest, in seconds, a hung or stalled request is held open.
    """

    completion_path = "/v1/messages"
    request_id_header = "request-id"
    #: Set to True to refuse, with a 400, any request that breaks Anthropic's documented
    #: rules (see ``anthropic_rules.py``); ``violations`` then lists what each request broke.
    enforce_rules = False

    def __init__(self, *args: Any, prompt_cache: PromptCache | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: When set, each answer's input and cache usage are what this cache bills the
        #: request (``anthropic_cache.py``, the documented rules), not the scripted ones.
        self.prompt_cache = prompt_cache
        #: The ``redacted_thinking`` data this server handed out.
        self.redacted_issued: set[str] = set()
        #: Per checked request (with ``enforce_rules``), the rules it broke.
        self.violations: list[list[str]] = []

    def check(self, request: RecordedRequest) -> Fail | None:
        """Reject what the real API rejects: no key, no version header, missing fields.

        With ``enforce_rules``, also the documented content rules of ``anthropic_rules``.
        """
        headers = request.headers
        if "x-api-key" not in headers and not headers.get("authorization", "").startswith(
            "Bearer "
        ):
            return Fail(401, "x-api-key header is required")
        if "anthropic-version" not in headers:
            return Fail(400, "anthropic-version: header is required")
        body = request.json
        if not isinstance(body, Mapping):
            return Fail(400, "The request body is not valid JSON.")
        for name, kind in (("model", str), ("max_tokens", int), ("messages", list)):
            if not isinstance(body.get(name), kind):
                return Fail(400, f"{name}: Field required")
        if self.enforce_rules:
            problems = request_violations(body, self.redacted_issued)
            self.violations.append(problems)
            if problems:
                return Fail(400, problems[0])
        return None

    def _thinking_blocks(self, reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if reply.thinking is not None:
            blocks.append(
                {"type": "thinking", "thinking": reply.thinking, "signature": sign(reply.thinking)}
            )
        if reply.redacted is not None:
            self.redacted_issued.add(reply.redacted)
            blocks.append({"type": "redacted_thinking", "data": reply.redacted})
        return blocks

    def _billed(self, reply: Reply, body: Mapping[str, Any]) -> Reply:
        """``reply`` with the prompt cache's usage for ``body``, when the server has a cache."""
        if self.prompt_cache is None:
            return reply
        uncached, read, written = self.prompt_cache.bill(body)
        return dataclasses.replace(reply, usage=(uncached, reply.usage[1]), cache=(read, written))

    def render(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> object:
        """A ``message`` object."""
        reply = self._billed(reply, body)
        content = self._thinking_blocks(reply)
        content += [{"type": "text", "text": reply.text}] if reply.text else []
        content += [
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
            for call in reply.tool_calls
        ]
        return {
            **_message(reply, body, response_id),
            "content": content,
            "stop_reason": _stop_reason(reply),
            "usage": _usage(*reply.usage, *reply.cache),
        }

    def render_events(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> list[bytes]:
        """``message_start``, a ping, each block's start/deltas/stop, ``message_delta``, stop."""
        reply = self._billed(reply, body)
        start = {
            **_message(reply, body, response_id),
            "content": [],
            "stop_reason": None,
            "usage": _usage(reply.usage[0], 1, *reply.cache),
        }
        events = [
            sse_data({"type": "message_start", "message": start}, "message_start"),
            sse_data({"type": "ping"}, "ping"),
        ]
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if reply.text:
            deltas = [{"type": "text_delta", "text": piece} for piece in text_pieces(reply.text)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for call in reply.tool_calls:
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in halves(call.arguments)
            ]
            blocks.append((block, deltas))
        for index, (block, deltas) in enumerate(blocks):
            events.append(
                sse_data(
                    {"type": "content_block_start", "index": index, "content_block": block},
                    "content_block_start",
                )
            )
            events += [
                sse_data(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
                for delta in deltas
            ]
            events.append(
                sse_data({"type": "content_block_stop", "index": index}, "content_block_stop")
            )
        delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
        events.append(
            sse_data(
                {
                    "type": "message_delta",
                    "delta": delta,
                    "usage": _delta_usage(*reply.usage, *reply.cache),
                },
                "message_delta",
            )
        )
        events.append(sse_data({"type": "message_stop"}, "message_stop"))
        return events

    def error_body(self, fail: Fail) -> object:
        """``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
        default_type, message = _ERRORS.get(
            fail.status,
            ("api_error" if fail.status >= 500 else "invalid_request_error", "Error."),
        )
        return {
            "type": "error",
            "error": {"type": fail.error_type or default_type, "message": fail.message or message},
            "request_id": None,
        }

    def error_event(self, fail: Fail) -> bytes:
        """An ``error`` event carrying the error body, as the API sends when overloaded."""
        return sse_data(self.error_body(fail), "error")


def _message(reply: Reply, body: Mapping[str, Any], response_id: str) -> dict[str, Any]:
    return {
        "id": f"msg_wire{response_id}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or str(body.get("model", "claude-wire-test")),
        "stop_sequence": None,
    }


def _stop_reason(reply: Reply) -> str:
    return reply.stop or ("tool_use" if reply.tool_calls else "end_turn")


def _usage(
    input_tokens: int, output_tokens: int, cache_read: int = 0, cache_written: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": cache_written,
        "cache_read_input_tokens": cache_read,
        "service_tier": "standard",
    }


def _delta_usage(
    input_tokens: int, output_tokens: int, cache_read: int = 0, cache_written: int = 0
) -> dict[str, Any]:
    """``message_delta`` usage: cumulative counts, without the message-level fields."""
    usage = _usage(input_tokens, output_tokens, cache_read, cache_written)
    del usage["service_tier"]
    return usage
