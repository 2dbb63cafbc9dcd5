"""CompactionPlanner: compact when it pays under the price model, or when the limit forces it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    CompactionPlanner,
    CompactionRecord,
    ExtractiveBackend,
    InvalidArgumentError,
    Message,
    Pricing,
    ThresholdCompactor,
    TieredCompactor,
    TokenBudgetCompactor,
)
from mellea_ctx._compaction.planner import one_off, path_costs

pricings = st.builds(
    Pricing,
    input=st.floats(0.5, 3.0),
    cache_read=st.floats(0.0, 0.5),
    cache_write=st.floats(1.0, 2.0),
    output=st.floats(1.0, 8.0),
)


def _walk(
    *, start: float, first_read: float, first_write: float, g: float, steps: int, p: Pricing
) -> float:
    """Bill ``steps`` requests one by one: the first reads/writes as given, each later one
    reads the request before it and writes the ``g`` tokens added since."""
    total = p.cache_read * first_read + p.write * first_write
    size = start
    for _ in range(steps - 1):
        total += p.cache_read * size + p.write * g
        size += g
    return total


@given(
    p=pricings,
    n=st.integers(2_000, 60_000),
    cached_share=st.floats(0.0, 1.0),
    t_share=st.floats(0.05, 0.9),
    g=st.integers(50, 5_000),
    horizon=st.integers(1, 400),
    o=st.integers(16, 4_000),
    mode=st.sampled_from(["quoted", "continuation"]),
    head=st.integers(1_000, 200_000),
)
def test_decision_never_costs_more_than_the_opposite(
    p: Pricing,
    n: int,
    cached_share: float,
    t_share: float,
    g: int,
    horizon: int,
    o: int,
    mode: Any,
    head: int,
) -> None:
    """Under the price model, over the horizon it assumed, the chosen path is the cheaper one,
    and over a whole horizon the model's two costs differ as a request-by-request bill does."""
    c = int(n * cached_share)
    t = max(1, int(n * t_share))
    pinned = t // 3
    limit = n + head
    paths = path_costs(
        n=n, c=c, t=t, pinned=pinned, g=g, limit=limit, horizon=horizon, o=o, mode=mode, pricing=p
    )
    planner = CompactionPlanner(p, horizon=horizon)
    planner.observe(c)
    planner.grown, planner.steps = g, 1
    d = planner.decide(size=n, limit=limit, target=t, summary_tokens=o, request=mode, pinned=pinned)
    chosen, other = (d.compact_cost, d.keep_cost) if d.compact else (d.keep_cost, d.compact_cost)
    assert not d.forced
    assert chosen <= other + 1e-6 * max(1.0, abs(other))
    assert (d.keep_cost, d.compact_cost) == (paths.keep, paths.compact)
    if paths.whole:  # priced over the whole horizon, no compaction forced in it
        keep = _walk(start=n, first_read=c, first_write=n - c, g=g, steps=horizon, p=p)
        summary = (
            p.cache_read * c + p.write * (n - c) + p.output * o
            if mode == "continuation"
            else p.input * (n - t + o) + p.output * o
        )
        compact = summary + _walk(
            start=t, first_read=pinned, first_write=t - pinned, g=g, steps=horizon, p=p
        )
        # The model prices both paths relative to the compacted one's holding; the
        # difference is what a request-by-request bill gives.
        want = keep - compact
        got = paths.keep - paths.compact
        assert abs(want - got) <= 1e-6 * max(1.0, abs(want))


def test_one_off_matches_its_parts() -> None:
    p = Pricing()
    # continuation: 9,000 read and 1,000 written, 500 output at 5x; then 1,000 pinned read
    # and 3,000 written; less the kept request (9,000 read, 1,000 written).
    got = one_off(n=10_000, c=9_000, t=4_000, pinned=1_000, o=500, mode="continuation", pricing=p)
    want = 900 + 1_250 + 2_500 + 100 + 3_750 - 900 - 1_250
    assert got == pytest.approx(want)


def test_past_the_limit_always_compacts() -> None:
    planner = CompactionPlanner(horizon=1)
    d = planner.decide(size=10_001, limit=10_000, target=9_999, summary_tokens=4_000)
    assert d.compact and d.forced


def test_short_horizon_keeps() -> None:
    # One step left: a summary cannot pay back a step of cheaper reads.
    planner = CompactionPlanner(horizon=1)
    planner.observe(20_000)
    d = planner.decide(size=20_100, limit=100_000, target=4_000, summary_tokens=500)
    assert not d.compact and d.keep_cost < d.compact_cost


def test_cold_cache_is_the_moment() -> None:
    # The same context: warm, a quoted summary does not pay within a few steps; once the
    # cache has expired (idle past the TTL) both paths rewrite the prefix, and it does.
    now = [0.0]
    planner = CompactionPlanner(horizon=3, clock=lambda: now[0])
    planner.observe(20_000)
    warm = planner.decide(size=20_100, limit=100_000, target=4_000, summary_tokens=500)
    now[0] = 301.0
    cold = planner.decide(size=20_100, limit=100_000, target=4_000, summary_tokens=500)
    assert not warm.compact and cold.compact and cold.cold
    assert cold.predicted_cost < warm.predicted_cost


def test_expected_steps_default_and_learned() -> None:
    planner = CompactionPlanner()
    assert planner.expected_steps() == 50
    for i in range(80):
        planner.observe(i)
    assert planner.expected_steps() == 80
    assert CompactionPlanner(horizon=7).expected_steps() == 7


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_bad_horizon(bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        CompactionPlanner(horizon=bad)  # type: ignore[arg-type]


def _session(ctx: ChatContext, steps: int) -> ChatContext:
    for i in range(steps):
        ctx = ctx.add(Message("user", f"step {i}: " + "the build log says error E{i} " * 30))
        ctx = ctx.add(Message("assistant", f"Step {i}: fixed E{i}, next."))
    return ctx


def _budget(records: list[CompactionRecord], planner: CompactionPlanner | None) -> Any:
    return TokenBudgetCompactor(
        max_tokens=12_000,
        target_tokens=1_500,
        boundary="model_step",
        default_backend=ExtractiveBackend(),
        request="continuation",
        on_record=records.append,
        planner=planner,
    )


def test_planner_compacts_before_the_limit_and_writes_the_ledger() -> None:
    plain: list[CompactionRecord] = []
    planned: list[CompactionRecord] = []
    system = Message("system", "You fix builds.")
    _session(ChatContext(compactor=_budget(plain, None)).add(system), 60)
    _session(ChatContext(compactor=_budget(planned, CompactionPlanner())).add(system), 60)
    applied = [r for r in planned if r.outcome == "applied"]
    assert applied and plain
    # Without a planner every compaction waits for the limit; with one, some run before it.
    assert all(r.tokens_before > 12_000 for r in plain if r.outcome == "applied")
    assert any(r.tokens_before <= 12_000 for r in applied)
    assert plain[0].predicted_cost is None
    for r in applied:
        assert r.predicted_cost is not None and r.predicted_saving is not None
        assert r.forced is (r.tokens_before > 12_000)


@pytest.mark.parametrize("kind", ["threshold", "tiered"])
def test_other_gated_compactors_take_a_planner(kind: str) -> None:
    records: list[CompactionRecord] = []
    inner = _budget(records, None)
    planner = CompactionPlanner()
    gate: Any = (
        ThresholdCompactor(inner, threshold=12_000, planner=planner)
        if kind == "threshold"
        else TieredCompactor([inner], max_tokens=12_000, target_tokens=1_500, planner=planner)
    )
    ctx = _session(ChatContext(compactor=gate).add(Message("system", "You fix builds.")), 60)
    assert ctx.token_count <= 12_000
    assert planner.steps == 60 and planner.last is not None
    assert any(r.outcome == "applied" and r.tokens_before <= 12_000 for r in records)


def test_cost_command_bills_every_policy_offline(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from mellea_ctx._cli.app import cli

    png = tmp_path / "bill.png"
    result = CliRunner().invoke(
        cli,
        ["cost", "--model", "claude-sonnet-4-5", "--plot", str(png)],
        catch_exceptions=False,
        env={"COLUMNS": "200"},  # the table's width, whatever terminal runs the tests
    )
    assert result.exit_code == 0, result.output
    for policy in ("no compaction", "sliding window", "budget", "planner"):
        assert policy in result.output
    assert "$" in result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    unknown = CliRunner().invoke(cli, ["cost", "--model", "no-such-model-xyz"])
    assert unknown.exit_code == 2 and "does not know" in unknown.output


def test_the_ledger_reaches_the_compaction_span() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.util._once import Once

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # as tests/test_telemetry.py resets it
    trace.set_tracer_provider(provider)
    try:
        records: list[CompactionRecord] = []
        system = Message("system", "You fix builds.")
        _session(ChatContext(compactor=_budget(records, CompactionPlanner())).add(system), 40)
    finally:
        provider.shutdown()
        trace._TRACER_PROVIDER_SET_ONCE = Once()
        trace._TRACER_PROVIDER = None
    priced = [
        s.attributes
        for s in exporter.get_finished_spans()
        if s.attributes and "mellea_ctx.compaction.predicted_cost" in s.attributes
    ]
    applied = [r for r in records if r.outcome == "applied"]
    assert applied and len(priced) >= len(applied)
    got = {a["mellea_ctx.compaction.predicted_cost"] for a in priced}
    assert {r.predicted_cost for r in applied} <= got
