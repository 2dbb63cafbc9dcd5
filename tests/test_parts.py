"""Typed content parts, and components built from them."""

from __future__ import annotations

import json
import pickle
from typing import get_args

import attrs
import pytest
from pyrsistent import PMap

from mellea_ctx import (
    InvalidComponentError,
    Message,
    ModelOutputThunk,
    Part,
    PartKind,
    ToolCall,
    ToolMessage,
)
from mellea_ctx._core.parts import (
    PART_TYPES,
    AudioPart,
    DocumentPart,
    ImagePart,
    OpaquePart,
    RedactedThinkingPart,
    RefusalPart,
    TextPart,
    ThinkingPart,
    assert_never,
    thaw_json,
)
from mellea_ctx._formats.serialize import (
    components_from_json,
    components_to_json,
    part_from_record,
    part_to_record,
)

#: One part of every class, with fields set so that a lost field would show.
EVERY_KIND: tuple[Part, ...] = (
    TextPart("hi", extra={"cache_control": {"type": "ephemeral"}}),
    ImagePart(data="iVBORw0KGgo=", media_type="image/png", width=8, height=6, detail="low"),
    DocumentPart(text="notes", name="notes.txt"),
    AudioPart(data="UklGRg==", format="wav"),
    ThinkingPart("hmm", signature="sig", provider="anthropic"),
    RedactedThinkingPart("EmwKAhgB", provider="anthropic"),
    RefusalPart("I can't help with that."),
    OpaquePart("anthropic", {"type": "compaction", "content": "..."}),
)


class TestParts:
    def test_extra_is_frozen_and_hashable(self) -> None:
        """A part's unmodelled keys are frozen, so the part hashes and compares by value."""
        part = TextPart("hi", extra={"cache_control": {"type": "ephemeral"}})
        assert isinstance(part.extra, PMap)
        assert hash(part) == hash(TextPart("hi", extra={"cache_control": {"type": "ephemeral"}}))
        assert {"cache_control": {"type": "ephemeral"}} == thaw_json(part.extra)

    def test_opaque_part_keeps_the_block_verbatim(self) -> None:
        """An opaque block comes back exactly as given, nested lists included."""
        block = {"type": "web_search_tool_result", "content": [{"url": "u", "n": [1, 2.5]}]}
        assert block == thaw_json(OpaquePart("anthropic", block).block)

    @pytest.mark.parametrize(
        ("build", "message"),
        [
            (lambda: ImagePart(), "ImagePart: needs url=, data="),
            (lambda: ImagePart(url="u", width=0), "ImagePart: width=0 must be a positive int"),
            (lambda: TextPart(3), "TextPart: text=3 must be a str"),
            (lambda: DocumentPart(name=5), "DocumentPart: name=5 must be a str or None"),
            (lambda: TextPart("x", extra={1: 2}), "extra={1: 2} must have str keys"),
            (lambda: TextPart("x", extra={"a": float("nan")}), "is not a JSON value"),
        ],
    )
    def test_bad_values_raise_a_clear_error(self, build: object, message: str) -> None:
        """A bad field raises InvalidComponentError naming the part and the field."""
        with pytest.raises(InvalidComponentError) as info:
            build()  # type: ignore[operator]
        assert message in str(info.value)


class TestComponentsWithParts:
    def test_plain_text_reads_as_before(self) -> None:
        """``Message(role, text)`` holds one text part and is not structured."""
        msg = Message("user", "hi")
        assert (TextPart("hi"),) == msg.parts
        assert "hi" == msg.content
        assert not msg.structured

    def test_content_none_is_no_content(self) -> None:
        """``None`` (OpenAI's null content) is no parts at all, and differs from ``""``."""
        calls = [ToolCall("c1", "ls")]
        assert () == Message("assistant", None, tool_calls=calls).parts
        assert Message("assistant", None, tool_calls=calls) != Message(
            "assistant", "", tool_calls=calls
        )

    def test_images_become_image_parts(self) -> None:
        """The ``images=`` shorthand appends image parts; ``images`` reads them back."""
        msg = Message("user", "look", images=["https://x/a.png", "data:image/png;base64,AAA"])
        assert ImagePart(data="AAA", media_type="image/png") == msg.parts[2]
        assert ("https://x/a.png", "data:image/png;base64,AAA") == msg.images
        assert msg.structured

    def test_thinking_is_not_in_the_text_view(self) -> None:
        """The text view joins text parts only; thinking stays a part."""
        out = ModelOutputThunk(parts=[ThinkingPart("hmm", signature="s"), TextPart("Done.")])
        assert "Done." == out.value == out.content
        assert ThinkingPart("hmm", signature="s") == out.parts[0]

    def test_value_must_match_parts(self) -> None:
        """A thunk given both text and parts refuses a text that differs from them."""
        with pytest.raises(InvalidComponentError, match="differs from the text of parts"):
            ModelOutputThunk("other", parts=[TextPart("Done.")])

    def test_tool_result_error_flag(self) -> None:
        """A tool result carries ``is_error``; it takes part in equality."""
        ok = ToolMessage("x", tool_call_id="c1")
        failed = ToolMessage("x", tool_call_id="c1", is_error=True)
        assert ok != failed
        assert failed.is_error and not ok.is_error

    def test_developer_role(self) -> None:
        """OpenAI's ``developer`` role is a message role."""
        assert "developer" == Message("developer", "Be terse.").role


class TestPartKinds:
    def test_every_class_has_a_distinct_kind_and_part_is_their_union(self) -> None:
        """``kind`` tells the classes apart, and ``Part`` / ``PartKind`` list all of them."""
        kinds = [cls.kind for cls in PART_TYPES]
        assert len(set(kinds)) == len(PART_TYPES)
        assert set(kinds) == set(get_args(PartKind))
        assert set(get_args(Part)) == set(PART_TYPES)
        assert {type(part) for part in EVERY_KIND} == set(PART_TYPES)

    @pytest.mark.parametrize("part", EVERY_KIND, ids=lambda part: part.kind)
    def test_kind_is_a_class_constant_not_a_field(self, part: Part) -> None:
        """``kind`` is in no field, repr, slot or pickle: parts compare and hash as before."""
        assert part.kind == type(part).kind
        assert "kind" not in {field.name for field in attrs.fields(type(part))}
        assert "kind" not in repr(part)
        assert "kind" not in type(part).__slots__
        assert not hasattr(part, "__dict__")  # no per-instance storage
        again = pickle.loads(pickle.dumps(part))
        assert again == part and hash(again) == hash(part)
        with pytest.raises(AttributeError):
            part.kind = "text"  # type: ignore[misc]

    @pytest.mark.parametrize("part", EVERY_KIND, ids=lambda part: part.kind)
    def test_kinds_round_trip_through_records(self, part: Part) -> None:
        """A part's record is tagged with its ``kind`` and reads back into an equal part."""
        record = part_to_record(part)
        assert record["part"] == part.kind
        assert part_from_record(json.loads(json.dumps(record))) == part
        message = Message("user", [part, TextPart("after")])
        assert components_from_json(components_to_json([message])) == [message]

    def test_assert_never_fails_loudly(self) -> None:
        """A value outside ``Part`` reaching an exhaustive dispatch is an error, not a skip."""
        with pytest.raises(AssertionError, match="not a content part: 'oops'"):
            assert_never("oops")  # type: ignore[arg-type]
