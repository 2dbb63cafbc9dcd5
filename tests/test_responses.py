"""Tests for the OpenAI Responses API items: reader, writer, validator, and compaction over them."""

from __future__ import annotations

import copy
import json
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
    from_responses,
    repair_history,
    to_responses,
    validate_responses,
)
from mellea_ctx._core.parts import OpaquePart, ThinkingPart
from mellea_ctx._core.tokens import default_counter
from tests._compact_quietly import compact_quietly
from tests.strategies import compactors, llm_summarizers, token_budgets

texts = st.sampled_from(["", "ok", "ls -la /tmp/x_9", "é è ü", "call_7", "{}", "Fix tests/a.py"])
ids = st.text("abcdef0123456789", min_size=1, max_size=6)


@st.composite
def input_parts(draw: Any, *, tool: bool = False) -> dict[str, Any]:
    """One input content part of any documented kind (``detail: null`` only when ``tool``).

    The SDK's ``ResponseInputImageParam.detail`` (a message's or a custom tool output's
    part) is not ``Optional``; ``ResponseInputImageContentParam.detail`` (a
    ``function_call_output``'s part) is.
    """
    kind = draw(st.sampled_from(["text", "image_url", "image_data", "image_file", "file", "data"]))
    if kind == "text":
        return {"type": "input_text", "text": draw(texts)}
    if kind == "image_url":
        part = {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "auto"}
        if draw(st.booleans()):
            return part
        return (
            {**part, "detail": None}
            if tool
            else {"type": "input_image", "image_url": part["image_url"]}
        )
    if kind == "image_data":
        return {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    if kind == "image_file":
        return {"type": "input_image", "file_id": "file-" + draw(ids), "detail": "low"}
    if kind == "file":
        return {"type": "input_file", "file_id": "file-" + draw(ids), "filename": "r.pdf"}
    return {"type": "input_file", "file_data": "data:application/pdf;base64,JVBE", "filename": "a"}


@st.composite
def messages(draw: Any, role: str) -> dict[str, Any]:
    """A user, system or developer message, easy (string) or typed (parts)."""
    if draw(st.booleans()):
        return {"role": role, "content": draw(texts)}
    item = {"type": "message", "role": role, "content": draw(st.lists(input_parts(), max_size=3))}
    # an input message has no "id" (the SDK's EasyInputMessageParam and Message); a status
    return item if draw(st.booleans()) else {**item, "status": "completed"}


@st.composite
def reasoning(draw: Any) -> dict[str, Any]:
    """A reasoning item: id, summary and (usually) encrypted content, verbatim."""
    summary = [{"type": "summary_text", "text": t} for t in draw(st.lists(texts, max_size=2))]
    item: dict[str, Any] = {"type": "reasoning", "id": "rs_" + draw(ids), "summary": summary}
    choice = draw(st.sampled_from(["encrypted", "none", "null", "status"]))
    if choice == "encrypted":
        item["encrypted_content"] = "gAAAA" + draw(ids)
    elif choice == "null":
        item["encrypted_content"] = None
    elif choice == "status":
        item["status"] = "completed"
    return item


@st.composite
def assistant_message(draw: Any) -> dict[str, Any]:
    """An assistant message: output text with annotations, or a refusal; easy or typed."""
    if draw(st.booleans()):
        return {"role": "assistant", "content": draw(texts)}
    parts: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            parts.append({"type": "output_text", "text": draw(texts), "annotations": []})
        else:
            parts.append({"type": "refusal", "refusal": draw(texts)})
    item = {"type": "message", "role": "assistant", "id": "msg_" + draw(ids), "content": parts}
    return {**item, "status": "completed"} if draw(st.booleans()) else item


class _Ids:
    def __init__(self) -> None:
        self.count = 0

    def next(self) -> str:
        self.count += 1
        return f"call_{self.count}"


@st.composite
def steps(draw: Any, ids_: _Ids, *, valid: bool) -> list[dict[str, Any]]:
    """A model step (items, message, calls) and its outputs."""
    if draw(st.integers(0, 9)) == 0:
        return [{"type": "compaction", "id": "cmp_1", "encrypted_content": "enc" + draw(ids)}]
    items = draw(st.lists(reasoning(), max_size=2))
    if draw(st.integers(0, 5)) == 0:
        items.append({"type": "web_search_call", "id": "ws_1", "status": "completed"})
    has_message = draw(st.booleans())
    if has_message:
        items.append(draw(assistant_message()))
    calls = []
    for _ in range(draw(st.integers(0 if has_message else 1, 3))):
        call_id = ids_.next()
        if draw(st.integers(0, 3)) == 0:
            calls.append(
                {
                    "type": "custom_tool_call",
                    "call_id": call_id,
                    "name": "patch",
                    "input": draw(texts),
                }
            )
        else:
            call = {"type": "function_call", "call_id": call_id, "name": "ls", "arguments": "{}"}
            calls.append({**call, "id": "fc_" + call_id, "status": "completed"})
    outputs = []
    for call in draw(st.permutations(calls)):
        kind = call["type"] + "_output"
        if draw(st.booleans()):
            output: Any = draw(texts)
        else:
            nullable = kind == "function_call_output"  # ResponseInputImageContentParam
            output = draw(st.lists(input_parts(tool=nullable), max_size=2))
        outputs.append({"type": kind, "call_id": call["call_id"], "output": output})
    if not valid and draw(st.booleans()):
        outputs = outputs[: draw(st.integers(0, len(outputs)))]
    return items + calls + outputs


@st.composite
def histories(draw: Any, *, valid: bool = True) -> list[dict[str, Any]]:
    """A Responses item list: system/developer, then user turns each with model steps."""
    ids_ = _Ids()
    items: list[dict[str, Any]] = []
    if draw(st.booleans()):
        items.append(draw(messages(draw(st.sampled_from(["system", "developer"])))))
    for _ in range(draw(st.integers(1, 3))):
        items.append(draw(messages("user")))
        for _ in range(draw(st.integers(0, 3))):
            items += draw(steps(ids_, valid=valid))
    return items


class TestRoundTrip:
    """Reading items then writing them back is the identity."""

    @settings(max_examples=300)
    @given(histories(valid=False))
    def test_identity(self, items: list[dict[str, Any]]) -> None:
        """Every generated item list, valid or not, comes back as the same JSON value."""
        before = copy.deepcopy(items)
        assert before == to_responses(from_responses(items))
        assert before == items

    def test_unknown_items_and_parts_are_opaque(self) -> None:
        """An item type and a content part we do not model come back verbatim.

        A content part of a type the Responses API does not define (Chat's
        ``input_audio``) is not sent: the API refuses it, and ``lost=`` says so.
        """
        lost: list[str] = []
        alien = [{"role": "user", "content": [{"type": "input_audio", "x": 1}]}]
        assert [{"role": "user", "content": []}] == to_responses(from_responses(alien), lost=lost)
        assert ["component 0: an opaque openai block of type 'input_audio'"] == lost
        items = [
            {"type": "message", "role": "user", "content": [{"type": "input_file", "file_id": 5}]},
            {"type": "mcp_call", "id": "mcp_1", "name": "q", "server_label": "s"},
            {"type": "item_reference", "id": "msg_9"},
        ]
        components = from_responses(items)
        assert isinstance(components[0].parts[0], OpaquePart)
        assert isinstance(components[1].parts[0], OpaquePart)
        assert items == to_responses(components)

    def test_reasoning_stays_with_its_calls(self) -> None:
        """A reasoning item and the calls after it are one component, signature kept."""
        items = [
            {"role": "user", "content": "go"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "b"},
            {"type": "function_call_output", "call_id": "c1", "output": "a"},
        ]
        step = from_responses(items)[1]
        assert isinstance(step, ModelOutputThunk)
        assert [
            ThinkingPart(
                "", signature="gAAA", provider="openai", extra={"id": "rs_1", "summary": []}
            )
        ] == list(step.parts)
        assert ["c1", "c2"] == [call.id for call in step.tool_calls]

    def test_components_from_elsewhere(self) -> None:
        """Components built by hand are written as the API takes them, and validate."""
        items = to_responses(
            [
                Message("system", "Be brief."),
                Message("user", "List files."),
                ModelOutputThunk(tool_calls=[ToolCall("c1", "ls", {"path": "."})]),
                ToolMessage("a.py", tool_call_id="c1"),
                ModelOutputThunk("Done."),
            ]
        )
        assert [] == validate_responses(items)
        assert {"role": "assistant", "content": "Done."} == items[-1]


class TestReadErrors:
    """Items the reader cannot place are refused with the item named."""

    @pytest.mark.parametrize(
        ("item", "fragment"),
        [
            ("hi", "item 0: 'hi' must be an object"),
            ({"role": "tool", "content": "x"}, "item 0: Message: role='tool'"),
            ({"role": "user", "content": 3}, "item 0: content=3 must be a string or a list"),
            (
                {"type": "function_call", "call_id": "", "name": "ls", "arguments": "{}"},
                "call_id=''",
            ),
            ({"type": "function_call_output", "call_id": "c1"}, "has no 'output'"),
            ({"role": "user", "content": ["x"]}, "item 0 content[0]: 'x' must be an object"),
        ],
    )
    def test_refused(self, item: Any, fragment: str) -> None:
        """The error names the item and the field."""
        with pytest.raises(InvalidContextError) as info:
            from_responses([item])
        assert fragment in str(info.value)


class TestValidate:
    """validate_responses follows the documented rules."""

    @settings(max_examples=300)
    @given(histories())
    def test_generated_valid(self, items: list[dict[str, Any]]) -> None:
        """Every valid generated history validates."""
        assert [] == validate_responses(items)

    @pytest.mark.parametrize(
        ("items", "expected"),
        [
            (
                [{"type": "function_call_output", "call_id": "c9", "output": "x"}],
                ["item 0: function_call_output call_id='c9' answers no earlier function_call"],
            ),
            (
                [
                    {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
                    {"role": "user", "content": "next"},
                ],
                [
                    "item 0: function_call call_id='c1' has no function_call_output; only a call "
                    "in the last model step may wait for its output"
                ],
            ),
            (
                [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {"role": "user", "content": "next"},
                ],
                [
                    "item 0: reasoning item 'rs_1' is not followed by the output it preceded (an "
                    "assistant message or a call); keep them together"
                ],
            ),
            (
                [{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}],
                [
                    "item 0 content[0]: part type 'input_text' is not allowed for role "
                    "'assistant'; use one of ['output_text', 'refusal']"
                ],
            ),
            (
                [{"type": "compaction", "id": "cmp"}],
                ["item 0: a compaction item needs its 'encrypted_content', verbatim"],
            ),
            (
                [{"type": "reasoning", "summary": "no"}, {"role": "assistant", "content": ""}],
                [
                    "item 0: a reasoning item needs its 'id' (sent back as the model gave it)",
                    "item 0: reasoning summary must be a list of summary_text parts",
                ],
            ),
            (
                [
                    {"type": "custom_tool_call", "call_id": "c1", "name": "p", "input": "x"},
                    {"type": "function_call_output", "call_id": "c1", "output": "x"},
                ],
                ["item 1: function_call_output call_id='c1' answers no earlier function_call"],
            ),
            (
                [{"type": "input_image_oops"}, {"role": "robot", "content": ""}],
                [
                    "item 0: item type 'input_image_oops' is not one the Responses API documents",
                    "item 1: message role='robot' must be one of ('user', 'assistant', 'system', "
                    "'developer')",
                ],
            ),
        ],
    )
    def test_problems(self, items: list[dict[str, Any]], expected: list[str]) -> None:
        """Each broken rule is reported once, naming the item."""
        assert expected == validate_responses(items)

    def test_pending_call_at_end(self) -> None:
        """A call may wait for its output at the very end."""
        items = [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        ]
        assert [] == validate_responses(items)


class TestCompaction:
    """Every compactor on a history read from Responses items gives items that validate."""

    @settings(max_examples=100)
    @given(histories(), compactors)
    def test_window_and_threshold(self, items: list[dict[str, Any]], compactor: Any) -> None:
        """WindowCompactor and ThresholdCompactor keep calls, outputs and reasoning together."""
        out = compact_quietly(compactor, from_responses(items))
        assert [] == validate_responses(to_responses(out))

    @settings(max_examples=25)
    @given(histories(), llm_summarizers())
    def test_summarize(self, items: list[dict[str, Any]], summarizer: Any) -> None:
        """LLMSummarizeCompactor (scripted) leaves a valid item list."""
        out = compact_quietly(summarizer.compactor, from_responses(items))
        assert [] == validate_responses(to_responses(out))

    @settings(max_examples=25)
    @given(st.data())
    def test_token_budget(self, data: st.DataObject) -> None:
        """TokenBudgetCompactor (scripted) leaves a valid item list."""
        items = data.draw(histories())
        components = from_responses(items)
        total = sum(default_counter().count(c) for c in components)
        summarizer = data.draw(token_budgets(max(total, 1)))
        out = compact_quietly(summarizer.compactor, components)
        assert [] == validate_responses(to_responses(out))


class TestTokensAndRepair:
    """Token counting and repair know the Responses parts."""

    @pytest.mark.parametrize(("summary", "encrypted"), [("ok", "x"), ("Thinking " * 5, "x" * 200)])
    def test_reasoning_and_opaque_items_count(self, summary: str, encrypted: str) -> None:
        """A reasoning item costs its summary's tokens, an opaque item its JSON's."""
        compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": encrypted}
        reasoning = {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": summary}],
        }
        (step,) = from_responses([reasoning, compaction])
        counter = default_counter()
        framing = counter.per_message + 1  # the role is one token
        item = json.dumps(compaction, ensure_ascii=False)
        expected = framing + counter.count_text(summary) + counter.count_text(item)
        assert expected == counter.count(step)

    def test_repair_responses(self) -> None:
        """repair_history(provider="responses") answers a closed call and drops an orphan."""
        history = from_responses(
            [
                {"role": "user", "content": "go"},
                {"type": "function_call_output", "call_id": "c0", "output": "stale"},
                {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
                {"role": "user", "content": "never mind"},
            ]
        )
        repaired, changes = repair_history(history, provider="responses")
        assert 2 == len(changes)
        assert [] == validate_responses(to_responses(repaired))
