"""One ``TokenBudgetCompactor`` compaction of a big agent session with ``ExtractiveBackend``.

Usage: ``python big_compaction.py <messages> [timeout]``; prints one JSON line
(``timeout``: seconds, the default's 120 when left out; a longer one measures
what a compaction that would time out here costs in all). Run in a
fresh process per size (by ``cases/hot.py``), so its peak RSS is this size's
own. The session is resampled from the corpus (``sessions.agent_session``), as
the other cases' are; the compaction is due (trigger half its tokens, target
a quarter, ``boundary="model_step"``) and runs with its default timeout.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from mellea_ctx import ChatContext, ExtractiveBackend, TokenBudgetCompactor  # noqa: E402
from suite.sessions import agent_session, load_pools  # noqa: E402


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main(n: int, timeout: float | None = None) -> dict[str, object]:
    """Build the session, compact it once, and return what it cost."""
    items = agent_session(load_pools(), n // 2, seed=7)[:n]
    while items and items[-1].tool_calls:  # never end on a call whose results were cut off
        items.pop()
    ctx = ChatContext()
    for item in items:
        ctx = ctx.add(item)
    total = ctx.token_count
    compactor = TokenBudgetCompactor(
        max_tokens=total // 2,
        target_tokens=total // 4,
        boundary="model_step",
        default_backend=ExtractiveBackend(),
        **({} if timeout is None else {"timeout": timeout}),
    )
    gc.collect()
    before = _rss_mb()
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compactor.compact(ctx)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    return {
        "messages": len(items),
        "tokens": total,
        "timeout_s": compactor.settings.timeout,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_per_message_us": cpu / len(items) * 1e6,
        "rss_before_mb": before,
        "rss_peak_mb": _rss_mb(),
        "compacted": result is not ctx,
        "messages_after": len(result),
        "warnings": [str(w.message)[:200] for w in caught],
    }


if __name__ == "__main__":
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else None
    print(json.dumps(main(int(sys.argv[1]), limit)))
