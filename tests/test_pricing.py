"""Pricing: the unit model offline, and dollar prices read from genai-prices."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import InvalidArgumentError, Pricing, context_window


def test_unit_model_is_anthropics_multipliers() -> None:
    # Anthropic's prompt caching page: cache reads 0.1x base input, 5-minute
    # writes 1.25x, 1-hour writes 2x.
    p = Pricing()
    assert (p.input, p.cache_read, p.cache_write, p.cache_write_1h) == (1.0, 0.1, 1.25, 2.0)
    assert p.cost(input=10, cache_read=100, cache_write=8, output=2) == 10 + 10 + 10 + 10


def test_one_hour_ttl_bills_one_hour_writes() -> None:
    assert Pricing(ttl=3600).write == 2.0
    assert Pricing().write == 1.25


def test_for_model_reads_genai_prices_and_our_window() -> None:
    # Anthropic's pricing page for Claude Sonnet 4.5: $3 input, $0.30 cache hits,
    # $3.75 5-minute writes, $6 1-hour writes, $15 output, per million tokens.
    p = Pricing.for_model("claude-sonnet-4-5")
    assert math.isclose(p.input, 3e-6)
    assert math.isclose(p.cache_read, 0.3e-6)
    assert math.isclose(p.cache_write, 3.75e-6)
    assert math.isclose(p.cache_write_1h, 6e-6)
    assert math.isclose(p.output, 15e-6)
    assert p.context_window == context_window("claude-sonnet-4-5") == 200_000
    r = p.relative()
    assert math.isclose(r.cache_read, 0.1) and math.isclose(r.output, 5.0)


def test_openai_has_no_write_premium() -> None:
    # OpenAI's automatic caching: writes are billed as ordinary input.
    p = Pricing.for_model("gpt-4o")
    assert p.cache_write == p.input and p.cache_read < p.input


def test_overrides_win() -> None:
    p = Pricing.for_model("gpt-4o", cache_write=9.0, context_window=1_000)
    assert p.cache_write == 9.0 and p.context_window == 1_000
    with pytest.raises(InvalidArgumentError, match="unknown override"):
        Pricing.for_model("gpt-4o", cache_writes=1.0)


def test_unknown_model() -> None:
    with pytest.raises(InvalidArgumentError, match="does not know"):
        Pricing.for_model("no-such-model-for-sure-xyz")


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # what import finds when absent
    with pytest.raises(InvalidArgumentError, match=r"mellea-ctx\[pricing\]"):
        Pricing.for_model("gpt-4o")


@pytest.mark.parametrize("bad", [-1.0, "1", True, float("nan")])
def test_bad_price(bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        Pricing(input=bad)  # type: ignore[arg-type]


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**5))
def test_cost_is_linear(i: int, r: int, w: int, o: int) -> None:
    p = Pricing()
    parts = p.cost(input=i) + p.cost(cache_read=r) + p.cost(cache_write=w) + p.cost(output=o)
    assert math.isclose(p.cost(input=i, cache_read=r, cache_write=w, output=o), parts)
