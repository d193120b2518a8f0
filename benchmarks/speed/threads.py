"""The thread budget: two training jobs at once, with and without treeviz's budget (models/ground/threads.py).

The same latent-tree fit (digits, depth 4, a fixed number of epochs, no early stopping) is timed

* alone with the whole machine (every core), and alone with one job's share of it;
* twice at once in :class:`treeviz.services.jobs.manager.JobManager` with ``processes=True`` (the app's setting):
  each job in its worker's own child process, under the budget (cores / 2 threads each);
* twice at once in the manager's worker threads (``processes=False``), under the same budget: the
  two jobs then share one Python interpreter lock;
* twice at once in plain threads with every runtime left at one thread per core (what the app did
  before the budget), after a scikit-learn fit that used OpenMP, as in a longer process.

``slowdown_vs_share`` is each concurrent fit's time over the solo fit with the same number of
threads: 1.0 means the two jobs did not slow each other at all. ``slowdown_vs_solo`` compares with
one job alone on every core; the jobs' share of the cores allows up to ``cores / threads per job``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from models.ground import threads
from models.latent.estimators import LatentTreeClassifier
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.jobs.manager import JobManager

NAME = "threads"


def _data():
    prepared = prepare(load_dataset("digits"), PrepConfig(seed=0, val_size=0.0))
    return prepared.X_train, prepared.labels("train")


def _fit(X, y, epochs: int) -> float:
    model = LatentTreeClassifier(depth=4, max_epochs=epochs, patience=0, batch_size=64, device="cpu",
                                 random_state=0)
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


@dataclass(frozen=True)
class _TimedFit:
    """A picklable job function: the fit's seconds (the worker process's start-up is not timed)."""

    X: np.ndarray
    y: np.ndarray
    epochs: int

    def __call__(self, progress) -> float:
        return _fit(self.X, self.y, self.epochs)


def _pair_in_jobs(manager: JobManager, X, y, epochs: int) -> list[float]:
    jobs = [manager.submit(_TimedFit(X, y, epochs), label=f"fit {i}") for i in range(2)]
    for job in jobs:
        job.wait()
        if job.status != "finished":
            raise RuntimeError(f"benchmark job failed: {job.message}")
    return [float(job.result) for job in jobs]


def _pair_in_threads(X, y, epochs: int) -> list[float]:
    out: list[float] = [0.0, 0.0]

    def work(i: int) -> None:
        out[i] = _fit(X, y, epochs)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return out


def _unmanaged(cores: int) -> None:
    """Every runtime back to one thread per core, as with no budget."""
    torch.set_num_threads(cores)
    threadpool_limits(limits=cores)


def run(quick: bool = False) -> dict[str, Any]:
    X, y = _data()
    epochs = 3 if quick else 30
    repeats = 1 if quick else 3
    cores = threads.usable_cores()
    share = threads.job_budget(2)
    _fit(X, y, 1)  # warm up (numba compiles the pruning kernel)

    def best(fn) -> float:
        return min(fn() for _ in range(repeats))

    threads.apply_budget(cores)
    solo_all = best(lambda: _fit(X, y, epochs))
    threads.apply_budget(share)
    solo_share = best(lambda: _fit(X, y, epochs))
    processes = JobManager(max_workers=2, processes=True)
    _pair_in_jobs(processes, X, y, 1)  # start both worker processes and warm them up
    in_processes = min((_pair_in_jobs(processes, X, y, epochs) for _ in range(repeats)), key=max)
    processes.shutdown()
    in_threads = min((_pair_in_jobs(JobManager(max_workers=2), X, y, epochs) for _ in range(repeats)), key=max)
    threads.apply_budget(share)
    _unmanaged(cores)
    HistGradientBoostingClassifier(max_iter=50).fit(X, y)  # OpenMP pools spun up, as in a long process
    unmanaged = min((_pair_in_threads(X, y, epochs) for _ in range(repeats)), key=max)
    threads.apply_budget(threads.job_budget(1))

    rows, results = [], {"cores": cores, "threads_per_job": share, "epochs": epochs}
    cases = (("alone, every core", [solo_all], cores, solo_all),
             ("alone, one job's share", [solo_share], share, solo_share),
             ("two jobs, worker processes", in_processes, share, solo_share),
             ("two jobs, worker threads", in_threads, share, solo_share),
             ("two jobs, no budget", unmanaged, cores, solo_all))
    for label, times, n_threads, reference in cases:
        worst = float(np.max(times))
        row = {"case": label, "threads per job": n_threads, "seconds (slowest job)": worst,
               "slowdown_vs_share": worst / reference, "slowdown_vs_solo": worst / solo_all}
        rows.append(row)
        results[label] = row
    results["allowed_slowdown_vs_solo"] = cores / share
    results["budget_keeps_share"] = (results["two jobs, worker processes"]["slowdown_vs_solo"]
                                     <= 1.1 * cores / share)
    return {"rows": rows, "results": results}
