"""Core benchmark: mellea-ctx against mellea 0.8.0, side by side in one run.

Case 1 of the suite (``bench_suite.py``, run by ``nox -s bench``), which runs
it with the N = 100,000 cases and writes its record into ``suite.json``. On
its own::

    python benchmarks/bench_core.py            # full sizes (a few minutes)
    python benchmarks/bench_core.py --large    # and again at N = 100,000
    python benchmarks/bench_core.py --quick    # small sizes, a smoke test

This file is the runner only; what is measured, and how, is in
``suite/cases/core/`` (its package docstring), the code with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by file path, not run as a script: find ``suite``
    sys.path.insert(0, str(HERE))

from suite.cases.core import run

RESULTS_DIR = HERE / "results"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table, write the JSON; return an exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--large", action="store_true", help="also the cases at N = 100,000")
    parser.add_argument("--repeats", type=int, default=None, help="max repeats per case")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="stop repeating a case once its repeats took this many seconds",
    )
    parser.add_argument("--output", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    output = args.output or RESULTS_DIR / ("core-quick.json" if args.quick else "core.json")
    record = run(quick=args.quick, repeats=args.repeats, budget=args.budget, big=args.large)
    if record is None:
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nwrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
