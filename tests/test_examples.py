"""Every script in examples/ runs to completion, so the examples never rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


class TestExamples:
    @pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.name)
    def test_example_runs(self, script: Path) -> None:
        """The example exits 0 (its own asserts check what it shows)."""
        completed = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120
        )
        assert completed.returncode == 0, completed.stderr
