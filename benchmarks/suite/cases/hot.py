"""Case 7: the hot paths of issue 24, each against its reference, in interleaved rounds.

Each sub-case times both sides in rounds (round ``r`` runs every side once
before round ``r + 1``), so a change in the machine's load falls on both
alike, and reports the median of each side, the spread of its rounds
((max - min) / median) and the ratio of the medians (the best rounds' ratio
beside it). Where callgrind is installed, the loops of the core's hot paths are
also counted in instructions (``suite/instructions.py``), which the load does
not move.

- ``window``: ``ChatContext(compactor=WindowCompactor(size=20))``, 10,000 adds
  of 200-character messages, against mellea 0.8.0.
- ``message``: ``Message("user", text)`` for 100,000 distinct texts, against
  mellea's ``Message``.
- ``read``: reading every OpenAI file of the corpus (``from_openai``) against
  LangChain's ``convert_to_messages`` on the same parsed JSON.
- ``span``: ``TokenBudgetCompactor(boundary="model_step").span`` on one
  agent loop (system, task, then assistant tool calls and their results, no
  user input after the task) of 2,000 and of 8,000 messages: linear is 4x.
- ``big``: one ``TokenBudgetCompactor`` compaction with ``ExtractiveBackend``
  (``boundary="model_step"``, trigger half the history, target a quarter) of
  an agent session resampled from the corpus, at 10,000 and 100,000 messages,
  each in a fresh process: wall and CPU time, CPU per message, peak RSS, and
  whether it finished within the default timeout (120 s).
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mellea_ctx import (
    ChatContext,
    Message,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    from_openai,
)

from .. import instructions
from ..sessions import CORPUS_DIR, corpus_name
from .core.adapters import load_mellea, load_ours
from .core.workload import build_conversation, make_texts

BIG_SCRIPT = Path(__file__).resolve().parent.parent / "big_compaction.py"


def load_corpus(corpus: Path = CORPUS_DIR) -> list[list[dict[str, Any]]]:
    """The corpus' OpenAI files, parsed (empty when the corpus is absent)."""
    files = sorted(corpus.glob("*.openai.json")) if corpus.is_dir() else []
    return [json.loads(path.read_text()) for path in files]


def readers() -> dict[str, Callable[[list[dict[str, Any]]], Any]]:
    """``ours`` (``from_openai``) and, when installed, ``langchain`` (``convert_to_messages``)."""
    found: dict[str, Callable[[list[dict[str, Any]]], Any]] = {"ours": from_openai}
    try:
        from langchain_core.messages import convert_to_messages
    except ImportError:
        return found
    found["langchain"] = convert_to_messages
    return found


def message_classes() -> dict[str, Any]:
    """The two ``Message`` classes: mellea's (when installed) and ours."""
    found: dict[str, Any] = {"ours": Message}
    try:
        from mellea.stdlib.components import Message as MelleaMessage
    except ImportError:
        return found
    return {"mellea": MelleaMessage, **found}


def agent_loop(n: int) -> ChatContext:
    """A context of one agent loop of ``n`` messages, its tokens counted (as a gate has them)."""
    items: list[Any] = [
        Message("system", "You are a coding agent."),
        Message("user", "Fix the failing test."),
    ]
    step = 0
    while len(items) < n:
        call = ToolCall(f"c{step}", "bash", json.dumps({"command": f"pytest -x -k case_{step}"}))
        items.append(Message("assistant", f"Step {step}: run the tests.", tool_calls=[call]))
        items.append(ToolMessage(f"case_{step} output line\n" * 8, tool_call_id=call.id))
        step += 1
    ctx = ChatContext()
    for item in items[:n]:
        ctx = ctx.add(item)
    _ = ctx.token_count
    return ctx


def span_compactor(ctx: ChatContext) -> TokenBudgetCompactor:
    """The compactor whose ``span`` the ``span`` sub-case times: due, keeping a quarter."""
    total = ctx.token_count
    return TokenBudgetCompactor(
        max_tokens=total // 2, target_tokens=total // 4, boundary="model_step"
    )


def _rounds(sides: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, run in sides.items():
            gc.collect()
            samples[name].append(run())
    return samples


def _summary(samples: Sequence[float], n: int) -> dict[str, Any]:
    median = statistics.median(samples)
    return {
        "median_s": median,
        "best_s": min(samples),
        "spread": (max(samples) - min(samples)) / median if median else 0.0,
        "per_item_us": median / n * 1e6,
        "samples_s": list(samples),
    }


def _side_by_side(
    samples: dict[str, list[float]], n: int, reference: str, ours: str = "ours"
) -> dict[str, Any]:
    sides = {name: _summary(times, n) for name, times in samples.items()}
    out: dict[str, Any] = {"n": n, "sides": sides}
    if reference in sides and ours in sides:
        out["ratio_median"] = sides[reference]["median_s"] / sides[ours]["median_s"]
        out["ratio_best"] = sides[reference]["best_s"] / sides[ours]["best_s"]
    return out


def _timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _window(n: int, rounds: int) -> dict[str, Any]:
    libs = [lib for lib in (load_mellea(), load_ours()) if not isinstance(lib, str)]
    seed = iter(range(10_000))

    def side(lib: Any) -> Callable[[], float]:
        def run() -> float:
            items = build_conversation(lib, n, seed=next(seed), outputs=False)
            ctx = lib.chat(lib.window(20))
            gc.collect()
            start = time.perf_counter()
            for item in items:
                ctx = ctx.add(item)
            elapsed = time.perf_counter() - start
            assert len(ctx.as_list()) == 21
            return elapsed

        return run

    return _side_by_side(_rounds({lib.name: side(lib) for lib in libs}, rounds), n, "mellea")


def _message(n: int, rounds: int) -> dict[str, Any]:
    classes = message_classes()
    texts = make_texts(n, seed=7)

    def side(cls: Any) -> Callable[[], float]:
        return lambda: _timed(lambda: [cls("user", text) for text in texts])

    return _side_by_side(
        _rounds({name: side(cls) for name, cls in classes.items()}, rounds), n, "mellea"
    )


def _read(rounds: int) -> dict[str, Any]:
    files = load_corpus()
    n = sum(map(len, files))
    if not files:
        return {"n": 0, "note": "the corpus is not on this machine", "sides": {}}

    def side(read: Callable[[Any], Any]) -> Callable[[], float]:
        return lambda: _timed(lambda: [read(messages) for messages in files])

    out = _side_by_side(
        _rounds({name: side(read) for name, read in readers().items()}, rounds), n, "langchain"
    )
    out["corpus"] = f"{len(files)} OpenAI files of {corpus_name(CORPUS_DIR)}"
    return out


def _span(sizes: tuple[int, int], rounds: int) -> dict[str, Any]:
    small, large = sizes
    contexts = {n: agent_loop(n) for n in sizes}
    compactors = {n: span_compactor(ctx) for n, ctx in contexts.items()}
    for n in sizes:  # the first call counts nothing new: the totals were read
        compactors[n].span(contexts[n])
    sides = {str(n): (lambda n=n: _timed(lambda: compactors[n].span(contexts[n]))) for n in sizes}
    samples = _rounds(sides, rounds)
    out = {
        "sizes": list(sizes),
        "sides": {name: _summary(times, int(name)) for name, times in samples.items()},
    }
    out["time_ratio_median"] = statistics.median(samples[str(large)]) / statistics.median(
        samples[str(small)]
    )
    out["time_ratio_best"] = min(samples[str(large)]) / min(samples[str(small)])
    out["linear"] = large / small
    return out


def _big(sizes: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        done = subprocess.run(
            [sys.executable, str(BIG_SCRIPT), str(n)],
            capture_output=True,
            text=True,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            rows.append({"messages": n, "error": done.stderr.strip()[-500:]})
            continue
        rows.append(json.loads(lines[-1]))
    return rows


def _instructions(quick: bool) -> dict[str, Any]:
    why = instructions.unavailable()
    if why is not None:
        return {"note": why}
    n_window, n_message = (500, 2_000) if quick else (2_000, 20_000)
    span_sizes = (500, 2_000) if quick else (2_000, 8_000)
    jobs: list[tuple[str, str, tuple[str | int, ...]]] = []
    for lib in ("mellea", "ours"):
        jobs.append(("window", lib, (lib, n_window)))
        jobs.append(("message", lib, (lib, n_message)))
    if load_corpus():
        jobs += [("read", name, (name,)) for name in readers()]
    jobs += [("span", str(n), (n,)) for n in span_sizes]
    # Two at a time: each is one process, mostly waiting on valgrind's start-up.
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(lambda job: instructions.count(job[0], *job[2]), jobs))
    counts: dict[str, Any] = {"window": {"n": n_window}, "message": {"n": n_message}}
    for (probe, side, _), value in zip(jobs, found, strict=True):
        counts.setdefault(probe, {})[side] = value
    return counts


def case_hot(quick: bool) -> dict[str, Any]:
    """Run every hot-path sub-case and return the record."""
    rounds = 3 if quick else 7
    record: dict[str, Any] = {
        "rounds": rounds,
        "window": _window(2_000 if quick else 10_000, rounds),
        "message": _message(20_000 if quick else 100_000, rounds),
        "read": _read(rounds * 3),
        "span": _span((500, 2_000) if quick else (2_000, 8_000), rounds * 3),
    }
    record["instructions"] = _instructions(quick)
    record["big"] = _big((2_000, 10_000) if quick else (10_000, 100_000))
    return record
