"""Prompt caching: Usage reports cache reads and writes, AnthropicBackend places breakpoints."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mellea_ctx import (
    AnthropicBackend,
    InvalidArgumentError,
    InvalidComponentError,
    Message,
    OpenAIBackend,
    Usage,
    tool,
)
from mellea_ctx._backends.cache_control import place_breakpoints

from ._wire import Reply
from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

HISTORY = [Message("system", "Be brief."), Message("user", "hi")]
MARK = {"type": "ephemeral"}


@tool
def ls(path: str) -> str:
    """List a directory.

    Args:
        path: The directory.
    """
    return path


def _generate(backend: Any, **kwargs: Any) -> Any:
    return asyncio.run(backend.generate(HISTORY, **kwargs))


def _anthropic(server: AnthropicWireServer, **kwargs: Any) -> AnthropicBackend:
    return AnthropicBackend("claude-x", base_url=server.base_url, api_key="test", **kwargs)


class TestUsage:
    """Both SDK backends report what the prompt cache served and stored."""

    def test_openai_cached_tokens(self, openai_server: OpenAIWireServer):
        """OpenAI's ``cached_tokens`` are reads, part of the prompt; it reports no writes."""
        openai_server.enqueue(Reply("ok", usage=(1_000, 5), cache=(768, 0)))
        backend = OpenAIBackend("m", base_url=openai_server.base_url, api_key="test")

        expected = Usage(1_000, 5, cache_read_tokens=768)
        assert expected == _generate(backend).usage

    def test_anthropic_reads_and_writes(self, anthropic_server: AnthropicWireServer):
        """Anthropic's reads and writes come on top of ``input_tokens``; the prompt is all three."""
        anthropic_server.enqueue(Reply("ok", usage=(40, 5), cache=(900, 60)))

        expected = Usage(1_000, 5, cache_read_tokens=900, cache_write_tokens=60)
        assert expected == _generate(_anthropic(anthropic_server)).usage

    def test_bad_cache_counts(self):
        """A cache count must be an int in range, like the others."""
        with pytest.raises(InvalidComponentError, match="cache_read_tokens=-1 must be an int"):
            Usage(1, 1, cache_read_tokens=-1)


class TestBreakpoints:
    """AnthropicBackend marks tools, system and the end of the history, unless told not to."""

    def test_default_marks_all_three(self, anthropic_server: AnthropicWireServer):
        """The last tool, the system prompt and the last history block carry cache_control."""
        anthropic_server.reply("ok")
        _generate(_anthropic(anthropic_server), tools=[ls])
        body = anthropic_server.requests[-1].json

        assert MARK == body["tools"][-1]["cache_control"]
        assert [{"type": "text", "text": "Be brief.", "cache_control": MARK}] == body["system"]
        assert [{"type": "text", "text": "hi", "cache_control": MARK}] == body["messages"][-1][
            "content"
        ]

    def test_off(self, anthropic_server: AnthropicWireServer):
        """``cache_breakpoints=()`` sends the request exactly as before: no marks at all."""
        anthropic_server.reply("ok")
        _generate(_anthropic(anthropic_server, cache_breakpoints=()), tools=[ls])
        request = anthropic_server.requests[-1]

        assert b"cache_control" not in request.body
        assert "Be brief." == request.json["system"]

    def test_only_some(self, anthropic_server: AnthropicWireServer):
        """Each place is chosen on its own."""
        anthropic_server.reply("ok")
        _generate(_anthropic(anthropic_server, cache_breakpoints={"history"}), tools=[ls])
        body = anthropic_server.requests[-1].json

        assert "cache_control" not in body["tools"][-1]
        assert "Be brief." == body["system"]
        assert MARK == body["messages"][-1]["content"][-1]["cache_control"]

    def test_the_previous_requests_end_is_marked_too(self):
        """The last block before the last assistant message: a read is found within 20
        blocks of a mark (the prompt-caching page), and a step may add more."""
        turns = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "more"},
        ]

        def marks(messages: list[dict[str, Any]]) -> list[Any]:
            return [
                None if isinstance(m["content"], str) else m["content"][-1].get("cache_control")
                for m in messages
            ]

        assert [MARK, None, MARK] == marks(place_breakpoints({"history"}, None, turns, [])[1])
        prefilled = [*turns, {"role": "assistant", "content": "Sure:"}]
        sent = place_breakpoints({"history"}, None, prefilled, [])[1]
        assert [None, None, None, MARK] == marks(sent)

    @pytest.mark.parametrize(
        ("value", "match"),
        [("system", "must be a collection"), (["prefix"], "holds \\['prefix'\\]")],
    )
    def test_invalid(self, value, match):
        """An unknown place, or a bare string, is refused at construction."""
        with pytest.raises(InvalidArgumentError, match=match):
            AnthropicBackend("claude-x", api_key="test", cache_breakpoints=value)
