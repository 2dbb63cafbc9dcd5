"""A stateful test of ``ChatContext`` against a plain-list model.

Hypothesis runs random programs of adds (to the newest context or to any
older one: branches), manual compactions, ``previous_node`` reads, token
totals and list reads, on ``ChatContext`` and on a tuple model side by side.
After every step, every context ever produced must still read back exactly as
recorded (the ``verify_inputs_unmodified`` idea of pyrsistent's tests): the
contexts share one append-only buffer between neighbours, so an add to an
older node must copy instead of overwriting what a newer node sees.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
)

from mellea_ctx import (
    CBlock,
    ChatContext,
    Component,
    InvalidArgumentError,
    Message,
    ReactInitiator,
    pin_react_initiator,
)

from . import reference as ref
from .strategies import Built, built_contexts, compactors, counters, next_components


@attrs.define(eq=False)
class Record:
    """One context and what it must read back as, for as long as the test runs."""

    ctx: ChatContext
    model: ref.Model
    compactor: Any
    counter: Any
    window_size: int | None
    parent: ChatContext | None = None  # set when the context is a plain, uncompacted add
    previous: Any = None  # the ``previous_node`` first read, then fixed
    tokens: int | None = None  # the ``token_count`` first read, then fixed
    added: list[Component] = attrs.Factory(list)  # components added to it so far


def _turn(items: tuple[Component, ...]) -> tuple[Component, ...]:
    """The current user turn: from the last user input (message, block, goal) on."""
    for index in range(len(items) - 1, -1, -1):
        c = items[index]
        if isinstance(c, (CBlock, ReactInitiator)) or (isinstance(c, Message) and c.role == "user"):
            return items[index:]
    return items


class ContextMachine(RuleBasedStateMachine):
    """Runs the same operations on ``ChatContext`` and on the tuple model."""

    contexts = Bundle("contexts")

    def __init__(self) -> None:
        super().__init__()
        self.records: list[Record] = []
        self.by_id: dict[int, int] = {}

    def _record(self, record: Record) -> Any:
        known = self.by_id.get(id(record.ctx))
        if known is not None:
            assert self.records[known].ctx is record.ctx
            return multiple()
        self.by_id[id(record.ctx)] = len(self.records)
        self.records.append(record)
        self._check(record)
        return len(self.records) - 1

    @rule(
        target=contexts,
        compactor=st.none() | compactors,
        counter=counters,
        window_size=st.none() | st.integers(0, 6),
    )
    def root(self, compactor, counter, window_size):
        """Start a new conversation."""
        if compactor is not None:
            window_size = None
        ctx = ChatContext(compactor=compactor, counter=counter, window_size=window_size)
        assert ctx.is_root_node
        return self._record(Record(ctx, ref.Model(), compactor, counter, window_size))

    @rule(target=contexts, index=contexts, data=st.data())
    def add(self, index, data):
        """Add a valid next component to any context, sometimes one a sibling already added."""
        record = self.records[index]
        if record.added and data.draw(st.booleans(), label="re-add"):
            component = data.draw(st.sampled_from(record.added), label="sibling's component")
        else:
            component = data.draw(next_components(record.model.items), label="component")
        record.added.append(component)
        ctx = record.ctx.add(component)
        _, model, changed = ref.model_add(record.model, component, record.compactor, record.counter)
        parent = None if changed else record.ctx
        return self._record(
            Record(ctx, model, record.compactor, record.counter, record.window_size, parent)
        )

    @rule(target=contexts, index=contexts, compactor=compactors)
    def compact(self, index, compactor):
        """Compact any context by hand with any compactor."""
        record = self.records[index]
        result = compactor.compact(record.ctx)
        model, changed = record.model.compacted(compactor, record.counter)
        if not changed:
            assert result is record.ctx
            return multiple()
        return self._record(
            Record(result, model, record.compactor, record.counter, record.window_size)
        )

    @rule(target=contexts, index=contexts)
    def previous(self, index):
        """Step back with ``previous_node``."""
        record = self.records[index]
        previous = record.ctx.previous_node
        if record.previous is None:
            record.previous = previous
        assert record.previous is previous
        if not record.model.items:
            assert previous is None
            return multiple()
        if record.parent is not None:
            assert record.parent is previous
            return multiple()
        assert previous is not None
        return self._record(
            Record(
                previous,
                record.model.shrunk(),
                record.compactor,
                record.counter,
                record.window_size,
            )
        )

    @rule(index=contexts)
    def tokens(self, index):
        """Read a token total."""
        record = self.records[index]
        tokens = record.ctx.token_count
        assert ref.total(record.model.items, record.counter) == tokens
        if record.tokens is None:
            record.tokens = tokens

    @rule(index=contexts, n=st.integers(0, 12))
    def last_n(self, index, n):
        """Read the last ``n`` components."""
        items = self.records[index].model.items
        expected = list(items[len(items) - n :]) if n < len(items) else list(items)

        assert expected == self.records[index].ctx.as_list(n)

    @rule(
        index=contexts,
        position=st.integers(-14, 14),
        cut=st.slices(14),
        step=st.sampled_from([1, 1, -1, 2, -3]),
    )
    def sequence_reads(self, index, position, cut, step):
        """Read the context as a sequence: an index, a slice, reversed, membership."""
        ctx, items = self.records[index].ctx, self.records[index].model.items
        if -len(items) <= position < len(items):
            assert items[position] is ctx[position]
        else:
            with pytest.raises(IndexError):
                ctx[position]
        cut = slice(cut.start, cut.stop, step if cut.step is None else cut.step * step)

        assert list(items[cut]) == ctx[cut]
        assert all(a is b for a, b in zip(items[cut], ctx[cut], strict=True))
        assert list(reversed(items)) == list(reversed(ctx))
        assert all(c in ctx for c in items)

    @rule(index=contexts)
    def views(self, index):
        """Read the generation view and the current turn."""
        record = self.records[index]
        items = record.model.items
        expected = items
        if record.window_size is not None:
            p, k = ref.window_cut(items, record.window_size, pin_react_initiator)
            expected = items[:p] + items[k:]

        assert list(expected) == record.ctx.view_for_generation()
        assert _turn(items) == record.ctx.last_turn()

    def _check(self, record: Record) -> None:
        ctx, items = record.ctx, record.model.items
        got = ctx.as_list()
        assert len(items) == len(got) == len(ctx)
        assert all(a is b for a, b in zip(items, got, strict=True))
        assert all(a is b for a, b in zip(items, ctx, strict=True))
        assert (items[-1] if items else None) is ctx.node_data
        assert (not items) == ctx.is_root_node
        assert record.compactor is ctx.compactor
        assert record.counter is ctx.counter
        assert record.model.usage == ctx.last_usage_tokens
        if record.tokens is not None:
            assert record.tokens == ctx.token_count
        if record.previous is not None:
            assert record.previous is ctx.previous_node

    @invariant()
    def verify_inputs_unmodified(self):
        """Every context ever produced still reads back exactly as recorded."""
        for record in self.records:
            self._check(record)


class TestChatContextStateful(ContextMachine.TestCase):
    """Random programs over many contexts agree with the model at every step."""


class TestAsList:
    """``as_list(n)``: the last ``n`` components, like ``items[-n:]`` on a list."""

    @given(built=built_contexts(), n=st.integers(0, 40))
    @example(
        built=Built(
            [], [ChatContext().add(Message("user", "a")).add(Message("user", "b"))], *3 * [None]
        ),
        n=3,
    )
    def test_last_n_components(self, built, n):
        """Any ``n`` works, including more than the context holds."""
        items = built.last.as_list()

        assert (items[-n:] if n else []) == built.last.as_list(n)

    @pytest.mark.parametrize("bad", [-1, True, 1.0, "2"])
    def test_bad_counts_are_refused(self, bad):
        """A negative, boolean or non-int count raises ``InvalidArgumentError``."""
        with pytest.raises(InvalidArgumentError, match="last_n_components"):
            ChatContext().add(Message("user", "a")).as_list(bad)
