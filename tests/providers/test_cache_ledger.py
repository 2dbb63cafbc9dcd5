"""The prompt cache on the wire: what ``predict_cache`` says each request reads and writes is
what a server counting by Anthropic's documented rules reports, request by request.

The server's count (``anthropic_cache.py``) is written from the prompt-caching
page alone: exact-prefix keys, each breakpoint an entry when it reaches the
model's minimum, reads found up to 20 blocks before a breakpoint. ``react``
runs on ``AnthropicBackend`` with its default breakpoints (last tool, system,
end of the history) through several tool steps and a compaction, its
summaries sent to the same server; both sides count tokens with the server's
counter.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    AnthropicBackend,
    ChatContext,
    Message,
    TokenBudgetCompactor,
    Usage,
    pin_react_initiator,
    react,
    tool,
)
from mellea_ctx._backends.cache_control import predict_cache

from ._wire import Reply, ToolUse
from .anthropic_cache import LOOKBACK, PromptCache, blocks, json_tokens, minimum_tokens
from .anthropic_server import AnthropicWireServer

MODEL = "claude-sonnet-4-5"
MARK = {"type": "ephemeral"}
STEPS = 6  # tool calls before the answer


@tool
def read_page(number: int) -> str:
    """Read one page of the manual.

    Args:
        number: The page.
    """
    return f"page {number}: " + "the manual says little of interest here. " * 60


def _model() -> Any:
    """The model: a summary for a summary request, else the next page until ``STEPS``."""
    pages = iter(range(1, STEPS + 1))

    def answer(body: dict[str, Any]) -> Reply:
        if _summary(body):
            return Reply("The agent read pages of the manual; nothing of interest so far.")
        page = next(pages, None)
        if page is None:
            return Reply("The manual has nothing of interest.")
        return Reply(tool_calls=(_call(page),))

    return answer


def _call(number: int) -> ToolUse:
    return ToolUse(f"toolu_{number}", "read_page", json.dumps({"number": number}))


def _run(system: str, request: str) -> tuple[list[dict[str, Any]], PromptCache, Any]:
    cache = PromptCache(json_tokens)
    with AnthropicWireServer(_model(), prompt_cache=cache) as server:
        backend = AnthropicBackend(MODEL, base_url=server.base_url, api_key="test")
        compactor = TokenBudgetCompactor(
            max_tokens=3_000,  # reached after a few pages: at least one compaction
            target_tokens=1_500,
            keep_recent_tokens=600,
            pin_predicate=pin_react_initiator,
            request=request,  # type: ignore[arg-type]
            strict=True,
        )
        ctx = ChatContext().add(Message("system", system))
        result = react(
            "Read the manual and say what is of interest.",
            ctx,
            backend,
            tools=[read_page],
            compactor=compactor,
            loop_budget=20,
        )
        bodies = [r.json for r in server.requests if r.path == "/v1/messages"]
    return bodies, cache, result


LONG_SYSTEM = "You are a careful reader of manuals. " * 150  # tools + system pass the minimum
SHORT_SYSTEM = "You read manuals."  # tools + system + goal stay below it


@pytest.mark.parametrize("request_mode", ["quoted", "continuation"])
@pytest.mark.parametrize("system", [LONG_SYSTEM, SHORT_SYSTEM], ids=["long", "short"])
def test_predicted_reads_and_writes_are_what_the_server_reports(system, request_mode):
    """Per request, ``predict_cache`` == the server's (input, read, written) usage."""
    bodies, cache, result = _run(system, request_mode)

    predicted = predict_cache(bodies, json_tokens, minimum=minimum_tokens(MODEL))
    assert cache.reports == [(u.uncached, u.read, u.write) for u in predicted]
    # What the backend was billed, request by request (summaries included), is the same.
    billed = [
        (
            u.prompt_tokens - u.cache_read_tokens - u.cache_write_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
        )
        for u in result.usage
    ]
    assert cache.reports == billed
    total = result.billed
    assert (sum(u.read for u in predicted), sum(u.write for u in predicted)) == (
        total.cache_read_tokens,
        total.cache_write_tokens,
    )
    # The run is what the check needs: tool steps, a compaction, reads and writes.
    assert "The manual has nothing of interest." == result.answer
    summaries = [b for b in bodies if "checkpoint_request" in json.dumps(b["messages"])]
    summaries += [b for b in bodies if "<conversation>" in json.dumps(b["messages"])]
    assert summaries, "no compaction ran"
    assert any(u.read for u in predicted) and any(u.write for u in predicted)
    assert len(bodies) > STEPS + 1


@pytest.mark.parametrize("request_mode", ["quoted", "continuation"])
def test_the_planners_cache_model_holds_between_compactions(request_mode):
    """The planner's model: a step after a step reads the whole request before it.

    With the backend's mark on the history's last block, each agent request is
    cached entire, and the next, which repeats it and adds one tool step (two
    blocks, well inside the 20-block lookback), reads all of it.
    """
    bodies, cache, _ = _run(LONG_SYSTEM, request_mode)

    agent = [i for i, b in enumerate(bodies) if "tools" in b and not _summary(b)]
    followed = 0
    for before, after in itertools.pairwise(agent):
        if after != before + 1 or not _extends(bodies[before], bodies[after]):
            continue  # a summary call or a compaction lies between
        uncached, read, written = cache.reports[before]
        assert 0 == uncached  # the last block is marked: nothing after the breakpoint
        assert read + written == cache.reports[after][1]
        followed += 1
    assert followed >= 2


def test_a_step_of_many_parallel_calls_still_reads_the_request_before_it():
    """One step that adds more than 20 blocks (12 calls, 12 results) reads the last request.

    The page: breakpoints look back at most 20 blocks, so "add an additional
    explicit breakpoint" before more. With only the history's last block
    marked, the second request would read no more than the tools and system.
    """
    calls = tuple(_call(page) for page in range(1, 13))
    replies = iter([Reply(tool_calls=calls), Reply("Nothing of interest.")])
    cache = PromptCache(json_tokens)
    with AnthropicWireServer(lambda body: next(replies), prompt_cache=cache) as server:
        backend = AnthropicBackend(MODEL, base_url=server.base_url, api_key="test")
        ctx = ChatContext().add(Message("system", LONG_SYSTEM))
        react("Read pages 1 to 12.", ctx, backend, tools=[read_page])
        bodies = [r.json for r in server.requests if r.path == "/v1/messages"]

    first, second = cache.reports
    assert len(blocks(bodies[1])) - len(blocks(bodies[0])) > LOOKBACK
    assert sum(first) == second[1]  # the whole first request is read
    predicted = predict_cache(bodies, json_tokens, minimum=minimum_tokens(MODEL))
    assert cache.reports == [(u.uncached, u.read, u.write) for u in predicted]


def _summary(body: dict[str, Any]) -> bool:
    text = json.dumps(body["messages"])
    return "<checkpoint_request" in text or "<conversation>" in text


def _bare(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _bare(v) for k, v in value.items() if k != "cache_control"}
        if "role" in out and isinstance(out.get("content"), str):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_bare(v) for v in value]
    return value


def _extends(before: dict[str, Any], after: dict[str, Any]) -> bool:
    old, new = _bare(before["messages"]), _bare(after["messages"])
    return new[: len(old)] == old


_TEXTS = st.sampled_from(["a" * 300, "b" * 2_500, "c" * 5_000, "d" * 40, "e" * 9_000])
_TOOLS = [{"name": f"tool_{i}", "input_schema": {"type": "object"}} for i in range(3)]


@st.composite
def _runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Request bodies as a run might send them: most repeat part of an earlier one (its
    model, system and tools too) and add turns; marks, at most four, anywhere, the last
    block's most often."""
    bodies: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 6))):
        model = draw(st.sampled_from([MODEL, "claude-haiku-4-5"]))
        system = draw(st.sampled_from(["s" * 4_000, "t"]))
        tools = draw(st.integers(0, 3))
        texts: list[str] = []
        if bodies and draw(st.integers(0, 4)):
            earlier = draw(st.sampled_from(bodies))
            if draw(st.integers(0, 4)):
                model, system, tools = (
                    earlier["model"],
                    earlier["system"][0]["text"],
                    len(earlier["tools"]),
                )
            old = [b["text"] for m in earlier["messages"] for b in m["content"]]
            texts = old[: draw(st.integers(len(old) // 2, len(old)))]
        texts += draw(st.lists(_TEXTS, min_size=0 if texts else 1, max_size=30))
        per = draw(st.integers(1, 3))  # texts per message
        messages = [
            {
                "role": ("user", "assistant")[(i // per) % 2],
                "content": [{"type": "text", "text": t} for t in texts[i : i + per]],
            }
            for i in range(0, len(texts), per)
        ]
        body: dict[str, Any] = {
            "model": model,
            "system": [{"type": "text", "text": system}],
            "tools": [dict(t) for t in _TOOLS[:tools]],
            "messages": messages,
        }
        found = [*body["tools"], *body["system"]]
        found += [block for m in messages for block in m["content"]]
        marks = draw(st.sets(st.integers(0, len(found) - 1), max_size=3))
        if draw(st.booleans()):
            marks.add(len(found) - 1)
        for index in marks:
            found[index]["cache_control"] = MARK
        bodies.append(body)
    return bodies


@given(_runs())
def test_prediction_is_the_servers_count_on_any_run(bodies):
    """Whatever the marks, splits and repeats, the two readings of the page agree."""
    cache = PromptCache(json_tokens)
    reports = [cache.bill(body) for body in bodies]
    for model in {b["model"] for b in bodies}:
        same = [i for i, b in enumerate(bodies) if b["model"] == model]
        predicted = predict_cache(
            [bodies[i] for i in same], json_tokens, minimum=minimum_tokens(model)
        )
        assert [reports[i] for i in same] == [(u.uncached, u.read, u.write) for u in predicted]


class TestServerCache:
    """The server's own count, on the page's examples, before it judges anything."""

    @staticmethod
    def _body(system: str, *texts: str, mark_system: bool = True) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "text", "text": system}
        if mark_system:
            block["cache_control"] = MARK
        messages = [
            {"role": ("user", "assistant")[i % 2], "content": [{"type": "text", "text": t}]}
            for i, t in enumerate(texts)
        ]
        messages[-1]["content"][-1]["cache_control"] = MARK
        return {"model": MODEL, "system": [block], "messages": messages}

    def test_a_repeated_prefix_is_read_and_the_rest_written(self):
        """The first request writes its prefix; the next, one turn longer, reads it."""
        cache = PromptCache(lambda block: len(block["text"]))
        first = self._body("s" * 2_000, "q" * 10)
        second = self._body("s" * 2_000, "q" * 10, "a" * 5, "u" * 7)

        assert (0, 0, 2_010) == cache.bill(first)
        assert (0, 2_010, 12) == cache.bill(second)

    def test_below_the_minimum_nothing_is_cached(self):
        """A prefix shorter than the model's minimum is neither written nor read."""
        cache = PromptCache(lambda block: len(block["text"]))
        short = self._body("s" * 500, "q" * 10)

        assert [(510, 0, 0), (510, 0, 0)] == [cache.bill(short), cache.bill(short)]

    def test_reads_look_back_twenty_blocks_only(self):
        """Past 20 blocks since the last entry, the history's mark misses; the system's reads."""
        cache = PromptCache(lambda block: len(block["text"]))
        turns = [f"{i:04}" for i in range(41)]
        cache.bill(self._body("s" * 2_000, *turns[:1]))
        near = self._body("s" * 2_000, *turns[:LOOKBACK])  # 19 blocks on: the entry is seen
        far = self._body("t" * 2_000, *turns[:1])
        cache.bill(far)
        farther = self._body("t" * 2_000, *turns[: LOOKBACK + 2])  # 21 blocks on: it is not

        assert 2_004 == cache.bill(near)[1]
        assert 2_000 == cache.bill(farther)[1]

    def test_usage_reaches_the_sdk(self):
        """JSON answers carry the counts to ``Usage``; an SSE answer to the SDK's message."""
        cache = PromptCache(lambda block: len(block.get("text", "")))
        history = [Message("system", "s" * 2_000), Message("user", "q" * 10)]
        with AnthropicWireServer(prompt_cache=cache) as server:
            backend = AnthropicBackend(MODEL, base_url=server.base_url, api_key="test")
            first = asyncio.run(backend.generate(history)).usage
            second = asyncio.run(backend.generate(history)).usage
            with anthropic.Anthropic(
                base_url=server.base_url, api_key="test", max_retries=0
            ) as client:
                body = server.requests[0].json
                with client.messages.stream(**body) as stream:
                    streamed = stream.get_final_message().usage

        assert Usage(2_010, 5, cache_read_tokens=0, cache_write_tokens=2_010) == first
        assert Usage(2_010, 5, cache_read_tokens=2_010, cache_write_tokens=0) == second
        assert (0, 2_010, 0) == (
            streamed.input_tokens,
            streamed.cache_read_input_tokens,
            streamed.cache_creation_input_tokens,
        )
