"""The scale benchmark's table and one timed fit, shared by ``benchmarks/speed/scale.py`` and by anyone
checking one family: ``python -m benchmarks.speed.scale_table --family tao --n 20000``.

The table is scikit-learn's ``make_classification`` (20 features, 10 informative, 5 redundant,
3 classes, ``random_state=0``), prepared as the Data page does by default (standard scaling,
20 % test, 10 % validation, split seed 0). A family is trained with its app defaults (``train_run``
with no parameters, exactly the Train page's "Train" button), on one thread.

``fit_s`` is the fit's process CPU time (one thread, so it equals the compute time and does not
swing with the machine's load), ``wall_s`` its wall time, ``peak_mb`` the process's peak resident
memory growth during the fit (``ru_maxrss``, so measure one fit per process for a true figure),
``accuracy`` the test accuracy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from typing import Any

from models.ground import threads
from treeviz.services.data import Dataset, PrepConfig, prepare
from treeviz.services.experiments.training import train_run

N_FEATURES = 20
N_CLASSES = 3


def make_table(n: int, seed: int = 0):
    """The synthetic classification table of ``n`` rows as a treeviz Dataset."""
    from sklearn.datasets import make_classification  # deferred: scikit-learn is heavy and only this function needs it


    X, y = make_classification(n_samples=int(n), n_features=N_FEATURES, n_informative=10, n_redundant=5,
                               n_classes=N_CLASSES, random_state=seed)
    return Dataset(name=f"synthetic_{n}", X=X, y=y, feature_names=tuple(f"x{j + 1}" for j in range(N_FEATURES)),
                   task="classification", class_names=tuple(str(c) for c in range(N_CLASSES)),
                   source="sklearn.datasets.make_classification")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def limit_cpu(seconds: float | None) -> None:
    """Stop this process once the CPU time from now passes ``seconds`` (SIGXCPU, then SIGKILL 5 s
    later): a runaway fit is stopped by its compute, whatever the machine's load."""
    if seconds is None:
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + float(seconds)) + 1
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    new_hard = soft + 5 if hard == resource.RLIM_INFINITY else min(hard, soft + 5)
    resource.setrlimit(resource.RLIMIT_CPU, (min(soft, new_hard), new_hard))


def time_fit(family: str, n: int, params: dict[str, Any] | None = None, seed: int = 0,
             cpu_limit_s: float | None = None) -> dict[str, Any]:
    """Train ``family`` with its defaults (plus ``params``) on the ``n``-row table, one thread.
    ``cpu_limit_s``: the process is stopped once the fit has used that much CPU time (see
    :func:`limit_cpu`; run the fit in a process of its own)."""

    threads.apply_budget(1)
    prepared = prepare(make_table(n, seed), PrepConfig(seed=seed))
    before = _peak_rss_mb()
    limit_cpu(cpu_limit_s)
    c0, t0 = time.process_time(), time.perf_counter()
    _, metrics = train_run(family, "classification", params or None, prepared, device="cpu")
    fit_s, wall_s = time.process_time() - c0, time.perf_counter() - t0
    return {"family": family, "n": int(n), "fit_s": fit_s, "wall_s": wall_s,
            "peak_mb": max(0.0, _peak_rss_mb() - before), "rss_mb": _peak_rss_mb(),
            "accuracy": float(metrics["test_accuracy"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--params", default="{}", help="JSON of parameters over the defaults")
    ap.add_argument("--cpu-limit", type=float, default=None, help="stop the fit after this much CPU time (s)")
    a = ap.parse_args(argv)
    print(json.dumps(time_fit(a.family, a.n, json.loads(a.params), cpu_limit_s=a.cpu_limit)))
    return 0


if __name__ == "__main__":
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(v, "1")
    sys.exit(main())
