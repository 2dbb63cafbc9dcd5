"""The summarizers' reasoning_effort, as each SDK sends it, over real HTTP to loopback servers."""

from __future__ import annotations

from typing import Any

import pytest

from mellea_ctx import (
    AnthropicBackend,
    Backend,
    InvalidArgumentError,
    LLMSummarizeCompactor,
    OpenAIBackend,
    ScriptedBackend,
    TokenBudgetCompactor,
)

from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer
from .test_backends import long_context


def summarize_with(backend: Backend, **settings: Any) -> None:
    LLMSummarizeCompactor(default_backend=backend, keep_n=2, **settings).compact(long_context())


class TestOpenAI:
    @pytest.mark.parametrize(
        ("model", "reasoning", "sent"),
        [
            ("o4-mini", None, "low"),
            ("gpt-5-mini", None, "low"),
            ("openai/gpt-oss-20b", None, "low"),
            ("gpt-4o-mini", None, None),
            ("local-model", True, "low"),
            ("o4-mini", False, None),
        ],
    )
    def test_low_by_default_to_reasoning_models_only(
        self, openai_server: OpenAIWireServer, model: str, reasoning: bool | None, sent: str | None
    ) -> None:
        """The summary request carries reasoning_effort='low' only for a model that takes it."""
        openai_server.reply("Short summary.")
        backend = OpenAIBackend(
            model, base_url=openai_server.base_url, api_key="test", reasoning=reasoning
        )
        summarize_with(backend)
        assert sent == openai_server.requests[0].json.get("reasoning_effort")

    def test_the_option_and_model_options(self, openai_server: OpenAIWireServer) -> None:
        """reasoning_effort= sets the level, None sends none, model_options' own one wins."""
        for _ in range(4):
            openai_server.reply("Short summary.")
        backend = OpenAIBackend("o3", base_url=openai_server.base_url, api_key="test")
        summarize_with(backend, reasoning_effort="medium")
        summarize_with(backend, reasoning_effort=None)
        summarize_with(backend, model_options={"reasoning_effort": "high"})
        budget = TokenBudgetCompactor(default_backend=backend, max_tokens=200)
        budget.compact(long_context())
        sent = [request.json.get("reasoning_effort") for request in openai_server.requests]
        assert ["medium", None, "high", "low"] == sent


class TestAnthropic:
    @pytest.mark.parametrize(
        ("model", "sent"),
        [
            ("claude-opus-4-7", {"effort": "low"}),
            ("claude-sonnet-4-6", {"effort": "low"}),
            ("claude-opus-5", {"effort": "low"}),
            ("claude-haiku-4-5", None),
        ],
    )
    def test_output_config_effort_for_models_with_the_control(
        self, anthropic_server: AnthropicWireServer, model: str, sent: dict[str, str] | None
    ) -> None:
        """Anthropic gets output_config.effort, for models that have the effort control."""
        anthropic_server.reply("Short summary.")
        backend = AnthropicBackend(model, base_url=anthropic_server.base_url, api_key="test")
        summarize_with(backend)
        assert sent == anthropic_server.requests[0].json.get("output_config")

    @pytest.mark.parametrize(
        ("model", "takes"),
        [
            ("claude-opus-4-5-20251101", True),
            ("claude-sonnet-4-5-20250929", False),
            ("claude-haiku-4-5-20251001", False),
            ("claude-3-7-sonnet-20250219", False),
            ("anthropic/claude-sonnet-4-6", True),
        ],
    )
    def test_which_model_names_take_it(self, model: str, takes: bool) -> None:
        """A snapshot date is not read as a minor version."""
        assert takes == AnthropicBackend.model_takes_reasoning_effort(model)

    def test_minimal_becomes_low_and_an_explicit_config_is_kept(
        self, anthropic_server: AnthropicWireServer
    ) -> None:
        """OpenAI-only levels map to 'low'; an effort already in output_config is not replaced."""
        anthropic_server.reply("Short summary.")
        anthropic_server.reply("Short summary.")
        backend = AnthropicBackend(
            "claude-opus-4-6", base_url=anthropic_server.base_url, api_key="t"
        )
        summarize_with(backend, reasoning_effort="minimal")
        summarize_with(backend, model_options={"output_config": {"effort": "max"}})
        sent = [request.json.get("output_config") for request in anthropic_server.requests]
        assert [{"effort": "low"}, {"effort": "max"}] == sent


class TestOtherBackends:
    def test_a_custom_backend_sees_the_option(self) -> None:
        """A backend of your own receives it as the reasoning_effort model option."""
        backend = ScriptedBackend(lambda messages, options: "Short summary.")
        summarize_with(backend)
        assert "low" == backend.calls[0][1].get("reasoning_effort")

    @pytest.mark.parametrize("compactor", [LLMSummarizeCompactor, TokenBudgetCompactor])
    def test_an_unknown_level_is_refused(self, compactor: Any) -> None:
        """A level no provider names is refused at construction, with the known ones listed."""
        settings = {"max_tokens": 100} if compactor is TokenBudgetCompactor else {}
        with pytest.raises(InvalidArgumentError, match=r"reasoning_effort='lo' must be one of"):
            compactor(reasoning_effort="lo", **settings)
