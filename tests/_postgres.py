"""A real PostgreSQL server for tests: ``initdb`` into a temp dir, loopback only, a free port.

Import the fixture into a test module (``from ._postgres import postgres_server_fixture``);
it is registered as ``postgres_server``, one server per test session, which tests share
with a table prefix of their own. The binaries are found with ``pg_config --bindir`` or
under ``/usr/lib/postgresql/*/bin``. PostgreSQL refuses to run as root, so under root the
server runs as the ``postgres`` system user (made with ``useradd`` when missing).

The test is skipped, with a one-line reason, when no server can be started, and never
under CI (``CI=true``), where ``.ci/prerequisites`` installs PostgreSQL: there it fails.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import attrs
import pytest

__all__ = [
    "PostgresServer",
    "find_bindir",
    "postgres_server_fixture",
    "remove_server",
    "start_postgres_server",
]

_START_TIMEOUT = 30.0
_USER = "postgres"


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``, or ``None`` when not installed."""
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(done.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run_as() -> str | None:
    """The user to run the server as: ``None`` (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _USER],
            check=True,
            capture_output=True,
        )
    return _USER


@attrs.define
class PostgresServer:
    """A PostgreSQL server this test session started; ``stop`` and ``start`` restart it."""

    bindir: Path
    datadir: Path
    port: int
    user: str | None
    settings: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = attrs.field(default=None, repr=False)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the server on its port and wait until it accepts connections."""
        command = [
            str(self.bindir / "postgres"),
            "-D",
            str(self.datadir),
            "-p",
            str(self.port),
            "-k",
            str(self.datadir),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "max_connections=200",
            "-c",
            "shared_buffers=32MB",
            *(arg for setting in self.settings for arg in ("-c", setting)),
        ]
        self.process = subprocess.Popen(
            command, user=self.user, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            ready = subprocess.run(
                [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
                check=False,
            )
            if ready.returncode == 0:
                return
            time.sleep(0.05)
        error = self.stop()
        msg = f"postgres did not start on port {self.port}: {error}"
        raise RuntimeError(msg)

    def stop(self) -> str:
        """Stop the server (SIGINT, PostgreSQL's fast shutdown; SIGKILL after 10 s); its stderr."""
        process, self.process = self.process, None
        if process is None:
            return ""
        if process.poll() is None:
            process.send_signal(2)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        assert process.stderr is not None
        error = process.stderr.read().decode(errors="replace")[-2000:]
        process.stderr.close()
        return error


#: What the test server skips: flushing to disk (a test's writers die, its server does not).
FAST: Final = ("fsync=off", "full_page_writes=off")


def start_postgres_server(bindir: Path, settings: tuple[str, ...] = FAST) -> PostgresServer:
    """``initdb`` a new cluster in a temp dir and start it on a free loopback port.

    ``settings`` are ``name=value`` server settings (the default skips flushing
    to disk; pass ``()`` for PostgreSQL's durable defaults).
    """
    user = _run_as()
    datadir = Path(tempfile.mkdtemp(prefix="mellea-pg-"))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(datadir, entry.pw_uid, entry.pw_gid)
    subprocess.run(
        [
            str(bindir / "initdb"),
            "-D",
            str(datadir),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        ],
        user=user,
        capture_output=True,
        check=True,
    )
    last = ""
    for _attempt in range(3):
        server = PostgresServer(bindir, datadir, _free_port(), user, settings)
        try:
            server.start()
        except RuntimeError as exc:  # another process took the port first
            last = str(exc)
            continue
        return server
    raise RuntimeError(last)


def remove_server(server: PostgresServer) -> None:
    server.stop()
    shutil.rmtree(server.datadir, ignore_errors=True)


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[PostgresServer]:
    """A PostgreSQL server of our own for the test session; tests share it by table prefix."""
    bindir = find_bindir()
    reason = ""
    server = None
    if bindir is None:
        reason = "PostgreSQL is not installed (apt-get install postgresql)"
    else:
        try:
            server = start_postgres_server(bindir)
        except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
            reason = f"PostgreSQL could not be started ({type(exc).__name__}: {exc})"
    if server is None:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}, and CI must run the Postgres tests: .ci/run installs it")
        pytest.skip(f"{reason}; the PostgresStore tests need a real server")
    try:
        yield server
    finally:
        remove_server(server)
