"""PostgresStore's commit throughput against the Agents SDK's SQLAlchemySession, one run.

    python benchmarks/postgres_sessions.py [--tasks 8] [--turns 100]

Both write to the same throwaway PostgreSQL server (``tests/_postgres.py``,
PostgreSQL's durable defaults: every commit waits for its WAL flush), through
psycopg 3: ``--tasks`` concurrent asyncio tasks each commit ``--turns`` turns
to a session of their own, one turn (a user message and the assistant's
answer) a commit. ``SQLAlchemySession`` (openai-agents, on SQLAlchemy 2's
async engine, ``postgresql+psycopg://``) stores the turn's two Responses
items with ``add_items``; :class:`mellea_ctx.AsyncPostgresStore` stores the
same two messages with ``aappend`` (checking the session's version, which
``add_items`` does not); :class:`mellea_ctx.PostgresStore` (sync, one thread
a task) is shown for reference. Each side runs twice, alternating, and keeps
its best. Prints commits a second and the ratios. Needs openai-agents,
sqlalchemy and greenlet (SQLAlchemy's asyncio extra).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mellea_ctx import AsyncPostgresStore, Message, ModelOutputThunk, PostgresStore
from tests._postgres import find_bindir, remove_server, start_postgres_server

TEXT = "the quarterly report lists revenue, costs and the figures by region " * 3


def items(task: int, k: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"task {task} turn {k}: {TEXT}"},
        {"role": "assistant", "content": f"answer {k}: {TEXT}"},
    ]


def components(task: int, k: int) -> list[Any]:
    return [
        Message("user", f"task {task} turn {k}: {TEXT}"),
        ModelOutputThunk(f"answer {k}: {TEXT}"),
    ]


async def ours(dsn: str, tasks: int, turns: int) -> float:
    store = AsyncPostgresStore(
        dsn, table_prefix=f"b_{uuid.uuid4().hex[:12]}", max_connections=tasks
    )
    await store.aload("warm-up")  # tables and the pool, outside the timing
    started = time.perf_counter()

    async def one(task: int) -> None:
        version = 0
        for k in range(turns):
            version = await store.aappend(f"s{task}", components(task, k), expected_version=version)

    await asyncio.gather(*(one(t) for t in range(tasks)))
    elapsed = time.perf_counter() - started
    await store.aclose()
    return elapsed


async def ours_sync(dsn: str, tasks: int, turns: int) -> float:
    store = PostgresStore(dsn, table_prefix=f"b_{uuid.uuid4().hex[:12]}", max_connections=tasks)
    store.load("warm-up")
    started = time.perf_counter()

    def one(task: int) -> None:
        version = 0
        for k in range(turns):
            version = store.append(f"s{task}", components(task, k), expected_version=version)

    await asyncio.gather(*(asyncio.to_thread(one, t) for t in range(tasks)))
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


async def agents_sdk(dsn: str, tasks: int, turns: int) -> float:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    url = dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_async_engine(url, pool_size=tasks, max_overflow=0)
    tag = uuid.uuid4().hex[:12]
    sessions = [
        SQLAlchemySession(
            f"s{t}",
            engine=engine,
            create_tables=True,
            sessions_table=f"sessions_{tag}",
            messages_table=f"messages_{tag}",
        )
        for t in range(tasks)
    ]
    await sessions[0].get_items()  # tables and the pool, outside the timing
    started = time.perf_counter()

    async def one(task: int) -> None:
        for k in range(turns):
            await sessions[task].add_items(items(task, k))  # type: ignore[arg-type]

    await asyncio.gather(*(one(t) for t in range(tasks)))
    elapsed = time.perf_counter() - started
    await engine.dispose()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    bindir = find_bindir()
    if bindir is None:
        sys.exit("PostgreSQL is not installed (apt-get install postgresql)")
    server = start_postgres_server(bindir, settings=())
    runs: dict[str, list[float]] = {"sdk": [], "async": [], "sync": []}
    try:
        for _round in range(2):
            runs["sdk"].append(asyncio.run(agents_sdk(server.dsn, args.tasks, args.turns)))
            runs["async"].append(asyncio.run(ours(server.dsn, args.tasks, args.turns)))
            runs["sync"].append(asyncio.run(ours_sync(server.dsn, args.tasks, args.turns)))
    finally:
        remove_server(server)
    commits = args.tasks * args.turns
    rate = {name: commits / min(times) for name, times in runs.items()}
    print(f"{commits} commits of one turn (2 items), {args.tasks} concurrent sessions, same server")
    print(f"  SQLAlchemySession.add_items (openai-agents): {rate['sdk']:8.0f} commits/s")
    print(f"  AsyncPostgresStore.aappend:                 {rate['async']:8.0f} commits/s")
    print(f"  PostgresStore.append (a thread a session):  {rate['sync']:8.0f} commits/s")
    print(f"  AsyncPostgresStore / SQLAlchemySession = {rate['async'] / rate['sdk']:.2f}")
    print(f"  PostgresStore / SQLAlchemySession      = {rate['sync'] / rate['sdk']:.2f}")


if __name__ == "__main__":
    main()
