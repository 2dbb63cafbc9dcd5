"""The README's and the docs' Python examples run as written; the API reference is complete."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import mellea_ctx

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


class TestDocs:
    @pytest.mark.parametrize(
        "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.relative_to(ROOT).as_posix()
    )
    def test_python_blocks_run(self, page: Path) -> None:
        """Each ```python block on the page executes without error, in order."""
        namespace: dict[str, object] = {"__name__": "docs"}
        for block in python_blocks(page):
            exec(compile(block, str(page), "exec"), namespace)

    def test_readme_runs_after_its_set_up_command(self) -> None:
        """Every README snippet runs with only the extras the set-up command installs."""
        text = README.read_text(encoding="utf-8")
        setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
        command = re.findall(r"```bash\n(.*?)```", setup, re.S)[0]
        assert "mellea-ctx[" not in text, "advice for an index the package is not on"
        installed = re.search(r"pip install '\.\[([a-z,]+)\]'", command)
        extras = set(installed.group(1).split(",")) if installed else set()
        modules = {"openai": "openai", "anthropic": "anthropic", "redis": "redis"}
        modules |= {"search": "bm25s", "plot": "matplotlib"}
        hidden = sorted(module for extra, module in modules.items() if extra not in extras)
        script = (
            "import re, sys\n"
            f"for name in {hidden!r}:\n    sys.modules[name] = None\n"
            f"text = open({str(README)!r}, encoding='utf-8').read()\n"
            "for block in re.findall(r'```python\\n(.*?)```', text, re.S):\n"
            "    exec(compile(block, 'README.md', 'exec'), {'__name__': '__readme__'})\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]

    def test_two_setup_commands(self) -> None:
        """The set-up section holds exactly two shell commands: run the main job, run the tests."""
        text = README.read_text(encoding="utf-8")
        setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
        commands = re.findall(r"```bash\n(.*?)```", setup, re.S)
        assert len(commands) == 2
        assert "mellea-ctx" in commands[0] and "nox" in commands[1]


class TestReference:
    def test_every_public_name_has_one_entry(self) -> None:
        """Each name in ``mellea_ctx.__all__`` is rendered by exactly one ``:::`` line."""
        text = "".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("reference/*.md")))
        rendered = re.findall(r"^::: mellea_ctx\.(\w+)$", text, re.M)
        assert sorted(mellea_ctx.__all__) == sorted(rendered)

    def test_every_page_is_in_the_nav(self) -> None:
        """mkdocs.yml's nav lists every page under docs/, so none is built unreachable."""
        nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
        listed = re.findall(r":\s*(\S+\.md)$", nav, re.M)
        assert sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")) == sorted(listed)
