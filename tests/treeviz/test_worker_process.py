"""Jobs in worker processes (JobManager(processes=True), the app's setting): the same results,
progress, cancel and error sentences as in threads, from another process with its own interpreter
lock; functions that cannot be pickled still run, in the worker thread."""

from __future__ import annotations

import os
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from models.ground import threads
from models.ground.errors import TreevizError
from treeviz.services.jobs import worker_process
from treeviz.services.jobs.manager import JobManager

#: The most a wait for a job lasts, in seconds: a child process starts (importing torch) and runs
#: the few steps here in seconds on a quiet machine; no test asserts how long it took.
WAIT_S = 600


@dataclass(frozen=True)
class Steps:
    """Records ``n`` steps (a pause each) and returns the process id and torch's thread count."""

    n: int = 3
    pause: float = 0.0
    fail: str | None = None

    def __call__(self, progress):
        import torch

        progress.stages(1)
        progress.begin(self.n)
        for i in range(self.n):
            time.sleep(self.pause)
            progress.record({"epoch": i + 1, "loss": 1.0 / (i + 1)})
        if self.fail == "treeviz":
            raise TreevizError("The data has no rows; load a dataset first.")
        if self.fail == "value":
            raise ValueError("shapes (3,) and (4,) not aligned")
        if self.fail == "exit":
            os._exit(3)
        return {"pid": os.getpid(), "torch_threads": torch.get_num_threads()}


@pytest.fixture
def manager():
    manager = JobManager(max_workers=2, processes=True)
    yield manager
    manager.shutdown()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_job_runs_in_a_child_process_under_the_budget_with_its_records(manager):
    job = manager.submit(Steps(4), label="steps")
    assert job.wait(WAIT_S), job.status
    snap = job.snapshot()
    assert snap.status == "finished" and snap.message is None
    assert snap.result["pid"] != os.getpid()
    assert snap.result["torch_threads"] == threads.job_budget(2)
    assert [r["epoch"] for r in snap.records] == [1, 2, 3, 4] and snap.progress == 1.0


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_two_jobs_run_at_once_in_two_processes(manager):
    jobs = [manager.submit(Steps(3, pause=0.3), label=str(i)) for i in range(2)]
    assert all(j.wait(WAIT_S) for j in jobs)
    assert len({j.result["pid"] for j in jobs}) == 2


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_child_process_is_reused_between_jobs():
    # One worker thread: with two, the second job may start the second worker (and its own child)
    # and be taken by it, which made this test fail now and then.
    manager = JobManager(max_workers=1, processes=True)
    try:
        first = manager.submit(Steps(1), label="a")
        first.wait(WAIT_S)
        second = manager.submit(Steps(1), label="b")
        second.wait(WAIT_S)
        assert first.result["pid"] == second.result["pid"]
    finally:
        manager.shutdown()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_cancel_reaches_the_child(manager):
    """Cancelled once the child has recorded two steps, the job stops part way: uncancelled, its
    100 000 steps of 0.05 s would take over an hour, far longer than the wait for its end."""
    job = manager.submit(Steps(100_000, pause=0.05), label="slow")
    deadline = time.monotonic() + WAIT_S
    while len(job.records) < 2 and not job.done:
        assert time.monotonic() < deadline, "the child recorded no steps"
        time.sleep(0.02)
    assert manager.cancel(job.id)
    assert job.wait(WAIT_S), "the job did not stop after its cancel"
    assert job.status == "cancelled" and len(job.records) < 100_000


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_errors_come_back_as_the_same_sentences(manager):
    mine = manager.submit(Steps(1, fail="treeviz"), label="treeviz")
    other = manager.submit(Steps(1, fail="value"), label="value")
    assert mine.wait(WAIT_S) and other.wait(WAIT_S)
    assert mine.status == "failed" and mine.message == "The data has no rows; load a dataset first."
    assert other.status == "failed" and other.message == "Training failed: ValueError: shapes (3,) and (4,) not aligned"
    assert "ValueError" in other.traceback


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_a_dead_child_fails_its_job_and_the_next_job_gets_a_new_one():
    manager = JobManager(max_workers=1, processes=True)
    try:
        dead = manager.submit(Steps(1, fail="exit"), label="dies")
        assert dead.wait(WAIT_S)
        assert dead.status == "failed" and "ended unexpectedly (exit code 3)" in dead.message
        after = manager.submit(Steps(1), label="after")
        assert after.wait(WAIT_S) and after.status == "finished"
    finally:
        manager.shutdown()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_functions_that_cannot_be_pickled_run_in_the_worker_thread(manager):
    job = manager.submit(lambda progress: os.getpid(), label="lambda")
    assert job.wait(WAIT_S) and job.result == os.getpid()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_child_does_not_run_the_parents_main_script(manager, tmp_path, monkeypatch):
    # Under `streamlit run app.py` (and in Streamlit's test harness) __main__ is the app's script;
    # a child started by multiprocessing's spawn would run it again. This one imports only itself.
    script = tmp_path / "app_script.py"
    script.write_text("raise SystemExit('the main script ran in the child')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    job = manager.submit(Steps(2), label="steps")
    assert job.wait(WAIT_S) and job.status == "finished", job.message
    assert job.result["pid"] != os.getpid()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_functions_from_the_main_script_run_in_the_worker_thread(manager):
    fn = types.FunctionType((lambda progress: os.getpid()).__code__, {"os": os}, "from_main")
    fn.__module__ = "__main__"
    job = manager.submit(fn, label="main")
    assert job.wait(WAIT_S) and job.result == os.getpid()


def test_the_child_is_started_from_the_folder_that_holds_the_packages():
    """The child runs ``python -m treeviz.services.jobs.worker_process`` with this folder on its path, so
    it must be the repository root (it moved once with the module and pointed inside treeviz/)."""
    root = Path(worker_process._ROOT)
    assert (root / "treeviz" / "services" / "jobs" / "worker_process.py").is_file()
    assert (root / "models" / "ground" / "__init__.py").is_file()
