"""Library adapters: the few entry points the core case needs from each library."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Lib:
    """The few entry points a benchmark case needs from one library.

    Args:
        name: Short label used in the table and the JSON.
        version: Installed distribution version.
        chat: Builds an empty ``ChatContext``, with an optional compactor.
        message: Builds a ``Message(role, content)``.
        output: Builds an assistant ``ModelOutputThunk`` carrying usage
            ``(text, prompt_tokens, completion_tokens)``.
        window: Builds ``WindowCompactor(size=size)`` with the default pin.
        threshold: Builds ``ThresholdCompactor(inner, threshold=..., measure=...)``;
            mellea has no ``measure`` (its gate always reads usage) and ignores it.
        reading: What a threshold gate reads from a context, so a run can
            check that the gate really had a figure to compare.
    """

    name: str
    version: str
    chat: Callable[[Any], Any]
    message: Callable[[Any, str], Any]
    output: Callable[[str, int, int], Any]
    window: Callable[[int], Any]
    threshold: Callable[[Any, int, Any], Any]
    reading: Callable[[Any, Any], int | None]


def dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def load_mellea() -> Lib | str:
    """Return mellea's adapter, or the reason it cannot be imported."""
    try:
        from mellea.core import ModelOutputThunk
        from mellea.stdlib.components import Message
        from mellea.stdlib.context import (
            ChatContext,
            ThresholdCompactor,
            WindowCompactor,
        )
        from mellea.stdlib.context.compactor import _last_usage_tokens
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"

    def output(text: str, prompt: int, completion: int) -> Any:
        # mellea's backends fill `generation.usage` (an OpenAI-style dict)
        # after a call; ThresholdCompactor reads `total_tokens` from it.
        thunk = ModelOutputThunk(text)
        thunk.generation.usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return thunk

    return Lib(
        name="mellea",
        version=dist_version("mellea"),
        chat=lambda compactor: ChatContext(compactor=compactor),
        message=lambda role, text: Message(role, text),
        output=output,
        window=lambda size: WindowCompactor(size=size),
        threshold=lambda inner, limit, measure: ThresholdCompactor(inner, threshold=limit),
        # The private helper its ThresholdCompactor calls on every add.
        reading=lambda gate, ctx: _last_usage_tokens(ctx),
    )


def load_ours() -> Lib | str:
    """Return mellea-ctx's adapter, or the reason it cannot be imported."""
    try:
        from mellea_ctx import (
            ChatContext,
            Message,
            ModelOutputThunk,
            ThresholdCompactor,
            Usage,
            WindowCompactor,
        )
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"

    def output(text: str, prompt: int, completion: int) -> Any:
        usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
        )
        return ModelOutputThunk(text, usage=usage)

    return Lib(
        name="ours",
        version=dist_version("mellea-ctx"),
        chat=lambda compactor: ChatContext(compactor=compactor),
        message=lambda role, text: Message(role, text),
        output=output,
        window=lambda size: WindowCompactor(size=size),
        threshold=lambda inner, limit, measure: ThresholdCompactor(
            inner, threshold=limit, measure=measure
        ),
        reading=lambda gate, ctx: gate.reading(ctx),
    )
