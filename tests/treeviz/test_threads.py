"""The thread budget (models/ground/threads.py): one number decides torch's, OpenMP/BLAS's and numba's
threads, for one job in its own thread, and two jobs at once in one process keep their own."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numba
import pytest
import torch
from threadpoolctl import threadpool_info

from models.ground import threads
from treeviz.services.jobs.manager import JobManager

ROOT = Path(__file__).resolve().parents[2]


def test_job_budget_shares_the_cores_or_takes_the_environment(monkeypatch):
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    cores = threads.usable_cores()
    assert threads.job_budget(1) == cores
    assert threads.job_budget(2) == max(1, cores // 2)
    assert threads.job_budget(10 * cores) == 1
    monkeypatch.setenv(threads.THREADS_ENV, "3")
    assert threads.job_budget(2) == 3
    monkeypatch.setenv(threads.THREADS_ENV, "many")  # not a positive integer: ignored
    assert threads.job_budget(1) == cores


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_apply_budget_holds_for_every_runtime_in_a_fresh_process():
    """In a new interpreter (the order in which the runtimes start matters), one call leaves torch,
    every OpenMP / BLAS pool and numba on one thread, and a numba kernel run afterwards does not
    undo it."""
    code = """
import json, numba, numpy as np, torch
from threadpoolctl import threadpool_info
from models.ground import threads
threads.apply_budget(1)
numba.njit(lambda a: a.sum())(np.ones(3))
print(json.dumps({"torch": torch.get_num_threads(), "numba": numba.get_num_threads(),
                  "pools": [p["num_threads"] for p in threadpool_info()]}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["torch"] == 1 and got["numba"] == 1, got
    assert got["pools"] and set(got["pools"]) == {1}, got


def test_limited_narrows_torch_for_a_block_and_restores_it():
    before = torch.get_num_threads()
    with threads.limited(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("workers", [1, 2])
def test_job_workers_run_with_their_share(monkeypatch, workers):
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    manager = JobManager(max_workers=workers)
    job = manager.submit(lambda progress: torch.get_num_threads(), label="threads")
    assert job.wait(60)
    assert job.snapshot().result == threads.job_budget(workers)


def _counts() -> dict:
    """The calling thread's torch, numba and OpenMP thread counts, the process's BLAS pools, and
    the worker processes a forest with ``n_jobs=-1`` would start here."""
    pools = threadpool_info()
    return {"torch": torch.get_num_threads(), "numba": numba.get_num_threads(),
            "openmp": sorted({p["num_threads"] for p in pools if p["user_api"] == "openmp"}),
            "blas": [p["num_threads"] for p in pools if p["user_api"] == "blas"],
            "workers": threads.worker_count(-1, 1000)}


def _in_a_new_thread() -> int:
    """torch's thread count in a thread that starts torch now (what the process gives it)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return out[0]


def _own(n: int) -> dict:
    return {"torch": n, "numba": min(n, numba.config.NUMBA_NUM_THREADS), "openmp": [n], "workers": n}


@pytest.mark.skipif(threads.usable_cores() < 2, reason="one core: every job's budget is 1 thread")
def test_two_jobs_at_once_keep_their_own_budgets(monkeypatch):
    """Two job managers of one process run a job each at once, on a budget of every core and of
    half of them. Each job looks at its own counts after the other began, and again (the narrow one)
    after the other ended: they stay its own budget, and the BLAS pools never change under a running
    job. Once both are done, this thread and a thread that starts torch afterwards are as before."""
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    torch.get_num_threads()  # this thread's torch is started before anything is compared
    before, before_new = _counts(), _in_a_new_thread()
    wide, narrow = JobManager(max_workers=1), JobManager(max_workers=2)
    budgets = {"wide": threads.job_budget(1), "narrow": threads.job_budget(2)}
    assert budgets["wide"] != budgets["narrow"]
    began = {name: threading.Event() for name in budgets}
    looked = {name: threading.Event() for name in budgets}
    jobs = {}

    def wait(event: threading.Event) -> None:
        if not event.wait(60):
            raise AssertionError("the other job did not get there within 60 s")

    def run(name: str, other: str):
        def fn(progress):
            began[name].set()
            wait(began[other])
            looks = [_counts()]  # the other job is running now
            looked[name].set()
            wait(looked[other])
            if name == "narrow":  # and once more after the wide job has ended
                if not jobs["wide"].wait(60):
                    raise AssertionError("the wide job did not end within 60 s")
                looks.append(_counts())
            return looks
        return fn

    jobs["wide"] = wide.submit(run("wide", "narrow"), label="wide")
    wait(began["wide"])
    jobs["narrow"] = narrow.submit(run("narrow", "wide"), label="narrow")
    for job in jobs.values():
        assert job.wait(120), "a job did not finish"
    snapshots = {name: job.snapshot() for name, job in jobs.items()}
    for name, snap in snapshots.items():
        assert snap.status == "finished", (name, snap.message, snap.traceback)
        looks = snap.result
        for look in looks:
            got = {k: look[k] for k in ("torch", "numba", "openmp", "workers")}
            assert got == _own(budgets[name]), (name, got, budgets)
        assert all(look["blas"] == looks[0]["blas"] for look in looks), (name, looks)
    assert _counts() == before
    assert _in_a_new_thread() == before_new
    wide.shutdown()
    narrow.shutdown()


def test_a_budget_nests_and_restores_everything_even_after_an_error():
    torch.get_num_threads()
    before, before_new = _counts(), _in_a_new_thread()
    with pytest.raises(RuntimeError, match="inside"):
        with threads.budget(1) as n:
            assert n == 1 and threads.current_budget() == 1
            assert {k: v for k, v in _counts().items() if k != "blas"} == _own(1)
            assert set(_counts()["blas"]) == {1}  # the only budget running: the BLAS pools follow it
            with threads.budget(2):
                assert threads.current_budget() == 2 and torch.get_num_threads() == 2
                with threads.limited(1):
                    assert torch.get_num_threads() == 1
                assert torch.get_num_threads() == 2
            assert threads.current_budget() == 1 and torch.get_num_threads() == 1
            raise RuntimeError("inside")
    assert _counts() == before
    assert _in_a_new_thread() == before_new
