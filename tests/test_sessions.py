"""Session memory: instructions rebuilt per request, dialogue committed whole turns at a time."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    Component,
    DeliveredTools,
    ExtractiveBackend,
    InvalidArgumentError,
    InvalidComponentError,
    InvalidContextError,
    LLMSummarizeCompactor,
    MemoryStore,
    Message,
    MetaStore,
    ModelOutputThunk,
    NotInlineCompactorError,
    ReactInitiator,
    ScriptedBackend,
    Session,
    SessionConflictError,
    SessionMemory,
    SessionStore,
    SQLiteStore,
    ThresholdCompactor,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    pin_react_initiator,
    react,
    tool,
    validate_openai,
)

from ._postgres import postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import redis_server_fixture  # noqa: F401 (a fixture)
from ._stores import StoreFactory, store_factory_fixture, store_fixture  # noqa: F401 (fixtures)

SYSTEM = "You are a careful coding agent."


def tool_turn(k: int, calls: int = 2) -> list[Component]:
    """A whole turn: the user asks, the model calls tools in parallel, gets results, answers."""
    made = [ToolCall(f"call_{k}_{j}", "read_file", {"path": f"f{k}_{j}.py"}) for j in range(calls)]
    return [
        Message("user", f"question {k}"),
        ModelOutputThunk(None, tool_calls=made),
        *[ToolMessage(f"body {k} {j}", tool_call_id=c.id) for j, c in enumerate(made)],
        ModelOutputThunk(f"answer {k}"),
    ]


@pytest.fixture
def memory() -> SessionMemory:
    """A session memory on a fresh MemoryStore."""
    return SessionMemory()


class TestSessionMemory:
    def test_default_store_is_in_memory(self) -> None:
        """With no store, sessions live in a MemoryStore."""
        assert isinstance(SessionMemory().store, MemoryStore)

    def test_a_new_session_is_empty(self, memory: SessionMemory) -> None:
        """Opening a session nobody wrote gives version 0 and no dialogue."""
        session = memory.open("s1")
        assert ("s1", 0, (), {}) == (
            session.session_id,
            session.version,
            session.dialogue,
            dict(session.meta),
        )

    def test_messages_and_clear(self, memory: SessionMemory) -> None:
        """messages returns the remembered dialogue; clear forgets one session only."""
        memory.open("s1").commit(tool_turn(1))
        memory.open("s2").commit(tool_turn(2))
        memory.clear("s1")
        assert ((), tuple(tool_turn(2))) == (memory.messages("s1"), memory.messages("s2"))

    def test_meta_is_in_the_snapshot(self, memory: SessionMemory) -> None:
        """set_meta writes one key; the next snapshot carries it; None deletes it."""
        memory.set_meta("s1", "tool_search", '["read_file"]')
        memory.set_meta("s1", "locale", "fr")
        memory.set_meta("s1", "locale", None)
        assert {"tool_search": '["read_file"]'} == dict(memory.open("s1").meta)

    def test_store_must_be_a_session_store(self) -> None:
        """Anything that is not a SessionStore is refused, with the fix."""
        with pytest.raises(InvalidArgumentError, match=r"store=\{\} is not a SessionStore"):
            SessionMemory({})  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("session_id", "message"),
        [
            ("", "session_id='' must not be empty"),
            (7, "session_id=7 must be a str"),
            ("s" * 201, "is 201 characters, more than 200"),
        ],
    )
    @pytest.mark.parametrize("operation", ["open", "messages", "clear", "set_meta"])
    def test_bad_session_ids(
        self, memory: SessionMemory, operation: str, session_id: Any, message: str
    ) -> None:
        """Every entry point refuses a bad session id, naming the method."""
        call = {
            "open": lambda: memory.open(session_id),
            "messages": lambda: memory.messages(session_id),
            "clear": lambda: memory.clear(session_id),
            "set_meta": lambda: memory.set_meta(session_id, "k", "v"),
        }[operation]
        with pytest.raises(InvalidArgumentError, match=f"SessionMemory.{operation}: .*{message}"):
            call()


class TestContext:
    def test_instructions_then_dialogue(self, memory: SessionMemory) -> None:
        """The context is the system message, then the remembered dialogue in order."""
        session = memory.open("s1").commit(tool_turn(1))
        ctx = session.context(system=SYSTEM)
        assert [Message("system", SYSTEM), *tool_turn(1)] == ctx.as_list()

    def test_instructions_are_rebuilt_never_stored(self, memory: SessionMemory) -> None:
        """A changed prompt takes effect on the next request, and old prompts never pile up."""
        for k, prompt in enumerate(["Prompt v1.", "Prompt v2.", "Prompt v3."]):
            session = memory.open("s1")
            ctx = session.context(system=prompt)
            assert [prompt] == [c.content for c in ctx if c.role == "system"]
            session.commit(tool_turn(k))
        assert [] == [c for c in memory.messages("s1") if c.role == "system"]

    def test_instructions_as_system_messages(self, memory: SessionMemory) -> None:
        """A sequence of system messages is placed first, as given."""
        prompt = (Message("system", SYSTEM), Message("system", "Tools: read_file."))
        session = memory.open("s1").commit([Message("user", "hi")])
        assert [*prompt, Message("user", "hi")] == session.context(system=prompt).as_list()

    def test_no_instructions(self, memory: SessionMemory) -> None:
        """Without instructions the context is the dialogue; an empty session gives a root."""
        assert memory.open("s1").context().is_root_node
        session = memory.open("s1").commit([Message("user", "hi")])
        assert [Message("user", "hi")] == session.context().as_list()

    def test_request_only_messages_are_never_committed(self, memory: SessionMemory) -> None:
        """A message added to the request's context but left out of the turn is not remembered."""
        session = memory.open("s1")
        turn = [Message("user", "Fix the test."), ModelOutputThunk("Fixed.")]
        ctx = session.context(system=SYSTEM).add(turn[0])
        ctx = ctx.add(Message("user", "Reminder: run the tests before answering."))  # this request
        ctx = ctx.add(turn[1])
        session.commit(turn)
        assert tuple(turn) == memory.messages("s1")
        assert 4 == len(ctx)  # the reminder was sent with this request only

    def test_compactor_runs_once_and_is_carried(self, memory: SessionMemory) -> None:
        """The compactor compacts the built context, keeps the instructions, and rides along."""
        window = WindowCompactor(size=4)
        session = memory.open("s1")
        for k in range(5):
            session = session.commit(tool_turn(k, calls=1))
        ctx = session.context(system=SYSTEM, compactor=window)
        assert Message("system", SYSTEM) == ctx[0]
        assert tool_turn(4, calls=1) == ctx.as_list()[1:]
        assert window is ctx.compactor and window is ctx.add(Message("user", "next")).compactor
        assert [] == validate_openai(ctx)
        assert 20 == len(session.dialogue)  # the snapshot is untouched

    def test_counter_is_used(self, memory: SessionMemory) -> None:
        """A caller's token counter counts the context."""

        class OnePerComponent:
            def count(self, component: Component) -> int:
                return 1

        session = memory.open("s1").commit(tool_turn(1))
        assert 6 == session.context(system=SYSTEM, counter=OnePerComponent()).token_count

    def test_a_model_calling_compactor_is_refused(self, memory: SessionMemory) -> None:
        """As for any ChatContext, a compactor that may call a model on every add is refused."""
        summarize = LLMSummarizeCompactor(default_backend=ExtractiveBackend())
        with pytest.raises(NotInlineCompactorError):
            memory.open("s1").context(compactor=summarize)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("system", "error", "message"),
        [
            (b"prompt", InvalidArgumentError, "system=b'prompt' must be a str or a sequence"),
            (42, InvalidArgumentError, "system=42 must be a str or a sequence"),
            (Message("system", "x"), InvalidArgumentError, "must be a str or a sequence"),
            (["prompt"], InvalidComponentError, "system[0]='prompt' is not a Component"),
            (
                [Message("system", "x"), Message("user", "2+2?")],
                InvalidArgumentError,
                "system[1] is a user message, and instructions are system messages only",
            ),
        ],
    )
    def test_bad_instructions(
        self, memory: SessionMemory, system: Any, error: type[Exception], message: str
    ) -> None:
        """Instructions that are neither text nor components are refused, naming the value."""
        with pytest.raises(error, match=re.escape(message)):
            memory.open("s1").context(system=system)


class TestCommit:
    def test_commit_returns_a_new_snapshot(self, memory: SessionMemory) -> None:
        """commit writes one turn and returns the next snapshot; the old one is unchanged."""
        before = memory.open("s1")
        after = before.commit(tool_turn(1))
        assert (0, ()) == (before.version, before.dialogue)
        assert (1, tuple(tool_turn(1))) == (after.version, after.dialogue)
        assert after == memory.open("s1")

    def test_snapshots_are_frozen(self, memory: SessionMemory) -> None:
        """A Session cannot be changed in place."""
        session = memory.open("s1")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            session.version = 5  # type: ignore[misc]

    def test_an_empty_turn_is_a_no_op(self, memory: SessionMemory) -> None:
        """Committing nothing returns the same snapshot and writes nothing."""
        session = memory.open("s1")
        assert session is session.commit([])
        assert 0 == memory.open("s1").version

    def test_each_turn_is_one_version(self, memory: SessionMemory) -> None:
        """Three turns, three versions, all stored in order."""
        session = memory.open("s1")
        for k in range(3):
            session = session.commit(tool_turn(k))
        assert (3, tuple(c for k in range(3) for c in tool_turn(k))) == (
            session.version,
            memory.messages("s1"),
        )

    def test_a_stale_snapshot_conflicts(self, memory: SessionMemory) -> None:
        """Two requests opened the session at v0; the second commit raises and writes nothing."""
        first, second = memory.open("s1"), memory.open("s1")
        first.commit(tool_turn(1))
        with pytest.raises(SessionConflictError, match=re.escape("memory.open('s1')")):
            second.commit(tool_turn(2))
        assert tuple(tool_turn(1)) == memory.messages("s1")

    def test_results_may_complete_an_exchange_the_store_left_open(self) -> None:
        """A dialogue written straight to the store with calls open can be completed by a commit."""
        store = MemoryStore()
        call = ToolCall("c1", "ls")
        store.append(
            "s1",
            [Message("user", "ls"), ModelOutputThunk(None, tool_calls=[call])],
            expected_version=0,
        )
        session = SessionMemory(store).open("s1")
        session = session.commit([ToolMessage("a.py", tool_call_id="c1"), ModelOutputThunk("a.py")])
        assert [] == validate_openai(session.dialogue)

    @pytest.mark.parametrize(
        ("batch", "message"),
        [
            pytest.param(
                [Message("system", SYSTEM), Message("user", "hi")],
                "Session.commit: component 0 is a system message, and instructions are never "
                "stored; pass them as session.context(system=...) on every request",
                id="system message",
            ),
            pytest.param(
                [Message("user", "hi"), ToolMessage("x", tool_call_id="ghost")],
                "component 1 is a tool result for tool_call_id='ghost', but session 's1' does "
                "not store that call right before it; commit the assistant message that made "
                "the call together with its results",
                id="orphan result",
            ),
            pytest.param(
                [ToolMessage("again", tool_call_id="call_0_0")],
                "component 0 is a tool result for tool_call_id='call_0_0'",
                id="result for an answered call of an earlier turn",
            ),
            pytest.param(
                tool_turn(1)[:2],
                "the turn ends with tool calls 'call_1_0' (read_file), 'call_1_1' (read_file) "
                "unanswered; a turn is committed whole",
                id="ends with calls unanswered",
            ),
            pytest.param(
                tool_turn(1)[:3],
                "the turn ends with tool calls 'call_1_1' (read_file) unanswered",
                id="ends with one parallel call unanswered",
            ),
            pytest.param(
                [*tool_turn(1)[:3], Message("user", "wait"), *tool_turn(1)[3:]],
                "component 3 (user) comes before the results of tool calls 'call_1_1' "
                "(read_file); put each call's results right after it",
                id="exchange split by a message",
            ),
            pytest.param(
                [*tool_turn(1)[:3], tool_turn(1)[2], *tool_turn(1)[3:]],
                "component 3 is a tool result for tool_call_id='call_1_0'",
                id="duplicate result",
            ),
        ],
    )
    def test_refused_turns_write_nothing(
        self, memory: SessionMemory, batch: list[Component], message: str
    ) -> None:
        """A batch that would store a broken tool exchange or an instruction is refused whole."""
        session = memory.open("s1").commit(tool_turn(0))
        with pytest.raises(InvalidContextError, match=re.escape(message)):
            session.commit(batch)
        assert (1, tuple(tool_turn(0))) == (memory.open("s1").version, memory.messages("s1"))

    @pytest.mark.parametrize(
        ("batch", "error", "message"),
        [
            (Message("user", "hi"), InvalidArgumentError, "wrap a single component in a tuple"),
            ("hi", InvalidArgumentError, "components='hi' must be a sequence of components"),
            ([{"role": "user"}], InvalidComponentError, "components[0]={'role': 'user'} is not"),
        ],
    )
    def test_bad_batches(
        self, memory: SessionMemory, batch: Any, error: type[Exception], message: str
    ) -> None:
        """A batch that is not a sequence of components is refused before any check."""
        with pytest.raises(error, match=f"^Session.commit: .*{re.escape(message)}"):
            memory.open("s1").commit(batch)


class TestReplace:
    def test_leading_instructions_are_stripped(self, memory: SessionMemory) -> None:
        """The compacted context's system messages at the front are not stored."""
        session = memory.open("s1").commit(tool_turn(0)).commit(tool_turn(1))
        checkpoint = Checkpoint("Turn 0 read two files.", span=tool_turn(0), replaced_count=6)
        compacted = [Message("system", SYSTEM), checkpoint, *tool_turn(1)]
        after = session.replace(compacted)
        assert (3, (checkpoint, *tool_turn(1))) == (after.version, memory.messages("s1"))
        assert after.dialogue == memory.messages("s1")

    def test_a_real_compaction_round_trip(self, store: SessionStore) -> None:
        """Compact the request's context, store it, and read back the checkpoint and its span."""
        memory = SessionMemory(store)
        session = memory.open("s1")
        for k in range(6):
            session = session.commit(tool_turn(k))
        summarize = LLMSummarizeCompactor(default_backend=ExtractiveBackend(), keep_n=5)
        ctx = session.context(system=SYSTEM)
        compacted = summarize.compact(ctx)
        assert compacted is not ctx
        session = session.replace(compacted)
        reopened = memory.open("s1")
        checkpoint = reopened.dialogue[0]
        assert isinstance(checkpoint, Checkpoint)
        assert tuple(c for k in range(5) for c in tool_turn(k)) == checkpoint.span
        assert tool_turn(5) == list(reopened.dialogue[1:])
        assert (7, session.dialogue) == (reopened.version, reopened.dialogue)
        next_ctx = reopened.context(system="A new prompt.")
        assert ["system", "user", "user"] == [c.role for c in next_ctx.as_list()[:3]]
        assert [] == validate_openai(next_ctx)

    def test_an_inline_compaction_then_replace(self, memory: SessionMemory) -> None:
        """When the context a request built compacted itself, the new turn is stored by replace."""
        session = memory.open("s1")
        for k in range(8):
            session = session.commit(tool_turn(k))
        compactor = ThresholdCompactor(WindowCompactor(size=8), threshold=300)
        ctx = session.context(system=SYSTEM, compactor=compactor)
        turn = tool_turn(8)
        for component in turn:
            ctx = ctx.add(component)
        session = session.replace(ctx)
        assert turn == list(memory.messages("s1")[-len(turn) :])
        assert [] == validate_openai(memory.messages("s1"))

    def test_a_stale_replace_conflicts(self, memory: SessionMemory) -> None:
        """A compaction of an old snapshot is refused: the turn committed since is kept."""
        old = memory.open("s1").commit(tool_turn(0))
        old.commit(tool_turn(1))
        with pytest.raises(SessionConflictError):
            old.replace([Checkpoint("Turn 0.")])
        assert 10 == len(memory.messages("s1"))

    @pytest.mark.parametrize(
        ("dialogue", "message"),
        [
            pytest.param(
                [Checkpoint("x"), Message("system", "later")],
                "Session.replace: component 1 is a system message",
                id="system message after the front",
            ),
            pytest.param(
                [Checkpoint("x"), ToolMessage("r", tool_call_id="c9")],
                "component 1 is a tool result for tool_call_id='c9'",
                id="orphan result",
            ),
            pytest.param(
                [Message("system", SYSTEM), *tool_turn(1)[:3]],
                "the turn ends with tool calls 'call_1_1' (read_file) unanswered",
                id="open exchange",
            ),
        ],
    )
    def test_refused_dialogues_write_nothing(
        self, memory: SessionMemory, dialogue: list[Component], message: str
    ) -> None:
        """A dialogue with an instruction inside or a broken exchange is refused whole."""
        session = memory.open("s1").commit(tool_turn(0))
        with pytest.raises(InvalidContextError, match=re.escape(message)):
            session.replace(dialogue)
        assert tuple(tool_turn(0)) == memory.messages("s1")


class TestAcrossStores:
    def test_turns_commit_and_read_back(self, store: SessionStore) -> None:
        """The same session flow reads back equal on memory, SQLite and Redis."""
        memory = SessionMemory(store)
        session = memory.open("s1")
        for k in range(3):
            session = session.commit(tool_turn(k))
        memory.set_meta("s1", "tool_search", "read_file")
        reopened = memory.open("s1")
        assert session.dialogue == reopened.dialogue
        assert (3, {"tool_search": "read_file"}) == (reopened.version, dict(reopened.meta))

    def test_two_workers_one_session(self, store_factory: StoreFactory) -> None:
        """Two workers with their own store objects: the one that commits second conflicts."""
        worker_a, worker_b = SessionMemory(store_factory()), SessionMemory(store_factory())
        a, b = worker_a.open("s1"), worker_b.open("s1")
        a.commit(tool_turn(1))
        with pytest.raises(SessionConflictError):
            b.commit(tool_turn(2))
        retried = worker_b.open("s1").commit(tool_turn(2))
        assert (2, 10) == (retried.version, len(worker_a.messages("s1")))

    def test_reload_and_retry_under_contention(self, store_factory: StoreFactory) -> None:
        """Four threads commit five turns each to one session, retrying on conflict: 20 turns."""

        def work(worker: int) -> None:
            memory = SessionMemory(store_factory())
            for step in range(5):
                while True:
                    try:
                        memory.open("shared").commit(tool_turn(worker * 100 + step))
                        break
                    except SessionConflictError:
                        continue

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = SessionMemory(store_factory()).open("shared")
        assert (20, 100, []) == (
            stored.version,
            len(stored.dialogue),
            validate_openai(stored.dialogue),
        )

    def test_session_is_exported_and_typed(self) -> None:
        """Session snapshots come from SessionMemory.open and compare by value."""
        memory = SessionMemory()
        assert isinstance(memory.open("s1"), Session)
        assert memory.open("s1") == memory.open("s1")
        assert isinstance(memory.open("s1").context(), ChatContext)


@tool
def read_file(path: str) -> str:
    """Read a file of the project.

    Args:
        path: The file to read.
    """
    return f"contents of {path}: " + "def handler(): return 42\n" * 12


def reader_model(files: int) -> Any:
    """A scripted model that reads ``files`` files, one per turn, then answers."""

    def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
        if "<conversation>" in messages[-1].content:
            return "Earlier: files were read; every handler returns 42."  # a summary request
        assert [] == validate_openai(messages)
        done = sum(1 for m in messages if m.tool_call_id is not None)
        if done < files:
            made = ToolCall(f"c{done}-{uuid.uuid4().hex[:6]}", "read_file", {"path": f"m{done}.py"})
            return ModelOutputThunk(f"Reading m{done}.py.", tool_calls=[made])
        return "Every handler returns 42."

    return model


class TestWithReact:
    def test_each_finished_turn_is_committed(self, store: SessionStore) -> None:
        """react commits each tool step (the first with the goal) and the answer, not the prompt."""
        memory = SessionMemory(store)
        session = memory.open("agent")
        result = react(
            "What do the handlers return?",
            session.context(system=SYSTEM),
            ScriptedBackend(reader_model(2)),
            tools=[read_file],
            session=session,
        )
        stored = memory.open("agent")
        assert "Every handler returns 42." == result.answer
        assert result.session == stored
        assert (3, 6) == (stored.version, len(stored.dialogue))  # goal + step, step, answer
        assert isinstance(stored.dialogue[0], ReactInitiator)
        assert [] == [c for c in stored.dialogue if c.role == "system"]
        assert list(stored.dialogue) == result.ctx.as_list()[1:]

    def test_a_compaction_replaces_the_stored_dialogue(self, store_factory: StoreFactory) -> None:
        """A run that compacts stores its checkpoint; a later request elsewhere goes on from it."""
        memory = SessionMemory(store_factory())
        session = memory.open("agent")
        compactor = ThresholdCompactor(
            LLMSummarizeCompactor(keep_n=2, pin_predicate=pin_react_initiator), threshold=600
        )
        result = react(
            "Read the modules.",
            session.context(system=SYSTEM),
            ScriptedBackend(reader_model(6)),
            tools=[read_file],
            compactor=compactor,
            session=session,
            loop_budget=20,
        )
        worker_b = SessionMemory(store_factory())  # another worker on the same store
        stored = worker_b.open("agent")
        assert any(isinstance(c, Checkpoint) for c in stored.dialogue)
        assert list(stored.dialogue) == result.ctx.as_list()[1:]
        checkpoint = next(c for c in stored.dialogue if isinstance(c, Checkpoint))
        assert checkpoint.span  # kept by the store, so recall works after a restart
        follow_up = react(
            "And the last one?",
            stored.context(system="A changed prompt."),
            ScriptedBackend(lambda m, o: "Also 42."),
            session=stored,
        )
        assert "Also 42." == follow_up.answer
        assert [] == validate_openai(worker_b.messages("agent"))

    def test_delivered_tools_live_in_session_metadata(self, tmp_path: Path) -> None:
        """tool_search's record rides in the session's metadata through the documented adapter."""

        class SessionMeta:
            def __init__(self, store: SessionStore) -> None:
                self.store = store

            def get(self, session_id: str, key: str) -> str | None:
                return self.store.load(session_id).meta.get(key)

            def set(self, session_id: str, key: str, value: str | None) -> None:
                self.store.set_meta(session_id, key, value)

        with SQLiteStore(tmp_path / "s.db") as store:
            adapter = SessionMeta(store)
            assert isinstance(adapter, MetaStore)
            DeliveredTools("agent", adapter).record(["read_file"])
            with SQLiteStore(tmp_path / "s.db") as again:  # another process, same file
                assert ("read_file",) == DeliveredTools("agent", SessionMeta(again)).names
