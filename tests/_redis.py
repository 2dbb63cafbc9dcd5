"""A real ``redis-server`` for tests: its own process, on a free loopback port, no persistence.

Import the fixture into a test module (``from ._redis import redis_server_fixture``);
it is registered under the name ``redis_server``. The test is skipped only when the
``redis-server`` binary is absent, and never under CI (``CI=true``), where
``.ci/run`` installs it: there a missing binary fails the test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

__all__ = ["RedisServer", "redis_server_fixture", "start_redis_server"]

_START_TIMEOUT = 10.0


@attrs.define(frozen=True)
class RedisServer:
    """A running ``redis-server`` this test session started."""

    url: str
    pid: int
    port: int
    process: subprocess.Popen[bytes] = attrs.field(repr=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis_server(binary: str, workdir: Path) -> RedisServer:
    """Start ``redis-server`` on a free loopback port and wait until it answers PING.

    Retries on a new port when another process took the chosen one first.
    """
    for _attempt in range(3):
        port = _free_port()
        command = [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            if _answers_ping(port):
                return RedisServer(f"redis://127.0.0.1:{port}/0", process.pid, port, process)
            time.sleep(0.02)
        stop_redis_server(process)
    msg = f"redis-server did not start on a free port: {process.stderr!r}"
    raise RuntimeError(msg)


def stop_redis_server(process: subprocess.Popen[bytes]) -> None:
    """Stop the server (SIGTERM, then SIGKILL after 5 s) and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stderr is not None:
        process.stderr.close()


@pytest.fixture(scope="session", name="redis_server")
def redis_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A ``redis-server`` of our own for the test session; tests share it with their own prefix."""
    binary = shutil.which("redis-server")
    if binary is None:
        reason = (
            "redis-server is not installed (apt-get install redis-server); "
            "the RedisStore tests need a real server"
        )
        if os.environ.get("CI"):
            pytest.fail(f"{reason}, and CI must run them: .ci/run installs it")
        pytest.skip(reason)
    server = start_redis_server(binary, tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        stop_redis_server(server.process)
