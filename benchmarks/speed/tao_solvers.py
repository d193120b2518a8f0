"""TAO's node solvers head to head: level by level, per TAO iteration, and against imodels.

**Levels.** Real TAO reduced problems (``models.tao.problems``) on Letter (standardised, 16 000
rows): a random initial tree of depth Δ ∈ {8, 11} (unit Gaussian hyperplanes, median biases,
constant leaves fitted on the routing), and at every depth level the weighted binary problems of
its decision nodes (care points, pseudolabels, weights v; problems whose care points share one
pseudolabel are solved exactly without a solver and left out). Each level is solved

* by liblinear, one call per node (``solver="sklearn"``: tol 1e-4, max_iter 200), and
* by the compiled level solver, one call for the whole level (``solver="cd"``:
  ``models.tao.decisions.CD_TOL``, at most 200 Newton steps), from the same cold start,

and the wall times give ``speedup_level_vs_liblinear`` (best of ``repeat``). The objectives are
compared node by node on the sum-form ``Σ v logloss + λ‖w‖₁`` (bias unpenalised): the relative gap
of each solver to the better of the two (max and mean) and the gap of the level's total.

**Iterations.** Seconds per TAO iteration on Letter at Δ = 8 and 11 (constant leaves, λ = 1,
random init, guard off, 3 iterations) with each solver, and their ratio, measured in the same
process, plus the objective E each reaches.

**imodels.** imodels' ``TaoTreeClassifier`` is the one public TAO a user could pick instead (it
improves a CART tree's axis-aligned splits). Fit time and test accuracy on a stratified Letter
split (16 000 / 4 000), beside our axis-aligned TAO (the same CART start and depth) and our
sparse oblique TAO.

**Device mode** (``python -m benchmarks.report.run --device cuda tao_solvers``): the batched torch solver
(``solver="torch"``) on the deepest level of the Δ = 8 and Δ = 11 trees, and three TAO iterations at
Δ = 8 with ``solver="torch"``, each timed on the CPU and on the GPU in one process; the rows go under
``results["device_timing"]`` beside the CPU results (:mod:`benchmarks.device_timing`). ``--quick``: 2 500
rows, Δ = 5, one repeat, 2 TAO iterations, imodels on a 2 000-row subset. Letter is read from the
shared data folder; without it scikit-learn's ``digits`` stands in (noted in the results).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks import device_timing
from benchmarks.common import load_uci, shared_data_dir
from models.tao.config import TAOConfig
from models.tao.decisions import CD_TOL
from models.tao.estimators import TAOClassifier
from models.tao.init import random_init
from models.tao.loop import _groups_at
from models.tao.problems import reduced_problems
from models.tao.solvers.cd import l1_logistic_level
from models.tao.solvers.fista import l1_logistic_torch
from models.tao.solvers.liblinear import l1_logistic_sklearn
from models.tao.solvers.objectives import logistic_objective

NAME = "tao_solvers"
LAMBDA = 1.0
DEPTHS = (8, 11)
SK_SETTINGS = dict(tol=1e-4, max_iter=200)
CD_SETTINGS = dict(tol=CD_TOL, max_iter=200)
ITER_SETTINGS = dict(leaf="constant", l1_penalty=LAMBDA, init="random", guard="off", random_state=0)
IMODELS_ITERS = 5


def _data(quick: bool) -> tuple[np.ndarray, np.ndarray, str]:
    root = shared_data_dir()
    if root is not None and (root / "uci" / "letter.csv.gz").is_file():
        X, y = load_uci("letter")
        name = "letter"
    else:
        X, y = load_digits(return_X_y=True)
        X = X.astype(np.float64)
        name = "digits (letter absent)"
    return X, y, name


def _train_subset(X: np.ndarray, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.random.default_rng(0).permutation(X.shape[0])[: min(n, X.shape[0])]
    return StandardScaler().fit_transform(X[idx]), y[idx]


def tree_levels(X: np.ndarray, y: np.ndarray, depth: int, lam: float) -> list[tuple[int, list, int]]:
    """(level, non-trivial problems, decision nodes) for every level of a random depth-Δ tree."""
    classes = np.unique(y)
    Y = np.searchsorted(classes, y)
    sw = np.ones(Y.shape[0])
    cfg = TAOConfig(task="classification", n_outputs=classes.size, l1_penalty=lam, guard="off")
    tree = random_init(X, Y, sw, cfg, depth, np.random.default_rng(depth))
    levels = tree.route(X)
    out = []
    for level in range(depth):
        groups = [(n, i) for n, i in _groups_at(levels, level) if tree.left[n] >= 0]
        problems = reduced_problems(tree, X, Y, sw, cfg, groups)
        hard = [p for p in problems if p.y.size >= 2 and np.any(p.y > 0) and np.any(p.y < 0)]
        out.append((level, hard, len(groups)))
    return out


def _best(fn, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _gaps(f: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    rel = (f - ref) / np.maximum(np.abs(ref), 1e-300)
    return {"max": float(rel.max()), "mean": float(rel.mean())}


def compare_level(problems: list, lam: float, repeat: int, device: str = "cpu") -> dict[str, Any]:
    """Times and objective gaps of liblinear (per node) and the compiled solver (per level)."""
    Xall = np.concatenate([p.X for p in problems])
    yall = np.concatenate([p.y for p in problems])
    vall = np.concatenate([p.v for p in problems])
    gall = np.concatenate([np.full(p.y.size, g) for g, p in enumerate(problems)])
    G = len(problems)
    l1_logistic_level(Xall[:4], yall[:4], vall[:4], np.zeros(4, dtype=np.int64), 1, lam)  # compiled before timing
    t_sk, sol_sk = _best(lambda: [l1_logistic_sklearn(p.X, p.y, p.v, lam, **SK_SETTINGS) for p in problems], repeat)
    t_cd, (W, B) = _best(lambda: l1_logistic_level(Xall, yall, vall, gall, G, lam, **CD_SETTINGS), repeat)
    f_sk = np.array([logistic_objective(p.X, p.y, p.v, w, b, lam) for p, (w, b) in zip(problems, sol_sk)])
    f_cd = np.array([logistic_objective(p.X, p.y, p.v, W[g], B[g], lam) for g, p in enumerate(problems)])
    best = np.minimum(f_sk, f_cd)
    out: dict[str, Any] = {
        "groups": G, "rows": int(Xall.shape[0]), "sklearn_s": t_sk, "cd_s": t_cd,
        "speedup_level_vs_liblinear": t_sk / t_cd,
        "rel_gap_cd_vs_best": _gaps(f_cd, best), "rel_gap_sklearn_vs_best": _gaps(f_sk, best),
        "total_rel_gap_cd_minus_sklearn": float((f_cd.sum() - f_sk.sum()) / f_sk.sum()),
        "nnz_sklearn": int(sum(np.count_nonzero(w) for w, _ in sol_sk)), "nnz_cd": int(np.count_nonzero(W)),
    }
    if device == "cuda":
        def th():
            return l1_logistic_torch(Xall, yall, vall, gall, G, lam, device="cuda", tol=1e-5, max_iter=500)

        th()  # CUDA context and kernels
        t_th, (Wt, Bt) = _best(th, repeat)
        f_th = np.array([logistic_objective(p.X, p.y, p.v, Wt[g], Bt[g], lam) for g, p in enumerate(problems)])
        out.update(torch_cuda_s=t_th, speedup_torch_cuda_vs_liblinear=t_sk / t_th,
                   rel_gap_torch_cuda_vs_cd_total=float((f_th.sum() - f_cd.sum()) / f_cd.sum()))
    return out


def iteration_times(X: np.ndarray, y: np.ndarray, depth: int, iters: int) -> dict[str, Any]:
    """Seconds per TAO iteration with liblinear and with the compiled solver, same tree, same run."""
    out: dict[str, Any] = {"depth": depth, "iterations": iters}
    for solver in ("sklearn", "cd"):
        start = time.perf_counter()
        model = TAOClassifier(depth=depth, max_iter=iters, tol=0.0, solver=solver, **ITER_SETTINGS).fit(X, y)
        per_iter = float(np.mean([h["time_s"] for h in model.history_]))
        out[f"{solver}_s_per_iter"] = per_iter
        out[f"{solver}_fit_s"] = time.perf_counter() - start
        out[f"{solver}_objective"] = float(model.history_[-1]["objective"])
        out[f"{solver}_train_error"] = float(model.history_[-1]["train_error"])
    out["speedup_iteration_vs_liblinear"] = out["sklearn_s_per_iter"] / out["cd_s_per_iter"]
    return out


def imodels_comparison(X: np.ndarray, y: np.ndarray, quick: bool) -> list[dict[str, Any]]:
    """imodels' TaoTree beside our axis-aligned and oblique TAO on one stratified split."""
    try:
        from imodels import TaoTreeClassifier  # deferred: optional benchmark dependency
    except ImportError:  # pragma: no cover - imodels is in requirements-dev.txt
        return [{"model": "imodels TaoTreeClassifier", "note": "imodels is not installed"}]
    n_train, n_test = (2000, 1000) if quick else (16000, 4000)
    n_train = min(n_train, X.shape[0] - 200)
    n_test = min(n_test, X.shape[0] - n_train)
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=n_train, test_size=n_test, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    depth = 5 if quick else 8
    iters = 2 if quick else IMODELS_ITERS
    models = [
        ("imodels TaoTreeClassifier (CART start, axis-aligned)",
         lambda: TaoTreeClassifier(model_args={"max_depth": depth}, n_iters=iters, randomize_tree=False)),
        ("treeviz TAO axis-aligned (CART init)",
         lambda: TAOClassifier(depth=depth, node_type="axis", init="cart", max_iter=iters, l1_penalty=0.0,
                               random_state=0)),
        ("treeviz TAO oblique, cd solver (random init)",
         lambda: TAOClassifier(depth=depth, l1_penalty=LAMBDA, init="random", max_iter=iters, random_state=0)),
    ]
    rows = []
    for name, make in models:
        start = time.perf_counter()
        model = make().fit(Xtr, ytr)
        fit_s = time.perf_counter() - start
        rows.append({"model": name, "depth": depth, "iterations": iters, "fit_s": fit_s,
                     "test_accuracy": float(np.mean(model.predict(Xte) == yte)), "n_train": int(Xtr.shape[0])})
    return rows


def device_workloads(quick: bool, device: str) -> list:
    """The torch solver on the deepest level of each tree, and TAO iterations with it."""
    X_raw, y_raw, data_name = _data(quick)
    X, y = _train_subset(X_raw, y_raw, 2500 if quick else 16000)
    workloads = []
    for depth in ((5,) if quick else DEPTHS):
        level, problems, _ = tree_levels(X, y, depth, LAMBDA)[-1]
        Xall = np.concatenate([p.X for p in problems])
        yall = np.concatenate([p.y for p in problems])
        vall = np.concatenate([p.v for p in problems])
        gall = np.concatenate([np.full(p.y.size, g) for g, p in enumerate(problems)])

        G = len(problems)

        def build(dev, Xall=Xall, yall=yall, vall=vall, gall=gall, G=G):
            return lambda: l1_logistic_torch(Xall, yall, vall, gall, G, LAMBDA, device=dev, tol=1e-5, max_iter=500)

        workloads.append((f"torch node solver, level {level} of Δ={depth} ({len(problems)} nodes)", build,
                          {"data": data_name, "unit": "level", "cpu_threads": 1}))
    iters = 2 if quick else 3

    def fit(dev):
        return lambda: TAOClassifier(depth=5 if quick else 8, max_iter=iters, tol=0.0, solver="torch", device=dev,
                                     **ITER_SETTINGS).fit(X, y)

    workloads.append((f"TAO iterations, solver torch, Δ={5 if quick else 8}", fit,
                      {"data": data_name, "unit": "iteration", "units": iters, "cpu_threads": 1, "repeat": 2}))
    return workloads


def run(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="the batched torch node solver, CPU (one thread) vs GPU")
    X_raw, y_raw, data_name = _data(quick)
    X, y = _train_subset(X_raw, y_raw, 2500 if quick else 16000)
    depths = (5,) if quick else DEPTHS
    repeat = 1 if quick else 3
    results: dict[str, Any] = {"data": data_name, "n_points": int(X.shape[0]), "l1_penalty": LAMBDA,
                               "sklearn_settings": SK_SETTINGS, "cd_settings": CD_SETTINGS, "device": device,
                               "levels": [], "iterations": [], "imodels": []}
    rows: list[dict[str, Any]] = []
    for depth in depths:
        for level, problems, n_nodes in tree_levels(X, y, depth, LAMBDA):
            if not problems:
                continue
            res = compare_level(problems, LAMBDA, repeat, device)
            res.update(depth=depth, level=level, decision_nodes=n_nodes)
            results["levels"].append(res)
            row = {"Δ": depth, "level": level, "nodes": res["groups"], "rows": res["rows"],
                   "liblinear s": res["sklearn_s"], "cd s": res["cd_s"],
                   "speedup": res["speedup_level_vs_liblinear"],
                   "cd gap max": res["rel_gap_cd_vs_best"]["max"],
                   "liblinear gap max": res["rel_gap_sklearn_vs_best"]["max"],
                   "total gap cd-liblinear": res["total_rel_gap_cd_minus_sklearn"]}
            if device == "cuda":
                row["torch cuda s"] = res["torch_cuda_s"]
            rows.append(row)
    for depth in depths:
        it = iteration_times(X, y, depth, 2 if quick else 3)
        results["iterations"].append(it)
        rows.append({"Δ": depth, "level": "TAO iteration", "liblinear s": it["sklearn_s_per_iter"],
                     "cd s": it["cd_s_per_iter"], "speedup": it["speedup_iteration_vs_liblinear"],
                     "total gap cd-liblinear": it["cd_objective"] / it["sklearn_objective"] - 1.0})
    results["imodels"] = imodels_comparison(X_raw, y_raw, quick)
    for r in results["imodels"]:
        rows.append({"level": r["model"], "Δ": r.get("depth"), "fit s": r.get("fit_s"),
                     "test accuracy": r.get("test_accuracy")})
    return {"rows": rows, "results": device_timing.carry_device_section(NAME, results, quick=quick)}
