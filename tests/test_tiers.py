"""The test tiers: a `deep` test (left out of CI) must name a test that covers it in every tier."""

import pytest

from tests.conftest import deep_only_counterpart


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

