"""A sliding window that rides inside the context: every add keeps it short, O(1).

A coding agent reads source files with a tool, one or two at a time. The
``ChatContext`` carries a ``WindowCompactor``: after every ``add`` it keeps the
system prompt, the task (``pin_system_and_initial_user``) and the last 6 body
components. When the window's edge would fall between an assistant's tool
calls and their results, the window widens instead, so the history is always
one that a provider accepts. Contexts built earlier read back exactly as before.

No model is called, so there is nothing to configure. Run it:

    python examples/01_inline_window.py
"""

from __future__ import annotations

from mellea_ctx import (
    ChatContext,
    Message,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    pin_system_and_initial_user,
    validate_openai,
)

SOURCES = {
    "src/http/client.py": "class Client:\n    retries = Backoff(limit=3)",
    "src/http/retry.py": "class Backoff:\n    def __init__(self, limit=5, base=0.5): ...",
    "src/settings.py": "HTTP_RETRY_LIMIT = int(os.environ.get('HTTP_RETRY_LIMIT', 5))",
    "src/http/session.py": "def make_session(cfg):\n    return Client(timeout=cfg.TIMEOUT)",
    "tests/test_retry.py": "def test_gives_up():\n    assert Backoff(limit=2).tries == 2",
    "CHANGELOG.md": "## 2.4.0\n- Client: retry at most 3 times (was 5) to fail fast behind the LB.",
}


def main() -> None:
    window = WindowCompactor(size=6, pin_predicate=pin_system_and_initial_user)
    ctx = ChatContext(compactor=window)
    ctx = ctx.add(Message("system", "You are a careful coding agent. Read before you edit."))
    ctx = ctx.add(Message("user", "Why does the HTTP client give up after 3 retries, not 5?"))
    task_only = ctx

    widest = 0
    for step, (path, text) in enumerate(SOURCES.items(), start=1):
        # Every other step the agent also greps the file: two parallel calls, two results.
        calls = [ToolCall(f"call_{step}a", "read_file", {"path": path})]
        if step % 2 == 0:
            calls.append(ToolCall(f"call_{step}b", "grep", {"pattern": "limit", "path": path}))
        ctx = ctx.add(Message("assistant", f"Reading {path}.", tool_calls=calls))
        ctx = ctx.add(ToolMessage(text, tool_call_id=calls[0].id, name="read_file"))
        if len(calls) == 2:
            hits = "\n".join(line for line in text.splitlines() if "limit" in line.lower())
            ctx = ctx.add(ToolMessage(hits or "no match", tool_call_id=calls[1].id, name="grep"))
        body = len(ctx) - 2
        widest = max(widest, body)
        print(f"after {path:22} {body} body components, {ctx.token_count:4} tokens")
        assert validate_openai(ctx.as_list()) == []  # no tool result without its call

    ctx = ctx.add(Message("assistant", "client.py passes limit=3, overriding the default of 5."))
    kept = ctx.as_list()
    print("kept:", [f"{c.role}: {c.content[:30]!r}" for c in kept])

    assert kept[0].role == "system" and kept[1].content.startswith("Why does")  # pinned
    assert len(kept) - 2 == 6  # the last 6 body components...
    assert widest > 6  # ...or more, where the 6th from the end would split a tool exchange
    assert validate_openai(kept) == []
    assert len(task_only) == 2  # an earlier context is never modified


if __name__ == "__main__":
    main()
