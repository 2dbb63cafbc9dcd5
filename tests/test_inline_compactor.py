"""InlineCompactor, the base of compactors that ride inside a context, and its inline-cut hook."""

from __future__ import annotations

import pytest

from mellea_ctx import (
    ChatContext,
    CompactionError,
    InlineCompactor,
    Message,
    ToolCall,
    ToolMessage,
    WindowCompactor,
)

from .helpers import build


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


class DropFirstBody(InlineCompactor):
    """A pure-cut compactor with the inline-cut hook: past ``limit`` components, drop the first."""

    def __init__(self, limit: int = 2) -> None:
        self.limit = limit
        self.calls: list[str] = []

    def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
        self.calls.append("compact")
        cut = self.inline_cut(ctx)
        return ctx if cut is None else ctx.replace_span(*cut)

    def inline_cut(self, ctx: ChatContext) -> tuple[int, int] | None:
        self.calls.append("inline_cut")
        return (0, len(ctx) - self.limit) if len(ctx) > self.limit else None


class OverridesCompact(DropFirstBody):
    """Overrides ``compact`` and inherits the parent's hook, which no longer describes it."""

    def compact(self, ctx: ChatContext, *, backend: object = None) -> ChatContext:
        self.calls.append("own compact")
        return ctx


class OverridesCut(DropFirstBody):
    """Overrides only the hook: its ``compact`` (the parent's) asks the same hook."""

    def inline_cut(self, ctx: ChatContext) -> tuple[int, int] | None:
        self.calls.append("own cut")
        return (0, 1) if len(ctx) > self.limit else None


class LoudWindow(WindowCompactor):
    """A WindowCompactor subclass whose own ``compact`` keeps everything."""

    def compact(self, ctx: ChatContext, **kwargs: object) -> ChatContext:
        return ctx


def _contents(ctx: ChatContext) -> list[str | None]:
    return [c.content for c in ctx]


class TestInlineCutHook:
    def test_add_drops_the_hooks_span_without_running_compact(self) -> None:
        """With the hook, add asks it for the span; the result is what compact returns."""
        compactor, reference = DropFirstBody(limit=2), DropFirstBody(limit=2)
        ctx = ChatContext(compactor=compactor)
        plain = ChatContext()
        for text in "abcde":
            ctx = ctx.add(Message("user", text))
            plain = reference.compact(plain.add(Message("user", text)))
            assert _contents(plain) == _contents(ctx)
            assert plain.token_count == ctx.token_count
        assert ["inline_cut"] * 5 == compactor.calls
        assert ["d", "e"] == _contents(ctx)

    def test_a_subclass_overriding_compact_gets_its_compact_run(self) -> None:
        """An inherited hook was written for the parent's compact: the override runs instead."""
        compactor = OverridesCompact()
        ctx = ChatContext(compactor=compactor)
        for text in "abcd":
            ctx = ctx.add(Message("user", text))
        assert ["own compact"] * 4 == compactor.calls
        assert ["a", "b", "c", "d"] == _contents(ctx)

    def test_a_window_subclass_overriding_compact_gets_its_compact_run(self) -> None:
        """A WindowCompactor subclass with its own compact is not cut by the parent's window."""
        ctx = ChatContext(compactor=LoudWindow(size=1))
        for text in "abc":
            ctx = ctx.add(Message("user", text))
        assert ["a", "b", "c"] == _contents(ctx)

    def test_a_subclass_overriding_only_the_hook_gets_its_hook(self) -> None:
        """A hook defined below compact is honoured, and compact gives the same answer."""
        compactor = OverridesCut(limit=2)
        ctx = ChatContext(compactor=compactor)
        for text in "abcd":
            ctx = ctx.add(Message("user", text))
        assert ["c", "d"] == _contents(ctx)
        assert "compact" not in compactor.calls
        three = build(*(Message("user", t) for t in "abc"))
        assert ["b", "c"] == _contents(compactor.compact(three))

    def test_a_cut_that_detaches_a_result_is_noticed(self) -> None:
        """A hook's cut that leaves a tool result without its call marks the context detached."""
        call = ToolCall("c1", "ls", {})
        compactor = DropFirstBody(limit=1)
        ctx = ChatContext(compactor=compactor).add(Message("assistant", "", tool_calls=[call]))
        ctx = ctx.add(ToolMessage("a.txt", tool_call_id="c1"))
        assert ["a.txt"] == _contents(ctx)
        assert ctx.has_detached_results
