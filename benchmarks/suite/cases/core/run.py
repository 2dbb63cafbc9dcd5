"""Run the core case: every sub-case for both libraries, the table, the JSON record."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Sequence
from typing import Any

from .adapters import Lib, load_mellea, load_ours
from .floor import bench_encode, load_o200k
from .timing import THRESHOLD_NEVER, Result, make_cases, run_case
from .workload import TEXT_LEN


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _fmt_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.4f}"


def _fmt_us(seconds: float | None, n: int) -> str:
    return "-" if seconds is None else f"{seconds / n * 1e6:.2f}"


def render_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Return a plain-text table with right-aligned columns after the first."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = str(cells[0]).ljust(widths[0])
        rest = (str(c).rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def run(
    *, quick: bool, repeats: int | None, budget: float | None, big: bool
) -> dict[str, Any] | None:
    """Run the cases, print the table, and return the record (``None``: nothing imports)."""
    repeats = repeats or (3 if quick else 5)
    budget = budget if budget is not None else (5.0 if quick else 30.0)
    n_encode = 1_000 if quick else 10_000

    libs: list[Lib] = []
    notes: list[str] = []
    for loader, label in ((load_mellea, "mellea"), (load_ours, "mellea_ctx")):
        loaded = loader()
        if isinstance(loaded, str):
            notes.append(f"{label} is not importable, its column is empty ({loaded})")
        else:
            libs.append(loaded)
    if not libs:
        print("neither mellea nor mellea_ctx imports:\n  " + "\n  ".join(notes))
        return None

    print(f"Python {platform.python_version()} on {platform.platform()}")
    for lib in libs:
        print(f"{lib.name}: {lib.version}")
    for note in notes:
        print(f"NOTE: {note}")
    print(
        f"Each case: up to {repeats} repeats per library (fewer once {budget:g} s "
        "are used), the libraries interleaved; table shows the BEST (minimum) "
        "time; components built before timing, fresh and with unique text per "
        "repeat; gc enabled."
    )
    load_before = _loadavg()
    print(f"Load average (1/5/15 min) at start: {load_before} on {os.cpu_count()} CPUs")
    print(
        "Conversation: 1 system message, then alternating user / assistant "
        f"turns of {TEXT_LEN} characters (Message objects)."
    )
    print(
        "Threshold cases: assistant turns are ModelOutputThunk with usage "
        "(total_tokens grows ~55/turn, never near the threshold of "
        f"{THRESHOLD_NEVER:,}), so the gate reads a figure on every add and never "
        "fires. mellea's gate always reads the newest thunk's usage (found via "
        "ctx.as_list()); ours reads ctx.token_count (exact, one encode per new "
        "component) by default, or the newest usage with measure='usage'. The "
        "mellea column of the two threshold rows runs the same code twice."
    )
    print()

    cases = make_cases(quick, big)
    results: dict[str, dict[str, Result]] = {}
    for seed, case in enumerate(cases, start=1):
        print(f"  running {case.title.strip()} (N={case.n:,}) ...", flush=True)
        results[case.key] = run_case(libs, case, repeats=repeats, budget=budget, seed=seed)

    encoding = load_o200k()
    encode_times: list[float] = []
    if isinstance(encoding, str):
        notes.append(f"tiktoken floor not measured ({encoding})")
        encode_source = None
    else:
        print(f"  running tiktoken o200k_base encode_ordinary (N={n_encode:,}) ...")
        enc, encode_source = encoding
        encode_times = bench_encode(enc, n_encode, repeats=repeats)
    print()

    header = [
        "case",
        "N",
        "mellea s",
        "ours s",
        "mellea/ours",
        "mellea us/add",
        "ours us/add",
        "repeats m/o",
    ]
    rows = []
    problems: list[str] = []
    for case in cases:
        per_lib = results[case.key]
        best = {}
        for name in ("mellea", "ours"):
            res = per_lib.get(name)
            if res is None:
                continue
            if res.error is not None:
                problems.append(f"{case.title} / {name}: raised {res.error}")
            for p in res.problems:
                problems.append(f"{case.title} / {name}: {p}")
            best[name] = res.best if res.times else None
        m, o = best.get("mellea"), best.get("ours")
        ratio = f"{m / o:.1f}x" if m is not None and o is not None else "-"
        reps = "/".join(
            str(len(per_lib[name].times)) if name in per_lib else "-" for name in ("mellea", "ours")
        )
        rows.append(
            [
                case.title,
                f"{case.n:,}",
                _fmt_s(m),
                _fmt_s(o),
                ratio,
                _fmt_us(m, case.n),
                _fmt_us(o, case.n),
                reps,
            ]
        )
    print(render_table(rows, header))
    if encode_times:
        per = min(encode_times) / n_encode * 1e6
        print(
            f"\ntiktoken floor: one o200k_base encode_ordinary of a {TEXT_LEN}-char "
            f"message = {per:.2f} us (best of {len(encode_times)} x {n_encode:,}; "
            f"{encode_source})"
        )
    load_after = _loadavg()
    print(f"Load average at end: {load_after}")
    for note in notes:
        print(f"NOTE: {note}")
    for p in problems:
        print(f"PROBLEM: {p}")

    record = {
        "benchmark": "core",
        "statistic": "min",
        "quick": quick,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {lib.name: lib.version for lib in libs},
        "repeats_max": repeats,
        "budget_s": budget,
        "cpus": os.cpu_count(),
        "loadavg_start": load_before,
        "loadavg_end": load_after,
        "text_len": TEXT_LEN,
        "threshold": THRESHOLD_NEVER,
        "notes": notes,
        "problems": problems,
        "cases": [
            {
                "key": case.key,
                "title": case.title,
                "n": case.n,
                "read_each": case.read_each,
                "window": case.window,
                "threshold_measure_ours": case.gate,
                "assistant_turns": "ModelOutputThunk+usage" if case.gate else "Message",
                "expected_len": case.expected_len,
                "results": {
                    name: {
                        "best_s": res.best if res.times else None,
                        "median_s": res.median if res.times else None,
                        "per_add_us": res.best / case.n * 1e6 if res.times else None,
                        "samples_s": res.times,
                        "problems": res.problems,
                        "error": res.error,
                    }
                    for name, res in results[case.key].items()
                },
                "ratio_mellea_over_ours": (
                    results[case.key]["mellea"].best / results[case.key]["ours"].best
                    if {"mellea", "ours"} <= results[case.key].keys()
                    and results[case.key]["mellea"].times
                    and results[case.key]["ours"].times
                    else None
                ),
            }
            for case in cases
        ],
        "tiktoken_floor": {
            "what": f"o200k_base encode_ordinary of one {TEXT_LEN}-char message",
            "source": encode_source,
            "n": n_encode,
            "best_us": min(encode_times) / n_encode * 1e6 if encode_times else None,
            "median_us": statistics.median(encode_times) / n_encode * 1e6 if encode_times else None,
            "samples_s": encode_times,
        },
    }
    return record


def case_core(quick: bool) -> dict[str, Any]:
    """Run the core sub-cases (N = 10,000 and N = 100,000) and return its record."""
    return dict(run(quick=quick, repeats=None, budget=None, big=True))
