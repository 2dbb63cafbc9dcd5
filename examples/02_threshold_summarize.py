"""Threshold-gated summarization: summarize only when the history passes a token bound.

The bundled sample is a real 62-message airline support run (tau-bench, GPT-4o):
a customer downgrades six reservations, and the agent looks up each one, then
searches flights. Replaying it into a ``ChatContext`` that carries
``ThresholdCompactor(LLMSummarizeCompactor(...), threshold=6_000)``, nothing
happens until the exact token total passes 6,000; then everything but the
system policy, the customer's first message and the last 6 components becomes
one checkpoint, and the replay goes on from there. The checkpoint carries exact
details (ids, amounts) verbatim, and hands back the context it replaced.

Offline, summaries come from ``ExtractiveBackend`` (no key, no network). For a
real model, pass ``default_backend=OpenAIBackend("gpt-4o-mini")`` (reads
OPENAI_API_KEY) or ``AnthropicBackend("claude-sonnet-4-6")``. Run it:

    python examples/02_threshold_summarize.py
"""

from __future__ import annotations

from importlib.resources import files

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    ThresholdCompactor,
    load_conversation,
    pin_system_and_initial_user,
)

SAMPLE = files("mellea_ctx") / "data" / "sample_conversation.json"


def main() -> None:
    summarize = LLMSummarizeCompactor(
        default_backend=ExtractiveBackend(),
        keep_n=6,
        pin_predicate=pin_system_and_initial_user,
    )
    ctx = ChatContext(compactor=ThresholdCompactor(summarize, threshold=6_000))

    replay = load_conversation(str(SAMPLE))
    for number, message in enumerate(replay, start=1):
        before = len(ctx)
        ctx = ctx.add(message)  # compacts itself when the total passes 6,000 tokens
        if len(ctx) < before + 1:
            print(f"message {number}: summarized, {before + 1} -> {len(ctx)} components")

    checkpoints = [c for c in ctx if isinstance(c, Checkpoint)]
    latest = checkpoints[-1]
    print(f"replayed {len(replay)} messages: {len(ctx)} components, {ctx.token_count} tokens")
    print(f"the checkpoint stands for {latest.replaced_count} messages:")
    print(latest.content[:400], "...")

    assert len(checkpoints) == 1  # a later summary folds the earlier checkpoint in
    assert ctx[0].content.startswith("# Airline Agent Policy")  # pinned, never summarized
    assert ctx[1].content.startswith("Hi, I'm having a bit of a situation")  # pinned too
    assert "omar_davis_3817" in latest.content  # the customer's id survived
    assert ctx.token_count <= 6_000
    # The checkpoint hands back the exact context it replaced, and it was longer.
    assert len(latest.restore()) > len(ctx)


if __name__ == "__main__":
    main()
