"""Does observability cost anything unconfigured? This tree against an earlier one, one run.

    python benchmarks/observe_overhead.py --before /path/to/checkout/without/telemetry

Runs the same two timings in fresh processes, alternating between the two trees
(each on ``PYTHONPATH``) three times, and keeps each tree's best:

* ``inline adds``: 20,000 ``ChatContext.add`` calls with a
  ``WindowCompactor`` riding inside (the per-message hot path);
* ``summarizing compactions``: 300 ``LLMSummarizeCompactor.compact`` calls
  with a ``ScriptedBackend`` (each emits a record, so each passes the logger's
  level check and the tracer check).

Logging and OpenTelemetry are left unconfigured (``opentelemetry-api`` may be
installed: no tracer provider is set). Prints seconds and after/before ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

TIMING = r"""
import json, time
from mellea_ctx import (ChatContext, LLMSummarizeCompactor, Message, ModelOutputThunk,
                        ScriptedBackend, WindowCompactor)

def inline(n):
    ctx = ChatContext(compactor=WindowCompactor(40))
    messages = [Message("user" if i % 2 == 0 else "assistant", f"message {i} " * 8)
                for i in range(n)]
    started = time.perf_counter()
    for message in messages:
        ctx = ctx.add(message)
    return time.perf_counter() - started

def summarizing(n):
    backend = ScriptedBackend(lambda messages, options: ModelOutputThunk("A short summary."))
    compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=2)
    ctx = ChatContext()
    for i in range(12):
        ctx = ctx.add(Message("user" if i % 2 == 0 else "assistant",
                              f"Message {i}: module_{i}.py and its retry logic, at length."))
    started = time.perf_counter()
    for _ in range(n):
        compactor.compact(ctx)
    return time.perf_counter() - started

inline(500); summarizing(5)  # warm up: imports, the tokenizer, caches
print(json.dumps({"inline": inline(20000), "summarizing": summarizing(300)}))
"""


def timed(tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", TIMING], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": HERE.parent}
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            for case, seconds in timed(tree).items():
                best[name][case] = min(best[name].get(case, seconds), seconds)
    for case, label in (("inline", "20,000 inline adds"), ("summarizing", "300 compactions")):
        before, after = best["before"][case], best["after"][case]
        ratio = after / before
        print(f"{label}: before {before:.3f} s, after {after:.3f} s, after/before {ratio:.3f}")


if __name__ == "__main__":
    main()
