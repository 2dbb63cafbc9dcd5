"""A loopback TCP proxy in front of a real ``redis-server`` that can lose one reply.

``ReplyDropper(port)`` forwards every byte both ways. After ``drop_next_write()``,
the next ``EVALSHA`` the server runs (not one it answers ``NOSCRIPT``) has its
reply swallowed, and the client's connection is closed: the server applied the
write, the client never heard so. That is the fault a Redis restart, a
failover or a network cut causes between the server's reply and the client,
made deterministic.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

__all__ = ["ReplyDropper"]

_IO_TIMEOUT = 10.0


def _whole_reply(data: bytes) -> bool:
    """Whether ``data`` holds one whole reply: an error, a bulk string, or a script's ``*2``."""
    lines = {b"-": 1, b"$": 2}.get(data[:1], 3)
    return data.count(b"\r\n") >= lines


class ReplyDropper:
    """Forward a client to ``127.0.0.1:port``, losing the reply of one write when armed."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._armed = False
        self._lock = threading.Lock()
        self.dropped = 0
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def drop_next_write(self) -> None:
        """Lose the reply of the next ``EVALSHA`` the server runs, and cut that connection."""
        with self._lock:
            self._armed = True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream), timeout=_IO_TIMEOUT)
            client.settimeout(_IO_TIMEOUT)
            self._sockets += [client, upstream]
            pending = threading.Event()  # this connection's next write reply is to be lost
            for target in (self._requests, self._replies):
                thread = threading.Thread(
                    target=target, args=(client, upstream, pending), daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def _requests(
        self, client: socket.socket, upstream: socket.socket, pending: threading.Event
    ) -> None:
        """Copy the client's commands to the server, marking the armed write."""
        try:
            while data := client.recv(65536):
                with self._lock:
                    if self._armed and b"EVALSHA" in data:
                        self._armed = False
                        pending.set()
                upstream.sendall(data)
        except OSError:
            pass
        _shut(client, upstream)

    def _replies(
        self, client: socket.socket, upstream: socket.socket, pending: threading.Event
    ) -> None:
        """Copy the server's replies to the client; lose the marked write's reply and cut."""
        reply = b""
        try:
            while data := upstream.recv(65536):
                if not pending.is_set():
                    client.sendall(data)
                    continue
                reply += data
                if not _whole_reply(reply):
                    continue
                if not reply.startswith(b"*"):  # NOSCRIPT, then SCRIPT LOAD's answer: pass on
                    client.sendall(reply)
                    reply = b""
                    continue
                with self._lock:
                    self.dropped += 1
                break
        except OSError:
            pass
        _shut(client, upstream)

    def close(self) -> None:
        """Stop accepting, close every connection, and wait for the pump threads."""
        _shut(self._listener)  # wakes the accept() of the acceptor thread
        self._listener.close()
        for sock in self._sockets:
            _shut(sock)
            sock.close()
        self._acceptor.join(timeout=_IO_TIMEOUT)
        for thread in self._threads:
            thread.join(timeout=_IO_TIMEOUT)

    def __enter__(self) -> ReplyDropper:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _shut(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
