"""``mellea-ctx cost``: what a transcript would have billed under each compaction policy.

The transcript is replayed message by message into a context under each
policy; before every model answer (an assistant message) the context is one
request, billed by prompt caching: the leading messages it shares with the
request before it are cache reads, the rest cache writes (the agent keeps a
breakpoint at the end of every request). Summary calls (made offline by
:class:`~mellea_ctx.ExtractiveBackend`) are billed as their request mode sends
them: quoted in full at the input price, continuation by its shared prefix
with the last request. The prefix is counted in whole messages, so it is a
little below what a provider's token-level cache serves, for every policy
alike. Offline: no key, no network.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click
from rich.table import Table

from .._backends.extractive import ExtractiveBackend
from .._backends.pricing import Pricing
from .._compaction.planner import CompactionPlanner
from .._compaction.token_budget import TokenBudgetCompactor
from .._core.boundaries import is_safe_cut, prefix_end
from .._core.components import Component, ModelOutputThunk
from .._core.context import ChatContext
from .._core.exceptions import InvalidArgumentError
from .._core.pins import PinPredicate
from .._core.protocols import CompactCall, InlineCompactor
from .conversation_io import load, write
from .options import FILE, PINS, choice_option, command, format_option, tokens_option
from .terminal import InputError, stdout


@attrs.define
class Bill:
    """What one policy billed over a replay, in tokens, and per request cumulatively."""

    name: str
    cache_read: int = 0
    cache_write: int = 0
    uncached: int = 0
    output: int = 0
    compactions: int = 0
    cumulative: list[float] = attrs.field(factory=list)

    def total(self, p: Pricing) -> float:
        """The bill under ``p``."""
        return p.cost(
            input=self.uncached,
            cache_read=self.cache_read,
            cache_write=self.cache_write,
            output=self.output,
        )


class _Metered:
    """Records each summary request and the usage its answer reports."""

    def __init__(self) -> None:
        self.inner = ExtractiveBackend()
        self.sent: list[tuple[list[Component], int, int]] = []

    async def generate(self, messages: Sequence[Component], **kwargs: Any) -> ModelOutputThunk:
        out: ModelOutputThunk = await self.inner.generate(messages, **kwargs)
        usage = out.usage
        prompt = 0 if usage is None else usage.prompt_tokens
        completion = 0 if usage is None else usage.completion_tokens
        self.sent.append((list(messages), prompt, completion))
        return out


def _shared(previous: Sequence[Component], current: Sequence[Component], ctx: ChatContext) -> int:
    """Tokens of the leading messages ``current`` shares (the same objects) with ``previous``."""
    hit = 0
    for a, b in zip(previous, current, strict=False):
        if a is not b:
            break
        hit += ctx.counter.count(b)
    return hit


def replay(
    components: Sequence[Component],
    name: str,
    make: Callable[[_Metered], InlineCompactor | None],
    pricing: Pricing,
    *,
    continuation: bool = False,
) -> Bill:
    """Replay ``components`` into a context compacted by ``make(backend)``; bill every request."""
    backend = _Metered()
    compactor = make(backend)
    ctx = ChatContext(compactor=compactor)
    bill = Bill(name)
    previous: list[Component] = []
    running = 0.0
    for c in components:
        if c.role == "assistant" and c.tool_call_id is None and len(ctx):
            request = list(ctx)
            size = ctx.token_count
            hit = _shared(previous, request, ctx)
            bill.cache_read += hit
            bill.cache_write += size - hit
            running += pricing.cost(cache_read=hit, cache_write=size - hit)
            bill.cumulative.append(running)
            previous = request
        calls = len(backend.sent)
        before = ctx
        ctx = ctx.add(c)
        if len(ctx) < len(before) + 1:
            bill.compactions += 1
        for sent, prompt, completion in backend.sent[calls:]:
            bill.output += completion
            if continuation:
                hit = _shared(previous, sent, ctx)
                bill.cache_read += hit
                bill.cache_write += max(0, prompt - hit)
                running += pricing.cost(cache_read=hit, cache_write=max(0, prompt - hit))
            else:
                bill.uncached += prompt
                running += pricing.cost(input=prompt)
            running += pricing.cost(output=completion)
            if bill.cumulative:
                bill.cumulative[-1] = running
    return bill


class _Sliding(InlineCompactor):
    """A token sliding window cut on every add: drop the oldest body messages until the
    context fits ``limit``, never starting the body on a tool result (mellea's window,
    sized in tokens)."""

    def __init__(self, limit: int, pin: PinPredicate) -> None:
        self.limit, self.pin = limit, pin

    def steps(self, call: CompactCall) -> ChatContext:
        """Return ``call.ctx`` cut to fit ``limit`` (``ctx`` itself when it fits)."""
        ctx = call.ctx
        over = ctx.token_count - self.limit
        if over <= 0:
            return ctx
        items = ctx.as_list()
        p = prefix_end(items, self.pin)
        k, dropped = p, 0
        while k < len(items) - 1 and (dropped < over or not is_safe_cut(items, k, None)):
            dropped += ctx.counter.count(items[k])
            k += 1
        return ctx if k <= p else ctx.replace_span(p, k)


def _policies(
    limit: int, target: int, pin: PinPredicate
) -> list[tuple[str, Callable[[_Metered], InlineCompactor | None], bool]]:
    def budget(request: str, aim: int, planned: bool) -> Callable[[_Metered], InlineCompactor]:
        def make(backend: _Metered) -> InlineCompactor:
            return TokenBudgetCompactor(
                max_tokens=limit,
                target_tokens=aim,
                boundary="model_step",
                pin_predicate=pin,
                default_backend=backend,
                keep_replaced=False,
                request=request,  # type: ignore[arg-type]
                planner=CompactionPlanner() if planned else None,
            )

        return make

    small = max(256, limit // 16)
    return [
        ("no compaction", lambda _: None, False),
        (f"sliding window {limit:,}", lambda _: _Sliding(limit, pin), False),
        (f"budget {limit:,} -> {target:,}, quoted", budget("quoted", target, False), False),
        (
            f"budget {limit:,} -> {target:,}, continuation",
            budget("continuation", target, False),
            True,
        ),
        (f"planner, limit {limit:,} -> {small:,}", budget("continuation", small, True), True),
    ]


def _table(bills: Sequence[Bill], pricing: Pricing, dollars: bool) -> Table:
    table = Table(title="What each policy would have billed")
    for column in (
        "policy",
        "compactions",
        "cache reads",
        "cache writes",
        "uncached input",
        "output",
        "billed",
        "vs no compaction",
    ):
        table.add_column(column, justify="left" if column == "policy" else "right")
    base = bills[0].total(pricing) or 1.0
    for b in bills:
        total = b.total(pricing)
        shown = f"${total:,.4f}" if dollars else f"{total:,.0f}"
        table.add_row(
            b.name,
            f"{b.compactions:,}",
            f"{b.cache_read:,}",
            f"{b.cache_write:,}",
            f"{b.uncached:,}",
            f"{b.output:,}",
            shown,
            f"{total / base:.2f}x",
        )
    return table


def plot_bills(bills: Sequence[Bill], title: str, unit: str) -> bytes:
    """Draw cumulative billed per request, one line per policy, as PNG bytes.

    Raises:
        ImportError: When matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 4.5), dpi=100)
    axes = figure.add_subplot()
    for b in bills:
        axes.plot(range(1, len(b.cumulative) + 1), b.cumulative, label=b.name)
    axes.set_xlabel("model request")
    axes.set_ylabel(f"cumulative billed ({unit})")
    axes.set_title(title)
    axes.legend(loc="upper left")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


_COST_HELP = """\
Replay a transcript under several compaction policies and show what each bills.

Every request (the context before each assistant message) is billed by
prompt caching: the messages it shares with the request before it are cache
reads, the rest cache writes; summaries (made offline, extractively) as
their request mode sends them. Policies: no compaction, a token sliding
window at --max-tokens, TokenBudgetCompactor from --max-tokens to --target
with quoted and continuation summaries, and the CompactionPlanner. --model
prices in dollars from genai-prices (pip install 'mellea-ctx[pricing]');
without it, in input-token units (cache read 0.1x, write 1.25x, output 5x).
Offline: no key, no network.

\b
Examples:
  mellea-ctx cost run.json --model claude-sonnet-4-5
  mellea-ctx cost run.anthropic.json --max-tokens 40000 --plot bill.png
"""


@command("cost", _COST_HELP, "What each compaction policy would bill for a transcript.")
@FILE
@click.option("--model", metavar="NAME", help="Price in dollars for this model (genai-prices).")
@tokens_option("--max-tokens", help="The hard limit [default: half the transcript's tokens].")
@tokens_option("--target", help="Where the fixed policies aim [default: half of --max-tokens].")
@choice_option("--pin", list(PINS), default="system", help="The prefix every policy keeps.")
@click.option("--plot", metavar="PNG", help="Also draw cumulative billed per request.")
@format_option("The input's format [default: detected].")
def cost(
    file: str | None,
    model: str | None,
    max_tokens: int | None,
    target: int | None,
    pin: str,
    plot: str | None,
    fmt: str | None,
) -> None:
    plotter = None
    if plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError as exc:
            msg = "--plot needs matplotlib: pip install 'mellea-ctx[plot]'"
            raise InputError(msg) from exc
        plotter = plot_bills
    try:
        pricing = Pricing.for_model(model) if model else Pricing()
    except InvalidArgumentError as exc:
        raise InputError(str(exc)) from exc
    transcript, source = load(file, fmt)
    components = transcript.components
    total = _total(components)
    limit = max_tokens or max(1_000, total // 2)
    aim = min(limit, target or limit // 2)
    bills = [
        replay(components, name, make, pricing, continuation=cont)
        for name, make, cont in _policies(limit, aim, PINS[pin])
    ]
    console = stdout()
    console.print(_table(bills, pricing, dollars=bool(model)))
    unit = "$" if model else "input tokens"
    console.print(f"{source}: {len(components):,} messages, {total:,} tokens; billed in {unit}.")
    if plotter is not None and plot is not None:
        write(plotter(bills, f"mellea-ctx cost: {source}", unit), plot)
        console.print(f"wrote {plot}")


def _total(components: Sequence[Component]) -> int:
    ctx = ChatContext()
    for c in components:
        ctx = ctx.add(c)
    return ctx.token_count
