"""Fault class 4 of docs/reliability.md: the stores under process kills, server kills, full disks.

* SQLite: a writer process SIGKILLs itself before each SQL statement of a fixed
  script of writes (open a new file, commits, a compaction's replace, metadata,
  a clear), one run per statement. A new store then reads exactly the state
  after the last committed write, the file passes ``PRAGMA integrity_check``,
  and the session takes the next turn.
* SQLite on a full disk (a tiny tmpfs): the write that does not fit raises
  ``SessionStoreError`` naming the file and the fix, every committed turn is
  intact, and once space is freed the session resumes.
* Redis: ``redis-server`` (append-only file on) is SIGKILLed in the middle of a
  burst of commits and compactions, then restarted on the same directory.
  Every acknowledged write is there, the write in flight raised
  ``SessionStoreError``, no turn is doubled or split, and the session resumes.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import ConstantBackoff, NoBackoff
from redis.retry import Retry

from mellea_ctx import (
    AsyncSQLiteStore,
    Checkpoint,
    MemoryStore,
    RedisStore,
    SessionMemory,
    SessionStore,
    SessionStoreError,
    SQLiteStore,
    StoredSession,
)

from .._async_face import SyncFace
from .._redis import _answers_ping, _free_port
from .._session_worker import KEEP_TURNS, TURN_SIZE, turn, turns_in
from ._sqlite_steps import STEPS, apply_steps

pytestmark = pytest.mark.reliability

ROOT = Path(__file__).resolve().parents[2]
STEPS_WORKER = Path(__file__).with_name("_sqlite_steps.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
SESSIONS = ("s1", "s2")


def snapshot(store: SessionStore) -> dict[str, StoredSession]:
    return {session_id: store.load(session_id) for session_id in SESSIONS}


def expected_states() -> list[dict[str, StoredSession]]:
    """The stored state before any step, then after each step, computed on a MemoryStore."""
    store = MemoryStore()
    states = [snapshot(store)]
    apply_steps(store, lambda _index: states.append(snapshot(store)))
    return states


def run_steps(path: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(STEPS_WORKER), str(path), str(kill_at)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
        check=False,
    )


class TestSQLiteWriterKilledAtEveryStatement:
    def test_each_kill_leaves_the_last_committed_write(self, tmp_path: Path) -> None:
        """One run per SQL statement of the script, killed before it; 116 runs today."""
        states = expected_states()
        full = run_steps(tmp_path / "full.db", 0)
        assert 0 == full.returncode, full.stderr
        lines = full.stdout.split()
        # "opened N", then "done STEP N" per step: the statements run when each step returned.
        opened = int(lines[1])
        ends = [int(n) for n in lines[4::3]]
        assert len(STEPS) == len(ends)
        assert snapshot(SQLiteStore(tmp_path / "full.db")) == states[-1]
        cases = 0
        for kill_at in range(1, ends[-1] + 1):
            path = tmp_path / f"kill-{kill_at}.db"
            killed = run_steps(path, kill_at)
            assert -signal.SIGKILL == killed.returncode, (kill_at, killed.stderr)
            ran = kill_at - 1
            # Steps whose statements all ran are committed (COMMIT is each one's last).
            committed = sum(1 for end in ends if end <= ran)
            acknowledged = killed.stdout.count("done ")
            assert acknowledged <= committed
            if ran < opened and not path.exists():
                continue  # killed before the file was created: nothing to read
            with SQLiteStore(path) as store:
                assert states[committed] == snapshot(store), (kill_at, committed)
                memory = SessionMemory(store)
                session = memory.open("s1")
                resumed = session.commit(turn(50))
                assert session.version + 1 == resumed.version
            with contextlib.closing(sqlite3.connect(path)) as check:
                assert [("ok",)] == check.execute("PRAGMA integrity_check").fetchall()
            cases += 1
            path.unlink()
        assert cases >= ends[-1] - opened  # every kill after the file existed was checked
        print(f"sqlite kill points: {ends[-1]} statements, {cases} files read back")


# -- a full disk ---------------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 384 KiB tmpfs, mounted for this test (needs root and mount; skipped otherwise)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a tiny tmpfs needs root and mount(8)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
        timeout=30,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr!r}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, timeout=30)


class TestSQLiteFullDisk:
    @pytest.mark.parametrize("face", ["sync", "async"])
    @pytest.mark.parametrize("filler_kib", [0, 64, 128, 192, 256])
    def test_a_full_disk_is_a_clear_error_and_keeps_the_last_turn(
        self, tiny_disk: Path, filler_kib: int, face: str
    ) -> None:
        """Commits and compactions until the disk is full; then free space and go on.

        ``async``: the same writes through ``AsyncSQLiteStore``'s coroutines.
        """
        filler = tiny_disk / "filler"
        filler.write_bytes(b"\0" * filler_kib * 1024)
        ballast = tiny_disk / "ballast"  # freed at the end, so the session can resume
        ballast.write_bytes(b"\0" * 48 * 1024)
        path = tiny_disk / "sessions.db"
        store: SessionStore = (
            SyncFace(AsyncSQLiteStore(path)) if face == "async" else SQLiteStore(path)
        )
        memory = SessionMemory(store)
        session = memory.open("s1")
        acknowledged = session
        k = 0
        with pytest.raises(SessionStoreError) as caught:
            for writes in range(10_000):
                if writes % 5 == 4:
                    session = compact(session)
                else:
                    session = session.commit(turn(k))
                    k += 1
                acknowledged = session
        message = str(caught.value)
        assert f"SQLiteStore({str(path)!r})" in message
        assert "the disk holding the file is full" in message
        assert "free space on that disk" in message
        assert isinstance(caught.value.__cause__, sqlite3.Error)
        # The failed write left nothing; a new connection reads the last acknowledged turn.
        for reader in (store, SQLiteStore(path)):
            stored = reader.load("s1")
            assert (acknowledged.version, acknowledged.dialogue) == (
                stored.version,
                stored.components,
            )
        ballast.unlink()
        filler.unlink()
        resumed = memory.open("s1").commit(turn(k))
        assert acknowledged.version + 1 == resumed.version
        store.close()


def compact(session: Any) -> Any:
    """Replace all but the last KEEP_TURNS turns with a checkpoint holding them."""
    keep = KEEP_TURNS * TURN_SIZE
    dialogue = session.dialogue
    if len(dialogue) <= keep + 1:
        return session.commit(turn(next_turn(dialogue)))
    span = dialogue[:-keep]
    checkpoint = Checkpoint("Earlier turns.", span=span, replaced_count=len(span))
    return session.replace([checkpoint, *dialogue[-keep:]])


def next_turn(dialogue: Any) -> int:
    found = turns_in(dialogue, [])
    return found[-1] + 1 if found else 0


# -- Redis killed mid-burst ----------------------------------------------------------------


class Server:
    """A ``redis-server`` with an append-only file, that the test kills and restarts."""

    def __init__(self, workdir: Path, appendfsync: str) -> None:
        self.workdir = workdir
        self.appendfsync = appendfsync
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                self.appendfsync,
                "--dir",
                str(self.workdir),
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(500):  # bounded: 500 pings of at most 0.5 s
            if _answers_ping(self.port):
                return
            if self.process.poll() is not None:
                break
            threading.Event().wait(0.02)  # polling a server that is starting up
        pytest.fail(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def aof_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed, and CI must run the Redis fault suite")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = Server(tmp_path, request.param)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def client_for(server: Server) -> Any:
    """A client that does not resend: the first broken connection is the caller's error."""
    return redis.Redis(port=server.port, retry=Retry(NoBackoff(), 0), socket_timeout=30)


class Writer(threading.Thread):
    """Commits turns (and a compaction every fifth write) until a write fails."""

    def __init__(self, memory: SessionMemory) -> None:
        super().__init__(daemon=True)
        self.memory = memory
        self.acknowledged: list[Any] = []  # the snapshot after each acknowledged write
        self.error: BaseException | None = None
        self.progress = threading.Condition()
        self.stop = threading.Event()

    def run(self) -> None:
        session = self.memory.open("s1")
        k = next_turn(session.dialogue)
        writes = 0
        try:
            while not self.stop.is_set():
                session = compact(session) if writes % 5 == 4 else session.commit(turn(k))
                k = next_turn(session.dialogue)
                writes += 1
                with self.progress:
                    self.acknowledged.append(session)
                    self.progress.notify_all()
        except BaseException as exc:  # reported to the test
            with self.progress:
                self.error = exc
                self.progress.notify_all()

    def wait_for(self, count: int) -> None:
        with self.progress:
            assert self.progress.wait_for(
                lambda: len(self.acknowledged) >= count or self.error is not None, timeout=60
            )
        assert self.error is None, self.error


class TestRedisKilledMidBurst:
    @pytest.mark.parametrize("aof_server", ["always", "everysec"], indirect=True)
    def test_a_sigkill_keeps_what_the_fsync_policy_promises(self, aof_server: Server) -> None:
        """Eight rounds: burst, SIGKILL redis-server, restart it, check, resume from the store.

        ``always``: every acknowledged write is read back. ``everysec``: Redis
        acknowledges a write before its append-only file is written when a sync is
        still running (it postpones the write up to two seconds), so a kill of the
        server itself can lose the last acknowledged writes: what is read back is
        then an earlier acknowledged state, whole, never a mix; the losses are counted.
        """
        strict = aof_server.appendfsync == "always"
        rng = random.Random(f"redis-kill-{aof_server.appendfsync}")
        prefix = f"fault-{uuid.uuid4().hex}:"
        start = StoredSession()
        landed = acknowledged = lost = 0
        for _round in range(8):
            client = client_for(aof_server)
            writer = Writer(SessionMemory(RedisStore(client=client, prefix=prefix)))
            writer.start()
            writer.wait_for(rng.randint(5, 40))
            aof_server.kill()
            writer.join(timeout=60)
            assert not writer.is_alive()
            client.close()
            # The write in flight (or the next one) failed with the typed error.
            assert isinstance(writer.error, SessionStoreError), writer.error
            assert "check that the server is up" in str(writer.error)
            last = writer.acknowledged[-1]
            aof_server.start()
            with RedisStore(f"redis://127.0.0.1:{aof_server.port}/0", prefix=prefix) as store:
                stored = store.load("s1")
            problems: list[str] = []
            found = turns_in(stored.components, problems)
            assert [] == problems
            assert list(range(len(found))) == found  # whole turns, none doubled
            # The write in flight may be there, whole; otherwise an acknowledged state.
            assert stored.version <= last.version + 1
            if stored.version <= last.version:
                states = {s.version: s.dialogue for s in writer.acknowledged}
                states[start.version] = start.components
                assert states.get(stored.version) == stored.components, stored.version
            landed += stored.version == last.version + 1
            acknowledged += len(writer.acknowledged)
            lost += max(last.version - stored.version, 0)
            if strict:
                assert stored.version >= last.version  # every acknowledged write is there
            start = stored
        assert start.version >= 8 * 5
        print(
            f"redis appendfsync={aof_server.appendfsync}: 8 kills, {acknowledged} acknowledged "
            f"writes, {lost} lost, {landed} in-flight writes had landed"
        )


class TestRedisFullDisk:
    """``redis-server`` with its append-only file on a tiny tmpfs, filled up mid-session."""

    def start(self, disk: Path, appendfsync: str) -> Server:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        server = Server(disk, appendfsync)
        server.start()
        return server

    def fill(self, server: Server, disk: Path) -> tuple[Path, Writer]:
        """Leave the disk almost full, then commit until a write fails."""
        filler = disk / "filler"
        free = shutil.disk_usage(disk).free
        filler.write_bytes(b"\0" * max(free - 96 * 1024, 0))
        writer = Writer(SessionMemory(RedisStore(client=client_for(server), prefix="full:")))
        writer.start()
        writer.join(timeout=120)
        assert not writer.is_alive()
        print(
            f"redis appendfsync={server.appendfsync}, disk full after "
            f"{len(writer.acknowledged)} acknowledged writes: {writer.error}"
        )
        return filler, writer

    def test_everysec_refuses_writes_until_space_is_freed(self, tiny_disk: Path) -> None:
        """appendfsync everysec: MISCONF for every write, reads work, writes resume after."""
        server = self.start(tiny_disk, "everysec")
        try:
            filler, writer = self.fill(server, tiny_disk)
            assert isinstance(writer.error, SessionStoreError), writer.error
            assert "MISCONF" in str(writer.error)
            assert "cannot save to its disk" in str(writer.error)
            last = writer.acknowledged[-1]
            with RedisStore(f"redis://127.0.0.1:{server.port}/0", prefix="full:") as store:
                stored = store.load("s1")  # still served from memory
                assert stored.version in (last.version, last.version + 1)
                filler.unlink()
                # Redis retries the append-only file once a second; bounded wait for it.
                client = client_for(server)
                for _ in range(300):
                    if client.info("persistence")["aof_last_write_status"] == "ok":
                        break
                    threading.Event().wait(0.05)
                client.close()
                memory = SessionMemory(store)
                session = memory.open("s1")
                resumed = session.commit(turn(next_turn(session.dialogue)))
                assert session.version + 1 == resumed.version
            server.kill()  # and everything acknowledged is on the disk
            server.start()
            with RedisStore(f"redis://127.0.0.1:{server.port}/0", prefix="full:") as store:
                assert resumed.version == store.load("s1").version
        finally:
            server.stop()

    def test_always_stops_the_server_and_keeps_every_acknowledged_write(
        self, tiny_disk: Path
    ) -> None:
        """appendfsync always: Redis exits on the failed write; restarted, it has every ack."""
        server = self.start(tiny_disk, "always")
        try:
            filler, writer = self.fill(server, tiny_disk)
            assert isinstance(writer.error, SessionStoreError), writer.error
            last = writer.acknowledged[-1]
            assert server.process is not None
            server.process.wait(timeout=60)  # it exits: "Can't recover from AOF write error"
            filler.unlink()
            server.start()
            with RedisStore(f"redis://127.0.0.1:{server.port}/0", prefix="full:") as store:
                stored = store.load("s1")
                problems: list[str] = []
                found = turns_in(stored.components, problems)
                assert ([], list(range(len(found)))) == (problems, found)
                assert stored.version in (last.version, last.version + 1)
                memory = SessionMemory(store)
                session = memory.open("s1")
                resumed = session.commit(turn(next_turn(session.dialogue)))
                assert session.version + 1 == resumed.version
        finally:
            server.stop()


class TestRedisRestartUnderRetries:
    @pytest.mark.parametrize("aof_server", ["always"], indirect=True)
    def test_the_write_in_flight_is_sent_again_and_stored_once(self, aof_server: Server) -> None:
        """redis-py's retries carry the writer over a SIGKILL and restart of Redis.

        Eight rounds: the writer (its client retries a broken command every 0.2 s,
        25 times: redis-py's default of 3 jittered retries may all fail before a
        restarted server listens) is in the middle of a burst when the server is
        killed and started again at once. The write in flight is sent again after
        the restart; whether the dead server had applied it or not, it is stored
        once and reported written. The burst goes on without an error, and nothing
        is lost or doubled.
        """
        prefix = f"retry-{uuid.uuid4().hex}:"
        client = redis.Redis(port=aof_server.port, retry=Retry(ConstantBackoff(0.2), 25))
        store = RedisStore(client=client, prefix=prefix)
        writer = Writer(SessionMemory(store))
        writer.start()
        try:
            for round_ in range(8):
                writer.wait_for(10 * (round_ + 1))
                aof_server.kill()
                aof_server.start()
            writer.wait_for(10 * 9)
        finally:
            writer.stop.set()
            writer.join(timeout=120)
        assert not writer.is_alive()
        assert writer.error is None, writer.error
        last = writer.acknowledged[-1]
        stored = store.load("s1")
        assert (last.version, last.dialogue) == (stored.version, stored.components)
        problems: list[str] = []
        found = turns_in(stored.components, problems)
        assert ([], list(range(len(found)))) == (problems, found)
        versions = [session.version for session in writer.acknowledged]
        assert list(range(1, len(versions) + 1)) == versions  # no write doubled or skipped
        client.close()
