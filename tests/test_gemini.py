"""Tests for Gemini contents: reader, writer, validator, and compaction over them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    InvalidContextError,
    Message,
    ModelOutputThunk,
    ToolCall,
    ToolMessage,
    WindowCompactor,
    from_gemini,
    repair_history,
    to_gemini,
    validate_gemini,
)
from mellea_ctx._core.parts import ImagePart, OpaquePart, ThinkingPart
from mellea_ctx._core.tokens import default_counter
from mellea_ctx._formats.notes import provider_keys
from tests._compact_quietly import compact_quietly
from tests.strategies import compactors, llm_summarizers, token_budgets

texts = st.sampled_from(["", "ok", "ls -la /tmp/x_9", "é è ü", "call_7", "{}", "Fix tests/a.py"])
signatures = st.sampled_from(["c2lnMQ==", "Q2lnMg==", "AAAA"])


@st.composite
def user_parts(draw: Any) -> dict[str, Any]:
    """One user part: text, inline data (image or PDF), a file URI, or an opaque part."""
    kind = draw(st.sampled_from(["text", "image", "pdf", "file", "file_bare", "code"]))
    if kind == "text":
        return {"text": draw(texts)}
    if kind == "image":
        return {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    if kind == "pdf":
        return {"inlineData": {"mimeType": "application/pdf", "data": "JVBE"}}
    if kind == "file":
        return {"fileData": {"mimeType": "image/jpeg", "fileUri": "gs://b/cat.jpg"}}
    if kind == "file_bare":
        return {"fileData": {"fileUri": "https://x.test/doc.txt"}}
    return {"executableCode": {"language": "PYTHON", "code": "print(1)"}}


@st.composite
def model_turn(draw: Any, number: list[int], *, ids: bool) -> tuple[dict[str, Any], list[Any]]:
    """A model content (thoughts, text, calls, perhaps text among or after them) and its calls."""
    parts: list[dict[str, Any]] = []
    if draw(st.booleans()):
        parts.append({"text": draw(texts), "thought": True, "thoughtSignature": draw(signatures)})
    if draw(st.booleans()):
        text = {"text": draw(texts)}
        parts.append(
            {**text, "thoughtSignature": draw(signatures)} if draw(st.booleans()) else text
        )
    calls = []
    for index in range(draw(st.integers(0 if parts else 1, 3))):
        number[0] += 1
        call: dict[str, Any] = {"name": draw(st.sampled_from(["ls", "grep"]))}
        if draw(st.booleans()):
            call["args"] = {"path": draw(texts)}
        if ids:
            call["id"] = f"fc-{number[0]}"
        part: dict[str, Any] = {"functionCall": call}
        if index == 0 and draw(st.booleans()):
            part["thoughtSignature"] = draw(signatures)
        parts.append(part)
        calls.append(call)
    if calls and draw(st.integers(0, 3)) == 0:  # a part after the calls: still one model turn
        parts.insert(
            draw(st.integers(len(parts) - len(calls) + 1, len(parts))), {"text": draw(texts)}
        )
    return {"role": "model", "parts": parts}, calls


def _responses(draw: Any, calls: list[dict[str, Any]]) -> dict[str, Any]:
    parts = []
    for call in draw(st.permutations(calls)) if all("id" in c for c in calls) else calls:
        answer: dict[str, Any] = {"name": call["name"], "response": {"result": draw(texts)}}
        if "id" in call:
            answer["id"] = call["id"]
        parts.append({"functionResponse": answer})
    return {"role": "user", "parts": parts}


@st.composite
def histories(draw: Any, *, valid: bool = True) -> dict[str, Any]:
    """A Gemini body: optional systemInstruction, then user turns each with model steps."""
    number = [0]
    contents: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        contents.append(
            {"role": "user", "parts": draw(st.lists(user_parts(), min_size=1, max_size=3))}
        )
        for _ in range(draw(st.integers(0, 3))):
            turn, calls = draw(model_turn(number, ids=draw(st.booleans())))
            contents.append(turn)
            if not calls:
                break  # a text answer ends the model's turn
            if not valid and draw(st.integers(0, 3)) == 0:
                break
            contents.append(_responses(draw, calls))
    body: dict[str, Any] = {"contents": contents}
    if draw(st.booleans()):
        body["systemInstruction"] = {"parts": [{"text": draw(texts)}]}
    return body


def _read(body: dict[str, Any]) -> list[Any]:
    return from_gemini(body["contents"], body.get("systemInstruction"))


class TestRoundTrip:
    """Reading contents then writing them back is the identity."""

    @settings(max_examples=300)
    @given(histories(valid=False))
    def test_identity(self, body: dict[str, Any]) -> None:
        """Every generated body comes back as the same JSON value, signatures included."""
        before = copy.deepcopy(body)
        assert before == to_gemini(_read(body))
        assert before == body

    def test_thoughts_and_signatures(self) -> None:
        """A thought is a ThinkingPart with its signature; a call keeps its own in extra."""
        out = from_gemini(
            [
                {"role": "user", "parts": [{"text": "go"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "plan", "thought": True, "thoughtSignature": "s1"},
                        {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "s2"},
                    ],
                },
            ]
        )
        step = out[1]
        assert [
            ThinkingPart("plan", signature="s1", provider="google", extra={"thought": True})
        ] == list(step.parts)
        assert {"thoughtSignature": "s2"} == provider_keys(step.tool_calls[0].extra)

    def test_pairs_by_name_and_order_without_ids(self) -> None:
        """Responses without ids answer the earliest unanswered call of their name."""
        out = from_gemini(
            [
                {"role": "user", "parts": [{"text": "go"}]},
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "ls"}},
                        {"functionCall": {"name": "grep"}},
                        {"functionCall": {"name": "ls"}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": n, "response": {}}}
                        for n in ("ls", "grep", "ls")
                    ],
                },
            ]
        )
        calls = [c.id for c in out[1].tool_calls]
        assert [calls[0], calls[1], calls[2]] == [c.tool_call_id for c in out[2:]]

    def test_media_and_opaque(self) -> None:
        """Inline images are ImageParts; executable code is an opaque part."""
        out = from_gemini(
            [
                {
                    "role": "user",
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
                        {"executableCode": {"language": "PYTHON", "code": "1"}},
                    ],
                }
            ]
        )
        assert ImagePart(data="iVBO", media_type="image/png") == out[0].parts[0]
        assert isinstance(out[0].parts[1], OpaquePart)

    def test_components_from_elsewhere(self) -> None:
        """Components built by hand are written as Gemini takes them, and validate."""
        body = to_gemini(
            [
                Message("system", "Be brief."),
                Message("user", "List files."),
                ModelOutputThunk(tool_calls=[ToolCall("c1", "ls", {"path": "."})]),
                ToolMessage("a.py", tool_call_id="c1", name="ls"),
                ModelOutputThunk("Done."),
            ]
        )
        assert [] == validate_gemini(body)
        assert {"name": "ls", "id": "c1", "response": {"result": "a.py"}} == (
            body["contents"][2]["parts"][0]["functionResponse"]
        )


class TestReadErrors:
    """Contents the reader cannot place are refused with the content named."""

    @pytest.mark.parametrize(
        ("contents", "fragment"),
        [
            (["hi"], "content 0: 'hi' must be an object"),
            ([{"role": "tool", "parts": []}], "content 0: role='tool' must be 'user' or 'model'"),
            ([{"role": "user", "parts": "x"}], "content 0: parts='x' must be a list"),
            ([{"role": "model", "parts": [{"functionCall": {}}]}], "needs a non-empty 'name'"),
        ],
    )
    def test_refused(self, contents: list[Any], fragment: str) -> None:
        """The error names the content and the field."""
        with pytest.raises(InvalidContextError) as info:
            from_gemini(contents)
        assert fragment in str(info.value)


class TestValidate:
    """validate_gemini follows the documented rules."""

    @settings(max_examples=300)
    @given(histories())
    def test_generated_valid(self, body: dict[str, Any]) -> None:
        """Every valid generated body validates."""
        assert [] == validate_gemini(body)

    @pytest.mark.parametrize(
        ("contents", "expected"),
        [
            ([], ["contents: there must be at least one content"]),
            (
                [{"role": "user", "parts": [{"functionCall": {"name": "ls"}}]}],
                ["content 0 parts[0]: a functionCall belongs in a 'model' content, not 'user'"],
            ),
            (
                [{"role": "user", "parts": [{"text": "a", "inlineData": {}}]}],
                [
                    "content 0 parts[0]: a part holds exactly one of ('text', 'inlineData', "
                    "'fileData', 'functionCall', 'functionResponse', 'executableCode', "
                    "'codeExecutionResult', 'toolCall', 'toolResponse'); this one holds "
                    "['text', 'inlineData']"
                ],
            ),
            (
                [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "ls", "id": "a"}}]},
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "ls", "id": "b", "response": {}}}],
                    },
                ],
                ["content 2: functionResponse 'ls' (id='b') answers no call"],
            ),
            (
                [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [{"text": "hm"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "ls"}}]},
                ],
                ["content 2: a function call turn must come right after a user turn"],
            ),
            (
                [{"role": "user", "parts": []}],
                ["content 0: parts=[] must be a non-empty list"],
            ),
        ],
    )
    def test_problems(self, contents: list[Any], expected: list[str]) -> None:
        """Each broken rule is reported, naming the content."""
        assert expected == validate_gemini(contents)


def _has_contents(components: list[Any]) -> bool:
    """Whether anything is left besides the system instruction (none: the next add starts it)."""
    return any(c.role not in ("system", "developer") for c in components)


class TestCompaction:
    """Every compactor on a history read from Gemini contents gives contents that validate."""

    @settings(max_examples=100)
    @given(histories(), compactors)
    def test_window_and_threshold(self, body: dict[str, Any], compactor: Any) -> None:
        """WindowCompactor and ThresholdCompactor keep calls and responses together."""
        out = compact_quietly(compactor, _read(body))
        assert [] == (validate_gemini(to_gemini(out)) if _has_contents(out) else [])

    def test_cut_after_a_pinned_answer(self) -> None:
        """A cut that leaves calls right after a pinned model answer still validates.

        Found by hypothesis: pinning up to a model answer and keeping only the last
        call put a function call turn after a model turn, which Gemini refuses; the
        writer joins the two model turns.
        """
        call = {"role": "model", "parts": [{"functionCall": {"name": "ls"}}]}
        answer = {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]}
        text = {"role": "user", "parts": [{"text": "go"}]}
        done = {"role": "model", "parts": [{"text": "done"}]}
        history = from_gemini([text, call, answer, done, text, call, answer, call, answer])
        out = compact_quietly(WindowCompactor(size=1, pin_predicate=lambda items: 4), history)
        assert 6 == len(out)
        contents = to_gemini(out)["contents"]
        assert [] == validate_gemini(contents)
        assert [{"text": "done"}, {"functionCall": {"name": "ls"}}] == contents[3]["parts"]

    @settings(max_examples=25)
    @given(histories(), llm_summarizers())
    def test_summarize(self, body: dict[str, Any], summarizer: Any) -> None:
        """LLMSummarizeCompactor (scripted) leaves valid contents."""
        out = compact_quietly(summarizer.compactor, _read(body))
        assert [] == (validate_gemini(to_gemini(out)) if _has_contents(out) else [])

    @settings(max_examples=25)
    @given(st.data())
    def test_token_budget(self, data: st.DataObject) -> None:
        """TokenBudgetCompactor (scripted) leaves valid contents."""
        components = _read(data.draw(histories()))
        total = sum(default_counter().count(c) for c in components)
        summarizer = data.draw(token_budgets(max(total, 1)))
        out = compact_quietly(summarizer.compactor, components)
        assert [] == (validate_gemini(to_gemini(out)) if _has_contents(out) else [])


class TestTokensAndRepair:
    """Token counting and repair know the Gemini parts."""

    def test_thoughts_count(self) -> None:
        """A thought part costs its text's tokens on top of the step's."""
        thought = "Thinking about the files " * 5
        (bare,) = from_gemini([{"role": "model", "parts": [{"text": "ok"}]}])
        (full,) = from_gemini(
            [{"role": "model", "parts": [{"text": thought, "thought": True}, {"text": "ok"}]}]
        )
        counter = default_counter()
        framing = counter.per_message + 1  # the role is one token
        assert framing + counter.count_text("ok") == counter.count(bare)
        assert counter.count(bare) + counter.count_text(thought) == counter.count(full)

    def test_repair_gemini(self) -> None:
        """repair_history(provider="gemini") answers a closed call and validates."""
        history = from_gemini(
            [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "ls", "id": "c1"}}]},
                {"role": "user", "parts": [{"text": "never mind"}]},
            ]
        )
        repaired, changes = repair_history(history, provider="gemini")
        assert 1 == len(changes)
        assert [] == validate_gemini(to_gemini(repaired))
