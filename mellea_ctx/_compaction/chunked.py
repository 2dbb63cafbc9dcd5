"""Summary requests that fit the summarizer's window: one when the span fits, chunks otherwise.

The input budget is the backend's ``context_window`` less room for the answer
(the ``max_tokens`` model option, or a quarter of the window up to 2,048
tokens) and less the instructions and prompt around the conversation. A span
that fits (shortened, see :mod:`.render_budget`) goes in one request; a span
that does not is summarized in chunks, each request holding the summary so
far as an earlier checkpoint, so the last answer covers the whole span. With
no known window the span is rendered as before, in one request.

When the summarizer answers that a request is longer than its window
(:class:`~mellea_ctx.ContextOverflowError`), declared window or not, the
span is summarized again within a smaller window: the one the provider
stated, or else half of what was sent; at most :data:`OVERFLOW_RETRIES` times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .._core.checkpoint import Checkpoint
from .._core.components import Component, Message
from .._core.exceptions import ContextOverflowError, SpanTooLargeError
from .._core.protocols import Backend
from .._core.tokens import TokenCounter, count_all
from .._formats.quoted import conversation_lines
from .prompts import SUMMARIZER_INSTRUCTIONS
from .render_budget import Shortener, fit_conversation, plan_chunks

# A carried summary takes at most this share of a chunk's budget.
_CARRY_SHARE = 0.3
#: How many times a summary is asked again, in a smaller window, after the summarizer
#: answered that a request overflowed its window.
OVERFLOW_RETRIES = 3


def input_budget(
    window: int, counter: TokenCounter, frame: Callable[[str], str], options: Mapping[str, Any]
) -> int:
    """The tokens the rendered conversation may take in one request to a ``window``-token model."""
    answer = options.get("max_tokens")
    if not isinstance(answer, int) or isinstance(answer, bool) or answer <= 0:
        answer = min(window // 4, 2_048)
    overhead = counter.count(Message("system", SUMMARIZER_INSTRUCTIONS))
    overhead += counter.count(Message("user", frame(""))) + 16
    return window - answer - overhead


async def summarize_span(
    span: Sequence[Component],
    backend: Backend,
    counter: TokenCounter,
    frame: Callable[[str], str],
    ask: Callable[[list[Component]], Awaitable[str]],
    model_options: Mapping[str, Any],
    details: Sequence[str],
    frame_lines: Callable[[list[str]], str] | None = None,
) -> tuple[str, int]:
    """Summarize ``span`` within ``backend.context_window``; return the summary and chunk count.

    Args:
        span: The components to summarize.
        backend: The summarizer; its ``context_window`` (tokens, or ``None``) bounds each request.
        counter: Counts tokens as the request will cost them.
        frame: Puts a rendered conversation into the prompt template.
        ask: Sends the request messages and returns the summary text.
        model_options: The request's model options (``max_tokens`` reserves room).
        details: Exact details whose lines are kept when long texts are shortened.
        frame_lines: ``frame`` given the rendered conversation's lines (it joins
            them into the prompt itself, so a span that fits whole never has its
            transcript and its prompt as two strings at once); ``None``: ``frame``.

    Raises:
        SpanTooLargeError: If the budget is too small for any request, or one
            component cannot fit even shortened.
        ContextOverflowError: If the summarizer still overflows after
            :data:`OVERFLOW_RETRIES` smaller windows.
    """
    declared = getattr(backend, "context_window", None)
    window = declared if isinstance(declared, int) and not isinstance(declared, bool) else None
    sent: list[int] = []  # the size of each request, as we count it

    def counted(prompt: str) -> list[Component]:
        request = _request(prompt)
        sent.append(count_all(counter, request))  # memoized: the backend may count it too
        return request

    retries = 0
    while True:
        sent.clear()
        try:
            return await _within(
                span, window, counter, frame, ask, model_options, details, counted, frame_lines
            )
        except ContextOverflowError as exc:
            if retries == OVERFLOW_RETRIES:
                raise
            retries += 1
            largest = max(sent, default=0)
            stated = exc.limit_tokens if exc.limit_tokens and exc.limit_tokens < largest else None
            window = stated if stated is not None else max(largest // 2, 1)


async def _within(
    span: Sequence[Component],
    window: int | None,
    counter: TokenCounter,
    frame: Callable[[str], str],
    ask: Callable[[list[Component]], Awaitable[str]],
    model_options: Mapping[str, Any],
    details: Sequence[str],
    counted: Callable[[str], list[Component]],
    frame_lines: Callable[[list[str]], str] | None,
) -> tuple[str, int]:
    if window is None:
        lines = conversation_lines(span)
        prompt = frame_lines(lines) if frame_lines is not None else frame("\n".join(lines))
        del lines
        return await ask(counted(prompt)), 1
    budget = input_budget(window, counter, frame, model_options)
    if budget < 128:
        msg = (
            f"the summarizer's context_window={window!r} leaves {budget} tokens for the "
            "conversation after the instructions and the answer; use a larger window or a "
            "smaller max_tokens"
        )
        raise SpanTooLargeError(msg)

    def count(text: str) -> int:
        return counter.count(Message("user", text))

    shortener = Shortener(tuple(details))
    whole = fit_conversation(span, budget, count, shortener)
    if whole is not None:
        return await ask(counted(frame(whole))), 1
    carry = int(budget * _CARRY_SHARE)
    chunks = plan_chunks(span, budget - carry, count, shortener)
    summary = ""
    for chunk in chunks:
        earlier: list[Component] = []
        if summary:
            earlier = [Checkpoint(shortener.shorten(summary, carry * 3), replaced_count=1)]
        rendered = fit_conversation([*earlier, *chunk], budget, count, shortener)
        if rendered is None:  # the carried summary did not leave room: send the chunk alone
            rendered = fit_conversation(chunk, budget, count, shortener) or ""
        summary = await ask(counted(frame(rendered)))
    return summary, len(chunks)


def _request(prompt: str) -> list[Component]:
    return [Message("system", SUMMARIZER_INSTRUCTIONS), Message("user", prompt)]
