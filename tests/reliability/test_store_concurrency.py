"""Fault class 3 of docs/reliability.md: concurrency, one compactor, many sessions, two writers.

* 100 sessions compact at once on ONE compactor instance, in 100 threads and
  as 100 asyncio tasks (hypothesis picks how often each summary call yields,
  so the tasks interleave differently each example); each session's content
  is tagged with its number. Every result holds only its own tags, its
  checkpoint summarises exactly its own span, it equals what the same
  compactor computes for that session alone, and the compactor's state is
  the same before and after.
* 100 ``areact`` loops run at once on one shared compactor and one shared
  store (memory, SQLite, Redis, PostgreSQL), each session's loop calling tools and
  compacting; each session stores only its own dialogue and gets its own
  answer, and every summary prompt holds one session's content only.
* Two writers on one session: two processes, and two connections (threads)
  in one process, on SQLite, Redis and PostgreSQL, commit at the same moment from the
  same snapshot. Exactly one wins; the other gets ``SessionConflictError``,
  reloads and commits again; nothing is lost and nothing is stored twice.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncRedisStore,
    AsyncSessionStore,
    AsyncSQLiteStore,
    ChatContext,
    Checkpoint,
    Component,
    Event,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    PostgresStore,
    RedisStore,
    ScriptedBackend,
    SessionConflictError,
    SessionMemory,
    SessionStore,
    SQLiteStore,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    areact,
    as_async_store,
    component_to_record,
    pin_react_initiator,
    tool,
)

from .._async_face import open_spec as open_any
from .._postgres import PostgresServer, postgres_server_fixture  # noqa: F401 (a fixture)
from .._redis import RedisServer, redis_server_fixture  # noqa: F401 (a fixture)

pytestmark = pytest.mark.reliability

SESSIONS = 100
MESSAGES = 12
KEEP = 4
FILLER = " ".join(["the report lists the figures for the quarter"] * 6)
TAG = re.compile(r"\bS(\d+)m(\d+)\b")
ROOT = Path(__file__).resolve().parents[2]
RACER = Path(__file__).with_name("_race_worker.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def tags(text: str) -> set[str]:
    return {match.group(0) for match in TAG.finditer(text)}


def sessions_in(text: str) -> set[int]:
    return {int(match.group(1)) for match in TAG.finditer(text)}


def text_of(items: Sequence[Component]) -> str:
    return "\n".join(f"{c.content} {getattr(c, 'summary', '')}" for c in items)


def summary_of(messages: Sequence[Component]) -> str:
    """A summary built only from the messages the compactor sent: the tags they hold."""
    return "Summary of " + " ".join(sorted(tags(text_of(messages)))) + "."


def conversation(i: int) -> ChatContext:
    ctx = ChatContext().add(Message("system", "Be brief."))
    for j in range(MESSAGES):
        ctx = ctx.add(Message("user" if j % 2 == 0 else "assistant", f"S{i}m{j} {FILLER}"))
    return ctx


def records(ctx: ChatContext) -> list[Any]:
    return [component_to_record(c) for c in ctx]


def compactor_state(compactor: Any) -> dict[str, Any]:
    """Everything the compactor holds, by identity and by value (deep-copied where mutable)."""
    state: dict[str, Any] = {f"id {name}": id(value) for name, value in vars(compactor).items()}
    state["values"] = {k: v for k, v in vars(compactor).items() if k != "_engine"}
    state["settings.model_options"] = copy.deepcopy(dict(compactor.settings.model_options))
    state["engine"] = dict(vars(compactor._engine))
    return state


def make_compactor(kind: str, backend: ScriptedBackend) -> Any:
    if kind == "window-summary":
        return LLMSummarizeCompactor(default_backend=backend, keep_n=KEEP)
    return TokenBudgetCompactor(max_tokens=400, keep_recent_tokens=200, default_backend=backend)


def check_own(i: int, before: ChatContext, after: ChatContext) -> None:
    """``after`` holds only session ``i``'s content; its checkpoint sums up exactly its span."""
    assert {i} == sessions_in(text_of(after.as_list()))
    items = after.as_list()
    assert isinstance(items[1], Checkpoint)
    span = items[1].span
    assert before.as_list()[1 : 1 + len(span)] == list(span)
    assert f"Summary of {' '.join(sorted(tags(text_of(span))))}." in items[1].summary
    assert before.as_list()[1 + len(span) :] == items[2:]


class TestOneCompactorManySessions:
    @pytest.mark.parametrize("kind", ["window-summary", "token-budget"])
    def test_100_threads(self, kind: str) -> None:
        """100 threads compact 100 sessions at once on one compactor, switching all the time."""
        backend = ScriptedBackend(lambda messages, options: summary_of(messages))
        compactor = make_compactor(kind, backend)
        contexts = [conversation(i) for i in range(SESSIONS)]
        alone = [records(compactor.compact(ctx)) for ctx in contexts]
        state = compactor_state(compactor)
        barrier = threading.Barrier(SESSIONS)
        results: list[ChatContext | None] = [None] * SESSIONS
        errors: list[BaseException] = []

        def run(i: int) -> None:
            try:
                barrier.wait(timeout=60)
                results[i] = compactor.compact(contexts[i])
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=run, args=(i,)) for i in range(SESSIONS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
        finally:
            sys.setswitchinterval(interval)
        assert not any(thread.is_alive() for thread in threads)
        assert [] == errors
        for i, result in enumerate(results):
            assert result is not None
            check_own(i, contexts[i], result)
            assert alone[i] == records(result)
        assert state == compactor_state(compactor)
        assert 2 * SESSIONS == len(backend.calls)

    @pytest.mark.parametrize("kind", ["window-summary", "token-budget"])
    @settings(max_examples=20)
    @given(yields=st.lists(st.integers(0, 4), min_size=SESSIONS, max_size=SESSIONS))
    def test_100_tasks(self, kind: str, yields: list[int]) -> None:
        """100 tasks ``acompact`` at once; each summary call yields as often as hypothesis says."""

        async def summarize(messages: Sequence[Component], options: Any) -> str:
            (i,) = sessions_in(text_of(messages))  # one session per prompt
            for _ in range(yields[i]):
                await asyncio.sleep(0)
            return summary_of(messages)

        compactor = make_compactor(kind, ScriptedBackend(summarize))
        contexts = [conversation(i) for i in range(SESSIONS)]
        state = compactor_state(compactor)

        async def main() -> list[ChatContext]:
            return list(await asyncio.gather(*(compactor.acompact(ctx) for ctx in contexts)))

        results = asyncio.run(main())
        for i, result in enumerate(results):
            check_own(i, contexts[i], result)
        assert state == compactor_state(compactor)


# -- 100 agent loops, one compactor, one store ----------------------------------------------


@pytest.fixture(
    params=[
        "memory",
        "sqlite",
        "redis",
        "postgres",
        "async-memory",
        "async-sqlite",
        "async-redis",
        "async-postgres",
    ]
)
def shared_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[SessionStore | AsyncSessionStore]:
    """One store of each kind; the async kinds are used through their async face only."""
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "async-memory":
        yield as_async_store(MemoryStore())
    elif request.param == "sqlite":
        with SQLiteStore(tmp_path / "sessions.db", timeout=60) as store:
            yield store
    elif request.param == "async-sqlite":
        with AsyncSQLiteStore(tmp_path / "sessions.db", timeout=60) as async_store:
            yield async_store
    elif request.param.endswith("postgres"):
        database: PostgresServer = request.getfixturevalue("postgres_server")
        table_prefix = f"loops_{uuid.uuid4().hex[:16]}"
        if request.param == "async-postgres":
            yield AsyncPostgresStore(database.dsn, table_prefix=table_prefix, timeout=60)
            return
        with PostgresStore(database.dsn, table_prefix=table_prefix, timeout=60) as pg_store:
            yield pg_store
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        prefix = f"loops-{uuid.uuid4().hex}:"
        if request.param == "async-redis":
            yield AsyncRedisStore(server.url, prefix=prefix)  # the test closes it, in its loop
            return
        with RedisStore(server.url, prefix=prefix) as store:
            yield store


STEPS = 4


def agent(messages: Sequence[Component], options: Any) -> Any:
    """Call ``echo`` STEPS times with this session's tag, then answer; reads only ``messages``."""
    last = messages[-1]
    if isinstance(last, ToolMessage):  # "S{i}m{100 + step} ..."
        first = last.content.split()[0]
        i, done = (int(n) for n in first[1:].split("m"))
        step = done - 100 + 1
    else:  # the goal
        (i,) = {int(n) for n in re.findall(r"task S(\d+)", str(last.content))}
        step = 0
    if step == STEPS:
        return ModelOutputThunk(f"done S{i}")
    call = ToolCall(f"c{i}-{step}", "echo", {"text": f"S{i}m{100 + step}"})
    return ModelOutputThunk(None, tool_calls=[call])


class TestAgentLoops:
    def test_100_loops_share_a_compactor_and_a_store(
        self, shared_store: SessionStore | AsyncSessionStore
    ) -> None:
        """Each loop stores only its own turns and summaries, and gets its own answer."""
        prompts: list[set[int]] = []

        def summarize(messages: Sequence[Component], options: Any) -> str:
            prompts.append(sessions_in(text_of(messages)))
            return summary_of(messages)

        compactor = TokenBudgetCompactor(
            max_tokens=250,
            keep_recent_tokens=60,
            boundary="model_step",
            pin_predicate=pin_react_initiator,
            default_backend=ScriptedBackend(summarize),
        )
        state = compactor_state(compactor)
        memory = SessionMemory(shared_store)
        events: dict[int, list[Event]] = {i: [] for i in range(SESSIONS)}

        async def loop(i: int) -> Any:
            session = await memory.aopen(f"s{i}")
            return await areact(
                f"task S{i}: take four notes",
                session.context(system="You take notes."),
                ScriptedBackend(agent),
                tools=[echo],
                compactor=compactor,
                session=session,
                on_event=events[i].append,
            )

        async def main() -> tuple[list[Any], list[tuple[Component, ...]]]:
            try:
                results = list(await asyncio.gather(*(loop(i) for i in range(SESSIONS))))
                opened = [await memory.aopen(f"s{i}") for i in range(SESSIONS)]
                return results, [session.dialogue for session in opened]
            finally:
                if isinstance(shared_store, (AsyncRedisStore, AsyncPostgresStore)):
                    await shared_store.aclose()

        results, dialogues = asyncio.run(main())
        applied = 0
        for i, (result, stored) in enumerate(zip(results, dialogues, strict=True)):
            assert f"done S{i}" == result.answer
            assert {i} == sessions_in(text_of(stored))
            assert {f"s{i}"} == {e.session_id for e in events[i]}
            mine = sum(e.kind == "compaction_applied" for e in events[i])
            assert mine >= 1  # every loop compacted (and stored the compacted dialogue)
            assert any(isinstance(c, Checkpoint) for c in stored)
            applied += mine
        assert all(len(found) == 1 for found in prompts)
        assert applied == len(prompts)  # one summary prompt per compaction, of one session
        print(f"100 agent loops on {type(shared_store).__name__}: {applied} compactions")
        assert state == compactor_state(compactor)


@tool
def echo(text: str) -> str:
    """Echo a note back, with the session's tag first.

    Args:
        text: The note.
    """
    return f"{text} {FILLER}"


# -- two writers, one session -----------------------------------------------------------------


@pytest.fixture(
    params=["sqlite", "redis", "postgres", "async-sqlite", "async-redis", "async-postgres"]
)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    if kind.endswith("sqlite"):
        return f"{kind}:{tmp_path / 'sessions.db'}"
    if kind.endswith("postgres"):
        database: PostgresServer = request.getfixturevalue("postgres_server")
        return f"{kind}:{database.dsn}#race_{uuid.uuid4().hex[:16]}"
    server: RedisServer = request.getfixturevalue("redis_server")
    return f"{kind}:{server.url}#race-{uuid.uuid4().hex}:"


def open_spec(spec: str) -> Any:
    """The store ``spec`` names (every kind has ``close``)."""
    return open_any(spec, timeout=60)


ROUNDS = 100


def check_all_stored(store: SessionStore, names: Sequence[str]) -> None:
    """Both writers' turns of every round are stored once each, in rounds order."""
    stored = store.load("s1")
    assert 2 * ROUNDS == stored.version
    found = [c.content for c in stored.components if c.role == "user"]
    assert 2 * ROUNDS == len(found) == len(set(found))
    for r in range(ROUNDS):
        assert {f"{name} round {r}" for name in names} == set(found[2 * r : 2 * r + 2])


class TestTwoWriters:
    def test_two_processes(self, store_spec: str) -> None:
        """Two processes load the same snapshot and commit together, 100 rounds."""
        racers = [
            subprocess.Popen(
                [sys.executable, str(RACER), store_spec, name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=ENV,
            )
            for name in ("A", "B")
        ]
        outcomes: dict[str, int] = {"A": 0, "B": 0}
        try:
            for r in range(ROUNDS):
                loaded = [send(p, "load") for p in racers]
                assert loaded[0] == loaded[1] == f"loaded {2 * r}"
                for racer in racers:  # both start their commit before either answers
                    assert racer.stdin is not None
                    racer.stdin.write(f"commit {r}\n")
                    racer.stdin.flush()
                answers = [read_line(p) for p in racers]
                won = [a for a in answers if a == f"wrote {2 * r + 1}"]
                lost = [a for a in answers if a.startswith("conflict ")]
                assert (1, 1) == (len(won), len(lost)), answers
                assert "is at version " in lost[0] and "nothing was written" in lost[0]
                outcomes["A" if answers[0] == won[0] else "B"] += 1
                loser = racers[answers.index(lost[0])]
                assert f"wrote {2 * r + 2}" == send(loser, f"retry {r}")
        finally:
            for racer in racers:
                racer.communicate(input="", timeout=60)
        assert [0, 0] == [racer.returncode for racer in racers]
        with closing(open_spec(store_spec)) as store:
            check_all_stored(store, ["A", "B"])
        print(f"two processes on {store_spec.split(':')[0]}: {outcomes} wins, 0 lost")

    def test_two_connections(self, store_spec: str) -> None:
        """Two stores (connections, clients) in two threads, 100 rounds from one snapshot."""
        stores = [open_spec(store_spec), open_spec(store_spec)]
        barrier = threading.Barrier(2)
        outcomes: list[list[str]] = [[], []]

        def run(index: int) -> None:
            memory = SessionMemory(stores[index])
            name = "AB"[index]
            for r in range(ROUNDS):
                session = memory.open("s1")
                barrier.wait(timeout=60)  # both hold the snapshot of this round
                barrier.wait(timeout=60)  # neither wrote before both loaded
                try:
                    session.commit(turn(name, r))
                    outcomes[index].append("won")
                except SessionConflictError:
                    outcomes[index].append("lost")
                    memory.open("s1").commit(turn(name, r))
                barrier.wait(timeout=60)  # the round is over for both

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        with closing(stores[0]), closing(stores[1]):
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
            assert not any(thread.is_alive() for thread in threads)
            for r in range(ROUNDS):
                assert {"won", "lost"} == {outcomes[0][r], outcomes[1][r]}
            check_all_stored(stores[0], ["A", "B"])


def turn(name: str, r: int) -> list[Component]:
    return [Message("user", f"{name} round {r}"), ModelOutputThunk(f"ok {name} {r}")]


def send(process: subprocess.Popen[str], line: str) -> str:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()
    return read_line(process)


def read_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        assert process.stderr is not None
        pytest.fail(f"the racer exited early: {process.stderr.read()}")
    return line.strip()
