"""Collection rules for the whole repository (tests/conftest.py holds the test configuration).

The framework adapters in ``mellea_ctx/integrations/`` import their framework
on import, so their doctests are collected only where the framework is
installed (``pip install '.[langchain]'`` and so on; ``nox -s tests`` installs
every extra).
"""

from __future__ import annotations

import importlib.util

_FRAMEWORKS = {
    "mellea_ctx/integrations/langchain.py": "langchain",
    "mellea_ctx/integrations/pydantic_ai.py": "pydantic_ai",
    "mellea_ctx/integrations/openai_agents.py": "agents",
}

collect_ignore = [
    path for path, module in _FRAMEWORKS.items() if importlib.util.find_spec(module) is None
]
