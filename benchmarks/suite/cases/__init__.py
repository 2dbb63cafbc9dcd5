"""The suite's cases, one module each, numbered as in docs/benchmarks.md.

1. ``core``, 2. ``trim``, 3. ``counting``, 4. ``billing``, 5. ``latency``,
6. ``resources``. Each module's ``case_<name>`` runs the case and returns its record.
"""
