"""Checkpoint chains: the k-th replace costs the same whatever k, on every store, one run.

    python benchmarks/chains.py [--depth 2000] [--window 100] [--rounds 3] [--block 1]
                                [--stores memory,sqlite,...] [--results benchmarks/results]

Each store grows one session a chain ``--depth`` checkpoints deep, as a long
session does: commit a turn, compact with ``LLMSummarizeCompactor(keep_n=1)``
(a scripted model), ``replace`` the dialogue with the result, so every
checkpoint folds in the one before (the first three replaces have nothing
to fold yet, so replace k leaves a chain k - 3 deep). Only the ``replace``
calls are timed, each one on its own. The question is whether replaces
1,900-2,000 of a 2,000-deep chain (the *late* window) cost more than replaces
100-200 (the *early* window); each checkpoint is stored once and referred to
(``mellea_ctx/_sessions/chains.py``), so the ratio should be about 1 (the
goal is at most 1.5). Before that layout every replace rewrote the whole chain
and the ratio grew with the depth.

How it is measured, so that the ratio speaks of the depth and not of the
shared machine's pauses (a window of 100 replaces is 10-50 ms on the fast
stores, and one scheduler pause of a few ms moved its sum by half; in three
runs of the first version of this benchmark Redis's sum ratio was 1.77, 1.24
and 0.89):

* **Twin chains, interleaved windows.** Each store kind opens two stores of
  its own (their own SQLite file, Redis key prefix or PostgreSQL table
  prefix), each holding one session grown the same deterministic way: the
  *deep* one is grown to ``depth - window`` and the *twin* to ``window``.
  Then the two windows run interleaved, one replace of each in turn
  (``--block``: how many of one before the other's; which goes first
  alternates): the twin's replaces ``window``-``2*window`` and the deep
  chain's last ``window``. Each store then holds what a single chain's store
  holds at that point of its growth (the twin's store 100-200 checkpoints, the
  deep one's 1,900-2,000), so a cost that grows with the store's size shows as
  well as one that grows with the session's depth; and a slow spell of the
  machine falls on both windows alike instead of on whichever ran minutes
  later.
* **Rounds.** The whole of it runs ``--rounds`` times (3), every store kind
  once per round, in turn, each round on fresh stores, so each kind's rounds
  are spread over the run.
* **Collector out of the window.** ``gc.collect(); gc.freeze()`` before the
  interleaved windows and ``gc.disable()`` during them (both chains' objects
  are long-lived; a full collection's cost is the process's heap, not a
  store's replace), enabled again after.
* **Robust statistics, every figure shown.** Per window and round: the sum
  (the original figure), the 10%-trimmed mean and the median of the 100
  individually timed replaces, and the ratio late / early of each. The
  headline is the *best-of-rounds median ratio*: each window's smallest median
  over the rounds, late over early (as ``timeit`` takes the best of its
  repeats: a window's median can only be raised by the machine, by a spell
  covering half its replaces, and the best round is the one the machine
  disturbed least). Shown beside it: the same with trimmed means, every
  round's median and sum ratios, and the *sequential* sum ratio (the deep
  chain's own replaces 100-200, timed while it grew, minutes before its late
  window, against its late window: what this benchmark first reported).
  ``--results`` keeps every replace's seconds. A median speaks of the typical
  replace: a cost paid by fewer than half of them (say every tenth rewriting
  the chain) would leave it alone, which is what the sums beside it are for.

Checked not to be vacuous: with deliberately depth-proportional stores (every
write encoded in full, as before the layout; a memory store that encodes each
new checkpoint's whole record, or only walks its whole chain, on every
replace), the same run shows the growth well above 1.5 (docs/benchmarks.md,
"Checkpoint chains").

Redis and PostgreSQL run as throwaway servers of this run's own (the tests'
helpers, ``tests/_redis.py`` and ``tests/_postgres.py``). PostgreSQL runs with
``fsync=off``, as in the tests: what is measured is the work that could grow
with the depth, and a flush per commit (the same at any depth, several
milliseconds on a shared disk, and noisy) would drown it; SQLite keeps its
``synchronous=FULL``. A store whose server cannot be started is skipped, saying so.
The async stores are driven by ``asyncio`` (``Session.areplace``). With
``--results DIR`` the run is written to ``DIR/chains.json`` (every replace's
seconds included) and ``DIR/chains.md``; the committed run is
``benchmarks/results/chains.*``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

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
GOAL = 1.5
TRIM = 0.1
BLOCK = 1
ROUNDS = 3


def _compactor() -> LLMSummarizeCompactor:
    backend = ScriptedBackend(lambda messages, options: "The user asked; the agent answered.")
    return LLMSummarizeCompactor(default_backend=backend, keep_n=1)


def _turn(i: int) -> list[Any]:
    return [Message("user", f"question {i}"), ModelOutputThunk(f"answer {i}")]


class Chain:
    """One session of one store, grown a checkpoint per step; each step's replace is timed."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.compactor = _compactor()
        self.session: Any = None
        self.steps = 0

    def step(self) -> float:
        """Commit a turn, compact, replace; the seconds of the replace (sync stores)."""
        if self.session is None:
            self.session = SessionMemory(self.store).open("deep")
        session = self.session.commit(_turn(self.steps))
        compacted = self.compactor.compact(session.context(system="Be brief."))
        started = time.perf_counter()
        self.session = session.replace(compacted)
        elapsed = time.perf_counter() - started
        self.steps += 1
        return elapsed

    async def astep(self) -> float:
        """:meth:`step` through the async face."""
        if self.session is None:
            self.session = await SessionMemory(self.store).aopen("deep")
        session = await self.session.acommit(_turn(self.steps))
        compacted = await self.compactor.acompact(session.context(system="Be brief."))
        started = time.perf_counter()
        self.session = await session.areplace(compacted)
        elapsed = time.perf_counter() - started
        self.steps += 1
        return elapsed


@attrs.frozen
class Times:
    """Every timed replace of one store kind's run, in seconds."""

    early: list[float]  # the twin's replaces window..2*window, interleaved with ``late``
    late: list[float]  # the deep chain's last ``window`` replaces
    sequential_early: list[float]  # the deep chain's own replaces window..2*window


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect and freeze what lives now, and keep the collector off inside the block."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def _turns(
    twin: Chain, early: list[float], deep: Chain, late: list[float], window: int, block: int
) -> Iterator[tuple[Chain, list[float]]]:
    """Whose replace comes next: blocks of ``block`` replaces of each chain in turn."""
    pair = [(twin, early), (deep, late)]
    for start in range(0, window, block):
        for chain, out in pair if (start // block) % 2 == 0 else pair[::-1]:
            for _ in range(min(block, window - start)):
                yield chain, out


def _check(depth: int, window: int) -> None:
    if window < 1 or depth < 3 * window:
        raise ValueError(f"depth {depth} must be at least three windows of {window}")


def measure(open_store: Callable[[str], Any], depth: int, window: int, block: int = BLOCK) -> Times:
    """Grow the deep chain and its twin, then time their windows interleaved (sync stores).

    ``open_store(name)`` opens a fresh store of its own for ``"deep"`` and for ``"twin"``.
    """
    _check(depth, window)
    deep, twin = Chain(open_store("deep")), Chain(open_store("twin"))
    grown = [deep.step() for _ in range(depth - window)]
    for _ in range(window):
        twin.step()
    early: list[float] = []
    late: list[float] = []
    with quiet_gc():
        for chain, out in _turns(twin, early, deep, late, window, block):
            out.append(chain.step())
    for store in (deep.store, twin.store):
        if hasattr(store, "close"):
            store.close()
    return Times(early, late, grown[window : 2 * window])


async def ameasure(
    open_store: Callable[[str], Any], depth: int, window: int, block: int = BLOCK
) -> Times:
    """:func:`measure` through the async face."""
    _check(depth, window)
    deep, twin = Chain(open_store("deep")), Chain(open_store("twin"))
    grown = [await deep.astep() for _ in range(depth - window)]
    for _ in range(window):
        await twin.astep()
    early: list[float] = []
    late: list[float] = []
    with quiet_gc():
        for chain, out in _turns(twin, early, deep, late, window, block):
            out.append(await chain.astep())
    for store in (deep.store, twin.store):
        if hasattr(store, "aclose"):
            await store.aclose()
    return Times(early, late, grown[window : 2 * window])


def trimmed_mean(values: list[float], cut: float = TRIM) -> float:
    """The mean without the lowest and the highest ``cut`` of the values."""
    ordered = sorted(values)
    k = int(len(ordered) * cut)
    kept = ordered[k : len(ordered) - k] or ordered
    return statistics.fmean(kept)


def summary(times: Times) -> dict[str, Any]:
    """The windows' figures (milliseconds) and the ratios late / early."""
    stats: dict[str, Callable[[list[float]], float]] = {
        "sum": sum,
        "trimmed_mean": trimmed_mean,
        "median": statistics.median,
    }
    row: dict[str, Any] = {}
    for name, stat in stats.items():
        early, late = stat(times.early), stat(times.late)
        row[name] = {
            "early_ms": round(early * 1000, 4),
            "late_ms": round(late * 1000, 4),
            "ratio": round(late / early, 3),
        }
    row["sequential_sum"] = {
        "early_ms": round(sum(times.sequential_early) * 1000, 4),
        "late_ms": round(sum(times.late) * 1000, 4),
        "ratio": round(sum(times.late) / sum(times.sequential_early), 3),
    }
    return row


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


def opener(kind: str, workdir: Path, found: dict[str, str]) -> Callable[[str], Any] | None:
    """How to open a fresh store of ``kind`` by name (``None`` when its server is not there).

    Each name gets a store of its own: its own SQLite file, Redis key prefix or
    PostgreSQL table prefix (a memory store is its own anyway).
    """
    base = kind.removeprefix("async-")
    if base in ("redis", "postgres") and base not in found:
        return None
    tag = kind.replace("-", "_")

    def open_store(name: str) -> Any:
        path = workdir / f"{tag}_{name}.db"
        kinds: dict[str, Callable[[], Any]] = {
            "memory": MemoryStore,
            "async-memory": lambda: as_async_store(MemoryStore()),
            "sqlite": lambda: SQLiteStore(path),
            "async-sqlite": lambda: AsyncSQLiteStore(path),
            "redis": lambda: RedisStore(found["redis"], prefix=f"{tag}_{name}:"),
            "async-redis": lambda: AsyncRedisStore(found["redis"], prefix=f"{tag}_{name}:"),
            "postgres": lambda: PostgresStore(found["postgres"], table_prefix=f"{tag}_{name}"),
            "async-postgres": lambda: AsyncPostgresStore(
                found["postgres"], table_prefix=f"{tag}_{name}"
            ),
        }
        return kinds[kind]()

    return open_store


def best_of(rounds: list[Times]) -> dict[str, Any]:
    """Each window's smallest median (and trimmed mean) over the rounds, and their ratio."""
    best: dict[str, Any] = {}
    for name, stat in (("median", statistics.median), ("trimmed_mean", trimmed_mean)):
        early = min(stat(t.early) for t in rounds)
        late = min(stat(t.late) for t in rounds)
        best[name] = {
            "early_ms": round(early * 1000, 4),
            "late_ms": round(late * 1000, 4),
            "ratio": round(late / early, 3),
        }
    return best


def run(
    kinds: list[str], depth: int, window: int, block: int = BLOCK, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Measure every store kind ``rounds`` times, the kinds in turn each round; the record."""
    record: dict[str, Any] = {
        "benchmark": "benchmarks/chains.py",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "depth": depth,
        "window": window,
        "block": block,
        "rounds": rounds,
        "early": [window, 2 * window],
        "late": [depth - window, depth],
        "goal": f"best-of-rounds median ratio late / early at most {GOAL}",
        "stores": {},
        "skipped": {},
    }
    measured: dict[str, list[Times]] = {}
    with tempfile.TemporaryDirectory() as tmp, servers(kinds, Path(tmp)) as found:
        for round_ in range(rounds):
            for kind in kinds:
                open_kind = opener(kind, Path(tmp), found)
                if open_kind is None:
                    if kind not in record["skipped"]:
                        record["skipped"][kind] = "its server could not be started here"
                        print(f"{kind:16} skipped: its server could not be started here")
                    continue

                def open_store(name: str, open_kind: Any = open_kind, r: int = round_) -> Any:
                    return open_kind(f"{name}{r}")

                started = time.perf_counter()
                if kind.startswith("async-"):
                    times = asyncio.run(ameasure(open_store, depth, window, block))
                else:
                    times = measure(open_store, depth, window, block)
                row = summary(times)
                row["seconds"] = round(time.perf_counter() - started, 1)
                row["replace_seconds"] = {
                    "early": [round(t, 7) for t in times.early],
                    "late": [round(t, 7) for t in times.late],
                    "sequential_early": [round(t, 7) for t in times.sequential_early],
                }
                measured.setdefault(kind, []).append(times)
                record["stores"].setdefault(kind, {"rounds": []})["rounds"].append(row)
                print(f"round {round_ + 1} {_round_line(kind, row)}", flush=True)
    record["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    for kind, rows in record["stores"].items():
        rows["best"] = best_of(measured[kind])
    stores = record["stores"].values()
    record["worst"] = {
        "best_median": max((r["best"]["median"]["ratio"] for r in stores), default=None),
        "best_trimmed_mean": max(
            (r["best"]["trimmed_mean"]["ratio"] for r in stores), default=None
        ),
        **{
            f"round_{name}": max(
                (x[name]["ratio"] for r in stores for x in r["rounds"]), default=None
            )
            for name in ("median", "sum", "sequential_sum")
        },
    }
    return record


HEADER = (
    f"{'store':16} {'early ms':>9} {'late ms':>9} {'median':>7} {'trimmed':>8}   "
    "rounds' median / sum / sequential sum ratios"
)


def _ratios(row: dict[str, Any], name: str) -> str:
    return "/".join(f"{r[name]['ratio']:.2f}" for r in row["rounds"])


def _round_line(kind: str, row: dict[str, Any]) -> str:
    return (
        f"{kind:16} median {row['median']['early_ms']:.3f} -> {row['median']['late_ms']:.3f} ms"
        f" ({row['median']['ratio']:.2f}), trimmed {row['trimmed_mean']['ratio']:.2f}, "
        f"sum {row['sum']['ratio']:.2f}, sequential sum {row['sequential_sum']['ratio']:.2f}"
    )


def _line(kind: str, row: dict[str, Any]) -> str:
    best = row["best"]
    return (
        f"{kind:16} {best['median']['early_ms']:9.3f} {best['median']['late_ms']:9.3f} "
        f"{best['median']['ratio']:7.2f} {best['trimmed_mean']['ratio']:8.2f}   "
        f"{_ratios(row, 'median')}  {_ratios(row, 'sum')}  {_ratios(row, 'sequential_sum')}"
    )


def markdown(record: dict[str, Any]) -> str:
    """The run as the page ``benchmarks/results/chains.md``."""
    early, late = record["early"], record["late"]
    machine = record["machine"]
    lines = [
        "# Checkpoint chains: replaces late in a deep chain against early ones",
        "",
        f"Generated by `benchmarks/chains.py` (method in its docstring), one run started "
        f"{record['started']}: on every store, {record['rounds']} rounds of a chain "
        f"{record['depth']:,} checkpoints deep and its twin; replaces {late[0]:,}-{late[1]:,} "
        f"(late) against replaces {early[0]}-{early[1]} (early, the twin's, timed interleaved "
        f"with the late ones in blocks of {record['block']}), each replace timed on its own. "
        f"Ratios are late / early. *Best*: each window's smallest median (trimmed mean) over "
        f"the rounds; the goal is a best median ratio of at most {GOAL}. "
        f"{machine['cpus']} CPUs shared with other jobs (load average "
        f"{machine['load_average_at_start'][0]} at the start, "
        f"{machine['load_average_at_end'][0]} at the end), Python {machine['python']}.",
        "",
        "| store | early ms (best median) | late ms (best median) | best median ratio "
        "| best trimmed-mean ratio | rounds' median ratios | rounds' sum ratios "
        "| rounds' sequential sum ratios | goal met |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for kind, row in record["stores"].items():
        best = row["best"]
        met = "yes" if best["median"]["ratio"] <= GOAL else "NO"
        lines.append(
            f"| {kind} | {best['median']['early_ms']:.3f} | {best['median']['late_ms']:.3f} "
            f"| {best['median']['ratio']:.2f} | {best['trimmed_mean']['ratio']:.2f} "
            f"| {_ratios(row, 'median')} | {_ratios(row, 'sum')} "
            f"| {_ratios(row, 'sequential_sum')} | {met} |"
        )
    for kind, why in record["skipped"].items():
        lines.append(f"| {kind} | skipped: {why} | | | | | | | |")
    lines += [
        "",
        "*Trimmed mean*: without the fastest and the slowest 10% of the window's replaces. "
        "*Sum*: the window's total, as this benchmark first reported it. *Sequential sum*: the "
        f"deep chain's own replaces {early[0]}-{early[1]}, timed while it grew (a minute or "
        "more before its late window), against its late window: what a single chain's sums "
        "say, kept to show what the machine's pauses do to them.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=2000)
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--block", type=int, default=BLOCK)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--results", type=Path, help="write chains.json and chains.md here")
    args = parser.parse_args()
    depth, window = args.depth, args.window
    print(
        f"chains {depth:,} deep, {args.rounds} rounds: replaces {window}-{2 * window} (a twin "
        f"chain's, interleaved) against {depth - window:,}-{depth:,}; ratios late / early",
        flush=True,
    )
    record = run(args.stores.split(","), depth, window, args.block, args.rounds)
    print(HEADER)
    for kind, row in record["stores"].items():
        print(_line(kind, row))
    worst = record["worst"]
    print(
        f"worst best-of-rounds median ratio {worst['best_median']} (goal: at most {GOAL}), "
        f"trimmed mean {worst['best_trimmed_mean']}; worst of any round: median "
        f"{worst['round_median']}, sum {worst['round_sum']}, "
        f"sequential sum {worst['round_sequential_sum']}"
    )
    if args.results is not None:
        args.results.mkdir(parents=True, exist_ok=True)
        (args.results / "chains.json").write_text(json.dumps(record, indent=1) + "\n")
        (args.results / "chains.md").write_text(markdown(record), encoding="utf-8")


if __name__ == "__main__":
    main()
