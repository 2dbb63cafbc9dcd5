"""The markdown tables of a suite record (``benchmarks/results/suite.md``).

``docs/benchmarks.md`` includes the file; ``bench_suite.py --render`` rewrites
it from a JSON record without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .cases.billing import render_planner


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
                    run.get("strategy", "budget"),
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
                    "strategy",
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
            *render_planner(billing),
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
    hot = record.get("hot")
    if hot:
        out += _hot(hot)
    return "\n".join(out).rstrip() + "\n"


def _side(case: Mapping[str, Any], name: str) -> str:
    side = case.get("sides", {}).get(name)
    if side is None:
        return "not installed"
    return f"{side['per_item_us']:,.2f} µs (±{100 * side['spread'] / 2:.0f}%)"


def _ir(counts: Mapping[str, Any] | None, name: str, n: int) -> str:
    value = None if counts is None else counts.get(name)
    return "-" if value is None else f"{value / n:,.0f}"


def _hot(hot: Mapping[str, Any]) -> list[str]:
    """The hot paths of issue 24: each against its reference, timed and in instructions."""
    ran = hot.get("ran")
    out = ["#### 7. Hot paths (issue 24)", ""]
    if ran:
        m = ran.get("machine", {})
        where = f"on {m['cpu']}, {m['cores']} cores, " if m else ""
        out += [
            f"This case ran on its own ({ran['created']}"
            + (", QUICK sizes" if ran["quick"] else "")
            + f"), {where}load average {ran['loadavg_start']} at its start, "
            f"{ran['seconds']:,.0f} s; the other cases keep the figures of their own run.",
            "",
        ]
    counts = hot.get("instructions", {})
    rounds = hot["rounds"]
    rows = []
    specs = [
        ("window", "WindowCompactor(size=20) adds", "mellea", "≥ 11x"),
        ("message", 'Message("user", text)', "mellea", "≥ 0.91x (ours ≤ 1.1x its time)"),
        ("read", "reading the corpus' OpenAI messages", "langchain", "≥ 1.25x"),
    ]
    for key, title, reference, target in specs:
        case = hot.get(key, {})
        if not case.get("sides"):
            continue
        ir = counts.get(key) if isinstance(counts.get(key), Mapping) else None
        n_ir = ir.get("n", 1) if ir else 1
        ratio = case.get("ratio_median")
        ir_ratio = (
            ir[reference] / ir["ours"] if ir and ir.get(reference) and ir.get("ours") else None
        )
        rows.append(
            [
                title,
                f"{case['n']:,}",
                f"{reference}: {_side(case, reference)}",
                f"ours: {_side(case, 'ours')}",
                "-" if ratio is None else f"**{ratio:.2f}x** (best {case['ratio_best']:.2f}x)",
                _ir(ir, reference, n_ir) if key != "read" else _ir(ir, reference, 1),
                _ir(ir, "ours", n_ir) if key != "read" else _ir(ir, "ours", 1),
                "-" if ir_ratio is None else f"**{ir_ratio:.2f}x**",
                target,
            ]
        )
    header = [
        "hot path",
        "N",
        "reference, median per item (± half the spread)",
        "ours",
        "reference / ours, timed",
        "reference instructions per item",
        "ours",
        "reference / ours, instructions",
        "target",
    ]
    out += [_table(header, rows), ""]
    span = hot.get("span")
    if span:
        small, large = span["sizes"]
        sp = counts.get("span") if isinstance(counts.get("span"), Mapping) else None
        ir_ratio = (
            sp[str(large)] / sp[str(small)]
            if sp and sp.get(str(large)) and sp.get(str(small))
            else None
        )
        cells = [
            f"`TokenBudgetCompactor.span` on one agent loop: {small:,} messages "
            f"{span['sides'][str(small)]['median_s'] * 1e3:.2f} ms, {large:,} messages "
            f"{span['sides'][str(large)]['median_s'] * 1e3:.2f} ms: "
            f"**{span['time_ratio_median']:.2f}x** timed "
            f"(best rounds {span['time_ratio_best']:.2f}x)",
        ]
        if ir_ratio is not None:
            cells.append(f"**{ir_ratio:.2f}x** in instructions")
        out += ["; ".join(cells) + f" (linear: {span['linear']:.0f}x; target ≤ 5x).", ""]
    if "note" in counts:
        out += [f"Instruction counts: {counts['note']}.", ""]
    else:
        out += [
            f"Timed: {rounds} interleaved rounds ({3 * rounds} for reading and span), "
            "median of each side; the spread is (max - min) / median over the rounds. "
            "Instructions: callgrind, collection on only inside the counted loop, "
            f"{counts.get('window', {}).get('n', 0):,} adds and "
            f"{counts.get('message', {}).get('n', 0):,} messages (instructions per item); "
            "reading: instructions for the whole corpus.",
            "",
        ]
    big = hot.get("big") or []
    if big:
        rows = []
        for r in big:
            if "error" in r:
                rows.append([f"{r['messages']:,}", "failed", "-", "-", "-", r["error"][:80]])
                continue
            rows.append(
                [
                    f"{r['messages']:,}",
                    f"{r['wall_s']:,.1f} s / {r['timeout_s']:.0f} s",
                    f"{r['cpu_s']:,.1f} s",
                    f"{r['cpu_per_message_us']:,.0f} µs",
                    f"{r['rss_before_mb']:,.0f} → {r['rss_peak_mb']:,.0f} MB",
                    "applied"
                    if r["compacted"]
                    else "NOT applied: " + "; ".join(r["warnings"])[:120],
                ]
            )
        header = [
            "messages",
            "wall / timeout",
            "CPU",
            "CPU per message",
            "RSS before → peak",
            "outcome",
        ]
        out += [
            "A `TokenBudgetCompactor` compaction with `ExtractiveBackend` of an agent session "
            "resampled from the corpus, one fresh process per size"
            + (f" ({hot['big_note']})" if hot.get("big_note") else "")
            + ":",
            "",
            _table(header, rows),
            "",
        ]
    return out


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
