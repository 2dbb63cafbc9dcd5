"""The package's public surface is exactly what ``__all__`` says."""

from __future__ import annotations

import inspect

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
        # ``integrations`` is the public sub-package of framework adapters: an attribute once
        # any adapter has been imported, never exported from the package itself.
        public = {
            name
            for name in vars(mellea_ctx)
            if not name.startswith("_") and name not in ("annotations", "integrations")
        }
        assert public == set(mellea_ctx.__all__)

    def test_exported_objects_claim_the_package(self) -> None:
        """Exported classes and functions live in mellea_ctx's own modules (aliases aside)."""
        for name in mellea_ctx.__all__:
            member = getattr(mellea_ctx, name)
            if inspect.isclass(member) or inspect.isfunction(member):
                assert member.__module__.startswith("mellea_ctx"), (name, member.__module__)
