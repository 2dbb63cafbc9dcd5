"""The core case's conversations: distinct 200-character texts, fresh per repeat."""

from __future__ import annotations

import random
from typing import Any

from .adapters import Lib

TEXT_LEN = 200

_WORDS = (
    "agent", "tool", "call", "result", "error", "retry", "plan", "step", "file", "path",
    "config", "value", "token", "budget", "window", "summary", "context", "message", "user",
    "assistant", "system", "search", "query", "index", "record", "update", "delete", "create",
    "parse", "render", "check", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta",
    "kappa", "lambda", "sigma", "omega", "north", "south", "east", "west", "river", "mountain",
    "valley", "forest", "ocean", "desert",
)  # fmt: skip


def make_texts(n: int, *, seed: int) -> list[str]:
    """Return ``n`` distinct texts of exactly ``TEXT_LEN`` characters.

    Each text starts with its seed and index, so no two texts of one run,
    nor of two repeats, are equal.
    """
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        words = [f"[{seed}:{i}]"]
        length = len(words[0])
        while length < TEXT_LEN:
            word = rng.choice(_WORDS)
            if rng.random() < 0.15:
                word = f"{word}-{rng.randrange(10_000)}"
            words.append(word)
            length += len(word) + 1
        texts.append(" ".join(words)[:TEXT_LEN])
    return texts


def build_conversation(lib: Lib, n: int, *, seed: int, outputs: bool) -> list[Any]:
    """Return ``n`` components: a system message, then user / assistant turns.

    Args:
        lib: The library whose components to build.
        n: Number of components, the system message included.
        seed: Makes the text unique to this repeat.
        outputs: When true, assistant turns are ``ModelOutputThunk`` values
            with usage (running prompt size, like a backend reports it);
            otherwise they are ``Message("assistant", ...)``.
    """
    texts = make_texts(n, seed=seed)
    items = [lib.message("system", texts[0])]
    running = 60  # a rough running prompt size, only for the usage figures
    for i in range(1, n):
        if i % 2 == 1:
            items.append(lib.message("user", texts[i]))
        elif outputs:
            items.append(lib.output(texts[i], running, 50))
        else:
            items.append(lib.message("assistant", texts[i]))
        running += 55
    return items
