"""The timing program of ``benchmarks/revisions.py``: the core's hot paths, one case at a time.

It times whichever ``mellea_ctx`` comes first on ``sys.path``, so the same
file measures two revisions when each is run with ``PYTHONPATH`` set to its
own tree. It therefore uses only public API that every revision it compares
has (checked against 31ee794, the code before issue 20), and imports
nothing else of this repository.

Each case builds its inputs before the clock starts, afresh for each sample
and with text unique to the sample's seed (so no per-component or per-text
memo carries over from one sample to the next), then times one call of its
work with ``time.perf_counter``, the garbage collector on (collected, and the
inputs frozen out of it, before the clock starts). The work returns a small
value that says what it computed (a length, a token count), so that a run can
see whether the two revisions computed the same thing.

Run as ``python revision_cases.py --worker`` it reads one JSON request per
line on stdin (``{"case": key, "n": n, "seed": seed}``) and writes one JSON
reply per line (``{"seconds": ..., "check": ...}``); ``{"about": true}``
answers where ``mellea_ctx`` was imported from. ``--import-time`` prints the
seconds ``import mellea_ctx`` takes in this fresh process (``--names``: and
reading ``ChatContext``, ``Message`` and ``TokenBudgetCompactor`` from it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

#: A case's work: one call is one sample; it returns what it computed.
Work = Callable[[], Any]

TEXT_LEN = 200
_WORDS = (
    "agent", "tool", "call", "result", "error", "retry", "plan", "step", "file", "path",
    "config", "value", "token", "budget", "window", "summary", "context", "message", "user",
    "assistant", "system", "search", "query", "index", "record", "update", "delete", "create",
    "parse", "render", "check", "alpha", "beta", "gamma", "delta", "north", "south", "east",
    "west", "river", "mountain",
)  # fmt: skip


def make_texts(n: int, seed: int) -> list[str]:
    """``n`` distinct texts of ``TEXT_LEN`` characters, each starting with its seed and index."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        words = [f"[{seed}:{i}]"]
        length = len(words[0])
        while length < TEXT_LEN:
            word = rng.choice(_WORDS)
            word = f"{word}-{rng.randrange(10_000)}" if rng.random() < 0.15 else word
            words.append(word)
            length += len(word) + 1
        texts.append(" ".join(words)[:TEXT_LEN])
    return texts


def conversation(n: int, seed: int, *, outputs: bool = False) -> list[Any]:
    """A system message, then user / assistant turns: ``n`` components.

    With ``outputs`` the assistant turns are ``ModelOutputThunk`` values with
    usage (a running prompt size, as a backend reports it), as the core
    benchmark's threshold case has them.
    """
    from mellea_ctx import Message, ModelOutputThunk, Usage

    texts = make_texts(n, seed)
    items: list[Any] = [Message("system", texts[0])]
    for i in range(1, n):
        if i % 2:
            items.append(Message("user", texts[i]))
        elif outputs:
            usage = Usage(prompt_tokens=60 + 55 * i, completion_tokens=50)
            items.append(ModelOutputThunk(texts[i], usage=usage))
        else:
            items.append(Message("assistant", texts[i]))
    return items


def agent_messages(n: int, seed: int) -> list[dict[str, Any]]:
    """An agent loop in OpenAI Chat form: system, task, then tool calls and their results."""
    n -= n % 2  # system, task, then call-and-result pairs: end on a result
    texts = make_texts(n, seed)
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix the failing test. {texts[0]}"},
    ]
    step = 0
    while len(out) < n:
        call_id = f"call_{seed}_{step}"
        arguments = json.dumps({"command": f"pytest -x -k case_{step}"})
        function = {"name": "bash", "arguments": arguments}
        out.append(
            {
                "role": "assistant",
                "content": f"Step {step}: run the tests.",
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        result = f"case_{step} {texts[(step + 1) % n]}\n" * 4
        out.append({"role": "tool", "tool_call_id": call_id, "content": result})
        step += 1
    return out


def _adds(compactor: Callable[[], Any] | None, *, outputs: bool = False, read: bool = False):
    """Build a case of adds: ``n`` components into ``ChatContext(compactor=...)``."""

    def build(n: int, seed: int) -> Work:
        from mellea_ctx import ChatContext

        items = conversation(n, seed, outputs=outputs)
        ctx0 = ChatContext(compactor=None if compactor is None else compactor())

        def work() -> int:
            ctx = ctx0
            if read:
                for item in items:
                    ctx = ctx.add(item)
                    ctx.as_list()
            else:
                for item in items:
                    ctx = ctx.add(item)
            return len(ctx.as_list())

        return work

    return build


def _window() -> Any:
    from mellea_ctx import WindowCompactor

    return WindowCompactor(size=20)


def _threshold(measure: str) -> Callable[[], Any]:
    def make() -> Any:
        from mellea_ctx import ThresholdCompactor

        return ThresholdCompactor(_window(), threshold=10**9, measure=measure)

    return make


def _direct(compactor: Callable[[], Any], length: int):
    """Build a case of ``n`` direct ``compactor.compact(ctx)`` calls, each on its own context.

    Each context holds ``length`` components (a shared history, then one
    component of its own), so no memo of one context serves the next.
    """

    def build(n: int, seed: int) -> Work:
        from mellea_ctx import ChatContext, Message

        shared = ChatContext()
        for item in conversation(length - 1, seed):
            shared = shared.add(item)
        contexts = [shared.add(Message("user", text)) for text in make_texts(n, seed + 1)]
        run = compactor().compact

        def work() -> int:
            return sum(len(run(ctx)) for ctx in contexts)

        return work

    return build


def _token_budget(preserve_facts: bool):
    """Build a case of one due ``TokenBudgetCompactor`` compaction with ``ExtractiveBackend``.

    The context is an agent loop of ``n`` messages whose tokens are counted
    (as a gate has them); the trigger is half of them, the target a quarter.
    """

    def build(n: int, seed: int) -> Work:
        from mellea_ctx import ChatContext, ExtractiveBackend, TokenBudgetCompactor, from_openai

        ctx = ChatContext()
        for item in from_openai(agent_messages(n, seed)):
            ctx = ctx.add(item)
        total = ctx.token_count
        compactor = TokenBudgetCompactor(
            max_tokens=total // 2,
            target_tokens=total // 4,
            boundary="model_step",
            preserve_facts=preserve_facts,
        )
        backend = ExtractiveBackend()

        def work() -> list[int]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = compactor.compact(ctx, backend=backend)
            return [len(result), result.token_count]

        return work

    return build


def _read(n: int, seed: int) -> Work:
    from mellea_ctx import from_openai

    messages = agent_messages(n, seed)
    return lambda: len(from_openai(messages))


def _message(n: int, seed: int) -> Work:
    from mellea_ctx import Message

    texts = make_texts(n, seed)
    return lambda: len([Message("user", text) for text in texts])


def _generate_scripted(n: int, seed: int) -> Work:
    """``n`` awaited ``ScriptedBackend.generate`` calls on a 20-message history."""
    from mellea_ctx import ScriptedBackend

    history = conversation(20, seed)
    backend = ScriptedBackend(lambda messages, options: "ok")

    async def calls() -> int:
        for _ in range(n):
            await backend.generate(history, model_options={"max_tokens": 16})
        return len(backend.calls)

    return lambda: asyncio.run(calls())


def _generate_extractive(n: int, seed: int) -> Work:
    """``n`` summary requests to ``ExtractiveBackend``, each of a 20-message conversation."""
    from mellea_ctx import ExtractiveBackend, Message

    prompts = []
    for i in range(n):
        said = "\n".join(f"[user] {text}" for text in make_texts(20, seed * 1_000 + i))
        prompts.append([Message("user", f"<conversation>\n{said}\n</conversation>")])
    backend = ExtractiveBackend()

    async def calls() -> int:
        outputs = [await backend.generate(p, model_options={"max_tokens": 120}) for p in prompts]
        return sum(len(out.value or "") for out in outputs)

    return lambda: asyncio.run(calls())


@dataclass(frozen=True)
class Case:
    """One timed case.

    Args:
        key: Stable identifier in the JSON.
        title: Label in the table.
        n: Size at full scale (components, calls or messages, as the title says).
        quick: Size for a quick run.
        build: ``build(n, seed)`` makes the inputs and returns the work to time.
        threaded: The work runs partly in a worker thread (a blocking
            compaction waits for its summary there), which callgrind's
            toggle does not follow: its instructions are not counted.
    """

    key: str
    title: str
    n: int
    quick: int
    build: Callable[[int, int], Work]
    threaded: bool = False


CASES: tuple[Case, ...] = (
    Case("plain_adds", "plain adds", 50_000, 2_000, _adds(None)),
    Case("add_as_list", "add + as_list", 10_000, 500, _adds(None, read=True)),
    Case("window_20", "WindowCompactor(size=20) adds", 30_000, 1_000, _adds(_window)),
    Case(
        "threshold_tokens",
        "Threshold(Window(20), 1e9) adds",
        10_000,
        1_000,
        _adds(_threshold("tokens"), outputs=True),
    ),
    Case(
        "threshold_usage",
        "  same, measure='usage'",
        30_000,
        1_000,
        _adds(_threshold("usage"), outputs=True),
    ),
    Case(
        "window_compact", "Window(20).compact(ctx), 100 msgs", 20_000, 2_000, _direct(_window, 100)
    ),
    Case("window_fits", "Window(20).compact(ctx), 10 msgs", 50_000, 5_000, _direct(_window, 10)),
    Case(
        "threshold_compact",
        "Threshold(Window(20), 1e9).compact(ctx)",
        50_000,
        5_000,
        _direct(_threshold("tokens"), 100),
    ),
    Case(
        "token_budget_facts",
        "TokenBudget compaction, facts on",
        400,
        80,
        _token_budget(True),
        threaded=True,
    ),
    Case(
        "token_budget_plain",
        "TokenBudget compaction, facts off",
        400,
        80,
        _token_budget(False),
        threaded=True,
    ),
    Case("read_openai", "from_openai, agent loop", 8_000, 400, _read),
    Case("message", "Message(role, text)", 50_000, 5_000, _message),
    Case("generate_scripted", "ScriptedBackend.generate", 10_000, 500, _generate_scripted),
    Case("generate_extractive", "ExtractiveBackend.generate", 10, 2, _generate_extractive),
)
BY_KEY = {case.key: case for case in CASES}


def run_work(work: Work, call: Callable[[Work], Any]) -> Any:
    """``call(work)`` with the garbage collector collected and the inputs frozen out of it.

    The inputs are long-lived: a collection of them is not the work's cost.
    """
    gc.collect()
    gc.freeze()
    try:
        return call(work)
    finally:
        gc.unfreeze()


def measure(key: str, n: int, seed: int) -> dict[str, Any]:
    """Build case ``key`` at size ``n`` for ``seed``, time its work once; seconds and check."""
    work = BY_KEY[key].build(n, seed)

    def timed(work: Work) -> tuple[float, Any]:
        start = time.perf_counter()
        check = work()
        return time.perf_counter() - start, check

    seconds, check = run_work(work, timed)
    return {"seconds": seconds, "check": check}


def count_once(key: str, n: int, seed: int) -> Any:
    """Build case ``key`` and run its work once inside ``operator.call`` (3.11+).

    Under ``valgrind --tool=callgrind --toggle-collect=*operator_call*`` only
    the work's instructions are counted: not the interpreter's start, the
    imports, a first smaller run (lazy imports, first calls) or the inputs' building.
    """
    import operator

    build = BY_KEY[key].build
    build(max(1, n // 10), seed + 1)()  # first calls (lazy imports, caches) are not the work
    return run_work(build(n, seed), operator.call)  # type: ignore[attr-defined]


def about() -> dict[str, Any]:
    """Where ``mellea_ctx`` was imported from, and the interpreter."""
    import mellea_ctx

    return {"file": mellea_ctx.__file__, "python": sys.version.split()[0]}


def serve(requests: TextIO, replies: TextIO) -> None:
    """Answer one JSON request per line until ``requests`` ends."""
    for line in requests:
        request = json.loads(line)
        if request.get("about"):
            reply = about()
        else:
            reply = measure(request["case"], request["n"], request["seed"])
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


#: The names ``--import-time --names`` reads after the import: what a first script touches.
FIRST_NAMES = ("ChatContext", "Message", "TokenBudgetCompactor")


def import_time(names: bool) -> float:
    """Seconds ``import mellea_ctx`` takes in this process (call it in a fresh one).

    With ``names``, the import and a read of each of ``FIRST_NAMES`` (a face
    that imports its layers lazily pays for them there).
    """
    start = time.perf_counter()
    import mellea_ctx

    if names:
        for name in FIRST_NAMES:
            getattr(mellea_ctx, name)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--worker", action="store_true", help="answer JSON requests on stdin")
    mode.add_argument("--import-time", action="store_true", help="time `import mellea_ctx`")
    mode.add_argument("--count", metavar="CASE", help="run CASE's work once in operator.call")
    parser.add_argument("--names", action="store_true", help="and read FIRST_NAMES after it")
    parser.add_argument("-n", type=int, help="the size for --count (the quick size)")
    args = parser.parse_args(argv)
    if args.count:
        print(json.dumps({"check": count_once(args.count, args.n or BY_KEY[args.count].quick, 1)}))
    elif args.import_time:
        print(json.dumps({"seconds": import_time(args.names)}))
    else:
        serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
