"""Case 6: resource bounds.

Time and memory (tracemalloc peak) to build a context and to load a
transcript, at three sizes each, to show they grow linearly; and one
transcript loaded ten times over with every result kept alive.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mellea_ctx import ChatContext, Component, Message, load_conversation

from ..sessions import synthetic_session


def measure(work: Callable[[], Any], repeats: int = 3) -> tuple[float, float, int]:
    """Return ``(seconds, seconds with the collector off, peak bytes)`` of ``work``.

    Times are the best of ``repeats`` untraced runs, with CPython's cycle
    collector on (as programs run) and then off (the library's own work);
    the peak comes from one more run under tracemalloc, not timed.
    """
    times: dict[bool, list[float]] = {True: [], False: []}
    for collector in (True, False):
        for _ in range(repeats):
            gc.collect()
            if not collector:
                gc.disable()
            try:
                start = time.perf_counter()
                kept = work()
                times[collector].append(time.perf_counter() - start)
            finally:
                gc.enable()
            del kept
    gc.collect()
    tracemalloc.start()
    kept = work()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return min(times[True]), min(times[False]), peak


def write_transcript(path: Path, megabytes: float, *, seed: int) -> int:
    """Write an OpenAI transcript of about ``megabytes`` MB to ``path``; return its length."""
    target = int(megabytes * 1_000_000)
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        f.write("[\n")
        size, i = 2, 0
        while size < target:
            items = synthetic_session(3, seed=seed + i, text_len=rng.randrange(200, 900))[1:]
            for item in items:
                record = {"role": item.role, "content": item.content}
                if item.tool_calls:
                    record["tool_calls"] = [
                        {
                            "id": t.id,
                            "type": "function",
                            "function": {"name": t.name, "arguments": t.arguments},
                        }
                        for t in item.tool_calls
                    ]
                if item.tool_call_id:
                    record["tool_call_id"] = item.tool_call_id
                line = ("" if i == 0 else ",\n") + json.dumps(record)
                f.write(line)
                size += len(line)
                i += 1
        f.write("\n]\n")
    return i


def case_resources(
    quick: bool,
    *,
    build_sizes: Sequence[int] | None = None,
    mb_sizes: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Build contexts and load transcripts at three sizes; report per-unit costs."""
    build_sizes = build_sizes or ((2_000, 6_000, 20_000) if quick else (10_000, 30_000, 100_000))
    mb_sizes = mb_sizes or ((1.0, 3.0, 5.0) if quick else (5.0, 15.0, 50.0))
    build = []
    for n in build_sizes:
        texts = [c.content for c in synthetic_session(n, seed=600 + n)]

        def work(texts: list[str] = texts) -> ChatContext:
            ctx = ChatContext()
            for i, text in enumerate(texts):
                ctx = ctx.add(Message("user" if i % 2 else "assistant", text))
            return ctx

        seconds, no_gc, peak = measure(work)
        build.append(
            {
                "messages": n,
                "seconds": seconds,
                "seconds_gc_off": no_gc,
                "peak_bytes": peak,
                "us_per_message": seconds / n * 1e6,
                "us_per_message_gc_off": no_gc / n * 1e6,
                "bytes_per_message": peak / n,
            }
        )
    load = []
    with tempfile.TemporaryDirectory() as folder:
        for mb in mb_sizes:
            path = Path(folder) / f"t{mb}.json"
            count = write_transcript(path, mb, seed=700)
            real_mb = path.stat().st_size / 1e6
            seconds, no_gc, peak = measure(lambda path=path: load_conversation(path))
            load.append(
                {
                    "megabytes": real_mb,
                    "messages": count,
                    "seconds": seconds,
                    "seconds_gc_off": no_gc,
                    "peak_bytes": peak,
                    "s_per_mb": seconds / real_mb,
                    "s_per_mb_gc_off": no_gc / real_mb,
                    "peak_mb_per_mb": peak / 1e6 / real_mb,
                }
            )
            if mb != mb_sizes[0]:
                path.unlink()
        # The same file loaded ten times over, every result kept alive: if the
        # library's per-message work grew with what is already in memory, the
        # later loads would be slower than the first ones.
        path = Path(folder) / f"t{mb_sizes[0]}.json"
        kept: list[list[Component]] = []
        repeated = []
        for _ in range(10):
            start = time.perf_counter()
            kept.append(load_conversation(path))
            repeated.append(time.perf_counter() - start)
        alive = sum(len(k) for k in kept)
        del kept
    return {
        "repeated_load": {
            "megabytes": mb_sizes[0],
            "loads": len(repeated),
            "components_alive_at_end": alive,
            "samples_s": repeated,
            "first3_median_s": statistics.median(repeated[:3]),
            "last3_median_s": statistics.median(repeated[-3:]),
            "last_over_first": statistics.median(repeated[-3:]) / statistics.median(repeated[:3]),
        },
        "build": build,
        "build_growth": growth(
            build, "messages", "us_per_message", "us_per_message_gc_off", "bytes_per_message"
        ),
        "load": load,
        "load_growth": growth(load, "megabytes", "s_per_mb", "s_per_mb_gc_off", "peak_mb_per_mb"),
    }


def growth(rows: Sequence[Mapping[str, float]], size: str, *per_unit: str) -> dict[str, float]:
    """Return, for each per-unit figure, its value at the largest size over the smallest.

    Linear growth keeps per-unit costs flat: a ratio near 1 (a quadratic cost
    would make it about the ratio of the sizes).
    """
    first, last = rows[0], rows[-1]
    out = {"size_ratio": last[size] / first[size]}
    for key in per_unit:
        out[key] = last[key] / first[key]
    return out
