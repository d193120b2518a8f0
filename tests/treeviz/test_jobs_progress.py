"""Jobs that behave: the time left each snapshot estimates, and a cancel that shows at once.

The time left is checked on a fake clock (``treeviz.services.jobs.manager._now``), so the numbers are exact
and no test waits for real seconds to pass; the cancel states are checked with gated job functions.
"""

from __future__ import annotations

import threading

import pytest

from tests.treeviz.test_jobs import TIMEOUT, poll
from treeviz.services.jobs import manager as jobs
from treeviz.services.jobs.manager import ACTIVE_STATUSES, JobManager, JobSnapshot
from treeviz.services.jobs.pace import time_left
from treeviz.ui.job_panel import bar_text, time_left_text


@pytest.fixture()
def manager():
    manager = JobManager(max_workers=1)
    yield manager
    manager.shutdown()


@pytest.fixture()
def clock(monkeypatch):
    """A clock the test sets: ``clock[0]`` is the time every job reads."""
    now = [1000.0]
    monkeypatch.setattr(jobs, "_now", lambda: now[0])
    return now


def test_time_left_goes_at_the_pace_of_the_recent_reports():
    # ten units, one every 2 s after a first one that took 30 s (set-up, a compilation): the pace is 0.5 unit/s
    marks = [(0.0, 0.0), (30.0, 1.0), (32.0, 2.0), (34.0, 3.0), (36.0, 4.0)]
    assert time_left(marks, 10, 36.0) == pytest.approx(12.0)
    # the seconds since the last report count against it, down to the units after the one under way
    assert time_left(marks, 10, 37.0) == pytest.approx(11.0)
    assert time_left(marks, 10, 50.0) == pytest.approx(10.0)
    # a slower phase: the recent half sets the pace, not the start
    slower = [*marks, (40.0, 5.0), (44.0, 6.0), (48.0, 7.0)]
    assert time_left(slower, 10, 48.0) == pytest.approx(12.0)


def test_time_left_waits_for_a_second_report_unless_it_is_late():
    marks = [(0.0, 0.0), (30.0, 1.0)]
    assert time_left(marks, 10, 31.0) is None  # the first 30 s may have been a one-off cost
    assert time_left(marks, 10, 60.0) == pytest.approx(9 * 30.0 - 30.0)  # as slow as the first: that pace
    assert time_left([(0.0, 0.0)], 10, 5.0) is None  # nothing reported yet
    assert time_left(marks, None, 60.0) is None  # nothing planned
    assert time_left([(0.0, 0.0), (3.0, 1.0), (3.0, 1.0)], 10, 4.0) is None  # no work between reports


def test_time_left_is_zero_once_the_work_is_done_and_ignores_bursts():
    assert time_left([(0.0, 0.0), (5.0, 4.0), (6.0, 10.0)], 10, 7.0) == 0.0
    # two trees of a forest end together: their burst is no pace; once the wait is as long as the
    # time before it, the pace counts from the start (down to the tree after the one under way)
    # every report at the start's instant (a coarse clock): the work over the time since sets the pace
    instant = [(0.0, 0.0), *((0.0, float(k)) for k in range(1, 6))]
    assert time_left(instant, 10, 20.0) == pytest.approx(20.0)
    assert time_left(instant, 10, 0.0) is None
    # the first two trees of a forest on two workers, 0.1 s apart after 0.55 s: no pace yet, then
    # the pace from the start (the pair's gap would say 0.8 s left of about 2.3)
    pair = [(0.0, 0.0), (0.55, 1.0), (0.65, 2.0)]
    assert time_left(pair, 10, 0.9) is None
    assert time_left(pair, 10, 1.3) == pytest.approx(7 * 0.65 / 2)
    burst = [(0.0, 0.0), (10.0, 1.0), (10.01, 2.0)]
    assert time_left(burst, 10, 10.01) is None
    assert time_left(burst, 10, 21.0) == pytest.approx(7 * 10.01 / 2)


def test_snapshot_estimates_the_time_left_from_the_pace_after_the_first_step(manager, clock):
    steps = [threading.Event() for _ in range(3)]
    release = threading.Event()

    def fn(progress):
        progress.begin(4)
        for step in steps:
            step.wait(TIMEOUT)
            progress.record({"epoch": 1})
        release.wait(TIMEOUT)
        return "ok"

    job = manager.submit(fn, label="four steps")
    assert poll(lambda: job.status == "running" and job.total == 4)
    assert job.snapshot().eta_s is None  # no step done yet
    clock[0] += 30.0  # a slow first step (a compilation)
    steps[0].set()
    assert poll(lambda: job.snapshot().epochs == 1)
    snap = job.snapshot()
    assert snap.progress == 0.25 and snap.elapsed == pytest.approx(30.0)
    assert snap.eta_s is None  # one step cannot tell a one-off cost from the pace
    clock[0] += 10.0
    steps[1].set()
    assert poll(lambda: job.snapshot().epochs == 2)
    # two reports 10 s apart after a 30 s first step: one gap under half the first tells no pace yet
    assert job.snapshot().eta_s is None and job.eta_s is None
    clock[0] += 10.0
    steps[2].set()
    assert poll(lambda: job.snapshot().epochs == 3)
    assert job.snapshot().eta_s == pytest.approx(10.0)  # 10 s a step from the second on, one left
    release.set()
    assert job.wait(TIMEOUT)
    assert job.snapshot().eta_s == 0.0 and job.snapshot().status == "finished"


def test_a_stage_that_ends_early_jumps_to_the_end_and_progress_never_goes_back(manager, clock):
    gates = [threading.Event() for _ in range(3)]

    def fn(progress):
        progress.begin(10)
        progress.record({})
        gates[0].wait(TIMEOUT)
        progress.advance(None, 20)  # the planned total grows: the bar waits rather than going back
        gates[1].wait(TIMEOUT)
        progress.advance(5.0, 5)  # the fit stops early: five units of five
        gates[2].wait(TIMEOUT)

    job = manager.submit(fn, label="early stop")
    assert poll(lambda: job.snapshot().epochs == 1)
    assert job.snapshot().progress == pytest.approx(0.1)
    gates[0].set()
    assert poll(lambda: job.total == 20)
    assert job.snapshot().progress == pytest.approx(0.1)
    gates[1].set()
    assert poll(lambda: job.total == 5)
    snap = job.snapshot()
    assert snap.progress == 1.0 and snap.eta_s == 0.0
    gates[2].set()
    assert job.wait(TIMEOUT)


def test_staged_jobs_estimate_over_all_stages(manager, clock):
    release = threading.Event()
    moved = threading.Event()

    def fn(progress):
        progress.stages(3)
        progress.begin(2)
        progress.record({})
        progress.record({})
        moved.wait(TIMEOUT)
        progress.begin(2)
        release.wait(TIMEOUT)

    job = manager.submit(fn, label="three fits")
    assert poll(lambda: job.snapshot().epochs == 2 and job.snapshot().progress == pytest.approx(1 / 3))
    clock[0] += 8.0
    moved.set()
    assert poll(lambda: job.snapshot().progress == pytest.approx(1 / 3) and job.total == 2
                and job.snapshot().epochs == 2 and job._stage_index == 1)
    clock[0] += 3.0
    assert job.snapshot().eta_s == pytest.approx(5.0 + 8.0)  # the fits take 8 s each, as the first did
    release.set()
    assert job.wait(TIMEOUT)


def test_a_cancelled_job_is_cancelling_until_it_stops(manager):
    gate = threading.Event()

    def fn(progress):
        progress.begin(10)
        progress.record({"epoch": 1})
        gate.wait(TIMEOUT)  # a long step that checks nothing
        progress.record({"epoch": 2})  # raises TrainingCancelled: the cancel acts here
        return "not reached"

    job = manager.submit(fn, label="slow step")
    assert poll(lambda: job.snapshot().epochs == 1)
    assert manager.cancel(job.id) is True
    snap = job.snapshot()  # at once, before the worker reached its next check
    assert snap.status == "cancelling" and snap.status in ACTIVE_STATUSES
    assert not snap.done and snap.cancel_requested and snap.eta_s is None
    assert job.status == "cancelling" and not job.done
    assert manager.active() == [job]
    assert manager.cancel(job.id) is True  # asking again is harmless
    gate.set()
    assert job.wait(TIMEOUT)
    snap = job.snapshot()
    assert snap.status == "cancelled" and snap.done and snap.eta_s is None
    assert manager.cancel(job.id) is False


def test_a_queued_job_is_cancelled_at_once(manager):
    gate = threading.Event()
    first = manager.submit(lambda progress: gate.wait(TIMEOUT), label="first")
    second = manager.submit(lambda progress: "never", label="second")
    assert poll(lambda: first.status == "running")
    assert second.snapshot().status == "queued" and second.snapshot().eta_s is None
    assert manager.cancel(second.id) is True
    assert second.snapshot().status == "cancelled" and second.done
    gate.set()
    assert first.wait(TIMEOUT) and first.status == "finished"


def test_a_job_that_finishes_despite_the_cancel_ends_cancelled(manager):
    gate = threading.Event()
    job = manager.submit(lambda progress: gate.wait(TIMEOUT), label="ignores the flag")
    assert poll(lambda: job.status == "running")
    manager.cancel(job.id)
    assert job.status == "cancelling"
    gate.set()
    assert job.wait(TIMEOUT) and job.status == "cancelled"


def snapshot(status: str, *, eta: float | None, total: int | None = 10, elapsed: float = 12.34) -> JobSnapshot:
    return JobSnapshot(id="j", label="CART on iris", status=status, progress=0.5, total=total, epochs=5,
                       records=(), message=None, result=None, submitted=0.0, started=0.0, finished=None,
                       elapsed=elapsed, cancel_requested=status == "cancelling", eta_s=eta)


@pytest.mark.parametrize(("status", "eta", "total", "expected"), [
    ("running", 40.2, 10, "about 40 s left"),
    ("running", 0.2, 10, "about 1 s left"),
    ("running", 185.0, 10, "about 3 min left"),
    ("running", 3 * 3600.0, 10, "about 3.0 h left"),
    ("running", None, 10, "estimating the time left"),
    ("running", None, None, "time left unknown"),
    ("queued", None, 10, "waiting for a free worker"),
    ("cancelling", None, 10, "stopping at the next check"),
    ("finished", 0.0, 10, ""),
    ("cancelled", None, 10, ""),
])
def test_time_left_text(status, eta, total, expected):
    assert time_left_text(snapshot(status, eta=eta, total=total)) == expected


def test_bar_text():
    assert bar_text(snapshot("running", eta=40.0)) == "running · 12.3 s · about 40 s left"
    assert bar_text(snapshot("cancelling", eta=None)) == "cancelling… · 12.3 s · stopping at the next check"
    assert bar_text(snapshot("finished", eta=0.0), "λ path: finished") == "λ path: finished · 12.3 s"
