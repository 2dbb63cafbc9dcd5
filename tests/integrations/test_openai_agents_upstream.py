"""The Agents SDK's own session behaviour, with ``CompactingSession`` in the session's role.

These are the SDK's session, session-limit, context-wrapper, rewind and
call-model-input-filter tests (openai-agents-python ``tests/memory/`` and
``tests/test_call_model_input_filter.py``), rewritten here with our wrapper
where the SDK has a session: a wrapper whose compactor has nothing to do must
be indistinguishable from the session it wraps, and one that compacts must
keep every guarantee the runner relies on (tenant scopes, call shapes, the
item-matching policy of a retry's rewind). Every run goes through the real
``Runner`` on the SDK's own ``agents.testing.ScriptedModel``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    RunConfig,
    RunContextWrapper,
    Runner,
    SessionSettings,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import InputGuardrailTripwireTriggered
from agents.guardrail import GuardrailFunctionOutput, InputGuardrail
from agents.memory import OpenAIConversationsSession, OpenAIResponsesCompactionSession
from agents.memory.session import (
    _session_accepts_wrapper,
    _session_method_accepts_wrapper,
    is_openai_responses_compaction_aware_session,
)
from agents.run_internal.session_persistence import rewind_session_items
from agents.testing import ScriptedModel, assistant_message, function_call
from openai import AsyncOpenAI

from mellea_ctx import InvalidArgumentError, TokenBudgetCompactor, WindowCompactor, from_responses
from mellea_ctx.integrations.openai_agents import (
    CompactingSession,
    _accepts_wrapper,
    agent_tools_tokens,
    input_filter,
)

set_tracing_disabled(True)
OFFLINE = AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9")  # never called

#: A compactor with nothing to do on these short histories: the wrapper must then be the session.
IDLE = WindowCompactor(size=1_000)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


@dataclass
class Tenant:
    tenant_id: str


class ScopedSession:
    """A context-aware session: each tenant (``wrapper.context``) has its own list of items."""

    def __init__(self) -> None:
        self.session_id = "scoped"
        self.session_settings: SessionSettings | None = None
        self.scopes: dict[str, list[Any]] = {"default": []}
        self.calls: list[tuple[str, RunContextWrapper[Any] | None]] = []

    def _items(self, wrapper: RunContextWrapper[Any] | None) -> list[Any]:
        name = "default" if wrapper is None else cast(Tenant, wrapper.context).tenant_id
        return self.scopes.setdefault(name, [])

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[Any]:
        self.calls.append(("get_items", wrapper))
        items = self._items(wrapper)
        return list(items if limit is None else items[-limit:] if limit else [])

    async def add_items(
        self, items: list[Any], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        self.calls.append(("add_items", wrapper))
        self._items(wrapper).extend(items)

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> Any:
        self.calls.append(("pop_item", wrapper))
        items = self._items(wrapper)
        return items.pop() if items else None

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        self.calls.append(("clear_session", wrapper))
        self._items(wrapper).clear()


class LegacySession:
    """A session written before ``limit`` existed: ``get_items()`` takes no argument."""

    def __init__(self) -> None:
        self.session_id = "legacy"
        self.session_settings = None
        self.items: list[Any] = []
        self.reads = 0

    async def get_items(self) -> list[Any]:
        self.reads += 1
        return list(self.items)

    async def add_items(self, items: list[Any]) -> None:
        self.items.extend(items)

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


class KwargsSession:
    """Takes ``**kwargs`` everywhere: that is not an opt-in to ``wrapper`` (the SDK's rule)."""

    def __init__(self) -> None:
        self.session_id = "kwargs"
        self.session_settings: SessionSettings | None = None
        self.items: list[Any] = []
        self.kwargs: list[dict[str, Any]] = []

    async def get_items(self, limit: int | None = None, **kwargs: Any) -> list[Any]:
        self.kwargs.append(kwargs)
        return list(self.items if limit is None else self.items[-limit:])

    async def add_items(self, items: list[Any], **kwargs: Any) -> None:
        self.kwargs.append(kwargs)
        self.items.extend(items)

    async def pop_item(self, **kwargs: Any) -> Any:
        self.kwargs.append(kwargs)
        return self.items.pop() if self.items else None

    async def clear_session(self, **kwargs: Any) -> None:
        self.kwargs.append(kwargs)
        self.items.clear()


class IdStrippingSession:
    """Drops item ids on write, as hosted stores that assign their own do; says so to the runner."""

    def __init__(self, items: list[Any] | None = None) -> None:
        self.session_id = "stripping"
        self.session_settings: SessionSettings | None = None
        self._ignore_ids_for_matching = True
        self.items: list[Any] = list(items or [])
        self.pops = 0

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(self.items if limit is None else self.items[-limit:] if limit > 0 else [])

    async def add_items(self, items: list[Any]) -> None:
        self.items.extend({k: v for k, v in item.items() if k != "id"} for item in items)

    async def pop_item(self) -> Any:
        self.pops += 1
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


def texts(items: Any) -> list[str]:
    """Every text an input carries, in order (a user string or an assistant's output texts)."""
    out: list[str] = []
    for item in items if isinstance(items, list) else [{"content": items}]:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return out


def answered(*replies: str) -> ScriptedModel:
    return ScriptedModel(steps=[[assistant_message(reply)] for reply in replies])


class TestTenants:
    """A1: the run's ``RunContextWrapper`` reaches a context-aware session; tenants never mix."""

    @pytest.mark.parametrize("streamed", [False, True])
    def test_two_tenants_never_see_each_others_items(self, streamed: bool) -> None:
        """Tenant B's model call holds none of tenant A's items, and each scope holds its own."""
        store = ScopedSession()
        session = CompactingSession(store, TokenBudgetCompactor(max_tokens=4_000))
        model = answered("A's answer", "B's answer", "A again")
        agent = Agent(name="scoped", model=model)

        async def one(text: str, tenant: str) -> Any:
            if not streamed:
                return await Runner.run(agent, text, context=Tenant(tenant), session=session)
            result = Runner.run_streamed(agent, text, context=Tenant(tenant), session=session)
            async for _ in result.stream_events():
                pass
            return result

        first = run(one("secret of tenant A", "a"))
        run(one("hello from tenant B", "b"))
        run(one("and again from A", "a"))
        assert ["hello from tenant B"] == texts(model.calls[1].input)
        assert "secret of tenant A" in texts(model.calls[2].input)
        assert [] == store.scopes["default"]
        assert ["hello from tenant B", "B's answer"] == texts(store.scopes["b"])
        assert 4 == len(store.scopes["a"])
        assert all(w is not None for _, w in store.calls)
        assert all(w is first.context_wrapper for _, w in store.calls[:3])

    def test_the_wrapper_opts_in_as_the_sdk_defines_it(self) -> None:
        """The SDK sees all four methods taking ``wrapper``, and so does our own rule."""
        session = CompactingSession(ScopedSession(), IDLE)
        assert _session_accepts_wrapper(session)
        for method in (session.get_items, session.add_items, session.pop_item):
            assert _accepts_wrapper(method) == _session_method_accepts_wrapper(method)

    def test_a_partial_opt_in_is_not_enabled(self) -> None:
        """A store taking ``wrapper`` in only some methods gets none (the SDK's all-or-nothing)."""

        class Partial(ScopedSession):
            async def pop_item(self) -> Any:  # type: ignore[override]
                return None

        store = Partial()
        session = CompactingSession(store, IDLE)
        run(
            Runner.run(
                Agent(name="p", model=answered("ok")), "hi", context=Tenant("a"), session=session
            )
        )
        assert [None, None, None] == [w for _, w in store.calls]
        assert 2 == len(store.scopes["default"])

    def test_kwargs_are_not_an_opt_in(self) -> None:
        """``**kwargs`` does not make a session context-aware: it gets its legacy call shapes."""
        store = KwargsSession()
        run(
            Runner.run(
                Agent(name="k", model=answered("ok")),
                "hi",
                context=Tenant("a"),
                session=CompactingSession(store, IDLE),
            )
        )
        assert [{}, {}, {}] == store.kwargs
        assert 2 == len(store.items)

    def test_a_tripped_guardrail_stores_the_input_in_the_tenants_scope(self) -> None:
        """The input a guardrail stopped is still stored, in its tenant's scope only."""

        def trip(_: Any, __: Any, ___: Any) -> GuardrailFunctionOutput:
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

        store = ScopedSession()
        store.scopes["default"] = [{"role": "user", "content": "keep"}]
        agent = Agent(
            name="g",
            model=answered("never"),
            input_guardrails=[InputGuardrail(guardrail_function=trip)],
        )
        with pytest.raises(InputGuardrailTripwireTriggered):
            run(
                Runner.run(
                    agent, "hello", context=Tenant("a"), session=CompactingSession(store, IDLE)
                )
            )
        assert [{"role": "user", "content": "keep"}] == store.scopes["default"]
        assert [{"role": "user", "content": "hello"}] == store.scopes["a"]

    def test_a_resumed_run_writes_in_the_tenants_scope(self) -> None:
        """A run resumed after a tool approval keeps writing in its tenant's scope."""

        async def lookup() -> str:
            return "found"

        tool = function_tool(lookup, name_override="lookup", needs_approval=True)
        model = ScriptedModel(
            steps=[[function_call("lookup", "{}", call_id="call-1")], [assistant_message("done")]]
        )
        agent = Agent(name="r", model=model, tools=[tool])
        store = ScopedSession()
        session = CompactingSession(store, IDLE)
        first = run(Runner.run(agent, "hello", context=Tenant("a"), session=session))
        state = first.to_state()
        state.approve(first.interruptions[0])
        store.calls.clear()
        resumed = run(Runner.run(agent, state, session=session))
        assert "done" == resumed.final_output
        assert [] == store.scopes["default"]
        assert all(w is resumed.context_wrapper for _, w in store.calls)
        outputs = [i for i in store.scopes["a"] if i.get("type") == "function_call_output"]
        assert ["call-1"] == [i["call_id"] for i in outputs]

    def test_a_retry_rewind_stays_in_the_tenants_scope(self) -> None:
        """The runner's rewind reads and pops in the tenant's scope, never the default one."""
        store = ScopedSession()
        session = CompactingSession(store, IDLE)
        wrapper = RunContextWrapper(context=Tenant("a"))
        written = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
        store.scopes["default"] = [{"role": "user", "content": "keep"}]
        run(session.add_items(list(written), wrapper=wrapper))
        store.calls.clear()
        run(rewind_session_items(session, written, wrapper=wrapper))
        assert [] == store.scopes["a"]
        assert [{"role": "user", "content": "keep"}] == store.scopes["default"]
        assert {"get_items", "pop_item"} == {name for name, _ in store.calls}
        assert all(w is wrapper for _, w in store.calls)


class TestCallShapes:
    """A2: the wrapped session is called in the SDK's own shapes."""

    def test_a_legacy_session_without_limit_runs(self) -> None:
        """A ``get_items()`` without a ``limit`` parameter is read once per run, without one."""
        store = LegacySession()
        result = run(
            Runner.run(
                Agent(name="l", model=answered("ok", "again")),
                "hello",
                context=Tenant("a"),
                session=CompactingSession(store, IDLE),
            )
        )
        assert "ok" == result.final_output
        assert 1 == store.reads
        assert 2 == len(store.items)

    def test_a_legacy_session_is_compacted(self) -> None:
        """The legacy session's history is compacted like any other."""
        store = LegacySession()
        store.items = [{"role": "user", "content": f"old {i}"} for i in range(6)]
        model = answered("ok")
        run(
            Runner.run(
                Agent(name="l", model=model),
                "new",
                session=CompactingSession(store, WindowCompactor(size=2)),
            )
        )
        assert ["old 4", "old 5", "new"] == texts(model.calls[0].input)


class TestRewind:
    """A3: a retry's rewind matches items as the wrapped store says it must."""

    def test_the_matching_policy_is_the_stores(self) -> None:
        """An id-stripping store's rewind pops the item it stored without its id."""
        store = IdStrippingSession()
        session = CompactingSession(store, IDLE)
        item = {"id": "msg-1", "type": "message", "role": "user", "content": "hello"}
        run(session.add_items([item]))
        run(rewind_session_items(session, [item]))
        assert 1 == store.pops
        assert [] == store.items

    def test_a_mismatched_tail_is_left_alone(self) -> None:
        """A tail that is not the retry's own items is not popped."""
        target = {"type": "message", "role": "user", "content": "target"}
        other = {"type": "message", "role": "user", "content": "someone else's"}
        store = IdStrippingSession([target, other])
        run(rewind_session_items(CompactingSession(store, IDLE), [target]))
        assert 0 == store.pops
        assert [target, other] == store.items


class TestServerOwnedHistory:
    """A4: a conversation the server owns is refused, as the SDK's compaction wrapper does."""

    def test_conversations_session_is_refused(self) -> None:
        """Wrapping an ``OpenAIConversationsSession`` raises, naming the fix."""
        with pytest.raises(InvalidArgumentError, match="input_filter"):
            CompactingSession(
                OpenAIConversationsSession(conversation_id="conv_1", openai_client=OFFLINE), IDLE
            )

    def test_the_sdks_own_wrapper_refuses_it_too(self) -> None:
        """The SDK's ``OpenAIResponsesCompactionSession`` refuses the same session (ValueError)."""
        with pytest.raises(ValueError, match="OpenAIConversationsSession"):
            OpenAIResponsesCompactionSession(
                session_id="x",
                underlying_session=OpenAIConversationsSession(
                    conversation_id="c", openai_client=OFFLINE
                ),
            )
        assert issubclass(InvalidArgumentError, ValueError)


def sqlite(tmp_path: Path, **kwargs: Any) -> SQLiteSession:
    return SQLiteSession("limits", tmp_path / "limits.db", **kwargs)


def three_runs(session: Any, model: ScriptedModel, agent: Agent[Any]) -> None:
    for i in (1, 2, 3):
        model.enqueue([assistant_message(f"Reply {i}")])
        run(Runner.run(agent, f"Message {i}", session=session))


class TestSessionSettings:
    """The SDK's session-limit tests, through the wrapper: a ``limit`` is the SDK's tail."""

    @pytest.mark.parametrize(
        ("limit", "expected"),
        [
            (2, ["Message 3", "Reply 3", "Message 4"]),
            (0, ["Message 4"]),
            (None, ["Message 1", "Reply 1", "Message 2", "Reply 2", "Message 3", "Reply 3",
                    "Message 4"]),
            (100, ["Message 1", "Reply 1", "Message 2", "Reply 2", "Message 3", "Reply 3",
                   "Message 4"]),
        ],
    )  # fmt: skip
    def test_run_config_limit(self, tmp_path: Path, limit: int | None, expected: list[str]) -> None:
        """``RunConfig(session_settings=...)`` limits the history as it does on the bare session."""
        model = ScriptedModel()
        agent = Agent(name="t", model=model)
        session = CompactingSession(sqlite(tmp_path), IDLE)
        three_runs(session, model, agent)
        model.enqueue([assistant_message("Reply 4")])
        config = RunConfig(session_settings=SessionSettings(limit=limit))
        run(Runner.run(agent, "Message 4", session=session, run_config=config))
        assert expected == texts(model.calls[-1].input)

    def test_the_wrapped_sessions_settings_apply(self, tmp_path: Path) -> None:
        """A limit set on the wrapped session is the wrapper's settings (read and written)."""
        store = sqlite(tmp_path, session_settings=SessionSettings(limit=2))
        session = CompactingSession(store, IDLE)
        assert store.session_settings == session.session_settings
        model = ScriptedModel()
        agent = Agent(name="t", model=model)
        three_runs(session, model, agent)
        assert ["Message 2", "Reply 2", "Message 3"] == texts(model.calls[-1].input)
        session.session_settings = SessionSettings(limit=1)
        assert SessionSettings(limit=1) == store.session_settings

    def test_limit_drops_an_output_whose_call_was_cut(self, tmp_path: Path) -> None:
        """A limit that cuts between a call and its output sends no orphan output."""
        history = [
            {"role": "user", "content": "What is the weather?"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}]},
        ]  # fmt: skip
        session = CompactingSession(sqlite(tmp_path), IDLE)
        run(session.add_items(history))
        model = answered("Tomorrow too.")
        config = RunConfig(session_settings=SessionSettings(limit=2))
        run(
            Runner.run(
                Agent(name="t", model=model), "Tomorrow?", session=session, run_config=config
            )
        )
        assert [history[-1], {"role": "user", "content": "Tomorrow?"}] == model.calls[-1].input


class TestPassThrough:
    """Everything but the compacted read is the wrapped session's own."""

    def test_close_closes_the_wrapped_session(self, tmp_path: Path) -> None:
        """``close()`` reaches a ``SQLiteSession``, which then refuses to be used."""
        store = sqlite(tmp_path)
        session = CompactingSession(store, IDLE)
        session.close()
        with pytest.raises(RuntimeError, match="closed"):
            run(store.get_items())

    def test_a_compaction_aware_session_keeps_its_run_compaction(self) -> None:
        """The runner still calls the wrapped session's ``run_compaction`` after each turn."""
        decisions: list[dict[str, Any]] = []

        def never(context: dict[str, Any]) -> bool:
            decisions.append(context)
            return False

        inner = OpenAIResponsesCompactionSession(
            session_id="c", underlying_session=LegacySessionWithLimit(),
            should_trigger_compaction=never,
        )  # fmt: skip
        session = CompactingSession(inner, IDLE)
        assert is_openai_responses_compaction_aware_session(session)
        run(Runner.run(Agent(name="t", model=answered("ok")), "hi", session=session))
        assert decisions  # the SDK asked the wrapped session whether to compact
        assert 2 == len(run(session.get_items()))

    def test_a_plain_session_is_not_compaction_aware(self, tmp_path: Path) -> None:
        """Wrapping a plain session does not make it look compaction-aware."""
        assert not is_openai_responses_compaction_aware_session(
            CompactingSession(sqlite(tmp_path), IDLE)
        )


class LegacySessionWithLimit(LegacySession):
    async def get_items(self, limit: int | None = None) -> list[Any]:  # type: ignore[override]
        self.reads += 1
        return list(self.items if limit is None else self.items[-limit:])


def schema_heavy_tool() -> Any:
    async def search(query: str, region: str, language: str, safe: bool, page: int) -> str:
        """Search the company's knowledge base, across every region, in any language.

        Args:
            query: What to look for, in plain words, as the user would type it.
            region: The sales region whose documents to search first.
            language: The language to answer in, as an ISO 639-1 code.
            safe: Whether to leave out documents marked confidential.
            page: Which page of results to return, starting at one.
        """
        return "nothing"

    return function_tool(search)


class TestInputFilterCountsTools:
    """The agent's tool schemas count against the input filter's budget (``data.agent.tools``)."""

    def test_tool_schemas_count(self) -> None:
        """A history under the budget alone, over it with the tools, is compacted to fit both."""
        tool = schema_heavy_tool()
        agent_tools = agent_tools_tokens(Agent(name="t", tools=[tool]))
        assert agent_tools > 100
        history = [{"role": "user", "content": f"note {i}: " + "word " * 20} for i in range(8)]
        seen: list[list[Any]] = []
        budget = 300 + agent_tools // 2
        keep = input_filter(TokenBudgetCompactor(max_tokens=budget))

        async def spy(data: Any) -> Any:
            out = await keep(data)
            seen.append(out.input)
            return out

        model = answered("ok")
        agent = Agent(name="t", model=model, tools=[tool])
        run(Runner.run(agent, history, run_config=RunConfig(call_model_input_filter=spy)))
        from mellea_ctx import default_counter, from_responses

        counter = default_counter()
        sent = sum(counter.count(c) for c in from_responses(seen[0]))
        full = sum(counter.count(c) for c in from_responses(history))
        assert full <= budget  # the history alone fits
        assert sent + agent_tools <= budget  # with the tools, it had to shrink

    def test_no_tools_cost_nothing(self) -> None:
        """An agent without tools adds nothing."""
        assert 0 == agent_tools_tokens(Agent(name="t"))


class TestTheAgentsModelSummarizes:
    """The agent's own Agents SDK model writes the summaries (``ModelBackend``)."""

    def test_one_model_answers_and_summarizes(self) -> None:
        """The SDK's ``ScriptedModel`` gets the summary request, then the agent's."""
        from mellea_ctx import LLMSummarizeCompactor
        from mellea_ctx.integrations.openai_agents import ModelBackend

        model = answered("Earlier: six notes about words.", "ok")
        compactor = LLMSummarizeCompactor(keep_n=2)
        keep = input_filter(compactor, backend=ModelBackend(model))
        history = [{"role": "user", "content": f"note {i}: " + "word " * 30} for i in range(6)]
        agent = Agent(name="t", model=model)
        result = run(Runner.run(agent, history, run_config=RunConfig(call_model_input_filter=keep)))
        assert "ok" == result.final_output
        assert 2 == len(model.calls)
        assert "summar" in (model.calls[0].system_instructions or "").lower()
        sent = from_responses(model.calls[1].input)
        assert sent[0].content.startswith("[Checkpoint")  # sent as the user message it reads as
        assert "six notes about words" in sent[0].content
        assert 3 == len(sent)  # the summary and the two notes kept

    def test_a_non_model_is_refused(self) -> None:
        """Anything without ``get_response`` is refused."""
        from mellea_ctx.integrations.openai_agents import ModelBackend

        with pytest.raises(InvalidArgumentError, match="not an Agents SDK Model"):
            ModelBackend("gpt-4o")
