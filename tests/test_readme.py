"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


class TestReadme:
    def test_python_blocks_run(self) -> None:
        """Each ```python block in the README executes without error."""
        blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
        assert blocks
        for block in blocks:
            exec(compile(block, str(README), "exec"), {"__name__": "readme"})

    def test_two_setup_commands(self) -> None:
        """The set-up section holds exactly two shell commands: run the main job, run the tests."""
        text = README.read_text(encoding="utf-8")
        setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
        commands = re.findall(r"```bash\n(.*?)```", setup, re.S)
        assert len(commands) == 2
        assert "mellea-ctx" in commands[0] and "nox" in commands[1]
