"""Compaction as a tool: the model decides when to compact, and reads back what it needs.

Give ``react`` a compactor and the model is offered two more tools:
``compact_context(focus=...)`` (compact before my next step, keeping what
``focus`` names) and ``recall`` (read back, word for word, what a checkpoint
replaced). Here the threshold is far above anything this run reaches, so the
history is compacted only because the model asks.

An on-call agent investigates a failed nightly export: it reads a long job
log and the runbook, asks to compact, then recalls the exact log lines it
needs for its answer. The model is a stand-in written below (``ScriptedBackend``
playing the choices a model makes, so this runs offline and deterministically);
the summary is written by ``ExtractiveBackend``. With a real model, pass
``OpenAIBackend("gpt-4o-mini")`` (or ``OpenAIBackend(model, base_url=...)`` for a
local server) as the backend: it sees the same two tools, described so that
it knows when to call them. Run it:

    python examples/04_compaction_tool.py
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    Component,
    Event,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    Message,
    ModelOutputThunk,
    ScriptedBackend,
    ThresholdCompactor,
    ToolCall,
    ToolMessage,
    pin_react_initiator,
    react,
    tool,
)

JOB_LOG = "\n".join(
    [
        "2026-11-30T02:00:04Z INFO  billing-export: run 8812 started, 14 partitions",
        *(
            f"2026-11-30T02:0{i // 2}:{10 + i * 3}Z INFO  wrote part-{i:04d}.parquet "
            f"({41 + i * 3} MB) to s3://acme-billing-exports/2026-11-30/"
            for i in range(7)
        ),
        "2026-11-30T02:04:51Z ERROR upload part-0007.parquet: AccessDenied (403) on "
        "s3://acme-billing-exports/2026-11-30/part-0007.parquet, role billing-export-writer",
        "2026-11-30T02:04:52Z ERROR run 8812 failed after 7 of 14 partitions; exit code 17",
    ]
)

RUNBOOK = """Runbook: S3 AccessDenied in batch jobs.
1. Check whether the bucket policy changed: aws s3api get-bucket-policy --bucket NAME.
2. Check the role's session: long runs outlive 1-hour role sessions; set
   DurationSeconds=14400 on the job's AssumeRole call.
3. Re-run only the missing partitions with --resume-from PART, never the whole run."""


@tool
def read_job_log(job: str) -> str:
    """Return the last run's log of a scheduled job.

    Args:
        job: The job's name, such as billing-export.
    """
    return JOB_LOG


@tool
def read_runbook(error: str) -> str:
    """Return the team runbook for an error.

    Args:
        error: The error's name, such as AccessDenied.
    """
    return RUNBOOK


call_ids = itertools.count(1)


def call(name: str, arguments: dict[str, Any], text: str) -> ModelOutputThunk:
    return ModelOutputThunk(text, tool_calls=[ToolCall(f"call_{next(call_ids)}", name, arguments)])


def on_call_agent(messages: Sequence[Component], options: Mapping[str, Any]) -> ModelOutputThunk:
    """A stand-in for a tool-calling model: the next step a model would choose here."""
    results = {m.name: m.content for m in messages if isinstance(m, ToolMessage)}
    if not any(isinstance(m, Checkpoint) for m in messages):
        if "read_job_log" not in results:
            return call("read_job_log", {"job": "billing-export"}, "Reading the job log.")
        if "read_runbook" not in results:
            return call("read_runbook", {"error": "AccessDenied"}, "Checking the runbook.")
        focus = "the failing partition, the S3 key and the exit code"
        return call("compact_context", {"focus": focus}, "Long logs; compacting first.")
    if "recall" not in results:
        return call("recall", {"count": 2}, "I need the exact log lines, not a summary.")
    errors = [line for line in results["recall"].splitlines() if " ERROR " in line]
    answer = "Run 8812 failed on an expired role session:\n" + "\n".join(errors)
    return ModelOutputThunk(answer + "\nFix: DurationSeconds=14400, then --resume-from 7.")


def main() -> None:
    summarize = LLMSummarizeCompactor(
        default_backend=ExtractiveBackend(), keep_n=2, pin_predicate=pin_react_initiator
    )
    compactor = ThresholdCompactor(summarize, threshold=100_000)  # never reached: the model asks
    events: list[Event] = []
    ctx = ChatContext().add(Message("system", "You are the on-call agent for the data platform."))
    result = react(
        "Why did last night's billing-export job fail, and how do we fix it?",
        ctx,
        ScriptedBackend(on_call_agent),
        tools=[read_job_log, read_runbook],
        compactor=compactor,
        on_event=events.append,
    )
    for event in events:
        if event.kind == "tool_called":
            print(f"turn {event.turn}: the model called {event.tool} ({event.tokens} tokens)")
        elif event.kind == "compaction_applied" and event.record is not None:
            record = event.record
            print(f"turn {event.turn}: compacted, {record.tokens_before} -> {record.tokens_after}")
    print(f"\nanswer after {result.turns} turns:\n{result.answer}")

    kinds = [e.kind for e in events]
    assert kinds.index("compaction_started") < kinds.index("compaction_applied")
    assert any(isinstance(c, Checkpoint) for c in result.ctx)  # the log is summarized...
    assert "AccessDenied (403) on s3://acme-billing-exports/2026-11-30/part-0007.parquet" in (
        result.answer or ""
    )  # ...and recall brought the exact line back


if __name__ == "__main__":
    main()
