"""TAO decision-node solvers head to head on the reduced problems of one depth level.

The problems are real TAO reduced problems (``models.tao.problems``): a random initial tree
(unit Gaussian hyperplanes, median biases; constant leaves fitted on the routing) of depth
``L + 1`` on Letter (standardised), whose ``2**L`` decision nodes at depth ``L`` give ``G = 2**L``
weighted binary problems (care points, pseudolabels, weights ``v``) — 16, 64 and 256 groups for
L = 4, 6, 8. Groups whose care points all share one pseudolabel are solved exactly without a
solver and are left out here.

Back-ends, with the settings TAO's training loop uses (``models.tao.decisions.solve_problems``):

* ``l1_logistic_sklearn`` — liblinear, one call per node, tol 1e-4, max_iter 200,
  intercept_scaling 100 (its bias carries a tiny ℓ1 penalty λ|b|/100);
* ``l1_logistic_torch`` — batched FISTA over all the level's nodes in one call, float64, CPU
  with torch's default intra-op threads and with one thread (and CUDA when present), tol 1e-5,
  max_iter 500, cold start.

Reported per level: wall time of each back-end (best of a few repeats), the time ratio
sklearn / torch (> 1: torch faster), and the objective gap: each node's sum-form objective
``Σ v logloss + λ‖w‖₁`` (bias unpenalised) under each solution, relative to the better of the
two, as max and mean over nodes, plus the relative gap of the level's total. Letter is read
from the shared data folder; without it sklearn's ``digits`` stands in (noted in the results).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from benchmarks.common import shared_data_dir
from benchmarks.tao_paper import load_uci
from models.tao.config import TAOConfig
from models.tao.init import random_init
from models.tao.loop import _groups_at
from models.tao.problems import reduced_problems
from models.tao.solvers.fista import l1_logistic_torch
from models.tao.solvers.liblinear import l1_logistic_sklearn
from models.tao.solvers.objectives import logistic_objective

NAME = "tao_solvers"
LAMBDAS = (1.0,)
LEVELS = (4, 6, 8)
SK_SETTINGS = dict(tol=1e-4, max_iter=200)
TORCH_SETTINGS = dict(tol=1e-5, max_iter=500)


def _data(quick: bool) -> tuple[np.ndarray, np.ndarray, str]:

    root = shared_data_dir()
    if root is not None and (root / "uci" / "letter.csv.gz").is_file():

        X, y = load_uci("letter")
        name = "letter"
    else:

        X, y = load_digits(return_X_y=True)
        X = X.astype(np.float64)
        name = "digits (letter absent)"
    rng = np.random.default_rng(0)
    n = 2500 if quick else 16000
    idx = rng.permutation(X.shape[0])[: min(n, X.shape[0])]
    X = StandardScaler().fit_transform(X[idx])
    return X, y[idx], name


def level_problems(X: np.ndarray, y: np.ndarray, level: int, lam: float):
    """The non-trivial reduced problems of the ``2**level`` decision nodes at depth ``level``."""
    classes = np.unique(y)
    Y = np.searchsorted(classes, y)
    sw = np.ones(Y.shape[0])
    cfg = TAOConfig(task="classification", n_outputs=classes.size, l1_penalty=lam, guard="off")
    tree = random_init(X, Y, sw, cfg, level + 1, np.random.default_rng(level))
    groups = [(n, i) for n, i in _groups_at(tree.route(X), level) if tree.left[n] >= 0]
    problems = reduced_problems(tree, X, Y, sw, cfg, groups)
    return [p for p in problems if p.y.size >= 2 and np.any(p.y > 0) and np.any(p.y < 0)], len(groups)


def _best(fn, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def compare(problems: list, lam: float, device: str, repeat: int) -> dict[str, Any]:
    def sk():
        return [l1_logistic_sklearn(p.X, p.y, p.v, lam, **SK_SETTINGS) for p in problems]

    Xall = np.concatenate([p.X for p in problems])
    yall = np.concatenate([p.y for p in problems])
    vall = np.concatenate([p.v for p in problems])
    gall = np.concatenate([np.full(p.y.size, g) for g, p in enumerate(problems)])

    def th(dev: str):
        return l1_logistic_torch(Xall, yall, vall, gall, len(problems), lam, device=dev, **TORCH_SETTINGS)

    t_sk, sol_sk = _best(sk, repeat)
    out: dict[str, Any] = {"groups": len(problems), "rows": int(Xall.shape[0]), "sklearn_s": t_sk}
    f_sk = np.array([logistic_objective(p.X, p.y, p.v, w, b, lam) for p, (w, b) in zip(problems, sol_sk)])

    default_threads = torch.get_num_threads()
    # (label, device, torch intra-op threads)
    variants = [("cpu", "cpu", default_threads), ("cpu1t", "cpu", 1)]
    if device == "cuda":
        variants.append(("cuda", "cuda", default_threads))
    for dev, where, threads in variants:
        if where == "cuda":
            th("cuda")  # warm-up: CUDA context
        torch.set_num_threads(threads)
        try:
            t_th, (W, B) = _best(lambda where=where: th(where), repeat)
        finally:
            torch.set_num_threads(default_threads)
        f_th = np.array([logistic_objective(p.X, p.y, p.v, W[g], B[g], lam) for g, p in enumerate(problems)])
        ref = np.minimum(f_sk, f_th)
        out[f"torch_{dev}_s"] = t_th
        out[f"time_ratio_sklearn_over_torch_{dev}"] = t_sk / t_th
        out[f"rel_gap_torch_{dev}_vs_best"] = {"max": float(np.max((f_th - ref) / ref)),
                                               "mean": float(np.mean((f_th - ref) / ref))}
        out[f"rel_gap_sklearn_vs_best_{dev}"] = {"max": float(np.max((f_sk - ref) / ref)),
                                                 "mean": float(np.mean((f_sk - ref) / ref))}
        out[f"total_rel_gap_torch_{dev}_minus_sklearn"] = float((f_th.sum() - f_sk.sum()) / f_sk.sum())
        out[f"nnz_torch_{dev}"] = int(np.count_nonzero(np.abs(W) > 0))
    out["nnz_sklearn"] = int(sum(np.count_nonzero(w) for w, _ in sol_sk))
    return out


def run(quick: bool = False) -> dict[str, Any]:

    X, y, data_name = _data(quick)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    levels = (4, 5) if quick else LEVELS
    repeat = 1 if quick else 3
    rows, results = [], {"data": data_name, "n_points": int(X.shape[0]), "sklearn_settings": SK_SETTINGS,
                         "torch_settings": TORCH_SETTINGS, "torch_threads": torch.get_num_threads(),
                         "levels": []}
    for lam in LAMBDAS:
        for level in levels:
            problems, n_nodes = level_problems(X, y, level, lam)
            res = compare(problems, lam, device, repeat)
            res.update(level=level, decision_nodes=n_nodes, l1_penalty=lam)
            results["levels"].append(res)
            row = {"level": level, "λ": lam, "groups": res["groups"], "rows": res["rows"],
                   "sklearn s": res["sklearn_s"], "torch cpu s": res["torch_cpu_s"],
                   "sk/torch cpu": res["time_ratio_sklearn_over_torch_cpu"],
                   "torch cpu 1 thread s": res["torch_cpu1t_s"],
                   "sk/torch cpu 1 thread": res["time_ratio_sklearn_over_torch_cpu1t"],
                   "gap torch max": res["rel_gap_torch_cpu_vs_best"]["max"],
                   "gap sklearn max": res["rel_gap_sklearn_vs_best_cpu"]["max"],
                   "total gap torch-sk": res["total_rel_gap_torch_cpu_minus_sklearn"]}
            if device == "cuda":
                row["sk/torch cuda"] = res["time_ratio_sklearn_over_torch_cuda"]
            rows.append(row)
    return {"rows": rows, "results": results}
