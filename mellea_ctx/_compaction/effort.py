"""The summarizers' ``reasoning_effort``: one option, translated by each backend.

A summary needs little reasoning, and a reasoning model asked for one at its
default effort spends most of its time and tokens thinking (zett runs its
summarizer at ``reasoning_effort=LOW`` for this reason). So both summarizing
compactors send ``reasoning_effort="low"`` by default, as the model option of
that name, unless their ``model_options`` already hold one (yours wins).

Each backend translates it the way its SDK expects, and only for models that
take it: ``OpenAIBackend`` sends Chat Completions' ``reasoning_effort`` to
reasoning models; ``AnthropicBackend`` sends ``output_config={"effort": ...}``
to Claude models with the effort control. Other models, ``ExtractiveBackend``
and any backend of yours that does not look for the option ignore it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core.checks import require_choice

#: The levels accepted: the union of what OpenAI and Anthropic name.
REASONING_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def with_reasoning_effort(
    owner: str, model_options: Mapping[str, Any] | None, reasoning_effort: str | None
) -> dict[str, Any]:
    """Return ``model_options`` with ``reasoning_effort`` added, unless it already has one.

    Raises:
        InvalidArgumentError: When ``reasoning_effort`` is not ``None`` or a known level.

    Examples:
        >>> with_reasoning_effort("X", {"max_tokens": 90}, "low")
        {'max_tokens': 90, 'reasoning_effort': 'low'}
        >>> with_reasoning_effort("X", {"reasoning_effort": "high"}, "low")
        {'reasoning_effort': 'high'}
    """
    fix = "'low' suits summaries"
    require_choice(
        owner, "reasoning_effort", reasoning_effort, REASONING_EFFORTS, none="to send none", fix=fix
    )
    options = dict(model_options or {})
    if reasoning_effort is not None:
        options.setdefault("reasoning_effort", reasoning_effort)
    return options
