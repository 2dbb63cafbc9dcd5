"""Two revisions of mellea-ctx side by side in one run: the core's hot paths, head over base.

    python benchmarks/revisions.py [--base 31ee794] [--head REV] [--rounds 9] [--quick]
                                   [--cases plain_adds,window_20,...] [--results DIR]

The base (by default 31ee794, the last commit before the consolidation of
issue 20) is checked out with ``git worktree add --detach`` into a folder
under the system's temporary directory, or that folder is reused when it is
already a checkout of that commit (``--base-tree PATH`` names a tree to use
instead). The head is this working tree, or ``--head REV`` checked out the
same way. One worker process runs per tree, each the same timing program
(``benchmarks/revision_cases.py``, public API only) with ``PYTHONPATH`` set to
its tree; the run checks that each imported ``mellea_ctx`` from its own tree.

How it is measured, so that a ratio speaks of the code and not of the shared
machine's load:

* **Interleaved, paired rounds.** In each round every case is timed once on
  each side, one right after the other (ABAB..., which side goes first
  alternating from round to round), on the same inputs (the round's seed), so
  a slow spell of the machine falls on both alike. A warm-up round at quick
  size comes first and is not recorded.
* **Fresh inputs per sample.** Each sample's inputs are built before its
  clock starts, with text unique to its seed (see ``revision_cases.py``).
* **Medians and spread.** Per case and side: the median of the rounds, the
  interquartile range and the spread ((max - min) / median); the ratio is the
  head's median over the base's, shown with the range of the per-round
  (paired) ratios. A case is *slower* when the ratio is above 1.05 and the
  head's interquartile range lies wholly above the base's (*faster* the
  mirror of it); otherwise the two are the same within the noise.
* **Same result.** Each sample returns what it computed (a length, a token
  count); the table says whether the two revisions computed the same thing
  (a behaviour change between them shows there, not as a timing).
* **Instructions.** Where valgrind is installed, each case's work is also
  run once per revision under callgrind at the quick size, counting only the
  work (``--toggle-collect`` on the ``operator.call`` around it): a count the
  load does not move (``--no-instructions`` skips it).
* ``import``: ``import mellea_ctx`` in a fresh process, once per side per
  round; ``import_names``: the same and reading three names from it (the
  face imports its layers on first use since issue 20).

With ``--results DIR`` (the default is ``benchmarks/results``) the run is
written to ``DIR/revisions.json`` (every sample) and ``DIR/revisions.md``
(``--name`` for another name; ``revisions-quick.*`` for ``--quick``, which
are not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CASES_FILE = HERE / "revision_cases.py"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from revision_cases import BY_KEY  # noqa: E402 (the timing program; no mellea_ctx)
from suite import instructions  # noqa: E402

DEFAULT_BASE = "31ee794"
#: Above this head/base ratio, with the interquartile ranges apart, a case is slower.
NOISE = 0.05
#: The cases the driver times itself, in fresh processes: ``import mellea_ctx`` (and names).
IMPORTS = {
    "import": ("import mellea_ctx (fresh process)", ()),
    "import_names": ("  and read ChatContext, Message, TokenBudgetCompactor", ("--names",)),
}


def git(*args: str, cwd: Path = REPO) -> str:
    """The output of ``git args`` in ``cwd``, stripped."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def checkout(rev: str, repo: Path = REPO) -> tuple[Path, str]:
    """A detached worktree of ``rev`` under the temporary directory, reused when present.

    Returns the tree and the full commit id.
    """
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=repo)
    path = Path(tempfile.gettempdir()) / "mellea-ctx-revisions" / sha[:12]
    if path.is_dir():
        if git("rev-parse", "HEAD", cwd=path) == sha:
            return path, sha
        msg = f"{path} exists and is not a checkout of {sha}; remove it and run again"
        raise SystemExit(msg)
    git("worktree", "prune", cwd=repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "--detach", str(path), sha, cwd=repo)
    return path, sha


def describe(tree: Path) -> str:
    """The tree's commit, short, with ``+changes`` when its working tree differs from it."""
    sha = git("rev-parse", "--short", "HEAD", cwd=tree)
    dirty = git("status", "--porcelain", "--untracked-files=no", cwd=tree)
    return f"{sha}+changes" if dirty else sha


class Worker:
    """One long-lived process of the timing program, importing ``mellea_ctx`` from ``tree``."""

    def __init__(self, name: str, tree: Path) -> None:
        self.name, self.tree = name, tree
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
        self._process = subprocess.Popen(
            [sys.executable, str(CASES_FILE), "--worker"],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            self.about = self.ask({"about": True})
        except RuntimeError:
            self.close()
            raise
        imported = Path(self.about["file"]).resolve()
        if not imported.is_relative_to(tree.resolve()):
            self.close()
            msg = f"{name}: mellea_ctx was imported from {imported}, not from {tree}"
            raise SystemExit(msg)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the reply."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            line = ""
        else:
            line = process.stdout.readline()
        if not line:
            msg = f"{self.name}: the timing program stopped (exit {process.wait()})"
            raise RuntimeError(msg)
        reply: dict[str, Any] = json.loads(line)
        return reply

    def import_seconds(self, flags: Sequence[str]) -> float:
        """``import mellea_ctx`` from this tree, in a fresh process (``flags``: see IMPORTS)."""
        env = {**os.environ, "PYTHONPATH": str(self.tree), "PYTHONHASHSEED": "0"}
        done = subprocess.run(
            [sys.executable, str(CASES_FILE), "--import-time", *flags],
            cwd=self.tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds: float = json.loads(done.stdout)["seconds"]
        return seconds

    def close(self) -> None:
        """End the process (its stdin closed, it returns) and close its pipes."""
        process = self._process
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=60)
        if process.stdout is not None:
            process.stdout.close()


def sizes(keys: Sequence[str], quick: bool) -> dict[str, int]:
    """Each case's size (``import`` counts one import)."""
    field = "quick" if quick else "n"
    return {key: 1 if key in IMPORTS else getattr(BY_KEY[key], field) for key in keys}


def sample(worker: Worker, key: str, n: int, seed: int) -> dict[str, Any]:
    """One sample of case ``key`` on ``worker``."""
    if key in IMPORTS:
        return {"seconds": worker.import_seconds(IMPORTS[key][1]), "check": None}
    return worker.ask({"case": key, "n": n, "seed": seed})


def rounds_of(
    sides: Sequence[Worker],
    keys: Sequence[str],
    n: dict[str, int],
    rounds: int,
    warm: dict[str, int],
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every case once per side per round, the sides in turn, alternating who goes first."""
    for key in keys:  # the warm-up: first calls, lazy imports, caches; not recorded
        for side in sides:
            sample(side, key, warm[key], seed=0)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        key: {side.name: [] for side in sides} for key in keys
    }
    for r in range(rounds):
        order = sides if r % 2 == 0 else list(reversed(sides))
        for key in keys:
            for side in order:
                samples[key][side.name].append(sample(side, key, n[key], seed=1_000 + r))
    return samples


def count_instructions(
    trees: dict[str, Path], keys: Sequence[str], n: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """Each case's work once per tree under callgrind, at size ``n``: instructions per op.

    Two at a time (each is one process, mostly valgrind's start-up); ``{}``
    with the reason when valgrind cannot run here.
    """
    why = instructions.unavailable()
    if why is not None:
        return {key: {"note": why} for key in keys if key not in IMPORTS}
    counted = [key for key in keys if key not in IMPORTS and not BY_KEY[key].threaded]
    jobs = [(key, side) for key in counted for side in trees]

    def one(job: tuple[str, str]) -> int | None:
        key, side = job
        command = [sys.executable, str(CASES_FILE), "--count", key, "-n", str(n[key])]
        return instructions.callgrind(command, env={"PYTHONPATH": str(trees[side])})

    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(one, jobs))
    thread = "not counted: part of the work runs in a worker thread, which callgrind skips"
    out: dict[str, dict[str, Any]] = {
        key: {"note": thread} for key in keys if key in BY_KEY and BY_KEY[key].threaded
    }
    for (key, side), value in zip(jobs, found, strict=True):
        out.setdefault(key, {"n": n[key]})[side] = value
    for counts in out.values():
        if counts.get("base") and counts.get("head"):
            counts["ratio"] = counts["head"] / counts["base"]
    return out


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """The first and third quartiles (the values themselves below four samples)."""
    if len(values) < 4:
        return min(values), max(values)
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def side_summary(times: Sequence[float], n: int) -> dict[str, Any]:
    """Median, quartiles, spread and per-operation time of one side's samples."""
    median = statistics.median(times)
    q1, q3 = quartiles(times)
    return {
        "median_s": median,
        "q1_s": q1,
        "q3_s": q3,
        "min_s": min(times),
        "max_s": max(times),
        "spread": (max(times) - min(times)) / median if median else 0.0,
        "per_op_us": median / n * 1e6,
        "samples_s": list(times),
    }


def compare(
    base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]], n: int
) -> dict[str, Any]:
    """One case's record: each side's summary, the ratio, its paired range, the verdict."""
    b = side_summary([s["seconds"] for s in base], n)
    h = side_summary([s["seconds"] for s in head], n)
    paired = [y["seconds"] / x["seconds"] for x, y in zip(base, head, strict=True)]
    ratio = h["median_s"] / b["median_s"]
    if ratio > 1 + NOISE and h["q1_s"] > b["q3_s"]:
        verdict = "slower"
    elif ratio < 1 - NOISE and h["q3_s"] < b["q1_s"]:
        verdict = "faster"
    else:
        verdict = "same"
    same = all(x["check"] == y["check"] for x, y in zip(base, head, strict=True))
    return {
        "n": n,
        "base": b,
        "head": h,
        "ratio": ratio,
        "paired_min": min(paired),
        "paired_max": max(paired),
        "verdict": verdict,
        "same_result": same,
        "checks": {"base": base[-1]["check"], "head": head[-1]["check"]},
    }


def title(key: str) -> str:
    return IMPORTS[key][0] if key in IMPORTS else BY_KEY[key].title


def _us(seconds: float, n: int) -> str:
    value = seconds / n * 1e6
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _instructions(case: dict[str, Any]) -> str:
    counts = case.get("instructions", {})
    if "ratio" not in counts:
        return "-"
    per_op = counts["head"] / counts["n"]
    return f"{counts['ratio']:.2f} ({per_op:,.0f}/op)"


def render(record: dict[str, Any]) -> str:
    """The markdown table of a run."""
    base, head = record["base"], record["head"]
    lines = [
        f"Base `{base['revision']}`, head `{head['revision']}`; {record['rounds']} interleaved "
        f"rounds, {record['created']}, {record['machine']['cpu']} ({record['machine']['cores']} "
        f"cores), Python {record['machine']['python']}, load average "
        f"{record['machine']['loadavg_start']} at the start, {record['loadavg_end']} at the end.",
        "",
        "| case | n | base µs/op | head µs/op | head / base | per-round range "
        "| spread base / head | verdict | same result | instructions head / base |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for key, case in record["cases"].items():
        n, b, h = case["n"], case["base"], case["head"]
        lines.append(
            f"| {title(key)} | {n:,} | {_us(b['median_s'], n)} | {_us(h['median_s'], n)} "
            f"| {case['ratio']:.2f} | {case['paired_min']:.2f}-{case['paired_max']:.2f} "
            f"| {b['spread']:.0%} / {h['spread']:.0%} | {case['verdict']} "
            f"| {'yes' if case['same_result'] else 'no'} | {_instructions(case)} |"
        )
    lines += [
        "",
        "µs/op: the median sample over n (n adds, calls, messages or components; one "
        "compaction for the token-budget rows, one import for the last two). "
        f"Verdict: slower or faster when the ratio is more than {NOISE:.0%} from 1 and the "
        "interquartile ranges of the two sides do not overlap; otherwise the same within "
        "the noise. Same result: both revisions returned the same check value (a length, "
        "a token count) in every round. Instructions: the work's instructions under "
        "callgrind (valgrind), which the load does not move, counted once per revision at "
        "the quick size; the head's instructions per op in brackets (not for the "
        "token-budget rows: their summary runs in a worker thread, which the count skips).",
    ]
    return "\n".join(lines) + "\n"


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def machine() -> dict[str, Any]:
    model = platform.processor() or "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_start": loadavg(),
    }


def where(tree: Path, about: dict[str, Any]) -> dict[str, str]:
    """The tree (``.`` for this repository) and the imported file, relative to the tree.

    A committed record names no path of the machine it ran on.
    """
    tree = tree.resolve()
    imported = Path(about["file"]).resolve().relative_to(tree)
    return {"tree": "." if tree == REPO.resolve() else str(tree), "file": str(imported)}


def run(
    base_tree: Path,
    head_tree: Path,
    *,
    keys: Sequence[str],
    rounds: int,
    quick: bool,
    labels: tuple[str, str],
    counted: bool = True,
) -> dict[str, Any]:
    """Time ``keys`` on both trees (and count their instructions) and return the record."""
    n = sizes(keys, quick)
    warm = sizes(keys, True)
    started = time.perf_counter()
    record: dict[str, Any] = {
        "benchmark": "revisions",
        "quick": quick,
        "rounds": rounds,
        "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
    }
    sides = [Worker("base", base_tree), Worker("head", head_tree)]
    try:
        samples = rounds_of(sides, keys, n, rounds, warm)
    finally:
        for side in sides:
            side.close()
    for side, label in zip(sides, labels, strict=True):
        record[side.name] = {"revision": label, **side.about, **where(side.tree, side.about)}
    record["cases"] = {key: compare(s["base"], s["head"], n[key]) for key, s in samples.items()}
    if counted:
        trees = {"base": base_tree, "head": head_tree}
        for key, counts in count_instructions(trees, keys, warm).items():
            record["cases"][key]["instructions"] = counts
    record["seconds"] = time.perf_counter() - started
    record["loadavg_end"] = loadavg()
    return record


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="the base revision (31ee794)")
    parser.add_argument("--base-tree", type=Path, help="a tree to use as the base instead")
    parser.add_argument("--head", help="a revision for the head (default: this working tree)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (9; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    every = ",".join([*BY_KEY, *IMPORTS])
    parser.add_argument("--cases", default=every, help=f"comma-separated, of {every}")
    parser.add_argument("--results", type=Path, default=HERE / "results", help="where to write")
    parser.add_argument("--name", default="revisions", help="the files' name (revisions)")
    parser.add_argument(
        "--no-instructions", action="store_true", help="skip the callgrind counts (minutes)"
    )
    args = parser.parse_args(argv)
    keys = [key for key in args.cases.split(",") if key]
    unknown = [key for key in keys if key not in IMPORTS and key not in BY_KEY]
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {every}")
    if args.base_tree is not None:
        base_tree, base_label = args.base_tree.resolve(), describe(args.base_tree)
    else:
        base_tree, sha = checkout(args.base)
        base_label = sha[:7]
    if args.head is not None:
        head_tree, sha = checkout(args.head)
        head_label = sha[:7]
    else:
        head_tree, head_label = REPO, describe(REPO)
    rounds = args.rounds or (3 if args.quick else 9)
    record = run(
        base_tree,
        head_tree,
        keys=keys,
        rounds=rounds,
        quick=args.quick,
        labels=(base_label, head_label),
        counted=not args.no_instructions,
    )
    text = render(record)
    print(text)
    if args.results is not None:
        name = f"{args.name}-quick" if args.quick else args.name
        args.results.mkdir(parents=True, exist_ok=True)
        (args.results / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
        (args.results / f"{name}.md").write_text(text)
    return record


if __name__ == "__main__":
    main()
