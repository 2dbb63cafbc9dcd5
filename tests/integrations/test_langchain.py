"""The LangChain adapter: lossless conversion, the agent middleware, the trim drop-in.

The agent tests drive a real LangChain v1 agent (``create_agent``) with
LangChain's own fake chat model, ``GenericFakeChatModel``, and look at every
request the agent built.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
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
from langchain_core.messages.content import is_data_content_block
from langchain_core.tools import tool

from mellea_ctx import (
    AudioPart,
    Checkpoint,
    DocumentPart,
    ImagePart,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    Message,
    ScriptedBackend,
    TextPart,
    TokenBudgetCompactor,
    WindowCompactor,
    default_counter,
)
from mellea_ctx.integrations.langchain import (
    CompactionMiddleware,
    compact_messages,
    from_langchain,
    to_langchain,
)

from ..helpers import CORPUS


def rich_history() -> list[BaseMessage]:
    """Messages using every field LangChain carries that components do not model."""
    return [
        SystemMessage("Be brief.", id="s1", additional_kwargs={"__openai_role__": "developer"}),
        HumanMessage(
            [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                "a bare string block",
            ],
            id="h1",
            name="ann",
        ),
        AIMessage(
            [
                {"type": "thinking", "thinking": "Look first.", "signature": "sig=="},
                {"type": "text", "text": "Let me check."},
                {"type": "reasoning", "reasoning": "standard block", "id": "r1"},
            ],
            id="a1",
            tool_calls=[{"name": "look", "args": {"zoom": 2, "at": [1, 2]}, "id": "call_1"}],
            usage_metadata={"input_tokens": 30, "output_tokens": 7, "total_tokens": 37},
            response_metadata={"model_name": "claude-sonnet-4-6", "stop_reason": "tool_use"},
        ),
        ToolMessage(
            "no such file", tool_call_id="call_1", status="error", artifact={"code": 2}, id="t1"
        ),
        AIMessage("It failed.", id="a2", name="bot"),
    ]


class TestConversion:
    def test_round_trip_is_the_identity(self) -> None:
        """Every LangChain field survives from_langchain then to_langchain."""
        history = rich_history()
        assert history == to_langchain(from_langchain(history))

    def test_parts_are_typed(self) -> None:
        """Thinking blocks become thinking parts; a failed tool result is an error result."""
        components = from_langchain(rich_history())
        assert "Look first." == components[2].parts[0].text  # type: ignore[union-attr]
        assert components[3].is_error
        assert "Let me check." == components[2].content
        assert ("call_1", "look") == (
            components[2].tool_calls[0].id,
            components[2].tool_calls[0].name,
        )

    @pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus beside the repository")
    @pytest.mark.parametrize(
        "name", sorted(p.name for p in CORPUS.glob("*.openai.json")) if CORPUS.is_dir() else []
    )
    def test_corpus_round_trip(self, name: str) -> None:
        """Real transcripts, read by LangChain's own OpenAI converter, round-trip exactly."""
        messages = convert_to_messages(json.loads((CORPUS / name).read_text()))
        assert messages == to_langchain(from_langchain(messages))

    def test_checkpoint_comes_back_as_a_checkpoint(self) -> None:
        """A summary written into a LangChain history is read back as the checkpoint it was."""
        history = [HumanMessage(f"turn {i} " + "word " * 40) for i in range(12)]
        backend = ScriptedBackend(lambda messages, options: "Twelve turns about words.")
        compacted = compact_messages(history, LLMSummarizeCompactor(keep_n=2), backend=backend)
        again = from_langchain(compacted)
        assert isinstance(again[0], Checkpoint)
        assert history[-2:] == compacted[-2:]
        assert "Twelve turns about words." in compacted[0].content

    @pytest.mark.parametrize(
        "part",
        [
            ImagePart(file_id="file-abc", media_type="image/png"),
            DocumentPart(text="the contract", name="c.txt"),
            DocumentPart(data="JVBERi0=", media_type="application/pdf", name="c.pdf"),
            DocumentPart(url="https://example.com/c.pdf"),
            DocumentPart(file_id="file-doc"),
            AudioPart(data="UklGRg==", format="wav"),
        ],
        ids=[
            "image-file",
            "document-text",
            "document-data",
            "document-url",
            "document-file",
            "audio",
        ],
    )
    def test_our_parts_become_langchain_s_standard_blocks(self, part: Any) -> None:
        """An image by file id, a document or audio becomes a block LangChain reads as data.

        langchain_core's ``is_data_content_block`` is the oracle; before, an image by file id
        raised IndexError and a document or audio went out as an empty text block.
        """
        (message,) = to_langchain([Message("user", [TextPart("see"), part])])
        assert isinstance(message.content, list)
        block = message.content[1]
        assert is_data_content_block(block), block
        kept = {value for value in block.values() if isinstance(value, str)}
        kept |= set(block.get("extras", {}).values())
        assert {v for v in attrs.asdict(part).values() if isinstance(v, str)} - {"wav"} <= kept

    def test_unknown_kind_is_refused_clearly(self) -> None:
        """A message kind with no component is refused, naming the message."""
        from langchain_core.messages import ChatMessage

        with pytest.raises(InvalidArgumentError, match="message 0: ChatMessage has no component"):
            from_langchain([ChatMessage("x", role="critic")])


class TestCompactMessages:
    def test_kept_messages_are_the_same_objects(self) -> None:
        """The trim drop-in hands back the caller's own objects and never splits a pair."""
        history = rich_history()
        out = compact_messages(history, WindowCompactor(size=2))
        assert all(any(m is h for h in history) for m in out)
        assert [history[0], history[2], history[3], history[4]] == out

    def test_nothing_to_do_returns_the_input(self) -> None:
        """When nothing needs compacting, the messages come back unchanged."""
        history = rich_history()
        assert history == compact_messages(history, WindowCompactor(size=50))


class RecordingModel(GenericFakeChatModel):
    """LangChain's fake chat model, recording each request; tools are bound to it as-is."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script(steps: int) -> Iterator[AIMessage]:
    """An agent that calls tools for ``steps`` steps (two in parallel every third), then answers."""
    for step in range(steps):
        calls = [{"name": "read", "args": {"path": f"src/f{step}.py"}, "id": f"c{step}a"}]
        if step % 3 == 2:
            calls.append({"name": "read", "args": {"path": f"src/g{step}.py"}, "id": f"c{step}b"})
        yield AIMessage(f"Reading step {step}.", tool_calls=calls)
    yield AIMessage("All files read.")


@tool
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "lorem ipsum dolor " * 60


def pairs_whole(messages: Sequence[BaseMessage]) -> bool:
    """Every tool message answers an earlier AI call, and every AI call is answered."""
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


class TestAgentMiddleware:
    @pytest.mark.parametrize("sync", [True, False])
    def test_long_tool_loop_stays_under_budget_with_pairs_whole(self, sync: bool) -> None:
        """A 36-step tool-calling agent: every request keeps its tool pairs and fits the budget."""
        budget = 3_000
        model = RecordingModel(messages=script(36))
        model.seen = []
        compactor = TokenBudgetCompactor(
            max_tokens=budget, keep_recent_tokens=1_000, boundary="model_step"
        )
        backend = ScriptedBackend(lambda messages, options: "Read many files under src/.")
        system_prompt = "You read files. " * 20  # counted only when the middleware is told
        middleware = CompactionMiddleware(compactor, backend=backend, system_prompt=system_prompt)
        agent = create_agent(
            model, tools=[read], system_prompt=system_prompt, middleware=[middleware]
        )
        goal = {"messages": [HumanMessage("Read every file under src/.")]}
        if sync:
            result = agent.invoke(goal, {"recursion_limit": 200})
        else:
            import asyncio

            result = asyncio.run(agent.ainvoke(goal, {"recursion_limit": 200}))
        assert "All files read." == result["messages"][-1].content
        assert 37 == len(model.seen)
        counter = default_counter()
        for request in model.seen:
            assert pairs_whole(request)
            components = from_langchain(request)
            assert sum(counter.count(c) for c in components) <= budget
        assert any(isinstance(c, Checkpoint) for c in from_langchain(model.seen[-1]))

    def test_bad_compactor_is_refused(self) -> None:
        """A compactor without a compact method is refused at construction."""
        with pytest.raises(InvalidArgumentError, match=r"has no compact\(\) method"):
            CompactionMiddleware(object())  # type: ignore[arg-type]
