"""Summarizing compaction against a real small model (Qwen2.5-Coder 1.5B, Q4_K_M) on loopback.

What a 1.5B model can honestly do: write a non-empty summary that makes the
context smaller, without breaking tool pairs; planted exact details survive,
through the model or through the checkpoint's verbatim appendix. The calls
are few: on two shared cores the model writes some 5 to 13 tokens a second.
"""

from __future__ import annotations

import time

import pytest

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    CompactionRecord,
    LLMSummarizeCompactor,
    Message,
    OpenAIBackend,
    TokenBudgetCompactor,
    ToolCall,
    ToolMessage,
    validate_openai,
)

pytestmark = pytest.mark.llm

PLANTED = {
    "path": "src/billing/invoice_renderer.py",
    "id": "INV-58213",
    "number": "37.5 ms",
    "command": "pytest tests/test_invoice.py -k rounding",
    "constraint": "Never change the public signature of InvoiceRenderer.render.",
}


def conversation() -> ChatContext:
    """About 500 tokens of a coding-agent session with the details planted in it."""
    code = "\n".join(f"    line_{i} = round(total * rate_{i}, 2)" for i in range(18))
    parts = [
        Message("system", "You are a careful coding agent working on a billing service."),
        Message(
            "user",
            f"Invoice {PLANTED['id']} shows a rounding error of one cent. "
            f"{PLANTED['constraint']} Please find and fix the cause.",
        ),
        Message(
            "assistant",
            f"I'll start with {PLANTED['path']}.",
            tool_calls=[ToolCall("c1", "read_file", {"path": PLANTED["path"]})],
        ),
        ToolMessage(f"def render(total, rates):\n{code}\n    return lines", tool_call_id="c1"),
        Message(
            "assistant",
            "Each line is rounded before summing, so rounding errors add up. "
            f"Rendering also takes {PLANTED['number']} per invoice because of repeated rounding.",
        ),
        Message("user", "Good find. Fix it by rounding once at the end, then run the tests."),
        Message(
            "assistant",
            "Changed the renderer to sum unrounded values and round once.",
            tool_calls=[ToolCall("c2", "bash", {"command": PLANTED["command"]})],
        ),
        ToolMessage("collected 12 items\n\n12 passed in 0.41s", tool_call_id="c2"),
        Message("assistant", "All 12 rounding tests pass with the fix."),
        Message("user", "Great. Now also check the tax module for the same problem."),
        Message("assistant", "Looking at the tax module next."),
    ]
    ctx = ChatContext()
    for part in parts:
        ctx = ctx.add(part)
    return ctx


def test_summarize_with_a_real_model(
    llama_server: str, llama_model_name: str, llm_report: dict[str, str]
) -> None:
    """A real model's checkpoint shrinks the context and every planted detail survives."""
    records: list[CompactionRecord] = []
    compactor = LLMSummarizeCompactor(
        default_backend=OpenAIBackend(llama_model_name, base_url=llama_server, timeout=300),
        keep_n=2,
        model_options={"max_tokens": 220, "temperature": 0},
        timeout=400,
        on_record=records.append,
    )
    ctx = conversation()
    started = time.perf_counter()
    result = compactor.compact(
        ctx,
    )
    elapsed = time.perf_counter() - started
    record = records[-1]
    llm_report["summary"] = (
        f"{elapsed:.1f} s; {ctx.token_count} -> {result.token_count} tokens; "
        f"{len(record.facts_checked)} details checked, "
        f"{len(record.facts_carried)} carried by the appendix"
    )
    assert record.outcome == "applied", record
    checkpoint = result[1]
    assert isinstance(checkpoint, Checkpoint) and checkpoint.summary.strip()
    llm_report["checkpoint"] = repr(checkpoint.content[:600])
    assert result.token_count < ctx.token_count
    assert validate_openai(result.as_list()) == []
    visible = "\n".join(c.content for c in result)
    kept_by_model = [k for k, v in PLANTED.items() if v in checkpoint.summary]
    llm_report["details kept by the model itself"] = ", ".join(kept_by_model) or "none"
    for kind, detail in PLANTED.items():
        assert detail in visible, f"{kind} {detail!r} was lost"


def test_budget_compaction_inline_with_a_real_model(
    llama_server: str, llama_model_name: str
) -> None:
    """A token budget riding in the context compacts once and lands under its target."""
    backend = OpenAIBackend(llama_model_name, base_url=llama_server, timeout=300)
    compactor = TokenBudgetCompactor(
        max_tokens=420,
        target_tokens=360,
        keep_recent_tokens=100,
        summary_tokens=150,
        default_backend=backend,
        model_options={"temperature": 0},
        timeout=400,
    )
    ctx = ChatContext(compactor=compactor)
    for component in conversation():
        ctx = ctx.add(component)
    assert any(isinstance(c, Checkpoint) for c in ctx)
    assert ctx.token_count <= 420
    assert validate_openai(ctx.as_list()) == []
