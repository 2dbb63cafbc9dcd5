"""The import-linter contracts in pyproject.toml hold, and a deliberate break makes them fail.

Each case copies the package to a temporary folder, appends one forbidden import to a module of
one layer, and runs ``lint-imports`` there with the project's own pyproject.toml. The modules are
picked by layer, not by name, so splitting a module never breaks these tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "importlinter",
    reason="import-linter is not installed; `pip install -e '.[test]'` brings it",
)

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS = PYPROJECT.read_text(encoding="utf-8").count("[[tool.importlinter.contracts]]")

LAYERS = "Layers: imports point down only"
PUBLIC_FACE = "Only the integrations import the public face (mellea_ctx/__init__.py)"
CORE = "The core imports no SDK, store client or framework"
FORMATS = "The formats import no backend and no SDK (they are plain JSON)"
CLI_ONLY = "Only the command line imports click and rich"


def copy_project(tmp_path: Path) -> Path:
    """Copy the package and pyproject.toml (its contracts) into ``tmp_path``."""
    shutil.copytree(
        ROOT / "mellea_ctx",
        tmp_path / "mellea_ctx",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    return tmp_path


def some_module(project: Path, layer: str) -> Path:
    """The first module (not ``__init__``) of the sub-package ``layer``, whatever it is called."""
    package = project / "mellea_ctx" / layer
    modules = sorted(p for p in package.glob("*.py") if p.stem != "__init__")
    assert modules, f"no module in mellea_ctx/{layer}"
    return modules[0]


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on the copy in ``project``: its folder comes first on the path."""
    env = {**os.environ, "PYTHONPATH": str(project), "COLUMNS": "200", "NO_COLOR": "1"}
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache", str(project / "pyproject.toml")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def module_name(project: Path, path: Path) -> str:
    return ".".join(path.relative_to(project).with_suffix("").parts)


class TestContracts:
    def test_the_package_keeps_every_contract(self, tmp_path: Path) -> None:
        """The unmodified copy keeps all the contracts, and all of them were checked."""
        project = copy_project(tmp_path)
        result = lint_imports(project)
        assert 0 == result.returncode, result.stdout + result.stderr
        assert f"Contracts: {CONTRACTS} kept, 0 broken." in result.stdout

    @pytest.mark.parametrize(
        ("layer", "added", "contract", "imported"),
        [
            # Upward: the core reaching for the command line.
            ("_core", "from .. import _cli\n", LAYERS, "mellea_ctx._cli"),
            # Upward under TYPE_CHECKING still counts: annotations couple layers too.
            (
                "_core",
                "import typing\nif typing.TYPE_CHECKING:\n    from .. import _compaction\n",
                LAYERS,
                "mellea_ctx._compaction",
            ),
            # Siblings: sessions and the agent never import each other.
            ("_sessions", "from .. import _agent\n", LAYERS, "mellea_ctx._agent"),
            ("_agent", "from .. import _sessions\n", LAYERS, "mellea_ctx._sessions"),
            # A private layer importing the public face.
            ("_compaction", "from .. import ChatContext\n", PUBLIC_FACE, "mellea_ctx"),
            # Third-party packages, a lazy import inside a function included.
            ("_core", "def _lazy() -> None:\n    import bm25s\n", CORE, "bm25s"),
            ("_formats", "import openai\n", FORMATS, "openai"),
            ("_backends", "import rich\n", CLI_ONLY, "rich"),
        ],
        ids=[
            "core-imports-cli",
            "core-imports-compaction-for-types",
            "sessions-imports-agent",
            "agent-imports-sessions",
            "compaction-imports-public-face",
            "core-imports-bm25s-lazily",
            "formats-imports-openai",
            "backends-imports-rich",
        ],
    )
    def test_a_forbidden_import_breaks_its_contract(
        self, tmp_path: Path, layer: str, added: str, contract: str, imported: str
    ) -> None:
        """One import appended to a module of ``layer`` makes lint-imports fail on ``contract``."""
        project = copy_project(tmp_path)
        module = some_module(project, layer)
        with module.open("a", encoding="utf-8") as file:
            file.write("\n\n# Deliberately breaks the layering (tests/test_layering.py).\n" + added)
        result = lint_imports(project)
        assert 1 == result.returncode, result.stdout + result.stderr
        assert re.search(rf"^{re.escape(contract)} BROKEN$", result.stdout, re.M), result.stdout
        line = rf"{re.escape(module_name(project, module))} -> {re.escape(imported)} \(l\.\d+\)"
        assert re.search(line, result.stdout), result.stdout
