"""Token counts cover every part: images by the providers' formulas, thinking, documents, blocks."""

from __future__ import annotations

import json

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    Component,
    Message,
    ModelOutputThunk,
    TiktokenCounter,
    ToolMessage,
)
from mellea_ctx._core.encoding import load_o200k_base
from mellea_ctx._core.exceptions import InvalidArgumentError
from mellea_ctx._core.image_tokens import anthropic_image_tokens, openai_image_tokens
from mellea_ctx._core.parts import (
    DocumentPart,
    ImagePart,
    OpaquePart,
    RedactedThinkingPart,
    RefusalPart,
    TextPart,
    ThinkingPart,
)
from mellea_ctx._core.tokens import count_memoized
from tests.strategies import histories


def tokens(text: str) -> int:
    """tiktoken's own count, the independent check."""
    encoding: tiktoken.Encoding = load_o200k_base()
    return len(encoding.encode(text, disallowed_special=()))


BASE = TiktokenCounter().count(Message("user", "look"))


def with_part(part: object, counter: TiktokenCounter | None = None) -> int:
    counter = counter or TiktokenCounter()
    return counter.count(Message("user", (TextPart("look"), part))) - counter.count(
        Message("user", "look")
    )


class TestImageFormulas:
    @pytest.mark.parametrize(
        ("width", "height", "detail", "expected"),
        [
            (1024, 1024, "high", 765),  # OpenAI's worked example: 4 tiles
            (2048, 4096, "high", 1105),  # OpenAI's worked example: 6 tiles
            (512, 512, None, 255),
            (100, 100, None, 255),  # never scaled up: one tile
            (4096, 8192, "low", 85),
            (8000, 600, "auto", 85 + 170 * 4 * 1),  # fits to 2048 x 154: 4 x 1 tiles
        ],
    )
    def test_openai_tiles(self, width: int, height: int, detail: str, expected: int) -> None:
        """85 + 170 per 512 px tile after fitting 2048 and scaling the short side to 768."""
        assert expected == openai_image_tokens(width, height, detail)
        image = ImagePart(url="https://x/a.png", width=width, height=height, detail=detail)
        assert expected == with_part(image)

    @pytest.mark.parametrize(
        ("width", "height", "expected"),
        [(200, 200, 54), (1000, 1000, 1334), (1092, 1092, 1590), (3000, 3000, 1600)],
    )
    def test_anthropic_area(self, width: int, height: int, expected: int) -> None:
        """About width * height / 750, Anthropic's published figures, at most 1600."""
        assert expected == anthropic_image_tokens(width, height)
        image = ImagePart(data="iVBORw0KGgo=", media_type="image/png", width=width, height=height)
        assert expected == with_part(image, TiktokenCounter(images="anthropic"))

    def test_unknown_size_costs_the_bound(self) -> None:
        """With no size, each formula's largest cost; image_tokens overrides it."""
        image = ImagePart(file_id="file-1")
        assert 1445 == with_part(image)
        assert 1600 == with_part(image, TiktokenCounter(images="anthropic"))
        assert 300 == with_part(image, TiktokenCounter(image_tokens=300))

    def test_bad_formula(self) -> None:
        """An unknown formula is refused, naming the choices."""
        with pytest.raises(InvalidArgumentError, match="images='gemini' must be 'openai' or"):
            TiktokenCounter(images="gemini")  # type: ignore[arg-type]


class TestOtherParts:
    def test_thinking_counts_text_and_signature(self) -> None:
        """Thinking goes back to the provider, so its text and signature count."""
        out = ModelOutputThunk(
            parts=(ThinkingPart("Plan: ls.", signature="EqQBCkgI"), TextPart("4"))
        )
        plain = TiktokenCounter().count(ModelOutputThunk("4"))
        assert plain + tokens("Plan: ls.") + tokens("EqQBCkgI") == TiktokenCounter().count(out)

    def test_redacted_refusal_and_opaque(self) -> None:
        """Redacted data, a refusal's text and an opaque block's JSON are counted."""
        block = {"type": "web_search_tool_result", "content": [{"url": "https://a.b"}]}
        assert tokens("EmwKAhgB") == with_part(RedactedThinkingPart("EmwKAhgB"))
        assert tokens("No.") == with_part(RefusalPart("No."))
        assert tokens(json.dumps(block)) == with_part(OpaquePart("anthropic", block))

    def test_documents(self) -> None:
        """A text document costs its text and name; inline data one token per 4 characters."""
        doc = DocumentPart(text="line one\nline two", name="notes.txt")
        assert tokens("line one\nline two") + tokens("notes.txt") == with_part(doc)
        pdf = DocumentPart(data="A" * 400, media_type="application/pdf")
        assert 100 == with_part(pdf)

    def test_tool_result_image(self) -> None:
        """An image a tool returned costs as much as one a user sent."""
        result = ToolMessage(
            (TextPart("shot"), ImagePart(url="u", width=512, height=512)), tool_call_id="c"
        )
        assert 255 == TiktokenCounter().count(result) - TiktokenCounter().count(
            ToolMessage("shot", tool_call_id="c")
        )


counters = st.sampled_from(
    [TiktokenCounter(), TiktokenCounter(images="anthropic"), TiktokenCounter(image_tokens=7)]
)


class TestAccounting:
    @settings(max_examples=40)
    @given(items=histories(max_segments=8, rich=True), counter=counters)
    def test_exact_total_bound_and_memo(
        self, items: list[Component], counter: TiktokenCounter
    ) -> None:
        """token_count is the counter over as_list(); bound() bounds count(); the memo agrees."""
        ctx = ChatContext(counter=counter)
        for component in items:
            ctx = ctx.add(component)
        assert sum(counter.count(c) for c in ctx.as_list()) == ctx.token_count
        for component in items:
            assert counter.count(component) <= counter.bound(component)
            assert counter.count(component) == count_memoized(counter, component)
