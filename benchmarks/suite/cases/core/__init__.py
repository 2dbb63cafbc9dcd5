"""Case 1: the core, mellea-ctx against mellea 0.8.0, side by side in one run.

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


Modules: ``adapters`` (the entry points of each library), ``workload`` (the
conversations), ``timing`` (the sub-cases, timed and checked), ``floor`` (the
tiktoken floor) and ``run`` (the table and the JSON record).
"""

from __future__ import annotations

from .run import case_core, run

__all__ = ["case_core", "run"]
