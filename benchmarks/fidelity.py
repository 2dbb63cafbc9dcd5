"""Fidelity of summarizing compaction: which planted details survive, and what gets invented.

Each conversation is a simulated coding-agent session in rounds. Every round
plants exact details of seven kinds (a file path, an id, a number with its
unit, a command, a person's name, a decision and a user constraint) among
ordinary agent chatter and tool output, then the context is compacted. After
round 1 we score one compaction; after the last round, a chain of them (each
summary folded into the next).

Scores:

* kept: the share of planted details found verbatim in what the model would
  see next (the whole compacted context: checkpoint and recent messages);
* invented: exact-looking details (paths, ids, numbers, commands) in the
  summaries that appear nowhere in the conversation: false claims.

Variants, side by side on the same conversations and backend:

* ``plain``: a bare "summarize this" prompt, no preservation;
* ``prompt``: our summary prompt alone;
* ``ours``: our prompt plus the verbatim carry-over of lost details.

Run ``python benchmarks/fidelity.py --base-url URL --model NAME`` against any
OpenAI-compatible server, or ``nox -s fidelity`` (which passes ``--serve``)
for the local Qwen2.5-Coder 1.5B model that ``nox -s llm`` uses.
``--backend extractive`` runs the offline extractive summarizer (it cannot
invent, so it checks the harness rather than a model).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mellea_ctx import (
    Backend,
    ChatContext,
    Checkpoint,
    Component,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    Message,
    OpenAIBackend,
    ToolCall,
    ToolMessage,
    extract_facts,
)

PLAIN_PROMPT = "Summarize the following conversation.\n\n{conversation}"
KINDS = ("path", "id", "number", "command", "name", "decision", "constraint")

MODULES = ["billing", "auth", "search", "export", "scheduler", "payments", "reports"]
PEOPLE = ["Priya Raman", "Tomasz Kowalczyk", "Amara Okafor", "Lucía Fernández", "Kenji Mori"]
DECISIONS = [
    "use Decimal instead of float for money",
    "keep the retry limit at 3 and add jitter",
    "move the cache key into the request scope",
    "drop the legacy CSV exporter",
    "pin the parser to version 2.4",
]
CONSTRAINTS = [
    "never change the public signature of {cls}",
    "only touch files under src/{mod}/",
    "do not add new dependencies",
    "keep every response under {n} ms",
    "always run the full test suite before committing",
]


def _plants(round_no: int, rng: random.Random) -> dict[str, str]:
    mod = rng.choice(MODULES)
    cls = f"{mod.title()}Renderer"
    return {
        "path": f"src/{mod}/{rng.choice(['core', 'render', 'io'])}_{rng.randint(10, 99)}.py",
        "id": f"{mod[:3].upper()}-{rng.randint(10000, 99999)}",
        "number": f"{rng.randint(11, 97)}.{rng.randint(1, 9)} ms",
        "command": f"pytest tests/test_{mod}.py -k case_{rng.randint(100, 999)}",
        "name": rng.choice(PEOPLE),
        "decision": rng.choice(DECISIONS),
        "constraint": rng.choice(CONSTRAINTS).format(cls=cls, mod=mod, n=rng.randint(150, 900)),
    }


def make_round(round_no: int, rng: random.Random) -> tuple[list[Component], dict[str, str]]:
    """Return one round of agent conversation and the details planted in it."""
    p = _plants(round_no, rng)
    calls = [ToolCall(f"r{round_no}c{i}", "read_file", {"path": p["path"]}) for i in range(2)]
    code = "\n".join(
        f"def step_{i}(value):\n    return value * {rng.randint(2, 9)}  # helper {i}"
        for i in range(12)
    )
    messages: list[Component] = [
        Message("user", f"Next task: ticket {p['id']} from {p['name']}. Please {p['constraint']}."),
        Message(
            "assistant", f"Understood. I'll start by reading {p['path']}.", tool_calls=calls[:1]
        ),
        ToolMessage(code, tool_call_id=calls[0].id, name="read_file"),
        Message(
            "assistant",
            f"The slow path takes {p['number']} per call; the loop in step_3 recomputes the "
            "same value on every iteration and allocates a fresh list each time.",
        ),
        Message("user", f"Agreed with {p['name']}: we {p['decision']}. Go ahead."),
        Message("assistant", "Applying the change and re-reading the file.", tool_calls=calls[1:]),
        ToolMessage(code.replace("value *", "value +"), tool_call_id=calls[1].id, name="read_file"),
        Message(
            "assistant",
            f"Done. I ran `{p['command']}` and it passes; the hot path no longer allocates.",
        ),
        Message("user", "Thanks. Anything left on this ticket?"),
        Message("assistant", "Only the changelog entry, which I have added."),
    ]
    return messages, p


def _normalize(text: str) -> str:
    return " ".join(text.split()).lower()


def _compactor(
    variant: str, backend: Backend, keep_n: int, max_tokens: int
) -> LLMSummarizeCompactor:
    options = {"max_tokens": max_tokens, "temperature": 0}
    if variant == "plain":
        return LLMSummarizeCompactor(
            default_backend=backend,
            keep_n=keep_n,
            prompt_template=PLAIN_PROMPT,
            preserve_facts=False,
            model_options=options,
            timeout=600,
        )
    return LLMSummarizeCompactor(
        default_backend=backend,
        keep_n=keep_n,
        preserve_facts=variant == "ours",
        model_options=options,
        timeout=600,
    )


def score(ctx: ChatContext, planted: list[dict[str, str]], source: str) -> dict[str, Any]:
    """Score one compacted context against the details planted so far."""
    seen = _normalize("\n".join(c.content for c in ctx))
    kept = {kind: 0 for kind in KINDS}
    for details in planted:
        for kind in KINDS:
            kept[kind] += _normalize(details[kind]) in seen
    total = len(planted) * len(KINDS)
    summaries = [c.summary for c in ctx if isinstance(c, Checkpoint)]
    claims = extract_facts([Message("assistant", text) for text in summaries], limit=200)
    normalized_source = _normalize(source)
    invented = sorted(
        {
            fact.text
            for fact in claims
            if fact.kind in ("path", "id", "quantity", "command")
            and _normalize(fact.text) not in normalized_source
        }
    )
    return {
        "kept": sum(kept.values()),
        "total": total,
        "kept_share": round(sum(kept.values()) / total, 3) if total else 1.0,
        "kept_by_kind": kept,
        "invented": invented,
        "tokens": ctx.token_count,
    }


def run(
    backend_factory: Callable[[], Backend],
    *,
    conversations: int,
    rounds: int,
    keep_n: int,
    max_tokens: int,
    seed: int,
    variants: tuple[str, ...],
) -> dict[str, Any]:
    results: dict[str, Any] = {variant: {"once": [], "chain": []} for variant in variants}
    timings: dict[str, float] = {variant: 0.0 for variant in variants}
    for conversation in range(conversations):
        rng = random.Random(seed + conversation)
        built = [make_round(r, rng) for r in range(rounds)]
        for variant in variants:
            compactor = _compactor(variant, backend_factory(), keep_n, max_tokens)
            ctx = ChatContext().add(Message("system", "You are a careful coding agent."))
            planted: list[dict[str, str]] = []
            source_parts: list[str] = []
            for round_no, (messages, details) in enumerate(built):
                for message in messages:
                    ctx = ctx.add(message)
                    source_parts.append(message.content)
                    source_parts += [call.arguments for call in message.tool_calls]
                planted.append(details)
                started = time.perf_counter()
                ctx = compactor.compact(ctx)
                timings[variant] += time.perf_counter() - started
                if round_no == 0:
                    results[variant]["once"].append(score(ctx, planted, "\n".join(source_parts)))
            results[variant]["chain"].append(score(ctx, planted, "\n".join(source_parts)))
            print(f"  conversation {conversation + 1}, {variant}: done", file=sys.stderr)
    summary: dict[str, Any] = {}
    for variant in variants:
        row: dict[str, Any] = {"seconds": round(timings[variant], 1)}
        for stage in ("once", "chain"):
            scores = results[variant][stage]
            kept = sum(s["kept"] for s in scores)
            total = sum(s["total"] for s in scores)
            row[stage] = {
                "kept": kept,
                "total": total,
                "kept_share": round(kept / total, 3) if total else 1.0,
                "invented": sum(len(s["invented"]) for s in scores),
                "invented_examples": sorted({i for s in scores for i in s["invented"]})[:8],
                "by_kind": {k: sum(s["kept_by_kind"][k] for s in scores) for k in KINDS},
            }
        summary[variant] = row
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("openai", "extractive"), default="openai")
    parser.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1"
    )
    parser.add_argument(
        "--serve", action="store_true", help="serve the local model of tests/llm on loopback"
    )
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep-n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--variants", default="plain,prompt,ours")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "fidelity.json"))
    args = parser.parse_args(argv)

    with contextlib.ExitStack() as stack:
        if args.serve:
            serve_local(stack, args)
        return _run(parser, args)


def serve_local(stack: contextlib.ExitStack, args: argparse.Namespace) -> None:
    """Serve the local model on loopback until ``stack`` closes; point ``args`` at it."""
    model = _local_model()
    log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "server.log"
    args.base_url = stack.enter_context(model.serve(model.ensure_gguf(), log))
    args.model = model.MODEL_ALIAS


def _local_model() -> Any:
    """Load tests/llm/model.py, which joins, checks and serves the local model."""
    path = Path(__file__).resolve().parents[1] / "tests" / "llm" / "model.py"
    spec = importlib.util.spec_from_file_location("mellea_ctx_local_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.backend == "extractive":
        factory: Callable[[], Backend] = ExtractiveBackend
        label = "ExtractiveBackend (offline)"
    else:
        if not args.base_url:
            parser.error("--base-url (or --serve) is required with --backend openai")
        factory = lambda: OpenAIBackend(args.model, base_url=args.base_url, timeout=600)  # noqa: E731
        label = f"{args.model} at {args.base_url}"
    variants = tuple(v for v in args.variants.split(",") if v)
    print(
        f"fidelity: {label}; {args.conversations} conversations x {args.rounds} rounds",
        file=sys.stderr,
    )
    started = time.perf_counter()
    summary = run(
        factory,
        conversations=args.conversations,
        rounds=args.rounds,
        keep_n=args.keep_n,
        max_tokens=args.max_tokens,
        seed=args.seed,
        variants=variants,
    )
    print()
    chained = f"kept after {args.rounds} chained"
    print(f"| variant | kept after 1 compaction | {chained} | invented (1 / chain) | seconds |")
    print("|---|---|---|---|---|")
    for variant, row in summary.items():
        once, chain = row["once"], row["chain"]
        print(
            f"| {variant} | {once['kept']}/{once['total']} ({once['kept_share']:.0%}) "
            f"| {chain['kept']}/{chain['total']} ({chain['kept_share']:.0%}) "
            f"| {once['invented']} / {chain['invented']} | {row['seconds']} |"
        )
    print()
    for variant, row in summary.items():
        chain = row["chain"]
        examples = chain["invented_examples"]
        print(f"{variant}: chain kept by kind {chain['by_kind']}; invented e.g. {examples}")
    record = {
        "backend": label,
        "conversations": args.conversations,
        "rounds": args.rounds,
        "keep_n": args.keep_n,
        "max_tokens": args.max_tokens,
        "seed": args.seed,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "wall_seconds": round(time.perf_counter() - started, 1),
        "results": summary,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
