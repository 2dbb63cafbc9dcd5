"""LangChain's own expectations, with our middleware and ``compact_messages`` in their place.

The cases follow LangChain 1.x's tests of ``SummarizationMiddleware`` and
``ContextEditingMiddleware`` (``ClearToolUsesEdit``) and langchain-core's
``trim_messages``: what a user of those components relies on, checked here of
:class:`CompactionMiddleware` and :func:`compact_messages`. Every agent case
runs a real LangChain v1 agent (``create_agent``) on LangChain's own fake chat
model and looks at each request the agent built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool

from mellea_ctx import (
    Checkpoint,
    ClearedToolResult,
    ClearToolResultsCompactor,
    ContextOverflowError,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    ScriptedBackend,
    TokenBudgetCompactor,
    WindowCompactor,
    default_counter,
)
from mellea_ctx.integrations.langchain import (
    CLEARED_MARK,
    ChatModelBackend,
    CompactionMiddleware,
    MessagesCounter,
    as_runnable,
    compact_messages,
    from_langchain,
    to_langchain,
    token_counter,
    tools_tokens,
    trim_to_tokens,
)


class RecordingModel(GenericFakeChatModel):
    """LangChain's fake chat model, recording each request; tools are bound to it as-is."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def recording(replies: Iterator[AIMessage]) -> RecordingModel:
    model = RecordingModel(messages=replies)
    model.seen = []
    return model


def answers(*texts: str) -> Iterator[AIMessage]:
    return iter([AIMessage(text) for text in texts])


def calls(steps: int, name: str = "read") -> Iterator[AIMessage]:
    for step in range(steps):
        args = {"path": f"src/f{step}.py"}
        yield AIMessage(
            f"Step {step}.", tool_calls=[{"name": name, "args": args, "id": f"c{step}"}]
        )
    yield AIMessage("All done.")


@tool
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "lorem ipsum dolor " * 60


def pairs_whole(messages: Sequence[BaseMessage]) -> bool:
    """Every tool message answers a call of the AI message before it, and every call is answered."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            if open_calls:
                return False
            open_calls = {call["id"] for call in message.tool_calls}  # type: ignore[misc]
        elif isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
        elif open_calls:
            return False
    return not open_calls


def old_dialogue(turns: int, words: int = 60) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(turns):
        out += [HumanMessage(f"question {i} " + "word " * words), AIMessage(f"answer {i}")]
    return out


def summarizer(text: str = "Earlier: many questions about words.") -> tuple[ScriptedBackend, list]:
    prompts: list[str] = []

    def handler(messages: Any, options: Any) -> str:
        prompts.append("\n".join(m.content for m in messages))
        return text

    return ScriptedBackend(handler), prompts


class TestSummarizerOverflow:
    """L1: a summarizer that answers "prompt is too long" gets a smaller request."""

    @pytest.mark.parametrize("limit_stated", [False, True])
    def test_the_summary_is_made_in_a_smaller_window(self, limit_stated: bool) -> None:
        """No window declared: the overflow leads to chunks that fit, and the summary lands."""
        counter = default_counter()
        limit = 700
        sizes: list[int] = []

        def handler(messages: Any, options: Any) -> str:
            size = sum(counter.count(m) for m in messages)
            sizes.append(size)
            if size > limit:
                raise ContextOverflowError(
                    f"prompt is too long: {size} tokens > {limit} maximum",
                    prompt_tokens=size,
                    limit_tokens=limit if limit_stated else None,
                )
            return "Read files under src/."

        compactor = TokenBudgetCompactor(
            max_tokens=1_800, keep_recent_tokens=400, boundary="model_step"
        )
        middleware = CompactionMiddleware(compactor, backend=ScriptedBackend(handler))
        model = recording(calls(14))
        agent = create_agent(model, tools=[read], middleware=[middleware])
        result = agent.invoke({"messages": [HumanMessage("Read src/.")]}, {"recursion_limit": 80})
        assert "All done." == result["messages"][-1].content
        assert any(isinstance(c, Checkpoint) for c in from_langchain(model.seen[-1]))
        assert max(sizes) > limit  # it did overflow
        assert len(sizes) > 1


class TestOrphans:
    """L2: an orphan tool message already in the input never reaches the provider."""

    def test_an_orphan_is_dropped_by_the_compaction(self) -> None:
        """A ``ToolMessage`` answering no call, kept after the checkpoint before, is gone."""
        history = [
            *old_dialogue(10),
            ToolMessage("stray output", tool_call_id="ghost"),
            HumanMessage("And now?"),
        ]
        backend, _ = summarizer()
        middleware = CompactionMiddleware(
            LLMSummarizeCompactor(keep_n=2), backend=backend
        )  # the checkpoint lands right before the orphan
        model = recording(answers("ok"))
        create_agent(model, middleware=[middleware]).invoke({"messages": history})
        sent = model.seen[0]
        assert isinstance(from_langchain(sent)[0], Checkpoint)
        assert pairs_whole(sent)
        assert not any(isinstance(m, ToolMessage) for m in sent)

    def test_compact_messages_drops_it_too(self) -> None:
        """``compact_messages`` hands back no orphan either."""
        history = [*old_dialogue(6), ToolMessage("stray", tool_call_id="ghost"), HumanMessage("?")]
        out = compact_messages(history, WindowCompactor(size=2))
        assert [history[-1]] == out


class TestImages:
    """L3: an ``image_url`` block reaches the summarizer as an image, with its URL."""

    def test_the_summarizer_sees_the_image(self) -> None:
        """The image's file name is in the summary prompt, not ``[langchain image_url]``."""
        image = {
            "type": "image_url",
            "image_url": {"url": "https://example.com/wiring-diagram.png"},
        }
        history = [
            HumanMessage([{"type": "text", "text": "What is this?"}, image]),
            AIMessage("A wiring diagram."),
            *old_dialogue(8),
            HumanMessage("Summarize."),
        ]
        backend, prompts = summarizer()
        model = recording(answers("ok"))
        middleware = CompactionMiddleware(LLMSummarizeCompactor(keep_n=1), backend=backend)
        create_agent(model, middleware=[middleware]).invoke({"messages": history})
        assert prompts and "wiring-diagram.png" in prompts[0]
        assert "[langchain image_url]" not in prompts[0]

    def test_image_blocks_round_trip(self) -> None:
        """The block (detail and unknown keys included) comes back exactly."""
        block = {
            "type": "image_url",
            "image_url": {"url": "https://x.org/a.png", "detail": "low", "note": 1},
            "cache": True,
        }
        history = [HumanMessage([{"type": "text", "text": "see"}, block])]
        assert history == to_langchain(from_langchain(history))


def openai_history(tools: int) -> list[BaseMessage]:
    """A history as converted from OpenAI's format: tool messages carry no ``name``."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Remember and read."}]
    for i in range(tools):
        name = "memory" if i % 2 == 0 else "read"
        out.append({
            "role": "assistant", "content": "",
            "tool_calls": [{"id": f"t{i}", "type": "function",
                            "function": {"name": name, "arguments": "{}"}}],
        })  # fmt: skip
        out.append(
            {"role": "tool", "tool_call_id": f"t{i}", "content": f"{name} {i}: " + "x " * 400}
        )
    out.append({"role": "user", "content": "Go on."})
    return convert_to_messages(out)


class TestClearing:
    """L4, L5 and ``ClearToolUsesEdit``'s own cases: clearing old tool output in a thread."""

    def test_a_cleared_result_is_marked_and_can_be_undone(self) -> None:
        """Cleared results carry LangChain's marker and their record: the original comes back."""
        history = openai_history(6)
        model = recording(answers("ok"))
        middleware = CompactionMiddleware(
            ClearToolResultsCompactor(keep_last=1, min_clear_tokens=1)
        )
        result = create_agent(model, middleware=[middleware]).invoke({"messages": history})
        cleared = [
            m
            for m in result["messages"]
            if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing")
        ]
        assert 5 == len(cleared)
        assert all(CLEARED_MARK == m.response_metadata["context_editing"] for m in cleared)
        components = from_langchain(result["messages"])
        undone = [c for c in components if isinstance(c, ClearedToolResult)]
        assert 5 == len(undone)
        originals = {m.tool_call_id: m.content for m in history if isinstance(m, ToolMessage)}
        assert all(originals[c.tool_call_id] == c.original.content for c in undone)
        assert result["messages"] == to_langchain(components)  # the thread round-trips

    def test_keep_tools_reads_the_name_from_the_call(self) -> None:
        """``keep_tools`` spares a result whose ``ToolMessage`` has no ``name=``."""
        history = openai_history(6)
        assert all(m.name is None for m in history if isinstance(m, ToolMessage))
        model = recording(answers("ok"))
        compactor = ClearToolResultsCompactor(
            keep_last=0, min_clear_tokens=1, keep_tools={"memory"}
        )
        create_agent(model, middleware=[CompactionMiddleware(compactor)]).invoke(
            {"messages": history}
        )
        sent = [m for m in model.seen[0] if isinstance(m, ToolMessage)]
        kept = [m.content.split(":")[0] for m in sent if not m.response_metadata]
        assert ["memory 0", "memory 2", "memory 4"] == kept

    def test_already_cleared_results_stay_as_they_are(self) -> None:
        """A second pass does not clear a placeholder again (``ClearToolUsesEdit`` skips them)."""
        history = openai_history(4)
        once = compact_messages(history, ClearToolResultsCompactor(keep_last=1, min_clear_tokens=1))
        twice = compact_messages(once, ClearToolResultsCompactor(keep_last=0, min_clear_tokens=1))
        for a, b in zip(once, twice, strict=True):
            if isinstance(a, ToolMessage) and a.response_metadata.get("context_editing"):
                assert a is b

    def test_nothing_under_the_minimum(self) -> None:
        """Below ``min_clear_tokens`` (LangChain's trigger) nothing changes."""
        history = openai_history(4)
        assert history == compact_messages(
            history, ClearToolResultsCompactor(keep_last=0, min_clear_tokens=10**6)
        )


class TestCounters:
    """L6 and the counters a LangChain user has: ours, ``"approximate"``, a function, a model."""

    @pytest.mark.parametrize("bad", [{}, [], "exact", 3])
    def test_a_non_counter_is_refused(self, bad: object) -> None:
        """``counter={}`` is refused, naming what is accepted (was: the default, silently)."""
        with pytest.raises(InvalidArgumentError, match="is not a token counter"):
            CompactionMiddleware(WindowCompactor(size=2), counter=bad)
        with pytest.raises(InvalidArgumentError, match="is not a token counter"):
            compact_messages([HumanMessage("hi")], WindowCompactor(size=2), counter=bad)

    def test_langchain_counters_count(self) -> None:
        """``"approximate"`` and a function over messages count as LangChain counts."""
        message = HumanMessage("hello " * 50)
        (component,) = from_langchain([message])
        approx = token_counter("approximate")
        assert isinstance(approx, MessagesCounter)
        assert count_tokens_approximately([message]) == approx.count(component)
        assert 7 == token_counter(lambda messages: 7 * len(messages)).count(component)  # type: ignore[union-attr]
        ours = default_counter()
        assert ours is token_counter(ours)

    def test_the_approximate_counter_drives_the_budget(self) -> None:
        """In an agent, the budget is met as LangChain's approximate counter measures it."""
        model = recording(calls(10))
        compactor = TokenBudgetCompactor(
            max_tokens=900, keep_recent_tokens=200, boundary="model_step"
        )
        backend, _ = summarizer("Read many files.")
        middleware = CompactionMiddleware(compactor, backend=backend, counter="approximate")
        agent = create_agent(model, tools=[read], middleware=[middleware])
        agent.invoke({"messages": [HumanMessage("Read src/.")]}, {"recursion_limit": 60})
        for request in model.seen[1:]:
            assert count_tokens_approximately(request) <= 900 + 10 * len(request)


@tool
def search(query: str, region: str, language: str, page: int, safe: bool, since: str) -> str:
    """Search the company's knowledge base across every region and language, page by page.

    Use it for policies, product sheets, pricing, contracts and the support history; it
    ranks documents by how well they match the query and how recent they are.

    Args:
        query: What to look for, in the user's own words, as they would type it.
        region: The sales region whose documents come first (emea, amer, apac).
        language: The language of the answer, as an ISO 639-1 code such as en or de.
        page: Which page of results to return, starting at one.
        safe: Whether to leave out documents marked confidential or internal only.
        since: Only documents changed on or after this date (YYYY-MM-DD).
    """
    return ""


class TestToolSchemas:
    """The tool schemas the agent sends count against the budget (``request.tools``)."""

    def test_tool_schemas_count(self) -> None:
        """Every request, tool schemas included, fits the budget."""
        budget = 1_500
        overhead = tools_tokens([read, search])
        assert overhead > 150
        model = recording(calls(16))
        compactor = TokenBudgetCompactor(
            max_tokens=budget, keep_recent_tokens=300, boundary="model_step"
        )
        backend, _ = summarizer("Read many files.")
        middleware = CompactionMiddleware(compactor, backend=backend, tools=[read, search])
        agent = create_agent(model, tools=[read, search], middleware=[middleware])
        agent.invoke({"messages": [HumanMessage("Read src/.")]}, {"recursion_limit": 80})
        counter = default_counter()
        sizes = [sum(counter.count(c) for c in from_langchain(r)) for r in model.seen]
        assert all(size + overhead <= budget for size in sizes)
        assert max(sizes) + overhead > budget - 150  # it ran close to the budget


class TestLikeTrimMessages:
    """``trim_messages``' guarantees, of ``compact_messages``."""

    def test_the_input_is_not_modified(self) -> None:
        """The caller's list and messages are left as they were."""
        history = [SystemMessage("sys"), *old_dialogue(5)]
        before = [m.model_copy(deep=True) for m in history]
        compact_messages(history, WindowCompactor(size=2))
        assert before == history

    def test_the_system_message_stays_first(self) -> None:
        """The system message is kept, first."""
        history = [SystemMessage("sys"), *old_dialogue(5)]
        out = compact_messages(history, WindowCompactor(size=2))
        assert [history[0], *history[-2:]] == out

    def test_a_tool_call_is_never_split_from_its_result(self) -> None:
        """Cutting at a tool result widens to keep its call (trim's ``start_on`` concern)."""
        history = [
            HumanMessage("list"),
            AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
            ToolMessage("a b", tool_call_id="c1"),
            AIMessage("two files"),
        ]
        out = compact_messages(history, WindowCompactor(size=2))
        assert history[1:] == out
        assert pairs_whole(out)

    def test_async_agent(self) -> None:
        """``ainvoke`` compacts in ``abefore_model`` the same way."""
        model = recording(answers("ok"))
        backend, _ = summarizer()
        middleware = CompactionMiddleware(LLMSummarizeCompactor(keep_n=2), backend=backend)
        agent = create_agent(model, middleware=[middleware])
        asyncio.run(agent.ainvoke({"messages": [*old_dialogue(8), HumanMessage("now?")]}))
        assert isinstance(from_langchain(model.seen[0])[0], Checkpoint)


class SummarizingModel(GenericFakeChatModel):
    """A fake chat model that writes summaries, overflowing past ``limit`` characters."""

    limit: int = 10**9
    prompts: list[str] = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.exceptions import ContextOverflowError as LangChainOverflow
        from langchain_core.outputs import ChatGeneration, ChatResult

        text = "\n".join(str(m.content) for m in messages)
        self.prompts.append(text)
        if len(text) > self.limit:
            raise LangChainOverflow(f"prompt is too long: {len(text)} characters")
        return ChatResult(generations=[ChatGeneration(message=AIMessage("Earlier: questions."))])


class TestChatModelAsSummarizer:
    """A LangChain chat model (the agent's own, say) writes the summaries."""

    @pytest.mark.parametrize("sync", [True, False])
    def test_callbacks_see_the_summary_call(self, sync: bool) -> None:
        """The summary request is a LangChain run: the agent's callbacks see it."""
        from langchain_core.callbacks import BaseCallbackHandler

        class Seen(BaseCallbackHandler):
            def __init__(self) -> None:
                self.starts: list[str] = []

            def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
                self.starts.append(str(messages[0][-1].content)[:40])

        summarizer_model = SummarizingModel(messages=iter([]))
        summarizer_model.prompts = []
        seen = Seen()
        model = recording(answers("ok"))
        backend = ChatModelBackend(summarizer_model)
        middleware = CompactionMiddleware(LLMSummarizeCompactor(keep_n=2), backend=backend)
        agent = create_agent(model, middleware=[middleware])
        history = [*old_dialogue(8), HumanMessage("now?")]
        if sync:
            agent.invoke({"messages": history}, {"callbacks": [seen]})
        else:
            asyncio.run(agent.ainvoke({"messages": history}, {"callbacks": [seen]}))
        assert 1 == len(summarizer_model.prompts)
        assert 2 == len(seen.starts)  # the summary, then the agent's own call
        assert isinstance(from_langchain(model.seen[0])[0], Checkpoint)

    def test_langchains_overflow_leads_to_a_smaller_request(self) -> None:
        """langchain-core's ``ContextOverflowError`` is ours: the summary is made in chunks."""
        summarizer_model = SummarizingModel(messages=iter([]), limit=2_000)
        summarizer_model.prompts = []
        model = recording(answers("ok"))
        backend = ChatModelBackend(summarizer_model)
        middleware = CompactionMiddleware(LLMSummarizeCompactor(keep_n=2), backend=backend)
        create_agent(model, middleware=[middleware]).invoke(
            {"messages": [*old_dialogue(12), HumanMessage("now?")]}
        )
        assert len(summarizer_model.prompts) > 2
        assert isinstance(from_langchain(model.seen[0])[0], Checkpoint)

    def test_a_non_model_is_refused(self) -> None:
        """Anything without ``ainvoke`` is refused, naming the fix."""
        with pytest.raises(InvalidArgumentError, match="not a LangChain chat model"):
            ChatModelBackend(object())


class TestTrimToTokens:
    """``trim_messages(strategy="last", include_system=True)``'s cases, of ``trim_to_tokens``."""

    def history(self) -> list[BaseMessage]:
        return [
            SystemMessage("You are terse."),
            *old_dialogue(4, words=20),
            HumanMessage("list"),
            AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
            ToolMessage("a.py b.py " * 10, tool_call_id="c1"),
            AIMessage("two files"),
        ]

    @pytest.mark.parametrize("budget", [0, 30, 60, 90, 150, 400])
    def test_the_newest_that_fit_are_kept(self, budget: int) -> None:
        """The most recent messages that fit, the system prompt first, no split pair."""
        history = self.history()
        counter = default_counter()
        out = trim_to_tokens(history, budget)
        size = sum(counter.count(c) for c in from_langchain(out))
        assert out[0] is history[0]
        assert out[1:] == history[len(history) - len(out) + 1 :]  # a suffix, by identity
        assert pairs_whole(out)
        if len(out) > 1:
            assert size <= budget
            wider = trim_to_tokens(history, size + 1)
            assert wider == out or size + 1 >= sum(counter.count(c) for c in from_langchain(wider))

    def test_everything_fits(self) -> None:
        """Under the budget, every message comes back."""
        history = self.history()
        assert history == trim_to_tokens(history, 10**6)

    def test_a_bad_budget_is_refused(self) -> None:
        """A negative or non-int budget is refused."""
        with pytest.raises(InvalidArgumentError, match="max_tokens=-1"):
            trim_to_tokens(self.history(), -1)

    def test_the_runnable_form(self) -> None:
        """``as_runnable`` chains as ``trim_messages(...)`` does, before a model."""
        model = recording(answers("ok"))
        chain = as_runnable(WindowCompactor(size=1)) | model
        assert "ok" == chain.invoke(self.history()).content
        assert [self.history()[0].content, "two files"] == [m.content for m in model.seen[0]]
