"""What preservation costs a corpus compaction: this tree against an earlier one, one run.

    python benchmarks/ledger_cost.py --before /path/to/an/earlier/tree

For each corpus transcript (``$MELLEA_CTX_CORPUS`` or ``../shared/corpus``), its
first 80% (split as ``corpus_loo.py`` splits it) is compacted with
``LLMSummarizeCompactor(default_backend=ExtractiveBackend(), keep_n=0)``, the
summary asked at 5% of the span, with ``preserve_facts`` on (the ledger, the exact
details) and off. The context's token count is taken before the clock starts, as
in a live session whose context was counted add by add. Each tree runs in fresh
processes, alternating with the other (each on ``PYTHONPATH``), ``--rounds``
times, and each keeps its best time per file and setting. Prints a Markdown table:
milliseconds, after/before, and on/off (what preservation costs) for each tree.
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
import json, sys, time
sys.path.append(sys.argv[1])  # benchmarks/ of this tree: the corpus reader and the split
from benchmarks import corpus_loo as L
from mellea_ctx import ChatContext, ExtractiveBackend, LLMSummarizeCompactor
out = {}
for spec in sorted(L._corpus().glob("*.openai.json")):
    name, span = L.load(str(spec))
    head = span[: L.split(span)]
    ctx, body = ChatContext(), ChatContext()
    for component in head:
        ctx = ctx.add(component)
    for component in head[L.prefix_len(head) :]:
        body = body.add(component)
    asked = max(1, int(body.token_count * 0.05))
    ctx.token_count  # counted before the clock
    row = {}
    for preserve in (True, False):
        best = float("inf")
        for _ in range(int(sys.argv[2])):
            compactor = LLMSummarizeCompactor(
                default_backend=ExtractiveBackend(), keep_n=0, preserve_facts=preserve,
                model_options={"max_tokens": asked}, timeout=600,
            )
            started = time.perf_counter()
            compactor.compact(ctx)
            best = min(best, time.perf_counter() - started)
        row["on" if preserve else "off"] = best
    out[name] = row
print(json.dumps(out))
"""


def timed(tree: Path, repeats: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", TIMING, str(HERE.parent), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, dict[str, float]] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2, help="compactions a file, a process")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": HERE.parent}
    best: dict[tuple[str, str, str], float] = {}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            for file, row in timed(tree, args.repeats).items():
                for setting, seconds in row.items():
                    key = (name, file, setting)
                    best[key] = min(best.get(key, seconds), seconds)
    print("| file | before (ms) | after (ms) | after / before | on / off before | on / off after |")
    print("|---|---:|---:|---:|---:|---:|")
    sums = dict.fromkeys(("before on", "after on", "before off", "after off"), 0.0)
    for file in sorted({file for _, file, _ in best}):
        b, a = best["before", file, "on"], best["after", file, "on"]
        b_off, a_off = best["before", file, "off"], best["after", file, "off"]
        for key, value in (("before on", b), ("after on", a), ("before off", b_off)):
            sums[key] += value
        sums["after off"] += a_off
        print(
            f"| {file} | {b * 1000:.0f} | {a * 1000:.0f} | {a / b:.2f} "
            f"| {b / b_off:.2f}x | {a / a_off:.2f}x |"
        )
    b, a = sums["before on"], sums["after on"]
    print(
        f"| all | {b * 1000:.0f} | {a * 1000:.0f} | {a / b:.2f} "
        f"| {b / sums['before off']:.2f}x | {a / sums['after off']:.2f}x |"
    )


if __name__ == "__main__":
    main()
