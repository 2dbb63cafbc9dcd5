"""The summary transcript says which images, documents and files were there, and hides thinking."""

from __future__ import annotations

from mellea_ctx import Message, ModelOutputThunk, ToolMessage
from mellea_ctx._core.parts import (
    AudioPart,
    DocumentPart,
    ImagePart,
    OpaquePart,
    RedactedThinkingPart,
    RefusalPart,
    TextPart,
    ThinkingPart,
)
from mellea_ctx._formats.quoted import part_note, render_conversation


class TestPartNotes:
    def test_image_with_size_and_data(self) -> None:
        """An inline image shows its pixel size, media type and decoded size."""
        part = ImagePart(data="A" * 4096, media_type="image/png", width=640, height=480)
        assert "[image 640x480 image/png 3 KB]" == part_note(part)

    def test_document_by_name(self) -> None:
        """A document shows its name and media type."""
        part = DocumentPart(data="QUJD", media_type="application/pdf", name="q3 report.pdf")
        assert "[document q3_report.pdf application/pdf 3 bytes]" == part_note(part)

    def test_file_id_and_audio_and_opaque(self) -> None:
        """A provider file, an audio clip and an opaque block each get their kind."""
        assert "[image file file-9]" == part_note(ImagePart(file_id="file-9"))
        assert "[audio wav 3 bytes]" == part_note(AudioPart(data="QUJD", format="wav"))
        block = OpaquePart("anthropic", {"type": "web_search_tool_result", "content": []})
        assert "[anthropic web_search_tool_result]" == part_note(block)

    def test_thinking_has_no_note(self) -> None:
        """Thinking and redacted thinking are never shown."""
        assert part_note(ThinkingPart("plan", signature="s")) is None
        assert part_note(RedactedThinkingPart("opaque")) is None


class TestRenderParts:
    def test_image_only_message_is_not_silent(self) -> None:
        """A user message holding only an image still gets a line naming the image."""
        msg = Message("user", (ImagePart(url="https://x.org/shots/screen.png?v=2"),))
        assert "[user] [image screen.png]" == render_conversation([msg])

    def test_text_then_notes(self) -> None:
        """Text comes first, then one indented note per non-text part."""
        msg = Message(
            "user",
            (TextPart("See attached"), DocumentPart(text="x" * 50, name="notes.txt")),
        )
        assert "[user] See attached\n  [document notes.txt 50 characters]" == (
            render_conversation([msg])
        )

    def test_tool_result_image(self) -> None:
        """An image a tool returned is named in the tool result's line."""
        result = ToolMessage(
            (TextPart("captured"), ImagePart(data="QUJD", media_type="image/jpeg")),
            tool_call_id="c1",
            name="screenshot",
        )
        assert "[tool screenshot result id=c1] captured\n  [image image/jpeg 3 bytes]" == (
            render_conversation([result])
        )

    def test_thinking_is_never_quoted(self) -> None:
        """The model's thinking does not reach the summarizer; its answer does."""
        out = ModelOutputThunk(
            parts=(ThinkingPart("SECRET-PLAN", signature="sig"), TextPart("Answer: 4"))
        )
        text = render_conversation([out])
        assert "SECRET-PLAN" not in text
        assert "[assistant] Answer: 4" == text

    def test_refusal_is_shown(self) -> None:
        """A refusal is what the model said, so it is quoted."""
        out = ModelOutputThunk(parts=(RefusalPart("I can't help with that."),))
        assert "[assistant] [refusal] I can't help with that." == render_conversation([out])
