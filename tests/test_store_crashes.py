"""Atomic per turn, across real processes: workers SIGKILLed mid-write leave only whole turns.

Each test runs ``tests/_session_worker.py`` as a separate process that writes
numbered turns (a user message, three parallel tool calls, their three
results, a final answer) and now and then replaces the dialogue with a
checkpoint, as a compaction would. The worker is killed with SIGKILL, either
at a random moment of a burst of writes or deterministically halfway through
one (inside the SQLite or PostgreSQL transaction after rows were written; after half of
the Redis script's command was sent). A new process then reads the session back
and checks it holds whole turns only, numbered without gaps (checkpoint spans
included), with every tool exchange intact, at the version of the last
acknowledged write or the one after it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._postgres import PostgresServer, postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import RedisServer, redis_server_fixture  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("_session_worker.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(
    params=["sqlite", "redis", "postgres", "async-sqlite", "async-redis", "async-postgres"]
)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the workers write: a SQLite file, or a real Redis or PostgreSQL server with a
    fresh prefix.

    The ``async-`` kinds write through the async stores (``tests/_async_face.py``).
    """
    kind = request.param
    if kind.endswith("sqlite"):
        return f"{kind}:{tmp_path / 'sessions.db'}"
    if kind.endswith("postgres"):
        database: PostgresServer = request.getfixturevalue("postgres_server")
        return f"{kind}:{database.dsn}#crash_{uuid.uuid4().hex[:16]}"
    server: RedisServer = request.getfixturevalue("redis_server")
    return f"{kind}:{server.url}#crash-{uuid.uuid4().hex}:"


Start = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def start_writer() -> Iterator[Start]:
    """Start writer processes; any still running when the test ends is killed and reaped."""
    started: list[subprocess.Popen[str]] = []

    def start(spec: str, *options: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(WORKER), "write", spec, "s1", *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def wait_for(process: subprocess.Popen[str], wanted: str, count: int = 1) -> list[str]:
    """Read the worker's lines until ``count`` of them start with ``wanted``."""
    assert process.stdout is not None
    lines: list[str] = []
    seen = 0
    while seen < count:
        line = process.stdout.readline()
        if not line:
            assert process.stderr is not None
            pytest.fail(f"the worker exited early: {process.stderr.read()}")
        lines.append(line.strip())
        seen += line.startswith(wanted)
    return lines


def kill(process: subprocess.Popen[str]) -> list[str]:
    """SIGKILL the worker, reap it, and return the whole lines it printed that were not read yet.

    The rest is read from ``process.stdout`` itself, not with ``communicate()``,
    which reads the raw pipe and so misses lines ``readline`` had already
    buffered (a busy machine lets several arrive at once).
    """
    process.send_signal(signal.SIGKILL)
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.read()  # the worker is dead: this ends at the pipe's end
    process.stderr.read()
    process.wait(timeout=30)
    assert -signal.SIGKILL == process.returncode
    return out.split("\n")[:-1]  # a last line without its newline was cut by the kill


def read_back(spec: str) -> dict[str, Any]:
    """Read the session from a new process, which checks every turn."""
    completed = subprocess.run(
        [sys.executable, str(WORKER), "read", spec, "s1"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
        check=False,
    )
    assert 0 == completed.returncode, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def acknowledged(lines: list[str]) -> int:
    """The version of the last write the worker saw succeed (0 if none)."""
    versions = [int(line.split()[1]) for line in lines if re.fullmatch(r"wrote \d+", line)]
    return max(versions, default=0)


class TestKilledMidBurst:
    def test_random_kills_leave_whole_turns(self, store_spec: str, start_writer: Start) -> None:
        """Five rounds of write, SIGKILL at a random moment, read back, restart from the store."""
        rng = random.Random(20240601)
        last_version = 0
        for _round in range(5):
            worker = start_writer(store_spec, "--compact-every", "4")
            lines = wait_for(worker, "wrote", count=rng.randint(3, 12))
            time.sleep(rng.uniform(0, 0.01))
            lines += kill(worker)
            result = read_back(store_spec)
            assert [] == result["problems"]
            assert result["version"] in (acknowledged(lines), acknowledged(lines) + 1)
            assert result["version"] > last_version
            last_version = result["version"]
        assert len(result["turns"]) >= 5


class TestKilledInsideOneWrite:
    @pytest.mark.parametrize(
        ("kind", "options"),
        [
            ("append", ["--hang-at", "3"]),
            ("replace", ["--hang-at", "3", "--compact-every", "3"]),
        ],
    )
    def test_a_write_cut_halfway_leaves_no_trace(
        self, store_spec: str, start_writer: Start, kind: str, options: list[str]
    ) -> None:
        """Killed halfway through its 4th write (an append or a replace), none of it is stored."""
        worker = start_writer(store_spec, *options)
        lines = wait_for(worker, "inside")
        assert ["wrote 1", "wrote 2", "wrote 3", "inside"] == lines
        before = {"version": 3, "turns": [0, 1, 2], "problems": []}
        assert before == read_back(store_spec)  # while it hangs: not blocked, nothing seen
        kill(worker)
        assert before == read_back(store_spec)
        # The next worker takes over where the acknowledged writes ended.
        worker = start_writer(store_spec)
        wait_for(worker, "wrote", count=2)
        kill(worker)
        result = read_back(store_spec)
        assert ([], [0, 1, 2, 3, 4]) == (result["problems"], result["turns"][:5])


class TestDurability:
    def test_acknowledged_turns_survive_the_writer(
        self, store_spec: str, start_writer: Start
    ) -> None:
        """Every write the worker reported before it was killed is read back by a new process."""
        worker = start_writer(store_spec, "--compact-every", "5")
        lines = wait_for(worker, "wrote", count=12)
        lines += kill(worker)
        result = read_back(store_spec)
        assert [] == result["problems"]
        assert result["version"] >= 12
        assert result["version"] >= acknowledged(lines)
