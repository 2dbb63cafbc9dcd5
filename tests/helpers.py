"""Small helpers the example-based tests share."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from mellea_ctx import ChatContext, Component

ROOT = Path(__file__).resolve().parent.parent
#: The repository's benchmarks, loaded by file path (they are scripts, not a package).
BENCHMARKS = ROOT / "benchmarks"


def _corpus() -> Path:
    """``$MELLEA_CTX_CORPUS``, else ``shared/corpus`` beside the repository (or its worktree)."""
    given = os.environ.get("MELLEA_CTX_CORPUS")
    if given:
        return Path(given)
    beside = [place / "shared" / "corpus" for place in (ROOT.parent, ROOT.parent.parent)]
    return next((path for path in beside if path.is_dir()), beside[0])


#: The real agent transcripts (``../shared/corpus``); tests that need them skip without them.
CORPUS = _corpus()


def build(*components: Component, **kwargs: object) -> ChatContext:
    """Return a context made by adding ``components`` one by one to ``ChatContext(**kwargs)``."""
    ctx = ChatContext(**kwargs)  # type: ignore[arg-type]
    for component in components:
        ctx = ctx.add(component)
    return ctx


def load_benchmark(name: str, module_name: str | None = None) -> ModuleType:
    """Load ``benchmarks/<name>.py`` as ``module_name`` (default ``_bench_<name>``).

    Registered in ``sys.modules`` under that name before it runs, as an import
    would be, so its dataclasses and pickling find it.
    """
    spec = importlib.util.spec_from_file_location(
        module_name or f"_bench_{name}", BENCHMARKS / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
