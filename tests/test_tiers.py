"""The cheap tiers: ClearToolResultsCompactor, TieredCompactor, and budgets from the window.

The property tests check DESIGN.md's invariants (no mutation, tool pairs,
never larger, carried compactor, exact accounting, reversible) for every
history the shared strategies build, with the compactor riding inline and
called by hand.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    ClearedToolResult,
    ClearToolResultsCompactor,
    CompactionRecord,
    Component,
    InvalidArgumentError,
    Message,
    SupersededReadsCompactor,
    ThresholdCompactor,
    TieredCompactor,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    context_window,
    output_limit,
    pin_nothing,
)

from . import reference as ref
from .strategies import LONG_TEXTS, TEXTS, built_contexts, histories, pins, sizes
from .test_invariants import snapshot

# Long texts often, so tool results are worth clearing.
_TEXT = st.sampled_from(TEXTS + LONG_TEXTS * 4)
_HISTORIES = histories(text=_TEXT)

clear_compactors = st.builds(
    ClearToolResultsCompactor,
    keep_last=st.integers(0, 3),
    min_clear_tokens=st.sampled_from([0, 1, 60, 400]),
    pin_predicate=pins,
    keep_tools=st.sampled_from([frozenset(), frozenset({"ls"})]),
)


# The strategies' calls read "a.py" (read_file) and list "." (ls): both repeat.
superseded_compactors = st.builds(
    SupersededReadsCompactor,
    reads=st.sampled_from([{"read_file": "path"}, {"read_file": "path", "ls": "path"}]),
    min_clear_tokens=st.sampled_from([0, 1, 60, 400]),
    pin_predicate=pins,
)


@st.composite
def tiered_compactors(draw: Any) -> TieredCompactor:
    max_tokens = draw(st.integers(1, 2_000))
    target = draw(st.integers(1, max_tokens))
    tiers: list[Any] = [draw(st.one_of(clear_compactors, superseded_compactors))]
    if draw(st.booleans()):
        tiers.append(WindowCompactor(size=draw(sizes), pin_predicate=draw(pins)))
    return TieredCompactor(tiers, max_tokens=max_tokens, target_tokens=target)


new_compactors = st.one_of(clear_compactors, superseded_compactors, tiered_compactors())


def _uncleared(items: list[Component]) -> list[Component]:
    return [c.original if isinstance(c, ClearedToolResult) else c for c in items]


def _check_step(source: ChatContext, result: ChatContext, compactor: Any) -> None:
    """Every invariant one compaction of ``source`` into ``result`` must keep."""
    before, after = source.as_list(), result.as_list()
    assert [] == ref.tool_pair_problems(after, before)
    assert result.token_count <= source.token_count
    assert ref.total(after, source.counter) == result.token_count
    assert source.compactor is result.compactor
    # Reversible: each new placeholder hands back the context it was cleared from,
    # and its original; with the originals back, what stays is the input's, in order.
    for component in after:
        if isinstance(component, ClearedToolResult) and not any(component is c for c in before):
            assert component.restore() is source or _is_earlier_tier(component, source)
            assert component.original.tool_call_id == component.tool_call_id
    remaining = iter(_uncleared(before))
    assert all(any(kept is c for c in remaining) for kept in _uncleared(after))
    if isinstance(compactor, (ClearToolResultsCompactor, SupersededReadsCompactor)):
        assert len(before) == len(after)
        assert _uncleared(before) == _uncleared(after)
        assert all(a is b for a, b in zip(_uncleared(before), _uncleared(after), strict=True))


def _is_earlier_tier(component: ClearedToolResult, source: ChatContext) -> bool:
    """Within a tiered run a later tier may see the clearing tier's result first."""
    replaced = component.replaced
    return replaced is not None and _uncleared(replaced.as_list()) == _uncleared(source.as_list())


class TestInvariants:
    """DESIGN.md's invariants hold for every new compactor, inline and by hand."""

    @settings(max_examples=60)
    @given(data=st.data())
    def test_manual(self, data):
        """Compacting any context by hand keeps every invariant and changes no input."""
        built = data.draw(
            built_contexts(
                compactor=st.none() | st.just(WindowCompactor(size=6)), history=_HISTORIES
            )
        )
        compactor = data.draw(new_compactors, label="compactor")
        snaps = [snapshot(c) for c in built.contexts]
        for ctx in built.contexts:
            result = compactor.compact(ctx)
            _check_step(ctx, result, compactor)
            if isinstance(compactor, ClearToolResultsCompactor) and not compactor.clearable(ctx):
                assert result is ctx
        assert snaps == [snapshot(c) for c in built.contexts]

    @settings(max_examples=60)
    @given(data=st.data())
    def test_inline(self, data):
        """Riding inside a context, each add compacts as a call by hand would, keeping all."""
        compactor = data.draw(new_compactors, label="compactor")
        history = data.draw(_HISTORIES, label="history")
        ctx = ChatContext(compactor=compactor)
        contexts = [ctx]
        snaps = [snapshot(ctx)]
        for component in history:
            source = ChatContext.from_previous(ctx, component)
            ctx = ctx.add(component)
            _check_step(source, ctx, compactor)
            assert compactor is ctx.compactor
            assert [type(c) for c in compactor.compact(source).as_list()] == [
                type(c) for c in ctx.as_list()
            ]
            contexts.append(ctx)
            snaps.append(snapshot(ctx))
        assert snaps == [snapshot(c) for c in contexts]


def _agent(results: list[str], *, system: bool = True) -> ChatContext:
    ctx = ChatContext()
    if system:
        ctx = ctx.add(Message("system", "You are a coding agent."))
    ctx = ctx.add(Message("user", "Fix the parser."))
    for i, text in enumerate(results):
        call = ToolCall(f"c{i}", "read_file", f'{{"path": "f{i}.py"}}')
        ctx = ctx.add(Message("assistant", "", tool_calls=[call]))
        ctx = ctx.add(ToolMessage(text, tool_call_id=f"c{i}", name="read_file"))
    return ctx


BIG = "def parse(x):\n    return x\n" * 60


class TestClearToolResults:
    """ClearToolResultsCompactor clears old results, keeps the newest and what is not worth it."""

    def test_keeps_the_last_results_whole(self):
        """The last ``keep_last`` results stay; older ones become placeholders naming the call."""
        ctx = _agent([BIG, BIG, BIG, BIG])
        result = ClearToolResultsCompactor(keep_last=2, min_clear_tokens=0).compact(ctx)
        tools = [c for c in result if c.role == "tool"]

        assert [ClearedToolResult, ClearedToolResult, ToolMessage, ToolMessage] == [
            type(c) for c in tools
        ]
        assert "read_file (call c0)" in tools[0].content
        assert f"{ctx.counter.count(ctx.as_list()[3])} tokens" in tools[0].content
        assert tools[2] is ctx.as_list()[-3]

    def test_clears_nothing_under_the_minimum(self):
        """When fewer than ``min_clear_tokens`` would go, the very same context comes back."""
        ctx = _agent([BIG, BIG])
        records: list[CompactionRecord] = []
        saved = ctx.token_count - (
            ClearToolResultsCompactor(keep_last=1, min_clear_tokens=0).compact(ctx).token_count
        )
        compactor = ClearToolResultsCompactor(
            keep_last=1, min_clear_tokens=saved + 1, on_record=records.append
        )

        assert ctx is compactor.compact(ctx)
        assert ["skipped"] == [r.outcome for r in records]
        assert f"save {saved} tokens" in records[0].reason
        assert ctx is not ClearToolResultsCompactor(keep_last=1, min_clear_tokens=saved).compact(
            ctx
        )

    def test_never_touches_an_open_exchange(self):
        """Results of an exchange still waiting for others stay whole."""
        ctx = _agent([BIG])
        calls = [ToolCall("o1", "read_file", "{}"), ToolCall("o2", "read_file", "{}")]
        ctx = ctx.add(Message("assistant", "", tool_calls=calls))
        ctx = ctx.add(ToolMessage(BIG, tool_call_id="o1", name="read_file"))
        result = ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0).compact(ctx)

        assert [ClearedToolResult, ToolMessage] == [type(c) for c in result if c.role == "tool"]

    def test_keep_tools_and_pinned_prefix(self):
        """Results of ``keep_tools`` and inside the pinned prefix are never cleared."""
        ctx = _agent([BIG, BIG])
        kept = ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0, keep_tools={"read_file"})

        assert ctx is kept.compact(ctx)
        everything = ClearToolResultsCompactor(
            keep_last=0, min_clear_tokens=0, pin_predicate=lambda items: len(items)
        )
        assert ctx is everything.compact(ctx)

    def test_reversible(self):
        """Each placeholder holds its original and the exact context it was cleared from."""
        ctx = _agent([BIG, BIG, BIG])
        result = ClearToolResultsCompactor(keep_last=1, min_clear_tokens=0).compact(ctx)
        cleared = [c for c in result if isinstance(c, ClearedToolResult)]

        assert all(c.restore() is ctx for c in cleared)
        assert [c.original for c in cleared] == [ctx.as_list()[3], ctx.as_list()[5]]
        with pytest.raises(InvalidArgumentError, match="holds no replaced context"):
            ClearedToolResult.of(ToolMessage("x", tool_call_id="c"), tokens=1).restore()

    def test_small_results_are_left(self):
        """A result smaller than its placeholder is never replaced (never larger)."""
        ctx = _agent(["ok", "ok", "ok"])

        assert ctx is ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0).compact(ctx)

    def test_stores_as_a_tool_result(self):
        """A session store keeps a cleared result as the placeholder tool result it reads as."""
        from mellea_ctx._formats.serialize import component_from_record, component_to_record

        ctx = _agent([BIG, BIG])
        result = ClearToolResultsCompactor(keep_last=1, min_clear_tokens=0).compact(ctx)
        cleared = next(c for c in result if isinstance(c, ClearedToolResult))
        back = component_from_record(component_to_record(cleared))

        assert ToolMessage is type(back)
        assert (cleared.content, cleared.tool_call_id) == (back.content, back.tool_call_id)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"keep_last": -1}, "keep_last=-1 must be an int >= 0"),
            ({"keep_last": True}, "keep_last=True must be an int >= 0"),
            ({"min_clear_tokens": 1.5}, "min_clear_tokens=1.5 must be an int >= 0"),
            ({"keep_tools": {3}}, "must hold tool names"),
            ({"pin_predicate": 3}, "pin_predicate=3 is not callable"),
            ({"on_record": 3}, "on_record=3 is not callable"),
        ],
    )
    def test_invalid_arguments(self, kwargs, match):
        """Bad settings are refused at construction, naming the argument."""
        with pytest.raises(InvalidArgumentError, match=match):
            ClearToolResultsCompactor(**kwargs)


class TestTiered:
    """TieredCompactor stops at the first tier that reaches the target, and says which."""

    def test_stops_at_the_cheap_tier(self):
        """When clearing reaches the target, later tiers do not run."""
        ctx = _agent([BIG, BIG, BIG, BIG])
        records: list[CompactionRecord] = []
        window = WindowCompactor(size=0, pin_predicate=pin_nothing)
        tiers = TieredCompactor(
            [ClearToolResultsCompactor(keep_last=1, min_clear_tokens=0), window],
            max_tokens=ctx.token_count - 1,
            target_tokens=ctx.token_count // 2,
            on_record=records.append,
        )
        result = tiers.compact(ctx)

        assert len(ctx) == len(result)
        assert [0] == [r.tier for r in records]
        assert not records[0].over_target

    def test_falls_through_to_the_last_resort(self):
        """When clearing is not enough, the next tier runs on the cleared context."""
        ctx = _agent([BIG, BIG, BIG, BIG])
        records: list[CompactionRecord] = []
        tiers = TieredCompactor(
            [
                ClearToolResultsCompactor(keep_last=1, min_clear_tokens=0),
                WindowCompactor(size=3),
            ],
            max_tokens=ctx.token_count - 1,
            target_tokens=ctx.counter.count(ctx.as_list()[-1]) + 60,
            on_record=records.append,
        )
        result = tiers.compact(ctx)

        assert [1] == [r.tier for r in records]
        assert 5 == len(result)  # the system prompt and the last exchange, whole
        assert "tier 1 (WindowCompactor)" in records[0].reason

    def test_reports_over_target(self):
        """When no tier reaches the target the smallest result is kept and reported."""
        ctx = _agent([BIG, BIG])
        records: list[CompactionRecord] = []
        tiers = TieredCompactor(
            [ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0)],
            max_tokens=10,
            target_tokens=5,
            on_record=records.append,
        )

        assert tiers.compact(ctx).token_count < ctx.token_count
        assert records[0].over_target

    def test_under_the_trigger_is_a_no_op(self):
        """Under ``max_tokens`` nothing runs unless forced."""
        ctx = _agent([BIG, BIG])
        tiers = TieredCompactor(
            [ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0)],
            max_tokens=ctx.token_count,
        )

        assert ctx is tiers.compact(ctx)
        assert ctx is not tiers.compact(ctx, force=True)

    def test_reserve_counts_against_the_budget(self):
        """Tokens a request carries besides the history (tool definitions) count too."""
        ctx = _agent([BIG, BIG])
        tier = ClearToolResultsCompactor(keep_last=0, min_clear_tokens=0)

        assert ctx is TieredCompactor([tier], max_tokens=ctx.token_count).compact(ctx)
        reserved = TieredCompactor([tier], max_tokens=ctx.token_count, reserve_tokens=1)
        assert ctx is not reserved.compact(ctx)

    def test_forces_a_gated_summary_tier(self):
        """A tier with its own trigger is forced: a threshold is looked through."""
        ctx = _agent([BIG, BIG])
        gated = ThresholdCompactor(WindowCompactor(size=1), threshold=10**9)
        tiers = TieredCompactor([gated], max_tokens=10)

        assert 3 == len(tiers.compact(ctx))  # the system prompt and the last exchange

    def test_fractions_of_the_window(self):
        """Budgets may be fractions of a window given in tokens or by model name."""
        tiers = TieredCompactor(
            [ClearToolResultsCompactor()], max_tokens=0.8, target_tokens=0.5, window="gpt-4o"
        )

        assert (102_400, 64_000) == (tiers.max_tokens, tiers.target_tokens)

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ([], {"max_tokens": 10}, "tiers=\\(\\) is empty"),
            ([object()], {"max_tokens": 10}, "has no compact\\(\\) method"),
            ([WindowCompactor(size=1)], {"max_tokens": 0.8}, "no window was given"),
            ([WindowCompactor(size=1)], {"max_tokens": 1.5, "window": 10}, "float in \\(0, 1\\]"),
            ([WindowCompactor(size=1)], {"max_tokens": 0, "window": 10}, "max_tokens=0 must"),
            (
                [WindowCompactor(size=1)],
                {"max_tokens": 0.5, "window": "no-such-model"},
                "not a model in the table",
            ),
            ([WindowCompactor(size=1)], {"max_tokens": 5, "target_tokens": 6}, "above max_tokens"),
            ([WindowCompactor(size=1)], {"max_tokens": 5, "reserve_tokens": -1}, "reserve_tokens"),
        ],
    )
    def test_invalid_arguments(self, args, kwargs, match):
        """Bad settings are refused at construction, naming the argument."""
        with pytest.raises(InvalidArgumentError, match=match):
            TieredCompactor(args, **kwargs)


class TestBudgetFractions:
    """The existing budget compactors take fractions of a window too."""

    def test_token_budget_fractions(self):
        """``TokenBudgetCompactor(max_tokens=0.8, target_tokens=0.5, window=...)``."""
        compactor = TokenBudgetCompactor(max_tokens=0.8, target_tokens=0.5, window=10_000)

        assert (8_000, 5_000) == (compactor.max_tokens, compactor.target_tokens)

    def test_threshold_fraction(self):
        """``ThresholdCompactor(inner, threshold=0.8, window=...)``."""
        gate = ThresholdCompactor(WindowCompactor(size=1), threshold=0.8, window="gpt-4o-mini")

        assert 102_400 == gate.threshold


class TestWindows:
    """``context_window`` and ``output_limit`` know the models our docs name."""

    @pytest.mark.parametrize(
        ("model", "window", "output"),
        [
            ("gpt-4o", 128_000, 16_384),
            ("gpt-4o-mini-2024-07-18", 128_000, 16_384),
            ("openai/gpt-4.1", 1_047_576, 32_768),
            ("claude-sonnet-4-6", 1_000_000, 128_000),
            ("claude-haiku-4-5-20251001", 200_000, 64_000),
            ("qwen2.5-coder-1.5b-instruct", 32_768, None),
            ("gpt-4o-minimal", None, None),
            ("my-model", None, None),
        ],
    )
    def test_known_models(self, model, window, output):
        """Known families and their dated snapshots resolve; anything else is ``None``."""
        assert (window, output) == (context_window(model), output_limit(model))

    def test_not_a_name(self):
        """A non-string model is refused."""
        with pytest.raises(InvalidArgumentError, match="model=3 must be a model name"):
            context_window(3)  # type: ignore[arg-type]


class TestToolDefinitions:
    """``count_tool_definitions`` prices the definitions as each provider frames them."""

    def test_framings(self):
        """None cost nothing; Anthropic adds its tool-use system prompt; OpenAI its framing."""
        from mellea_ctx import tool
        from mellea_ctx._core.tool_tokens import count_tool_definitions

        @tool
        def grep(pattern: str, path: str = ".") -> str:
            """Search files.

            Args:
                pattern: What to look for.
                path: Where.
            """
            return ""

        assert 0 == count_tool_definitions([], "anthropic")
        one, two = count_tool_definitions([grep]), count_tool_definitions([grep, grep])
        assert two - one == one - 12  # 12 per request, the rest per function
        assert count_tool_definitions([grep], "anthropic") > 346
        with pytest.raises(InvalidArgumentError, match="framing='gemini' must be"):
            count_tool_definitions([grep], "gemini")  # type: ignore[arg-type]


def _reads(paths: list[str], *, errors: frozenset[int] = frozenset()) -> ChatContext:
    ctx = ChatContext().add(Message("user", "Fix it."))
    for i, path in enumerate(paths):
        call = ToolCall(f"r{i}", "read_file", json.dumps({"path": path}))
        ctx = ctx.add(Message("assistant", "", tool_calls=[call]))
        ctx = ctx.add(
            ToolMessage(BIG, tool_call_id=f"r{i}", name="read_file", is_error=i in errors)
        )
    return ctx


class TestSupersededReads:
    """Older reads of a file read again are cleared; the newest stays."""

    def test_keeps_the_newest_read_of_each_file(self):
        """Of a.py read three times and b.py once, only the first two a.py reads go."""
        ctx = _reads(["a.py", "b.py", "a.py", "a.py"])
        result = SupersededReadsCompactor(min_clear_tokens=0).compact(ctx)
        tools = [c for c in result if c.role == "tool"]

        assert [True, False, True, False] == [isinstance(c, ClearedToolResult) for c in tools]
        assert "'a.py' was read again later (call r3)" in tools[0].content
        assert all(c.restore() is ctx for c in tools if isinstance(c, ClearedToolResult))

    def test_a_failed_read_supersedes_nothing(self):
        """When the newer read failed, the older one is still the file's content."""
        ctx = _reads(["a.py", "a.py"], errors=frozenset({1}))

        assert ctx is SupersededReadsCompactor(min_clear_tokens=0).compact(ctx)

    def test_waits_until_worth_it(self):
        """Under ``min_clear_tokens`` the very same context comes back."""
        ctx = _reads(["a.py", "a.py"])

        assert ctx is SupersededReadsCompactor(min_clear_tokens=10**6).compact(ctx)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"reads": {"read_file": 1}}, "must map tool names"),
            ({"min_clear_tokens": -1}, "min_clear_tokens=-1"),
            ({"pin_predicate": None}, "pin_predicate=None is not callable"),
        ],
    )
    def test_invalid_arguments(self, kwargs, match):
        """Bad settings are refused at construction, naming the argument."""
        with pytest.raises(InvalidArgumentError, match=match):
            SupersededReadsCompactor(**kwargs)
