"""Background jobs: progress, live records, failures captured, cooperative cancel, queueing.

No test asserts on speed: waits use events and polling with generous timeouts.
"""

from __future__ import annotations

import threading
import time

import pytest

from models.base import TreeEstimator
from models.ground.errors import TreevizError
from treeviz.services.experiments.training import ProgressCallback
from treeviz.services.jobs.manager import JobManager, Progress

TIMEOUT = 60.0


def poll(predicate, timeout: float = TIMEOUT) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


class SlowFake(TreeEstimator):
    """An estimator whose epochs take a little time, using the real callback machinery."""

    def __init__(self, epochs: int = 5, pause: float = 0.0, gate: threading.Event | None = None):
        self.epochs = epochs
        self.pause = pause
        self.gate = gate

    def fit(self, X=None, y=None, *, progress=None):
        callbacks = [ProgressCallback(progress)] if progress is not None else None
        self._begin_training(callbacks, total=self.epochs)
        try:
            for epoch in range(1, self.epochs + 1):
                if self.gate is not None:
                    self.gate.wait(TIMEOUT)
                time.sleep(self.pause)
                if not self._record(epoch=epoch, loss=1.0 / epoch):
                    break
        finally:
            self._end_training()
        return self


@pytest.fixture()
def manager():
    return JobManager(max_workers=2)


def test_job_finishes_with_progress_and_result(manager):
    job = manager.submit(lambda cbs: SlowFake(epochs=5).fit(progress=cbs).history_[-1]["loss"],
                         label="five epochs")
    assert job.wait(TIMEOUT)
    snap = job.snapshot()
    assert snap.status == "finished" and snap.done
    assert snap.progress == 1.0 and job.progress == 1.0
    assert snap.result == pytest.approx(0.2) and job.result == pytest.approx(0.2)
    assert [r["epoch"] for r in job.records] == [1, 2, 3, 4, 5]
    assert snap.total == 5 and snap.epochs == 5
    assert job.message is None and job.traceback is None
    assert job.started is not None and job.finished >= job.started and job.elapsed >= 0
    assert manager.get(job.id) is job and manager.jobs() == [job] and manager.active() == []


def test_records_are_copies_and_progress_starts_at_zero(manager):
    gate = threading.Event()
    est = SlowFake(epochs=4, gate=gate)
    job = manager.submit(lambda cbs: est.fit(progress=cbs), label="gated")
    assert poll(lambda: job.total == 4)  # the fit has begun (after the job entered its thread budget)
    assert job.status == "running" and job.progress == 0.0 and job.records == []
    gate.set()
    assert job.wait(TIMEOUT)
    seen = job.records
    assert len(seen) == 4 and job.progress == 1.0
    seen.append({"epoch": 99})  # the list handed out is a copy: the job is untouched
    seen[0]["epoch"] = -1
    assert len(job.records) == 4 and job.records[0]["epoch"] == 1


def test_partial_progress_while_running(manager):
    release = threading.Event()

    def fn(progress):
        if not isinstance(progress, Progress):
            raise TypeError("a job gets a Progress handle")
        progress.begin(4)
        progress.record({"epoch": 1})
        progress.record({"epoch": 2})
        release.wait(TIMEOUT)
        return "ok"

    job = manager.submit(fn, label="half")
    assert poll(lambda: len(job.records) == 2)
    snap = job.snapshot()
    assert snap.status == "running" and snap.progress == 0.5 and not snap.done
    assert [r["epoch"] for r in snap.records] == [1, 2]
    assert manager.active() == [job]
    release.set()
    assert job.wait(TIMEOUT) and job.status == "finished"


def test_failure_is_captured_as_a_sentence(manager):
    def boom(cbs):
        raise RuntimeError("the solver diverged")

    job = manager.submit(boom, label="boom")
    assert job.wait(TIMEOUT)
    assert job.status == "failed"
    assert job.message == "Training failed: RuntimeError: the solver diverged"
    assert "Traceback" in job.traceback and "RuntimeError" in job.traceback
    assert job.result is None
    # the app thread is unaffected and the manager keeps working
    ok = manager.submit(lambda cbs: 7, label="after")
    assert ok.wait(TIMEOUT) and ok.result == 7


def test_treeviz_errors_keep_their_own_sentence(manager):
    def bad(cbs):
        raise TreevizError("Parameter 'max_depth' must be at least 1; got 0.")

    job = manager.submit(bad, label="bad")
    assert job.wait(TIMEOUT)
    assert job.status == "failed" and job.message == "Parameter 'max_depth' must be at least 1; got 0."


def test_cancel_stops_a_slow_fit_promptly(manager):
    est = SlowFake(epochs=100_000, pause=0.005)
    job = manager.submit(lambda cbs: est.fit(progress=cbs), label="slow")
    assert poll(lambda: len(job.records) >= 3)
    assert job.status == "running" and 0.0 < job.progress < 1.0
    assert manager.cancel(job.id) is True
    assert job.wait(TIMEOUT)
    assert job.status == "cancelled" and job.cancel_requested
    assert est.stopped_early_ and job.result is est  # the partial model comes back
    assert len(est.history_) < 100_000
    assert manager.cancel(job.id) is False  # already done


def test_cancel_when_fn_raises_afterwards(manager):
    started = threading.Event()

    def fn(cbs):
        started.set()
        while not cbs.cancelled:
            time.sleep(0.005)
        raise ValueError("interrupted")

    job = manager.submit(fn, label="raises")
    assert started.wait(TIMEOUT)
    manager.cancel(job.id)
    assert job.wait(TIMEOUT) and job.status == "cancelled"


def test_progress_raises_training_cancelled_directly(manager):
    def fn(progress):
        progress.begin(None)
        while True:  # no estimator catches it here: the exception ends fn
            progress.record({"loss": 1.0})
            time.sleep(0.005)

    job = manager.submit(fn, label="raw")
    assert poll(lambda: len(job.records) >= 1)
    assert job.progress == 0.0  # unknown total
    manager.cancel(job.id)
    assert job.wait(TIMEOUT) and job.status == "cancelled" and job.message


def test_queued_jobs_wait_and_can_be_cancelled_before_they_start():
    manager = JobManager(max_workers=1)
    release = threading.Event()
    first = manager.submit(lambda cbs: release.wait(TIMEOUT), label="first")
    ran = []
    second = manager.submit(lambda cbs: ran.append(1), label="second")
    third = manager.submit(lambda cbs: "third", label="third")
    assert poll(lambda: first.status == "running")
    assert second.status == "queued" and second.progress == 0.0 and second.elapsed == 0.0
    assert manager.cancel(second.id) is True
    assert second.status == "cancelled" and second.done  # at once, without waiting for a worker
    release.set()
    assert third.wait(TIMEOUT) and third.result == "third"
    assert first.wait(TIMEOUT) and first.status == "finished"
    assert ran == []
    assert [j.label for j in manager.jobs()] == ["third", "second", "first"]


def test_unknown_jobs_and_forgetting(manager):
    with pytest.raises(TreevizError, match="no training job"):
        manager.get("job-0")
    release = threading.Event()
    job = manager.submit(lambda cbs: release.wait(TIMEOUT), label="x")
    with pytest.raises(TreevizError, match="cancel it first"):
        manager.forget(job.id)
    release.set()
    assert job.wait(TIMEOUT)
    manager.forget(job.id)
    assert manager.jobs() == []


def test_old_finished_jobs_are_forgotten():
    manager = JobManager(max_workers=1, keep=2)
    jobs = [manager.submit(lambda cbs, i=i: i, label=str(i)) for i in range(3)]
    assert all(j.wait(TIMEOUT) for j in jobs)
    manager.submit(lambda cbs: None, label="last").wait(TIMEOUT)
    assert len(manager.jobs()) <= 3 and jobs[0] not in manager.jobs()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_many_readers_while_a_job_writes(manager):
    est = SlowFake(epochs=300, pause=0.0)
    job = manager.submit(lambda cbs: est.fit(progress=cbs), label="busy")
    errors = []

    def reader():
        try:
            while not job.done:
                snap = job.snapshot()
                assert len(snap.records) == snap.epochs
                assert 0.0 <= snap.progress <= 1.0
        except AssertionError as err:  # pragma: no cover - only on a bug
            errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    assert job.wait(TIMEOUT)
    for t in threads:
        t.join(TIMEOUT)
    assert errors == [] and job.status == "finished" and len(job.records) == 300
