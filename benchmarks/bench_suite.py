"""The benchmark suite: every case side by side in one run, one JSON, one markdown table.

Run it as::

    python benchmarks/bench_suite.py            # full sizes (tens of minutes)
    python benchmarks/bench_suite.py --quick    # small sizes, a smoke run

Cases (docs/benchmarks.md explains each one and its parameters), one module
each under ``suite/cases/``:

1. ``core``: the core against mellea 0.8.0 (``suite/cases/core/``, also run
   alone by ``bench_core.py``), at N = 10,000 and N = 100,000.
2. ``trim``: LangChain ``trim_messages`` against ``TokenBudgetCompactor`` on
   the same conversations at equal token budgets: time per trim, and how
   often each produces a history the provider would reject.
3. ``counting``: ``ChatContext.token_count`` read after every add, against
   recounting the whole history every turn with the same counter.
4. ``billing``: billed input tokens under prompt caching over a simulated
   1,000-turn agent session: a sliding window against trigger/target
   compaction.
5. ``latency``: one compaction, the model call excluded, on contexts of 1k,
   10k and 100k messages, for each compactor.
6. ``resources``: time and memory (tracemalloc peak) to build a context and to
   load a transcript, at three sizes each, to show they grow linearly.
7. ``hot``: the hot paths of issue 24 (inline window adds, ``Message``
   construction, reading OpenAI messages, span planning on one agent loop, a
   100,000-message compaction with ``ExtractiveBackend``), each against its
   reference in interleaved rounds with the spread shown, and in instruction
   counts under callgrind when valgrind is installed (``suite/cases/hot.py``).

``--merge`` runs the chosen cases into the existing record (the other cases
keep the figures of their own run; each merged case records when it ran).

Every figure that compares two things is a ratio of two measurements taken in
this same process, in this same run. This file is the runner only; it
re-exports the cases' pure functions (the session generator, the cost model,
the prefix computation, the sliding window) for ``tests/test_bench_suite.py``,
which runs them at tiny sizes, so they cannot rot.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by file path (the tests), not run as a script
    sys.path.insert(0, str(HERE))

from suite.cases.billing import (
    Rates,
    Replay,
    Tokens,
    bill,
    case_billing,
    common_prefix,
    compare,
    prefix_hit,
    replay_budget,
    replay_sliding,
    sliding_cut,
)
from suite.cases.core import case_core
from suite.cases.counting import case_counting
from suite.cases.hot import case_hot
from suite.cases.latency import case_latency
from suite.cases.resources import case_resources, write_transcript
from suite.cases.trim import case_trim
from suite.machine import machine
from suite.report import render_markdown
from suite.sessions import agent_session, load_pools, pools_from

__all__ = [
    "CASES",
    "Rates",
    "Replay",
    "Tokens",
    "agent_session",
    "bill",
    "case_billing",
    "case_core",
    "case_counting",
    "case_hot",
    "case_latency",
    "case_resources",
    "case_trim",
    "common_prefix",
    "compare",
    "load_pools",
    "machine",
    "main",
    "pools_from",
    "prefix_hit",
    "render_markdown",
    "replay_budget",
    "replay_sliding",
    "sliding_cut",
    "write_transcript",
]

RESULTS_DIR = HERE / "results"

CASES = ("core", "trim", "counting", "billing", "latency", "resources", "hot")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite, write the JSON record and the markdown tables; return an exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--only", nargs="*", choices=CASES, default=None, help="run only these")
    parser.add_argument("--output", type=Path, default=None, help="JSON file (markdown beside it)")
    parser.add_argument(
        "--render", type=Path, default=None, help="only rewrite the markdown of this JSON record"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="run the chosen cases into the existing JSON record, keeping the others",
    )
    args = parser.parse_args(argv)
    if args.render is not None:
        record = json.loads(args.render.read_text())
        args.render.with_suffix(".md").write_text(render_markdown(record))
        print(f"wrote {args.render.with_suffix('.md')}")
        return 0
    name = "suite-quick" if args.quick else "suite"
    output = args.output or RESULTS_DIR / f"{name}.json"
    chosen = args.only or list(CASES)
    started = time.perf_counter()
    record: dict[str, Any] = {
        "benchmark": "suite",
        "quick": args.quick,
        "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
    }
    if args.merge and output.exists():
        kept = json.loads(output.read_text())
        record = {**kept, "merged": sorted({*kept.get("merged", []), *chosen})}
    print(f"machine: {json.dumps(record['machine'])}", flush=True)
    pools = load_pools()
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "core": lambda: case_core(args.quick),
        "trim": lambda: case_trim(args.quick, pools),
        "counting": lambda: case_counting(args.quick),
        "billing": lambda: case_billing(args.quick, pools),
        "latency": lambda: case_latency(args.quick),
        "resources": lambda: case_resources(args.quick),
        "hot": lambda: case_hot(args.quick),
    }
    for key in chosen:
        print(f"== {key} ...", flush=True)
        t0 = time.perf_counter()
        here = machine()
        ran = {
            "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "quick": args.quick,
            "loadavg_start": here["loadavg_start"],
            "machine": here,
        }
        record[key] = runners[key]()
        seconds = time.perf_counter() - t0
        if args.merge:
            record[key]["ran"] = {**ran, "seconds": seconds}
        print(f"   {key}: {seconds:.1f} s", flush=True)
    if args.merge:
        print(f"merged {chosen} into {output}")
    else:
        record["seconds"] = time.perf_counter() - started
    if not args.merge:
        try:
            record["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        except OSError:
            record["loadavg_end"] = "unknown"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=1) + "\n")
    markdown = render_markdown(record)
    output.with_suffix(".md").write_text(markdown)
    print()
    print(markdown)
    print(f"wrote {output} and {output.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
