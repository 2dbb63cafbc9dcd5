"""A writer process for the two-writer races: commits a turn when told, on one session.

    python tests/reliability/_race_worker.py STORE NAME

``STORE`` is ``sqlite:PATH`` or ``redis:URL#PREFIX``, or their ``async-`` forms. Reads
commands on stdin, one a line:

* ``load``: open session ``s1``; prints ``loaded VERSION``;
* ``commit R``: commit the turn ``NAME round R`` from the snapshot last loaded;
  prints ``wrote VERSION``, or ``conflict MESSAGE`` for a ``SessionConflictError``;
* ``retry R``: open the session again and commit the same turn; prints ``wrote VERSION``.

Exits 0 at the end of stdin.
"""

from __future__ import annotations

import sys

from mellea_ctx import (
    Message,
    ModelOutputThunk,
    SessionConflictError,
    SessionMemory,
    SessionStore,
)
from tests._async_face import open_spec


def open_store(spec: str) -> SessionStore:
    return open_spec(spec, timeout=60)


def main(spec: str, name: str) -> None:
    memory = SessionMemory(open_store(spec))
    session = memory.open("s1")
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "load":
            session = memory.open("s1")
            print(f"loaded {session.version}", flush=True)
            continue
        if command == "retry":
            session = memory.open("s1")
        turn = [Message("user", f"{name} round {argument}"), ModelOutputThunk(f"ok {name}")]
        try:
            session = session.commit(turn)
        except SessionConflictError as error:
            print(f"conflict {error}", flush=True)
            continue
        print(f"wrote {session.version}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
