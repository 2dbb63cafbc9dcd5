"""Loopback servers that speak the OpenAI and Anthropic wire protocols, for backend tests.

The real SDKs talk real HTTP to them, so a backend under test runs its true code path:
request building, response parsing, SSE decoding, retries and timeouts. Script the next
answers, run the code under test, then read what the server received::

    with OpenAIWireServer() as server:  # or AnthropicWireServer()
        server.reply("summary", usage=(120, 30))
        server.fail(429, retry_after=1)
        ...  # OpenAI(base_url=server.base_url, api_key="test")
        assert server.requests[0].json["model"] == "gpt-4o-mini"

Scripting (each call answers the next completion request; ``handler`` answers once the
script is empty) and what the SDKs raise, as ``test_wire_servers.py`` pins it:

    call                      openai 3.57               anthropic 2.14
    fail(429)                 RateLimitError            RateLimitError
    fail(500) / fail(503)     InternalServerError       InternalServerError /
                                                        ServiceUnavailableError
    fail(529)                 InternalServerError       OverloadedError
    malformed()               json.JSONDecodeError      json.JSONDecodeError (bare, no retry)
    raw(b"<html>", content_type="text/html")            the body as a str, no error
    hang()                    APITimeoutError           APITimeoutError
    reset()                   APIConnectionError        APIConnectionError
    stream_cut()              APIConnectionError        httpx2.RemoteProtocolError (unwrapped;
                                                        APIConnectionError from 2.17)
    stream_stall()            APITimeoutError           httpx2.ReadTimeout (unwrapped;
                                                        APITimeoutError from 2.17)
    stream_error()            APIError                  APIStatusError, status_code 200

The fixtures ``openai_server`` and ``anthropic_server`` (``conftest.py``) give one per
test. Tests that use them live in this folder: pytest imports it as the package
``providers``, which test modules elsewhere under ``tests/`` cannot import.
"""

from ._wire import (
    Action,
    Break,
    Fail,
    Hang,
    Raw,
    RecordedRequest,
    Reply,
    StreamError,
    ToolUse,
    WireServer,
)
from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

__all__ = [
    "Action",
    "AnthropicWireServer",
    "Break",
    "Fail",
    "Hang",
    "OpenAIWireServer",
    "Raw",
    "RecordedRequest",
    "Reply",
    "StreamError",
    "ToolUse",
    "WireServer",
]
