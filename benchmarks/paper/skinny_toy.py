"""Skinny Trees' toy example (the authors' notebook) on breast_cancer: m = 20, d = 4, λ0 = 100
(γ = 100/p), λ2 = 0.1, s = 0.01, η = 0.1, batch 16, 1000 epochs, on the stratified 64/16/20 split
with random_state 8 (364/91/114 rows): features kept and test AUC (their notebook: 24 of 30,
0.9993), over seeds, and test accuracy against the authors' own code run on the same split and
seeds (:data:`REFERENCE_TOY`: its five runs gave 96.5 % to 99.1 %; the paper's 98.25 % is one of them)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks.paper.skinny_common import row
from models.ground import threads
from models.skinny.estimators import SkinnyTreesClassifier
from treeviz.readers.metrics import class_auc

TOY = {"n_trees": 20, "depth": 4, "lambda0": 100.0, "lambda2": 0.1, "temperature": 0.01, "learning_rate": 0.1,
       "batch_size": 16, "max_epochs": 1000}
#: The authors' code (mazumder-lab/SkinnyTrees at b2c48f9, through the side-by-side driver, now
#: ``benchmarks/external/drivers/ref_skinny.py``: TensorFlow 2.15.1, one thread) on the same toy
#: split, 1000 epochs, seeds 0-4,
#: run on 2026-11-28: test accuracy, features kept and test AUC per seed. The paper's 98.25 % is
#: one notebook run; these five runs are the spread the reference itself has, and the accuracy
#: row is anchored on them.
REFERENCE_TOY = {"test_accuracy": (0.9649122807017544, 0.9824561403508771, 0.9912280701754386, 0.9912280701754386,
                                   0.9824561403508771),
                 "features_kept": (23, 25, 24, 24, 25),
                 "test_auc": (1.0, 0.9993386243386243, 0.9996693121693121, 0.9993386243386243, 0.9993386243386243)}


def toy_split():
    """The authors' toy split of breast_cancer, standardised on its training rows."""
    X, y = load_breast_cancer(return_X_y=True)
    Xtv, Xte, ytv, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=8)
    Xtr, Xva, ytr, yva = train_test_split(Xtv, ytv, test_size=0.2, stratify=ytv, random_state=8)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xva), yva, scaler.transform(Xte), yte


def _toy_fit(seed: int, epochs: int, device: str) -> dict[str, float]:
    threads.apply_budget(1)
    Xtr, ytr, Xva, yva, Xte, yte = toy_split()
    model = SkinnyTreesClassifier(**{**TOY, "max_epochs": epochs}, device=device, random_state=seed)
    start = time.perf_counter()
    model.fit(Xtr, ytr, eval_set=(Xva, yva))
    fit_s = time.perf_counter() - start
    return {"fit_s": fit_s, "features": float(model.selected_features_.size),
            "test_auc": class_auc(yte, model.predict_proba(Xte), model.classes_),
            "test_accuracy": float(model.score(Xte, yte)),
            "s_per_epoch": float(np.median([r["epoch_s"] for r in model.history_])),
            "first_removal": float(next((r["epoch"] for r in model.history_ if r["n_features"] < 30), 0))}


def toy_rows(quick: bool) -> list[dict[str, Any]]:
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    epochs = 30 if quick else TOY["max_epochs"]
    runs = Parallel(n_jobs=min(len(seeds), threads.usable_cores()))(
        delayed(_toy_fit)(s, epochs, "cpu") for s in seeds)
    note = (f"the authors' toy settings, {epochs} epochs, split 364/91/114 (seed 8), {len(seeds)} seed(s)"
            + ("; reduced: quick (the toy's 1000 epochs, seeds 0-4)" if quick else ""))
    rows = [{**r, "fit_seconds": [run["fit_s"] for run in runs]} for r in [
        row("breast_cancer toy: features kept", "features", [r["features"] for r in runs], 24.0, None, note,
            reduced=quick, higher_is_better=False, first_removal_epoch=[r["first_removal"] for r in runs]),
        row("breast_cancer toy: test AUC", "AUC", [r["test_auc"] for r in runs], 0.9993, None, note, reduced=quick),
        row("breast_cancer toy: test accuracy", "accuracy", [r["test_accuracy"] for r in runs],
            float(np.mean(REFERENCE_TOY["test_accuracy"])), float(np.std(REFERENCE_TOY["test_accuracy"])),
            note + "; anchor: the authors' code run on the same split and seeds 0-4 (mean ± std of its "
            f"five runs: {', '.join(f'{v:.4f}' for v in REFERENCE_TOY['test_accuracy'])}), not the paper's "
            "98.25 %, which is one notebook run", reduced=quick, reference_values=list(REFERENCE_TOY["test_accuracy"]),
            paper_spread="SD"),
    ]]
    if torch.cuda.is_available():
        gpu = _toy_fit(0, 30 if quick else 200, "cuda")
        rows.append(row("breast_cancer toy: s/epoch, GPU", "s/epoch", [gpu["s_per_epoch"]], None, None,
                        f"{torch.cuda.get_device_name(0)}, one {30 if quick else 200}-epoch fit, median epoch",
                        reduced=quick, higher_is_better=False))
    return rows
