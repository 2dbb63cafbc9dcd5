"""ExtractiveBackend: the offline summarizer keeps to its token budget."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import ExtractiveBackend, Message, default_counter


def transcript(lines: int) -> str:
    """A conversation dense with exact details (paths, commands, ids)."""
    return "\n".join(
        f"[user] Please read src/pkg/module_{i}.py and run "
        f"`pytest tests/test_{i}.py -k case_{i}` with id abc-{i}-{i * 7}."
        for i in range(lines)
    )


def summarize(text: str, max_tokens: int) -> str:
    prompt = Message("user", f"<conversation>\n{text}\n</conversation>")
    options = {"max_tokens": max_tokens}
    return asyncio.run(ExtractiveBackend().generate([prompt], model_options=options)).value


class TestBudget:
    def test_a_large_details_line_stays_within_max_tokens(self) -> None:
        """max_tokens=30 is honoured even when the exact details alone are far larger."""
        out = summarize(transcript(12), 30)
        assert out.startswith("Exact details: ")
        assert default_counter().count_text(out) <= 30

    @pytest.mark.parametrize("max_tokens", [1, 5, 30, 80, 400])
    def test_every_budget_is_honoured(self, max_tokens: int) -> None:
        """The whole answer is never over max_tokens."""
        assert default_counter().count_text(summarize(transcript(20), max_tokens)) <= max_tokens

    @settings(max_examples=30, deadline=None)
    @given(lines=st.integers(1, 15), max_tokens=st.integers(1, 200))
    def test_budget_property(self, lines: int, max_tokens: int) -> None:
        """For any transcript size and budget, the answer fits."""
        assert default_counter().count_text(summarize(transcript(lines), max_tokens)) <= max_tokens
