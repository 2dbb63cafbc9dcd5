"""The benchmark suite's cases and shared pieces, run by ``benchmarks/bench_suite.py``.

Layout:

- ``machine``: what the figures were measured on.
- ``sessions``: the workload, agent sessions resampled from real transcripts
  and generated ones.
- ``cases``: one module per case, each with a ``case_<name>`` function that
  runs it and returns its JSON record (``cases/core/`` is a package: the core
  case against mellea 0.8.0, also runnable alone as ``benchmarks/bench_core.py``).
- ``report``: the markdown tables of a suite record.
"""
