"""Checkpoint chains: the k-th replace costs the same whatever k, on every store, one run.

    python benchmarks/chains.py [--depth 2000] [--stores memory,sqlite,...]

Each store grows one session a chain ``--depth`` checkpoints deep, as a long
session does: commit a turn, compact with ``LLMSummarizeCompactor(keep_n=1)``
(a scripted model), ``replace`` the dialogue with the result, so every
checkpoint folds in the one before. Only the ``replace`` calls are timed. It
prints, per store, the seconds of replaces 100-200 and of the last hundred
(1,900-2,000 of a 2,000-deep chain) and their ratio (and the ratio of the
windows' medians, which a busy machine's pauses move less); each checkpoint is
stored once and referred to (``mellea_ctx/_sessions/chains.py``), so the
ratio is about 1 (the goal is at most 1.5). Before that layout, every replace
rewrote the whole chain and the ratio grew with the depth.

Redis and PostgreSQL run as throwaway servers of this run's own (the tests'
helpers, ``tests/_redis.py`` and ``tests/_postgres.py``). PostgreSQL runs with
``fsync=off``, as in the tests: what is measured is the work that could grow
with the depth, and a flush per commit (the same at any depth, several
milliseconds on a shared disk, and noisy) would drown it; SQLite keeps its
``synchronous=FULL``. A store whose server cannot be started is skipped, saying so.
The async stores are driven by ``asyncio`` (``Session.areplace``).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncRedisStore,
    AsyncSQLiteStore,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    ModelOutputThunk,
    PostgresStore,
    RedisStore,
    ScriptedBackend,
    SessionMemory,
    SQLiteStore,
    as_async_store,
)
from tests._postgres import find_bindir, remove_server, start_postgres_server
from tests._redis import start_redis_server, stop_redis_server

STORES = [
    "memory",
    "sqlite",
    "redis",
    "postgres",
    "async-memory",
    "async-sqlite",
    "async-redis",
    "async-postgres",
]
EARLY = (100, 200)


def _compactor() -> LLMSummarizeCompactor:
    backend = ScriptedBackend(lambda messages, options: "The user asked; the agent answered.")
    return LLMSummarizeCompactor(default_backend=backend, keep_n=1)


def _turn(i: int) -> list[Any]:
    return [Message("user", f"question {i}"), ModelOutputThunk(f"answer {i}")]


def grow(store: Any, depth: int) -> list[float]:
    """The seconds of each replace of a chain grown ``depth`` deep (sync stores)."""
    compactor = _compactor()
    session = SessionMemory(store).open("deep")
    times = []
    for i in range(depth):
        session = session.commit(_turn(i))
        compacted = compactor.compact(session.context(system="Be brief."))
        started = time.perf_counter()
        session = session.replace(compacted)
        times.append(time.perf_counter() - started)
    return times


async def agrow(store: Any, depth: int) -> list[float]:
    """:func:`grow` through the async face."""
    compactor = _compactor()
    session = await SessionMemory(store).aopen("deep")
    times = []
    for i in range(depth):
        session = await session.acommit(_turn(i))
        compacted = await compactor.acompact(session.context(system="Be brief."))
        started = time.perf_counter()
        session = await session.areplace(compacted)
        times.append(time.perf_counter() - started)
    if hasattr(store, "aclose"):
        await store.aclose()
    return times


@contextmanager
def servers(kinds: list[str], workdir: Path) -> Iterator[dict[str, str]]:
    """Start the servers the chosen stores need; yield their addresses by name."""
    found: dict[str, str] = {}
    redis_process = postgres = None
    if any(k.endswith("redis") for k in kinds):
        binary = shutil.which("redis-server")
        if binary is not None:
            server = start_redis_server(binary, workdir)
            redis_process, found["redis"] = server.process, server.url
    if any(k.endswith("postgres") for k in kinds):
        bindir = find_bindir()
        if bindir is not None:
            postgres = start_postgres_server(bindir)  # fsync off: see the module docstring
            found["postgres"] = postgres.dsn
    try:
        yield found
    finally:
        if redis_process is not None:
            stop_redis_server(redis_process)
        if postgres is not None:
            remove_server(postgres)


def opener(kind: str, workdir: Path, found: dict[str, str]) -> Callable[[], Any] | None:
    """How to open a fresh store of ``kind`` (``None`` when its server is not there)."""
    base = kind.removeprefix("async-")
    if base in ("redis", "postgres") and base not in found:
        return None
    path = workdir / f"{kind}.db"
    return {
        "memory": MemoryStore,
        "async-memory": lambda: as_async_store(MemoryStore()),
        "sqlite": lambda: SQLiteStore(path),
        "async-sqlite": lambda: AsyncSQLiteStore(path),
        "redis": lambda: RedisStore(found["redis"], prefix="chains:"),
        "async-redis": lambda: AsyncRedisStore(found["redis"], prefix="achains:"),
        "postgres": lambda: PostgresStore(found["postgres"], table_prefix="chains"),
        "async-postgres": lambda: AsyncPostgresStore(found["postgres"], table_prefix="achains"),
    }[kind]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=2000)
    parser.add_argument("--stores", default=",".join(STORES))
    args = parser.parse_args()
    kinds = args.stores.split(",")
    depth = args.depth
    late = (depth - 100, depth)
    print(f"replaces of a chain grown {depth} deep; seconds of each window of 100 replaces")
    print(
        f"{'store':16} {'100-200':>9} {f'{late[0]}-{late[1]}':>11} {'ratio':>6} "
        f"{'median ratio':>13}"
    )
    worst = worst_median = 0.0
    with tempfile.TemporaryDirectory() as tmp, servers(kinds, Path(tmp)) as found:
        for kind in kinds:
            open_store = opener(kind, Path(tmp), found)
            if open_store is None:
                print(f"{kind:16} skipped: its server could not be started here")
                continue
            store = open_store()
            if kind.startswith("async-"):
                times = asyncio.run(agrow(store, depth))
            else:
                times = grow(store, depth)
                if hasattr(store, "close"):
                    store.close()
            early_s, late_s = sum(times[EARLY[0] : EARLY[1]]), sum(times[late[0] : late[1]])
            ratio = late_s / early_s
            medians = statistics.median(times[late[0] : late[1]]) / statistics.median(
                times[EARLY[0] : EARLY[1]]
            )
            worst, worst_median = max(worst, ratio), max(worst_median, medians)
            print(f"{kind:16} {early_s:9.3f} {late_s:11.3f} {ratio:6.2f} {medians:13.2f}")
    print(f"worst ratio {worst:.2f}, worst median ratio {worst_median:.2f} (goal: at most 1.5)")


if __name__ == "__main__":
    main()
