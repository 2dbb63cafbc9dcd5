"""The package's public surface is exactly what ``__all__`` says."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import mellea_ctx


def isort_key(name: str) -> tuple[int, str]:
    """Order names as ruff's RUF022 does: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


class TestExportedMembers:
    def test_all_is_sorted(self) -> None:
        """``__all__`` is kept sorted so additions are easy to review."""
        assert sorted(mellea_ctx.__all__, key=isort_key) == mellea_ctx.__all__

    def test_all_is_the_public_surface(self) -> None:
        """Every public name in the package namespace is exported, and nothing else."""
        for name in mellea_ctx.__all__:
            getattr(mellea_ctx, name)  # a lazy name is in the namespace once used
        # ``integrations`` is the public sub-package of framework adapters: an attribute once
        # any adapter has been imported, never exported from the package itself.
        hidden = ("annotations", "integrations", "importlib", "TYPE_CHECKING", "Any")
        public = {name for name in vars(mellea_ctx) if not name.startswith("_")}
        assert public - set(hidden) == set(mellea_ctx.__all__)
        assert set(dir(mellea_ctx)) >= set(mellea_ctx.__all__)

    def test_the_lazy_table_names_what_the_type_checkers_read(self) -> None:
        """``_EXPORTS`` (run time) and the ``TYPE_CHECKING`` imports (type checkers, docs) agree."""
        tree = ast.parse(inspect.getsource(mellea_ctx))
        guarded = next(node for node in tree.body if isinstance(node, ast.If))
        declared = {
            alias.asname or alias.name: "." + (node.module or "")
            for node in guarded.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert declared == mellea_ctx._WHERE
        assert set(declared) == set(mellea_ctx.__all__)

    def test_private_modules_do_not_list_the_names_again(self) -> None:
        """``_EXPORTS`` is the one list: a private module has no ``__all__`` of its own.

        A private sub-package's ``__init__.py`` that re-exports its modules' names keeps one.
        """
        package = Path(mellea_ctx.__file__).parent
        listing = []
        for path in sorted([*package.glob("_*/**/*.py"), *package.glob("integrations/_*.py")]):
            if path.name == "__init__.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, ast.AnnAssign):
                    targets = [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                    listing.append(str(path.relative_to(package)))
        assert listing == []

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
            mellea_ctx.NoSuchThing  # noqa: B018

    def test_import_loads_no_module_of_ours_and_no_sdk(self) -> None:
        """``import mellea_ctx`` alone loads only the package (each name loads on first use)."""
        script = (
            "import sys; import mellea_ctx; "
            "ours = [m for m in sys.modules if m.startswith('mellea_ctx')]; "
            "sdks = [m for m in ('openai', 'anthropic', 'redis', 'httpx', 'pydantic', "
            "'opentelemetry', 'click', 'rich', 'psycopg', 'agents') if m in sys.modules]; "
            "print(len(ours), sdks)"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        assert done.stdout.split(maxsplit=1) == ["1", "[]\n"], done.stderr

    def test_exported_objects_claim_the_package(self) -> None:
        """Exported classes and functions live in mellea_ctx's own modules (aliases aside)."""
        for name in mellea_ctx.__all__:
            member = getattr(mellea_ctx, name)
            if inspect.isclass(member) or inspect.isfunction(member):
                assert member.__module__.startswith("mellea_ctx"), (name, member.__module__)
