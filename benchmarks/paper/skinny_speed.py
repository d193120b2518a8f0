"""The Skinny Trees benchmark's timings.

* **Time per epoch** (process CPU time, one thread, median of epochs 2 and after: the SGD + prox
  steps, the feature count and the validation pass), at the two settings timed side by side with
  the authors' code (``benchmarks/external``): the authors' toy, and 20 000 × 100 synthetic rows
  (m = 50, d = 5, batch 256, the table of :mod:`benchmarks.synthetic`, through
  :func:`skinny_synth100`). Each row times the fused path (what the estimators train with) and, in
  the same process, the plain autograd path it replaced, with their ratio; test AUC and features
  kept come with the fused runs. The authors' own per-epoch times are
  ``benchmarks/reference_speed.py``'s.
* **The compact model**: predicting 10 000 rows with the dense kernel (every feature's row, zeros
  included) and with the compact model of the kept columns, in the same process.
* **Device mode** (:func:`device_workloads`): seconds per epoch on the CPU and on the GPU in this
  process, for the toy run (batch 16, one CPU thread) and for satimage (6435 x 36, 6 classes: the
  shared ``uci/satimage.csv.gz`` when present, else synthetic data of that shape; m = 20, d = 4,
  batch 64). A fit of a few epochs is timed whole and divided by its epochs; it needs neither
  XGBoost nor LightGBM."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from benchmarks import device_timing
from benchmarks.common import best_time, measured_on
from benchmarks.paper.skinny_common import row
from benchmarks.paper.skinny_table1 import SYNTHETIC
from benchmarks.paper.skinny_toy import TOY, toy_split
from benchmarks.synthetic import skinny_table
from models.ground import threads
from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.estimators import SkinnyTreesClassifier, SkinnyTreesRegressor
from models.skinny.synthetic import sparse_regression
from treeviz.readers.metrics import class_auc

#: The side-by-side settings (``benchmarks/external/drivers/ours_skinny.py``): sigmoid routing, λ0 = 100,
#: λ2 = 0.1, s = 0.01, η = 0.1, dense-to-sparse, seed 0.
SIDE_BY_SIDE = {"activation": "sigmoid", "lambda0": 100.0, "lambda2": 0.1, "temperature": 0.01, "learning_rate": 0.1,
                "schedule": "dense_to_sparse", "penalty": "l0", "device": "cpu", "random_state": 0}


def skinny_synth100(n_train: int = 20_000) -> tuple[np.ndarray, ...]:
    """The side-by-side runs' Skinny table (:func:`benchmarks.synthetic.skinny_table`), its training
    part cut to the first ``n_train`` rows."""
    X_train, y_train, *rest = skinny_table()
    return (X_train[:n_train], y_train[:n_train], *rest)


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


def speed_rows(quick: bool) -> list[dict[str, Any]]:
    """CPU seconds per epoch of the fused path and of the plain autograd path, in this process,
    one thread, at the side-by-side harness's two settings, interleaved over rounds."""
    threads.apply_budget(1)
    toy_data = toy_split()
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
        rows.append(row(
            f"{name}: CPU s, 1 thread", "s/epoch", fused_s, None, None,
            f"process CPU time per epoch (SGD + prox steps, feature count, validation pass), median of epochs 2+ of a "
            f"{fused_epochs}-epoch fit, {rounds} round(s) interleaved with the plain autograd path "
            f"({plain_epochs} epochs) in the same process; the settings of benchmarks/external/drivers/ours_skinny.py; "
            "the authors' code is timed side by side by benchmarks/reference_speed.py"
            + ("; reduced: quick (fewer epochs, one round, 2 000 synthetic rows)" if quick else ""),
            reduced=quick, higher_is_better=False,
            plain_path_s=float(np.median(plain_s)), plain_path_values=plain_s,
            speedup_vs_plain_path=float(np.median(plain_s) / np.median(fused_s)),
            test_auc=float(np.median([r["test_auc"] for r in fused_runs])),
            plain_path_test_auc=float(np.median([r["test_auc"] for r in plain_runs])),
            features=float(np.median([r["features"] for r in fused_runs])), epochs=fused_epochs,
            row_seconds=time.perf_counter() - start, measured=measured))
    return rows


def compact_rows(quick: bool) -> list[dict[str, Any]]:
    """Dense vs compact inference on the synthetic p = 256 problem after selection (10 000 rows).
    Each time is the best of 5 rounds (``best_time``), one number with no spread: ``ours_std`` null."""
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
             "ours_mean": compact_s * 1e3, "ours_std": None, "paper_mean": None, "paper_std": None,
             "dense_ms": dense_s * 1e3, "speedup_vs_dense": dense_s / compact_s, "identical_to_full_model": identical,
             "max_abs_diff_dense_vs_compact": float(np.max(np.abs(dense_pred - small.predict(Xs)))),
             "protocol": "reduced" if quick else "full",
             "protocol_note": "one thread; dense = the kernel with every feature's row (zeros included), compact = "
                              "SkinnyTreesRegressor.compact() on the kept columns; the paper claims up to 10x; each "
                              "time is the best of 5 rounds (each looped to 0.05 s), a single number with no spread "
                              "(ours_std null)" + ("; reduced: quick (the model fitted 20 epochs, not 300)"
                                                   if quick else ""),
             "row_seconds": time.perf_counter() - start, "measured": measured}]


def _fit_call(params: dict[str, Any], X: np.ndarray, y: np.ndarray, eval_set: tuple):
    def build(device: str):
        def call() -> None:
            SkinnyTreesClassifier(**params, device=device, random_state=0).fit(X, y, eval_set=eval_set)
        return call
    return build


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """Skinny Trees fits of a few epochs (per epoch), for :func:`benchmarks.device_timing.compare`."""
    Xtr, ytr, Xva, yva, _, _ = toy_split()
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
