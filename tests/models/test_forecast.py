"""The forecast of an alternation's work left (:mod:`models.ground.forecast`), for progress bars."""

import pytest

from models.ground.forecast import CAP_RUN, FALL_FASTEST, FALL_SLOWEST, remaining_work


def test_nothing_is_left_after_the_last_step_or_before_the_first():
    assert remaining_work([5.0, 4.0, 3.0], 0, floor=1.0) == 0.0
    assert remaining_work([], 5, floor=1.0) == 0.0


def test_a_falling_series_is_extrapolated_at_its_own_rate_down_to_the_floor():
    # 41, 21, 11 above a floor of 1: each step halves the work above it
    left = remaining_work([41.0, 21.0, 11.0], 3, floor=1.0)
    level = (21 + 11) / 2 - 1  # the mean of the last two, above the floor
    assert left == pytest.approx(sum(1 + level * 0.5**j for j in (1, 2, 3)))
    assert remaining_work([41.0, 21.0, 11.0], 200, floor=1.0) <= 200 * 1 + level  # the fall sums to the level
    assert remaining_work([41.0, 21.0, 11.0], 200, floor=1.0) > 200


def test_the_rate_is_held_between_the_fastest_and_the_slowest_fall():
    steep = remaining_work([1000.0, 10.0, 1.1], 1, floor=1.0)
    assert steep == pytest.approx(1 + (5.55 - 1) * FALL_FASTEST)  # fell 100x a step: held at the fastest
    rising = remaining_work([2.0, 4.0, 8.0], 2, floor=1.0)
    assert rising == pytest.approx(sum(1 + 5 * FALL_SLOWEST**j for j in (1, 2)))  # a rise still falls


def test_too_few_steps_plan_every_step_at_their_mean():
    assert remaining_work([9.0, 3.0], 10, floor=3.0) == pytest.approx(60.0)
    assert remaining_work([9.0, 3.0], 10, floor=3.0, min_steps=1) < 60.0


def test_steps_at_the_cap_plan_more_at_the_cap_before_the_fall():
    low, high = CAP_RUN
    once = remaining_work([40.0, 100.0], 10, floor=1.0, cap=100.0)
    assert once >= low * 100.0 and once < (low + 1) * 100.0 + 8 * 100.0 * FALL_SLOWEST
    many = remaining_work([100.0] * 9, 10, floor=1.0, cap=100.0)
    at_most = high * 100.0 + remaining_work([100.0] * 3, 10 - high, floor=1.0, min_steps=1)
    assert many == pytest.approx(at_most)  # however long the run at the cap, at most CAP_RUN[1] more
    assert remaining_work([100.0] * 9, 2, floor=1.0, cap=100.0) == 200.0  # fewer steps left than planned
    assert remaining_work([100.0], 3, floor=1.0, cap=50.0) <= 150.0  # no step above the cap
