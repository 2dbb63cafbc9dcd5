"""The real Claude Code span: details a continuation needs, kept by each summary; and cost.

Rows: (a) Claude Code's own summary (the first message of the postcompact
file); (b) that summary as the model's answer plus our appendix; (c) the
offline extractive backend at the size of Claude Code's summary; (d) with
``--serve`` (or ``--base-url``), the local model through chunking at a
4,096-token window, its summary alone and with our appendix. ``nox -s
fidelity`` runs it with ``--serve`` (it needs the llama.cpp server).

Needs are defined here, independently of the extractor: project files the
agent read, edited or added at least twice (relative to the worktree), the
distinct commands it ran (first segment), commit hashes git printed for
commits it made, test summaries, and the issue's eight key details. Junk: an
appendix item that is not a verbatim substring of the span's parsed text.

Run: ``python benchmarks/real_span.py`` from the repository root (rows a-c).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from pathlib import Path

from mellea_ctx import (
    ChatContext,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    OpenAIBackend,
    ScriptedBackend,
    to_openai,
    validate_openai,
)
from mellea_ctx._formats.openai import from_openai

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
RESULTS = Path(__file__).resolve().parent / "results"
ROOT = "/home/USER/projects/spotter-worktrees/spotter-fum/"
KEY = {
    "3bb8701": r"3bb8701",
    "b9288c2": r"b9288c2",
    "49 tests": r"49 tests",
    "transcript_row_classes/3 error": r"transcript_row_classes/3",
    "Credo nesting": r"[Cc]redo[^\n]{0,80}nest|nest[^\n]{0,40}too deep",
    "git add -f": r"git add -f",
    "highlight.js": r"highlight\.js",
    "spotter-fum.4": r"spotter-fum\.4",
}


def load() -> tuple[list, str]:
    span = from_openai(
        json.loads((CORPUS / "claudecode_opus46_session_precompact.openai.json").read_text())
    )
    post = json.loads((CORPUS / "claudecode_opus46_session_postcompact.openai.json").read_text())
    return span, post[0]["content"]


def needs(span: list) -> dict[str, set[str]]:
    files: dict[str, int] = {}
    commands: set[str] = set()
    commits: set[str] = set()
    results: set[str] = set()
    for component in span:
        for call in component.tool_calls:
            args = json.loads(call.arguments)
            path = args.get("file_path")
            if isinstance(path, str) and path.startswith(ROOT):
                files[path[len(ROOT) :]] = files.get(path[len(ROOT) :], 0) + 1
            command = args.get("command")
            if isinstance(command, str):
                first = re.split(r"\s*(?:&&|\|\||\||;|2>&1)\s*", command.strip().split("\n")[0])[0]
                commands.add(first.strip())
                if command.startswith("git add"):
                    for token in command.split("&&")[0].split()[2:]:
                        if not token.startswith("-"):
                            files[token] = files.get(token, 0) + 1
        if component.tool_call_id is not None:
            commits |= set(re.findall(r"^\[[\w./-]+ ([0-9a-f]{7,40})\]", component.content, re.M))
            results |= set(re.findall(r"\b\d+ tests?, \d+ failures?", component.content))
    return {
        "files touched twice": {f for f, n in files.items() if n >= 2},
        "commands (first segment)": commands,
        "commit hashes": commits,
        "test results": results,
    }


def kept(text: str, want: dict[str, set[str]]) -> dict[str, tuple[int, int]]:
    out = {kind: (sum(item in text for item in items), len(items)) for kind, items in want.items()}
    out["key details"] = (sum(bool(re.search(p, text)) for p in KEY.values()), len(KEY))
    return out


def compact(span: list, backend, preserve: bool, **options) -> tuple[object, float]:
    ctx = ChatContext()
    for component in span:
        ctx = ctx.add(component)
    started = time.perf_counter()
    compactor = LLMSummarizeCompactor(
        keep_n=0, strict=True, preserve_facts=preserve, timeout=3_600, model_options=options
    )
    result = compactor.compact(ctx, backend=backend)
    return result[0], time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help="row (d): serve the local model")
    parser.add_argument("--base-url", help="row (d) against this OpenAI-compatible server")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--window", type=int, default=4_096)
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.serve:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from fidelity import serve_local

            serve_local(stack, args)
        _main(args)


def _main(args: argparse.Namespace) -> None:
    span, claude = load()
    flat = "\n".join(
        [c.content for c in span]
        + [
            v
            for c in span
            for call in c.tool_calls
            for v in json.loads(call.arguments).values()
            if isinstance(v, str)
        ]
    )
    want = needs(span)
    rows = {"(a) Claude Code's summary": (claude, 0, 0)}
    checkpoint, _ = compact(from_openai_copy(span), ScriptedBackend(lambda m, o: claude), True)
    junk = sum(item not in flat for item in checkpoint.preserved)
    rows["(b) (a) + our appendix"] = (checkpoint.content, len(checkpoint.preserved), junk)
    tokens = len(claude) // 4
    extractive = ExtractiveBackend()
    checkpoint_c, _ = compact(from_openai_copy(span), _Sized(extractive, tokens), True)
    rows["(c) extractive, same size"] = (checkpoint_c.summary, 0, 0)
    if args.base_url:
        local = _Counting(OpenAIBackend(args.model, base_url=args.base_url, timeout=1_800), args)
        rows.update(local_rows(span, local, flat))
    print(
        "| row | chars | " + " | ".join([*list(want), "key details"]) + " | appendix items | junk |"
    )
    for name, (text, items, junk_items) in rows.items():
        scores = kept(text, want)
        cells = " | ".join(f"{k}/{n}" for k, n in scores.values())
        print(f"| {name} | {len(text):,} | {cells} | {items} | {junk_items} |")
    times = {}
    for preserve in (False, True):
        runs = [
            compact(from_openai_copy(span), ScriptedBackend(lambda m, o: claude), preserve)[1]
            for _ in range(3)
        ]
        times[preserve] = min(runs)
    print(
        f"cost: without {times[False] * 1000:.0f} ms, with {times[True] * 1000:.0f} ms, "
        f"ratio {times[True] / times[False]:.2f}"
    )


class _Sized:
    """The extractive backend answering within a fixed number of tokens."""

    def __init__(self, inner: ExtractiveBackend, tokens: int) -> None:
        self.inner = inner
        self.tokens = tokens
        self.context_window = None

    async def generate(self, messages, *, model_options=None, tools=None):
        return await self.inner.generate(messages, model_options={"max_tokens": self.tokens})


def local_rows(span: list, local: _Counting, flat: str) -> dict[str, tuple[str, int, int]]:
    """Row (d): the span compacted through ``local`` at its window; the result must validate."""
    checkpoint, seconds = compact(from_openai_copy(span), local, True, temperature=0)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "real_span_local.json").write_text(
        json.dumps(to_openai([checkpoint]), indent=2) + "\n", encoding="utf-8"
    )
    problems = validate_openai(from_openai(to_openai([checkpoint])))
    assert not problems, problems
    junk = sum(item not in flat for item in checkpoint.preserved)
    print(
        f"(d): {len(local.prompts)} requests in {seconds:.0f} s; prompt tokens the server "
        f"reported: largest {max(local.prompts):,}, window {local.context_window:,}; "
        f"the result validates",
        file=sys.stderr,
    )
    return {
        "(d) local model, 4,096 window": (checkpoint.summary, 0, 0),
        "(d) + our appendix": (checkpoint.content, len(checkpoint.preserved), junk),
    }


class _Counting:
    """The local model at a fixed window, counting requests and the prompt sizes it reports."""

    def __init__(self, inner: OpenAIBackend, args: argparse.Namespace) -> None:
        self.inner = inner
        self.context_window = args.window
        self.prompts: list[int] = []

    async def generate(self, messages, *, model_options=None, tools=None):
        started = time.perf_counter()
        out = await self.inner.generate(messages, model_options=model_options)
        prompt = out.usage.prompt_tokens if out.usage is not None else 0
        self.prompts.append(prompt)
        took = time.perf_counter() - started
        print(f"  request {len(self.prompts)}: {prompt} tokens in, {took:.0f} s", file=sys.stderr)
        return out


def from_openai_copy(span: list) -> list:
    """Fresh components (no memo) for each measured compaction."""
    from mellea_ctx._formats.openai import to_openai

    return from_openai(to_openai(span))


if __name__ == "__main__":
    main()
