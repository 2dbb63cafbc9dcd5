"""The async faces of the stores: areact writes through them, and SessionMemory uses them.

The store contract itself runs on every async store through ``tests/_stores.py``'s
``async-*`` kinds; this file covers what only async code can see.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mellea_ctx import (
    AsyncPostgresStore,
    AsyncRedisStore,
    AsyncSessionStore,
    AsyncSQLiteStore,
    AsyncStoreAdapter,
    ChatContext,
    Component,
    InvalidArgumentError,
    MemoryStore,
    ModelOutputThunk,
    PostgresStore,
    ScriptedBackend,
    SessionMemory,
    SessionStore,
    SQLiteStore,
    ToolCall,
    areact,
    as_async_store,
    tool,
)

from ._postgres import PostgresServer, postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import RedisServer, redis_server_fixture  # noqa: F401 (a fixture)


@tool
def note(text: str) -> str:
    """Write a note down.

    Args:
        text: The note.
    """
    return f"noted: {text}"


def two_steps(messages: Sequence[Component], options: Any) -> ModelOutputThunk:
    """Call ``note`` once, then answer."""
    if messages[-1].role == "tool":
        return ModelOutputThunk("done")
    return ModelOutputThunk(None, tool_calls=[ToolCall("c1", "note", {"text": "hi"})])


async def run_agent(memory: SessionMemory) -> tuple[str | None, tuple[Component, ...]]:
    session = await memory.aopen("s1")
    result = await areact(
        "take a note",
        session.context(system="You take notes."),
        ScriptedBackend(two_steps),
        tools=[note],
        session=session,
    )
    return result.answer, (await memory.aopen("s1")).dialogue


class TestAreact:
    def test_writes_through_an_async_only_store(self, redis_server: RedisServer) -> None:
        """With an AsyncRedisStore (no sync methods), every finished turn is stored."""
        store = AsyncRedisStore(redis_server.url, prefix=f"areact-{uuid.uuid4().hex}:")

        async def main() -> tuple[str | None, tuple[Component, ...]]:
            async with store:
                return await run_agent(SessionMemory(store))

        answer, dialogue = asyncio.run(main())
        assert "done" == answer
        assert ["user", "assistant", "tool", "assistant"] == [c.role for c in dialogue]

    def test_writes_through_async_postgres(self, postgres_server: PostgresServer) -> None:
        """With an AsyncPostgresStore the turns land in the tables, read back by a sync store."""
        prefix = f"areact_{uuid.uuid4().hex[:16]}"
        store = AsyncPostgresStore(postgres_server.dsn, table_prefix=prefix)

        async def main() -> tuple[str | None, tuple[Component, ...]]:
            async with store:
                return await run_agent(SessionMemory(store))

        answer, _ = asyncio.run(main())
        with PostgresStore(postgres_server.dsn, table_prefix=prefix) as again:
            stored = again.load("s1")
        assert ("done", 2) == (answer, stored.version)

    def test_writes_through_the_sqlite_worker_thread(self, tmp_path: Path) -> None:
        """With an AsyncSQLiteStore the turns land in the file, read back by a sync store."""
        path = tmp_path / "s.db"
        with AsyncSQLiteStore(path) as store:
            answer, _ = asyncio.run(run_agent(SessionMemory(store)))
        with SQLiteStore(path) as again:
            stored = again.load("s1")
        assert ("done", 2) == (answer, stored.version)


class TestSessionMemory:
    def test_sync_methods_of_an_async_only_store_say_what_to_use(self) -> None:
        """memory.open on an AsyncRedisStore names the async method to call instead."""
        memory = SessionMemory(AsyncRedisStore(prefix="never-connects:"))
        with pytest.raises(InvalidArgumentError, match=r"async only; use the async methods"):
            memory.open("s1")

    def test_refuses_what_is_no_store(self) -> None:
        """A value with neither face is refused, naming both protocols."""
        with pytest.raises(InvalidArgumentError, match="nor an AsyncSessionStore"):
            SessionMemory(object())  # type: ignore[arg-type]


class TestAsStore:
    def test_memory_is_adapted_inline_and_sqlite_in_a_thread(self, tmp_path: Path) -> None:
        """The adapter's repr says how it waits; an async store is returned as it is."""
        with AsyncSQLiteStore(tmp_path / "s.db") as native:
            assert native is as_async_store(native)
        assert "inline" in repr(as_async_store(MemoryStore()))
        with SQLiteStore(tmp_path / "t.db") as sync:
            assert "thread" in repr(as_async_store(sync))

    def test_every_async_form_implements_the_protocol(self, tmp_path: Path) -> None:
        """AsyncSessionStore is runtime-checkable; AsyncSQLiteStore has both faces."""
        with AsyncSQLiteStore(tmp_path / "s.db") as both:
            assert isinstance(both, AsyncSessionStore) and isinstance(both, SessionStore)
        assert isinstance(AsyncStoreAdapter(MemoryStore()), AsyncSessionStore)
        assert not isinstance(AsyncRedisStore(prefix="x:"), SessionStore)

    def test_adapter_refuses_what_is_no_store(self) -> None:
        """AsyncStoreAdapter names what it needs."""
        with pytest.raises(InvalidArgumentError, match="is not a SessionStore"):
            AsyncStoreAdapter(ChatContext())  # type: ignore[arg-type]
