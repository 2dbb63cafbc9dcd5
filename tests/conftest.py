"""Test configuration: hypothesis profiles chosen by ``HYPOTHESIS_PROFILE``.

* ``dev`` (the default): quick, for the edit-test loop.
* ``ci``: thorough, at least 1,000 examples per property, and prints the
  reproduction blob of any failure so it can be replayed with
  ``@reproduce_failure``.
"""

from __future__ import annotations

import os

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
