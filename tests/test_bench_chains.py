"""``benchmarks/chains.py`` at a tiny depth, so the harness cannot silently rot.

No timing is asserted (the ratios live in ``benchmarks/results/chains.*``):
these check that the windows are the replaces they claim to be, each store
kind's twin is a store of its own, and the run's record and page have their shape.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mellea_ctx import Checkpoint, MemoryStore, SQLiteStore

from .helpers import load_benchmark

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chains() -> ModuleType:
    return load_benchmark("chains")


def _depth_of(store: Any) -> int:
    """How many checkpoints deep the stored session's chain is."""
    (checkpoint,) = [c for c in store.load("deep").components if isinstance(c, Checkpoint)]
    depth = 0
    node: Any = checkpoint
    while node is not None:
        depth += 1
        node = next((c for c in node.span if isinstance(c, Checkpoint)), None)
    return depth


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_windows_are_the_early_and_the_late_replaces_of_twin_chains(
    chains: ModuleType, kind: str, tmp_path: Path
) -> None:
    opened: dict[str, Any] = {}

    def open_store(name: str) -> Any:
        assert name not in opened  # one store per chain
        opened[name] = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / f"{name}.db")
        return opened[name]

    times = chains.measure(open_store, 12, 3)
    assert (len(times.early), len(times.late), len(times.sequential_early)) == (3, 3, 3)
    assert all(t > 0 for t in times.early + times.late + times.sequential_early)
    if kind == "sqlite":  # closed by the benchmark; what it left is there to read
        opened = {name: SQLiteStore(tmp_path / f"{name}.db") for name in opened}
    # The twin stopped after the early window (6 replaces); the deep chain went on to 12. The
    # first three replaces had nothing to fold (keep_n=1 keeps the last turn, three turns are
    # needed before anything is summarized), so replace k leaves a chain k - 3 deep.
    assert (_depth_of(opened["twin"]), _depth_of(opened["deep"])) == (6 - 3, 12 - 3)


def test_the_async_face_measures_the_same_windows(chains: ModuleType) -> None:
    opener = chains.opener("async-memory", Path("."), {})
    times = asyncio.run(chains.ameasure(opener, 9, 3))
    assert (len(times.early), len(times.late), len(times.sequential_early)) == (3, 3, 3)


def test_a_chain_shallower_than_three_windows_is_refused(chains: ModuleType) -> None:
    with pytest.raises(ValueError, match="three windows"):
        chains.measure(lambda name: MemoryStore(), 8, 3)


def test_blocks_interleave_the_windows_first_one_then_the_other(chains: ModuleType) -> None:
    twin, deep = object(), object()
    early: list[float] = []
    late: list[float] = []
    order = [c for c, _ in chains._turns(twin, early, deep, late, 5, 2)]
    assert order == [twin, twin, deep, deep, deep, deep, twin, twin, twin, deep]


def test_the_statistics_are_robust_to_one_pause(chains: ModuleType) -> None:
    early = [1.0] * 10
    late = [1.0] * 9 + [100.0]  # one replace hit by a long pause
    row = chains.summary(chains.Times(early, late, early))
    assert row["median"]["ratio"] == 1.0
    assert row["trimmed_mean"]["ratio"] == 1.0
    assert row["sum"]["ratio"] == pytest.approx(10.9)
    assert row["sequential_sum"]["ratio"] == pytest.approx(10.9)


def test_a_run_writes_its_record_and_page(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "chains.py"),
            "--depth=9",
            "--window=3",
            "--rounds=2",
            "--stores=memory,async-memory,sqlite,async-sqlite",
            f"--results={tmp_path}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "worst best-of-rounds median ratio" in done.stdout
    record = json.loads((tmp_path / "chains.json").read_text(encoding="utf-8"))
    kinds = ["memory", "async-memory", "sqlite", "async-sqlite"]
    assert list(record["stores"]) == kinds
    assert (record["early"], record["late"], record["rounds"]) == ([3, 6], [6, 9], 2)
    for row in record["stores"].values():
        assert len(row["rounds"]) == 2
        for round_ in row["rounds"]:
            for name in ("median", "trimmed_mean", "sum", "sequential_sum"):
                assert set(round_[name]) == {"early_ms", "late_ms", "ratio"}
                assert round_[name]["ratio"] > 0
            assert [len(v) for v in round_["replace_seconds"].values()] == [3, 3, 3]
        # The best of the rounds is each window's smallest median, over the rounds.
        best = row["best"]["median"]
        assert best["early_ms"] == min(r["median"]["early_ms"] for r in row["rounds"])
        assert best["late_ms"] == min(r["median"]["late_ms"] for r in row["rounds"])
    page = (tmp_path / "chains.md").read_text(encoding="utf-8")
    rows = [line.split(" | ")[0] for line in page.splitlines() if line.startswith("| ")]
    assert rows == ["| store", *(f"| {kind}" for kind in kinds)]
