"""Case 3: ``ChatContext.token_count`` after every add, against a recount per turn.

The same counter recounts the whole history every turn, once encoding
everything again and once with every message's count cached.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from mellea_ctx import ChatContext, Component, Message, default_counter

from ..sessions import synthetic_session


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
