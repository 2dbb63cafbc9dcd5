"""The react loop: tools, parallel calls, failures, compaction mid-run, and valid histories."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from mellea_ctx import (
    BackendError,
    ChatContext,
    Checkpoint,
    Component,
    Event,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    ScriptedBackend,
    ServerError,
    ThresholdCompactor,
    TokenBudgetCompactor,
    ToolCall,
    WindowCompactor,
    areact,
    pin_react_initiator,
    react,
    to_anthropic,
    tool,
    validate_openai,
)


@tool
def read_file(path: str) -> str:
    """Read a file of the project.

    Args:
        path: The file to read.
    """
    return f"contents of {path}: " + "def handler(): return 42\n" * 12


@tool
def broken(reason: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"disk on fire ({reason})")


@tool
async def slow_lookup(key: str) -> str:
    """Look a key up, asynchronously."""
    await asyncio.sleep(0.01)
    return f"value of {key}"


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def assert_valid_for_both_providers(messages: Sequence[Component]) -> None:
    """The request would be accepted by OpenAI and by Anthropic."""
    assert validate_openai(messages) == []
    _, turns = to_anthropic(messages)
    roles = [turn["role"] for turn in turns]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    for previous, turn in itertools.pairwise(turns):
        # A turn of plain text travels as a string: it holds no tool blocks.
        blocks = [] if isinstance(turn["content"], str) else turn["content"]
        asked_in = [] if isinstance(previous["content"], str) else previous["content"]
        used = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
        asked = {b["id"] for b in asked_in if b["type"] == "tool_use"}
        assert used <= asked
        if asked:
            assert asked <= used, "every tool_use needs its tool_result in the next turn"


class Script:
    """A scripted model: each turn returns the next planned output, checking every request."""

    def __init__(self, *outputs: ModelOutputThunk | str) -> None:
        self.outputs = list(outputs)
        self.requests: list[list[Component]] = []
        self.tool_names: list[list[str]] = []

    def __call__(self, messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
        if any(
            m.content.startswith("Summarize") or "<conversation>" in m.content for m in messages
        ):
            return "Earlier: files were read and the handler returns 42."  # a summary request
        assert_valid_for_both_providers(messages)
        assert any(isinstance(m, ReactInitiator) for m in messages), "the goal was dropped"
        self.requests.append(list(messages))
        self.tool_names.append([t.name for t in options.get("tools", [])])
        return self.outputs.pop(0) if self.outputs else "Done."


class TestLoop:
    def test_answer_without_tools(self) -> None:
        """An output with no tool calls is the answer, after one turn."""
        result = react("Say hi.", ChatContext(), ScriptedBackend(Script("Hi!")))
        assert (result.answer, result.turns, result.stopped) == ("Hi!", 1, "answer")
        assert isinstance(result.ctx[0], ReactInitiator)

    def test_tool_results_reach_the_model(self) -> None:
        """A tool call runs, its result is added, and the model answers from it."""
        script = Script(
            ModelOutputThunk(None, tool_calls=[call("read_file", "c1", path="a.py")]),
            "It returns 42.",
        )
        result = react(
            "What does a.py return?", ChatContext(), ScriptedBackend(script), tools=[read_file]
        )
        assert result.answer == "It returns 42."
        last_request = script.requests[-1]
        assert last_request[-1].tool_call_id == "c1"
        assert last_request[-1].content.startswith("contents of a.py")

    def test_parallel_calls_keep_their_order(self) -> None:
        """Parallel calls all run; results come back in call order, each naming its call."""
        output = ModelOutputThunk(
            None,
            tool_calls=[
                call("slow_lookup", "c1", key="a"),
                call("read_file", "c2", path="b.py"),
                call("slow_lookup", "c3", key="c"),
            ],
        )
        script = Script(output, "ok")
        react(
            "Look up a, b, c.",
            ChatContext(),
            ScriptedBackend(script),
            tools=[read_file, slow_lookup],
        )
        results = script.requests[-1][-3:]
        assert [r.tool_call_id for r in results] == ["c1", "c2", "c3"]
        assert results[0].content == "value of a" and results[2].content == "value of c"

    def test_failing_and_unknown_tools_become_error_results(self) -> None:
        """A tool that raises, an unknown tool, and bad arguments are results, not crashes."""
        output = ModelOutputThunk(
            None,
            tool_calls=[
                call("broken", "c1", reason="test"),
                call("no_such_tool", "c2"),
                call("read_file", "c3", wrong="x"),
            ],
        )
        events: list[Event] = []
        script = Script(output, "I could not do it.")
        result = react(
            "Try.",
            ChatContext(),
            ScriptedBackend(script),
            tools=[read_file, broken],
            on_event=events.append,
        )
        contents = [m.content for m in script.requests[-1][-3:]]
        assert contents[0] == "error: RuntimeError: disk on fire (test)"
        assert contents[1].startswith("error: there is no tool named 'no_such_tool'")
        assert "unknown wrong" in contents[2] and "missing path" in contents[2]
        errors = [e.error for e in events if e.kind == "tool_called"]
        assert all(errors) and len(errors) == 3
        assert result.answer == "I could not do it."

    def test_budget_runs_out(self) -> None:
        """A model that never stops calling tools is stopped by the budget."""

        def forever(messages: Sequence[Component], options: Mapping[str, Any]) -> ModelOutputThunk:
            return ModelOutputThunk(
                None, tool_calls=[call("read_file", f"c{len(messages)}", path="x")]
            )

        result = react(
            "Loop.", ChatContext(), ScriptedBackend(forever), tools=[read_file], loop_budget=3
        )
        assert (result.answer, result.turns, result.stopped) == (None, 3, "budget")

    def test_input_context_is_not_modified(self) -> None:
        """The context given to react reads back exactly as before."""
        start = ChatContext().add(Message("system", "Be careful."))
        before = start.as_list()
        react("Go.", start, ScriptedBackend(Script("ok")))
        assert start.as_list() == before and len(start) == 1

    def test_backend_failure_propagates_typed(self) -> None:
        """A backend error reaches the caller as our typed error."""

        def down(messages: Sequence[Component], options: Mapping[str, Any]) -> str:
            raise ServerError("HTTP 503", status_code=503)

        with pytest.raises(BackendError, match="503"):
            react("Go.", ChatContext(), ScriptedBackend(down))

    def test_async_twin_and_sync_inside_a_loop(self) -> None:
        """areact works from async code, and react works inside a running loop."""

        async def caller() -> tuple[str | None, str | None]:
            first = await areact("Hi?", ChatContext(), ScriptedBackend(Script("async hi")))
            second = react("Hi?", ChatContext(), ScriptedBackend(Script("sync hi")))
            return first.answer, second.answer

        assert asyncio.run(caller()) == ("async hi", "sync hi")

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"goal": ""}, "goal='' must be a non-empty str"),
            ({"loop_budget": 0}, "loop_budget=0 must be an int >= 1"),
            ({"tools": [len]}, "wrap <built-in function len> with mellea_ctx.tool"),
            ({"tools": [read_file, read_file]}, "tool names must be unique"),
            ({"compactor": object()}, "has no compact() method"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict[str, Any], message: str) -> None:
        """Bad arguments name themselves before any model call."""
        arguments: dict[str, Any] = {"goal": "Go.", **kwargs}
        goal = arguments.pop("goal")
        with pytest.raises(InvalidArgumentError) as info:
            react(goal, ChatContext(), ScriptedBackend(Script("x")), **arguments)
        assert message in str(info.value)


def reading_agent(turns: int) -> Script:
    """A model that reads a file per turn (some turns in parallel), then answers."""
    outputs: list[ModelOutputThunk | str] = []
    for i in range(turns):
        calls = [call("read_file", f"t{i}a", path=f"src/m{i}.py")]
        if i % 3 == 0:
            calls.append(call("read_file", f"t{i}b", path=f"src/n{i}.py"))
        outputs.append(ModelOutputThunk(f"Reading step {i}.", tool_calls=calls))
    outputs.append("All modules return 42.")
    return Script(*outputs)


class TestCompactionInTheLoop:
    def test_threshold_summary_mid_run_keeps_goal_and_pairs(self) -> None:
        """A gated summarizer fires mid-run; every request stays valid and keeps the goal."""
        script = reading_agent(12)
        backend = ScriptedBackend(script)
        compactor = ThresholdCompactor(
            LLMSummarizeCompactor(keep_n=3, pin_predicate=pin_react_initiator), threshold=700
        )
        events: list[Event] = []
        result = react(
            "Find what every module returns.",
            ChatContext().add(Message("system", "You are a code reader.")),
            backend,
            tools=[read_file],
            compactor=compactor,
            loop_budget=20,
            on_event=events.append,
        )
        assert result.answer == "All modules return 42."
        assert [e.kind for e in events].count("compaction_applied") >= 2
        assert all(e.record is not None for e in events if e.kind == "compaction_applied")
        sizes = [sum(result.ctx.counter.count(c) for c in request) for request in script.requests]
        assert max(sizes) < 700 + 400  # the threshold plus one turn's growth
        assert any(isinstance(c, Checkpoint) for c in script.requests[-1])
        assert script.requests[-1][0].role == "system"

    def test_inline_window_in_the_context(self) -> None:
        """A window riding inside the context keeps requests valid and the goal pinned."""
        script = reading_agent(10)
        ctx = ChatContext(compactor=WindowCompactor(size=4, pin_predicate=pin_react_initiator))
        result = react(
            "Read everything.", ctx, ScriptedBackend(script), tools=[read_file], loop_budget=20
        )
        assert result.answer == "All modules return 42."
        assert max(len(r) for r in script.requests) <= 1 + 4 + 3

    def test_budget_compactor_by_model_step(self) -> None:
        """A token budget by model step compacts an agent loop that is one user turn."""
        script = reading_agent(10)
        compactor = TokenBudgetCompactor(
            max_tokens=900,
            keep_recent_tokens=300,
            boundary="model_step",
            pin_predicate=pin_react_initiator,
        )
        result = react(
            "Read.",
            ChatContext(),
            ScriptedBackend(script),
            tools=[read_file],
            compactor=compactor,
            loop_budget=20,
        )
        assert result.answer == "All modules return 42."
        assert any(isinstance(c, Checkpoint) for c in result.ctx), [
            type(c).__name__ for c in result.ctx
        ]


class TestCompactionAsATool:
    def test_model_asks_to_compact_and_recalls(self) -> None:
        """compact_context compacts before the next call; recall reads the exact span back."""
        seen_prompts: list[str] = []
        plan: list[ModelOutputThunk | str] = [
            ModelOutputThunk("Reading.", tool_calls=[call("read_file", "c1", path="a.py")]),
            ModelOutputThunk("Reading.", tool_calls=[call("read_file", "c2", path="b.py")]),
            ModelOutputThunk(
                None, tool_calls=[call("compact_context", "c3", focus="return values")]
            ),
            ModelOutputThunk(None, tool_calls=[call("recall", "c9", start=0, count=3)]),
            "Both return 42.",
        ]
        requests: list[list[Component]] = []

        def model(messages: Sequence[Component], options: Mapping[str, Any]) -> Any:
            last = messages[-1].content
            if "<conversation>" in last:
                seen_prompts.append(last)
                return "Read a.py and b.py; both return 42."
            requests.append(list(messages))
            return plan.pop(0)

        backend = ScriptedBackend(model)
        events: list[Event] = []
        result = react(
            "Compare a.py and b.py.",
            ChatContext(),
            backend,
            tools=[read_file],
            compactor=LLMSummarizeCompactor(keep_n=2, pin_predicate=pin_react_initiator),
            on_event=events.append,
        )
        assert result.answer == "Both return 42."
        assert "compaction_started" in [e.kind for e in events]
        assert any(isinstance(c, Checkpoint) for c in requests[3])  # compacted before call 4
        assert any(isinstance(c, Checkpoint) for c in requests[3])  # compacted before call 4
        assert [("<focus>return values</focus>" in p) for p in seen_prompts].count(True) == 1
        recalled = next(m for m in result.ctx if m.tool_call_id == "c9").content
        assert "replaced" in recalled and "[assistant called read_file id=c1]" in recalled
        offered = backend.calls[0][1]["tools"]
        assert {t.name for t in offered} == {"read_file", "compact_context", "recall"}


@tool
def warehouse_stock(sku: str) -> str:
    """Look up how many units of a product SKU are in the warehouse.

    Args:
        sku: The product SKU.
    """
    return f"SKU {sku}: 42 units in stock at the Leeds warehouse; next delivery on Friday."


@tool
def billing_lookup(invoice: str) -> str:
    """Find an invoice in billing and report whether it was paid."""
    return f"Invoice {invoice} was paid."


class TestOfflineAgent:
    def test_extractive_backend_drives_the_loop(self) -> None:
        """Offline, the extractive backend calls the matching tool once and answers from it."""
        from mellea_ctx import ExtractiveBackend

        result = react(
            'How many units of SKU "AB-1234" are in stock at the warehouse?',
            ChatContext(),
            ExtractiveBackend(),
            tools=[warehouse_stock, billing_lookup],
        )
        calls = [c for m in result.ctx for c in m.tool_calls]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [
            ("warehouse_stock", {"sku": "AB-1234"})
        ]
        assert result.answer is not None and "42 units in stock" in result.answer
        assert result.turns == 2


class TestToolSearchInTheLoop:
    def test_deferred_tools_are_found_then_called(self) -> None:
        """Deferred tools stay out until tool_search finds them, then they are offered and run."""
        from mellea_ctx import ToolSearch

        stock = tool(warehouse_stock.function, deferred=True)
        billing = tool(billing_lookup.function, deferred=True)
        search = ToolSearch([read_file, stock, billing])
        script = Script(
            ModelOutputThunk(
                None, tool_calls=[call("tool_search", "s1", query="stock in warehouse")]
            ),
            ModelOutputThunk(None, tool_calls=[call("warehouse_stock", "s2", sku="AB-1")]),
            "42 units.",
        )
        result = react(
            "How many AB-1 in stock?", ChatContext(), ScriptedBackend(script), tool_search=search
        )
        assert result.answer == "42 units."
        assert script.tool_names[0] == ["read_file", "tool_search"]
        assert script.tool_names[1] == ["read_file", "tool_search", "warehouse_stock"]
        assert "42 units in stock" in script.requests[2][-1].content

    def test_offline_agent_searches_first(self) -> None:
        """The offline agent searches the catalog with the goal, then calls what it found."""
        from mellea_ctx import ExtractiveBackend, ToolSearch

        search = ToolSearch(
            [
                tool(warehouse_stock.function, deferred=True),
                tool(billing_lookup.function, deferred=True),
            ]
        )
        result = react(
            'How many units of SKU "AB-9" are in stock in the warehouse?',
            ChatContext(),
            ExtractiveBackend(),
            tool_search=search,
        )
        names = [c.name for m in result.ctx for c in m.tool_calls]
        assert names == ["tool_search", "warehouse_stock"]
        assert result.answer is not None and "42 units" in result.answer
