"""The thread budget: two training jobs at once, with and without treeviz's budget (treeviz/threads.py).

The same latent-tree fit (digits, depth 4, a fixed number of epochs, no early stopping) is timed

* alone with the whole machine (every core), and alone with one job's share of it;
* twice at once in :class:`treeviz.jobs.JobManager`, whose workers apply the budget (cores / 2
  threads each);
* twice at once in plain threads with every runtime left at one thread per core (what the app did
  before the budget), after a scikit-learn fit that used OpenMP, as in a longer process.

``slowdown_vs_share`` is each concurrent fit's time over the solo fit with the same number of
threads: 1.0 means the two jobs did not slow each other at all. ``slowdown_vs_solo`` compares with
one job alone on every core; the jobs' share of the cores allows up to ``cores / threads per job``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from models.latent.estimators import LatentTreeClassifier
from treeviz import threads
from treeviz.data import PrepConfig, load_dataset, prepare
from treeviz.jobs import JobManager

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


def _pair_in_jobs(X, y, epochs: int) -> list[float]:
    manager = JobManager(max_workers=2)
    jobs = [manager.submit(lambda progress: _fit(X, y, epochs), label=f"fit {i}") for i in range(2)]
    for job in jobs:
        job.wait()
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
    epochs = 2 if quick else 8
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
    managed = min((_pair_in_jobs(X, y, epochs) for _ in range(repeats)), key=max)
    _unmanaged(cores)
    HistGradientBoostingClassifier(max_iter=50).fit(X, y)  # OpenMP pools spun up, as in a long process
    unmanaged = min((_pair_in_threads(X, y, epochs) for _ in range(repeats)), key=max)
    threads.apply_budget(threads.job_budget(1))

    rows, results = [], {"cores": cores, "threads_per_job": share, "epochs": epochs}
    cases = (("alone, every core", [solo_all], cores, solo_all),
             ("alone, one job's share", [solo_share], share, solo_share),
             ("two jobs, budget", managed, share, solo_share),
             ("two jobs, no budget", unmanaged, cores, solo_all))
    for label, times, n_threads, reference in cases:
        worst = float(np.max(times))
        row = {"case": label, "threads per job": n_threads, "seconds (slowest job)": worst,
               "slowdown_vs_share": worst / reference, "slowdown_vs_solo": worst / solo_all}
        rows.append(row)
        results[label] = row
    results["allowed_slowdown_vs_solo"] = cores / share
    results["budget_keeps_share"] = results["two jobs, budget"]["slowdown_vs_solo"] <= 1.1 * cores / share
    return {"rows": rows, "results": results}
