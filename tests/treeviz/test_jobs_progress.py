"""Jobs that behave: the time left each snapshot estimates, and a cancel that shows at once.

The time left is checked on a fake clock (``treeviz.services.jobs.manager._now``), so the numbers are exact
and no test waits for real seconds to pass; the cancel states are checked with gated job functions.
"""

from __future__ import annotations

import threading

import pytest

from tests.treeviz.test_jobs import TIMEOUT, poll
from treeviz.services.jobs import manager as jobs
from treeviz.services.jobs.manager import ACTIVE_STATUSES, JobManager, JobSnapshot, time_left
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


def test_time_left_is_the_straight_line_guess():
    assert time_left(0.5, 10.0) == pytest.approx(10.0)
    assert time_left(0.25, 10.0) == pytest.approx(30.0)
    assert time_left(0.1, 12.0) == pytest.approx(108.0)
    assert time_left(1.0, 5.0) == 0.0
    # too early to tell: progress or time below the thresholds
    assert time_left(jobs.ETA_MIN_PROGRESS / 2, 100.0) is None
    assert time_left(0.5, jobs.ETA_MIN_ELAPSED_S / 2) is None
    assert time_left(0.0, 100.0) is None


def test_snapshot_estimates_the_time_left_from_progress_and_elapsed(manager, clock):
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
    clock[0] += 10.0
    steps[0].set()
    assert poll(lambda: job.snapshot().epochs == 1)
    snap = job.snapshot()
    assert snap.progress == 0.25 and snap.elapsed == pytest.approx(10.0)
    assert snap.eta_s == pytest.approx(30.0)  # 10 s for a quarter: 30 s for the rest
    assert job.eta_s == pytest.approx(30.0)
    steps[1].set()
    assert poll(lambda: job.snapshot().epochs == 2)
    clock[0] += 30.0  # the second step was slow: 40 s for half
    assert job.snapshot().eta_s == pytest.approx(40.0)
    steps[2].set()
    assert poll(lambda: job.snapshot().epochs == 3)
    assert job.snapshot().eta_s == pytest.approx(40.0 / 3)
    release.set()
    assert job.wait(TIMEOUT)
    assert job.snapshot().eta_s == 0.0 and job.snapshot().status == "finished"


def test_staged_jobs_estimate_over_all_stages(manager, clock):
    release = threading.Event()

    def fn(progress):
        progress.stages(2)
        progress.begin(2)
        progress.record({})
        progress.record({})
        progress.begin(2)
        release.wait(TIMEOUT)

    job = manager.submit(fn, label="two fits")
    assert poll(lambda: job.snapshot().epochs == 2 and job.snapshot().progress == 0.5)
    clock[0] += 8.0
    assert job.snapshot().eta_s == pytest.approx(8.0)  # one fit of two took 8 s
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
