"""A writer process that SIGKILLs itself before the N-th SQL statement of a fixed script.

    python tests/reliability/_sqlite_steps.py DB KILL_AT

Runs :data:`STEPS` (open a new file, commits, replaces, metadata, a clear) on
``SQLiteStore(DB)``, counting every SQL statement any of the store's
connections starts (``sqlite3`` trace callback, installed by wrapping
``sqlite3.connect``). Before statement number ``KILL_AT`` (1-based) starts,
the process SIGKILLs itself: statements ``1 .. KILL_AT - 1`` ran, the rest did
not. ``KILL_AT=0`` never kills. After each step it prints ``done STEP
STATEMENTS``, the statements run so far.

``apply_steps(store)`` runs the same script on any store, so the test can
compute the expected state after each step on a ``MemoryStore``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from mellea_ctx import Checkpoint, Message, SessionMemory, SessionStore, SQLiteStore

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from _session_worker import turn

Step = Callable[[SessionMemory], None]


def _commit(session_id: str, k: int) -> Step:
    def step(memory: SessionMemory) -> None:
        memory.open(session_id).commit(turn(k))

    return step


def _compact(memory: SessionMemory) -> None:
    session = memory.open("s1")
    span = session.dialogue[:-6]
    checkpoint = Checkpoint("Turns before the last one.", span=span, replaced_count=len(span))
    session.replace([Message("system", "Be brief."), checkpoint, *session.dialogue[-6:]])


def _meta(key: str, value: str | None) -> Step:
    return lambda memory: memory.set_meta("s1", key, value)


#: The script: every kind of write, on two sessions, the second one cleared.
STEPS: list[Step] = [
    _commit("s1", 0),
    _commit("s1", 1),
    _meta("tools", "search,read"),
    _commit("s2", 0),
    _compact,
    _commit("s1", 2),
    _meta("tools", None),
    lambda memory: memory.clear("s2"),
    _commit("s1", 3),
]


def apply_steps(store: SessionStore, report: Callable[[int], None] | None = None) -> None:
    memory = SessionMemory(store)
    for index, step in enumerate(STEPS):
        step(memory)
        if report is not None:
            report(index)


def main(path: str, kill_at: int) -> None:
    count = 0
    connect = sqlite3.connect

    def trace(statement: str) -> None:
        nonlocal count
        count += 1
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(trace)
        return connection

    sqlite3.connect = traced_connect  # type: ignore[assignment]
    store = SQLiteStore(path)
    print(f"opened {count}", flush=True)
    apply_steps(store, lambda index: print(f"done {index} {count}", flush=True))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
