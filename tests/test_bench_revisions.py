"""``benchmarks/revisions.py`` and its timing program at tiny sizes, so they cannot rot.

No timing is asserted (the ratios live in ``benchmarks/results/revisions.*``):
these run every case's work against this tree, check the verdict rule on
hand-made samples, and run the two-process harness end to end with this tree
on both sides.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .helpers import load_benchmark

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def revisions() -> ModuleType:
    return load_benchmark("revisions", "revisions")


@pytest.fixture(scope="module")
def cases() -> ModuleType:
    return load_benchmark("revision_cases", "revision_cases")


def _samples(times: list[float], check: Any = 1) -> list[dict[str, Any]]:
    return [{"seconds": t, "check": check} for t in times]


class TestCases:
    def test_every_case_runs_and_says_what_it_computed(self, cases: ModuleType) -> None:
        """Each case's work runs at a tiny size and returns a check value, the same twice."""
        for case in cases.CASES:
            n = min(case.quick, 40)
            first = cases.measure(case.key, n, seed=3)
            again = cases.measure(case.key, n, seed=3)
            assert first["seconds"] > 0, case.key
            assert first["check"] is not None, case.key
            assert first["check"] == again["check"], case.key

    def test_window_cases_keep_the_window(self, cases: ModuleType) -> None:
        """An inline window of 20 leaves the system message and 20 body components."""
        assert 21 == cases.measure("window_20", 200, seed=1)["check"]
        assert 30 * 21 == cases.measure("window_compact", 30, seed=1)["check"]
        assert 30 * 10 == cases.measure("window_fits", 30, seed=1)["check"]

    def test_texts_are_distinct_and_sized(self, cases: ModuleType) -> None:
        """Texts are unique within a seed and across seeds, each TEXT_LEN long."""
        texts = cases.make_texts(50, 1) + cases.make_texts(50, 2)
        assert 100 == len(set(texts))
        assert {cases.TEXT_LEN} == {len(text) for text in texts}

    def test_agent_messages_end_on_a_result(self, cases: ModuleType) -> None:
        """The agent loop never ends on a call whose result was cut off."""
        for n in (5, 6, 41):
            messages = cases.agent_messages(n, 1)
            assert "tool" == messages[-1]["role"]
            assert len(messages) in (n, n - 1)


class TestVerdict:
    def test_slower_needs_the_ratio_and_the_quartiles_apart(self, revisions: ModuleType) -> None:
        """Ten percent slower with the ranges apart is slower; within the noise it is not."""
        base = _samples([1.0, 1.01, 0.99, 1.0, 1.02])
        apart = revisions.compare(base, _samples([1.1, 1.11, 1.09, 1.1, 1.12]), 10)
        assert "slower" == apart["verdict"]
        assert 1.1 == pytest.approx(apart["ratio"])
        noisy = revisions.compare(base, _samples([1.1, 0.9, 1.3, 0.95, 1.1]), 10)
        assert "same" == noisy["verdict"]
        small = revisions.compare(base, _samples([1.03, 1.04, 1.03, 1.04, 1.05]), 10)
        assert "same" == small["verdict"]
        faster = revisions.compare(base, _samples([0.8, 0.81, 0.79, 0.8, 0.8]), 10)
        assert "faster" == faster["verdict"]

    def test_a_different_result_is_reported(self, revisions: ModuleType) -> None:
        """Checks that differ in any round make 'same result' false."""
        base = _samples([1.0, 1.0], check=[3, 10])
        head = [{"seconds": 1.0, "check": [3, 10]}, {"seconds": 1.0, "check": [3, 11]}]
        assert not revisions.compare(base, head, 1)["same_result"]
        assert revisions.compare(base, base, 1)["same_result"]


class TestHarness:
    def test_both_sides_run_interleaved_and_render(self, revisions: ModuleType) -> None:
        """This tree against itself: every round on both sides, the same results, one table."""
        record = revisions.run(
            ROOT,
            ROOT,
            keys=["window_fits", "import"],
            rounds=2,
            quick=True,
            labels=("this", "this"),
            counted=False,
        )
        for key in ("window_fits", "import"):
            case = record["cases"][key]
            assert 2 == len(case["base"]["samples_s"]) == len(case["head"]["samples_s"])
            assert case["same_result"]
        assert {"tree": ".", "file": "mellea_ctx/__init__.py"}.items() <= record["head"].items()
        text = revisions.render(record)
        assert "| Window(20).compact(ctx), 10 msgs | 5,000 |" in text
        assert "import mellea_ctx (fresh process)" in text

    def test_a_tree_without_the_package_is_refused(
        self, revisions: ModuleType, tmp_path: Path
    ) -> None:
        """A worker whose mellea_ctx is not imported from its own tree stops the run."""
        with pytest.raises((SystemExit, RuntimeError)):
            revisions.Worker("base", tmp_path)
