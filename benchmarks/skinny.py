"""Skinny Trees against the paper (Ibrahim, Behdin & Mazumder, AISTATS 2024), and its speed.

Rows (``python -m benchmarks.run skinny``), each printed beside the paper's number:

* **breast_cancer, the authors' toy example**: m = 20, d = 4, λ0 = 100 (γ = 100/p), λ2 = 0.1,
  s = 0.01, η = 0.1, batch 16, 1000 epochs, on the stratified 64/16/20 split with random_state 8
  (364/91/114 rows): features kept and test AUC (their notebook: 24 of 30, 0.9993), over seeds, and
  test accuracy against the authors' own code run on the same split and seeds
  (:data:`REFERENCE_TOY`: its five runs gave 96.5 % to 99.1 %; the paper's 98.25 % is one of them).
* **Time per epoch** (process CPU time, one thread, median of epochs 2 and after, the SGD + prox
  steps, the feature count and the validation pass), at the two settings timed side by side with
  the authors' code (``../shared/reference/``): the toy above, and 20 000 × 100 synthetic rows
  (m = 50, d = 5, batch 256, the reference harness's ``make_synth.py`` recipe, rebuilt here by
  :func:`skinny_synth100`). Each row times the fused path (what the estimators train with) and,
  in the same process, the plain autograd path it replaced, with their ratio; test AUC and
  features kept come with the fused runs. The authors' own per-epoch times are measured by the
  side-by-side harness, not here: ``benchmarks/reference_speed.py`` holds those figures.
* **The compact model**: predicting 10 000 rows with the dense kernel (every feature's row, zeros
  included) and with the compact model of the kept columns, in the same process.
* **Table 1, synthetic** (the paper's exact generator, σ = 0.5, p = 256, N = 1000 and N = 200):
  test MSE, features and support F1 over 25 simulations, each with 500 random trials of the
  paper's space chosen on the validation MSE (:func:`synthetic_rows`; ``--table1``, resumable).
  The paper prints two decimals, so 0.26 ± 0.00 is met below 0.265.
* **satimage** (``../shared/data/uci/satimage.csv.gz``; split 64/16/20 stratified with seed 8
  through treeviz's own ``prepare``): Table 4 at a 25% budget (9 of 36 features), Skinny Trees
  chosen by :func:`logged_search` (2 000 random trials of the paper's space, the best validation
  AUC within the budget re-run with 100 seeds; ``--table4``, resumable; :func:`selection_study`,
  ``--selection-study``, re-fits the search's ten best trials with ten seeds each), beside random-forest,
  XGBoost and LightGBM importance selection at the same budget on the paper's protocol
  (:func:`toolkit_row`: 2 000 random trials of its search space, each keeping the features whose
  importance exceeds the trial's threshold and refitting on them, the best validation AUC within
  the budget re-run with 100 seeds; ``python -m benchmarks.skinny --toolkits`` reruns these
  three rows alone); and Table 2, a
  single soft tree (m = 1, fixed λ0) at a 50% budget (18 features; ``--single-tree``).

Errors are standard errors over seeds or simulations, as the paper reports them. ``--quick`` runs
every row with a handful of epochs and trials (the numbers then mean nothing).

``run(device="cuda")`` (``python -m benchmarks.run skinny --device cuda``) is timing only
(:func:`device_workloads`): seconds per epoch of Skinny Trees on the CPU and on the GPU in this
process, for the authors' toy run (breast_cancer, m = 20, d = 4, batch 16, one CPU thread as
above) and for satimage (6435 x 36, 6 classes: the shared ``uci/satimage.csv.gz`` when present,
else synthetic data of that shape; m = 20, d = 4, batch 64, torch's default threads). A fit of a few
epochs is timed whole and divided by its epochs. The rows go under ``results["device_timing"]``
beside the CPU results. About 30 s on a 16-core GPU machine (estimated); it needs neither XGBoost nor LightGBM
(imported only by the satimage baselines) nor the TAO benchmark's loader.
"""

from __future__ import annotations

import math
import os
import platform
import time
from typing import Any, NamedTuple

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks import device_timing
from benchmarks.common import (
    PartLog,
    best_time,
    mean_text,
    measured_on,
    memo,
    merge_rows,
    results_dir,
    retime,
    run_keyed,
    shared_data_dir,
    store_section,
    stored_rows,
    stored_section,
    yes_no,
)
from benchmarks.tao_paper import load_uci
from models.ground import threads
from models.registry import get_family
from models.schema import SearchRange
from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.estimators import SkinnyTreesClassifier, SkinnyTreesRegressor
from models.skinny.synthetic import sparse_regression, support_f1
from treeviz.readers.metrics import class_auc
from treeviz.services.data import Dataset, PrepConfig, prepare
from treeviz.services.features import split_scores
from treeviz.services.search import (
    Trial,
    budget_size,
    run_trials,
    sample_params,
    select_best,
)

NAME = "skinny"
#: The paper's satimage protocol: about 2000 random trials, then 100 re-runs of the chosen setting.
PAPER_TRIALS, PAPER_RERUNS = 2000, 100


class SearchedRow(NamedTuple):
    """A satimage row chosen by a feature-budget search (see :func:`logged_search`)."""

    budget: float  # features kept at most, as a fraction of the 36
    fixed: dict[str, Any]  # parameters not searched
    search: dict[str, SearchRange]  # ranges that replace the family's
    space: str  # the search space, in words, for the protocol
    trials: int  # the paper's random trials
    paper: float
    paper_se: float
    log: str  # the trial log's name (a PartLog)


#: Satimage has 36 inputs; the paper's single-tree λ0 is the prox's own threshold, which treeviz
#: writes as lambda0 / p (its lambda0 is the authors' λ0 before the division by p).
SATIMAGE_P = 36
#: The paper's real-data space (its supplement S5.3) for satimage. Where its text and the authors'
#: code differ, the code's satimage run is taken, since it produced the reported numbers: epochs
#: 5-500 in steps of 5 (the text says U[5, 1000]) and the ramp rate s log-U[1e-4, 1e-1] (the text
#: says [1e-4, 1]). γ = 100/p is treeviz's lambda0 = 100 with the dense-to-sparse ramp.
S53 = {"n_trees": SearchRange(1, 100), "depth": SearchRange(1, 5),
       "batch_size": SearchRange(choices=(16, 64, 256, 1024)),
       "max_epochs": SearchRange(choices=tuple(range(5, 501, 5))),
       "temperature": SearchRange(1e-4, 0.1, log=True), "lambda2": SearchRange(1e-3, 1.0, log=True),
       "learning_rate": SearchRange(1e-2, 10.0, log=True)}
SEARCHED = {
    "satimage Table 4, 25% budget: Skinny Trees": SearchedRow(
        0.25, {"lambda0": 100.0, "schedule": "dense_to_sparse"}, S53,
        "the paper's S5.3 space: dense-to-sparse with gamma = 100/p (treeviz's lambda0 100), m U[1, 100], "
        "d U[1, 5], batch {16, 64, 256, 1024}, lr log-U[1e-2, 10], lambda2 log-U[1e-3, 1]; where the paper's "
        "text and the authors' code differ, the code's satimage settings: epochs 5-500 in steps of 5 (text: "
        "U[5, 1000]), ramp rate s log-U[1e-4, 1e-1] (text: [1e-4, 1])", PAPER_TRIALS, 98.05, 0.01,
        "skinny_satimage_25_s53"),
    "satimage Table 2, 50% budget: single Skinny Tree": SearchedRow(
        0.5, {"n_trees": 1, "schedule": "fixed"},
        {"depth": SearchRange(1, 5), "batch_size": SearchRange(choices=tuple(64 * b for b in range(1, 65))),
         "learning_rate": SearchRange(1e-2, 10.0, log=True), "max_epochs": SearchRange(5, 1000),
         "lambda0": SearchRange(1e-3 * SATIMAGE_P, 10.0 * SATIMAGE_P, log=True),
         "lambda2": SearchRange(1e-2, 1e2, log=True)},
        "the paper's Sec. 7.1 space: one tree, fixed lambda0 (no ramp), depth U[1, 5], batch 64b with b in "
        "{1..64}, lr log-U[1e-2, 10], epochs U[5, 1000], the prox's lambda0 log-U[1e-3, 10] (treeviz's lambda0 = "
        "36 x that), lambda2 log-U[1e-2, 1e2]", 500, 88.66, 0.05,
        "skinny_satimage_single_50"),
}
TOY = {"n_trees": 20, "depth": 4, "lambda0": 100.0, "lambda2": 0.1, "temperature": 0.01, "learning_rate": 0.1,
       "batch_size": 16, "max_epochs": 1000}
SYNTHETIC = {"n_trees": 20, "depth": 2, "lambda0": 100.0, "temperature": 0.01, "batch_size": 16,
             "target_scaling": "none", "min_features": 0}  # the paper's search space: m ≤ 50, d ≤ 5


def _se(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


def _row(name: str, metric: str, values: list[float], paper: float | None, paper_se: float | None,
         protocol: str, *, higher_is_better: bool = True, decimals: int | None = None,
         **extra: Any) -> dict[str, Any]:
    """One result row. ``decimals``: how many the paper prints; a paper value printed as 0.26 ± 0.00
    stands for anything in [0.255, 0.265), so the comparison allows half a unit of the last digit."""
    mean = float(np.mean(values))
    ok = None
    if paper is not None:  # within the paper's SE (our own SE where the paper gives none) or better
        slack = paper_se if paper_se is not None else _se(values)
        if decimals is not None:
            slack = max(slack, 0.5 * 10.0 ** -decimals)
        ok = mean >= paper - slack if higher_is_better else mean <= paper + slack
    return {"name": name, "metric": metric, "ours_mean": mean, "ours_std": float(np.std(values)),
            "ours_se": _se(values), "paper_mean": paper, "paper_std": paper_se, "n": len(values),
            "within_paper_se_or_better": ok, "protocol": protocol, "values": [float(v) for v in values], **extra}


# ------------------------------------------------------------------------------------------ toy example
def _toy_split():
    X, y = load_breast_cancer(return_X_y=True)
    Xtv, Xte, ytv, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=8)
    Xtr, Xva, ytr, yva = train_test_split(Xtv, ytv, test_size=0.2, stratify=ytv, random_state=8)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xva), yva, scaler.transform(Xte), yte


def _toy_fit(seed: int, epochs: int, device: str) -> dict[str, float]:
    threads.apply_budget(1)
    Xtr, ytr, Xva, yva, Xte, yte = _toy_split()
    model = SkinnyTreesClassifier(**{**TOY, "max_epochs": epochs}, device=device, random_state=seed)
    start = time.perf_counter()
    model.fit(Xtr, ytr, eval_set=(Xva, yva))
    fit_s = time.perf_counter() - start
    return {"fit_s": fit_s, "features": float(model.selected_features_.size),
            "test_auc": class_auc(yte, model.predict_proba(Xte), model.classes_),
            "test_accuracy": float(model.score(Xte, yte)),
            "s_per_epoch": float(np.median([r["epoch_s"] for r in model.history_])),
            "first_removal": float(next((r["epoch"] for r in model.history_ if r["n_features"] < 30), 0))}


#: The authors' code (mazumder-lab/SkinnyTrees at b2c48f9, through ``../shared/reference/``'s
#: ``ref_skinny.py``: TensorFlow 2.15.1, one thread) on the same toy split, 1000 epochs, seeds 0-4,
#: run on 2026-11-28: test accuracy, features kept and test AUC per seed. The paper's 98.25 % is
#: one notebook run; these five runs are the spread the reference itself has, and the accuracy
#: row is anchored on them.
REFERENCE_TOY = {"test_accuracy": (0.9649122807017544, 0.9824561403508771, 0.9912280701754386, 0.9912280701754386,
                                   0.9824561403508771),
                 "features_kept": (23, 25, 24, 24, 25),
                 "test_auc": (1.0, 0.9993386243386243, 0.9996693121693121, 0.9993386243386243, 0.9993386243386243)}


def toy_rows(quick: bool) -> list[dict[str, Any]]:
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    epochs = 30 if quick else TOY["max_epochs"]
    runs = Parallel(n_jobs=min(len(seeds), threads.usable_cores()))(
        delayed(_toy_fit)(s, epochs, "cpu") for s in seeds)
    protocol = (f"the authors' toy settings, {epochs} epochs, split 364/91/114 (seed 8), {len(seeds)} seed(s)"
                + ("; reduced (quick)" if quick else ""))
    rows = [{**row, "fit_seconds": [r["fit_s"] for r in runs]} for row in [
        _row("breast_cancer toy: features kept", "features", [r["features"] for r in runs], 24.0, None, protocol,
             higher_is_better=False, first_removal_epoch=[r["first_removal"] for r in runs]),
        _row("breast_cancer toy: test AUC", "AUC", [r["test_auc"] for r in runs], 0.9993, None, protocol),
        _row("breast_cancer toy: test accuracy", "accuracy", [r["test_accuracy"] for r in runs],
             float(np.mean(REFERENCE_TOY["test_accuracy"])), float(np.std(REFERENCE_TOY["test_accuracy"])),
             protocol + "; anchor: the authors' code run on the same split and seeds 0-4 (mean ± std of its "
             f"five runs: {', '.join(f'{v:.4f}' for v in REFERENCE_TOY['test_accuracy'])}), not the paper's "
             "98.25 %, which is one notebook run", reference_values=list(REFERENCE_TOY["test_accuracy"]),
             paper_spread="SD"),
    ]]
    if torch.cuda.is_available():
        gpu = _toy_fit(0, 30 if quick else 200, "cuda")
        rows.append(_row("breast_cancer toy: s/epoch, GPU", "s/epoch", [gpu["s_per_epoch"]], None,
                         None, f"{torch.cuda.get_device_name(0)}", higher_is_better=False))
    return rows


# ------------------------------------------------------------------------------------------ time per epoch
def skinny_synth100(n_train: int = 20_000) -> tuple[np.ndarray, ...]:
    """The side-by-side harness's Skinny data (``../shared/reference/make_synth.py``): binary
    labels through a nonlinear logit of 10 of 100 standard-normal features, standardised with the
    training statistics; 20 000 / 5 000 / 5 000 rows, float32. The recipe draws the DGT table
    first from the same generator, so that is drawn (and dropped) here too."""
    rng = np.random.default_rng(12345)
    rng.standard_normal((30_000, 50)).astype(np.float32)  # the DGT table's draws, in order
    rng.standard_normal((15, 50))
    rng.standard_normal(15)
    rng.uniform(0, 20, 16)
    rng.standard_normal(30_000)
    p = 100
    X = rng.standard_normal((30_000, p))
    beta = np.zeros(p)
    beta[:10] = rng.uniform(1, 2, 10) * rng.choice([-1, 1], 10)
    logit = X @ beta + 1.5 * np.sin(2 * X[:, 0]) * X[:, 1] - X[:, 2] * X[:, 3]
    y = (rng.random(X.shape[0]) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    X = ((X - X[:20_000].mean(0)) / X[:20_000].std(0)).astype(np.float32)
    return X[:n_train], y[:n_train], X[20_000:25_000], y[20_000:25_000], X[25_000:], y[25_000:]


class _EpochClock:
    """Process CPU time at the start of training and at the end of every epoch."""

    def on_train_begin(self, estimator: Any, **kw: Any) -> None:
        self.marks = [time.process_time()]

    def on_epoch_end(self, estimator: Any, **kw: Any) -> None:
        self.marks.append(time.process_time())

    def per_epoch(self) -> float:
        """The median epoch after the first."""
        steps = np.diff(self.marks)
        return float(np.median(steps[1:] if steps.size > 1 else steps))


def _timed_epochs(params: dict[str, Any], data: tuple[np.ndarray, ...], plain: bool) -> dict[str, float]:
    Xtr, ytr, Xva, yva, Xte, yte = data
    model = SkinnyTreesClassifier(**params)
    model._plain_path = plain
    clock = _EpochClock()
    model.fit(Xtr, ytr, eval_set=(Xva, yva), callbacks=[clock])
    return {"s": clock.per_epoch(), "test_auc": class_auc(yte, model.predict_proba(Xte), model.classes_),
            "features": float(model.selected_features_.size)}


#: The side-by-side settings (``../shared/reference/ours_skinny.py``): sigmoid routing, λ0 = 100,
#: λ2 = 0.1, s = 0.01, η = 0.1, dense-to-sparse, seed 0.
SIDE_BY_SIDE = {"activation": "sigmoid", "lambda0": 100.0, "lambda2": 0.1, "temperature": 0.01, "learning_rate": 0.1,
                "schedule": "dense_to_sparse", "penalty": "l0", "device": "cpu", "random_state": 0}


def speed_rows(quick: bool) -> list[dict[str, Any]]:
    """CPU seconds per epoch of the fused path and of the plain autograd path, in this process,
    one thread, at the side-by-side harness's two settings, interleaved over rounds."""
    threads.apply_budget(1)
    toy_data = _toy_split()
    big_data = skinny_synth100(2_000 if quick else 20_000)
    plans = [
        ("per epoch, the authors' toy (breast_cancer 364 rows, m 20, d 4, batch 16)", toy_data,
         {**SIDE_BY_SIDE, "n_trees": 20, "depth": 4, "batch_size": 16}, 5 if quick else 30, 3 if quick else 10),
        (f"per epoch, {big_data[0].shape[0]} x 100 synthetic (m 50, d 5, batch 256)", big_data,
         {**SIDE_BY_SIDE, "n_trees": 50, "depth": 5, "batch_size": 256}, 2 if quick else 4, 2 if quick else 3),
    ]
    rounds = 1 if quick else 3
    rows = []
    for name, data, params, fused_epochs, plain_epochs in plans:
        start, measured = time.perf_counter(), measured_on()
        fused_runs, plain_runs = [], []
        for _ in range(rounds):  # interleaved, so that both paths see the same machine
            fused_runs.append(_timed_epochs({**params, "max_epochs": fused_epochs}, data, plain=False))
            plain_runs.append(_timed_epochs({**params, "max_epochs": plain_epochs}, data, plain=True))
        fused_s = [r["s"] for r in fused_runs]
        plain_s = [r["s"] for r in plain_runs]
        rows.append(_row(
            f"{name}: CPU s, 1 thread", "s/epoch", fused_s, None, None,
            f"process CPU time per epoch (SGD + prox steps, feature count, validation pass), median of epochs 2+ of a "
            f"{fused_epochs}-epoch fit, {rounds} round(s) interleaved with the plain autograd path "
            f"({plain_epochs} epochs) in the same process; the settings of ../shared/reference/ours_skinny.py; the "
            "authors' code is timed side by side by benchmarks/reference_speed.py", higher_is_better=False,
            plain_path_s=float(np.median(plain_s)), plain_path_values=plain_s,
            speedup_vs_plain_path=float(np.median(plain_s) / np.median(fused_s)),
            test_auc=float(np.median([r["test_auc"] for r in fused_runs])),
            plain_path_test_auc=float(np.median([r["test_auc"] for r in plain_runs])),
            features=float(np.median([r["features"] for r in fused_runs])), epochs=fused_epochs,
            row_seconds=time.perf_counter() - start, measured=measured))
    return rows


# ------------------------------------------------------------------------------------------ compact model
def compact_rows(quick: bool) -> list[dict[str, Any]]:
    """Dense vs compact inference on the synthetic p = 256 problem after selection (10 000 rows)."""
    start, measured = time.perf_counter(), measured_on()
    data = sparse_regression(1000, 256, 0.5, seed=1)
    model = SkinnyTreesRegressor(**SYNTHETIC, lambda2=10.0, learning_rate=0.05, max_epochs=20 if quick else 300,
                                 device="cpu", random_state=1).fit(data.X[:800], data.y[:800])
    small = model.compact()
    sel = model.selected_features_
    dense = SoftTreeEnsemble(256, 1, model.n_trees, model.depth, dtype=torch.float64).requires_grad_(False)
    dense.kernel.copy_(torch.from_numpy(model.kernel_))
    dense.bias.copy_(torch.from_numpy(model.bias_))
    dense.leaves.copy_(torch.from_numpy(model.leaves_))
    X = torch.from_numpy(np.ascontiguousarray(data.X_test))
    threads.apply_budget(1)
    dense_s = best_time(lambda: dense(X))
    Xs = np.ascontiguousarray(data.X_test[:, sel])
    compact_s = best_time(lambda: small.predict(Xs))
    identical = bool(np.array_equal(small.predict(Xs), model.predict(data.X_test)))
    with torch.no_grad():
        dense_pred = dense(X).numpy()[:, 0] * model.target_scale_[0] + model.target_mean_[0]
    return [{"name": f"compact model: predict 10 000 rows ({sel.size} of 256 features kept)", "metric": "ms",
             "ours_mean": compact_s * 1e3, "ours_std": 0.0, "paper_mean": None, "paper_std": None,
             "dense_ms": dense_s * 1e3, "speedup_vs_dense": dense_s / compact_s, "identical_to_full_model": identical,
             "max_abs_diff_dense_vs_compact": float(np.max(np.abs(dense_pred - small.predict(Xs)))),
             "protocol": "one thread; dense = the kernel with every feature's row (zeros included), compact = "
                         "SkinnyTreesRegressor.compact() on the kept columns; the paper claims up to 10x",
             "row_seconds": time.perf_counter() - start, "measured": measured}]


# ------------------------------------------------------------------------------------------ Table 1
def _synthetic_trial(n: int, sim: int, params: dict[str, Any]) -> dict[str, Any]:
    threads.apply_budget(1)
    data = memo(sparse_regression, n, 256, 0.5, sim)  # a simulation's 500 trials share its data
    cut = int(0.8 * n)
    model = SkinnyTreesRegressor(**{**SYNTHETIC, **params}, device="cpu", random_state=sim)
    try:
        model.fit(data.X[:cut], data.y[:cut])
    except ValueError as err:  # a diverging trial is never chosen
        return {"params": params, "val_mse": math.inf, "error": str(err)}
    mse = lambda X, y: float(np.mean((model.predict(X) - y) ** 2))  # noqa: E731
    return {"params": params, "val_mse": mse(data.X[cut:], data.y[cut:]),
            "test_mse": mse(data.X_test, data.y_test), "features": int(model.selected_features_.size),
            "f1": support_f1(model.selected_features_, data.support)}


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(f"{math.exp(rng.uniform(math.log(low), math.log(high))):.3g}")


#: Table 1's protocol: simulations per N and random trials per simulation.
TABLE1_SIMULATIONS, TABLE1_TRIALS = 25, 500
#: Table 1's paper values per N: MSE, its SE, features, SE, support F1, SE.
TABLE1_PAPER = {1000: (0.26, 0.00, 8, 0, 1.00, 0.00), 200: (0.31, 0.00, 12, 1, 0.87, 0.04)}


def table1_params(rng: np.random.Generator, quick: bool = False) -> dict[str, Any]:
    """One random trial of the paper's synthetic search space (its supplement S4): trees U[1, 50],
    depth U[1, 5], batch 16·b with b in {1..8}, epochs U[5, 500], the ramp rate s log-U[1e-4, 1e-1],
    λ2 log-U[1e-2, 1e2] and learning rate log-U[1e-3, 1e-1]; λ0 is fixed at 100 (γ = 100/p)."""
    return {"n_trees": int(rng.integers(1, 51)), "depth": int(rng.integers(1, 6)),
            "batch_size": 16 * int(rng.integers(1, 9)), "max_epochs": 5 if quick else int(rng.integers(5, 501)),
            "temperature": _log_uniform(rng, 1e-4, 0.1), "lambda2": _log_uniform(rng, 1e-2, 1e2),
            "learning_rate": _log_uniform(rng, 1e-3, 1e-1)}


def synthetic_rows(quick: bool, sizes: tuple[int, ...] = (1000, 200), retime_sample: int = 0) -> list[dict[str, Any]]:
    """Table 1 on the paper's protocol: for each N in ``sizes`` (the paper's 200 and 1000), 25
    simulations (seeds 1-25), each with 500 random trials of :func:`table1_params` (drawn per
    simulation), the lowest validation MSE chosen. Every finished trial goes to a
    :class:`PartLog`, so the run (about 5 CPU hours) is done in parts (``python -m
    benchmarks.skinny --table1 [--sizes 200]``); the smaller N runs first.

    The rows' time is the trials' logged times summed (``part_seconds``). Trials logged before
    times were kept have none: ``retime_sample`` of them per N, drawn at random, are run again
    (:func:`retime`, which checks that each reproduces its logged result) and the N's total is
    estimated from them (``estimated_seconds``; ``--retime N``)."""
    sims = [1] if quick else list(range(1, TABLE1_SIMULATIONS + 1))
    n_trials = 2 if quick else TABLE1_TRIALS
    plans = {}
    for n in sorted(sizes):
        for sim in sims:
            rng = np.random.default_rng([n, sim])
            plans[(n, sim)] = [table1_params(rng, quick) for _ in range(n_trials)]
    tasks = [(f"{n}/{sim}/{i}", delayed(_synthetic_trial)(n, sim, params))
             for (n, sim), trials in plans.items() for i, params in enumerate(trials)]
    log = None if quick else PartLog("skinny_table1")
    done = run_keyed(tasks, log)
    rows = []
    for n in sizes:
        prefix = f"{n}/"
        timing = {} if log is None else _table1_time(log, [t for t in tasks if t[0].startswith(prefix)], retime_sample)
        chosen = [min((done[f"{n}/{sim}/{i}"] for i in range(n_trials)), key=lambda r: r["val_mse"]) for sim in sims]
        protocol = (f"sigma=0.5, p=256, N={n} (80/20 train/validation), 10 000 test rows; lambda0=100 (gamma=100/p) "
                    f"ramped at rate s; {n_trials} random trials per simulation of the paper's space (trees U[1, 50], "
                    "depth U[1, 5], batch 16b with b in {1..8}, epochs U[5, 500], s log-U[1e-4, 1e-1], lambda2 "
                    "log-U[1e-2, 1e2], lr log-U[1e-3, 1e-1]), lowest validation MSE; "
                    f"{len(sims)} simulation(s) (seeds {sims[0]}-{sims[-1]})"
                    + ("" if len(sims) >= TABLE1_SIMULATIONS and n_trials >= TABLE1_TRIALS else
                       f"; reduced: the paper used {TABLE1_SIMULATIONS} simulations x {TABLE1_TRIALS} trials"))
        mse_p, mse_se, f_p, f_se, f1_p, f1_se = TABLE1_PAPER[n]
        machine = cpu_machine()
        rows += [
            _row(f"Table 1 N={n}: test MSE", "MSE", [c["test_mse"] for c in chosen], mse_p, mse_se, protocol,
                 higher_is_better=False, decimals=2, chosen=[c["params"] for c in chosen], machine=machine,
                 **timing),
            _row(f"Table 1 N={n}: features", "features", [c["features"] for c in chosen], f_p, f_se, protocol,
                 higher_is_better=False, machine=machine, **timing),
            _row(f"Table 1 N={n}: support F1", "F1", [c["f1"] for c in chosen], f1_p, f1_se, protocol, decimals=2,
                 machine=machine, **timing),
        ]
    return rows


def _table1_time(log: PartLog, tasks: list[tuple[str, Any]], retime_sample: int) -> dict[str, Any]:
    """One N's time fields: its trials' logged times summed, or (some logged without one) an
    estimate from ``retime_sample`` of those re-timed now plus any timed before; none without one."""
    keys = [key for key, _ in tasks]
    exact = log.seconds(keys)
    if exact is not None:
        return {"part_seconds": exact}
    if retime_sample:
        got = retime(tasks, log, sample=retime_sample)
        if got["differ"]:
            print(f"  {len(got['differ'])} re-run trial(s) did not reproduce their logged result, e.g. "
                  f"{got['differ'][0]}: the code changed since they ran, so their times were not kept", flush=True)
    estimate = log.estimate(keys)
    if estimate is None:
        return {}
    return {"estimated_seconds": estimate["seconds"],
            "estimated_from": {"timed": estimate["timed"], "of": estimate["of"], "se_seconds": estimate["se_seconds"],
                               "how": "trials logged without a time count at the mean of those timed: a random "
                                      "sample re-run by python -m benchmarks.skinny --table1 --retime N, each "
                                      "reproducing its logged result"}}


# ------------------------------------------------------------------------------------------ satimage
def _satimage(seed: int = 8) -> Any:

    X, labels = load_uci("satimage")
    classes, y = np.unique(labels, return_inverse=True)
    dataset = Dataset(name="satimage", X=X, y=y, feature_names=tuple(f"x{j}" for j in range(X.shape[1])),
                      task="classification", class_names=tuple(str(c) for c in classes),
                      source="../shared/data/uci")
    return prepare(dataset, PrepConfig(scaling="standard", test_size=0.2, val_size=0.16, seed=seed))


def _importance_auc(make: Any, prepared: Any, k: int, seed: int) -> float:
    threads.apply_budget(1)
    X, y = prepared.X_train, prepared.y_train
    ranking = np.argsort(-make(seed).fit(X, y).feature_importances_, kind="stable")[:k]
    model = make(seed).fit(X[:, ranking], y)
    return split_scores(model.predict, model.predict_proba, model.classes_, _Indexed(prepared), ranking,
                        "classification")["test_auc"]


class _Indexed:
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


#: Table 4's toolkit baselines on satimage: the paper's test AUC % and its SE (:func:`toolkit_row`).
BASELINES = {"random forest importance": (97.62, 0.005), "XGBoost importance": (98.23, 0.01),
             "LightGBM importance": (94.00, 0.05)}


def _default_xgboost(seed: int) -> Any:
    """XGBoost with 300 trees and library defaults otherwise: the split study's fixed baseline."""
    return _xgboost(n_estimators=300, random_state=seed, n_jobs=1, verbosity=0)


#: The paper's search space for the tree toolkits (its supplement S5.3): trees U[1, 300], depth
#: U[1, 10], learning rate "discrete uniform" [1e-4, 1] (read here as log-uniform), feature-importance
#: threshold log-U[1e-7, 1e-1], subsample U[0.5, 0.9], LightGBM's bagging frequency U{1..7}.
TOOLKIT_SPACE = {"n_estimators": (1, 300), "max_depth": (1, 10), "learning_rate": (1e-4, 1.0),
                 "threshold": (1e-7, 1e-1), "subsample": (0.5, 0.9), "bagging_freq": (1, 7)}


def toolkit_params(method: str, rng: np.random.Generator) -> dict[str, Any]:
    """One random trial of ``method``'s search (:data:`TOOLKIT_SPACE`)."""
    lo, hi = TOOLKIT_SPACE["n_estimators"]
    params: dict[str, Any] = {"n_estimators": int(rng.integers(lo, hi + 1)),
                              "max_depth": int(rng.integers(TOOLKIT_SPACE["max_depth"][0],
                                                            TOOLKIT_SPACE["max_depth"][1] + 1)),
                              "threshold": _log_uniform(rng, *TOOLKIT_SPACE["threshold"]),
                              "subsample": round(float(rng.uniform(*TOOLKIT_SPACE["subsample"])), 3)}
    if method != "random forest importance":
        params["learning_rate"] = _log_uniform(rng, *TOOLKIT_SPACE["learning_rate"])
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
    scores = split_scores(model.predict, model.predict_proba, model.classes_, _Indexed(prepared), kept,
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
    full = trials >= PAPER_TRIALS and len(seeds) >= PAPER_RERUNS
    protocol = (f"split 64/16/20 stratified (treeviz prepare, seed 8); the paper's search space (trees U[1, 300], "
                "depth U[1, 10], learning rate log-U[1e-4, 1], importance threshold log-U[1e-7, 1e-1], subsample "
                "U[0.5, 0.9], LightGBM bagging frequency U{1..7}); keep the features whose normalised importance "
                f"exceeds the threshold, refit on them; {trials} random trials ({len(valid)} within the budget of "
                f"{budget} of {p}), best validation AUC, re-run with {len(seeds)} seed(s)"
                + ("" if full else f"; reduced: the paper used ~{PAPER_TRIALS} random trials and {PAPER_RERUNS} "
                                   "re-runs"))
    if not valid:
        return _row(f"satimage Table 4, 25% budget: {method}", "AUC %", [float("nan")], paper, paper_se,
                    protocol + "; no trial within the budget", n_trials=trials, n_valid_trials=0, search_s=search_s)
    ranked = sorted(valid, key=lambda r: (-r["val_auc"], r["n_features"]))  # ties to fewer features
    best = ranked[0]
    reruns = Parallel(n_jobs=threads.usable_cores())(
        delayed(toolkit_trial)(method, best["params"], prepared, s, p) for s in seeds)
    scored = [r for r in reruns if "test_auc" in r]  # a re-run that keeps no feature has no score
    return _row(f"satimage Table 4, 25% budget: {method}", "AUC %", [100 * r["test_auc"] for r in scored], paper,
                paper_se, protocol + (f"; {len(reruns) - len(scored)} re-run(s) kept no feature"
                                      if len(scored) < len(reruns) else ""),
                chosen=best["params"], search_features=best["n_features"],
                search_best_val_auc=best["val_auc"], rerun_features=[r["n_features"] for r in reruns],
                budget=budget, n_trials=trials, n_valid_trials=len(valid), search_s=search_s,
                top_trials=[{k: r[k] for k in ("params", "n_features", "val_auc", "test_auc")} for r in ranked[:10]],
                rerun_s=time.perf_counter() - start - search_s)


def _rerun(params: dict[str, Any], prepared: Any, seed: int) -> tuple[float, int]:
    """Test AUC and features kept of the chosen configuration re-run with another seed."""
    model = _seeded_fit(params, prepared, seed)
    return class_auc(prepared.y_test, model.predict_proba(prepared.X_test), model.classes_), \
        int(model.selected_features_.size)


def _seeded_fit(params: dict[str, Any], prepared: Any, seed: int) -> SkinnyTreesClassifier:
    """A setting fitted on the training part with model seed ``seed``, on one CPU thread."""
    threads.apply_budget(1)
    return SkinnyTreesClassifier(**{**params, "random_state": seed, "device": "cpu"}).fit(prepared.X_train,
                                                                                          prepared.y_train)


def satimage_rows(quick: bool) -> list[dict[str, Any]]:
    data = shared_data_dir()
    if data is None or not (data / "uci" / "satimage.csv.gz").is_file():
        return [{"name": "satimage rows", "metric": "AUC", "ours_mean": None, "ours_std": None, "paper_mean": None,
                 "paper_std": None, "protocol": "skipped: ../shared/data/uci/satimage.csv.gz is absent"}]
    prepared = _satimage()
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    # The searched rows on the paper's protocol come from logged_search (--table4, --single-tree),
    # run apart: a full run keeps them rather than replace them with a small search.
    kept = {} if quick else {r["name"]: r for r in stored_rows(NAME, lambda name: name in SEARCHED)}
    rows = []
    for name in SEARCHED:
        rows.append(kept.get(name) or logged_search(name, total=3 if quick else 64, reruns=len(seeds), quick=quick))
    rows += toolkit_rows(prepared, quick)
    return rows


def cpu_machine() -> dict[str, Any]:
    """The machine a CPU-only row ran on (the results file's own machine may be another run's)."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "cuda": None}


def toolkit_rows(prepared: Any, quick: bool) -> list[dict[str, Any]]:
    """Table 4's three toolkit rows on the paper's protocol (:func:`toolkit_row`: 2 000 trials, 100
    re-runs; 30 trials of at most 5 trees and 1 re-run with ``quick``), each stamped with the machine it ran on."""
    machine = cpu_machine()  # the toolkits run on the CPU whatever the machine has
    rows = []
    for method in BASELINES:
        row = toolkit_row(prepared, method, trials=30 if quick else PAPER_TRIALS,
                          seeds=[0] if quick else list(range(PAPER_RERUNS)), quick=quick)
        rows.append({**row, "machine": machine})
    return rows


def satimage_split_study(chosen: dict[str, Any], split_seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 8)) -> dict[str, Any]:
    """How much the satimage Table 4 numbers move with the data split. The paper reports one split
    (its ± is over re-runs of a model seed); here the chosen Skinny Trees setting (model seed 0) and
    XGBoost importance selection at the same 9-feature budget (seed 0) are fitted on several
    stratified 64/16/20 splits: test AUC of each per split, and their paired difference, which the
    split moves less than either number."""
    threads.apply_budget(1)
    per_split = []
    for s in split_seeds:
        prepared = _satimage(int(s))
        k = max(1, math.floor(0.25 * prepared.X_train.shape[1]))
        start = time.perf_counter()
        skinny_auc, kept = _rerun(chosen, prepared, 0)
        fit_s = time.perf_counter() - start
        xgb_auc = _importance_auc(_default_xgboost, prepared, k, 0)
        per_split.append({"split_seed": int(s), "skinny_auc_pct": 100 * skinny_auc, "skinny_features": kept,
                          "xgboost_auc_pct": 100 * xgb_auc, "difference_pct": 100 * (skinny_auc - xgb_auc),
                          "skinny_fit_s": fit_s})

    def spread(key: str) -> dict[str, float]:
        v = np.array([r[key] for r in per_split])
        return {"mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()), "max": float(v.max())}

    return {"chosen": chosen, "per_split": per_split,
            "skinny_auc_pct": spread("skinny_auc_pct"), "xgboost_auc_pct": spread("xgboost_auc_pct"),
            "difference_pct": spread("difference_pct"), "paper_difference_pct": 98.05 - 98.23}


def _rerun_scores(params: dict[str, Any], prepared: Any, seed: int) -> dict[str, Any]:
    """One setting fitted with model seed ``seed``: validation and test AUC (%), features kept, seconds."""
    start = time.perf_counter()
    model = _seeded_fit(params, prepared, seed)
    return {"val_auc_pct": 100 * class_auc(prepared.y_val, model.predict_proba(prepared.X_val), model.classes_),
            "test_auc_pct": 100 * class_auc(prepared.y_test, model.predict_proba(prepared.X_test), model.classes_),
            "features": int(model.selected_features_.size), "seconds": time.perf_counter() - start}


def selection_study(name: str, *, top: int = 10, seeds: int = 10, quick: bool = False) -> dict[str, Any]:
    """How much of a searched row's result is the luck of its selection.

    The search (:func:`logged_search`) keeps the trial with the best validation AUC within the
    budget, each trial fitted once with its own seed. Here the ``top`` such trials of the row's log
    are re-fitted with model seeds 0 … ``seeds`` − 1, each scored on validation and test: per trial,
    the mean test AUC ± its SE, the mean validation AUC and the share of fits within the budget; and
    which trial a selection by the *mean* validation AUC over seeds would take. Every fit is logged
    (``<log>_selection.jsonl``), so a stopped study resumes. ``quick``: two trials, two seeds, 3
    epochs, no log."""
    plan = SEARCHED[name]
    prepared = _satimage()
    k = budget_size(plan.budget, prepared.X_train.shape[1])
    trials = [t for t in _logged_trials(PartLog(plan.log)).values() if not t.error and t.n_features is not None
              and 0 < t.n_features <= k and t.metrics.get("val_auc") is not None]
    if quick:
        top, seeds = 2, 2
    trials.sort(key=lambda t: (-t.metrics["val_auc"], t.n_features, t.index))
    chosen = trials[:top]
    settings = {t.index: {key: v for key, v in t.params.items() if key != "random_state"}
                | ({"max_epochs": 3} if quick else {}) for t in chosen}
    tasks = [(f"{i}/{s}", delayed(_rerun_scores)(settings[i], prepared, s)) for i in settings for s in range(seeds)]
    done = run_keyed(tasks, None if quick else PartLog(f"{plan.log}_selection"))
    candidates = []
    for t in chosen:
        fits = [done[f"{t.index}/{s}"] for s in range(seeds)]
        test = np.array([f["test_auc_pct"] for f in fits])
        candidates.append({
            "trial": t.index, "params": settings[t.index], "search_val_auc_pct": 100 * t.metrics["val_auc"],
            "search_test_auc_pct": 100 * t.metrics["test_auc"], "search_features": t.n_features,
            "test_auc_pct": float(test.mean()), "test_auc_se": _se(test.tolist()),
            "val_auc_pct": float(np.mean([f["val_auc_pct"] for f in fits])),
            "within_budget": sum(f["features"] <= k for f in fits) / seeds,
            "seconds": float(sum(f["seconds"] for f in fits))})
    by_mean_val = max(candidates, key=lambda c: c["val_auc_pct"])
    return {"row": name, "budget": k, "seeds": list(range(seeds)), "candidates": candidates,
            "chosen_by_mean_val": by_mean_val["trial"], "chosen_by_mean_val_test_auc_pct": by_mean_val["test_auc_pct"],
            "best_test_auc_pct": max(c["test_auc_pct"] for c in candidates), "paper": plan.paper,
            "how": f"benchmarks.skinny.selection_study: the top {top} trials of {plan.log} within the budget "
                   f"by validation AUC, each re-fitted with model seeds 0-{seeds - 1}, one thread per fit"}


# ------------------------------------------------------------------------------------------ device mode
def _trial_line(trial: Trial) -> dict[str, Any]:
    keep = ("val_auc", "test_auc", "n_features")
    return {"index": trial.index, "params": trial.params, "error": trial.error,
            "metrics": {k: trial.metrics[k] for k in keep if k in trial.metrics}}


def _logged_trials(log: PartLog) -> dict[int, Trial]:
    return {int(r["index"]): Trial(int(r["index"]), r["params"], r["metrics"], error=r["error"])
            for r in log.records()}


def _run_logged(prepared: Any, settings: list[dict[str, Any]], start: int, log: PartLog, chunk: int) -> list[Trial]:
    """Train the trials ``start, start + 1, ...`` of ``settings`` that ``log`` does not hold yet,
    ``chunk`` at a time, logging each chunk's trials as it ends; so a run stopped part-way
    resumes. Returns every trial of the range, from the log."""
    indices = range(start, start + len(settings))
    while True:
        done = _logged_trials(log)
        pending = [i for i in indices if i not in done]
        if not pending:
            return [done[i] for i in indices]
        first = pending[0]
        part = [i for i in pending[:chunk] if i - first < chunk]
        trials = run_trials("skinny", "classification", prepared, [settings[i - start] for i in part], start=first)
        log.add([_trial_line(t) for t in sorted(trials, key=lambda t: t.index)])
        print(f"  trials {first}-{part[-1]} done ({len(done) + len(part)} logged), "
              f"{time.strftime('%H:%M:%S')}", flush=True)


def logged_search(name: str, *, total: int | None = None, chunk: int = 25, reruns: int = PAPER_RERUNS,
                  quick: bool = False) -> dict[str, Any]:
    """A :data:`SEARCHED` row on the paper's protocol: the first ``total`` draws (default: the
    row's ``trials``) of the seed-0 sequence of its space (:func:`sample_params`), the best within
    the budget (highest validation AUC, ties to fewer features) re-run with ``reruns`` seeds. Each
    finished trial is one line of ``benchmarks/results/parts/<log>.jsonl`` (a :class:`PartLog`), so
    a stopped run resumes where it left off, and a longer run reuses a shorter one's trials. With
    ``quick``: trials of 3 epochs, no log. Returns the row, merged into ``skinny.json`` (not with
    ``quick``)."""
    plan = SEARCHED[name]
    total = plan.trials if total is None else int(total)
    prepared = _satimage()
    p = prepared.X_train.shape[1]
    k = budget_size(plan.budget, p)
    params = {**plan.fixed, **({"max_epochs": 3} if quick else {})}
    settings = sample_params(get_family("skinny"), "classification", params, total, 0, plan.search)
    start = time.perf_counter()
    if quick:
        trials = run_trials("skinny", "classification", prepared, settings)
    else:
        trials = _run_logged(prepared, settings, 0, PartLog(plan.log), chunk)
    search_s = time.perf_counter() - start
    best = select_best(trials, k, "classification")
    full = total >= plan.trials and reruns >= PAPER_RERUNS
    protocol = (f"split 64/16/20 stratified (treeviz prepare, seed 8); budget {k} of {p}; {plan.space}; "
                f"{total} random trials" + ("" if quick else ", each logged as it finished") +
                f"; best validation AUC within the budget, re-run with {reruns} seed(s)"
                + ("" if full else f"; reduced: the paper used {plan.trials} random trials and {PAPER_RERUNS} "
                                   "re-runs"))
    if best is None:
        return _row(name, "AUC %", [float("nan")], plan.paper, plan.paper_se,
                    protocol + "; no trial within the budget", search_s=search_s)
    chosen = {key: v for key, v in best.params.items() if key != "random_state"}
    results = Parallel(n_jobs=threads.usable_cores())(delayed(_rerun)(chosen, prepared, s) for s in range(reruns))
    row = _row(name, "AUC %", [100 * a for a, _ in results], plan.paper, plan.paper_se, protocol, chosen=chosen,
               search_features=best.n_features, rerun_features=[n for _, n in results], budget=k,
               n_trials=len(trials), search_best_val_auc=best.metrics["val_auc"], search_s=search_s,
               rerun_s=time.perf_counter() - start - search_s, machine=cpu_machine(),
               run_at=time.strftime("%Y-%m-%d %H:%M:%S"))
    if not quick:
        merge_rows([row], results_dir() / f"{NAME}.json")
    return row


def _fit_call(params: dict[str, Any], X: np.ndarray, y: np.ndarray, eval_set: tuple):
    def build(device: str):
        def call() -> None:
            SkinnyTreesClassifier(**params, device=device, random_state=0).fit(X, y, eval_set=eval_set)
        return call
    return build


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """Skinny Trees fits of a few epochs (per epoch), for :func:`benchmarks.device_timing.compare`."""
    Xtr, ytr, Xva, yva, _, _ = _toy_split()
    epochs = 2 if quick else 10
    toy = {**TOY, "max_epochs": epochs, **({"n_trees": 4, "depth": 2} if quick else {})}
    Xbig, ybig, Xbig_val, ybig_val, source = device_timing.standardised_holdout("satimage", 800 if quick else 6435, 36,
                                                                                 6, seed=8)
    big_epochs = 1 if quick else 3
    big = {**TOY, "batch_size": 64, "max_epochs": big_epochs, **({"n_trees": 4, "depth": 2} if quick else {})}
    return device_timing.small_and_large_fits(
        quick,
        device_timing.EpochFit(f"skinny fit m={toy['n_trees']} d={toy['depth']} b=16",
                               _fit_call(toy, Xtr, ytr, (Xva, yva)), epochs, toy,
                               f"breast_cancer, the authors' toy split ({Xtr.shape[0]} training rows)"),
        device_timing.EpochFit(f"skinny fit m={big['n_trees']} d={big['depth']} b=64",
                               _fit_call(big, Xbig, ybig, (Xbig_val, ybig_val)), big_epochs, big, source))


def run(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    """The CPU benchmark (``device="cpu"``), or with another device the timing-only device mode."""
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="per epoch = a whole fit of a few epochs over its epochs")
    start = time.perf_counter()
    sections = [("toy", toy_rows), ("speed", speed_rows), ("compact", compact_rows), ("synthetic", synthetic_rows),
                ("satimage", satimage_rows)]
    rows: list[dict[str, Any]] = []
    for label, fn in sections:
        t0 = time.perf_counter()
        got = fn(quick)
        rows += got
        print(f"  {label}: {len(got)} row(s) in {time.perf_counter() - t0:.0f} s", flush=True)
    table = [{"row": r["name"], "metric": r["metric"], "ours (± SE)": mean_text(r["ours_mean"], r.get("ours_se")),
              "paper": mean_text(r["paper_mean"], r.get("paper_std")),
              "meets paper": yes_no(r.get("within_paper_se_or_better"))} for r in rows]
    results = {"rows": rows, "total_seconds": time.perf_counter() - start}
    if not quick:  # the studies run apart (see __main__); a full rerun keeps them
        results |= {key: study for key in STUDIES if (study := stored_section(NAME, key)) is not None}
    return {"rows": table, "results": device_timing.carry_device_section(NAME, results, quick=quick)}


#: Studies of the satimage rows, run apart and kept in ``results`` beside the rows.
STUDIES = ("satimage_split_study", "satimage_selection_study")


if __name__ == "__main__":
    import argparse

    _ap = argparse.ArgumentParser(description="Satimage rows run apart, merged into benchmarks/results/skinny.json.")
    _what = _ap.add_mutually_exclusive_group(required=True)
    _what.add_argument("--toolkits", action="store_true",
                       help="Table 4's toolkit rows (the paper's 2 000-trial search and 100 re-runs each, about "
                            "30 minutes on 2 cores)")
    _what.add_argument("--table4", action="store_true",
                       help="Table 4's Skinny Trees row on the paper's protocol (2 000 random trials of its S5.3 "
                            "space, 100 re-runs; about 5 CPU hours, every trial logged: stop it at any time "
                            "and run it again to resume)")
    _what.add_argument("--selection-study", action="store_true",
                       help="re-fit the Table 4 search's 10 best trials within the budget with 10 seeds each "
                            "(selection_study; about 20 CPU minutes, resumable), stored as "
                            "results.satimage_selection_study")
    _what.add_argument("--single-tree", action="store_true",
                       help="Table 2's single-tree row on the paper's protocol (500 random trials of its space, "
                            "100 re-runs; resumable)")
    _what.add_argument("--table1", action="store_true",
                       help="Table 1's six synthetic rows on the paper's protocol (25 simulations x 500 trials per "
                            "N, about 6 CPU hours; every trial logged: stop it at any time and run it again to "
                            "resume)")
    _ap.add_argument("--sizes", type=int, nargs="+", choices=sorted(TABLE1_PAPER), default=[1000, 200],
                     help="with --table1: the N to run and write (default both)")
    _ap.add_argument("--retime", type=int, default=0, metavar="K",
                     help="with --table1: re-run K trials per N of those logged without a time (drawn at random; "
                          "each must reproduce its logged result) to estimate the rows' time")
    _what.add_argument("--sections", nargs="+", choices=("toy", "speed", "compact"),
                       help="rerun these rows alone (the breast_cancer toy, the per-epoch timings, the compact model; "
                            "under a minute on 2 cores) and merge them into the stored results")
    _args = _ap.parse_args()
    if _args.sections:
        _rows = [r for _s in _args.sections for r in {"toy": toy_rows, "speed": speed_rows,
                                                      "compact": compact_rows}[_s](False)]
        merge_rows(_rows, results_dir() / f"{NAME}.json")
        for _r in _rows:
            print(_r["name"], _r["ours_mean"], _r.get("paper_mean"))
    elif _args.table1:
        _rows = synthetic_rows(False, tuple(_args.sizes), _args.retime)
        merge_rows(_rows, results_dir() / f"{NAME}.json")
        for _r in _rows:
            print(_r["name"], _r["ours_mean"], _r["ours_se"], _r["paper_mean"], _r["within_paper_se_or_better"])
    elif _args.selection_study:
        _study = selection_study(next(iter(SEARCHED)))
        store_section(results_dir() / f"{NAME}.json", "satimage_selection_study", _study)
        for _c in _study["candidates"]:
            print(_c["trial"], f"search val {_c['search_val_auc_pct']:.2f}", f"mean val {_c['val_auc_pct']:.2f}",
                  f"test {_c['test_auc_pct']:.2f} ± {_c['test_auc_se']:.3f}", f"in budget {_c['within_budget']:.0%}")
    elif _args.table4 or _args.single_tree:
        _r = logged_search([*SEARCHED][0 if _args.table4 else 1])
        print(_r["name"], _r["ours_mean"], _r["ours_se"], _r.get("chosen"), _r.get("n_trials"))
    else:
        _rows = toolkit_rows(_satimage(), False)
        merge_rows(_rows, results_dir() / f"{NAME}.json")
        for _r in _rows:
            print(_r["name"], _r["ours_mean"], _r["ours_se"], _r["chosen"], _r["n_valid_trials"], _r["search_s"])
