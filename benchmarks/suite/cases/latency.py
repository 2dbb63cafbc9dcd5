"""Case 5: one compaction, the model call excluded, on contexts of growing size."""

from __future__ import annotations

import gc
import time
from typing import Any

from mellea_ctx import (
    ChatContext,
    LLMSummarizeCompactor,
    ScriptedBackend,
    TokenBudgetCompactor,
    WindowCompactor,
)

from ..sessions import SUMMARY_TEXT, synthetic_session


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
