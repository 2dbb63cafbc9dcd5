"""Reading then writing is the identity, for each provider's documented blocks and in stores."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings

from mellea_ctx import (
    LossyConversionWarning,
    Message,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    component_from_record,
    components_from_json,
    components_to_json,
    from_anthropic,
    from_openai,
    to_anthropic,
    to_openai,
)
from mellea_ctx._formats.transcripts import _parse_anthropic, transcript_document

from .wire import anthropic_documents, openai_messages


class TestAnthropic:
    @settings(max_examples=80)
    @given(anthropic_documents())
    def test_read_then_write_is_the_identity(self, document: Any) -> None:
        """Every block type the Messages API documents comes back as the same JSON."""
        components = _parse_anthropic(document, "doc").components
        assert document == json.loads(transcript_document(components, "anthropic"))

    @settings(max_examples=40)
    @given(anthropic_documents())
    def test_store_records_lose_nothing(self, document: Any) -> None:
        """Store records give back equal components, so the same JSON too."""
        components = _parse_anthropic(document, "doc").components
        assert components == components_from_json(components_to_json(components))

    def test_thinking_is_reported_when_converted_to_openai(self) -> None:
        """Anthropic thinking has no place in Chat Completions: each loss is named."""
        components = from_anthropic(
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hm", "signature": "s"},
                        {"type": "redacted_thinking", "data": "EmwK"},
                        {"type": "text", "text": "Hello."},
                    ],
                },
            ]
        )
        lost: list[str] = []
        messages = to_openai(components, lost=lost)
        assert [{"type": "text", "text": "Hello."}] == messages[1]["content"]
        assert [
            "component 1: a thinking part from 'anthropic'",
            "component 1: a redacted thinking part from 'anthropic'",
        ] == lost
        with pytest.warns(LossyConversionWarning, match="could not carry 2 item"):
            to_openai(components)

    def test_ids_outside_the_pattern_are_mapped_the_same_way_everywhere(self) -> None:
        """An id Anthropic refuses is renamed in call and result alike, and reported."""
        history = [
            Message("user", "go"),
            Message("assistant", "", tool_calls=[ToolCall("functions.ls:0", "ls")]),
            ToolMessage("a.py", tool_call_id="functions.ls:0"),
        ]
        lost: list[str] = []
        _, turns = to_anthropic(history, lost=lost)
        used = turns[1]["content"][0]["id"]
        assert used == turns[2]["content"][0]["tool_use_id"] == "functions_ls_0_dd50e5a0"
        assert [
            "tool id 'functions.ls:0' sent as 'functions_ls_0_dd50e5a0'",
            "tool id 'functions.ls:0' sent as 'functions_ls_0_dd50e5a0'",
        ] == lost

    def test_openai_reasoning_without_signature_is_reported(self) -> None:
        """A reasoning_content thinking part cannot be sent to Anthropic (no signature)."""
        lost: list[str] = []
        out = Message("assistant", [ThinkingPart("hm", provider="openai")], structured=True)
        to_anthropic([Message("user", "hi"), out], lost=lost)
        assert ["component 1: a thinking part from 'openai' (no signature)"] == lost


class TestOpenai:
    @settings(max_examples=80)
    @given(openai_messages())
    def test_read_then_write_is_the_identity(self, messages: list[dict[str, Any]]) -> None:
        """Every documented part, role and key comes back as the same JSON."""
        with warnings.catch_warnings():
            warnings.simplefilter("error", LossyConversionWarning)
            assert messages == to_openai(from_openai(messages))

    @settings(max_examples=40)
    @given(openai_messages())
    def test_store_records_lose_nothing(self, messages: list[dict[str, Any]]) -> None:
        """Store records give back equal components."""
        components = from_openai(messages)
        assert components == components_from_json(components_to_json(components))

    def test_reasoning_content_is_a_thinking_part(self) -> None:
        """DeepSeek's and vLLM's reasoning_content reads as thinking, noted as OpenAI's."""
        [out] = from_openai(
            [{"role": "assistant", "content": "4", "reasoning_content": "2 + 2 = 4"}]
        )
        thinking = out.parts[0]
        assert isinstance(thinking, ThinkingPart)
        assert ("2 + 2 = 4", "openai", "4") == (thinking.text, thinking.provider, out.content)


class TestOldRecords:
    def test_records_written_before_parts_still_load(self) -> None:
        """A record with ``content`` text and ``images`` (the older form) reads as before."""
        record = {
            "kind": "message",
            "role": "user",
            "content": "see",
            "images": ["https://x/a.png"],
        }
        assert Message("user", "see", images=["https://x/a.png"]) == component_from_record(record)
        tool = {"kind": "tool", "content": "ok", "tool_call_id": "c1"}
        assert ToolMessage("ok", tool_call_id="c1") == component_from_record(tool)
