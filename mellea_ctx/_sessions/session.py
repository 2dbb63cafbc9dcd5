"""Session memory: the dialogue of each conversation, remembered between requests.

``SessionMemory`` keeps, per session id, the *dialogue*: user messages, the
model's replies, its tool calls and their results, and the checkpoints a
compaction left. It never keeps system instructions. Those are passed to
:meth:`Session.context` on every request and placed in front of the
remembered dialogue, so a changed prompt or tool guidance takes effect on the
next request and old prompts never pile up in the history.

Each request works on an immutable :class:`Session` snapshot:

1. ``session = memory.open(session_id)`` reads the dialogue and its version;
2. ``ctx = session.context(system=...)`` builds a fresh context for the model;
3. ``session = session.commit(turn)`` stores the turn (the user message, the
   model's replies, every tool call with all its results) in one atomic write,
   which succeeds only if nobody else wrote the session since step 1;
4. after a compaction, ``session = session.replace(compacted)`` stores the
   dialogue the compactor produced instead; ``session = session.compact(compactor)``
   does both under the session's lease (:mod:`.lease`), so of many workers
   sharing the session only one pays for the summary.

Async code does the same with ``await memory.aopen(...)``,
``await session.acommit(turn)`` and ``await session.areplace(compacted)``,
which go through the store's async face (:func:`~mellea_ctx.as_async_store`)
and never block the event loop. An async-only store (``AsyncRedisStore``)
has only these.

*Request-only* messages (a reminder injected for one model call, a retrieved
document, tool guidance) are simply never committed: add them to the context
of the request and leave them out of the turn you commit.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from .._core.components import Component, Message
from .._core.context import ChatContext
from .._core.exceptions import (
    InvalidArgumentError,
    InvalidContextError,
    SessionConflictError,
)
from .._core.nodes import require_components
from .._core.operations import Operation, arun, run
from .async_store import AsyncSessionStore, as_async_store
from .lease import SessionLeases, aacquire, acquire, arelease, check_ttl, leases_of
from .memory import MemoryStore
from .store import SessionStore, StoredSession, check_components, check_meta, check_session_id

if TYPE_CHECKING:
    from .._core.protocols import Compactor, InlineCompactor
    from .._core.tokens import TokenCounter


class SessionMemory:
    """Remembers each session's dialogue in a store, one atomic write per turn.

    Args:
        store: Where sessions live: a :class:`~mellea_ctx.MemoryStore` (the
            default; one process, nothing survives it), a
            :class:`~mellea_ctx.SQLiteStore` (durable, one machine), a
            :class:`~mellea_ctx.RedisStore` or :class:`~mellea_ctx.PostgresStore`
            (many workers on many machines), or any :class:`~mellea_ctx.SessionStore`; or an
            :class:`~mellea_ctx.AsyncSessionStore`
            (:class:`~mellea_ctx.AsyncSQLiteStore`, which has both faces, or
            :class:`~mellea_ctx.AsyncRedisStore`, which is async only).

    Raises:
        InvalidArgumentError: When ``store`` is neither kind of store.

    Examples:
        >>> from mellea_ctx import Message, ModelOutputThunk
        >>> memory = SessionMemory()
        >>> session = memory.open("user-42")
        >>> session = session.commit([Message("user", "Hi!"), ModelOutputThunk("Hello.")])
        >>> ctx = memory.open("user-42").context(system="You are terse.")
        >>> [c.role for c in ctx]
        ['system', 'user', 'assistant']
        >>> [c.role for c in memory.messages("user-42")]  # the instructions were not stored
        ['user', 'assistant']
    """

    __slots__ = ("_astore", "_store")

    def __init__(self, store: SessionStore | AsyncSessionStore | None = None) -> None:
        if store is None:
            store = MemoryStore()
        elif not isinstance(store, (SessionStore, AsyncSessionStore)):
            msg = (
                f"SessionMemory: store={store!r} is not a SessionStore (it needs load, append, "
                "replace, set_meta and clear) nor an AsyncSessionStore (aload, aappend, ...); "
                "pass MemoryStore(), SQLiteStore(path), RedisStore(url) or AsyncRedisStore(url)"
            )
            raise InvalidArgumentError(msg)
        self._store: SessionStore | None = store if isinstance(store, SessionStore) else None
        self._astore = as_async_store(store)

    @property
    def store(self) -> SessionStore:
        """The store the sessions live in.

        Raises:
            InvalidArgumentError: When the store is async only (use :attr:`astore`).
        """
        if self._store is None:
            msg = (
                f"SessionMemory: the store {self._astore!r} is async only; use the async "
                "methods (await memory.aopen(...), session.acommit(...)) or memory.astore"
            )
            raise InvalidArgumentError(msg)
        return self._store

    @property
    def astore(self) -> AsyncSessionStore:
        """The store's async face: the store itself, or an adapter (:func:`as_async_store`)."""
        return self._astore

    def open(self, session_id: str) -> Session:
        """Return a snapshot of the session as stored now (empty, version 0, when new).

        Raises:
            InvalidArgumentError: For a session id that is not a non-empty str
                of at most 200 characters.
        """
        check_session_id("SessionMemory.open", session_id)
        return self._snapshot(session_id, self.store.load(session_id))

    async def aopen(self, session_id: str) -> Session:
        """Return a snapshot of the session, read through the store's async face.

        Raises:
            InvalidArgumentError: For a bad session id (as :meth:`open`).

        Examples:
            >>> import asyncio
            >>> from mellea_ctx import Message
            >>> memory = SessionMemory()
            >>> async def turn():
            ...     session = await memory.aopen("s1")
            ...     return await session.acommit([Message("user", "hi")])
            >>> asyncio.run(turn()).version
            1
        """
        check_session_id("SessionMemory.aopen", session_id)
        return self._snapshot(session_id, await self._astore.aload(session_id))

    def _snapshot(self, session_id: str, stored: StoredSession) -> Session:
        return Session(
            memory=self,
            session_id=session_id,
            version=stored.version,
            dialogue=stored.components,
            meta=stored.meta,
        )

    def messages(self, session_id: str) -> tuple[Component, ...]:
        """Return the remembered dialogue, without any system instructions.

        Examples:
            >>> from mellea_ctx import Message
            >>> memory = SessionMemory()
            >>> memory.messages("new-session")
            ()
        """
        check_session_id("SessionMemory.messages", session_id)
        return self.store.load(session_id).components

    def set_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key of the session, or delete it when ``value`` is ``None``.

        Metadata (a tool-search record, a user's locale) is not versioned: the
        last writer wins, and commits are not affected.

        Examples:
            >>> memory = SessionMemory()
            >>> memory.set_meta("s1", "locale", "de-CH")
            >>> dict(memory.open("s1").meta)
            {'locale': 'de-CH'}
        """
        check_session_id("SessionMemory.set_meta", session_id)
        check_meta("SessionMemory.set_meta", key, value)
        self.store.set_meta(session_id, key, value)

    def clear(self, session_id: str) -> None:
        """Forget one session (dialogue, version and metadata); other sessions are untouched."""
        check_session_id("SessionMemory.clear", session_id)
        self.store.clear(session_id)

    def __repr__(self) -> str:
        return f"SessionMemory(store={self._astore if self._store is None else self._store!r})"


@attrs.define(frozen=True, slots=True)
class Session:
    """An immutable snapshot of one session, as it was when opened or last written.

    Get one from :meth:`SessionMemory.open`. ``commit`` and ``replace``
    write to the store and return a new snapshot; ``self`` is not modified.
    A write from a snapshot that is no longer current (another worker wrote
    the session since) raises :class:`~mellea_ctx.SessionConflictError` and
    writes nothing: open the session again and redo the turn.

    Attributes:
        session_id: The session's id.
        version: The store's version of the session this snapshot shows.
        dialogue: The remembered dialogue, oldest first, without instructions.
        meta: The session's metadata when the snapshot was taken.
        memory: The :class:`SessionMemory` this snapshot writes through.
    """

    memory: SessionMemory = attrs.field(eq=False, repr=False)
    session_id: str
    version: int
    dialogue: tuple[Component, ...]
    meta: Mapping[str, str] = attrs.field(hash=False, repr=False)

    def context(
        self,
        *,
        system: str | Iterable[Component] | None = None,
        compactor: InlineCompactor | None = None,
        counter: TokenCounter | None = None,
    ) -> ChatContext:
        """Return a fresh context: the instructions, then the remembered dialogue.

        The instructions are rebuilt on every call and never stored.

        Args:
            system: The system instructions: a str (one system message) or
                system messages, placed first.
            compactor: An inline compactor the context carries; it runs once
                on the full context here, and after every later ``add``.
            counter: The token counter (tiktoken ``o200k_base`` by default).

        Raises:
            InvalidArgumentError: When ``system`` is neither a str nor system messages.

        Examples:
            >>> from mellea_ctx import Message
            >>> session = SessionMemory().open("s1").commit([Message("user", "hi")])
            >>> [c.content for c in session.context(system="Be brief.")]
            ['Be brief.', 'hi']
        """
        prefix = _instructions(system)
        ctx = ChatContext(compactor=compactor, counter=counter)
        items = (*prefix, *self.dialogue)
        if not items:
            return ctx
        for component in items[:-1]:  # no compaction while building
            ctx = ChatContext.from_previous(ctx, component)
        return ctx.add(items[-1])  # one compaction, over the whole context

    def commit(self, components: Iterable[Component]) -> Session:
        """Store one turn, atomically, and return the new snapshot; ``self`` is not modified.

        A turn is committed whole: every assistant tool call together with all
        of its results. System messages are refused (instructions are passed
        to :meth:`context` on every request, never stored); so is a batch that
        would store a tool result whose call is not stored, or that ends with
        calls still unanswered. Nothing is written for a refused batch, and an
        empty one returns ``self`` without touching the store.

        Raises:
            InvalidContextError: For a system message, an orphan tool result,
                a call followed by something other than its results, or a
                batch that ends inside a tool exchange.
            InvalidComponentError: For an item that is not a component, or a
                component kind that has no stored record.
            SessionConflictError: When another writer changed the session
                since this snapshot; reload and retry the turn.

        Examples:
            >>> from mellea_ctx import Message, ModelOutputThunk, ToolCall, ToolMessage
            >>> session = SessionMemory().open("s1")
            >>> call = ToolCall("call_1", "get_time")
            >>> turn = [
            ...     Message("user", "What time is it?"),
            ...     ModelOutputThunk(None, tool_calls=[call]),
            ...     ToolMessage("09:30", tool_call_id="call_1"),
            ...     ModelOutputThunk("It is 09:30."),
            ... ]
            >>> after = session.commit(turn)
            >>> session.version, after.version, len(after.dialogue)
            (0, 1, 4)
        """
        batch = self._turn("Session.commit", components)
        if not batch:
            return self
        version = self.memory.store.append(self.session_id, batch, expected_version=self.version)
        return attrs.evolve(self, version=version, dialogue=self.dialogue + batch)

    async def acommit(self, components: Iterable[Component]) -> Session:
        """:meth:`commit` through the store's async face; ``self`` is not modified.

        Raises:
            SessionConflictError: As :meth:`commit`, which lists the other errors.
        """
        batch = self._turn("Session.acommit", components)
        if not batch:
            return self
        astore = self.memory.astore
        version = await astore.aappend(self.session_id, batch, expected_version=self.version)
        return attrs.evolve(self, version=version, dialogue=self.dialogue + batch)

    def _turn(self, owner: str, components: Iterable[Component]) -> tuple[Component, ...]:
        batch = check_components(owner, components)
        if batch:
            _check_turn(owner, self.session_id, self.dialogue, batch)
        return batch

    def replace(self, dialogue: Iterable[Component]) -> Session:
        """Store the dialogue a compaction produced, atomically; ``self`` is not modified.

        Pass the compacted context (or its components): the system messages at
        its front are the instructions and are stripped, because instructions
        are never stored. The rest must keep every tool exchange whole, as
        every compactor of this package does.

        Raises:
            InvalidContextError: For a system message after the front, an
                orphan tool result, or a tool exchange left open or split.
            InvalidComponentError: For a component kind that has no stored record.
            SessionConflictError: When another writer changed the session
                since this snapshot; reload and compact again.

        Examples:
            >>> from mellea_ctx import Checkpoint, Message
            >>> session = SessionMemory().open("s1")
            >>> session = session.commit([Message("user", "a"), Message("assistant", "b")])
            >>> compacted = [Message("system", "Be brief."), Checkpoint("The user said a.")]
            >>> [c.role for c in session.replace(compacted).dialogue]
            ['user']
        """
        kept = _compacted("Session.replace", self.session_id, dialogue)
        version = self.memory.store.replace(self.session_id, kept, expected_version=self.version)
        return attrs.evolve(self, version=version, dialogue=kept)

    async def areplace(self, dialogue: Iterable[Component]) -> Session:
        """:meth:`replace` through the store's async face; ``self`` is not modified.

        Raises:
            SessionConflictError: As :meth:`replace`, which lists the other errors.
        """
        kept = _compacted("Session.areplace", self.session_id, dialogue)
        astore = self.memory.astore
        version = await astore.areplace(self.session_id, kept, expected_version=self.version)
        return attrs.evolve(self, version=version, dialogue=kept)

    def compact(
        self,
        compactor: Compactor,
        *,
        system: str | Iterable[Component] | None = None,
        lease: float = 60.0,
        wait: float = 0.0,
    ) -> Session:
        """Compact the stored session under its lease, one worker at a time; ``self`` is kept.

        Takes the session's lease (held ``lease`` seconds at most, so a
        worker that dies holding it blocks nobody for longer), checks that
        this snapshot is still the stored one, runs ``compactor`` on
        :meth:`context` and stores the result. Turns another worker commits
        meanwhile are kept: the compacted dialogue is stored with them after
        it. When another worker holds the lease (still so after ``wait``
        seconds), nothing is summarized and ``self`` is returned: go on with
        the uncompacted history, which the holder is compacting. When another
        worker rewrote the stored dialogue since this snapshot (it compacted
        it), nothing is summarized either and the stored session is returned.

        Args:
            compactor: Any :class:`~mellea_ctx.Compactor`.
            system: The instructions, as :meth:`context` takes them.
            lease: Seconds the lease lasts; longer than a compaction takes.
            wait: Seconds to wait for a lease another worker holds; 0 goes on at once.

        Returns:
            The snapshot after the compaction, or the one to go on with.

        Raises:
            InvalidArgumentError: For a ``lease`` or ``wait`` that is not a
                number of seconds.
            SessionStoreError: When the store fails.

        Examples:
            >>> from mellea_ctx import LLMSummarizeCompactor, Message, ModelOutputThunk
            >>> from mellea_ctx import ScriptedBackend
            >>> summarizer = ScriptedBackend(lambda messages, options: "Three questions.")
            >>> compactor = LLMSummarizeCompactor(default_backend=summarizer, keep_n=1)
            >>> session = SessionMemory().open("s1")
            >>> for i in range(3):
            ...     question = Message("user", f"question {i} about the report " * 20)
            ...     session = session.commit([question, ModelOutputThunk("the answer " * 20)])
            >>> compacted = session.compact(compactor)
            >>> compacted.version, [type(c).__name__ for c in compacted.dialogue]
            (4, ['Checkpoint', 'ModelOutputThunk'])
        """
        ttl, patience = _lease_terms("Session.compact", lease, wait)
        leases = leases_of(self.memory.store)
        assert isinstance(leases, SessionLeases)  # a sync store's, or one in this process
        holder = uuid.uuid4().hex

        def execute(step: _Step) -> Any:
            match step.what:
                case "take":
                    return acquire(leases, self.session_id, holder, ttl, patience)
                case "open":
                    return self.memory.open(self.session_id)
                case "compact":
                    return compactor.compact(step.arg)
                case "replace":
                    base, dialogue = step.arg
                    return base.replace(dialogue)
                case "release":
                    return leases.release_lease(self.session_id, holder)

        return run(self._compaction("Session.compact", system), execute)

    async def acompact(
        self,
        compactor: Compactor,
        *,
        system: str | Iterable[Component] | None = None,
        lease: float = 60.0,
        wait: float = 0.0,
    ) -> Session:
        """:meth:`compact` through the store's async face; ``self`` is not modified.

        The compactor's own ``acompact`` runs when it has one, else its
        ``compact`` runs in a worker thread.

        Raises:
            InvalidArgumentError: As :meth:`compact`.
            SessionStoreError: When the store fails.
        """
        ttl, patience = _lease_terms("Session.acompact", lease, wait)
        leases = leases_of(self.memory.astore)
        holder = uuid.uuid4().hex

        async def execute(step: _Step) -> Any:
            match step.what:
                case "take":
                    return await aacquire(leases, self.session_id, holder, ttl, patience)
                case "open":
                    return await self.memory.aopen(self.session_id)
                case "compact":
                    own: Any = getattr(compactor, "acompact", None)
                    before = step.arg
                    return await (
                        own(before) if own else asyncio.to_thread(compactor.compact, before)
                    )
                case "replace":
                    base, dialogue = step.arg
                    return await base.areplace(dialogue)
                case "release":
                    return await arelease(leases, self.session_id, holder)

        return await arun(self._compaction("Session.acompact", system), execute)

    def _compaction(
        self, owner: str, system: str | Iterable[Component] | None
    ) -> Operation[_Step, Session]:
        """:meth:`compact`'s rules, for both forms: each step it yields is the driver's to run."""
        if not (yield _Step("take")):
            return self
        try:
            current: Session = yield _Step("open")
            if _appended_since(self.dialogue, current.dialogue) is None:
                return current  # another worker rewrote it (compacted it, most likely)
            before = self.context(system=system)
            compacted: Iterable[Component] = yield _Step("compact", before)
            if tuple(compacted) == tuple(before):
                return current
            # Store the compaction of this snapshot, followed by the turns others added since.
            done = _compacted(owner, self.session_id, compacted)
            base = current
            for _attempt in range(_REBASES):
                tail = _appended_since(self.dialogue, base.dialogue)
                if tail is None:  # not only appends: another worker rewrote the session
                    return base
                try:
                    stored: Session = yield _Step("replace", (base, (*done, *tail)))
                    return stored
                except SessionConflictError:
                    base = yield _Step("open")
            last: Session = yield _Step("open")
            return last
        finally:
            yield _Step("release")


def _lease_terms(owner: str, lease: object, wait: object) -> tuple[float, float]:
    """The checked ``lease`` and ``wait`` of :meth:`Session.compact` and its async twin."""
    ttl = check_ttl(owner, "lease", lease, allow_zero=False)
    return ttl, check_ttl(owner, "wait", wait, allow_zero=True)


@attrs.frozen
class _Step:
    """One step of a compaction (:meth:`Session._compaction`) for its driver to run."""

    what: Literal["take", "open", "compact", "replace", "release"]
    arg: Any = None


#: How many times a compaction is stored again after turns other workers committed meanwhile.
_REBASES = 5


def _appended_since(
    old: tuple[Component, ...], new: tuple[Component, ...]
) -> tuple[Component, ...] | None:
    """The turns appended to ``old`` to make ``new``, or ``None`` when it was rewritten."""
    if len(new) < len(old) or new[: len(old)] != old:
        return None
    return new[len(old) :]


def _compacted(owner: str, session_id: str, dialogue: Iterable[Component]) -> tuple[Component, ...]:
    items = check_components(owner, dialogue)
    front = 0
    while front < len(items) and _is_instruction(items[front]):
        front += 1
    kept = items[front:]
    _check_turn(owner, session_id, (), kept)
    return kept


def _is_instruction(component: Component) -> bool:
    return component.role == "system"


def _instructions(system: object) -> tuple[Component, ...]:
    if system is None:
        return ()
    if isinstance(system, str):
        return (Message("system", system),)
    if isinstance(system, (bytes, Mapping, Component)) or not isinstance(system, Iterable):
        msg = (
            f"Session.context: system={system!r} must be a str or a sequence of components; "
            "pass the instructions as text, or as (Message('system', text), ...)"
        )
        raise InvalidArgumentError(msg)
    items = tuple(system)
    require_components(items, "Session.context: system", "build it as Message('system', text)")
    for index, item in enumerate(items):
        if not _is_instruction(item):
            # Stored dialogue is told from instructions by role alone (replace() and react
            # strip the leading system messages), so anything else here would be stored.
            msg = (
                f"Session.context: system[{index}] is a {item.role} message, and instructions "
                "are system messages only: anything else in front of the dialogue would be "
                "stored with it after a compaction; put few-shot examples in the system text"
            )
            raise InvalidArgumentError(msg)
    return items


def _calls(pending: Mapping[str, str]) -> str:
    return ", ".join(f"{call_id!r} ({name})" for call_id, name in pending.items())


def _open_calls(dialogue: Sequence[Component]) -> dict[str, str]:
    """Return the calls (id -> tool name) of the exchange ``dialogue`` ends in, still unanswered."""
    answered: set[str] = set()
    index = len(dialogue) - 1
    while index >= 0 and dialogue[index].tool_call_id is not None:
        answered.add(dialogue[index].tool_call_id or "")
        index -= 1
    if index < 0:
        return {}
    return {c.id: c.name for c in dialogue[index].tool_calls if c.id not in answered}


def _check_turn(
    owner: str, session_id: str, stored: Sequence[Component], batch: Sequence[Component]
) -> None:
    """Refuse a batch that would leave the stored dialogue with a broken tool exchange.

    Only the stored dialogue's last exchange matters: every earlier one is closed.
    O(last exchange + batch), whatever the length of the session.
    """
    pending = _open_calls(stored)
    for index, component in enumerate(batch):
        call_id = component.tool_call_id
        if call_id is not None:
            if call_id not in pending:
                msg = (
                    f"{owner}: component {index} is a tool result for tool_call_id={call_id!r}, "
                    f"but session {session_id!r} does not store that call right before it; "
                    "commit the assistant message that made the call together with its results"
                )
                raise InvalidContextError(msg)
            del pending[call_id]
            continue
        if _is_instruction(component):
            msg = (
                f"{owner}: component {index} is a system message, and instructions are never "
                "stored; pass them as session.context(system=...) on every request, and commit "
                "only the dialogue"
            )
            raise InvalidContextError(msg)
        if pending:
            msg = (
                f"{owner}: component {index} ({component.role}) comes before the results of "
                f"tool calls {_calls(pending)}; put each call's results right after it, in the "
                "same turn"
            )
            raise InvalidContextError(msg)
        pending = {call.id: call.name for call in component.tool_calls}
    if pending:
        msg = (
            f"{owner}: the turn ends with tool calls {_calls(pending)} unanswered; a turn is "
            "committed whole: run the tools and commit the call with all of its results"
        )
        raise InvalidContextError(msg)
