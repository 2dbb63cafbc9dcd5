"""Case 4: billed input tokens under prompt caching.

One simulated agent session replayed through a sliding window cut on every
turn and through trigger/target compaction (``TokenBudgetCompactor``), alone
or as the last tier of a ``TieredCompactor`` after ``ClearToolResultsCompactor``,
with quoted or continuation summary requests; every request is billed by a
prompt-cache cost model from its longest common token prefix with the
request before it. A quoted summary request is billed uncached; a
continuation request is billed like an agent request, from its prefix hit
on the agent's last request.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from mellea_ctx import (
    ChatContext,
    ClearToolResultsCompactor,
    CompactionPlanner,
    Component,
    ExtractiveBackend,
    ModelOutputThunk,
    TieredCompactor,
    TokenBudgetCompactor,
    default_counter,
    pin_system_and_initial_user,
)

from ..sessions import USER_EVERY, Pools, agent_session

# Parameters of the billing simulation, all documented in docs/benchmarks.md
# (USER_EVERY, the session's shape, lives with the session generator).

#: Price of a prompt token read from the provider's cache, relative to an uncached one.
CACHE_READ = 0.1
#: Price of a prompt token written to the cache (the part past the cached prefix).
CACHE_WRITE = 1.25
#: Price of a prompt token with no caching at all (the summarizer's own requests).
UNCACHED = 1.0
#: Output tokens cost this many input tokens (Claude Sonnet 4.5: $15 / $3 per Mtok).
OUTPUT_PRICE = 5.0


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
        self.requests: list[list[Component]] = []

    async def generate(self, messages: Sequence[Component], **kwargs: Any) -> ModelOutputThunk:
        out: ModelOutputThunk = await self.inner.generate(messages, **kwargs)
        usage = out.usage
        assert usage is not None
        self.calls.append((usage.prompt_tokens, usage.completion_tokens))
        self.requests.append(list(messages))
        return out


@dataclass
class Replay:
    """What one strategy sent over a session: per request, its length and cache hit."""

    lengths: list[int] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)
    summary_calls: list[tuple[int, int]] = field(default_factory=list)
    #: Per summary call, its cache hit when it continued the agent's prompt (``None``: quoted).
    summary_hits: list[int | None] = field(default_factory=list)
    compactions: int = 0
    over_limit: int = 0
    seconds: float = 0.0

    def billed(self, rates: Rates) -> dict[str, float]:
        """Return the bill under ``rates``, in input-token equivalents."""
        requests = sum(bill(n, h, rates) for n, h in zip(self.lengths, self.hits, strict=True))
        read = rates.read * sum(self.hits)
        write = rates.write * (sum(self.lengths) - sum(self.hits))
        hits = self.summary_hits or [None] * len(self.summary_calls)
        summary_in = sum(
            UNCACHED * i if hit is None else bill(i, hit, rates)
            for (i, _), hit in zip(self.summary_calls, hits, strict=True)
        )
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
            "no_cache": float(sum(self.lengths) + sum(i for i, _ in self.summary_calls)),
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


def replay_budget(
    session: Sequence[Component],
    limit: int,
    target: int,
    tokens: Tokens,
    *,
    tiered: bool = False,
    request: str = "quoted",
    planner: CompactionPlanner | None = None,
) -> Replay:
    """Replay ``session`` through an inline ``TokenBudgetCompactor`` (trigger = ``limit``).

    ``tiered`` puts a ``ClearToolResultsCompactor`` before it in a
    ``TieredCompactor``; ``request`` is the summary request mode; ``planner``
    gates the outermost compactor by price.
    """
    out = Replay()
    backend = Metered(ExtractiveBackend())
    records: list[Any] = []
    summarizer = TokenBudgetCompactor(
        max_tokens=limit,
        target_tokens=target,
        boundary="model_step",
        pin_predicate=pin_system_and_initial_user,
        default_backend=backend,
        keep_replaced=False,
        on_record=records.append,
        request=request,  # type: ignore[arg-type]
        planner=None if tiered else planner,
    )
    compactor: Any = summarizer
    if tiered:
        clearing = ClearToolResultsCompactor(keep_last=3, min_clear_tokens=2_000)
        compactor = TieredCompactor(
            [clearing, summarizer], max_tokens=limit, target_tokens=target, planner=planner
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
        calls = len(backend.requests)
        ctx = ctx.add(c)
        for sent in backend.requests[calls:]:  # summary requests this add made
            if request == "continuation" and sent and "<checkpoint_request" in sent[-1].content:
                seqs_sent = [tokens.of(x) for x in sent]
                length = sum(len(s) for s in seqs_sent)
                out.summary_calls.append((length, backend.calls[len(out.summary_calls)][1]))
                out.summary_hits.append(prefix_hit(previous, seqs_sent))
            else:
                out.summary_calls.append(backend.calls[len(out.summary_calls)])
                out.summary_hits.append(None)
    out.seconds = time.perf_counter() - started
    out.compactions = sum(r.outcome == "applied" for r in records)
    return out


#: The compaction strategies billed against the sliding window: (name, tiered, request).
STRATEGIES: Final = (
    ("budget", False, "quoted"),
    ("tiered", True, "quoted"),
    ("continuation", False, "continuation"),
    ("tiered+continuation", True, "continuation"),
)


def case_billing(
    quick: bool,
    pools: Pools,
    *,
    steps: int | None = None,
    limits: Sequence[int] | None = None,
    grid: bool = True,
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
    planned: list[dict[str, Any]] = []
    for limit, share in settings:
        if limit not in sliding:
            sliding[limit] = replay_sliding(session, limit, tokens)
        window = sliding[limit]
        main = (limit, share) == settings[0]
        for name, tiered, request in STRATEGIES:
            if name != "budget" and share != 0.5:
                continue  # the new strategies run at the main target share only
            ours = replay_budget(
                session, limit, int(limit * share), tokens, tiered=tiered, request=request
            )
            run = compare(window, ours, limit, share, main=main and name == "budget")
            runs.append({"strategy": name, **run})
        if share == 0.5 and grid:
            planned.append(plan_setting(session, limit, window, tokens, quick=quick))
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
        "planner": planned,
    }


#: The planner's target, as a share of the hard limit: small, since the planner, not
#: the target, decides how often a compaction runs (docs/benchmarks.md, section 4).
PLANNER_SHARE: Final = 1 / 16
#: The hindsight grid: targets as shares of the limit (4k to 28k at 32,000), tiers, request modes.
GRID_SHARES: Final = (1 / 8, 2 / 8, 3 / 8, 4 / 8, 5 / 8, 6 / 8, 7 / 8)


def plan_setting(
    session: Sequence[Component], limit: int, window: Replay, tokens: Tokens, *, quick: bool
) -> dict[str, Any]:
    """Bill the planner, no compaction at all, and every fixed policy of the grid at ``limit``.

    The hindsight optimum is the cheapest fixed policy of the grid, chosen
    after the fact, bills with the summaries' input and output included.
    """
    rates = Rates()
    never = replay_sliding(session, 10**12, tokens).billed(rates)["effective_with_output"]
    sliding = window.billed(rates)["effective_with_output"]
    rows: list[dict[str, Any]] = []
    shares = GRID_SHARES[::3] if quick else GRID_SHARES
    for share in shares:
        for tiered in (False, True):
            for request in ("quoted", "continuation"):
                r = replay_budget(
                    session, limit, int(limit * share), tokens, tiered=tiered, request=request
                )
                rows.append(policy_row(r, rates, int(limit * share), tiered, request, sliding))
    best = min(rows, key=lambda row: row["billed"])
    target = max(256, int(limit * PLANNER_SHARE))
    fixed = [
        policy_row(
            replay_budget(session, limit, target, tokens, request=request),
            rates,
            target,
            False,
            request,
            sliding,
        )
        for request in ("continuation", "quoted")
    ]
    plans = []
    for request in ("continuation", "quoted"):
        target = max(256, int(limit * PLANNER_SHARE))
        r = replay_budget(
            session, limit, target, tokens, request=request, planner=CompactionPlanner()
        )
        row = policy_row(r, rates, target, False, request, sliding)
        row["over_hindsight"] = row["billed"] / best["billed"] - 1
        row["over_never"] = row["billed"] / never - 1
        plans.append(row)
    return {
        "max_context": limit,
        "sliding_billed": sliding,
        "never_compacting_billed": never,
        "grid": rows,
        "hindsight": best,
        "fixed_at_planner_target": fixed,
        "planner": plans,
    }


def policy_row(
    r: Replay, rates: Rates, target: int, tiered: bool, request: str, sliding: float
) -> dict[str, Any]:
    """One policy's bill (summary input and output included) and its ratio to the window."""
    billed = r.billed(rates)["effective_with_output"]
    return {
        "target": target,
        "tiered": tiered,
        "request": request,
        "compactions": r.compactions,
        "summary_calls": len(r.summary_calls),
        "over_limit": r.over_limit,
        "billed": billed,
        "ratio": sliding / billed,
    }


def render_planner(billing: dict[str, Any]) -> list[str]:
    """Markdown lines: the planner next to the hindsight optimum and no compaction, per setting."""
    planned = billing.get("planner") or []
    if not planned:
        return []
    out = [
        "| max context | policy | target | tiers | request | compactions | billed "
        "(summary input and output included) | window / it | vs hindsight optimum |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in planned:
        best = s["hindsight"]
        out.append(
            f"| {s['max_context']:,} | sliding window | | | | | {s['sliding_billed']:,.0f} "
            "| 1.00x | |"
        )
        out.append(
            f"| {s['max_context']:,} | never compacting | | | | 0 "
            f"| {s['never_compacting_billed']:,.0f} "
            f"| {s['sliding_billed'] / s['never_compacting_billed']:.2f}x | |"
        )
        out.append(
            f"| {s['max_context']:,} | hindsight optimum (best of {len(s['grid'])} fixed) "
            f"| {best['target']:,} | {'on' if best['tiered'] else 'off'} | {best['request']} "
            f"| {best['compactions']} | {best['billed']:,.0f} | **{best['ratio']:.2f}x** | 0% |"
        )
        for f in s.get("fixed_at_planner_target", []):
            out.append(
                f"| {s['max_context']:,} | fixed at the planner's target | {f['target']:,} | off "
                f"| {f['request']} | {f['compactions']} | {f['billed']:,.0f} "
                f"| {f['ratio']:.2f}x | {100 * (f['billed'] / best['billed'] - 1):+.1f}% |"
            )
        for p in s["planner"]:
            out.append(
                f"| {s['max_context']:,} | planner | {p['target']:,} | off | {p['request']} "
                f"| {p['compactions']} | {p['billed']:,.0f} | **{p['ratio']:.2f}x** "
                f"| {100 * p['over_hindsight']:+.1f}% |"
            )
    return [*out, ""]


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
