"""Workload: agent sessions resampled from real transcripts, and generated ones.

Shared by the cases: ``trim`` and ``billing`` draw sessions from the corpus'
pools, ``counting``, ``latency`` and ``resources`` generate short ones.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mellea_ctx import Component, Message, ToolCall, ToolMessage

BENCHMARKS_DIR = Path(__file__).resolve().parent.parent
CORPUS_DIR = Path(os.environ.get("MELLEA_CTX_CORPUS", "/work/shared/corpus"))
SAMPLE = BENCHMARKS_DIR.parent / "mellea_ctx" / "data" / "sample_conversation.json"

#: A user message joins the session every this many model steps.
USER_EVERY = 25
#: What every scripted summarizer of the suite returns (cases ``trim`` and ``latency``).
SUMMARY_TEXT = "Earlier steps: the agent read files, ran commands and fixed what failed."


@dataclass(frozen=True)
class Pools:
    """Messages of real agent runs to draw a synthetic session from.

    Args:
        source: Which files the pools come from.
        system: The system prompt of the session.
        task: The first user message (the task).
        assistant_texts: Text of assistant messages that call tools (``""`` when null).
        calls: ``(name, arguments)`` of real tool calls.
        results: Text of real tool results.
        users: Text of later user messages (at most 2,000 characters).
        calls_per_step: How many calls each real tool-calling assistant message made.
    """

    source: str
    system: str
    task: str
    assistant_texts: tuple[str, ...]
    calls: tuple[tuple[str, str], ...]
    results: tuple[str, ...]
    users: tuple[str, ...]
    calls_per_step: tuple[int, ...]


def corpus_name(corpus: Path) -> str:
    """Name ``corpus`` for committed results: relative to the repository, never this machine's path.

    The corpus beside the checkout (``/work/shared/corpus`` for ``/work/main``) is
    ``../shared/corpus``; any other folder is named by its last two parts.
    """
    repo = BENCHMARKS_DIR.parent.resolve()
    where = corpus.resolve()
    for base in (repo.parent, *repo.parents):
        if where.is_relative_to(base) and (base / "shared" / "corpus") == where:
            return "../shared/corpus"
    if where.is_relative_to(repo):
        return where.relative_to(repo).as_posix()
    return "/".join(where.parts[-2:])


def load_pools(corpus: Path = CORPUS_DIR) -> Pools:
    """Return pools from every ``*.openai.json`` of ``corpus``, else from the bundled sample."""
    files = sorted(corpus.glob("*.openai.json")) if corpus.is_dir() else []
    source = (
        f"{len(files)} transcripts of {corpus_name(corpus)}"
        if files
        else f"the bundled {SAMPLE.name}"
    )
    conversations = [json.loads(f.read_text()) for f in files] or [json.loads(SAMPLE.read_text())]
    return pools_from(conversations, source)


def pools_from(conversations: Sequence[Sequence[Mapping[str, Any]]], source: str) -> Pools:
    """Return the pools of a list of OpenAI Chat Completions conversations."""
    system = task = ""
    texts: list[str] = []
    calls: list[tuple[str, str]] = []
    results: list[str] = []
    users: list[str] = []
    per_step: list[int] = []
    for messages in conversations:
        if not system and messages and messages[0]["role"] == "system":
            system = messages[0]["content"]
            task = next((m["content"] for m in messages if m["role"] == "user"), "")
        first_user = True
        for m in messages:
            role, content = m["role"], m.get("content") or ""
            if role == "assistant" and m.get("tool_calls"):
                texts.append(content)
                per_step.append(len(m["tool_calls"]))
                calls.extend(
                    (c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]
                )
            elif role == "tool":
                results.append(content)
            elif role == "user":
                if not first_user and 0 < len(content) <= 2_000:
                    users.append(content)
                first_user = False
    return Pools(
        source=source,
        system=system or "You are a careful coding agent.",
        task=task or "Fix the failing test.",
        assistant_texts=tuple(texts) or ("",),
        calls=tuple(calls) or (("bash", '{"command": "ls"}'),),
        results=tuple(results) or ("ok",),
        users=tuple(users) or ("Please go on.",),
        calls_per_step=tuple(per_step) or (1,),
    )


def agent_session(pools: Pools, steps: int, *, seed: int) -> list[Component]:
    """Return a deterministic agent session of ``steps`` model steps.

    A system prompt and the task, then per step one assistant message with its
    tool calls (how many: drawn from the corpus' own calls per message) and one
    tool result per call, each drawn from the pools; every ``USER_EVERY``
    steps, a user message first. Call ids are unique.
    """
    rng = random.Random(seed)
    items: list[Component] = [Message("system", pools.system), Message("user", pools.task)]
    call_number = 0
    for step in range(steps):
        if step and step % USER_EVERY == 0:
            items.append(Message("user", rng.choice(pools.users)))
        n_calls = rng.choice(pools.calls_per_step)
        calls = []
        for _ in range(n_calls):
            call_number += 1
            name, arguments = rng.choice(pools.calls)
            calls.append(ToolCall(f"call_{seed}_{call_number}", name, arguments))
        items.append(Message("assistant", rng.choice(pools.assistant_texts), tool_calls=calls))
        items.extend(
            ToolMessage(rng.choice(pools.results), tool_call_id=call.id, name=call.name)
            for call in calls
        )
    return items


def synthetic_session(n: int, *, seed: int, text_len: int = 200) -> list[Component]:
    """Return ``n`` components of an agent session with short generated texts.

    A system message and a task, then steps of an assistant message with one
    tool call and its result, a user message every tenth step. Texts are
    ``text_len`` characters of words, unique per component.
    """
    rng = random.Random(seed)
    words = ("file", "path", "error", "value", "test", "build", "config", "retry", "agent", "tool")

    def text(i: int) -> str:
        out = f"[{seed}:{i}]"
        while len(out) < text_len:
            out += (
                " " + rng.choice(words) + (str(rng.randrange(1000)) if rng.random() < 0.2 else "")
            )
        return out[:text_len]

    items: list[Component] = [Message("system", text(0)), Message("user", text(1))]
    step = 0
    while len(items) < n:
        i = len(items)
        if step and step % 10 == 0:
            items.append(Message("user", text(i)))
        call = ToolCall(f"c{seed}_{i}", "bash", json.dumps({"command": f"run {i}"}))
        items.append(Message("assistant", text(i), tool_calls=[call]))
        items.append(ToolMessage(text(i + 1), tool_call_id=call.id, name="bash"))
        step += 1
    items = items[:n]
    # Never end on an assistant call whose result was cut off.
    while items and items[-1].tool_calls:
        items.pop()
    return items
