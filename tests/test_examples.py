"""Every script in examples/ runs to completion offline, so the examples never rot."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
GUIDE = ROOT / "docs" / "examples.md"

#: What would send an example to a real provider; removed so every run is offline.
PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "MELLEA_CTX_BASE_URL",
    "MELLEA_CTX_MODEL",
)

#: The provider examples, and the variable without which each one runs offline.
OFFLINE_UNLESS = {
    "06_openai.py": "OPENAI_API_KEY",
    "07_anthropic.py": "ANTHROPIC_API_KEY",
    "08_local_server.py": "MELLEA_CTX_BASE_URL",
}


#: The framework examples, and the module each needs (its extra: pip install '.[langchain]').
NEEDS = {
    "09_langchain_agent.py": "langchain",
    "10_pydantic_ai_agent.py": "pydantic_ai",
    "11_openai_agents.py": "agents",
}


def run_offline(script: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )


class TestExamples:
    def test_the_set(self) -> None:
        """The examples are numbered in reading order, one per use, and documented."""
        names = [path.name for path in EXAMPLES]
        assert [
            "01_inline_window.py",
            "02_threshold_summarize.py",
            "03_manual_compaction.py",
            "04_compaction_tool.py",
            "05_sqlite_session.py",
            "06_openai.py",
            "07_anthropic.py",
            "08_local_server.py",
            "09_langchain_agent.py",
            "10_pydantic_ai_agent.py",
            "11_openai_agents.py",
        ] == names
        guide = GUIDE.read_text(encoding="utf-8")
        assert [n for n in names if f"python examples/{n}" not in guide] == []

    def test_guide_quotes_the_scripts(self) -> None:
        """Each excerpt in docs/examples.md (a titled block) is lines of the script it names."""
        excerpts = re.findall(
            r'```python title="(examples/[\w.]+)"\n(.*?)```',
            GUIDE.read_text(encoding="utf-8"),
            re.S,
        )
        assert len(excerpts) == len(EXAMPLES)
        for path, excerpt in excerpts:
            quoted = [line.strip() for line in excerpt.splitlines()]
            source = [
                line.strip() for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
            ]
            starts = range(len(source) - len(quoted) + 1)
            assert any(source[i : i + len(quoted)] == quoted for i in starts), (path, excerpt)

    @pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.name)
    def test_example_runs(self, script: Path) -> None:
        """The example exits 0 (its own asserts check what it shows) with no key, no network."""
        needs = NEEDS.get(script.name)
        if needs is not None and importlib.util.find_spec(needs) is None:
            pytest.skip(f"needs {needs}: nox -s tests installs every framework extra")
        completed = run_offline(script)
        assert completed.returncode == 0, completed.stderr
        variable = OFFLINE_UNLESS.get(script.name)
        if variable is not None:  # a provider example says it runs offline, and on what
            first_line = completed.stdout.splitlines()[0]
            assert f"{variable} is not set: running offline on ExtractiveBackend." == first_line

    @pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.name)
    def test_docstring_says_how_to_run(self, script: Path) -> None:
        """Each example's docstring gives the command that runs it."""
        source = script.read_text(encoding="utf-8")
        assert source.startswith('"""')
        assert f"python examples/{script.name}" in source.split('"""', 2)[1]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class TestProviderExamplesWithoutAReachableAPI:
    """A key set but no API to reach: one clear line on stderr and exit 1, no traceback."""

    @pytest.mark.parametrize("name", sorted(OFFLINE_UNLESS))
    def test_one_line_and_a_non_zero_exit(self, name: str) -> None:
        url = f"http://127.0.0.1:{closed_port()}"
        env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
        env.update(
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=f"{url}/v1",
            ANTHROPIC_API_KEY="test",
            ANTHROPIC_BASE_URL=url,
            MELLEA_CTX_BASE_URL=f"{url}/v1",
        )
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / name)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"{name}: BackendConnectionError: ")
        assert "compacted" not in done.stdout  # it stopped at the failed summary
