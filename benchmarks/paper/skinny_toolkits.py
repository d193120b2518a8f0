"""Skinny Trees' Table 4 baselines on satimage at a 25 % budget (9 of 36 features): random-forest,
XGBoost and LightGBM importance selection on the paper's protocol (:func:`toolkit_row`: 2 000
random trials of its search space, each keeping the features whose importance exceeds the trial's
threshold and refitting on them, the best validation AUC within the budget re-run with 100 seeds;
``python -m benchmarks.paper.skinny --toolkits`` reruns these three rows alone). XGBoost and
LightGBM are imported only here, when a baseline runs."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.ensemble import RandomForestClassifier

from benchmarks.paper.skinny_common import PAPER_RERUNS, PAPER_TRIALS, cpu_machine, log_uniform, row
from models.ground import threads
from treeviz.services.views.features import split_scores

#: Table 4's toolkit baselines on satimage: the paper's test AUC % and its SE (:func:`toolkit_row`).
BASELINES = {"random forest importance": (97.62, 0.005), "XGBoost importance": (98.23, 0.01),
             "LightGBM importance": (94.00, 0.05)}
#: The paper's search space for the tree toolkits (its supplement S5.3): trees U[1, 300], depth
#: U[1, 10], learning rate "discrete uniform" [1e-4, 1] (read here as log-uniform), feature-importance
#: threshold log-U[1e-7, 1e-1], subsample U[0.5, 0.9], LightGBM's bagging frequency U{1..7}.
TOOLKIT_SPACE = {"n_estimators": (1, 300), "max_depth": (1, 10), "learning_rate": (1e-4, 1.0),
                 "threshold": (1e-7, 1e-1), "subsample": (0.5, 0.9), "bagging_freq": (1, 7)}


class Indexed:
    """A prepared data set whose labels are class indices (what the toolkits are trained on)."""

    def __init__(self, prepared: Any) -> None:
        self.prepared = prepared

    def X(self, part: str) -> np.ndarray:
        return self.prepared.X(part)

    def labels(self, part: str) -> np.ndarray:
        return {"val": self.prepared.y_val, "test": self.prepared.y_test}[part]


def _xgboost(**params: Any) -> Any:
    from xgboost import XGBClassifier  # deferred: only this baseline needs it (absent on the GPU machine)

    return XGBClassifier(**params)


def _lightgbm(**params: Any) -> Any:
    from lightgbm import LGBMClassifier  # deferred, as XGBoost

    return LGBMClassifier(**params)


def default_xgboost(seed: int) -> Any:
    """XGBoost with 300 trees and library defaults otherwise: the split study's fixed baseline."""
    return _xgboost(n_estimators=300, random_state=seed, n_jobs=1, verbosity=0)


def importance_auc(make: Any, prepared: Any, k: int, seed: int) -> float:
    """Test AUC of ``make(seed)`` refitted on the ``k`` features it ranks most important."""
    threads.apply_budget(1)
    X, y = prepared.X_train, prepared.y_train
    ranking = np.argsort(-make(seed).fit(X, y).feature_importances_, kind="stable")[:k]
    model = make(seed).fit(X[:, ranking], y)
    return split_scores(model.predict, model.predict_proba, model.classes_, Indexed(prepared), ranking,
                        "classification")["test_auc"]


def toolkit_params(method: str, rng: np.random.Generator) -> dict[str, Any]:
    """One random trial of ``method``'s search (:data:`TOOLKIT_SPACE`)."""
    lo, hi = TOOLKIT_SPACE["n_estimators"]
    params: dict[str, Any] = {"n_estimators": int(rng.integers(lo, hi + 1)),
                              "max_depth": int(rng.integers(TOOLKIT_SPACE["max_depth"][0],
                                                            TOOLKIT_SPACE["max_depth"][1] + 1)),
                              "threshold": log_uniform(rng, *TOOLKIT_SPACE["threshold"]),
                              "subsample": round(float(rng.uniform(*TOOLKIT_SPACE["subsample"])), 3)}
    if method != "random forest importance":
        params["learning_rate"] = log_uniform(rng, *TOOLKIT_SPACE["learning_rate"])
    if method == "LightGBM importance":
        params["bagging_freq"] = int(rng.integers(TOOLKIT_SPACE["bagging_freq"][0],
                                                  TOOLKIT_SPACE["bagging_freq"][1] + 1))
    return params


def _toolkit_model(method: str, params: dict[str, Any], seed: int) -> Any:
    p = {k: v for k, v in params.items() if k != "threshold"}
    if method == "random forest importance":  # subsample: each tree's bootstrap sample size
        return RandomForestClassifier(n_estimators=p["n_estimators"], max_depth=p["max_depth"],
                                      max_samples=p["subsample"], random_state=seed, n_jobs=1)
    if method == "XGBoost importance":
        return _xgboost(**p, random_state=seed, n_jobs=1, verbosity=0)
    return _lightgbm(n_estimators=p["n_estimators"], max_depth=p["max_depth"], learning_rate=p["learning_rate"],
                     subsample=p["subsample"], subsample_freq=p["bagging_freq"], random_state=seed, n_jobs=1,
                     verbose=-1)


def toolkit_trial(method: str, params: dict[str, Any], prepared: Any, seed: int, budget: int) -> dict[str, Any]:
    """Fit on every feature, keep those whose normalised importance exceeds the trial's threshold,
    refit on them: validation and test AUC and the features kept. A trial that keeps none, or more
    than ``budget``, has no score (it is never chosen)."""
    threads.apply_budget(1)
    X, y = prepared.X_train, prepared.y_train
    importance = np.asarray(_toolkit_model(method, params, seed).fit(X, y).feature_importances_, dtype=np.float64)
    total = importance.sum()
    kept = np.flatnonzero(importance / total > params["threshold"]) if total > 0 else np.array([], dtype=np.int64)
    out: dict[str, Any] = {"params": params, "n_features": int(kept.size)}
    if not 1 <= kept.size <= budget:
        return out
    model = _toolkit_model(method, params, seed).fit(X[:, kept], y)
    scores = split_scores(model.predict, model.predict_proba, model.classes_, Indexed(prepared), kept,
                          "classification")
    return {**out, "val_auc": scores["val_auc"], "test_auc": scores["test_auc"]}


def toolkit_row(prepared: Any, method: str, *, trials: int, seeds: list[int], quick: bool = False) -> dict[str, Any]:
    """Table 4's baseline ``method`` as the paper runs it: ``trials`` random trials of its search
    space, the best validation AUC within the 25 % budget (ties to fewer features), re-run with
    every seed in ``seeds``."""
    paper, paper_se = BASELINES[method]
    p = prepared.X_train.shape[1]
    budget = max(1, math.floor(0.25 * p))
    rng = np.random.default_rng(0)
    grid = [toolkit_params(method, rng) for _ in range(trials)]
    if quick:
        grid = [{**g, "n_estimators": min(g["n_estimators"], 5)} for g in grid]
    start = time.perf_counter()
    results = Parallel(n_jobs=threads.usable_cores())(delayed(toolkit_trial)(method, g, prepared, 0, budget)
                                                      for g in grid)
    search_s = time.perf_counter() - start
    valid = [r for r in results if "val_auc" in r]
    full = trials >= PAPER_TRIALS and len(seeds) >= PAPER_RERUNS and not quick
    note = (f"split 64/16/20 stratified (treeviz prepare, seed 8); the paper's search space (trees U[1, 300], "
            "depth U[1, 10], learning rate log-U[1e-4, 1], importance threshold log-U[1e-7, 1e-1], subsample "
            "U[0.5, 0.9], LightGBM bagging frequency U{1..7}); keep the features whose normalised importance "
            f"exceeds the threshold, refit on them; {trials} random trials ({len(valid)} within the budget of "
            f"{budget} of {p}), best validation AUC, re-run with {len(seeds)} seed(s)"
            + ("" if full else f"; reduced: the paper used ~{PAPER_TRIALS} random trials and {PAPER_RERUNS} re-runs"
                               + ("; quick: at most 5 trees a trial" if quick else "")))
    name = f"satimage Table 4, 25% budget: {method}"
    if not valid:
        return row(name, "AUC %", [float("nan")], paper, paper_se, note + "; no trial within the budget",
                   reduced=not full, n_trials=trials, n_valid_trials=0, search_s=search_s)
    ranked = sorted(valid, key=lambda r: (-r["val_auc"], r["n_features"]))  # ties to fewer features
    best = ranked[0]
    reruns = Parallel(n_jobs=threads.usable_cores())(
        delayed(toolkit_trial)(method, best["params"], prepared, s, p) for s in seeds)
    scored = [r for r in reruns if "test_auc" in r]  # a re-run that keeps no feature has no score
    return row(name, "AUC %", [100 * r["test_auc"] for r in scored], paper, paper_se,
               note + (f"; {len(reruns) - len(scored)} re-run(s) kept no feature" if len(scored) < len(reruns) else ""),
               reduced=not full, chosen=best["params"], search_features=best["n_features"],
               search_best_val_auc=best["val_auc"], rerun_features=[r["n_features"] for r in reruns],
               budget=budget, n_trials=trials, n_valid_trials=len(valid), search_s=search_s,
               top_trials=[{k: r[k] for k in ("params", "n_features", "val_auc", "test_auc")} for r in ranked[:10]],
               rerun_s=time.perf_counter() - start - search_s)


def toolkit_rows(prepared: Any, quick: bool) -> list[dict[str, Any]]:
    """Table 4's three toolkit rows on the paper's protocol (:func:`toolkit_row`: 2 000 trials, 100
    re-runs; 30 trials of at most 5 trees and 1 re-run with ``quick``), each stamped with the machine
    it ran on."""
    machine = cpu_machine()  # the toolkits run on the CPU whatever the machine has
    rows = []
    for method in BASELINES:
        found = toolkit_row(prepared, method, trials=30 if quick else PAPER_TRIALS,
                            seeds=[0] if quick else list(range(PAPER_RERUNS)), quick=quick)
        rows.append({**found, "machine": machine})
    return rows
