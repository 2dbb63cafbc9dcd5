"""Inline compaction: a context that keeps itself under a token threshold as an agent runs.

A simulated coding agent reads files with a tool. The context carries a
``ThresholdCompactor`` around a ``WindowCompactor``: nothing happens until the
history passes 1,500 tokens, then the window keeps the system prompt, the
task, and the last 6 body components, never splitting a tool call from its
result. Every context along the way stays readable exactly as it was.

Run it: ``python examples/inline_compaction.py``
"""

from __future__ import annotations

from mellea_ctx import (
    ChatContext,
    Message,
    ThresholdCompactor,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    pin_system_and_initial_user,
)


def main() -> None:
    compactor = ThresholdCompactor(
        WindowCompactor(size=6, pin_predicate=pin_system_and_initial_user),
        threshold=1_500,
    )
    ctx = ChatContext(compactor=compactor)
    ctx = ctx.add(Message("system", "You are a careful coding agent. Read before you edit."))
    ctx = ctx.add(Message("user", "Find where the retry limit is configured in src/."))
    first = ctx

    for step in range(12):
        path = f"src/module_{step}.py"
        call = ToolCall(f"call_{step}", "read_file", {"path": path})
        ctx = ctx.add(Message("assistant", f"Reading {path}.", tool_calls=[call]))
        body = "\n".join(f"def handler_{step}_{line}(): return {line}" for line in range(20))
        ctx = ctx.add(ToolMessage(body, tool_call_id=call.id, name="read_file"))
        print(f"step {step:2}: {len(ctx):2} components, {ctx.token_count:5} tokens")

    kept = ctx.as_list()
    print("kept:", [f"{c.role}:{c.content[:24]!r}" for c in kept[:3]], "...")
    # The first context is untouched: compaction built new contexts beside it.
    assert first.as_list()[1].content.startswith("Find where")
    assert kept[0].role == "system" and kept[1].content.startswith("Find where")
    assert ctx.token_count <= 1_500


if __name__ == "__main__":
    main()
