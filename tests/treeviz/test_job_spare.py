"""The app's first training finds a warm job process (issue 52, item 1): a primed
:class:`~treeviz.services.jobs.manager.JobManager` starts its child process before the first job,
runs the warm-up in it, hands that same process to the first job (stopping a warm-up still under
way), and keeps one process for the next job when its worker retires.

The functions sent to the child live in :mod:`tests.treeviz.spare_jobs` (pickled by reference, so
the child imports that small module, not this one's heavy imports). Real child processes.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.treeviz.spare_jobs import WAIT_S, MarkWarm, pid
from treeviz.services.experiments.warmup import warm_in_worker
from treeviz.services.jobs import worker_process
from treeviz.services.jobs.manager import JobManager
from treeviz.services.jobs.spare import Spare

pytestmark = [pytest.mark.skipif(not worker_process.SUPPORTED, reason="child processes need POSIX pipes"),
              pytest.mark.slow]  # each child process imports torch: seconds each; the full tier runs them


def wait_for(predicate, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def manager():
    made = JobManager(max_workers=1, processes=True, idle_s=0.3)
    yield made
    made.shutdown()


def test_the_first_job_runs_in_the_process_warmed_before_it_and_the_next_finds_it_kept(manager, tmp_path):
    marker = tmp_path / "warm.pid"
    assert manager.prime(MarkWarm(marker)) is True
    assert manager.prime(MarkWarm(marker)) is False  # once per manager
    assert manager.wait_primed(WAIT_S) and manager._spare.status == "ready"
    warm_pid = int(marker.read_text())
    first = manager.submit(pid, label="first")
    assert first.wait(WAIT_S) and first.status == "finished"
    assert first.result == warm_pid != os.getpid()
    wait_for(lambda: not manager._workers)  # the worker retired after idle_s ...
    assert manager._spare.status == "ready"  # ... and kept its process
    second = manager.submit(pid, label="second")
    assert second.wait(WAIT_S) and second.result == warm_pid
    wait_for(lambda: manager._spare.status == "ready")
    kept = manager._spare._process
    manager.shutdown()  # stops the kept process; the manager can be primed again
    assert not kept.alive and manager._spare.status == "none"
    assert manager.prime(None) is True


def test_jobs_one_after_another_stay_in_the_warm_process(tmp_path):
    """With two workers allowed, a job submitted after another has finished goes to the idle worker
    and its warm process, not to a second worker with a bare one (which took seconds to start)."""
    manager = JobManager(max_workers=2, processes=True, idle_s=30.0)
    try:
        manager.prime(MarkWarm(tmp_path / "warm.pid"))
        assert manager.wait_primed(WAIT_S)
        pids = []
        for k in range(3):
            job = manager.submit(pid, label=f"job {k}")
            assert job.wait(WAIT_S) and job.status == "finished"
            pids.append(job.result)
        assert pids == [int((tmp_path / "warm.pid").read_text())] * 3
        assert len(manager._workers) == 1
    finally:
        manager.shutdown()


def test_a_job_that_arrives_during_the_warm_up_stops_it_and_takes_its_process(manager, tmp_path):
    marker = tmp_path / "warm.pid"
    manager.prime(MarkWarm(marker, until_cancelled=True))
    wait_for(marker.exists)
    assert manager._spare.status == "warming"
    job = manager.submit(pid, label="first")
    assert job.wait(WAIT_S) and job.status == "finished"  # not held until the warm-up's deadline
    assert job.result == int(marker.read_text())


def test_an_unprimed_manager_keeps_no_process_when_its_worker_retires():
    plain = JobManager(max_workers=1, processes=True, idle_s=0.3)
    try:
        job = plain.submit(pid, label="plain")
        assert job.wait(WAIT_S) and job.status == "finished"
        wait_for(lambda: not plain._workers)
        assert plain._spare.status == "none"  # stopped with its worker, as before
    finally:
        plain.shutdown()


def test_a_manager_of_threads_is_not_primed():
    assert JobManager(processes=False).prime(None) is False


def test_a_spare_holds_one_process_and_refuses_a_dead_one():
    spare = Spare()
    try:
        assert spare.start(1, None) is True and spare.start(1, None) is False
        wait_for(lambda: spare.status == "ready")
        taken = spare.take()
        assert taken is not None and taken.alive and spare.status == "none"
        assert spare.give(taken) is True and spare.give(taken) is False  # one is held already
        taken = spare.take()
        taken.stop()
        assert spare.give(taken) is False and spare.status == "none"  # a dead one
    finally:
        spare.close()
    assert spare.take() is None


def test_the_warm_up_in_the_worker_stops_before_its_next_training_once_asked():
    class Asked:
        cancelled = True

    assert warm_in_worker(Asked()) == 0
