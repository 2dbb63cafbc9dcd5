"""Property tests for the invariants of DESIGN.md that the core touches.

Each invariant is checked for every compactor, both riding inside a context
(``ChatContext(compactor=...)``, "inline") and called by hand on contexts
built without one or with another ("manual"). Expected results come from the
plain-list model in ``tests/reference.py``.
"""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    Component,
    Message,
    ModelOutputThunk,
    ThresholdCompactor,
    Usage,
    WindowCompactor,
    default_counter,
)

from . import reference as ref
from .strategies import (
    built_contexts,
    compactors,
    counters,
    histories,
    next_components,
    pins,
    thresholds,
    window_compactors,
)

MODES = pytest.mark.parametrize("mode", ["inline", "manual"])


@attrs.define
class Step:
    """One compaction: what the compactor was given and what came back."""

    source: tuple[Component, ...]  # the components the compactor saw
    source_model: ref.Model
    before: ChatContext | None  # the context compacted (manual only)
    result: ChatContext
    result_model: ref.Model
    compactor: Any
    counter: Any


def _steps(data: st.DataObject, mode: str) -> list[Step]:
    """Draw a history and return every compaction it went through in ``mode``."""
    if mode == "inline":
        built = data.draw(built_contexts(compactor=compactors))
        steps = []
        model = ref.Model()
        for index, component in enumerate(built.history):
            node, model, _ = ref.model_add(model, component, built.compactor, built.counter)
            steps.append(
                Step(
                    node.items,
                    node,
                    None,
                    built.contexts[index + 1],
                    model,
                    built.compactor,
                    built.counter,
                )
            )
        return steps
    built = data.draw(built_contexts())
    compactor = data.draw(compactors, label="manual compactor")
    steps = []
    model = ref.Model()
    for index, ctx in enumerate(built.contexts):
        if index:
            _, model, _ = ref.model_add(
                model, built.history[index - 1], built.compactor, built.counter
            )
        result_model, _ = model.compacted(compactor, built.counter)
        result = compactor.compact(ctx)
        steps.append(Step(model.items, model, ctx, result, result_model, compactor, built.counter))
    return steps


def _window(compactor: Any) -> WindowCompactor:
    return compactor.inner if isinstance(compactor, ThresholdCompactor) else compactor


def _same(left: Any, right: Any) -> bool:
    """Whether two sequences hold the very same objects in the same order."""
    left, right = list(left), list(right)
    return len(left) == len(right) and all(a is b for a, b in zip(left, right, strict=True))


@attrs.define
class Snapshot:
    """Everything a context reads back as, by value and by identity."""

    ids: tuple[int, ...]
    reprs: tuple[str, ...]
    length: int
    tokens: int | None
    chain: tuple[int, ...]
    chain_data: tuple[int, ...]
    data: int
    compactor: int
    usage: int | None
    keep: Any = attrs.field(eq=False, repr=False)  # keeps the objects alive, so ids stay unique


def _chain(ctx: ChatContext) -> list[ChatContext]:
    """Return ``ctx`` and every ``previous_node`` back to the root, each one shorter by one."""
    nodes = [ctx]
    while (node := nodes[-1].previous_node) is not None:
        assert len(nodes[-1]) - 1 == len(node)
        nodes.append(node)
    assert 0 == len(nodes[-1])
    return nodes


def snapshot(ctx: ChatContext, *, tokens: bool = True) -> Snapshot:
    """Read everything observable about ``ctx``."""
    items = ctx.as_list()
    chain = _chain(ctx)
    return Snapshot(
        ids=tuple(map(id, items)),
        reprs=tuple(map(repr, items)),
        length=len(ctx),
        tokens=ctx.token_count if tokens else None,
        chain=tuple(map(id, chain)),
        chain_data=tuple(id(node.node_data) for node in chain),
        data=id(ctx.node_data),
        compactor=id(ctx.compactor),
        usage=ctx.last_usage_tokens,
        keep=(items, chain),
    )


class TestNoMutation:
    """Invariant 1: no operation changes an existing context or component."""

    @given(data=st.data(), read_first=st.booleans())
    def test_compacting_changes_no_earlier_context(self, data, read_first):
        """Compacting any context by hand leaves every context of its chain as it was."""
        built = data.draw(built_contexts())
        compactor = data.draw(compactors)
        snaps = [snapshot(c, tokens=read_first) for c in built.contexts]
        results = [compactor.compact(c) for c in built.contexts]
        for result in results:
            _ = result.token_count, result.as_list(), _chain(result)

        assert snaps == [snapshot(c, tokens=read_first) for c in built.contexts]

    @given(data=st.data())
    def test_adding_changes_no_earlier_context(self, data):
        """Adds with a compactor inside, to the newest or to older contexts, change none of them."""
        compactor = data.draw(compactors, label="compactor")
        counter = data.draw(counters, label="counter")
        tokens = data.draw(st.booleans(), label="read totals")
        contexts = [ChatContext(compactor=compactor, counter=counter)]
        snaps = [snapshot(contexts[0], tokens=tokens)]
        for component in data.draw(histories(), label="history"):
            contexts.append(contexts[-1].add(component))
            snaps.append(snapshot(contexts[-1], tokens=tokens))
        for _ in range(data.draw(st.integers(0, 6), label="branches")):
            older = data.draw(st.sampled_from(contexts), label="branch from")
            component = data.draw(next_components(older.as_list()), label="component")
            contexts.append(older.add(component))
            snaps.append(snapshot(contexts[-1], tokens=tokens))

        assert snaps == [snapshot(c, tokens=tokens) for c in contexts]

    @given(history=histories(), counter=counters, compactor=st.none() | compactors)
    @example(history=[Message("user", "hi")], counter=default_counter(), compactor=None)
    def test_counting_leaves_components_unchanged(self, history, counter, compactor):
        """Adding, compacting and counting leave each component the same under attrs and pickle."""
        before = [(attrs.asdict(c), attrs.astuple(c), pickle.dumps(c)) for c in history]
        ctx = ChatContext(compactor=compactor, counter=counter)
        for component in history:
            ctx = ctx.add(component)
            _ = ctx.token_count

        assert before == [(attrs.asdict(c), attrs.astuple(c), pickle.dumps(c)) for c in history]

    @given(built=built_contexts())
    def test_returned_lists_are_copies(self, built):
        """Changing a list a context returned does not change the context."""
        ctx = built.last
        expected = snapshot(ctx)
        for got in (ctx.as_list(), ctx.view_for_generation(), ctx.as_list(len(ctx))):
            got.append(Message("user", "intruder"))
            got.reverse()

        assert expected == snapshot(ctx)


class TestNoOpIdentity:
    """Invariant 2: when nothing needs compacting, the very same object comes back."""

    @given(data=st.data())
    def test_compact_returns_its_input_when_nothing_to_drop(self, data):
        """``compact(ctx) is ctx`` exactly when the reference keeps every component."""
        for step in _steps(data, "manual"):
            keeps_all = step.result_model.items is step.source_model.items

            assert keeps_all == (step.result is step.before)

    @given(data=st.data())
    def test_inline_add_without_compaction_links_to_its_input(self, data):
        """An add that needs no compaction returns a node linked to the context added to."""
        built = data.draw(built_contexts(compactor=compactors))
        model = ref.Model()
        for before, after, component in zip(
            built.contexts[:-1], built.contexts[1:], built.history, strict=True
        ):
            _, model, changed = ref.model_add(model, component, built.compactor, built.counter)
            if not changed:
                assert before is after.previous_node
                assert component is after.node_data

    @given(built=built_contexts(), pin=pins, extra=st.integers(0, 3))
    def test_window_at_least_as_large_as_context(self, built, pin, extra):
        """A window at least as large as the whole context returns the context itself."""
        for ctx in built.contexts:
            compactor = WindowCompactor(size=len(ctx) + extra, pin_predicate=pin)

            assert compactor.compact(ctx) is ctx


class TestPinnedPrefix:
    """Invariant 3: the protected prefix comes back unchanged, same objects, same order."""

    @MODES
    @given(data=st.data())
    def test_prefix_kept_by_identity(self, data, mode):
        """The pin's prefix, extended past a split exchange, starts every result unchanged."""
        for step in _steps(data, mode):
            p = ref.prefix_end(step.source, _window(step.compactor).pin_predicate)

            assert _same(step.source[:p], step.result.as_list()[:p])


class TestOrder:
    """Invariant 4: kept components keep their relative order."""

    @MODES
    @given(data=st.data())
    def test_result_is_a_subsequence_of_input(self, data, mode):
        """Every result is its input with some components left out, by identity."""
        for step in _steps(data, mode):
            remaining = iter(step.source)

            assert all(any(kept is c for c in remaining) for kept in step.result.as_list())


class TestToolPairs:
    """Invariant 5: no compaction orphans a tool call or a tool result."""

    @MODES
    @given(data=st.data())
    def test_no_orphans_and_open_exchange_kept(self, data, mode):
        """Results follow their calls, closed exchanges stay whole, an open one is kept."""
        for step in _steps(data, mode):
            assert [] == ref.tool_pair_problems(step.result.as_list(), step.source)

    @given(
        history=histories().filter(lambda h: ref.exchange_spans(h)),
        pin=pins,
        size=st.integers(0, 3),
    )
    def test_small_windows_around_exchanges(self, history, pin, size):
        """Even tiny windows over exchange-heavy histories keep every exchange whole."""
        ctx = ChatContext()
        for component in history:
            ctx = ctx.add(component)
            result = WindowCompactor(size=size, pin_predicate=pin).compact(ctx)

            assert [] == ref.tool_pair_problems(result.as_list(), ctx.as_list())


class TestBounds:
    """Invariant 6: a window keeps ``size`` body components or the smallest safe superset."""

    @MODES
    @given(data=st.data())
    def test_window_keeps_size_or_smallest_safe_superset(self, data, mode):
        """The kept body is ``size`` long, or longer only as far as the nearest safe cut."""
        for step in _steps(data, mode):
            window = _window(step.compactor)
            fired = not (
                isinstance(step.compactor, ThresholdCompactor)
                and ref.compact(step.compactor, step.source, step.source_model.usage, step.counter)
                is step.source
            )
            source, n = step.source, len(step.source)
            p = ref.prefix_end(source, window.pin_predicate)
            kept = len(step.result) - p
            if not fired or n - p <= window.size:
                assert n - p == kept
                continue
            table = ref.safe_cuts(source)
            cut = n - kept

            assert kept >= window.size
            assert table[cut] or cut == p
            assert not any(table[k] for k in range(cut + 1, n - window.size + 1))

    @MODES
    @given(data=st.data())
    def test_matches_reference(self, data, mode):
        """Every compaction keeps exactly what the plain-list reference keeps."""
        for step in _steps(data, mode):
            assert _same(step.result_model.items, step.result.as_list())


class TestLongSessions:
    """Sessions long enough that a riding window re-packs its shared buffer."""

    @given(
        data=st.data(),
        history=histories(max_segments=90),
        size=st.integers(0, 6),
        pin=pins,
    )
    def test_small_window_over_a_long_session(self, data, history, size, pin):
        """Every context of a long windowed session, and branches off old ones, match the model."""
        compactor = WindowCompactor(size=size, pin_predicate=pin)
        built = data.draw(built_contexts(compactor=st.just(compactor), history=st.just(history)))
        models = [ref.Model()]
        for component in history:
            models.append(ref.model_add(models[-1], component, compactor, built.counter)[1])
        for _ in range(data.draw(st.integers(0, 4), label="branches")):
            index = data.draw(st.integers(0, len(history)), label="branch from")
            component = data.draw(next_components(models[index].items), label="component")
            built.contexts.append(built.contexts[index].add(component))
            models.append(ref.model_add(models[index], component, compactor, built.counter)[1])
        for ctx, model in zip(built.contexts, models, strict=True):
            assert _same(model.items, ctx.as_list())
            assert ref.total(model.items, built.counter) == ctx.token_count


class TestCarriedCompactor:
    """Invariant 7: a compacted context carries its compactor, so adds keep compacting."""

    @given(built=built_contexts(), compactor=compactors)
    def test_manual_result_carries_the_input_compactor(self, built, compactor):
        """``compact(ctx).compactor`` is ``ctx.compactor``, whichever compactor ran."""
        for ctx in built.contexts:
            assert ctx.compactor is compactor.compact(ctx).compactor

    @given(data=st.data())
    def test_adds_after_compaction_keep_compacting(self, data):
        """After any compaction, inline or by hand, each add compacts as the reference does."""
        inline = data.draw(compactors, label="inline")
        built = data.draw(built_contexts(compactor=st.just(inline)))
        manual = data.draw(compactors, label="manual")
        model = ref.Model()
        for component in built.history:
            _, model, _ = ref.model_add(model, component, inline, built.counter)
        ctx = manual.compact(built.last)
        model, _ = model.compacted(manual, built.counter)
        for _ in range(data.draw(st.integers(0, 12), label="more adds")):
            nxt = data.draw(next_components(model.items), label="next")
            ctx = ctx.add(nxt)
            _, model, _ = ref.model_add(model, nxt, inline, built.counter)

            assert inline is ctx.compactor
            assert _same(model.items, ctx.as_list())


class TestAsyncCompact:
    """``acompact`` is ``compact`` for compactors that do no I/O."""

    @given(built=built_contexts(), compactor=compactors)
    def test_acompact_matches_compact(self, built, compactor):
        """Awaiting ``acompact`` keeps the same components, and the same object when a no-op."""
        ctx = built.last
        expected = compactor.compact(ctx)
        got = asyncio.run(compactor.acompact(ctx))

        assert (expected is ctx) == (got is ctx)
        assert _same(expected.as_list(), got.as_list())
        assert ctx.compactor is got.compactor


class TestNeverLarger:
    """Invariant 8: a compaction never increases the token total."""

    @MODES
    @given(data=st.data())
    def test_total_does_not_grow(self, data, mode):
        """The result's token total is at most the input's."""
        for step in _steps(data, mode):
            assert step.result.token_count <= ref.total(step.source, step.counter)


class TestExactAccounting:
    """Invariant 10: ``ctx.token_count`` equals the counter applied to ``ctx.as_list()``."""

    @MODES
    @given(data=st.data())
    def test_every_context_reached(self, data, mode):
        """Inputs, results and their lazily built ``previous_node`` chains all count exactly."""
        steps = _steps(data, mode)
        nodes = [step.before for step in steps if step.before is not None]
        for step in steps:
            nodes.extend(_chain(step.result))
        data.draw(st.randoms(use_true_random=False), label="read order").shuffle(nodes)
        counter = steps[0].counter if steps else None
        for node in nodes:
            assert ref.total(node.as_list(), counter) == node.token_count

    @given(data=st.data())
    def test_previous_node_before_and_after_reading_totals(self, data):
        """A compacted context's ``previous_node`` counts right whether built before or after."""
        built = data.draw(built_contexts(compactor=st.none()))
        compactor = data.draw(window_compactors)
        for ctx in built.contexts:
            early, late = compactor.compact(ctx), compactor.compact(ctx)
            early_chain = _chain(early)  # built while no total is known
            _ = late.token_count
            late_chain = _chain(late)  # built from a known total
            for node in early_chain + late_chain:
                assert ref.total(node.as_list(), built.counter) == node.token_count


class TestThresholdCompactor:
    """The gate: when ``ThresholdCompactor`` runs its inner compactor, and when not."""

    @given(built=built_contexts(compactor=st.none()), size=st.integers(0, 5), extra=thresholds)
    def test_never_fires_at_or_below_threshold(self, built, size, extra):
        """A reading at or under a positive threshold returns the context, inner unused."""
        for ctx in built.contexts:
            for measure in ("tokens", "usage"):
                items = ctx.as_list()
                reading = ref.total(items, built.counter) if measure == "tokens" else None
                if measure == "usage":
                    reading = _last_usage(items)
                spy = Spy(WindowCompactor(size=size))
                threshold = max(1, (reading or 0) + abs(extra))
                gate = ThresholdCompactor(spy, threshold=threshold, measure=measure)

                assert gate.compact(ctx) is ctx
                assert [] == spy.calls

    @given(data=st.data(), threshold=st.integers(-5, 0))
    def test_non_positive_threshold_never_fires(self, data, threshold):
        """A threshold of zero or less disables the gate, inline and by hand."""
        measure = data.draw(st.sampled_from(["tokens", "usage"]))
        spy = Spy(data.draw(window_compactors))
        gate = ThresholdCompactor(spy, threshold=threshold, measure=measure)
        built = data.draw(built_contexts(compactor=st.just(gate)))
        for index, ctx in enumerate(built.contexts):
            assert index == len(ctx)
            assert gate.compact(ctx) is ctx
        assert [] == spy.calls

    @given(built=built_contexts(compactor=st.none()), size=st.integers(0, 5), threshold=thresholds)
    def test_fires_exactly_above_threshold(self, built, size, threshold):
        """Inner runs once, and its result is returned, exactly when the reading exceeds it."""
        model = ref.Model()
        for index, ctx in enumerate(built.contexts):
            if index:
                model, _, _ = ref.model_add(model, built.history[index - 1], None, built.counter)
            for measure, reading in (
                ("tokens", ref.total(model.items, built.counter)),
                ("usage", model.usage),
            ):
                spy = Spy(WindowCompactor(size=size))
                gate = ThresholdCompactor(spy, threshold=threshold, measure=measure)
                result = gate.compact(ctx)
                fires = threshold > 0 and reading is not None and reading > threshold

                assert fires == bool(spy.calls)
                assert (spy.calls[0][1] if fires else ctx) is result

    @given(
        history=histories(),
        size=st.integers(0, 8),
        threshold=st.integers(1, 3000),
        usage_every=st.integers(1, 4),
    )
    def test_usage_does_not_refire_until_new_usage(self, history, size, threshold, usage_every):
        """After a compaction, the usage gate stays shut until a new usage figure arrives."""
        spy = Spy(WindowCompactor(size=size))
        gate = ThresholdCompactor(spy, threshold=threshold, measure="usage")
        ctx = ChatContext(compactor=gate)
        shut = False
        stamped = [
            _with_usage(c, 4000 if i % usage_every == 0 else None) for i, c in enumerate(history)
        ]
        for component in stamped:
            calls = len(spy.calls)
            ctx = ctx.add(component)
            fresh = type(component) is ModelOutputThunk and component.usage is not None
            if shut and not fresh:
                assert calls == len(spy.calls)
                assert ctx.last_usage_tokens is None
            if fresh:
                shut = False
            if len(spy.calls) > calls and spy.calls[-1][1] is not spy.calls[-1][0]:
                shut = True
                assert ctx.last_usage_tokens is None

    @given(built=built_contexts(compactor=st.none()), size=st.integers(0, 5))
    def test_usage_measure_ignores_token_total(self, built, size):
        """With ``measure='usage'`` the gate reads the last reported usage, not the total."""
        for ctx in built.contexts:
            spy = Spy(WindowCompactor(size=size))
            items = ctx.as_list()
            usage = _last_usage(items)
            threshold = max(1, ref.total(items, built.counter) - 1)
            gate = ThresholdCompactor(spy, threshold=threshold, measure="usage")
            gate.compact(ctx)

            assert (usage is not None and usage > gate.threshold) == bool(spy.calls)


@attrs.define(eq=False)
class Spy:
    """A compactor that records each call to the compactor it wraps."""

    inner: Any
    calls: list[tuple[ChatContext, ChatContext]] = attrs.Factory(list)

    def compact(self, ctx: ChatContext, *, backend: Any = None) -> ChatContext:
        result = self.inner.compact(ctx, backend=backend)
        self.calls.append((ctx, result))
        return result


def _with_usage(component: Component, total: int | None) -> Component:
    """Return a model output with ``total`` as its usage; any other component as it is."""
    if type(component) is not ModelOutputThunk:
        return component
    usage = None if total is None else Usage(prompt_tokens=total, completion_tokens=0)
    return attrs.evolve(component, usage=usage)


def _last_usage(items: list[Component]) -> int | None:
    """Return the total of the last usage reported in a history nothing compacted."""
    for component in reversed(items):
        if type(component) is ModelOutputThunk and component.usage is not None:
            return component.usage.total_tokens
    return None
