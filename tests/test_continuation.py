"""Continuation summary requests outside react: the context's messages, one turn, no tools."""

from __future__ import annotations

from typing import Any

import pytest

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    ExtractiveBackend,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    Message,
    ScriptedBackend,
    TokenBudgetCompactor,
)


def _ctx(n: int = 8) -> ChatContext:
    ctx = ChatContext().add(Message("system", "You are terse."))
    for i in range(n):
        ctx = ctx.add(Message("user", f"question {i}: what is the status of ticket T-{i}?"))
        ctx = ctx.add(Message("assistant", f"Ticket T-{i} is open and assigned to team {i}."))
    return ctx


def _recording() -> tuple[ScriptedBackend, list[tuple[list[Any], dict[str, Any]]]]:
    seen: list[tuple[list[Any], dict[str, Any]]] = []

    def answer(messages: list[Any], options: dict[str, Any]) -> str:
        seen.append((list(messages), dict(options)))
        return "Tickets T-0 to T-5 are open."

    return ScriptedBackend(answer), seen


def test_continuation_sends_the_context_then_one_turn_and_no_tools():
    """Outside react the request is the context's components, in order, plus one user turn."""
    backend, seen = _recording()
    ctx = _ctx()
    compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=4, request="continuation")
    small = compactor.compact(ctx)

    ((messages, options),) = seen
    assert ctx.as_list() == messages[:-1]
    turn = messages[-1]
    assert "user" == turn.role
    assert turn.content.startswith('<checkpoint_request first="1" keep_last="4">')
    assert "question 6" in turn.content  # it quotes where the kept messages start
    assert "tools" not in options
    assert isinstance(small[1], Checkpoint)
    assert 1 + 1 + 4 == len(small)


def test_quoted_is_the_default():
    """Without ``request`` the summary is a fresh two-message prompt."""
    backend, seen = _recording()
    LLMSummarizeCompactor(default_backend=backend, keep_n=4).compact(_ctx())

    ((messages, _),) = seen
    assert ["system", "user"] == [m.role for m in messages]
    assert "<conversation>" in messages[-1].content


def test_a_continuation_too_long_for_the_summarizer_falls_back_to_quoted():
    """A continued prompt past the summarizer's window is sent as a quoted (fitting) request."""
    ctx = _ctx(40)
    window = ctx.token_count + 200  # the whole context fits, but not with room for the answer
    backend = ExtractiveBackend(context_window=window)
    compactor = TokenBudgetCompactor(
        max_tokens=ctx.token_count - 1,
        target_tokens=ctx.token_count // 2,
        default_backend=backend,
        request="continuation",
        strict=True,
    )
    small = compactor.compact(ctx)

    assert small.token_count < ctx.token_count
    assert "<checkpoint_request" not in small[1].content


def test_extractive_summarizes_only_the_span_a_continuation_names():
    """ExtractiveBackend reads the span between the pinned prefix and the kept messages."""
    ctx = _ctx()
    compactor = LLMSummarizeCompactor(
        default_backend=ExtractiveBackend(), keep_n=4, request="continuation"
    )
    small = compactor.compact(ctx)

    summary = small[1].content
    assert "T-5" in summary
    assert "T-6" not in summary and "T-7" not in summary  # kept verbatim, not summarized
    assert "checkpoint_request" not in summary


@pytest.mark.parametrize("owner", [LLMSummarizeCompactor, TokenBudgetCompactor])
def test_an_unknown_request_mode_is_refused(owner):
    """The error names the argument, its value and both modes."""
    kwargs: dict[str, Any] = {"max_tokens": 100} if owner is TokenBudgetCompactor else {}
    with pytest.raises(InvalidArgumentError, match=r"request='cached'.*'quoted'.*'continuation'"):
        owner(request="cached", **kwargs)
