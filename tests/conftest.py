"""Test configuration: hypothesis profiles chosen by ``HYPOTHESIS_PROFILE``.

* ``dev`` (the default): quick, for the edit-test loop.
* ``ci``: thorough, at least 1,000 examples per property, and prints the
  reproduction blob of any failure so it can be replayed with
  ``@reproduce_failure``.

Two marks keep the default run quick (``nox``, a few minutes on two cores):

* ``slow``: subprocess, crash, example and benchmark-smoke tests, run only with
  ``--slow``, which ``nox -s slow`` passes;
* ``reliability``: the slow fault-injection suites, run only with ``--reliability``,
  which ``nox -s reliability`` passes.

CI runs all three sessions.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "ci",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    # Histories are composite and sometimes long; generation speed is not a bug.
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


#: Each opt-in mark, the option that runs its tests, and the session that passes it.
_OPT_IN = {
    "slow": ("--slow", "subprocess, crash or smoke test: run `nox -s slow`"),
    "reliability": ("--reliability", "slow fault suite: run `nox -s reliability`"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the subprocess, crash and smoke tests marked `slow` (nox -s slow)",
    )
    parser.addoption(
        "--reliability",
        action="store_true",
        help="also run the slow fault-injection suites marked `reliability` (nox -s reliability)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip each opt-in group unless its option is given, so the default run stays quick."""
    for mark, (option, reason) in _OPT_IN.items():
        if config.getoption(option):
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if item.get_closest_marker(mark):
                item.add_marker(skip)
