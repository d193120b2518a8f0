"""Hypothesis settings for the fuzz tests: a fixed seed (``derandomize``) and a bounded number of
examples per test.

Two profiles, chosen by ``scripts/test.sh``: ``ci`` (the default, a small count that keeps CI
short) and ``slow`` (``bash scripts/test.sh --deep``: at least 2 000 examples per test). The
property every fuzz test checks is the same: an input is either accepted (and then it trains or
loads), or refused with a :class:`models.ground.errors.TreevizError`; nothing else escapes, and nothing
is written outside the run store.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: Examples per fuzz test in each profile.
EXAMPLES = {"ci": 60, "slow": 2000}
_COMMON = dict(derandomize=True, database=None, deadline=None, print_blob=True,
               suppress_health_check=(HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture))
for _name, _count in EXAMPLES.items():
    settings.register_profile(_name, max_examples=_count, **_COMMON)
PROFILE = os.environ.get("TREEVIZ_FUZZ_PROFILE", "ci")
settings.load_profile(PROFILE)


def ci_examples(count: int) -> settings:
    """Settings for a fuzz test whose examples are slow: ``count`` of them in the ``ci`` profile
    (fewer than :data:`EXAMPLES`), the ``slow`` profile's count otherwise."""
    return settings(max_examples=count if PROFILE == "ci" else EXAMPLES[PROFILE])
