"""Pin predicates: which leading components each one protects."""

from __future__ import annotations

import pytest

from mellea_ctx import (
    CBlock,
    Checkpoint,
    Component,
    LLMSummarizeCompactor,
    Message,
    ReactInitiator,
    ScriptedBackend,
    pin_system,
    pin_system_and_initial_user,
)

from .helpers import build

SYSTEM = Message("system", "You are a coding agent.")


def long_text(label: str) -> str:
    return f"{label}: " + "we read the retry logic of the worker pool once more. " * 8


class TestPinSystemAndInitialUser:
    @pytest.mark.parametrize(
        "first",
        [CBlock("a block"), ReactInitiator("a goal")],
        ids=["cblock", "react-initiator"],
    )
    def test_only_a_user_message_is_pinned(self, first: Component) -> None:
        """A user-role component that is not a Message is body, as in mellea."""
        assert first.role == "user"
        assert 1 == pin_system_and_initial_user([SYSTEM, first, Message("user", "x")])

    def test_a_user_message_is_pinned(self) -> None:
        """The user Message right after the system prompt is pinned."""
        assert 2 == pin_system_and_initial_user([SYSTEM, Message("user", "task")])

    def test_checkpoint_after_the_system_prompt_is_not_pinned(self) -> None:
        """A checkpoint left after the system prompt is body, so it can be folded again."""
        backend = ScriptedBackend(lambda messages, options: "summary")
        first = LLMSummarizeCompactor(
            default_backend=backend, keep_n=1, pin_predicate=pin_system, preserve_facts=False
        )
        ctx = build(
            SYSTEM, Message("user", long_text("task")), Message("assistant", long_text("a"))
        )
        ctx = first.compact(ctx)
        assert [Message, Checkpoint, Message] == [type(c) for c in ctx]
        assert 1 == pin_system_and_initial_user(ctx)

    def test_checkpoints_do_not_pile_up(self) -> None:
        """Repeated compactions under this pin keep one checkpoint, not one per round."""
        backend = ScriptedBackend(lambda messages, options: "summary")
        compactor = LLMSummarizeCompactor(
            default_backend=backend,
            keep_n=1,
            pin_predicate=pin_system_and_initial_user,
            preserve_facts=False,
        )
        ctx = build(SYSTEM)
        for i in range(4):
            ctx = compactor.compact(ctx.add(Message("assistant", long_text(str(i)))))
        kinds = [type(c) for c in ctx]
        assert 1 == kinds.count(Checkpoint)
        assert [Message, Checkpoint, Message] == kinds
