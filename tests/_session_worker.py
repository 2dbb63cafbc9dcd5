"""A worker process for the crash tests: writes turns to a store until killed, or reads them back.

    python tests/_session_worker.py write STORE SESSION [--compact-every N] [--hang-at N]
    python tests/_session_worker.py read STORE SESSION

``STORE`` is ``sqlite:PATH``, ``redis:URL#PREFIX`` or ``postgres:DSN#PREFIX``, or their
``async-`` forms (the async
store driven through ``tests/_async_face.py``). ``write`` continues the
session from what is stored: it commits numbered turns (a user message, an
assistant call to three tools in parallel, the three results, a final answer:
six components), and every ``--compact-every`` writes replaces the dialogue
with a checkpoint (holding the replaced span) and the last two turns, with an
instruction at the front that must be stripped. After each write it prints
``wrote VERSION``. With ``--hang-at N`` its N-th write stops halfway (SQLite:
inside the transaction, after rows were written; Redis: after sending half of
the script's command; PostgreSQL: inside the transaction, after the component rows were
inserted) and prints ``inside`` before sleeping, for the test to
kill it there.

``read`` prints one JSON line: the version, the turn numbers found (the
checkpoints' spans included, oldest first), and every problem found, such as
a half turn, a gap, or a tool exchange that ``validate_openai`` rejects.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Sequence
from typing import Any

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncRedisStore,
    AsyncSQLiteStore,
    Checkpoint,
    Component,
    Message,
    ModelOutputThunk,
    PostgresStore,
    SessionMemory,
    SessionStore,
    SQLiteStore,
    ToolCall,
    ToolMessage,
    Usage,
    validate_openai,
)
from tests._async_face import SyncFace, open_spec

TURN_SIZE = 6
KEEP_TURNS = 2


def turn(k: int) -> list[Component]:
    """The six components of turn ``k``: one complete user turn with a parallel tool exchange."""
    calls = [ToolCall(f"t{k}-{j}", "read_file", {"path": f"src/m{k}_{j}.py"}) for j in range(3)]
    results = [
        ToolMessage(f"# src/m{k}_{j}.py\n" + "x = 1\n" * 40, tool_call_id=call.id, name="read_file")
        for j, call in enumerate(calls)
    ]
    return [
        Message("user", f"turn {k}: read three files"),
        ModelOutputThunk(None, tool_calls=calls, usage=Usage(100 + k, 10)),
        *results,
        ModelOutputThunk(f"done {k}", usage=Usage(400 + k, 3)),
    ]


def turns_in(dialogue: Sequence[Component], problems: list[str]) -> list[int]:
    """Return the turn numbers in ``dialogue`` (checkpoint spans first), noting any problem."""
    found: list[int] = []
    rest = list(dialogue)
    if rest and isinstance(rest[0], Checkpoint):
        checkpoint = rest.pop(0)
        found += turns_in(checkpoint.span, problems)
        if checkpoint.replaced_count != len(checkpoint.span):
            problems.append(
                f"checkpoint says {checkpoint.replaced_count}, holds {len(checkpoint.span)}"
            )
    problems += validate_openai(rest)
    if len(rest) % TURN_SIZE:
        problems.append(f"{len(rest)} components is not a whole number of turns")
    for start in range(0, len(rest) - len(rest) % TURN_SIZE, TURN_SIZE):
        block = rest[start : start + TURN_SIZE]
        k = int(block[0].content.split()[1].rstrip(":")) if block[0].role == "user" else -1
        if block != turn(k):
            problems.append(f"components {start}..{start + TURN_SIZE} are not a whole turn {k}")
        found.append(k)
    return found


def open_store(spec: str) -> SessionStore:
    return open_spec(spec)


def hang_inside_next_write(store: SessionStore) -> None:
    """Make the next write stop halfway through, say so, and sleep until killed."""

    def stop_here() -> None:
        print("inside", flush=True)
        time.sleep(600)

    astore = store.astore if isinstance(store, SyncFace) else None
    if isinstance(store, SQLiteStore) or isinstance(astore, AsyncSQLiteStore):
        inserted = 0

        def trace(statement: str) -> None:
            nonlocal inserted
            if statement.startswith("INSERT INTO components"):
                inserted += 1
                if inserted == 2:  # rows are already written, inside the transaction
                    stop_here()

        if isinstance(store, SQLiteStore):
            store._connection().set_trace_callback(trace)
            return
        assert isinstance(astore, AsyncSQLiteStore)
        # The async store writes from worker threads, each with its own connection.
        open_connection = astore._connection

        def traced() -> sqlite3.Connection:
            connection = open_connection()
            connection.set_trace_callback(trace)
            return connection

        astore._connection = traced  # type: ignore[method-assign]
        return
    if isinstance(store, PostgresStore) or isinstance(astore, AsyncPostgresStore):
        import psycopg

        sync_execute = psycopg.Cursor.execute
        async_execute = psycopg.AsyncCursor.execute

        def inserts_components(query: Any) -> bool:
            return str(query).startswith("INSERT INTO") and "_components" in str(query)

        def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            done = sync_execute(self, query, *args, **kwargs)
            if inserts_components(query):  # rows are written, inside the transaction
                stop_here()
            return done

        async def aexecute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            done = await async_execute(self, query, *args, **kwargs)
            if inserts_components(query):
                stop_here()
            return done

        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.AsyncCursor.execute = aexecute  # type: ignore[method-assign]
        return
    if isinstance(astore, AsyncRedisStore):
        import redis.asyncio.connection

        async_original = redis.asyncio.connection.AbstractConnection.send_packed_command

        async def send_half_async(self: Any, command: Any, check_health: bool = True) -> None:
            data = command.encode() if isinstance(command, str) else b"".join(command)
            if b"EVALSHA" not in data:
                return await async_original(self, command, check_health)
            if not self.is_connected:
                await self.connect()
            self._writer.write(data[: len(data) // 2])
            await self._writer.drain()
            stop_here()

        redis.asyncio.connection.AbstractConnection.send_packed_command = send_half_async  # type: ignore[method-assign]
        return
    import redis.connection

    original = redis.connection.AbstractConnection.send_packed_command

    def send_half(self: Any, command: Any, check_health: bool = True) -> None:
        data = command.encode() if isinstance(command, str) else b"".join(command)
        if b"EVALSHA" not in data:
            return original(self, command, check_health)
        if not self._sock:
            self.connect()
        self._sock.sendall(data[: len(data) // 2])
        stop_here()

    redis.connection.AbstractConnection.send_packed_command = send_half  # type: ignore[method-assign]


def write(store: SessionStore, session_id: str, compact_every: int, hang_at: int | None) -> None:
    memory = SessionMemory(store)
    session = memory.open(session_id)
    problems: list[str] = []
    done = turns_in(session.dialogue, problems)
    assert not problems, problems
    k = done[-1] + 1 if done else 0
    writes = 0
    while True:
        if writes == hang_at:
            hang_inside_next_write(store)
        if compact_every and writes and writes % compact_every == 0:
            dialogue = session.dialogue
            keep = KEEP_TURNS * TURN_SIZE
            span = dialogue[:-keep]
            checkpoint = Checkpoint(
                f"Turns before {k - KEEP_TURNS}.", span=span, replaced_count=len(span)
            )
            session = session.replace(
                [Message("system", "Be brief."), checkpoint, *dialogue[-keep:]]
            )
        else:
            session = session.commit(turn(k))
            k += 1
        writes += 1
        sys.stdout.write(f"wrote {session.version}\n")  # one write, so a kill cannot split it
        sys.stdout.flush()


def read(store: SessionStore, session_id: str) -> None:
    stored = store.load(session_id)
    problems: list[str] = []
    found = turns_in(stored.components, problems)
    if found != list(range(len(found))):
        problems.append(f"turns {found} are not 0, 1, 2, ... without gaps")
    print(json.dumps({"version": stored.version, "turns": found, "problems": problems}))


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["write", "read"])
    parser.add_argument("store")
    parser.add_argument("session")
    parser.add_argument("--compact-every", type=int, default=0)
    parser.add_argument("--hang-at", type=int, default=None)
    args = parser.parse_args(argv)
    store = open_store(args.store)
    if args.mode == "write":
        write(store, args.session, args.compact_every, args.hang_at)
    else:
        read(store, args.session)


if __name__ == "__main__":
    main(sys.argv[1:])
