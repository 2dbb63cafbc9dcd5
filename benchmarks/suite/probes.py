"""One hot loop per run, for instruction counts (``instructions.py`` runs this under callgrind).

Usage: ``python probes.py <probe> <args...>``; the loop runs inside
``operator.call``, which is all callgrind counts. Probes:

- ``window <mellea|ours> <n>``: ``n`` adds into ``ChatContext(compactor=WindowCompactor(20))``.
- ``message <mellea|ours> <n>``: ``n`` constructions of ``Message("user", text)``.
- ``read <langchain|ours>``: reading the corpus' OpenAI files once.
- ``span <n>``: one ``TokenBudgetCompactor.span`` on one agent loop of ``n`` messages.
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from suite.cases.core.adapters import Lib, load_mellea, load_ours  # noqa: E402
from suite.cases.core.workload import build_conversation, make_texts  # noqa: E402
from suite.cases.hot import (  # noqa: E402
    agent_loop,
    load_corpus,
    message_classes,
    readers,
    span_compactor,
)


def _lib(name: str) -> Lib:
    loaded = load_mellea() if name == "mellea" else load_ours()
    if isinstance(loaded, str):
        raise SystemExit(f"{name} does not import: {loaded}")
    return loaded


def main(argv: list[str]) -> None:
    probe, *args = argv
    loop: Any
    if probe == "window":
        lib = _lib(args[0])
        items = build_conversation(lib, int(args[1]), seed=1, outputs=False)
        root = lib.chat(lib.window(20))

        def loop() -> Any:
            ctx = root
            for item in items:
                ctx = ctx.add(item)
            return ctx

    elif probe == "message":
        make = message_classes()[args[0]]
        texts = make_texts(int(args[1]), seed=1)

        def loop() -> Any:
            return [make("user", text) for text in texts]

    elif probe == "read":
        read = readers()[args[0]]
        files = load_corpus()

        def loop() -> Any:
            return [read(messages) for messages in files]

    elif probe == "span":
        ctx = agent_loop(int(args[0]))
        compactor = span_compactor(ctx)

        def loop() -> Any:
            return compactor.span(ctx)

    else:
        raise SystemExit(f"unknown probe {probe!r}")
    operator.call(loop)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1:])
