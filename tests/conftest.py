"""Test configuration: hypothesis profiles chosen by ``HYPOTHESIS_PROFILE``.

* ``dev`` (the default): quick, for the edit-test loop.
* ``ci``: thorough, at least 1,000 examples per property, and prints the
  reproduction blob of any failure so it can be replayed with
  ``@reproduce_failure``.

Tests marked ``reliability`` (the slow fault-injection suites) run only with
``--reliability``, which ``nox -s reliability`` passes.
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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reliability",
        action="store_true",
        help="also run the slow fault-injection suites marked `reliability` (nox -s reliability)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the slow fault suites unless asked for, so the default run stays quick."""
    if config.getoption("--reliability"):
        return
    skip = pytest.mark.skip(reason="slow fault suite: run `nox -s reliability`")
    for item in items:
        if item.get_closest_marker("reliability"):
            item.add_marker(skip)
