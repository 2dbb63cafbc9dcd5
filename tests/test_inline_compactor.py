"""InlineCompactor, the base of compactors that ride inside a context."""

from __future__ import annotations

import pytest

from mellea_ctx import ChatContext, CompactionError, InlineCompactor, Message


class CallsSuper(InlineCompactor):
    """A subclass that defers to the base, as a mixin chain might."""

    def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
        return super().compact(ctx)  # type: ignore[safe-super]


class ReturnsNone(InlineCompactor):
    """A subclass whose compact forgets to return the context."""

    def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
        return None  # type: ignore[return-value]


class TestInlineCompactorBase:
    def test_base_compact_raises_not_implemented(self) -> None:
        """super().compact() raises NotImplementedError that says what to do."""
        ctx = ChatContext(compactor=CallsSuper())
        with pytest.raises(NotImplementedError, match=r"CallsSuper\.compact.*return a ChatContext"):
            ctx.add(Message("user", "hi"))

    def test_a_compactor_returning_none_gets_a_clear_error(self) -> None:
        """A compact() that returns None fails in add with a CompactionError naming it."""
        ctx = ChatContext(compactor=ReturnsNone())
        with pytest.raises(CompactionError, match=r"returned None instead of a ChatContext"):
            ctx.add(Message("user", "hi"))
