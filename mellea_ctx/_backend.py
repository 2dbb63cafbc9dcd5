"""The ``Backend`` protocol: what a compactor needs from a model.

Concrete backends (OpenAI, Anthropic, the offline default, a scripted one for
tests) implement it; compactors that only drop components ignore it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ._components import Component, ModelOutputThunk

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """Generates one model output for a list of components."""

    async def generate(
        self,
        messages: Sequence[Component],
        *,
        model_options: Mapping[str, Any] | None = None,
    ) -> ModelOutputThunk:
        """Return the model's output for ``messages``."""
        ...
