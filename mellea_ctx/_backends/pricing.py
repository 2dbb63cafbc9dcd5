"""What a model's tokens cost: a :class:`Pricing` value, usable offline.

A price per token for each way a prompt token can be billed (uncached input,
read from the prompt cache, written to it with a 5-minute or a 1-hour
lifetime) and for output tokens, with the model's context window from our
own table (:func:`~mellea_ctx.context_window`).

``Pricing()`` is the unit model: prices relative to one uncached input token,
with Anthropic's published multipliers (cache read 0.1x, 5-minute write
1.25x, 1-hour write 2x) and output at 5x (Claude Sonnet 4.5: $15 against $3
per million tokens). It needs nothing installed and is what the billing
benchmark bills by. :meth:`Pricing.for_model` reads dollar prices from
``genai-prices`` (pydantic's maintained table, shipped with its data, so it
works offline; ``pip install 'mellea-ctx[pricing]'``), imported only then.
"""

from __future__ import annotations

import importlib
from decimal import Decimal
from typing import Any

import attrs

from .._core.checks import require_int, require_number
from .._core.exceptions import InvalidArgumentError
from .windows import context_window

_FIELDS = ("input", "cache_read", "cache_write", "cache_write_1h", "output")


def _price(owner: str, name: str, value: object) -> float:
    return float(require_number(owner, name, value, minimum=0, about="a price per token"))


@attrs.define(frozen=True, slots=True)
class Pricing:
    """Prices per token, for one model.

    Attributes:
        input: An uncached input token.
        cache_read: An input token read from the prompt cache.
        cache_write: An input token written to the cache (5-minute lifetime).
        cache_write_1h: An input token written to the cache (1-hour lifetime).
        output: An output token.
        model: The model these are the prices of (``""``: the unit model).
        context_window: The model's window in tokens, when known.
        ttl: Seconds a cached prefix lives unused (300: the 5-minute cache).

    Examples:
        >>> Pricing().cost(input=1_000, output=100)
        1500.0
        >>> Pricing(cache_read=0.5).cache_read
        0.5
    """

    input: float = 1.0
    cache_read: float = 0.1
    cache_write: float = 1.25
    cache_write_1h: float = 2.0
    output: float = 5.0
    model: str = ""
    context_window: int | None = None
    ttl: float = 300.0

    def __attrs_post_init__(self) -> None:
        for name in _FIELDS:
            _price("Pricing", name, getattr(self, name))
        require_number("Pricing", "ttl", self.ttl, minimum=0, above=True, unit="seconds")
        if self.context_window is not None:
            window, also = self.context_window, "None for unknown"
            require_int("Pricing", "context_window", window, minimum=1, unit="tokens", also=also)

    @property
    def write(self) -> float:
        """The price of a cache write at this pricing's ``ttl`` (1-hour past 300 s)."""
        return self.cache_write if self.ttl <= 300 else self.cache_write_1h

    def cost(
        self,
        *,
        input: int = 0,
        cache_read: int = 0,
        cache_write: int = 0,
        output: int = 0,
    ) -> float:
        """Return the price of one request's tokens (``input``: uncached, not cache reads)."""
        return (
            self.input * input
            + self.cache_read * cache_read
            + self.write * cache_write
            + self.output * output
        )

    def relative(self) -> Pricing:
        """Return these prices in units of one uncached input token."""
        if self.input <= 0:
            msg = "Pricing.relative: the input price is 0, so nothing is relative to it"
            raise InvalidArgumentError(msg)
        scaled = {name: getattr(self, name) / self.input for name in _FIELDS}
        return attrs.evolve(self, **scaled)

    @classmethod
    def for_model(cls, name: str, **overrides: Any) -> Pricing:
        """Return ``name``'s prices per token from ``genai-prices``, then ``overrides``.

        A cache price ``genai-prices`` does not list is billed as input (a
        1-hour write as a 5-minute one): OpenAI's automatic caching has no
        write premium. The
        base tier is used (Anthropic's long-context tier starts at 200,000
        tokens). ``context_window`` comes from :func:`~mellea_ctx.context_window`
        unless overridden.

        Raises:
            InvalidArgumentError: When ``genai-prices`` is not installed, does
                not know ``name``, or an override is not a field.
        """
        unknown = sorted(set(overrides) - {f.name for f in attrs.fields(cls)})
        if unknown:
            msg = f"Pricing.for_model: unknown override(s) {unknown}; fields: {_FIELDS}"
            raise InvalidArgumentError(msg)
        try:
            prices = importlib.import_module("genai_prices")
        except ImportError as exc:
            msg = (
                "Pricing.for_model needs genai-prices: pip install 'mellea-ctx[pricing]' "
                "(or build Pricing(input=..., ...) yourself)"
            )
            raise InvalidArgumentError(msg) from exc
        try:
            found = prices.calc_price(prices.Usage(input_tokens=1), model_ref=name)
        except LookupError as exc:
            msg = f"Pricing.for_model: genai-prices does not know the model {name!r}"
            raise InvalidArgumentError(msg) from exc
        table = found.model_price
        base = _per_token(getattr(table, "input_mtok", None))
        values: dict[str, Any] = {"input": base if base is not None else 0.0}
        # A price not listed is billed like the one it falls back to: no cache
        # (or automatic caching without a write premium, as OpenAI's) bills
        # reads and writes as input; a 1-hour write as a 5-minute one.
        for field, attr, fallback in (
            ("cache_read", "cache_read_mtok", "input"),
            ("cache_write", "cache_write_mtok", "input"),
            ("cache_write_1h", "cache_write_1h_mtok", "cache_write"),
            ("output", "output_mtok", "input"),
        ):
            got = _per_token(getattr(table, attr, None))
            values[field] = got if got is not None else values[fallback]
        values["model"] = name
        values["context_window"] = context_window(name)
        values.update(overrides)
        return cls(**values)


def _per_token(value: object) -> float | None:
    """A genai-prices price per million tokens (flat or tiered: its base) as a price per token."""
    if value is None:
        return None
    base = getattr(value, "base", value)
    if isinstance(base, Decimal | int | float):
        return float(base) / 1_000_000
    return None
