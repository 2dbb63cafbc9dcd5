"""Hypothesis strategies for wire documents that use every block type each provider documents.

``anthropic_documents()`` builds Messages API transcripts (``system`` plus
turns) and ``openai_messages()`` Chat Completions message lists. Both are
valid for their provider (tool results answer the calls right before them,
no blank text), so reading then writing them must give the same JSON back.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from hypothesis import strategies as st

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10)
texts = words.filter(lambda t: bool(t.strip()))
b64 = st.sampled_from(["iVBORw0KGgo=", "JVBERi0xLjQ=", "UklGRg=="])
cache = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | words,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(words, inner, max_size=2),
    max_leaves=4,
)


# -- Anthropic -----------------------------------------------------------------


@st.composite
def _a_text(draw: Any) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": draw(texts), **draw(cache)}
    if draw(st.booleans()):
        block["citations"] = [{"type": "char_location", "cited_text": draw(words)}]
    return block


@st.composite
def _a_image(draw: Any) -> dict[str, Any]:
    source = draw(
        st.sampled_from(
            [
                {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                {"type": "url", "url": "https://example.com/a.png"},
                {"type": "file", "file_id": "file_011"},
            ]
        )
    )
    return {"type": "image", "source": source, **draw(cache)}


@st.composite
def _a_document(draw: Any) -> dict[str, Any]:
    source = draw(
        st.sampled_from(
            [
                {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
                {"type": "text", "media_type": "text/plain", "data": "The grass is green."},
                {"type": "url", "url": "https://example.com/a.pdf"},
                {"type": "file", "file_id": "file_012"},
                {"type": "content", "content": [{"type": "text", "text": "chunk"}]},
            ]
        )
    )
    block: dict[str, Any] = {"type": "document", "source": source, **draw(cache)}
    if draw(st.booleans()):
        block["title"] = draw(texts)
    if draw(st.booleans()):
        block["context"] = draw(words)
        block["citations"] = {"enabled": True}
    return block


_A_OPAQUE = st.sampled_from(
    [
        {"type": "search_result", "source": "https://x.test", "title": "T", "content": []},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "compaction", "content": "Summary of earlier turns."},
        {"type": "container_upload", "file_id": "file_9"},
    ]
)


def _a_thinking() -> Any:
    thinking = st.builds(
        lambda text, sig: {"type": "thinking", "thinking": text, "signature": sig},
        words,
        st.sampled_from(["EqQBCkgIARABGAIiQL", "[REDACTED_SIGNATURE]"]),
    )
    redacted = st.builds(lambda data: {"type": "redacted_thinking", "data": data}, b64)
    return thinking | redacted


def _a_user_block() -> Any:
    return _a_text() | _a_image() | _a_document() | _A_OPAQUE


@st.composite
def _a_result(draw: Any, call_id: str) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    content = draw(
        st.none() | words | st.lists(_a_text() | _a_image() | _a_document() | _A_OPAQUE, max_size=3)
    )
    if content is not None:
        block["content"] = content
    flag = draw(st.sampled_from([None, True, False]))
    if flag is not None:
        block["is_error"] = flag
    block.update(draw(cache))
    return block


@st.composite
def anthropic_documents(draw: Any) -> Any:
    """A Messages API transcript using every documented block type, valid as sent."""
    ids = count()
    turns: list[dict[str, Any]] = []
    pending: list[str] = []
    for index in range(draw(st.integers(1, 7))):
        if index % 2 == 0:
            results = [draw(_a_result(call_id)) for call_id in pending]
            pending = []
            others = draw(st.lists(_a_user_block(), min_size=0 if results else 1, max_size=3))
            if (
                not results
                and len(others) == 1
                and others[0]["type"] == "text"
                and draw(st.booleans())
            ):
                turns.append({"role": "user", "content": others[0]["text"]})
            else:
                turns.append({"role": "user", "content": results + others})
            if not results and draw(st.integers(0, 4)) == 0:  # a second user turn in a row
                turns.append({"role": "user", "content": draw(texts)})
            continue
        blocks = draw(st.lists(_a_thinking(), max_size=1))
        blocks += draw(st.lists(_a_text() | _A_OPAQUE, max_size=2))
        for _ in range(draw(st.integers(0 if blocks else 1, 3))):
            call_id = f"toolu_{next(ids)}"
            pending.append(call_id)
            use = {"type": "tool_use", "id": call_id, "name": "ls"}
            use["input"] = draw(st.dictionaries(words, json_values, max_size=2))
            blocks.append({**use, **draw(cache)})
        if draw(st.integers(0, 5)) == 0 and blocks[-1]["type"] == "tool_use":
            blocks.append(draw(_a_text()))  # text after a tool_use
        turns.append({"role": "assistant", "content": blocks})
    system = draw(st.none() | texts | st.lists(_a_text(), min_size=1, max_size=2))
    if system is None:
        return turns
    return {"system": system, "messages": turns}


# -- OpenAI Chat Completions ----------------------------------------------------


def _o_part(role: str) -> Any:
    text = st.builds(lambda t: {"type": "text", "text": t}, words)
    if role in ("system", "developer", "tool"):
        return text
    if role == "assistant":
        return text | st.builds(lambda t: {"type": "refusal", "refusal": t}, words)
    image = st.builds(
        lambda url, detail: {"type": "image_url", "image_url": {"url": url, **detail}},
        st.sampled_from(["https://x.test/a.png", "data:image/png;base64,iVBORw0KGgo="]),
        st.sampled_from([{}, {"detail": "low"}, {"detail": "high"}]),
    )
    audio = st.builds(
        lambda fmt: {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": fmt}},
        st.sampled_from(["wav", "mp3"]),
    )
    file = st.sampled_from(
        [
            {"type": "file", "file": {"file_id": "file-abc"}},
            {
                "type": "file",
                "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
            },
        ]
    )
    unknown = st.just({"type": "input_video", "video_url": {"url": "https://x.test/v.mp4"}})
    return text | image | audio | file | unknown


@st.composite
def _o_content(draw: Any, role: str) -> Any:
    if draw(st.booleans()):
        return draw(words)
    return draw(st.lists(_o_part(role), min_size=1, max_size=3))


_EXTRA_KEYS = st.dictionaries(st.sampled_from(["x_trace", "metadata"]), json_values, max_size=1)


@st.composite
def openai_messages(draw: Any) -> list[dict[str, Any]]:
    """A Chat Completions ``messages`` list using every documented part and key."""
    ids = count()
    out: list[dict[str, Any]] = []
    for role in draw(st.sampled_from([["system"], ["developer"], []])):
        out.append({"role": role, "content": draw(_o_content(role))})
    for _ in range(draw(st.integers(1, 4))):
        user: dict[str, Any] = {"role": "user", "content": draw(_o_content("user"))}
        if draw(st.booleans()):
            user["name"] = "alice"
        out.append(user)
        calls = [
            {
                "id": f"call_{next(ids)}",
                "type": "function",
                "function": {"name": "ls", "arguments": draw(st.sampled_from(["{}", '{"a": 1}']))},
                **draw(st.sampled_from([{}, {"index": 0}])),
            }
            for _ in range(draw(st.integers(0, 2)))
        ]
        assistant: dict[str, Any] = {"role": "assistant"}
        if calls:
            assistant["tool_calls"] = calls
            content = draw(st.none() | _o_content("assistant") | st.just("absent"))
        else:
            content = draw(_o_content("assistant"))
        if content != "absent":
            assistant["content"] = content
        for key in ("reasoning_content", "refusal"):
            value = draw(st.sampled_from(["absent", None, "Thinking it through."]))
            if value != "absent":
                assistant[key] = value
        if draw(st.booleans()):
            assistant["audio"] = {"id": "audio_1"}
        assistant.update(draw(_EXTRA_KEYS))
        out.append(assistant)
        for call in calls:
            result = {"role": "tool", "tool_call_id": call["id"]}
            result["content"] = draw(_o_content("tool"))
            out.append(result)
    return out
