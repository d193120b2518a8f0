"""DGT trained supervised, as Tables 1 and 2 run it: λ1 and RMSprop momentum chosen on the
validation part of split 0 with seed 0 over the paper's grid (when the part is tuned), then that
configuration run on every split × seed, as the authors' selection scripts do."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from benchmarks.paper.dgt_common import (
    FIXED,
    MOMENTUM_GRID,
    RUN_KEYS,
    TUNING_KEYS,
    Paper,
    choose,
    earlier_tuning,
    grid_note,
    make_row,
    parallel,
    reduced_reasons,
    rmse,
    runs_after_tuning,
    split_for,
    tree_params,
)
from benchmarks.paper.dgt_config import REGRESSION, jobs_for
from models.dgt.estimators import DGTClassifier, DGTRegressor


def fit_dgt(dataset: str, k: int, seed: int, params: dict[str, Any], quick: bool) -> dict[str, Any]:
    """One DGT fit on split ``k`` with model seed ``seed``: validation and test metric, timings."""
    Xa, ya, Xv, yv, Xte, yte = split_for(dataset, k, quick)
    regression = dataset in REGRESSION
    model = (DGTRegressor if regression else DGTClassifier)(**params, random_state=int(seed))
    start = time.perf_counter()
    model.fit(Xa, ya, eval_set=(Xv, yv))
    fit_s = time.perf_counter() - start
    if regression:
        val, test = rmse(model.predict(Xv), yv), rmse(model.predict(Xte), yte)
    else:
        val, test = (100.0 * float(np.mean(model.predict(X) == y)) for X, y in ((Xv, yv), (Xte, yte)))
    epoch_s = [float(r["epoch_s"]) for r in model.history_]
    return {"split": k, "seed": seed, "val": val, "test": test, "fit_s": fit_s, "epochs": len(epoch_s),
            "best_epoch": int(model.best_epoch_), "epoch_s_mean": float(np.mean(epoch_s)),
            "active_leaves": int(np.sum(model.leaf_reached_)) if model.leaf_reached_ is not None else None,
            "l1_penalty": params["l1_penalty"], "momentum": params["momentum"]}


class Tuned(NamedTuple):
    """One data set's outcome: the configuration chosen, its runs, and the grid's scores."""

    chosen: dict[str, float]
    runs: list[dict[str, Any]]
    scores: list[dict[str, Any]]


def _tuning_key(job: tuple) -> tuple:
    """(dataset, λ1, momentum) of a tuning job ``(dataset, split, seed, params, quick)``."""
    return (job[0], float(job[3]["l1_penalty"]), float(job[3]["momentum"]))


def tune_and_run(part: str, datasets: tuple[str, ...], s: dict[str, Any],
                 depth: Callable[[str], int]) -> dict[str, Tuned]:
    """Each data set's grid on split 0 / seed 0 (scores reused from the previous file with
    ``reuse_tuning``), then the chosen configuration on every split × seed; a run equal to a grid
    fit is that fit."""
    task = "regression" if part == "table1" else "classification"
    device, epochs, tune = s["device"], s["epochs"], s["tune"][part]
    n_jobs, one = jobs_for(s, device), s["one_thread_workers"]
    grid = [(lam, mom) for mom in MOMENTUM_GRID[task] for lam in s["l1_grid"]] if tune else []
    tuning_jobs = [(ds, 0, 0, tree_params(depth(ds), epochs, device, l1_penalty=lam, momentum=mom), s["quick"])
                   for ds in datasets for lam, mom in grid]
    earlier = earlier_tuning(part, s, epochs, depth) if s["reuse_tuning"] else {}
    fresh_jobs = [job for job in tuning_jobs if _tuning_key(job) not in earlier]
    fresh = iter(parallel(fit_dgt, fresh_jobs, n_jobs, one) if fresh_jobs else [])
    tuned = [earlier.get(_tuning_key(job)) or next(fresh) for job in tuning_jobs]
    chosen, scores = {}, {}
    for ds in datasets:
        scores[ds] = [r for job, r in zip(tuning_jobs, tuned) if job[0] == ds]
        best = choose(scores[ds], "rmse" if task == "regression" else "acc_pct") if scores[ds] else None
        chosen[ds] = {"l1_penalty": best["l1_penalty"], "momentum": best["momentum"]} if best else dict(FIXED)
    runs_jobs = [(ds, k, seed, tree_params(depth(ds), epochs, device, **chosen[ds]), s["quick"])
                 for ds in datasets for k in range(s["splits"][part]) for seed in range(s["seeds"])]
    complete = [(job, r) for job, r in zip(tuning_jobs, tuned) if all(k in r for k in RUN_KEYS)]
    runs = runs_after_tuning(fit_dgt, runs_jobs, [j for j, _ in complete], [r for _, r in complete], n_jobs, one)
    return {ds: Tuned(chosen[ds], [r for job, r in zip(runs_jobs, runs) if job[0] == ds], scores[ds])
            for ds in datasets}


def dgt_row(part: str, ds: str, tuned: Tuned, s: dict[str, Any], depth: int, paper: Paper, *,
            validation: str, splits: str, paper_splits: int, extra_settings: dict[str, Any] | None = None,
            extra_reduced: tuple[str, ...] = ()) -> dict[str, Any]:
    """The DGT row of one data set, with the settings every supervised row records."""
    task = "regression" if part == "table1" else "classification"
    tune, epochs = s["tune"][part], s["epochs"]
    tuning = (f"grid on the validation part of split 0, seed 0: λ1 in {list(s['l1_grid'])} x momentum in "
              f"{list(MOMENTUM_GRID[task])}" if tune else "none: fixed λ1=1e-5, momentum 0")
    settings = {**tree_params(depth, epochs, s["device"], **tuned.chosen), "epochs": epochs, "tuning": tuning,
                "width": "the paper's Table 12 (hidden width multiplier x (2^h - 1))", "quantizer": "scaled",
                "learning_rate": 1e-2, "grad_clip": 0.01, "validation": validation, "splits": splits,
                "checkpoint": "best validation loss epoch", **(extra_settings or {})}
    reduced = reduced_reasons(s, s["splits"][part], paper_splits, epochs=epochs, tuned=tune,
                              extra=extra_reduced + grid_note(tune, s["l1_grid"]))
    mine = tuned.runs
    return make_row(part, ds, "DGT", mine, settings, reduced, s["device"], paper, {
        "best_epoch_mean": float(np.mean([r["best_epoch"] for r in mine])),
        "active_leaves_mean": float(np.mean([r["active_leaves"] for r in mine])),
        "tuning_scores": [{k: r[k] for k in (*TUNING_KEYS, *RUN_KEYS, "reused_from") if k in r}
                          for r in tuned.scores]})
