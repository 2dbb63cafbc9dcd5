"""Case 2: LangChain ``trim_messages`` against ``TokenBudgetCompactor``.

The same conversations (the corpus, or the bundled sample, plus two
synthetic agent sessions) trimmed at equal token budgets by both libraries:
time per trim, and how often each produces a history the provider would
reject.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from mellea_ctx import (
    ChatContext,
    Component,
    ScriptedBackend,
    TokenBudgetCompactor,
    default_counter,
    load_conversation,
    validate_openai,
)

from ..sessions import CORPUS_DIR, SAMPLE, SUMMARY_TEXT, Pools, agent_session


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
