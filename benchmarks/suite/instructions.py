"""Instruction counts of the core's hot paths, under valgrind's callgrind, when it is installed.

A timing on a shared machine moves with the load; the number of instructions
a loop executes does not. Each count runs one probe of ``probes.py`` in a
fresh interpreter under ``valgrind --tool=callgrind`` with collection toggled
on only inside ``operator.call`` (Python 3.11+), which the probe calls once
around its loop and nothing else calls: imports and setup are not counted.
``PYTHONHASHSEED=0`` keeps the count the same from run to run.

Set ``MELLEA_CTX_BENCH_NO_VALGRIND=1`` to skip the counts (they take about a
minute each on a loaded machine: the interpreter starts under valgrind).
"""

from __future__ import annotations

import operator
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

PROBES = Path(__file__).resolve().parent / "probes.py"
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def unavailable() -> str | None:
    """Why instruction counts cannot be taken here (``None``: they can)."""
    if os.environ.get("MELLEA_CTX_BENCH_NO_VALGRIND"):
        return "skipped (MELLEA_CTX_BENCH_NO_VALGRIND is set)"
    if shutil.which("valgrind") is None:
        return "valgrind is not installed"
    if not hasattr(operator, "call"):
        return "needs Python 3.11+ (operator.call marks the counted loop)"
    return None


def count(probe: str, *args: str | int) -> int | None:
    """Return the instructions ``probes.py probe args...`` runs in its loop (``None``: failed)."""
    return callgrind([sys.executable, str(PROBES), probe, *map(str, args)])


def callgrind(command: list[str], env: dict[str, str] | None = None) -> int | None:
    """The instructions ``command`` runs in ``operator.call`` under callgrind (``None``: failed).

    ``env`` is added to this process's environment (``PYTHONHASHSEED=0`` always).
    """
    if unavailable() is not None:
        return None
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        "--toggle-collect=*operator_call*",
        *command,
    ]
    env = {**os.environ, **(env or {}), "PYTHONHASHSEED": "0"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=1_800, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        return None
    return int(found[-1])
