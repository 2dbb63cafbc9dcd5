"""Chains of thousands of checkpoints stay storable, loadable, restorable and recallable.

DESIGN.md invariant 13: nothing recurses over the number of chained
checkpoints. Each test compacts a session again and again with
``LLMSummarizeCompactor(keep_n=1)``, so every checkpoint folds in the one
before, and reads the session back from the store after every batch.
"""

from __future__ import annotations

import json

import pytest

from mellea_ctx import (
    Checkpoint,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    SessionMemory,
    component_from_record,
    component_to_record,
    components_from_json,
    components_to_json,
    react,
)

from ._postgres import postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import redis_server_fixture  # noqa: F401 (a fixture)
from ._stores import StoreFactory, store_factory_fixture, store_fixture  # noqa: F401 (fixtures)

#: Depth in the default run, short enough for the edit-test loop. Each checkpoint is stored
#: once and referred to (mellea_ctx/_sessions/chains.py), so a replace costs the same at any
#: depth (benchmarks/chains.py); the reliability run takes every store to 5,000, ten times
#: past the depth where the old nested records broke (about 490). Before entries, every
#: replace rewrote the whole chain and 5,000 deep would have taken about 11 minutes a store.
DEFAULT_DEPTH = {"memory": 1_000, "sqlite": 300, "redis": 300, "postgres": 300}
DEEP = 5_000
RELIABILITY_DEPTH = {"memory": DEEP, "sqlite": DEEP, "redis": DEEP, "postgres": DEEP}
BATCH = 100


def _compact_chain(store_factory: StoreFactory, depth: int) -> SessionMemory:
    memory = SessionMemory(store_factory())
    backend = ScriptedBackend(lambda messages, options: "The user asked; the agent answered.")
    compactor = LLMSummarizeCompactor(default_backend=backend, keep_n=1)
    session = memory.open("deep")
    for i in range(depth):
        turn = [Message("user", f"question {i}"), ModelOutputThunk(f"answer {i}")]
        session = session.commit(turn)
        session = session.replace(compactor.compact(session.context(system="Be brief.")))
        if (i + 1) % BATCH == 0:
            reread = SessionMemory(store_factory()).open("deep")
            assert reread.version == session.version
            assert [type(c) for c in reread.dialogue] == [Checkpoint, ModelOutputThunk]
    return memory


def _check_chain(memory: SessionMemory, depth: int) -> None:
    session = memory.open("deep")
    checkpoint = session.dialogue[0]
    assert isinstance(checkpoint, Checkpoint)
    assert checkpoint.replaced_count == 2 * depth - 1
    levels = 0
    node: Checkpoint | None = checkpoint
    while node is not None:  # walk the chain the store rebuilt, down to the first checkpoint
        levels += 1
        folded = [c for c in node.span if isinstance(c, Checkpoint)]
        node = folded[0] if folded else None
    # The first few compactions fold no earlier checkpoint (nothing was worth summarizing yet).
    assert depth - 5 <= levels < depth
    text = components_to_json(session.dialogue)
    assert components_to_json(components_from_json(text)) == text


def _run(store_factory: StoreFactory, depth: int) -> None:
    memory = _compact_chain(store_factory, depth)
    _check_chain(memory, depth)


class TestDeepChains:
    def test_long_chains_of_compactions_on_every_store(
        self, store_factory: StoreFactory, request: pytest.FixtureRequest
    ) -> None:
        """A session compacted 1,000 times (300 on a durable store) reads back after every batch."""
        kind = request.node.callspec.params["store_factory"]
        _run(store_factory, DEFAULT_DEPTH[kind.removeprefix("async-")])

    @pytest.mark.reliability
    def test_thousands_of_chained_compactions_on_every_store(
        self, store_factory: StoreFactory, request: pytest.FixtureRequest
    ) -> None:
        """A session compacted thousands of times reads back from every store after every batch.

        The async forms of the durable stores write the same records as the sync
        ones, so they run the default depth only (their own code is the I/O).
        """
        kind = request.node.callspec.params["store_factory"]
        if kind in ("async-sqlite", "async-redis", "async-postgres"):
            pytest.skip("the same records as the sync store; the default run covers the I/O")
        _run(store_factory, RELIABILITY_DEPTH[kind.removeprefix("async-")])


def _chain(depth: int) -> Checkpoint:
    checkpoint = Checkpoint("first", span=[Message("user", "hello")])
    for i in range(depth - 1):
        checkpoint = Checkpoint(f"level {i}", span=[checkpoint, Message("user", f"m{i}")])
    return checkpoint


class TestFlatRecords:
    def test_record_nesting_does_not_grow_with_depth(self) -> None:
        """A 5,000-deep checkpoint writes a record of fixed nesting that reads back equal."""
        record = component_to_record(_chain(DEEP))
        text = json.dumps(record)
        back = component_from_record(json.loads(text))
        assert isinstance(back, Checkpoint)
        assert component_to_record(back) == record
        assert len(record["checkpoints"]) == DEEP - 1

    def test_an_older_nested_record_reads_back(self) -> None:
        """A record with checkpoints nested inside spans (the older layout) still reads."""
        inner = {"kind": "checkpoint", "summary": "a", "span": [{"kind": "cblock", "value": "x"}]}
        outer = {"kind": "checkpoint", "summary": "b", "span": [inner]}
        back = component_from_record(outer)
        assert isinstance(back, Checkpoint)
        assert isinstance(back.span[0], Checkpoint)
        assert back.span[0].summary == "a"

    def test_a_ref_to_no_earlier_checkpoint_is_damaged(self) -> None:
        """A ref past the table is reported as a damaged record, not an IndexError."""
        from mellea_ctx import InvalidComponentError

        record = {"kind": "checkpoint", "summary": "b", "span": [{"kind": "ref", "checkpoint": 3}]}
        with pytest.raises(InvalidComponentError, match="ref points to no earlier checkpoint"):
            component_from_record(record)


class TestDeepRecall:
    def test_recall_reads_through_a_deep_chain(self) -> None:
        """The recall tool reads the originals of a 5,000-deep chain back, oldest first."""
        from mellea_ctx import ChatContext, ToolCall

        deep = _chain(DEEP)
        calls = iter(range(3))

        def model(messages: list, options: object) -> object:
            if next(calls) == 0:
                return ModelOutputThunk(None, tool_calls=[ToolCall("r1", "recall", '{"count": 2}')])
            return messages[-1].content

        ctx = ChatContext().add(deep)
        compactor = LLMSummarizeCompactor(keep_n=100)
        result = react("read back", ctx, ScriptedBackend(model), compactor=compactor)
        assert result.answer is not None
        assert "hello" in result.answer
        assert "replaced 5000 messages" in result.answer

    def test_older_nested_records_as_deep_as_json_reads_rebuild(self) -> None:
        """200 checkpoints nested the older way (JSON itself parses that deep) read back."""
        depth = 200
        text = "[" + '{"kind": "checkpoint", "summary": "s", "span": [' * depth + "]}" * depth + "]"
        (back,) = components_from_json(text)
        levels = 0
        node: object = back
        while isinstance(node, Checkpoint):
            levels += 1
            node = node.span[0] if node.span else None
        assert levels == depth
