"""The thread budget (models/ground/threads.py): one number decides torch's, OpenMP/BLAS's and numba's threads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

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
    threads.apply_budget(threads.job_budget(1))  # leave the test process as it was
