"""Every compactor's result, written for Gemini or the Responses API, is a request they accept.

The oracles are not ours: google-genai's pydantic ``types.Content`` (extra keys
forbidden) and openai's ``ResponseInputParam`` TypedDicts read strictly
(``tests/sdk_strict.py``), plus each provider's documented rules
(:func:`validate_gemini`, :func:`validate_responses`). The histories come from
every reader: Gemini contents (calls followed by text), Responses items, Anthropic
turns (typed parts, ``cache_control`` marks, citations, thinking, server tools)
and Chat messages (tool-call ``index``), so other providers' keys meet each writer.
Read-then-write is the identity on the fixtures in these formats and the corpus
files written in them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mellea_ctx import (
    ClearToolResultsCompactor,
    Component,
    from_anthropic,
    from_gemini,
    from_openai,
    from_responses,
    to_gemini,
    to_responses,
    validate_gemini,
    validate_responses,
)
from mellea_ctx._core.tokens import default_counter
from mellea_ctx._formats import transcripts as wire_files
from tests import test_gemini, test_responses
from tests._compact_quietly import compact_quietly
from tests.formats.wire import anthropic_documents, openai_messages
from tests.sdk_strict import gemini_problems, responses_input_problems
from tests.strategies import compactors, llm_summarizers, token_budgets
from tests.test_cli_wire_formats import GEMINI_BODY, RESPONSES_BODY
from tests.test_tiers import new_compactors

from .helpers import CORPUS


def _gemini(body: dict[str, Any]) -> list[Component]:
    return from_gemini(body["contents"], body.get("systemInstruction"))


def _anthropic(document: Any) -> list[Component]:
    if isinstance(document, dict):
        return from_anthropic(document["messages"], system=document.get("system"))
    return from_anthropic(document)


#: A history from any reader, so every provider's keys and parts reach both writers.
histories = st.one_of(
    test_gemini.histories().map(_gemini),
    test_responses.histories().map(from_responses),
    anthropic_documents().map(_anthropic),
    openai_messages().map(from_openai),
)
#: Window, threshold, clear-results, superseded-results, tiered and (scripted) summarize.
every_compactor = st.one_of(
    compactors,
    st.builds(
        ClearToolResultsCompactor,
        keep_last=st.integers(0, 2),
        min_clear_tokens=st.just(0),
    ),
    new_compactors,
    llm_summarizers().map(lambda summarizer: summarizer.compactor),
)


def _sendable(components: list[Component]) -> bool:
    """Whether anything is left to send besides system text (a request needs one turn)."""
    return any(c.role not in ("system", "developer") for c in components)


def check_gemini(components: list[Component]) -> None:
    """The Gemini body passes google-genai's types and Gemini's rules."""
    lost: list[str] = []
    body = to_gemini(components, lost=lost)
    if not body["contents"]:
        return
    assert [] == gemini_problems(body)
    assert [] == validate_gemini(body)


def check_responses(components: list[Component]) -> None:
    """The Responses input passes openai's TypedDicts and the API's rules."""
    lost: list[str] = []
    items = to_responses(components, lost=lost)
    assert [] == responses_input_problems(items)
    assert [] == validate_responses(items)


class TestEveryCompactorEveryWriter:
    """The "Done when" property of issue 22, for Gemini and the Responses API."""

    @settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
    @given(histories)
    def test_histories_as_read(self, components: list[Component]) -> None:
        """Every history, as read, is written as a request both APIs accept."""
        if _sendable(components):
            check_gemini(components)
            check_responses(components)

    @settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
    @given(histories, every_compactor)
    def test_after_compaction(self, components: list[Component], compactor: Any) -> None:
        """Every compactor's result is written as a request both APIs accept."""
        out = compact_quietly(compactor, components)
        if _sendable(out):
            check_gemini(out)
            check_responses(out)

    @settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def test_after_a_token_budget(self, data: st.DataObject) -> None:
        """TokenBudgetCompactor (scripted summaries) too."""
        components = data.draw(histories)
        total = sum(default_counter().count(c) for c in components)
        out = compact_quietly(data.draw(token_budgets(max(total, 1))).compactor, components)
        if _sendable(out):
            check_gemini(out)
            check_responses(out)


class TestReadThenWrite:
    """Lossless (DESIGN invariant 12): a file in these formats comes back as the same JSON."""

    @pytest.mark.parametrize(
        ("fmt", "data"), [("gemini", GEMINI_BODY), ("responses", RESPONSES_BODY)]
    )
    def test_the_fixtures(self, fmt: Any, data: dict[str, Any]) -> None:
        """The command line's fixtures, and their bare lists, come back as they were."""
        for value in (data, data["contents"] if fmt == "gemini" else data["input"]):
            before = copy.deepcopy(value)
            components, _, body = wire_files.parse(value, fmt, "f.json")
            assert before == wire_files.wire_document(components, fmt, body)

    @pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the transcript corpus is not at {CORPUS}")
    @pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.json")))
    def test_the_corpus_in_these_formats(self, name: str) -> None:
        """Each corpus transcript, written as Gemini contents and Responses items, is a valid
        request, and reading that back then writing it again gives the same JSON."""
        data = json.loads((CORPUS / name).read_text())
        components = _anthropic(data) if ".anthropic." in name else from_openai(data)
        body = to_gemini(components, lost=[])
        assert [] == gemini_problems(body)
        assert [] == validate_gemini(body)
        assert body == to_gemini(_gemini(copy.deepcopy(body)))
        items = to_responses(components, lost=[])
        assert [] == responses_input_problems(items)
        assert [] == validate_responses(items)
        assert items == to_responses(from_responses(copy.deepcopy(items)))


def _aliases(model: Any) -> frozenset[str]:
    from pydantic.alias_generators import to_camel

    return frozenset(field.alias or to_camel(name) for name, field in model.model_fields.items())


def _typed_keys(*kinds: Any) -> frozenset[str]:
    return frozenset(key for kind in kinds for key in kind.__annotations__)


class TestFieldListsAreTheSdks:
    """The field lists the writers and validators use are the official SDKs' own."""

    def test_gemini(self) -> None:
        """`CONTENT_FIELDS`, `PART_FIELDS`, `INNER_FIELDS` are google-genai's JSON names."""
        from google.genai import types

        from mellea_ctx._formats import gemini

        assert _aliases(types.Content) == gemini.CONTENT_FIELDS
        assert _aliases(types.Part) == gemini.PART_FIELDS
        inner = {
            "functionCall": types.FunctionCall,
            "functionResponse": types.FunctionResponse,
            "inlineData": types.Blob,
            "fileData": types.FileData,
            "executableCode": types.ExecutableCode,
            "codeExecutionResult": types.CodeExecutionResult,
        }
        assert {key: _aliases(model) for key, model in inner.items()} == gemini.INNER_FIELDS

    def test_responses(self) -> None:
        """`ITEM_FIELDS` and `PART_FIELDS` are the keys of openai's input TypedDicts."""
        from openai.types import responses as r
        from openai.types.responses import response_input_item_param as item

        from mellea_ctx._formats import responses

        assert {
            "message": _typed_keys(r.EasyInputMessageParam, item.Message),
            "output_message": _typed_keys(r.ResponseOutputMessageParam),
            "function_call": _typed_keys(r.ResponseFunctionToolCallParam),
            "function_call_output": _typed_keys(item.FunctionCallOutput),
            "custom_tool_call": _typed_keys(r.ResponseCustomToolCallParam),
            "custom_tool_call_output": _typed_keys(r.ResponseCustomToolCallOutputParam),
            "reasoning": _typed_keys(r.ResponseReasoningItemParam),
            "compaction": _typed_keys(r.ResponseCompactionItemParamParam),
        } == responses.ITEM_FIELDS
        assert {
            "input_text": _typed_keys(r.ResponseInputTextParam, r.ResponseInputTextContentParam),
            "input_image": _typed_keys(r.ResponseInputImageParam, r.ResponseInputImageContentParam),
            "input_file": _typed_keys(r.ResponseInputFileParam, r.ResponseInputFileContentParam),
            "output_text": _typed_keys(r.ResponseOutputTextParam),
            "refusal": _typed_keys(r.ResponseOutputRefusalParam),
        } == responses.PART_FIELDS
