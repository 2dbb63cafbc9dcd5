"""The README's and the docs' Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


class TestDocs:
    @pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
    def test_python_blocks_run(self, page: Path) -> None:
        """Each ```python block on the page executes without error, in order."""
        namespace: dict[str, object] = {"__name__": "docs"}
        for block in python_blocks(page):
            exec(compile(block, str(page), "exec"), namespace)

    def test_two_setup_commands(self) -> None:
        """The set-up section holds exactly two shell commands: run the main job, run the tests."""
        text = README.read_text(encoding="utf-8")
        setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
        commands = re.findall(r"```bash\n(.*?)```", setup, re.S)
        assert len(commands) == 2
        assert "mellea-ctx" in commands[0] and "nox" in commands[1]
