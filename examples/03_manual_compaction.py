"""Manual compaction between turns: you decide when, and which backend summarizes.

An on-call engineer and an assistant chase a Postgres outage over several
turns. The context carries no compactor; instead, after each turn the
application calls ``compactor.compact(ctx, backend=...)``, the way a chat
server would between requests. A ``TokenBudgetCompactor`` returns the very same
context while it is under ``max_tokens`` (so ``is`` tells you nothing
happened), and past it folds older turns into one checkpoint that keeps the
exact details (the PR, the settings) and can restore what it replaced.
The context from before the compaction is left exactly as it was.

Offline, ``ExtractiveBackend`` writes the summary. For a real model pass e.g.
``backend=OpenAIBackend("gpt-4o-mini")`` (reads OPENAI_API_KEY) at the call.
Run it:

    python examples/03_manual_compaction.py
"""

from __future__ import annotations

from mellea_ctx import ChatContext, Checkpoint, ExtractiveBackend, Message, TokenBudgetCompactor

TURNS = [
    (
        "Checkout is returning 500s since 14:05 UTC. The API logs say "
        "'FATAL: sorry, too many clients already' from db-primary-2.",
        "That is Postgres refusing new connections: max_connections is exhausted. "
        "Run `SELECT count(*), state FROM pg_stat_activity GROUP BY state;` on db-primary-2.",
    ),
    (
        "It shows 497 idle, 3 active. max_connections is 500.",
        "So the pool leaks idle connections rather than the load being high. "
        "Which services connect directly, and did any deploy around 14:00?",
    ),
    (
        "checkout-api v2.31.0 went out at 13:58. It uses SQLAlchemy with pool_size=20, "
        "max_overflow=40, and it runs 12 pods.",
        "12 pods x (20 + 40) = 720 possible connections, above the 500 allowed. Before "
        "v2.31.0, was max_overflow lower?",
    ),
    (
        "Yes, v2.30.4 had max_overflow=10. The change came in PR #4812 to absorb spikes.",
        "Then 12 x 30 = 360 fit. Roll checkout-api back to v2.30.4, or set "
        "max_overflow=10 through CHECKOUT_DB_MAX_OVERFLOW without a rebuild.",
    ),
    (
        "I set CHECKOUT_DB_MAX_OVERFLOW=10 and restarted the pods. 500s stopped at 14:41.",
        "Good. Terminate the idle leftovers with pg_terminate_backend on sessions idle over "
        "10 minutes, and add a PgBouncer in front of db-primary-2 so pods cannot exhaust it.",
    ),
    (
        "Done. What should go in the incident report?",
        "Timeline 13:58 deploy to 14:41 recovery; cause: PR #4812 raised max_overflow to 40; "
        "fix: CHECKOUT_DB_MAX_OVERFLOW=10; follow-ups: PgBouncer, a connection budget check in CI.",
    ),
]


def main() -> None:
    compactor = TokenBudgetCompactor(
        max_tokens=420, target_tokens=340, keep_recent_tokens=120, summary_tokens=150
    )
    backend = ExtractiveBackend()
    ctx = ChatContext().add(Message("system", "You are an SRE assistant. Be precise."))

    compactions = 0
    for number, (question, answer) in enumerate(TURNS, start=1):
        ctx = ctx.add(Message("user", question)).add(Message("assistant", answer))
        before = ctx
        ctx = compactor.compact(ctx, backend=backend)  # between turns, on your schedule
        if ctx is before:
            print(f"turn {number}: {before.token_count} tokens, under budget, unchanged")
            continue
        compactions += 1
        print(f"turn {number}: {before.token_count} -> {ctx.token_count} tokens, compacted")
        assert len(before) == 2 * number + 1  # the uncompacted context is still intact
        restored = next(c for c in ctx if isinstance(c, Checkpoint)).restore()
        assert restored.as_list() == before.as_list()  # and it can come back

    assert compactions >= 1, "the last turns should have passed max_tokens"
    checkpoint = next(c for c in ctx if isinstance(c, Checkpoint))
    print("\nwhat the model sees now:")
    for component in ctx:
        print(f"  {component.role:9} {component.content[:90]!r}")
    print("\nthe checkpoint in full:\n" + checkpoint.content)

    assert ctx[0].role == "system" and ctx[-1].content.startswith("Timeline 13:58")
    # The exact details survive verbatim: the pull request's number and the setting's value.
    assert "#4812" in checkpoint.content and "max_overflow=40" in checkpoint.content


if __name__ == "__main__":
    main()
