"""The time-left benchmark's pieces: what it runs and how it scores a guess (no timing here)."""

import pytest

from benchmarks.speed import time_left
from models.registry import families


def test_every_family_runs_on_three_tables_of_its_tasks():
    cases = time_left.cases()
    for key in families():
        mine = [c for c in cases if c.family == key]
        assert len(mine) == time_left.PER_FAMILY
        assert len({c.table for c in mine}) == time_left.PER_FAMILY
    assert [c.family for c in time_left.cases(["tao"], quick=True)] == ["tao"]


def test_a_guess_is_scored_by_its_worse_side_with_a_one_second_floor():
    assert time_left.ratio(20.0, 10.0) == pytest.approx(2.0)
    assert time_left.ratio(5.0, 10.0) == pytest.approx(2.0)
    assert time_left.ratio(0.2, 0.9) == 1.0  # both under a second: the bar says "about 1 s left"
    assert time_left.ratio(0.0, 3.0) == pytest.approx(3.0)


def test_the_tables_are_slices_of_built_in_data_sets():
    assert time_left._table("digits_500").X.shape[0] == 500
    assert time_left._table("breast_cancer").name == "breast_cancer"
