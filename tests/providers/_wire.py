"""The HTTP core both provider servers share: a loopback server that plays a script.

A `WireServer` binds ``127.0.0.1`` on a free port as soon as it is made, serves each
connection on its own thread (HTTP/1.1, keep-alive, as the SDKs expect), records every
request, and answers each completion request with the next scripted action, or with its
``handler`` when the script is empty. A subclass only speaks its provider's dialect: it
checks a request the way the real API would, and renders a `Reply` as a JSON body or as
Server-Sent Events, and a `Fail` as an error body or an in-stream error event. The
faults themselves (`Raw`, `Hang`, `Break`, `StreamError`) are played here, the same way
for every provider.

Actions, and what the client sees:

    Reply       a complete answer, JSON or SSE as the request's ``stream`` asks
    Fail        an error status with the provider's error body and retry headers
    Raw         any status and bytes, e.g. a 200 whose body is not JSON
    Hang        the request is read and never answered (until `close`)
    Break       part of the answer, then the connection is closed, reset or stalled
    StreamError part of a stream, then the provider's in-stream error event
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import socket
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar
from urllib.parse import urlsplit

__all__ = [
    "THREAD_PREFIX",
    "Action",
    "Break",
    "Fail",
    "Handler",
    "Hang",
    "Raw",
    "RecordedRequest",
    "Reply",
    "StreamError",
    "ToolUse",
    "WireServer",
]

#: Every thread a server starts has a name that begins with this, so tests can find leaks.
THREAD_PREFIX = "wire-server:"

#: Text used by the faults that send part of an answer, long enough for several chunks.
PARTIAL_TEXT = "This answer is cut short before it ends."


@dataclass(frozen=True)
class ToolUse:
    """One tool call of a reply: its id, the tool's name, its arguments as JSON text."""

    id: str
    name: str
    arguments: str = "{}"

    @property
    def input(self) -> dict[str, Any]:
        """The arguments parsed, as Anthropic's ``tool_use.input`` carries them."""
        parsed: dict[str, Any] = json.loads(self.arguments)
        return parsed


@dataclass(frozen=True)
class Reply:
    """A complete answer: text, tool calls, token usage as ``(input, output)``.

    ``cache`` is the prompt-cache usage as ``(read, written)``: part of ``input`` for
    OpenAI (``cached_tokens``; it reports no writes), and on top of it for Anthropic,
    which counts ``input_tokens`` after the cache.

    ``stop`` overrides the provider's finish/stop reason (by default ``stop``/``end_turn``,
    or ``tool_calls``/``tool_use`` when there are tool calls); ``model`` overrides the
    model name, which otherwise echoes the request's.
    """

    text: str = ""
    tool_calls: tuple[ToolUse, ...] = ()
    usage: tuple[int, int] = (10, 5)
    stop: str | None = None
    model: str | None = None
    #: Anthropic: a ``thinking`` block (signed by the server) before the text.
    thinking: str | None = None
    #: Anthropic: a ``redacted_thinking`` block's data, after any thinking.
    redacted: str | None = None
    #: OpenAI-compatible servers (DeepSeek, vLLM): the message's ``reasoning_content``.
    reasoning: str | None = None
    #: OpenAI: the message's ``refusal``.
    refusal: str | None = None
    cache: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Fail:
    """An error status, answered with the provider's error body.

    ``error_type`` overrides the body's error type (which follows the status by default);
    ``retry_after`` (seconds, may be fractional) and ``retry_after_ms`` set the headers the
    SDKs read before retrying; ``headers`` adds any others (e.g. ``x-should-retry``).
    """

    status: int = 500
    message: str | None = None
    error_type: str | None = None
    retry_after: float | None = None
    retry_after_ms: int | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Raw:
    """Any status, content type and body bytes, sent as they are."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Hang:
    """Read the request, never answer; the connection closes when the server does."""


@dataclass(frozen=True)
class Break:
    """Send the head and part of an answer, then end the connection abnormally.

    For a streaming request the part is the first ``after`` SSE events (chunked, without
    the closing chunk); otherwise it is half of a JSON body whose ``Content-Length`` is
    the whole. ``ending`` is ``"close"`` (FIN), ``"reset"`` (RST) or ``"stall"`` (send
    nothing more until the server closes).
    """

    after: int = 2
    ending: Literal["close", "reset", "stall"] = "close"


@dataclass(frozen=True)
class StreamError:
    """Send the first ``after`` SSE events, then the provider's error event, then end.

    The stream ends properly (closing chunk): only its content says it failed. A request
    that does not stream gets ``fail`` as a plain error response instead.
    """

    after: int = 2
    fail: Fail = field(default_factory=lambda: Fail(529))


Action = Reply | Fail | Raw | Hang | Break | StreamError
_Server = TypeVar("_Server", bound="WireServer")
Handler = Callable[[Any], Action]
ToolCallLike = ToolUse | Sequence[Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it; header names are lower-cased."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any = field(default=None, repr=False)


def default_handler(body: Any) -> Action:
    """Answer ``ok`` with the default usage: what the server says when nothing is scripted."""
    return Reply(text="ok")


def tool_use(call: ToolCallLike) -> ToolUse:
    """Return ``call`` as a `ToolUse`, from a ``(id, name, arguments)`` tuple or itself.

    ``arguments`` may be JSON text or a mapping (dumped as JSON).

    >>> tool_use(("call_1", "ls", {"p": "."}))
    ToolUse(id='call_1', name='ls', arguments='{"p": "."}')
    """
    if isinstance(call, ToolUse):
        return call
    if isinstance(call, str) or len(call) != 3:
        msg = f"tool call {call!r} must be a ToolUse or an (id, name, arguments) tuple"
        raise ValueError(msg)
    call_id, name, arguments = call
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        msg = f"arguments={arguments!r} of tool call {call_id!r} must be a JSON object"
        raise ValueError(msg)
    return ToolUse(str(call_id), str(name), arguments)


def text_pieces(text: str) -> list[str]:
    """Split ``text`` into word-sized stream deltas that join back to it exactly.

    >>> text_pieces("two words")
    ['two ', 'words']
    """
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def halves(text: str) -> list[str]:
    """Split ``text`` into two non-empty parts (one if it is too short).

    >>> halves('{"p": 1}')
    ['{"p"', ': 1}']
    """
    middle = len(text) // 2
    return [text[:middle], text[middle:]] if middle else [text]


def sse_data(payload: object, event: str | None = None) -> bytes:
    """Frame ``payload`` as one Server-Sent Event, JSON on a single ``data:`` line."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n".encode()


class _HTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` that keeps its connections and their threads, to end them."""

    block_on_close = False  # `join` below does it, for daemon threads too

    def __init__(self, wire: WireServer) -> None:
        self.wire = wire
        self.connections: set[socket.socket] = set()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a daemon thread named for the leak check."""
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"{THREAD_PREFIX}connection:{self.server_address[1]}",
            daemon=True,
        )
        with self.lock:
            self.threads = [t for t in self.threads if t.is_alive()]
            self.threads.append(thread)
            self.connections.add(request)
        thread.start()

    def forget(self, request: Any) -> None:
        with self.lock:
            self.connections.discard(request)

    def shutdown_request(self, request: Any) -> None:
        self.forget(request)
        super().shutdown_request(request)

    def join(self) -> None:
        """Shut every open connection down, which wakes handlers blocked reading them,
        then wait for every connection thread to end."""
        with self.lock:
            for sock in self.connections:
                with contextlib.suppress(OSError):  # the handler closed it already
                    sock.shutdown(socket.SHUT_RDWR)
            threads = list(self.threads)
        for thread in threads:
            # Bounded, so a handler stuck in user code cannot hang the run: the leak
            # check in conftest then names the thread instead.
            thread.join(timeout=5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        # Clients hang up mid-answer on purpose here (timeouts, cut streams): not an error.
        if not isinstance(error, OSError) and error is not None:
            self.wire._record_error(error)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    head_sent = False  # set per request, once the status line is on its way

    def do_GET(self) -> None:
        self.head_sent = False
        self.server.wire._serve(self)

    do_POST = do_GET
    do_PUT = do_GET
    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet: `WireServer.requests` is the log."""


class WireServer:
    """A loopback HTTP server that answers with scripted actions, for one provider.

    It starts serving as soon as it is made; `close` (or leaving a ``with`` block) stops
    it, releases hung requests, ends open connections and joins every thread. Scripted
    actions are used in order, one per completion request; when none is left, ``handler``
    (called with the request's JSON body) chooses the answer. Other routes (such as a
    model list) and requests the real API would reject are answered without using the
    script.

    Args:
        handler: ``handler(request_json) -> action`` when the script is empty; by default
            it replies ``ok``.
        hang_limit: the longest, in seconds, a hung or stalled request is held open.
    """

    #: The completion route, e.g. ``/v1/chat/completions``.
    completion_path: ClassVar[str]
    #: The path that `base_url` ends with, as the provider's SDK expects it.
    base_path: ClassVar[str] = ""
    #: The response header that carries a request id.
    request_id_header: ClassVar[str] = "request-id"

    def __init__(self, handler: Handler | None = None, *, hang_limit: float = 30.0) -> None:
        self.handler: Handler = handler or default_handler
        self.hang_limit = hang_limit
        self._script: deque[Action] = deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._response_ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._closed = False
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"{THREAD_PREFIX}{type(self).__name__}:{self.port}",
            daemon=True,
        )
        self._thread.start()

    # -- what tests read ---------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on."""
        port: int = self._httpd.server_address[1]
        return port

    @property
    def base_url(self) -> str:
        """The URL to give the SDK as ``base_url``."""
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised while answering (a handler's bug, say); each got a 500."""
        with self._lock:
            return list(self._errors)

    @property
    def pending(self) -> int:
        """How many scripted actions are still waiting for a request."""
        with self._lock:
            return len(self._script)

    # -- scripting ---------------------------------------------------------------------

    def enqueue(self, *actions: Action) -> None:
        """Add ``actions`` to the script, to answer the next completion requests in order."""
        with self._lock:
            self._script.extend(actions)

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: Iterable[ToolCallLike] = (),
        usage: tuple[int, int] = (10, 5),
        stop: str | None = None,
        model: str | None = None,
        thinking: str | None = None,
        redacted: str | None = None,
        reasoning: str | None = None,
        refusal: str | None = None,
    ) -> None:
        """Answer the next request with ``text`` and/or ``tool_calls`` (``(id, name, args)``).

        ``thinking`` and ``redacted`` add Anthropic thinking blocks; ``reasoning``
        and ``refusal`` add OpenAI message fields (see :class:`Reply`).
        """
        calls = tuple(tool_use(call) for call in tool_calls)
        self.enqueue(Reply(text, calls, usage, stop, model, thinking, redacted, reasoning, refusal))

    def empty(self) -> None:
        """Answer the next request with a completion that holds no text and no tool call."""
        self.enqueue(Reply(""))

    def fail(
        self,
        status: int = 500,
        *,
        message: str | None = None,
        error_type: str | None = None,
        retry_after: float | None = None,
        retry_after_ms: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next request with ``status`` and the provider's error body."""
        extra = tuple((headers or {}).items())
        self.enqueue(Fail(status, message, error_type, retry_after, retry_after_ms, extra))

    def malformed(self, body: bytes = b'{"id": "truncated", "choices": [') -> None:
        """Answer the next request with 200, a JSON content type and a body that is not JSON."""
        self.enqueue(Raw(body))

    def raw(
        self,
        body: bytes,
        *,
        status: int = 200,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next request with exactly ``status``, ``content_type`` and ``body``."""
        self.enqueue(Raw(body, status, content_type, tuple((headers or {}).items())))

    def hang(self) -> None:
        """Read the next request and never answer it (until the server closes)."""
        self.enqueue(Hang())

    def reset(self) -> None:
        """Send the head and part of the next answer, then reset the connection (RST)."""
        self.enqueue(Break(after=1, ending="reset"))

    def stream_cut(self, after: int = 2) -> None:
        """Send the first ``after`` SSE events of the next answer, then close (FIN)."""
        self.enqueue(Break(after=after, ending="close"))

    def stream_stall(self, after: int = 2) -> None:
        """Send the first ``after`` SSE events of the next answer, then go silent."""
        self.enqueue(Break(after=after, ending="stall"))

    def stream_error(
        self,
        after: int = 2,
        *,
        status: int = 529,
        message: str | None = None,
        error_type: str | None = None,
    ) -> None:
        """Send the first ``after`` SSE events of the next answer, then an error event."""
        self.enqueue(StreamError(after, Fail(status, message, error_type)))

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving, release hung requests, end connections and join every thread."""
        if self._closed:
            return
        self._closed = True
        self._released.set()
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.join()
        self._httpd.server_close()

    def __enter__(self: _Server) -> _Server:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        errors = self.errors
        if exc is None and errors:
            msg = f"{type(self).__name__} answered {len(errors)} request(s) with a 500: {errors!r}"
            raise RuntimeError(msg) from errors[0]

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.base_url
        return f"<{type(self).__name__} {state}>"

    # -- provider dialect (subclasses) -------------------------------------------------

    def check(self, request: RecordedRequest) -> Fail | None:
        """Return the error the real API gives this completion request, or None if valid."""
        return None

    def route(self, request: RecordedRequest) -> Action | None:
        """Answer a request outside the completion route, or None for a 404."""
        return None

    def render(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> object:
        """The JSON body of a non-streaming answer."""
        raise NotImplementedError

    def render_events(self, reply: Reply, body: Mapping[str, Any], response_id: str) -> list[bytes]:
        """The SSE events of a streaming answer, each a complete frame."""
        raise NotImplementedError

    def error_body(self, fail: Fail) -> object:
        """The provider's JSON error body for ``fail``."""
        raise NotImplementedError

    def error_event(self, fail: Fail) -> bytes:
        """The SSE frame that reports ``fail`` inside a stream."""
        raise NotImplementedError

    # -- playing actions ---------------------------------------------------------------

    def _record_error(self, error: BaseException) -> None:
        with self._lock:
            self._errors.append(error)

    def _choose(self, request: RecordedRequest) -> Action:
        path = urlsplit(request.path).path
        if (request.method, path) == ("POST", self.completion_path):
            problem = self.check(request)
            if problem is not None:
                return problem
            with self._lock:
                if self._script:
                    return self._script.popleft()
            return self.handler(request.json)
        answer = self.route(request)
        if answer is None:
            return Fail(404, f"Unknown request URL: {request.method} {path}")
        return answer

    def _serve(self, h: _RequestHandler) -> None:
        request = self._read(h)
        if request is None:
            return
        with self._lock:
            self._requests.append(request)
        try:
            self._play(h, request, self._choose(request))
        except OSError:
            raise  # the client went away: the server's handle_error lets that pass
        except Exception as error:
            # A bug in a handler or a renderer: say so to the client if it can still hear
            # it, and keep it for __exit__ to raise.
            self._record_error(error)
            if h.head_sent:
                h.close_connection = True
            else:
                self._play(h, request, Fail(500, f"the test server raised {error!r}"))

    def _read(self, h: _RequestHandler) -> RecordedRequest | None:
        if "chunked" in h.headers.get("Transfer-Encoding", "").lower():
            h.send_error(411, "the test server reads Content-Length bodies only")
            return None
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        headers = {name.lower(): value for name, value in h.headers.items()}
        return RecordedRequest(h.command, h.path, headers, body, parsed)

    def _play(self, h: _RequestHandler, request: RecordedRequest, action: Action) -> None:
        if isinstance(action, Hang):
            h.close_connection = True
            self._released.wait(self.hang_limit)
        elif isinstance(action, Raw):
            self._send(h, action.status, action.content_type, action.body, action.headers)
        elif isinstance(action, Fail):
            self._send(
                h,
                action.status,
                "application/json",
                json_bytes(self.error_body(action)),
                _retry_headers(action),
            )
        elif isinstance(action, Reply):
            if _wants_stream(request):
                self._send_stream(h, self._events(action, request))
            else:
                self._send(h, 200, "application/json", self._body(action, request))
        elif isinstance(action, Break):
            self._break(h, request, action)
        elif isinstance(action, StreamError):
            if _wants_stream(request):
                events = self._events(Reply(PARTIAL_TEXT), request)[: action.after]
                self._send_stream(h, [*events, self.error_event(action.fail)])
            else:
                self._play(h, request, action.fail)
        else:
            msg = f"action={action!r} must be a Reply, Fail, Raw, Hang, Break or StreamError"
            raise TypeError(msg)

    def _body(self, reply: Reply, request: RecordedRequest) -> bytes:
        body = request.json if isinstance(request.json, Mapping) else {}
        return json_bytes(self.render(reply, body, str(next(self._response_ids))))

    def _events(self, reply: Reply, request: RecordedRequest) -> list[bytes]:
        body = request.json if isinstance(request.json, Mapping) else {}
        return self.render_events(reply, body, str(next(self._response_ids)))

    def _head(self, h: _RequestHandler, status: int, headers: Iterable[tuple[str, str]]) -> None:
        h.head_sent = True
        h.send_response(status)
        h.send_header(self.request_id_header, f"req_wire{next(self._request_ids)}")
        for name, value in headers:
            h.send_header(name, value)
        h.end_headers()

    def _send(
        self,
        h: _RequestHandler,
        status: int,
        content_type: str,
        body: bytes,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        head = [("Content-Type", content_type), ("Content-Length", str(len(body))), *headers]
        self._head(h, status, head)
        h.wfile.write(body)

    def _send_stream(self, h: _RequestHandler, events: list[bytes]) -> None:
        self._head(h, 200, _STREAM_HEADERS)
        for event in events:
            h.wfile.write(_chunk(event))
        h.wfile.write(b"0\r\n\r\n")

    def _break(self, h: _RequestHandler, request: RecordedRequest, action: Break) -> None:
        partial = Reply(PARTIAL_TEXT, usage=(10, 9))
        if _wants_stream(request):
            self._head(h, 200, _STREAM_HEADERS)
            for event in self._events(partial, request)[: action.after]:
                h.wfile.write(_chunk(event))
        else:
            body = self._body(partial, request)
            self._head(
                h, 200, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            h.wfile.write(body[: len(body) // 2])
        h.wfile.flush()
        h.close_connection = True
        if action.ending == "stall":
            self._released.wait(self.hang_limit)
        elif action.ending == "reset":
            # An abortive close: SO_LINGER with a zero timeout makes close() send RST.
            sock = h.connection
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self._httpd.forget(sock)
            h.rfile.close()
            h.wfile.close()
            sock.close()  # the last reference: the descriptor closes now, with RST
            h.wfile = io.BytesIO()  # what the base class flushes after us goes nowhere


_STREAM_HEADERS = (
    ("Content-Type", "text/event-stream; charset=utf-8"),
    ("Cache-Control", "no-cache"),
    ("Transfer-Encoding", "chunked"),
)


def json_bytes(payload: object) -> bytes:
    """``payload`` as JSON, UTF-8 encoded."""
    return json.dumps(payload).encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _wants_stream(request: RecordedRequest) -> bool:
    return isinstance(request.json, Mapping) and request.json.get("stream") is True


def _retry_headers(fail: Fail) -> list[tuple[str, str]]:
    headers = list(fail.headers)
    if fail.retry_after is not None:
        seconds = fail.retry_after  # whole seconds as the standard has it, else a float
        headers.append(("Retry-After", f"{seconds:g}"))
    if fail.retry_after_ms is not None:
        headers.append(("retry-after-ms", str(fail.retry_after_ms)))
    return headers
