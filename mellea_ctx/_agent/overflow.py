"""Overflow recovery: when the provider says the request is too long, compact once and retry.

Our counts and the provider's differ (its tokenizer, its framing, images),
so a request we sized to fit can still be refused as longer than the
window. :func:`generate` then runs the loop's compactor forced past its
threshold, and retries once. It never loops: a second refusal, or a
compaction that could not make the history smaller (the pinned prefix and
the current turn alone are too long), raises
:class:`~mellea_ctx.ContextOverflowError` with both sizes in the message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._core.components import Component, ModelOutputThunk
from .._core.context import ChatContext
from .._core.exceptions import ContextOverflowError
from .._core.protocols import Backend, Compactor
from .._core.tool_tokens import count_tool_definitions, request_overhead, request_tools
from .._core.tools import Tool
from .compaction_tools import run_compactor
from .loop_state import Loop


async def compact_for_request(
    loop: Loop,
    compactor: Compactor,
    before: ChatContext,
    compaction_backend: Backend | None,
    tools: Sequence[Tool],
    *,
    force: bool,
    focus: str,
) -> ChatContext:
    """Run ``compactor`` on ``before`` for a request that will send ``tools``; the result.

    The tool definitions count against the budget while it runs (and a
    continuation summary sends them). A compactor that reports no record (a
    window) has its cut reported here, so ``compaction_started`` always has
    its completion. ``loop.ctx`` is left as it was.
    """
    overhead = request_overhead.set(tool_overhead(loop.backend, tools))
    offered = request_tools.set(tuple(tools))
    reported = loop.records
    try:
        after = await run_compactor(compactor, before, compaction_backend, force=force, focus=focus)
    finally:
        request_tools.reset(offered)
        request_overhead.reset(overhead)
    if loop.records == reported:
        current, loop.ctx = loop.ctx, after
        loop.report_cut(compactor, before, forced=force)
        loop.ctx = current
    return after


def _overflow(msg: str, refused: ContextOverflowError) -> ContextOverflowError:
    """Our overflow error, with the sizes of the provider's refusal."""
    return ContextOverflowError(
        msg, prompt_tokens=refused.prompt_tokens, limit_tokens=refused.limit_tokens
    )


def framing_of(backend: object) -> Any:
    """How ``backend``'s provider frames tool definitions (``"anthropic"`` or ``"openai"``)."""
    return "anthropic" if getattr(backend, "provider", None) == "Anthropic" else "openai"


def tool_overhead(backend: object, tools: Sequence[Tool]) -> int:
    """The tokens the definitions of ``tools`` add to a request to ``backend``."""
    return count_tool_definitions(tools, framing_of(backend))


def _sizes(exc: ContextOverflowError) -> str:
    if exc.prompt_tokens is None and exc.limit_tokens is None:
        return "the provider did not say by how much"
    return f"the provider counted {exc.prompt_tokens} tokens against a window of {exc.limit_tokens}"


async def generate(
    loop: Loop,
    compactor: Compactor | None,
    compaction_backend: Backend | None,
    messages_of: Callable[[], list[Component]],
    tools: Sequence[Tool],
    model_options: Mapping[str, Any] | None,
) -> ModelOutputThunk:
    """Ask the backend for the next output; on overflow, compact once (forced) and retry once.

    Raises:
        ContextOverflowError: When there is no compactor, the compaction could
            not shrink the history, or the retried request overflows too.
    """
    assert loop.ctx is not None
    backend = loop.backend
    offered = list(tools) or None
    try:
        return await backend.generate(messages_of(), model_options=model_options, tools=offered)
    except ContextOverflowError as exc:
        first = exc
    before = loop.ctx
    loop.emit("context_overflow", error=str(first))
    if compactor is None:
        msg = (
            f"react: the request ({before.token_count} tokens by our count, plus "
            f"{tool_overhead(backend, tools)} for tool definitions) is longer than the model's "
            f"window: {_sizes(first)}; pass compactor=... so react can compact and retry"
        )
        raise _overflow(msg, first) from first
    loop.emit("compaction_started")
    after = await compact_for_request(
        loop, compactor, before, compaction_backend, tools, force=True, focus=""
    )
    if after is before or after.token_count >= before.token_count:
        msg = (
            f"react: the request is longer than the model's window ({_sizes(first)}) and "
            f"compacting could not shorten it: {before.token_count} tokens by our count before "
            f"and {after.token_count} after; the pinned prefix and the current turn alone are "
            "too long; shorten the system prompt or the goal, or use a model with a larger window"
        )
        raise _overflow(msg, first) from first
    loop.ctx = after
    try:
        return await backend.generate(messages_of(), model_options=model_options, tools=offered)
    except ContextOverflowError as second:
        msg = (
            f"react: the request was still longer than the model's window after one forced "
            f"compaction ({before.token_count} -> {after.token_count} tokens by our count; "
            f"{_sizes(second)}); not compacting again: set the compactor's target lower"
        )
        raise _overflow(msg, second) from second
