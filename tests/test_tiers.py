"""The test tiers: a `deep` test (left out of CI) must name a test that covers it in every tier; the
browser tests' processes are not held to one worker's core."""

import os
import subprocess
import sys

import pytest

from tests.conftest import ALL_CORES_ENV, deep_only_counterpart


class _Item:
    nodeid = "tests/e2e/test_x.py::test_x"

    def __init__(self, **kwargs):
        self.mark = pytest.mark.deep(**kwargs).mark

    def get_closest_marker(self, name):
        return self.mark if name == "deep" else None


def test_a_deep_test_naming_a_test_of_every_tier_is_accepted():
    cover = "tests/app/test_runs_page_truth.py::test_run_details_read_as_text"
    assert deep_only_counterpart(_Item(covered_by=cover)) is None


@pytest.mark.parametrize(("cover", "says"), [
    (None, "names no test"),
    ("tests/app/test_nothing_here.py::test_x", "names no test"),
    ("tests/app/test_runs_page_truth.py", "names no test"),
    ("tests/app/test_runs_page_truth.py::test_that_does_not_exist", "has no test test_that_does_not_exist"),
    ("tests/e2e/test_train_runs.py::test_rename_says_so_and_updates_the_sidebar", "itself deep-only"),
])
def test_a_deep_test_without_a_real_counterpart_is_refused(cover, says):
    why = deep_only_counterpart(_Item() if cover is None else _Item(covered_by=cover))
    assert why and says in why and "test_x" in why



@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two cores and sched_setaffinity")
def test_the_browser_tests_start_their_server_and_chromium_on_every_core(monkeypatch):
    """A pinned xdist worker starts the app's server and chromium on all the session's cores."""
    from tests.e2e.conftest import on_all_cores

    before = os.sched_getaffinity(0)
    monkeypatch.setenv(ALL_CORES_ENV, ",".join(map(str, sorted(before))))
    probe = [sys.executable, "-c", "import os; print(len(os.sched_getaffinity(0)))"]
    os.sched_setaffinity(0, {min(before)})
    try:
        pinned_child = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
        with on_all_cores():
            freed_child = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
        after = os.sched_getaffinity(0)
    finally:
        os.sched_setaffinity(0, before)
    assert int(pinned_child) == 1
    assert int(freed_child) == len(before)
    assert after == {min(before)}  # the pin is back after the block
