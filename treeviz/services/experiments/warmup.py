"""Compile the families' numba kernels before a user's first training.

The CPU kernels of several families (latent trees, TAO and the families built on it, DGT and its
forest and bandit) are numba functions, compiled on their first call and then kept in numba's disk
cache (:mod:`models.ground.compilation` says where). Compiling them all takes about a minute of
one core, which the first training of each family would otherwise spend before its first epoch.
:func:`warm_up` pays it ahead: it trains every registered family's defaults, for each of its tasks,
on small tables made here, through the same :func:`treeviz.services.experiments.training.train_run`
the app and the command line train with (nothing stored), each stopped after its first
:data:`RECORDS` epochs or iterations as a Cancel would stop it (the fit then ends and is scored as
usual, so the kernels of its last steps and of prediction run too). So each kernel is compiled
with the types a real training passes it (float64 features prepared by ``prepare``, two classes
and more, regression targets), and a later training, in any process, loads it from the cache.

Three ways run it:

* ``python -m treeviz warmup`` (the README's set-up runs it once after installing);
* the app, in the child process that will run its first training job (:func:`warm_in_worker`,
  through :meth:`treeviz.services.jobs.manager.JobManager.prime`), so that process has also done
  its imports and loaded the kernels before the user's first training;
* the app with its jobs in threads (``TREEVIZ_JOB_PROCESSES=0``), through
  :func:`treeviz.services.jobs.warmup.start_background`, which runs this module
  (``python -m treeviz.services.experiments.warmup``, :func:`child_main`) as a child process at a
  lower priority and on one thread (:func:`models.ground.threads.apply_budget`), so the
  compilation neither holds the app's interpreter lock nor takes the cores the app's jobs share.
  With the cache already filled, the child only loads the kernels and trains the small tables, a
  few seconds of one core.

A fit's stored time leaves compilation out whether or not the warm-up ran first
(:func:`treeviz.services.experiments.training.fit_estimator`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from models import registry
from models.base import Callback
from models.ground import compilation, threads
from models.ground.errors import TrainingCancelled
from treeviz.services.data.dataset import Dataset
from treeviz.services.data.preprocess import PreparedData, PrepConfig, prepare
from treeviz.services.experiments.training import train_run

#: Epoch or iteration records after which a warm-up fit stops (every kernel of a fit has run by then).
RECORDS = 2
#: Rows and features of the small tables.
ROWS, FEATURES = 90, 6
#: The niceness the background warm-up adds to its process (it yields to the app and its jobs).
NICENESS = 10


@dataclass(frozen=True)
class WarmedFit:
    """One small training of :func:`warm_up`: which family, task and table; the seconds it took,
    of which ``compile_s`` compiling ``kernels`` kernels; ``error``, the sentence of a fit that
    failed (None when it trained)."""

    family: str
    task: str
    table: str
    seconds: float
    compile_s: float
    kernels: int
    error: str | None = None


class StopAfter(Callback):
    """Stops a fit after its first ``records`` records, as the Cancel button would."""

    def __init__(self, records: int = RECORDS) -> None:
        self.records = int(records)
        self.seen = 0

    def on_epoch_end(self, estimator: object, **kwargs: object) -> None:
        self.seen += 1
        if self.seen >= self.records:
            raise TrainingCancelled()


def tables() -> dict[str, Dataset]:
    """The small tables the warm-up trains on, by name: ``two classes``, ``three classes`` and
    ``regression`` (seeded, so every warm-up sees the same rows)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((ROWS, FEATURES))
    names = tuple(f"x{i}" for i in range(FEATURES))
    score = X @ np.linspace(1.0, -0.5, FEATURES)
    three = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    return {
        "two classes": Dataset("warm-up, two classes", X, (score > np.median(score)).astype(np.int64), names,
                               "classification", target_name="y", class_names=("a", "b")),
        "three classes": Dataset("warm-up, three classes", X, three.astype(np.int64), names, "classification",
                                 target_name="y", class_names=("a", "b", "c")),
        "regression": Dataset("warm-up, regression", X, score + 0.1 * rng.standard_normal(ROWS), names,
                              "regression", target_name="y"),
    }


def plan(families: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
    """The trainings :func:`warm_up` runs, as (family key, task, table name): each task of each
    family (every registered one unless ``families`` names some); classification on two and on
    three classes (the kernels differ), a task that runs on any data set on three classes."""
    keys = list(families) if families is not None else list(registry.families())
    out = []
    for key in keys:
        for task in registry.get_family(key).tasks:
            if task == "classification":
                names = ("two classes", "three classes")
            elif task == "regression":
                names = ("regression",)
            else:
                names = ("three classes",)
            out.extend((key, task, name) for name in names)
    return out


def warm_up(families: Iterable[str] | None = None, *, on_fit: Callable[[WarmedFit], None] | None = None,
            stop: Callable[[], bool] | None = None) -> list[WarmedFit]:
    """Train every family's defaults (or those of ``families``) once per task on the small tables,
    each for its first :data:`RECORDS` records, so that numba compiles their kernels into its
    cache; nothing is stored.

    Parameters
    ----------
    families
        Family keys; None warms every registered family.
    on_fit
        Called after each training with its :class:`WarmedFit` (the command line prints it).
    stop
        Asked before each training; once it says True the warm-up ends there (the trainings done
        are returned).

    Returns
    -------
    list of WarmedFit
        One per training of :func:`plan`, in its order (up to a stop). A fit that fails is
        reported, not raised: the others still warm their kernels.
    """
    data = tables()
    prepared: dict[str, PreparedData] = {}
    out = []
    for key, task, name in plan(families):
        if stop is not None and stop():
            break
        if name not in prepared:
            prepared[name] = prepare(data[name], PrepConfig(seed=0))
        error = None
        start = time.perf_counter()
        with compilation.watching() as clock:
            try:
                train_run(key, task, {}, prepared[name], callbacks=[StopAfter()])
            except Exception as err:  # reported per fit: one family's failure must not stop the rest
                error = str(err) or type(err).__name__
        fit = WarmedFit(key, task, name, time.perf_counter() - start, clock.seconds, clock.count, error)
        out.append(fit)
        if on_fit is not None:
            on_fit(fit)
    return out


def families_with_kernels(fits: Iterable[WarmedFit]) -> list[str]:
    """The families whose trainings compiled something, in order (empty once the cache is full)."""
    return list(dict.fromkeys(f.family for f in fits if f.kernels))


def warm_in_worker(progress: object, families: Iterable[str] | None = None) -> int:
    """The app's job process, warmed before its first job (:meth:`JobManager.prime
    <treeviz.services.jobs.manager.JobManager.prime>`): every family's small trainings (those of
    ``families`` when given) in the process that will run the user's, so its imports, its numba
    kernels (loaded from the cache, or compiled when the cache is empty) and a forest's worker pool
    are ready; it stops before its next training once a job wants the process
    (``progress.cancelled``). The number of trainings run."""
    return len(warm_up(families, stop=lambda: bool(getattr(progress, "cancelled", False))))


def child_main() -> int:
    """The background child: lower priority, one thread, every family; exit status 0 if all trained."""
    if hasattr(os, "nice"):
        os.nice(NICENESS)
    threads.apply_budget(1)
    fits = warm_up()
    return 0 if all(f.error is None for f in fits) else 1


if __name__ == "__main__":
    sys.exit(child_main())
