"""Corpus fidelity, leave-one-out: the details a continuation needs, kept by a checkpoint.

For each real transcript (``../shared/corpus/*.openai.json``, and any other
``--extra`` file in the same OpenAI Chat format):

1. **Split.** The first 80% of the transcript (by characters, moved forward to
   the next message that is not a tool result, so no tool exchange is split)
   is compacted; the last 20% (the *tail*) is what the agent does next and is
   kept verbatim.
2. **Needs, derived independently.** Candidate details are read from the
   structure of the compacted part by this file's own code (it does not import
   or copy ``mellea_ctx._core.facts`` / ``fact_patterns``):

   * ``path``: file paths among tool-call arguments (a JSON string value with a
     ``/`` or a file extension and no spaces) and among the words of commands;
     probed by their last two segments;
   * ``command``: the first segment (up to ``&&``, ``|``, ``;``) of a
     ``command``/``cmd``/``script`` argument, or the first line of a code fence
     in an assistant message (text-action agents such as SWE-agent);
   * ``value``: leaves of JSON objects in tool results (and in observations):
     strings of 3-60 characters without line breaks that hold a digit or are
     under a key naming an id, a name, a status, a date, or a code; numbers of
     three or more characters;
   * ``error``: a line of tool output that is a dotted name ending in
     ``Error``/``Exception``, optionally followed by ``:`` and its message (a
     traceback's last line); needed when the tail names the exception, kept when
     the whole line is in the checkpoint;
   * ``test``: a line of tool output that reports counts of passed / failed
     tests;
   * ``commit``: a hexadecimal word of 7-40 characters on a line of tool output
     that names a commit (``[branch hash]``, ``commit hash``);
   * ``rule``: a sentence of a user message (not a tool observation), without a
     short label in front (``IMPORTANT:``), of at most 300 characters with a
     modal word (never, always, must, do not, don't, only, make sure, should
     not) that reads as prose (90% letters, spaces and
     punctuation; not a numbered file-listing line).

   * ``name``: a finding: a span the agent's prose in the tail quotes as code
     (between backticks) that occurs in the compacted part's tool output (a
     function, a module, a version, a key the agent learned there).

   A candidate is **needed** when its probe string appears again in the tail
   where the agent or the user uses it (assistant text and tool-call arguments,
   user messages that are not tool observations; a later tool output repeating
   it does not count), as a whole word; a rule is needed in any case (it stays in
   force). A candidate that also appears in the pinned prefix (the system
   prompt, kept verbatim) is left out.
3. **Compact** the first 80% with ``LLMSummarizeCompactor(default_backend=
   ExtractiveBackend(), keep_n=0)``, the summary asked at 5% and at 10% of the
   compacted span's tokens (``model_options={"max_tokens": ...}``).
4. **Score.** A needed detail is kept when its probe is in what the model
   sees of the compacted part (the pinned prefix and the checkpoint; text
   compared case-insensitively with whitespace collapsed). Reported per file,
   per kind and pooled (pooled = all needed details of all files together).
   Also: the *junk rate* of the items the checkpoint lists (its ``preserved``
   details and the ledger entries it shows): an item that is not found in the
   transcript (verbatim, or every exact-looking token of it, or half its words
   when it has none), or is trivial (under 3 letters or digits, or a
   bare one- or two-digit number);
   the checkpoint's size (tokens of the checkpoint message) over the size
   asked, which must be at most 1.25; and whether the compacted history (the
   compacted part plus the tail) validates for OpenAI and Anthropic
   (``validate_openai`` / ``validate_anthropic``; problems the original already
   had are shown next to it).
5. **Token budget.** Separately, whether ``TokenBudgetCompactor`` with its
   defaults (``max_tokens`` and ``target_tokens`` at half the span) compacts the
   first 80% at all, and where it lands.

**Leave-one-out.** No rule above was written for one file; each file's score
is reported on its own, and a file whose score is more than 25 points above
the mean of the others is flagged as a sign of tuning on it (the extractor was
tuned on ``claudecode_opus46_session_precompact``, so that file is marked
*tuned*).

Run: ``python benchmarks/corpus_loo.py`` (writes ``benchmarks/results/corpus_loo.json``
and ``.md``); ``--files NAME ...`` for some files; ``--extra SPEC ...`` for transcripts
outside the corpus, scored and pooled apart (``--source TEXT`` notes where each came from).
A SPEC is an OpenAI Chat or Anthropic Messages JSON array, a SWE-agent ``.traj`` or
mini-swe-agent ``traj.json`` file, a Claude Code ``.jsonl`` session log, or tau-bench's
``historical_trajectories/*.json`` followed by ``#TASK_ID:TRIAL``. The committed run's
outside set (``OUTSIDE`` below: tau-bench at ``59a200c``, SWE-agent at ``3ea751c``,
mini-swe-agent at ``a83fcae``, two Claude Code sub-agents of marot/spotter at ``8cc42b0``
that the corpus does not hold, all MIT;
read from clones of the public repositories, never committed here) is run by
``--outside DIR`` (or ``$MELLEA_CTX_OUTSIDE``, which ``nox -s conformance`` passes on), DIR
holding the files named in ``OUTSIDE``, e.g.
``git -C tau-bench show 59a200c:historical_trajectories/gpt-4o-airline.json >
tau-bench_gpt-4o-airline.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mellea_ctx import (
    ChatContext,
    Checkpoint,
    Component,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    TokenBudgetCompactor,
    from_anthropic,
    from_openai,
    validate_anthropic,
    validate_openai,
)


def _tree_of(package: Path) -> str:
    """Which tree's ``mellea_ctx`` ran, without a machine's absolute path."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(package.resolve().relative_to(root))
    except ValueError:
        return f"another tree ({package.resolve().parent.name}/{package.name})"


def _corpus() -> Path:
    """``$MELLEA_CTX_CORPUS``, else ``shared/corpus`` next to the repository (or its worktree)."""
    here = Path(__file__).resolve().parent.parent
    options = [os.environ.get("MELLEA_CTX_CORPUS", "")]
    options += [str(p / "shared" / "corpus") for p in (here.parent, here.parent.parent)]
    for option in options:
        if option and Path(option).is_dir():
            return Path(option)
    return here.parent / "shared" / "corpus"


CORPUS = _corpus()
#: The outside set of the committed run: (file in the --outside folder, selector, source).
TAU = "sierra-research/tau-bench at 59a200c6d575d595120f1cb70fea53cef0632f6b (MIT)"
SWE = "SWE-agent/SWE-agent at 3ea751c087f32b16e039a2233dd6eefecef325d5 (MIT)"
MINI = "SWE-agent/mini-swe-agent at a83fcae82d2a08f0ee0c688f9d137b3566c097f8 (MIT)"
SPOTTER = "marot/spotter at 8cc42b0bd39d04e71e509d7d58e6782ab435329f (MIT)"
OUTSIDE = (
    (
        "tau-bench_gpt-4o-airline.json",
        "#3:0",
        f"{TAU}: historical_trajectories/gpt-4o-airline.json, task 3 trial 0",
    ),
    ("tau-bench_gpt-4o-airline.json", "#13:0", f"{TAU}: the same file, task 13 trial 0"),
    (
        "sweagent_gpt4_test-repo-i1.traj",
        "",
        f"{SWE}: tests/test_data/trajectories/gpt4__swe-agent__test-repo__default_from_url__"
        "t-0.00__p-0.95__c-3.00__install-1/swe-agent__test-repo-i1.traj (text actions)",
    ),
    (
        "sweagent_fc_marshmallow-1867.traj",
        "",
        f"{SWE}: trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__"
        "function_calling__install-1/marshmallow-code__marshmallow-1867.traj (function calling)",
    ),
    (
        "mini_github_issue.traj.json",
        "",
        f"{MINI}: tests/test_data/github_issue.traj.json (text actions, observations as user)",
    ),
    (
        "claudecode_subagent_a881341.jsonl",
        "",
        f"{SPOTTER}: test/fixtures/transcripts/258c7280-ae70-4798-800f-63464d01a85d/subagents/"
        "agent-a881341.jsonl (Claude Code sub-agent, web research)",
    ),
    (
        "claudecode_subagent_a93ccab.jsonl",
        "",
        f"{SPOTTER}: test/fixtures/transcripts/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/"
        "agent-a93ccab.jsonl (Claude Code sub-agent, code exploration)",
    ),
)
RESULTS = Path(__file__).resolve().parent / "results"
TUNED = "claudecode_opus46_session_precompact"
SHARES = (0.05, 0.10)
SPLIT = 0.80
FLAG_POINTS = 0.25
KINDS = ("path", "command", "value", "error", "test", "commit", "rule", "name")

_MODAL = re.compile(
    r"\b(never|always|must|do not|don't|only|make sure|should not|shouldn't)\b", re.I
)
_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception))(?::\s*(.{0,160}))?\s*$")
_TEST_LINE = re.compile(
    r"\b\d+\s+(?:passed|failed|tests?|errors?|failures?)\b.*\b(?:passed|failed|failures?|errors?|tests?|OK)\b"
    r"|^\s*Ran \d+ tests? in\b",
    re.I,
)
_COMMIT_LINE = re.compile(r"^\[[^\]\s]+ ([0-9a-f]{7,40})\]|^commit ([0-9a-f]{7,40})\b", re.M)
_LABEL = re.compile(r"^\**[A-Za-z][A-Za-z ]{0,24}:\**\s+(?=\S)")
_BACKTICKED = re.compile(r"(?<!`)`([^`\n]{3,80})`(?!`)")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_SEGMENT = re.compile(r"\s*(?:&&|\|\||\||;|2>&1)\s*")
_ID_KEY = re.compile(
    r"(?:^|_)(id|ids|name|status|date|code|number|type|flight|origin|destination)s?$", re.I
)


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def text_of(component: Component) -> str:
    """What the model sees of one component: its text and its tool calls' arguments."""
    parts = [component.content or ""]
    for call in getattr(component, "tool_calls", ()) or ():
        parts.append(f"{call.name} {call.arguments}")
        parts += [str(v) for v in args_of(call).values() if isinstance(v, (str, int, float))]
    return "\n".join(parts)


def args_of(call: Any) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments) if isinstance(call.arguments, str) else call.arguments
    except ValueError:
        return {}
    return dict(value) if isinstance(value, dict) else {}


# --- the split --------------------------------------------------------------------------------


def split(span: Sequence[Component]) -> int:
    """Index of the first tail component: 80% of the characters, never before a tool result."""
    sizes = [len(text_of(c)) for c in span]
    total, running = sum(sizes), 0
    cut = len(span)
    for index, size in enumerate(sizes):
        running += size
        if running >= SPLIT * total:
            cut = index + 1
            break
    while cut < len(span) and span[cut].role == "tool":
        cut += 1
    return cut


def prefix_len(span: Sequence[Component]) -> int:
    """The pinned prefix: leading system messages (the compactor's default pin)."""
    n = 0
    while n < len(span) and span[n].role == "system":
        n += 1
    return n


# --- the needs ----------------------------------------------------------------------------------


def _json_leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _json_leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _json_leaves(v, key)
    else:
        yield key, value


def _json_values(text: str) -> Iterator[str]:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return
    try:
        value = json.loads(stripped)
    except ValueError:
        return
    for key, leaf in _json_leaves(value):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, (int, float)):
            if len(str(leaf)) >= 3:
                yield str(leaf)
        elif isinstance(leaf, str):
            leaf = leaf.strip()
            distinct = any(ch.isdigit() for ch in leaf) or _ID_KEY.search(key)
            if 3 <= len(leaf) <= 60 and "\n" not in leaf and distinct:
                yield leaf


def _path_like(token: str) -> bool:
    """A file or folder path: segments of name characters (no regex, glob or shell syntax),
    the last not a bare number (``render/2`` is a function's arity), or a name.ext."""
    token = token.strip("'\"`,()[]")
    if not token or " " in token or "://" in token or len(token) > 200 or token.startswith("-"):
        return False
    if "/" in token:
        segments = [p for p in token.split("/") if p]
        return (
            len(token) > 3
            and not token.startswith("/dev/")
            and bool(segments)
            and all(re.fullmatch(r"[\w.@~+-]+", p) for p in segments)
            and not segments[-1].isdigit()
            and bool(re.search(r"[A-Za-z]", token))
        )
    return (
        bool(re.fullmatch(r"[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}", token)) and not token[0].isdigit()
    )


def path_probe(path: str) -> str:
    parts = [p for p in path.strip("'\"`,()[]").rstrip("/").split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else (parts[0] if parts else path)


def _first_segment(command: str) -> str:
    line = command.strip().split("\n")[0]
    return _SEGMENT.split(line)[0].strip()


def _observation_flags(span: Sequence[Component]) -> list[bool]:
    """True for components that carry tool output: tool results, and user messages that
    answer an assistant message whose action was a code fence (text-action agents)."""
    flags = []
    previous_fenced = False
    for component in span:
        if component.role == "tool":
            flags.append(True)
        elif component.role == "user":
            flags.append(previous_fenced)
        else:
            flags.append(False)
        if component.role == "assistant":
            previous_fenced = bool(_FENCE.search(component.content or ""))
    return flags


_LISTING_LINE = re.compile(r"\s*\d+:\s")


def prose(sentence: str) -> bool:
    """A sentence of words, not a line of code or of a numbered file listing."""
    if sentence[0].isdigit() or sentence[0] in "'\"([{<":
        return False
    wordy = sum(ch.isalpha() or ch in " ,.'-" for ch in sentence)
    return wordy >= 0.9 * len(sentence)


def need_probe(kind: str, item: str) -> str:
    """What the tail must mention for ``item`` to be needed: an error by its exception name."""
    if kind == "error":
        return item.split(":", 1)[0].strip()
    return item


def candidates(span: Sequence[Component], observation: Sequence[bool]) -> dict[str, set[str]]:
    """Every candidate detail of ``span``, by kind, as probe strings."""
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for component, is_output in zip(span, observation, strict=True):
        content = component.content or ""
        for call in getattr(component, "tool_calls", ()) or ():
            for key, value in args_of(call).items():
                if not isinstance(value, str):
                    continue
                if key in ("command", "cmd", "script"):
                    segment = _first_segment(value)
                    if segment:
                        found["command"].add(segment)
                    for token in value.split():
                        if _path_like(token):
                            found["path"].add(path_probe(token))
                elif _path_like(value):
                    found["path"].add(path_probe(value))
        if component.role == "assistant":
            for block in _FENCE.findall(content):
                first = _first_segment(block)
                if first:
                    found["command"].add(first)
                    for token in first.split()[1:]:
                        if _path_like(token):
                            found["path"].add(path_probe(token))
        if is_output:
            found["value"] |= set(_json_values(content))
            for line in content.splitlines():
                match = _EXCEPTION_LINE.match(line)
                if match:
                    found["error"].add(line.strip())
                if _TEST_LINE.search(line) and len(line) <= 200:
                    found["test"].add(line.strip(" =-*\t"))
            for match in _COMMIT_LINE.finditer(content):
                found["commit"].add(match.group(1) or match.group(2))
        elif component.role == "user":
            # A numbered line of a file's listing (``1427:    Must be ...``) is code, whatever
            # its sentences say: left out whole, before it is cut into sentences.
            prose_lines = "\n".join(
                line for line in content.splitlines() if not _LISTING_LINE.match(line)
            )
            for sentence in re.split(r"(?<=[.!?])\s+|\n+", prose_lines):
                # A short label in front ("IMPORTANT:", "Safety rule:") is not the rule.
                sentence = _LABEL.sub("", sentence.strip(" -*#>\t")).strip(" *")
                if 12 <= len(sentence) <= 300 and _MODAL.search(sentence) and prose(sentence):
                    found["rule"].add(sentence.rstrip("."))
    return found


def contains(text: str, item: str) -> bool:
    """``item`` in ``text`` (both normalized), not as part of a longer word or number."""
    probe = norm(item)
    if not probe:
        return False
    start = r"(?<![\w])" if probe[0].isalnum() else ""
    end = r"(?![\w])" if probe[-1].isalnum() else ""
    return re.search(start + re.escape(probe) + end, text) is not None


def needed(found: dict[str, set[str]], tail_text: str, prefix_text: str) -> dict[str, list[str]]:
    tail, prefix = norm(tail_text), norm(prefix_text)
    out: dict[str, list[str]] = {}
    for kind, items in found.items():
        keep = []
        for item in sorted(items):
            if len(norm(item)) < 3 or contains(prefix, item):
                continue
            if kind == "rule" or contains(tail, need_probe(kind, item)):
                keep.append(item)
        out[kind] = keep
    return out


# --- the compaction and its checks ----------------------------------------------------------


def listed_items(checkpoint: Checkpoint) -> list[str]:
    """The items a checkpoint lists: its preserved details and the ledger entries it shows."""
    items = [str(item) for item in checkpoint.preserved]
    shown = getattr(checkpoint, "shown_entries", None)
    ledger = getattr(checkpoint, "ledger", None)
    entries: Iterable[Any] = ()
    if callable(shown):
        entries = shown()
    elif ledger is not None:
        entries = getattr(ledger, "entries", ())
    items += [str(getattr(entry, "value", entry)) for entry in entries]
    return items


def trivial(item: str) -> bool:
    """Says nothing on its own: under 3 letters or digits, or a bare one- or two-digit number."""
    text = item.strip()
    return sum(ch.isalnum() for ch in text) < 3 or (text.isdigit() and len(text) < 3)


_TOKEN = re.compile(r"[\w./:@#$%+-]+")


def grounded(item: str, flat: str, words: set[str]) -> bool:
    """Is ``item`` from the transcript? Verbatim (a trailing ellipsis of a clipped value
    aside); or, when it has exact-looking tokens (with a digit, or ``/ _ . :`` inside), all
    of them are in it (glue a renderer adds, "→ ok", "(modified)", is not junk); or, with
    none, at least half of its words are."""
    text = norm(item).rstrip(".…").strip()
    if not text or text in flat:
        return True
    tokens = [t.strip(".,:;()[]'\"`-") for t in _TOKEN.findall(text)]
    exact = [
        t
        for t in tokens
        if len(t) >= 3 and (any(ch.isdigit() for ch in t) or re.search(r"\w[/_.:]\w", t))
    ]
    if exact:
        return all(t in flat for t in exact)
    plain = [w for w in re.findall(r"\w+", text) if len(w) >= 3]
    return not plain or sum(w in words for w in plain) >= 0.5 * len(plain)


def compact(head: Sequence[Component], share: float) -> tuple[list[Component], dict[str, Any]]:
    ctx = ChatContext()
    for component in head:
        ctx = ctx.add(component)
    body = ChatContext()
    for component in head[prefix_len(head) :]:
        body = body.add(component)
    asked = max(1, int(body.token_count * share))
    compactor = LLMSummarizeCompactor(
        default_backend=ExtractiveBackend(),
        keep_n=0,
        model_options={"max_tokens": asked},
        timeout=600,
    )
    started = time.perf_counter()
    out = compactor.compact(ctx).as_list()
    seconds = time.perf_counter() - started
    checkpoints = [c for c in out if isinstance(c, Checkpoint)]
    size = 0
    for checkpoint in checkpoints:
        size += ChatContext().add(checkpoint).token_count
    return out, {
        "asked_tokens": asked,
        "span_tokens": body.token_count,
        "checkpoint_tokens": size,
        "size_ratio": round(size / asked, 3),
        "applied": bool(checkpoints),
        "seconds": round(seconds, 2),
        "checkpoints": checkpoints,
    }


def token_budget(head: Sequence[Component]) -> dict[str, Any]:
    """Does ``TokenBudgetCompactor``, with its defaults, compact the span to half its size?

    Agent runs are often one user turn of many model steps, which a budget by user turns
    cannot cut (issue 21, item 6): this records whether it applied and where it landed.
    """
    ctx = ChatContext()
    for component in head:
        ctx = ctx.add(component)
    target = max(1, ctx.token_count // 2)
    compactor = TokenBudgetCompactor(
        max_tokens=target, target_tokens=target, default_backend=ExtractiveBackend(), timeout=600
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compactor.compact(ctx)
    return {
        "target_tokens": target,
        "tokens_after": out.token_count,
        "applied": any(isinstance(c, Checkpoint) for c in out.as_list()),
        "warnings": [str(w.message)[:200] for w in caught],
    }


def problems(history: Sequence[Component]) -> list[str]:
    items = list(history)
    return [f"openai: {p}" for p in validate_openai(items)] + [
        f"anthropic: {p}" for p in validate_anthropic(items)
    ]


def _openai_message(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m["role"], "content": m.get("content")}
    if m.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": dict(c["function"])}
            for c in m["tool_calls"]
        ]
    if m["role"] == "tool":
        ids = m.get("tool_call_ids") or [m.get("tool_call_id")]
        out["tool_call_id"] = ids[0]
    return out


def _unique_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rename a re-used tool-call id (and the result that follows it), as the corpus did."""
    seen: dict[str, int] = {}
    renamed: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls", ()):
            n = seen.get(call["id"], 0) + 1
            seen[call["id"]] = n
            if n > 1:
                renamed[call["id"]] = call["id"] = f"{call['id']}_dup{n}"
            else:
                renamed.pop(call["id"], None)
        if m["role"] == "tool" and m.get("tool_call_id") in renamed:
            m["tool_call_id"] = renamed[m["tool_call_id"]]
    return messages


def _text_content(content: Any) -> Any:
    """A list of text parts (mini-swe-agent, some SDKs) as one string."""
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return content


def _anthropic(data: Any) -> bool:
    """Messages API turns: content blocks with a ``type`` and no OpenAI tool keys."""
    return (
        isinstance(data, list)
        and any(
            isinstance(m, dict)
            and isinstance(m.get("content"), list)
            and any(
                isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
                for b in m["content"]
            )
            for m in data
        )
        and not any(
            isinstance(m, dict) and ("tool_calls" in m or m.get("role") == "tool") for m in data
        )
    )


def _claude_code(lines: Iterable[str]) -> list[dict[str, Any]]:
    """A Claude Code session log (JSONL, one line per content block) as Messages API turns.

    As the corpus README converts them: user and assistant lines only; the lines of one
    response (one ``message.id``) merged; the tool results that arrive before the next
    response gathered into one user turn, in the order of their calls; API fields only
    (thinking left out: its signatures are redacted in published logs)."""
    turns: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    last_id = None

    def flush() -> None:
        if not results:
            return
        calls = [b["id"] for b in turns[-1]["content"] if b["type"] == "tool_use"] if turns else []
        results.sort(
            key=lambda b: calls.index(b["tool_use_id"]) if b["tool_use_id"] in calls else 0
        )
        turns.append({"role": "user", "content": list(results)})
        results.clear()

    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        kind, message = record.get("type"), record.get("message") or {}
        content = message.get("content")
        if kind == "assistant" and isinstance(content, list):
            blocks = []
            for b in content:
                if b.get("type") == "text" and str(b.get("text", "")).strip():
                    blocks.append({"type": "text", "text": b["text"]})
                elif b.get("type") == "tool_use":
                    blocks.append(
                        {"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]}
                    )
            if not blocks:
                continue
            if turns and turns[-1]["role"] == "assistant" and message.get("id") == last_id:
                turns[-1]["content"] += blocks
                continue
            flush()
            turns.append({"role": "assistant", "content": blocks})
            last_id = message.get("id")
        elif kind == "user":
            if isinstance(content, str):
                flush()
                turns.append({"role": "user", "content": content})
                continue
            for b in content or ():
                if b.get("type") == "tool_result":
                    body = b.get("content")
                    if isinstance(body, list):
                        body = "\n".join(
                            str(x.get("text", "")) for x in body if isinstance(x, dict)
                        )
                    result = {"type": "tool_result", "tool_use_id": b["tool_use_id"]}
                    result["content"] = "" if body is None else str(body)
                    if b.get("is_error"):
                        result["is_error"] = True
                    results.append(result)
                elif b.get("type") == "text" and str(b.get("text", "")).strip():
                    flush()
                    turns.append({"role": "user", "content": [{"type": "text", "text": b["text"]}]})
    flush()
    return turns


def load(spec: str) -> tuple[str, list[Component]]:
    """``spec``: an OpenAI Chat JSON array; an Anthropic Messages JSON array; a SWE-agent
    ``.traj`` (its ``history``); a mini-swe-agent ``traj.json`` (its ``messages``); a Claude
    Code session log (``.jsonl``); or
    tau-bench's ``historical_trajectories/*.json`` with ``#TASK_ID:TRIAL`` after the path."""
    path, _, selector = spec.partition("#")
    if path.endswith(".jsonl"):
        text = Path(path).read_text(encoding="utf-8")
        return Path(path).stem, from_anthropic(_claude_code(text.splitlines()))
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    name = Path(path).name.removesuffix(".json").removesuffix(".openai").removesuffix(".traj")
    if _anthropic(data):
        return name.removesuffix(".anthropic") + " (anthropic)", from_anthropic(data)
    if isinstance(data, dict) and "messages" in data and "history" not in data:
        messages = [
            _openai_message({**m, "content": _text_content(m.get("content"))})
            for m in data["messages"]
            if m.get("role") in ("system", "user", "assistant", "tool")
        ]
    elif isinstance(data, dict) and "history" in data:
        messages = [_openai_message(m) for m in data["history"]]
        name = name.removesuffix(".traj")
    elif isinstance(data, list) and data and isinstance(data[0], dict) and "traj" in data[0]:
        task, _, trial = selector.partition(":")
        entry = next(
            e for e in data if str(e["task_id"]) == task and str(e["trial"]) == (trial or "0")
        )
        messages = [_openai_message(m) for m in entry["traj"]]
        name = f"{name}_task{task}_trial{trial or 0}"
    else:
        messages = data
    return name, from_openai(_unique_ids(messages))


def evaluate(spec: str | Path) -> dict[str, Any]:
    name, span = load(str(spec))
    cut = split(span)
    head, tail = span[:cut], span[cut:]
    pre = prefix_len(head)
    observation = _observation_flags(span)[:cut]
    found = candidates(head[pre:], observation[pre:])
    # The tail refers to a detail when the agent or the user uses it again (the agent's text
    # and tool calls, the user's own messages), not when a later tool output repeats it.
    tail_flags = _observation_flags(span)[cut:]
    need = needed(
        found,
        "\n".join(text_of(c) for c, out in zip(tail, tail_flags, strict=True) if not out),
        "\n".join(text_of(c) for c in head[:pre]),
    )
    # Findings: what the agent's later prose quotes as code (`...`) from earlier tool output.
    outputs = norm("\n".join(text_of(c) for c, o in zip(head, observation, strict=True) if o))
    tail_prose = "\n".join(
        c.content or "" for c, o in zip(tail, tail_flags, strict=True) if not o and c.content
    )
    others = {norm(item) for items in need.values() for item in items}
    prefix_text = norm("\n".join(text_of(c) for c in head[:pre]))
    need["name"] = sorted(
        {
            span_
            for span_ in _BACKTICKED.findall(tail_prose)
            if len(norm(span_)) >= 3
            and norm(span_) not in others
            and contains(outputs, span_)
            and not contains(prefix_text, span_)
        }
    )
    flat = norm("\n".join(text_of(c) for c in span))
    words = set(re.findall(r"\w+", flat))
    original_problems = problems(span)
    result: dict[str, Any] = {
        "file": name,
        "messages": len(span),
        "compacted_messages": cut,
        "tail_messages": len(span) - cut,
        "candidates": {k: len(v) for k, v in found.items()},  # "name" has none: see below
        "needed": {k: len(v) for k, v in need.items()},
        "original_problems": original_problems,
        "token_budget": token_budget(head),
        "shares": {},
    }
    for share in SHARES:
        out, info = compact(head, share)
        seen = norm("\n".join(text_of(c) for c in out))
        kept = {k: [item for item in v if contains(seen, item)] for k, v in need.items()}
        items = [item for cp in info.pop("checkpoints") for item in listed_items(cp)]
        junk = [item for item in items if trivial(item) or not grounded(item, flat, words)]
        history = [*out, *tail]
        new_problems = [p for p in problems(history) if p not in original_problems]
        n_need = sum(len(v) for v in need.values())
        n_kept = sum(len(v) for v in kept.values())
        result["shares"][f"{share:.0%}"] = {
            **info,
            "kept": n_kept,
            "needed": n_need,
            "score": round(n_kept / n_need, 3) if n_need else None,
            "by_kind": {k: [len(kept[k]), len(need[k])] for k in KINDS},
            "lost": {k: [i for i in need[k] if i not in kept[k]][:12] for k in KINDS},
            "listed_items": len(items),
            "junk": len(junk),
            "junk_examples": junk[:8],
            "validates": not new_problems,
            "new_problems": new_problems[:5],
        }
    return result


def leave_one_out(results: list[dict[str, Any]]) -> None:
    """Flag a file whose score is far above the mean of the others (a sign of tuning)."""
    for share in (f"{s:.0%}" for s in SHARES):
        for r in results:
            mine = r["shares"][share]["score"]
            others = [
                o["shares"][share]["score"]
                for o in results
                if o is not r and o["shares"][share]["score"] is not None
            ]
            if mine is None or not others:
                continue
            mean = statistics.mean(others)
            r["shares"][share]["others_mean"] = round(mean, 3)
            r["shares"][share]["flag"] = mine - mean > FLAG_POINTS


def pooled(results: list[dict[str, Any]], share: str, exclude: str | None = None) -> dict[str, Any]:
    rows = [r["shares"][share] for r in results if exclude is None or exclude not in r["file"]]
    kept, need = sum(x["kept"] for x in rows), sum(x["needed"] for x in rows)
    items, junk = sum(x["listed_items"] for x in rows), sum(x["junk"] for x in rows)
    return {
        "kept": kept,
        "needed": need,
        "score": round(kept / need, 3) if need else None,
        "listed_items": items,
        "junk": junk,
        "junk_rate": round(junk / items, 3) if items else 0.0,
        "max_size_ratio": max((x["size_ratio"] for x in rows), default=0.0),
        "all_validate": all(x["validates"] for x in rows),
    }


def _table(files: list[dict[str, Any]], pooled_rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    shares = [f"{s:.0%}" for s in SHARES]
    lines = [
        "| file | needed | "
        + " | ".join(f"kept at {s}" for s in shares)
        + " | "
        + " | ".join(f"size / asked at {s}" for s in shares)
        + " | junk / listed items | validates | token budget applies | flag |",
        "|---|---:|" + "---:|" * (2 * len(shares)) + "---:|---|---|---|",
    ]
    for r in files:
        cells = [r["shares"][s] for s in shares]
        name = r["file"] + (" (tuned)" if TUNED in r["file"] else "")
        scores = " | ".join(
            f"{c['kept']}/{c['needed']} ({c['score']:.0%})" if c["score"] is not None else "-"
            for c in cells
        )
        sizes = " | ".join(f"{c['size_ratio']:.2f}" for c in cells)
        junk = ", ".join(f"{c['junk']}/{c['listed_items']}" for c in cells)
        valid = "yes" if all(c["validates"] for c in cells) else "NO"
        flag = "far above the others" if any(c.get("flag") for c in cells) else ""
        budget = r["token_budget"]
        applies = (
            f"yes ({budget['tokens_after'] / budget['target_tokens']:.2f} of the target)"
            if budget["applied"]
            else "no"
        )
        lines.append(
            f"| {name} | {cells[0]['needed']} | {scores} | {sizes} | {junk} | {valid} "
            f"| {applies} | {flag} |"
        )
    for label, row in pooled_rows:
        cells = [row[s] for s in shares]
        scores = " | ".join(
            f"{c['kept']}/{c['needed']} ({c['score']:.0%})" if c["score"] is not None else "-"
            for c in cells
        )
        sizes = " | ".join(f"max {c['max_size_ratio']:.2f}" for c in cells)
        junk = ", ".join(f"{c['junk']}/{c['listed_items']} ({c['junk_rate']:.1%})" for c in cells)
        valid = "yes" if all(c["all_validate"] for c in cells) else "NO"
        lines.append(f"| **{label}** | | {scores} | {sizes} | {junk} | {valid} | | |")
    return lines


def _details(files: list[dict[str, Any]]) -> list[str]:
    share = f"{SHARES[0]:.0%}"
    lines = [f"Kept / needed by kind, at {share}:", ""]
    lines.append("| file | " + " | ".join(KINDS) + " |")
    lines.append("|---|" + "---:|" * len(KINDS))
    for r in files:
        by = r["shares"][share]["by_kind"]
        lines.append(
            f"| {r['file']} | "
            + " | ".join(f"{k}/{n}" if n else "-" for k, n in (by[x] for x in KINDS))
            + " |"
        )
    totals = [
        (
            sum(r["shares"][share]["by_kind"][k][0] for r in files),
            sum(r["shares"][share]["by_kind"][k][1] for r in files),
        )
        for k in KINDS
    ]
    lines.append("| **pooled** | " + " | ".join(f"{k}/{n}" if n else "-" for k, n in totals) + " |")
    lines += ["", f"Lost at {share} (the first few of each kind):", ""]
    for r in files:
        lost = r["shares"][share]["lost"]
        shown = "; ".join(
            f"{k}: " + ", ".join(f"`{i[:60]}`" for i in v[:4]) for k, v in lost.items() if v
        )
        lines.append(f"- {r['file']}: {shown or 'nothing'}")
    return lines


#: Agent families by file name: the corpus and the outside set are compared family by family.
FAMILIES = (
    ("mini-swe-agent", ("minisweagent", "mini_")),
    ("SWE-agent", ("sweagent",)),
    ("tau-bench", ("taubench", "tau-bench")),
    ("Claude Code", ("claudecode",)),
)


def family(name: str) -> str:
    for label, prefixes in FAMILIES:
        if name.startswith(prefixes):
            return label
    return "other"


def families(payload: dict[str, Any]) -> list[str]:
    """Per family, at each size: the corpus files' pooled score next to the outside ones'.

    A family scoring far better on the corpus than outside it was tuned on the corpus."""
    shares = [f"{s:.0%}" for s in SHARES]
    lines = [
        "| family | " + " | ".join(f"corpus at {s} | outside at {s}" for s in shares) + " |",
        "|---|" + "---:|---:|" * len(shares),
    ]
    labels = sorted({family(r["file"]) for r in payload["files"] + payload.get("outside", [])})
    for label in labels:
        cells = []
        for share in shares:
            for group in (payload["files"], payload.get("outside", [])):
                rows = [r["shares"][share] for r in group if family(r["file"]) == label]
                kept, need = sum(x["kept"] for x in rows), sum(x["needed"] for x in rows)
                cells.append(f"{kept}/{need} ({kept / need:.0%})" if need else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def goals(payload: dict[str, Any]) -> list[str]:
    """The corpus against issue 21's goals."""
    pooled_, files = payload["pooled"], payload["files"]
    tuned = [r for r in files if TUNED in r["file"]]

    def score(row: dict[str, Any]) -> float:
        return float(row["score"] or 0.0)

    rows = [
        ("pooled at 5%", f"{score(pooled_['5%']):.0%}", "≥ 85%", score(pooled_["5%"]) >= 0.85),
        ("pooled at 10%", f"{score(pooled_['10%']):.0%}", "≥ 90%", score(pooled_["10%"]) >= 0.90),
    ]
    for r in tuned:
        worst = min(score(r["shares"][s]) for s in r["shares"])
        rows.append(("the tuned span, both sizes", f"{worst:.0%}", "≥ 90%", worst >= 0.90))
    junk = max(p["junk_rate"] for p in pooled_.values())
    rows.append(("junk among listed items", f"{junk:.1%}", "< 5%", junk < 0.05))
    size = max(p["max_size_ratio"] for p in pooled_.values())
    rows.append(("largest checkpoint / size asked", f"{size:.2f}", "≤ 1.25", size <= 1.25))
    valid = all(p["all_validate"] for p in pooled_.values())
    rows.append(("every compacted history validates", "yes" if valid else "NO", "yes", valid))
    return [
        "| goal | measured | target | met |",
        "|---|---:|---:|---|",
        *[f"| {a} | {b} | {c} | {'yes' if d else 'NO'} |" for a, b, c, d in rows],
    ]


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Corpus fidelity, leave-one-out",
        "",
        "Generated by `benchmarks/corpus_loo.py` (method in its docstring and in "
        "docs/benchmarks.md): the first 80% of each transcript compacted with "
        "`LLMSummarizeCompactor(default_backend=ExtractiveBackend(), keep_n=0)`, the summary "
        "asked at 5% and 10% of the span's tokens; a detail is needed when the last 20% uses "
        "it again (rules always), kept when it is in the compacted part. Flag: a score more "
        f"than {FLAG_POINTS:.0%} points above the mean of the other files.",
        f"mellea_ctx from `{payload['mellea_ctx']}`.",
        "",
        "## The corpus against issue 21's goals",
        "",
        *goals(payload),
        "",
        "## The corpus",
        "",
        *_table(
            payload["files"],
            [
                ("pooled, all files", payload["pooled"]),
                ("pooled, without the tuned span", payload["pooled_untuned"]),
            ],
        ),
        "",
        *_details(payload["files"]),
    ]
    if payload.get("outside"):
        lines += [
            "",
            "## By agent family: the corpus next to the outside set",
            "",
            *families(payload),
            "",
            "## Outside the corpus",
            "",
            "Public transcripts nobody here tuned on, read from their sources (not committed):",
            "",
            *[f"- {source}" for source in payload.get("outside_sources", [])],
            "",
            *_table(payload["outside"], [("pooled, outside", payload["pooled_outside"])]),
            "",
            *_details(payload["outside"]),
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", help="corpus file names (default: all)")
    parser.add_argument("--extra", nargs="*", default=[], help="more OpenAI-format transcripts")
    parser.add_argument(
        "--out", default="corpus_loo", help="results name in benchmarks/results, or a path prefix"
    )
    parser.add_argument(
        "--source", action="append", default=[], help="where an --extra file came from (noted)"
    )
    parser.add_argument(
        "--outside",
        default=os.environ.get("MELLEA_CTX_OUTSIDE"),
        help="a folder with the committed run's outside set (see the docstring); "
        "default: $MELLEA_CTX_OUTSIDE",
    )
    args = parser.parse_args(argv)
    paths = sorted(CORPUS.glob("*.openai.json"))
    if args.files:
        paths = [p for p in paths if any(f in p.name for f in args.files)]
    if args.outside:
        folder = Path(args.outside)
        args.extra += [str(folder / name) + selector for name, selector, _ in OUTSIDE]
        args.source += [source for _, _, source in OUTSIDE]
    results = []
    for path in paths:
        print(f"{path.name} ...", file=sys.stderr)
        results.append(evaluate(path))
    leave_one_out(results)
    outside = []
    for spec in args.extra:
        print(f"{spec} ...", file=sys.stderr)
        outside.append(evaluate(spec))
    payload: dict[str, Any] = {
        "method": __doc__,
        "mellea_ctx": _tree_of(Path(sys.modules["mellea_ctx"].__file__ or "").parent),
        "files": results,
        "pooled": {f"{s:.0%}": pooled(results, f"{s:.0%}") for s in SHARES},
        "pooled_untuned": {f"{s:.0%}": pooled(results, f"{s:.0%}", TUNED) for s in SHARES},
        "outside": outside,
        "outside_sources": args.source,
        "pooled_outside": {f"{s:.0%}": pooled(outside, f"{s:.0%}") for s in SHARES}
        if outside
        else {},
    }
    out = Path(args.out) if "/" in args.out else RESULTS / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.parent / f"{out.name}.json").write_text(
        json.dumps(payload, indent=2) + "\n", encoding="utf-8"
    )
    text = markdown(payload)
    (out.parent / f"{out.name}.md").write_text(text, encoding="utf-8")
    print(text)
    return payload


if __name__ == "__main__":
    main()
