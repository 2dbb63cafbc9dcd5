"""A loopback server that speaks OpenAI's Responses API wire protocol (``POST /v1/responses``).

Built from the API reference: a request has ``model`` and ``input`` (a string or a
list of items); the answer is a ``response`` object whose ``output`` holds, in order,
a ``reasoning`` item (with ``encrypted_content`` when the request asked for it with
``include=["reasoning.encrypted_content"]``), a ``message`` with ``output_text``,
and one ``function_call`` per call; ``usage`` counts ``input_tokens`` and
``output_tokens``. The server refuses what the real API refuses, and more strictly:
every ``input`` list must pass :func:`~mellea_ctx.validate_responses`, and every
reasoning item sent back must be one it issued, verbatim.

>>> import openai
>>> with ResponsesWireServer() as server, openai.OpenAI(
...     base_url=server.base_url, api_key="test", max_retries=0
... ) as client:
...     server.reply("hello", usage=(12, 3))
...     response = client.responses.create(model="gpt-5-mini", input="hi")
...     (response.output_text, response.usage.total_tokens)
('hello', 15)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mellea_ctx import validate_responses

from ._wire import Fail, Handler, RecordedRequest, Reply, WireServer, sse_data

__all__ = ["ResponsesWireServer"]

_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    404: ("invalid_request_error", None, "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The server is overloaded or not ready yet."),
}


class ResponsesWireServer(WireServer):
    """OpenAI's Responses API on ``127.0.0.1``: ``base_url`` ends with ``/v1``.

    Args:
        handler: ``handler(request_json) -> action`` when nothing is scripted.
        reasoning: whether answers with tool calls carry a reasoning item first.
    """

    completion_path = "/v1/responses"
    base_path = "/v1"
    request_id_header = "x-request-id"

    def __init__(self, handler: Handler | None = None, *, reasoning: bool = True) -> None:
        self.reasoning = reasoning
        self.issued: dict[str, dict[str, Any]] = {}  # reasoning id -> the item as sent
        super().__init__(handler)

    def check(self, request: RecordedRequest) -> Fail | None:
        """Reject a request without key, model or input, or with items that break the rules."""
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return Fail(401, "You didn't provide an API key.")
        body = request.json
        if not isinstance(body, Mapping) or not isinstance(body.get("model"), str):
            return Fail(400, "Missing required parameter: 'model'.")
        items = body.get("input")
        if isinstance(items, str):
            return None
        if not isinstance(items, list):
            return Fail(400, "Missing required parameter: 'input'.")
        problems = validate_responses(items)
        if problems:
            return Fail(400, problems[0])
        for item in items:
            reasoning = isinstance(item, Mapping) and item.get("type") == "reasoning"
            if reasoning and self.issued.get(str(item.get("id"))) != dict(item):
                return Fail(
                    400,
                    f"Item {item.get('id')!r} of type 'reasoning' is not one "
                    "this server issued, verbatim.",
                )
        return None

    def render(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> object:
        """A ``response`` object."""
        output: list[dict[str, Any]] = []
        include = body.get("include") or []
        if self.reasoning and reply.tool_calls:
            item: dict[str, Any] = {
                "type": "reasoning",
                "id": f"rs_{response_id}",
                "summary": [{"type": "summary_text", "text": "Planning the calls."}],
            }
            if "reasoning.encrypted_content" in include:
                item["encrypted_content"] = f"gAAAA-enc-{response_id}"
            self.issued[item["id"]] = item
            output.append(item)
        if reply.text or not reply.tool_calls:
            text = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{response_id}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [text],
                }
            )
        for index, call in enumerate(reply.tool_calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{response_id}_{index}",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "status": "completed",
                }
            )
        prompt, completion = reply.usage
        return {
            "id": f"resp_{response_id}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": reply.model or str(body.get("model")),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "store": body.get("store", True),
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": reply.cache[0]},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }

    def render_events(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> list[bytes]:
        """One ``response.completed`` event (the backends under test do not stream)."""
        event = {"type": "response.completed", "response": self.render(reply, body, response_id)}
        return [sse_data(event)]

    def error_body(self, fail: Fail) -> object:
        """``{"error": {"message", "type", "param", "code"}}``."""
        default_type, code, message = _ERRORS.get(
            fail.status,
            ("server_error" if fail.status >= 500 else "invalid_request_error", None, "Error."),
        )
        error_type = fail.error_type or default_type
        if fail.error_type == "context_length_exceeded":
            error_type, code = "invalid_request_error", "context_length_exceeded"
        return {
            "error": {
                "message": fail.message or message,
                "type": error_type,
                "param": "input" if code == "context_length_exceeded" else None,
                "code": code,
            }
        }

    def error_event(self, fail: Fail) -> bytes:
        """A ``data:`` event whose JSON is the error body."""
        return sse_data(self.error_body(fail))
