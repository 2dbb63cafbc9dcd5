"""Async SQLite: a worker thread per call (``asyncio.to_thread``) against ``aiosqlite``, one run.

    python benchmarks/async_sqlite.py [--turns 300] [--tasks 8]

Both write the same thing to a real SQLite file (WAL, ``synchronous=FULL``, one
``BEGIN IMMEDIATE`` transaction per turn: the version check, the rows, the
head), from ``--tasks`` concurrent tasks each appending ``--turns`` turns to
its own session, then load every session once. ``to_thread`` is
:class:`mellea_ctx.AsyncSQLiteStore` itself; the ``aiosqlite`` side is a
minimal store written here with the same SQL (aiosqlite runs one dedicated
thread per connection). Prints the seconds of each and their ratio; run it on
a quiet machine. Needs ``pip install aiosqlite``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from mellea_ctx import AsyncSQLiteStore, Message, ModelOutputThunk
from mellea_ctx._sessions.sqlite import _SAVE_HEAD, _SCHEMA
from mellea_ctx._sessions.store import dump_record, load_record


def turn(task: int, k: int) -> list[object]:
    return [Message("user", f"task {task} turn {k}: " + "x" * 200), ModelOutputThunk("ok " * 40)]


async def with_thread(path: Path, tasks: int, turns: int) -> float:
    store = AsyncSQLiteStore(path)
    started = time.perf_counter()

    async def one(task: int) -> None:
        version = 0
        for k in range(turns):
            version = await store.aappend(f"s{task}", turn(task, k), expected_version=version)
        await store.aload(f"s{task}")

    await asyncio.gather(*(one(t) for t in range(tasks)))
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


async def with_aiosqlite(path: Path, tasks: int, turns: int) -> float:
    import aiosqlite

    async def connect() -> aiosqlite.Connection:
        connection = await aiosqlite.connect(path, timeout=60, isolation_level=None)
        await connection.execute("PRAGMA journal_mode = WAL")
        await connection.execute("PRAGMA synchronous = FULL")
        return connection

    setup = await connect()
    for statement in _SCHEMA:
        await setup.execute(statement)
    await setup.close()
    started = time.perf_counter()

    async def one(task: int) -> None:
        connection = await connect()  # one per task, as the thread store has one per thread
        session, version, length = f"s{task}", 0, 0
        for k in range(turns):
            records = [dump_record(c) for c in turn(task, k)]  # type: ignore[arg-type]
            await connection.execute("BEGIN IMMEDIATE")
            async with connection.execute(
                "SELECT version, length FROM sessions WHERE session_id = ?", (session,)
            ) as cursor:
                row = await cursor.fetchone()
            found = (0, 0) if row is None else (row[0], row[1])
            assert found == (version, length)
            await connection.executemany(
                "INSERT INTO components (session_id, position, record) VALUES (?, ?, ?)",
                [(session, length + i, r) for i, r in enumerate(records)],
            )
            await connection.execute(_SAVE_HEAD, (session, version + 1, length + len(records)))
            await connection.execute("COMMIT")
            version, length = version + 1, length + len(records)
        await connection.execute("BEGIN")
        async with connection.execute(
            "SELECT record FROM components WHERE session_id = ? ORDER BY position", (session,)
        ) as cursor:
            [load_record(r) for (r,) in await cursor.fetchall()]
        await connection.execute("COMMIT")
        await connection.close()

    await asyncio.gather(*(one(t) for t in range(tasks)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # Alternate the two, twice each, and keep each one's best run.
        thread, aio = [], []
        for round_ in range(2):
            thread.append(
                asyncio.run(with_thread(Path(tmp) / f"t{round_}.db", args.tasks, args.turns))
            )
            aio.append(
                asyncio.run(with_aiosqlite(Path(tmp) / f"a{round_}.db", args.tasks, args.turns))
            )
    best_thread, best_aio = min(thread), min(aio)
    writes = args.tasks * args.turns
    print(f"{writes} turns, {args.tasks} tasks, on a real file (WAL, synchronous=FULL)")
    print(f"  asyncio.to_thread (AsyncSQLiteStore): {best_thread:.3f} s")
    print(f"  aiosqlite (same SQL):                 {best_aio:.3f} s")
    print(f"  to_thread / aiosqlite = {best_thread / best_aio:.2f}")


if __name__ == "__main__":
    main()
