"""compaction-conformance-kit's budget benchmark on our compactors, next to the kit's built-ins.

compaction-conformance-kit (PyPI, MIT, written by nobody here) plants typed
canaries (safety rules, hard constraints, facts, goal state, user preferences)
in a scripted session, compacts it five times in a chain (round k+1 compacts
round k's output) at a character budget fixed at a fraction of the original
transcript, and checks which canaries are still in the final text. Its
semantic suites also restate values ("move the deadline to ...") and count a
conflict as *resolved* when the latest value is in the text and the
superseded one is not.

This file is two things:

* **The adapter** (public ``mellea_ctx`` API only): classes the kit loads as
  ``benchmarks.conformance:Class`` specs. Each one turns the kit's turns into
  a :class:`~mellea_ctx.ChatContext`, compacts it with one of our compactors
  configured as the docs recommend, and renders what the model would see next
  as the kit's ``[role] text`` lines. The character budget becomes a token
  budget through the input's own tokens per character under that same
  rendering (``ctx.token_count / len(text)``). A checkpoint holds more
  characters a token than a conversation, so when the output is over the
  characters the adapter asks again with a budget smaller by the overshoot, up
  to three times, as a user with a character budget would; nothing is
  truncated, and what is still over shows as *not compliant*. Chained rounds continue
  from the context we returned (the kit hands back exactly our text), the way
  a live session keeps its checkpoint objects, so chained compactions work on
  checkpoints, not on a re-read of their prose. Every compacted history must
  validate for OpenAI and Anthropic, or the adapter raises.
* **The runner** (``python benchmarks/conformance.py``): runs
  ``compaction-kit benchmark --budgets 10%,20%,30% --seeds 1-4 --rounds 5
  --format json`` once with ``--compactor all`` (the built-ins) and once per
  spec of ours, merges the entries, ranks each budget with the kit's own key
  (compliance, then survival, semantic resolution, distinct pairs, output
  size), and writes ``benchmarks/results/conformance.json`` and ``.md``.

``--quick`` runs one seed at one budget for two rounds (``conformance-quick.*``,
not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compaction_kit.benchmark import budget_benchmark_to_markdown
from compaction_kit.compacted import CompactedContext
from compaction_kit.session import Turn

from mellea_ctx import (
    ChatContext,
    ClearToolResultsCompactor,
    Compactor,
    Component,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    Message,
    TieredCompactor,
    TokenBudgetCompactor,
    validate_anthropic,
    validate_openai,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
BUDGETS = "10%,20%,30%"
SEEDS = "1-4"
ROUNDS = 5
KIT_VERSION = "0.8.0"
#: Ours, as ``module:Class`` specs the kit loads.
SPECS = (
    "benchmarks.conformance:Summarize",
    "benchmarks.conformance:TokenBudget",
    "benchmarks.conformance:Tiered",
    "benchmarks.conformance:SummarizeFromText",
)
#: The docs' recommended number of recent messages kept verbatim (docs/summarization.md).
KEEP_N = 4
#: Where the adapter appends one JSON line per round, when set (the runner sets it).
LOG_ENV = "MELLEA_CTX_CONFORMANCE_LOG"
#: With no budget from the kit (``compaction-kit check`` without one), aim at this share.
DEFAULT_SHARE = 0.25


def _tree_of(package: Path) -> str:
    """Which tree's ``mellea_ctx`` ran, without a machine's absolute path."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(package.resolve().relative_to(root))
    except ValueError:
        return f"another tree ({package.resolve().parent.name}/{package.name})"


def render(components: Sequence[Component]) -> str:
    """What the model sees next, as the kit's ``[role] text`` lines."""
    return "\n".join(f"[{c.role}] {c.content}" for c in components)


def check_valid(components: Sequence[Component]) -> None:
    """Raise if the compacted history is not one OpenAI and Anthropic accept."""
    history = list(components)
    problems = [f"openai: {p}" for p in validate_openai(history)]
    problems += [f"anthropic: {p}" for p in validate_anthropic(history)]
    if problems:
        msg = f"compacted history does not validate: {problems}"
        raise AssertionError(msg)


#: How many times an adapter asks again when its output is over the kit's character budget.
_REFITS = 3


class _Adapter:
    """One of our compactors behind the kit's ``compact(turns, round_num, budget_chars)``."""

    name = "mellea-ctx"

    def __init__(self) -> None:
        self._last_text: str | None = None
        self._last_ctx: ChatContext | None = None
        self._share = 0.0

    def make(self, budget_tokens: int, ctx: ChatContext) -> Compactor:
        """The compactor for ``ctx``, sized for ``budget_tokens`` of output."""
        raise NotImplementedError

    def context(self, turns: list[Turn], round_num: int) -> ChatContext:
        if (
            round_num > 1
            and self._last_ctx is not None
            and len(turns) == 1
            and turns[0].text == self._last_text
        ):
            return self._last_ctx  # the kit handed back our own output: continue from it
        ctx = ChatContext()
        lone = len(turns) == 1 and round_num > 1
        for turn in turns:
            # A lone system turn after round 1 is someone's compacted text: body, not a pin.
            role = "user" if lone or turn.role not in ("system", "user", "assistant") else turn.role
            body = turn.text if role == turn.role else f"[{turn.role}] {turn.text}"
            ctx = ctx.add(Message(role, body))
        return ctx

    def compact(
        self, turns: list[Turn], round_num: int = 1, budget_chars: int | None = None
    ) -> CompactedContext:
        ctx = self.context(turns, round_num)
        text = render(ctx.as_list())
        if budget_chars is None:
            budget_chars = max(1, int(len(text) * DEFAULT_SHARE))
        # The same rendering gives both figures, so the ratio carries its overheads.
        budget_tokens = max(1, int(budget_chars * ctx.token_count / max(1, len(text))))
        if round_num == 1:  # the kit's budget is a share of the round-1 text
            self._share = round(budget_chars / max(1, len(text)), 2)
        out = self.make(budget_tokens, ctx).compact(ctx)
        rendered = render(out.as_list())
        # The kit counts characters and we count tokens: a checkpoint's lines hold more
        # characters a token than the conversation did, so the conversion can overshoot.
        # Fit the characters as a user with a character budget would: ask again, smaller
        # by what the last try overshot (a few tries; the last one stands).
        for _ in range(_REFITS):
            if len(rendered) <= budget_chars or budget_tokens <= 1:
                break
            budget_tokens = max(1, int(budget_tokens * budget_chars / len(rendered) * 0.98))
            out = self.make(budget_tokens, ctx).compact(ctx)
            rendered = render(out.as_list())
        components = out.as_list()
        check_valid(components)
        self._last_ctx, self._last_text = out, rendered
        log = os.environ.get(LOG_ENV)
        if log:  # the runner's diagnostics: is an overshoot in tokens, or in the conversion?
            row = {
                "compactor": self.name,
                "round": round_num,
                "budget_chars": budget_chars,
                "budget_tokens": budget_tokens,
                "out_chars": len(rendered),
                "out_tokens": out.token_count,
                "share": self._share,
            }
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
        return CompactedContext(text=rendered, compactor_name=self.name, round_num=round_num)


class Summarize(_Adapter):
    """``LLMSummarizeCompactor(default_backend=ExtractiveBackend(), keep_n=4)``.

    The summary is asked for the budget left after what stays verbatim (the
    pinned system prompt and the last ``keep_n`` messages), as ``max_tokens``.
    """

    name = "mellea-ctx summarize (extractive)"

    def make(self, budget_tokens: int, ctx: ChatContext) -> Compactor:
        items = ctx.as_list()
        prefix = [c for c in items[:1] if c.role == "system"]
        tail = items[len(prefix) :][-KEEP_N:] if KEEP_N else []
        staying = ChatContext()
        for component in prefix + tail:
            staying = staying.add(component)
        summary = max(1, budget_tokens - staying.token_count)
        return LLMSummarizeCompactor(
            default_backend=ExtractiveBackend(),
            keep_n=KEEP_N,
            model_options={"max_tokens": summary},
        )


class SummarizeFromText(Summarize):
    """:class:`Summarize` without carried state: every round re-reads the kit's text.

    Not how a session runs (it keeps its checkpoints, ledger and all); shown so the gain of
    carrying state across chained compactions is measured, not assumed.
    """

    name = "mellea-ctx summarize, re-read from text each round"

    def context(self, turns: list[Turn], round_num: int) -> ChatContext:
        self._last_ctx = None
        return super().context(turns, round_num)


class TokenBudget(_Adapter):
    """``TokenBudgetCompactor(max_tokens=B, target_tokens=B, default_backend=ExtractiveBackend())``.

    ``B`` is the budget in tokens; the compactor sizes the summary and the
    recent turns it keeps itself (its defaults).
    """

    name = "mellea-ctx token-budget (extractive)"

    def make(self, budget_tokens: int, ctx: ChatContext) -> Compactor:
        return TokenBudgetCompactor(
            max_tokens=budget_tokens,
            target_tokens=budget_tokens,
            default_backend=ExtractiveBackend(),
        )


class Tiered(_Adapter):
    """``TieredCompactor([ClearToolResultsCompactor(), TokenBudgetCompactor(...)], ...)``.

    Clearing old tool results first, then the summarizing token budget, both
    aimed at the budget in tokens (docs/choosing.md, "Tiers").
    """

    name = "mellea-ctx tiered (clear, then summarize)"

    def make(self, budget_tokens: int, ctx: ChatContext) -> Compactor:
        return TieredCompactor(
            [
                ClearToolResultsCompactor(keep_last=3),
                TokenBudgetCompactor(
                    max_tokens=budget_tokens,
                    target_tokens=budget_tokens,
                    default_backend=ExtractiveBackend(),
                ),
            ],
            max_tokens=budget_tokens,
            target_tokens=budget_tokens,
        )


# --- the runner ----------------------------------------------------------------------------


def run_kit(args: list[str], log: Path | None = None) -> dict[str, Any]:
    """One ``compaction-kit benchmark ... --format json`` run, with this repository importable."""
    env = dict(os.environ)
    if log is not None:
        env[LOG_ENV] = str(log)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(ROOT)) if p)
    kit = Path(sys.executable).with_name("compaction-kit")
    command = [
        str(kit) if kit.exists() else "compaction-kit",
        "benchmark",
        *args,
        "--format",
        "json",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        msg = f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}"
        raise RuntimeError(msg)
    payload: dict[str, Any] = json.loads(done.stdout)
    return payload


def rank(entries: list[dict[str, Any]], budgets: Sequence[float]) -> None:
    """Rank each budget's entries with the kit's own key (compaction_kit.benchmark)."""
    for budget in budgets:
        group = [e for e in entries if e["budget_fraction"] == budget]
        group.sort(
            key=lambda e: (
                not e["budget_compliant"],
                -e["randomized"]["overall_final_survival"],
                -e["semantic"]["resolved_rate"],
                -e["semantic"]["distinct_pair_rate"],
                e["mean_final_output_ratio"],
            )
        )
        for position, entry in enumerate(group, start=1):
            entry["rank"] = position
    entries.sort(key=lambda e: (e["budget_fraction"], e["rank"]))


def sizes(rows: list[dict[str, Any]], budgets: Sequence[float]) -> list[dict[str, Any]]:
    """Per compactor and budget: the largest output over the size asked, in tokens and in
    characters, so an overshoot shows as the compactor's or as the conversion's."""
    out = []
    names = sorted({r["compactor"] for r in rows})
    for name in names:
        mine = [r for r in rows if r["compactor"] == name]
        # Budgets in characters differ per session; group by the share they were asked as.
        for budget in budgets:
            group = [r for r in mine if _share(r) == budget]
            if not group:
                continue
            out.append(
                {
                    "compactor": name,
                    "budget_fraction": budget,
                    "rounds": len(group),
                    "max_out_tokens_to_asked": round(
                        max(r["out_tokens"] / r["budget_tokens"] for r in group), 3
                    ),
                    "max_out_chars_to_budget": round(
                        max(r["out_chars"] / r["budget_chars"] for r in group), 3
                    ),
                }
            )
    return out


def _share(row: dict[str, Any]) -> float:
    return float(row.get("share", 0.0))


def ours(name: str) -> bool:
    return name.startswith("mellea-ctx")


def summary_table(payload: dict[str, Any]) -> list[str]:
    """Our questions, per compactor and budget: kept, resolved, stale, compliant."""
    lines = [
        "| budget | compactor | canaries kept (randomized) | updated values resolved "
        "(semantic) | stale value shown | restated values resolved (randomized) | "
        "compliant | largest output / budget |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for e in payload["entries"]:
        sem = e["semantic"]["conflicts"]
        sup = e["randomized"]["supersession"]
        name = f"**{e['compactor']}**" if ours(e["compactor"]) else e["compactor"]
        lines.append(
            f"| {e['budget_fraction']:.0%} | {name} | "
            f"{e['randomized']['overall_final_survival']:.1%} | "
            f"{e['semantic']['resolved_rate']:.1%} ({sem['resolved']}/{sem['n']}) | "
            f"{sem['stale']}/{sem['n']} | {sup['resolved']}/{sup['n']} | "
            f"{'yes' if e['budget_compliant'] else 'NO'} | {e['max_output_to_budget']:.2f} |"
        )
    return lines


def by_type_table(payload: dict[str, Any]) -> list[str]:
    types = sorted({t for e in payload["entries"] for t in e["randomized"]["final_median_by_type"]})
    lines = [
        "| budget | compactor | " + " | ".join(types) + " |",
        "|---|---|" + "---:|" * len(types),
    ]
    for e in payload["entries"]:
        if not ours(e["compactor"]) and e["compactor"] not in (
            "update-aware-checklist",
            "semantic-checklist",
        ):
            continue
        cells = " | ".join(
            f"{e['randomized']['final_median_by_type'].get(t, 0.0):.0%}" for t in types
        )
        lines.append(f"| {e['budget_fraction']:.0%} | {e['compactor']} | {cells} |")
    return lines


#: Issue 21's "Done when": canaries kept, updates resolved (at 20% and 30%), stale at most.
GOALS = {0.1: (0.60, None), 0.2: (0.95, 0.90), 0.3: (1.00, 0.90)}
STALE_AT_MOST = 4


def goals(payload: dict[str, Any]) -> list[str]:
    """Each of ours against issue 21's goals, budget by budget."""
    lines = [
        "| compactor | budget | kept (goal) | resolved (goal) | stale (goal: at most "
        f"{STALE_AT_MOST}) | compliant | all met |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in payload["entries"]:
        if not ours(e["compactor"]) or e["budget_fraction"] not in GOALS:
            continue
        kept_goal, resolved_goal = GOALS[e["budget_fraction"]]
        kept = e["randomized"]["overall_final_survival"]
        resolved = e["semantic"]["resolved_rate"]
        stale = e["semantic"]["conflicts"]["stale"]
        checks = [
            kept >= kept_goal,
            resolved_goal is None or resolved >= resolved_goal,
            stale <= STALE_AT_MOST,
            e["budget_compliant"],
        ]
        resolved_cell = f"{resolved:.1%}" + (
            f" (≥ {resolved_goal:.0%})" if resolved_goal is not None else ""
        )
        lines.append(
            f"| {e['compactor']} | {e['budget_fraction']:.0%} | {kept:.1%} (≥ {kept_goal:.0%}) "
            f"| {resolved_cell} | {stale}/{e['semantic']['conflicts']['n']} "
            f"| {'yes' if e['budget_compliant'] else 'NO'} | {'yes' if all(checks) else 'NO'} |"
        )
    return lines


def markdown(payload: dict[str, Any]) -> str:
    head = [
        "# compaction-conformance-kit budget benchmark: ours next to the kit's built-ins",
        "",
        f"`compaction-kit benchmark --budgets {payload['budgets_arg']} --seeds "
        f"{payload['seeds_arg']} --rounds {payload['rounds']}` (kit "
        f"{payload['kit_version']}), the built-ins (`--compactor all`) and each of "
        f"ours (`--spec {'`, `'.join(payload['specs'])}`) in separate runs of the kit, "
        "merged and ranked per budget with the kit's key. Generated by "
        "`benchmarks/conformance.py`; method in its docstring and docs/benchmarks.md.",
        f"mellea_ctx from `{payload['mellea_ctx']}`; {payload['seconds']} s in all.",
        "",
        "Canaries kept: the share of the randomized suite's canaries (20 per session, "
        f"{len(payload['seeds'])} sessions) whose every required token is in the text after the "
        "last round. Updated values resolved: of the semantic suites' conflicts (8 per "
        "session, paraphrased restatements), the latest value present and the superseded one "
        "absent. Stale value shown: conflicts whose superseded value is in the text. "
        "Compliant: every round's output within the character budget (nothing truncated by "
        "the adapter).",
        "",
        "## Ours against issue 21's goals",
        "",
        *goals(payload),
        "",
        "## Summary",
        "",
        *summary_table(payload),
        "",
        "## Ours: the largest output over the size asked",
        "",
        "In tokens (what our compactor was asked for) and in characters (what the kit "
        "counts): a token figure at or under 1 with a character figure over it means the "
        "conversion, not the compactor, overshot.",
        "",
        "| budget | compactor | rounds | tokens out / asked | characters out / budget |",
        "|---|---|---:|---:|---:|",
        *[
            f"| {r['budget_fraction']:.0%} | {r['compactor']} | {r['rounds']} | "
            f"{r['max_out_tokens_to_asked']:.2f} | {r['max_out_chars_to_budget']:.2f} |"
            for r in sorted(
                payload.get("ours_in_tokens", []),
                key=lambda r: (r["budget_fraction"], r["compactor"]),
            )
        ],
        "",
        "## Final survival by canary type (median over sessions)",
        "",
        *by_type_table(payload),
        "",
    ]
    kit_md = budget_benchmark_to_markdown(payload).replace(
        "# Budget benchmark", "## The kit's own table"
    )
    return "\n".join(head) + "\n" + kit_md.replace("\n## Budget", "\n### Budget") + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one seed, 20%%, two rounds")
    parser.add_argument("--specs", nargs="*", default=list(SPECS), help="our module:Class specs")
    parser.add_argument("--no-builtins", action="store_true", help="skip the kit's built-ins")
    parser.add_argument(
        "--out", help="results name in benchmarks/results, or a path prefix (default: conformance)"
    )
    args = parser.parse_args(argv)
    budgets, seeds, rounds = ("20%", "1", 2) if args.quick else (BUDGETS, SEEDS, ROUNDS)
    common = ["--budgets", budgets, "--seeds", seeds, "--rounds", str(rounds)]
    started = time.perf_counter()
    runs = [] if args.no_builtins else [run_kit([*common, "--compactor", "all"])]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "rounds.jsonl"
        runs += [run_kit([*common, "--spec", spec], log) for spec in args.specs]
        rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    payload = dict(runs[0])
    if payload.get("kit_version") != KIT_VERSION:
        print(
            f"warning: compaction-conformance-kit {payload.get('kit_version')} is not "
            f"{KIT_VERSION}, the version issue 21's goals were set on",
            file=sys.stderr,
        )
    payload["entries"] = [e for run in runs for e in run["entries"]]
    rank(payload["entries"], payload["budgets"])
    payload["ours_in_tokens"] = sizes(rows, payload["budgets"])
    payload.update(
        budgets_arg=budgets,
        seeds_arg=seeds,
        specs=list(args.specs),
        mellea_ctx=_tree_of(Path(sys.modules["mellea_ctx"].__file__ or "").parent),
        seconds=round(time.perf_counter() - started, 1),
    )
    name = args.out or ("conformance-quick" if args.quick else "conformance")
    out = Path(name) if "/" in name else RESULTS / name
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.parent / f"{out.name}.json").write_text(
        json.dumps(payload, indent=2) + "\n", encoding="utf-8"
    )
    (out.parent / f"{out.name}.md").write_text(markdown(payload), encoding="utf-8")
    print("\n".join(summary_table(payload)))
    return payload


if __name__ == "__main__":
    main()
