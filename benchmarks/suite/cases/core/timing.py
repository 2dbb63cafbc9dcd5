"""The core case's sub-cases, and how one is timed and checked for each library."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .adapters import Lib
from .workload import build_conversation

THRESHOLD_NEVER = 10**9


@dataclass(frozen=True)
class Case:
    """One benchmark case, run the same way for each library.

    Args:
        key: Stable identifier used in the JSON.
        title: Label in the table.
        n: Number of components added per repeat.
        expected_len: Length the final ``as_list()`` must have.
        window: Size of the ``WindowCompactor`` the context carries, if any.
        gate: When set, the window rides inside a never-firing
            ``ThresholdCompactor`` whose ours-side ``measure`` is this value.
        read_each: Whether to call ``as_list()`` after every add.
    """

    key: str
    title: str
    n: int
    expected_len: int
    window: int | None = None
    gate: str | None = None
    read_each: bool = False
    ours_only: bool = False

    def compactor(self, lib: Lib) -> Any:
        """Build this case's compactor for ``lib`` (``None`` for no compactor)."""
        if self.window is None:
            return None
        window = lib.window(self.window)
        if self.gate is None:
            return window
        return lib.threshold(window, THRESHOLD_NEVER, self.gate)


@dataclass
class Result:
    """Samples and checks for one case and one library."""

    times: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def make_cases(quick: bool, large: bool = False) -> list[Case]:
    """Return the cases, at full or quick sizes.

    With ``large``, the cases again at N = 100,000 (10,000 when quick). mellea
    runs those whose adds cost O(1) for it; where an add costs it O(history)
    (a read of the whole history, or its threshold gate's walk), 100,000 adds
    would take it about an hour, so only our side runs and the table says so.
    """
    cases = _cases(quick)
    if not large:
        return cases
    n = 10_000 if quick else 100_000
    big = 100 if quick else 1_000
    return [
        *cases,
        Case("plain_adds_L", "plain adds", n, expected_len=n),
        Case("add_as_list_L", "add + as_list", n, expected_len=n, read_each=True, ours_only=True),
        Case("window_20_L", "WindowCompactor(size=20)", n, expected_len=1 + 20, window=20),
        Case(
            f"window_{big}_L",
            f"WindowCompactor(size={big})",
            n,
            expected_len=1 + big,
            window=big,
        ),
        Case(
            "threshold_never_L",
            "Threshold(Window(20), 1e9)",
            n,
            expected_len=n,
            window=20,
            gate="tokens",
            ours_only=True,
        ),
    ]


def _cases(quick: bool) -> list[Case]:
    n = 1_000 if quick else 10_000
    n_read = 300 if quick else 2_000
    big = 100 if quick else 1_000
    return [
        Case("plain_adds", "plain adds", n, expected_len=n),
        Case("add_as_list", "add + as_list", n_read, expected_len=n_read, read_each=True),
        Case("window_20", "WindowCompactor(size=20)", n, expected_len=1 + 20, window=20),
        Case(f"window_{big}", f"WindowCompactor(size={big})", n, expected_len=1 + big, window=big),
        Case(
            "threshold_never",
            "Threshold(Window(20), 1e9)",
            n,
            expected_len=n,
            window=20,
            gate="tokens",
        ),
        Case(
            "threshold_never_usage",
            "  same, ours measure='usage'",
            n,
            expected_len=n,
            window=20,
            gate="usage",
        ),
    ]


def check_final(lib: Lib, case: Case, ctx: Any, first: Any, gate: Any) -> list[str]:
    """Return what is wrong with the context a repeat ended on (if anything)."""
    items = ctx.as_list()
    problems = []
    if len(items) != case.expected_len:
        problems.append(f"final len(as_list())={len(items)}, expected {case.expected_len}")
    if not items or items[0] is not first:
        problems.append("the system message is not the first component")
    if case.gate is not None and lib.reading(gate, ctx) is None:
        problems.append("the threshold gate had no reading: it never compared anything")
    return problems


def run_once(lib: Lib, case: Case, seed: int) -> tuple[float, list[str]]:
    """Time one repeat of ``case`` for ``lib``; return (seconds, problems)."""
    items = build_conversation(lib, case.n, seed=seed, outputs=case.gate is not None)
    compactor = case.compactor(lib)
    ctx = lib.chat(compactor)
    gc.collect()
    if case.read_each:
        start = time.perf_counter()
        for item in items:
            ctx = ctx.add(item)
            ctx.as_list()
        elapsed = time.perf_counter() - start
    else:
        start = time.perf_counter()
        for item in items:
            ctx = ctx.add(item)
        elapsed = time.perf_counter() - start
    return elapsed, check_final(lib, case, ctx, items[0], compactor)


def run_case(
    libs: Sequence[Lib], case: Case, *, repeats: int, budget: float, seed: int
) -> dict[str, Result]:
    """Repeat ``case`` for every library, interleaved, to ``repeats`` or ``budget``.

    Repeat ``r`` runs each library once before repeat ``r + 1`` starts, so a
    change in machine load during the case falls on both sides alike. A library
    stops repeating once its own samples add up to ``budget`` seconds, or when
    it raises.
    """
    if case.ours_only:
        libs = [lib for lib in libs if lib.name == "ours"]
    results = {lib.name: Result() for lib in libs}
    for r in range(repeats):
        active = [
            lib
            for lib in libs
            if results[lib.name].error is None and sum(results[lib.name].times) < budget
        ]
        if not active:
            break
        for lib in active:
            result = results[lib.name]
            try:
                elapsed, problems = run_once(lib, case, seed=seed * 1_000 + r)
            except Exception as exc:  # report it, and go on with the other cases
                result.error = f"{type(exc).__name__}: {exc}"
                continue
            result.times.append(elapsed)
            result.problems.extend(p for p in problems if p not in result.problems)
    return results
