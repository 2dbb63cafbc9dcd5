"""pydantic-ai's own history-processor behaviour, with our processor in the processor's role.

The cases follow pydantic-ai's ``tests/test_history_processor.py`` (what the
run sends, what ``all_messages()`` and ``new_messages()`` hold after a
processor pruned or replaced messages, a processor taking ``RunContext``, the
empty-history and ends-in-a-response refusals), rewritten here for our
``history_processor``; every run is a real ``Agent.run`` on pydantic-ai's
``FunctionModel``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, capture_run_messages
from pydantic_ai._utils import takes_run_context
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextContent,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from mellea_ctx import (
    Checkpoint,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    ScriptedBackend,
    TokenBudgetCompactor,
    WindowCompactor,
    default_counter,
)
from mellea_ctx.integrations._runner import definitions_tokens
from mellea_ctx.integrations.pydantic_ai import (
    ModelBackend,
    _components,
    _response,
    history_processor,
)


def recording() -> tuple[FunctionModel, list[list[ModelMessage]], list[AgentInfo]]:
    """A model that answers "ok" and records every request it was sent, with its AgentInfo."""
    seen: list[list[ModelMessage]] = []
    infos: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        infos.append(info)
        return ModelResponse(parts=[TextPart("ok")])

    return FunctionModel(model), seen, infos


def dialogue(turns: int, words: int = 30) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for i in range(turns):
        out.append(ModelRequest(parts=[UserPromptPart(f"Question {i} " + "word " * words)]))
        out.append(ModelResponse(parts=[TextPart(f"Answer {i}")]))
    return out


def prompts(messages: list[ModelMessage]) -> list[str]:
    """Every user prompt's text, in order."""
    out = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                content = part.content
                if isinstance(content, str):
                    out.append(content)
                else:
                    out.extend(c.content if isinstance(c, TextContent) else str(c) for c in content)
    return out


def summary(text: str) -> tuple[ScriptedBackend, list[Any]]:
    calls: list[Any] = []

    def handler(messages: Any, options: Any) -> str:
        calls.append(messages)
        return text

    return ScriptedBackend(handler), calls


class TestTheLastRequest:
    """P1: the request the model is about to answer is always sent, with its prompt."""

    def test_a_zero_window_still_sends_the_prompt(self) -> None:
        """``WindowCompactor(size=0)`` leaves the prompt: the history is never empty."""
        model, seen, _ = recording()
        agent = Agent(
            model, capabilities=[ProcessHistory(history_processor(WindowCompactor(size=0)))]
        )
        result = asyncio.run(agent.run("Question now", message_history=dialogue(3)))
        assert "ok" == result.output
        assert ["Question now"] == prompts(seen[0])

    def test_the_prompt_is_not_folded_into_the_summary(self) -> None:
        """``keep_n=0`` summarizes everything before the prompt; the prompt goes verbatim."""
        model, seen, _ = recording()
        backend, calls = summary("Three questions about words.")
        processor = history_processor(LLMSummarizeCompactor(keep_n=0), backend=backend)
        agent = Agent(model, capabilities=[ProcessHistory(processor)])
        asyncio.run(agent.run("Question now", message_history=dialogue(3)))
        assert "Question now" == prompts(seen[0])[-1]
        assert "Three questions about words." in prompts(seen[0])[0]
        assert calls and all("Question now" not in str(c) for c in calls)

    def test_tool_returns_stay_with_their_call(self) -> None:
        """Mid-loop, the last request holds tool returns: the response that called them stays."""
        seen: list[list[ModelMessage]] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(list(messages))
            if len(seen) < 4:
                return ModelResponse(parts=[ToolCallPart("read", {}, tool_call_id=f"c{len(seen)}")])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(
            FunctionModel(model),
            capabilities=[ProcessHistory(history_processor(WindowCompactor(size=0)))],
        )

        @agent.tool_plain
        def read() -> str:
            """Read."""
            return "text"

        assert "done" == asyncio.run(agent.run("go")).output
        for request in seen[1:]:
            assert isinstance(request[0], ModelResponse)  # the call, kept with its return
            assert 2 == len(request)


class TestRunContext:
    """P2: the processor takes pydantic-ai's ``RunContext``."""

    def test_it_asks_for_the_run_context(self) -> None:
        """pydantic-ai sees a processor that takes ``RunContext`` (sync and async)."""
        assert takes_run_context(history_processor(WindowCompactor(size=1)))
        assert takes_run_context(history_processor(WindowCompactor(size=1), mode="sync"))

    def test_a_checkpoint_of_this_run_is_a_new_message(self) -> None:
        """A checkpoint replacing the run's own prompt is kept by ``new_messages()``."""
        steps = 8

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            calls = sum(isinstance(m, ModelResponse) for m in messages)
            if len(model.seen) >= steps:  # type: ignore[attr-defined]
                return ModelResponse(parts=[TextPart("Read them all.")])
            model.seen.append(calls)  # type: ignore[attr-defined]
            n = len(model.seen)  # type: ignore[attr-defined]
            return ModelResponse(parts=[ToolCallPart("read", {"n": n}, tool_call_id=f"c{n}")])

        model.seen = []  # type: ignore[attr-defined]
        backend, _ = summary("Read files one to five.")
        compactor = TokenBudgetCompactor(
            max_tokens=500, keep_recent_tokens=200, boundary="model_step"
        )
        agent = Agent(
            FunctionModel(model),
            capabilities=[ProcessHistory(history_processor(compactor, backend=backend))],
        )

        @agent.tool_plain
        def read(n: int) -> str:
            """Read file n."""
            return f"file {n}: " + "lorem ipsum " * 40

        result = asyncio.run(agent.run("Read every file."))
        new = result.new_messages()
        assert result.all_messages() == new  # no history was given: everything is new
        assert any(isinstance(c, Checkpoint) for c, _ in _components(new))
        history = [*new]  # the pattern pydantic-ai documents: history += result.new_messages()
        assert isinstance(_components(history)[0][0], Checkpoint)

    def test_tool_definitions_count(self) -> None:
        """A history that fits the budget alone is compacted once the tool definitions count."""

        def search(query: str, region: str, language: str, page: int, safe: bool) -> str:
            """Search the knowledge base across every region and language, page by page.

            Args:
                query: What to look for, in the user's own words.
                region: The sales region whose documents come first.
                language: The answer's language as an ISO 639-1 code.
                page: The page of results, starting at one.
                safe: Whether to leave out confidential documents.
            """
            return ""

        history = dialogue(6, words=10)
        full = sum(default_counter().count(c) for c, _ in _components(history))
        sent: dict[bool, list[ModelMessage]] = {}
        for with_tool in (False, True):
            model, seen, infos = recording()
            compactor = TokenBudgetCompactor(max_tokens=full + 20, keep_recent_tokens=20)
            processor = history_processor(compactor, backend=ExtractiveBackend())
            agent = Agent(model, capabilities=[ProcessHistory(processor)])
            if with_tool:
                agent.tool_plain(search)
            asyncio.run(agent.run("Next?", message_history=history))
            sent[with_tool] = seen[0]
        tools = definitions_tokens(
            (d.name, d.description or "", d.parameters_json_schema) for d in infos[0].function_tools
        )
        assert tools > 40
        assert len(history) + 1 == len(sent[False])  # under the budget: sent whole
        assert isinstance(_components(sent[True])[0][0], Checkpoint)  # with the tools: compacted

    def test_reported_usage_is_read(self) -> None:
        """A response's reported usage reaches the component (what threshold compactors read)."""
        response = ModelResponse(
            parts=[TextPart("hi")], usage=RequestUsage(input_tokens=1200, output_tokens=7)
        )
        usage = _response(response).usage
        assert usage is not None
        assert (1200, 7) == (usage.prompt_tokens, usage.completion_tokens)


class TestCheckpointSurvives:
    """P3: the checkpoint's record survives pydantic-ai's merging and its JSON round trip."""

    @pytest.mark.parametrize("keep_n", [1, 2, 3])
    def test_the_next_run_folds_the_checkpoint(self, keep_n: int) -> None:
        """Stored as JSON and sent again, the checkpoint is still one: the next summary folds it.

        Some ``keep_n`` leave a request right after the checkpoint, which
        pydantic-ai merges with it into one request at the start of the next run,
        keeping only its own ``ModelRequest.metadata``.
        """
        model, _, _ = recording()
        backend, _ = summary("Eight questions about words.")
        processor = history_processor(LLMSummarizeCompactor(keep_n=keep_n), backend=backend)
        agent = Agent(model, capabilities=[ProcessHistory(processor)])
        first = asyncio.run(agent.run("Question 8", message_history=dialogue(8)))
        stored = ModelMessagesTypeAdapter.validate_json(
            ModelMessagesTypeAdapter.dump_json(first.all_messages())
        )
        received: list[list[ModelMessage]] = []

        def spy(messages: list[ModelMessage]) -> list[ModelMessage]:
            received.append(list(messages))
            return messages

        agent2 = Agent(model, capabilities=[ProcessHistory(spy)])
        asyncio.run(agent2.run("Question 9", message_history=stored))
        components = [c for c, _ in _components(received[0])]
        assert isinstance(components[0], Checkpoint)
        assert "Eight questions about words." in components[0].content


class TestUpstreamCases:
    """pydantic-ai's own history-processor cases, with our processor."""

    def test_the_processed_history_is_the_runs_history(self) -> None:
        """What the model was sent is what ``all_messages()`` holds, plus its answer."""
        model, seen, _ = recording()
        agent = Agent(
            model, capabilities=[ProcessHistory(history_processor(WindowCompactor(size=1)))]
        )
        with capture_run_messages() as captured:
            result = asyncio.run(agent.run("Question 3", message_history=dialogue(3)))
        assert captured == result.all_messages()
        assert [*seen[0], result.all_messages()[-1]] == result.all_messages()
        assert ["Question 3"] == prompts(result.all_messages())

    def test_pruning_the_prompt_keeps_new_messages_whole(self) -> None:
        """A window that drops the run's first prompt mid-loop: ``new_messages()`` is every one."""
        calls = 0

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            nonlocal calls
            calls += 1
            if calls == 1:
                return ModelResponse(parts=[ToolCallPart("tool", {}, tool_call_id="t1")])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(
            FunctionModel(model),
            capabilities=[ProcessHistory(history_processor(WindowCompactor(size=0)))],
        )

        @agent.tool_plain
        def tool() -> str:
            """A tool."""
            return "tool executed"

        with capture_run_messages() as captured:
            result = asyncio.run(agent.run("start"))
        assert captured == result.all_messages()
        assert result.new_messages() == result.all_messages()
        assert [ModelResponse, ModelRequest, ModelResponse] == [
            type(m) for m in result.all_messages()
        ]

    def test_nothing_to_do_returns_the_same_list(self) -> None:
        """A no-op keeps the very list pydantic-ai passed."""
        history = dialogue(2)
        assert history is history_processor(WindowCompactor(size=50), mode="sync")(None, history)

    @pytest.mark.parametrize("size", [0, 1, 2])
    def test_never_empty_never_ending_in_a_response(self, size: int) -> None:
        """pydantic-ai's two refusals (empty history, ends in a response) never happen."""
        model, seen, _ = recording()
        agent = Agent(
            model, capabilities=[ProcessHistory(history_processor(WindowCompactor(size=size)))]
        )
        asyncio.run(agent.run("Now?", message_history=dialogue(4)))
        assert seen[0] and isinstance(seen[0][-1], ModelRequest)

    def test_a_streamed_run(self) -> None:
        """The processor works on a streamed run too."""

        async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
            yield "streamed"

        agent = Agent(
            FunctionModel(stream_function=stream),
            capabilities=[ProcessHistory(history_processor(WindowCompactor(size=1)))],
        )

        async def go() -> str:
            async with agent.run_stream("hi", message_history=dialogue(3)) as result:
                return await result.get_output()

        assert "streamed" == asyncio.run(go())


class TestTheAgentsModelSummarizes:
    """The agent's own pydantic-ai model writes the summaries (``ModelBackend``)."""

    def test_one_model_answers_and_summarizes(self) -> None:
        """The same ``FunctionModel`` gets the summary request, then the agent's request."""
        requests: list[list[ModelMessage]] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            requests.append(list(messages))
            system = [
                p.content for m in messages for p in m.parts if p.part_kind == "system-prompt"
            ]
            if any("summar" in text.lower() for text in system):
                return ModelResponse(parts=[TextPart("Earlier: eight questions about words.")])
            return ModelResponse(parts=[TextPart("ok")])

        shared = FunctionModel(model)
        processor = history_processor(LLMSummarizeCompactor(keep_n=2), backend=ModelBackend(shared))
        agent = Agent(shared, capabilities=[ProcessHistory(processor)])
        result = asyncio.run(agent.run("Question now", message_history=dialogue(8)))
        assert "ok" == result.output
        assert 2 == len(requests)  # the summary, then the answer
        first = _components(requests[1])[0][0]
        assert isinstance(first, Checkpoint)
        assert "eight questions about words" in first.content
