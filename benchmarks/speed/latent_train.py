"""Latent trees vs CART of the same depth on breast_cancer, digits and diabetes (5 seeds).

Each seed draws its own stratified train/val/test split (PrepConfig seed) and model seed; the
latent tree early-stops on the validation split. Metric: test accuracy (classification) or test
R² (regression), mean ± std over seeds, beside scikit-learn's CART of the same depth trained on
the same training split in the same process. Time per epoch is the latent tree's wall time per
training epoch on CPU (1 thread for the epoch-time measurement of breast_cancer, depth 4,
batch 64, as the issue's target states).

The papers' own datasets (Year, Microsoft, Yahoo, Click, Higgs and others) are not available
offline, so this is a proxy comparison, not a reproduction of the paper's tables.

``results["epoch_cpu"]`` (:func:`epoch_cpu_times`): process CPU seconds per training epoch on one
thread (median of epochs 2 and after; an epoch is the training steps plus the per-epoch
evaluation: frozen pruning vector, training and validation scores, keeping the best state), at
two settings: breast_cancer, depth 4, batch 64, λ 1, 30 epochs on the latent_train split (the
side-by-side setting against the authors' code, vzantedeschi/LatentTrees), and Letter (20 000 x
16, 26 classes) at depth 8, batch 512, 5 epochs. Each is timed with the compiled training step
(:mod:`models.latent.engine`, the default on the CPU) and with the autograd path
(``train_loop.USE_ENGINE = False``, what treeviz ran before) in the same process, interleaved,
with their test / validation accuracy. The reference's CPU seconds per epoch is the latent row of
the stored side-by-side results (``benchmarks/results/reference_speed.json``, written by
``python -m benchmarks.reference_speed --run``), given with the run that measured it and the ratio.

``run(device="cuda")`` (``python -m benchmarks.report.run latent_train --device cuda``) is timing only
(:func:`device_workloads`): seconds per training epoch of the latent tree on the CPU and on the
GPU in this process, for breast_cancer at depth 4, batch 64 on one CPU thread (the setting above)
and for Letter (20 000 x 16, 26 classes; the shared ``uci/letter.csv.gz`` when present, else
synthetic data of that shape) at depth 8, batch 512 on torch's default threads. A fit of a few
epochs is timed whole (data transfer and validation passes included) and divided by its epochs.
The rows go under ``results["device_timing"]`` beside the CPU results. About 30 s on a 16-core
GPU machine (estimated; the CPU's Letter rounds stop after 20 s).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import torch

from benchmarks import device_timing
from benchmarks.common import RESULTS_DIR
from models.base import Callback
from models.cart.estimators import CARTClassifier, CARTRegressor
from models.latent import train_loop
from models.latent.estimators import LatentTreeClassifier, LatentTreeRegressor
from treeviz.services.data import PrepConfig, load_dataset, prepare

NAME = "latent_train"
DEPTH = 4
SETTINGS = {
    "breast_cancer": dict(depth=DEPTH, batch_size=64, prune_strength=1.0),
    "digits": dict(depth=DEPTH, batch_size=64, prune_strength=1.0),
    "diabetes": dict(depth=DEPTH, batch_size=64, prune_strength=1.0),
}


def _one(key: str, seed: int, max_epochs: int) -> dict[str, float]:
    prepared = prepare(load_dataset(key), PrepConfig(scaling="standard", test_size=0.2, val_size=0.1, seed=seed))
    task = prepared.dataset.task
    latent_cls, cart_cls = (LatentTreeClassifier, CARTClassifier) if task == "classification" \
        else (LatentTreeRegressor, CARTRegressor)
    model = latent_cls(**SETTINGS[key], max_epochs=max_epochs, random_state=seed, device="cpu")
    start = time.perf_counter()
    model.fit(prepared.X_train, prepared.labels("train"),
              eval_set=(prepared.X_val, prepared.labels("val")))
    seconds = time.perf_counter() - start
    cart = cart_cls(max_depth=DEPTH, random_state=seed).fit(prepared.X_train, prepared.labels("train"))
    return {
        "test_metric": float(model.score(prepared.X_test, prepared.labels("test"))),
        "cart_test_metric": float(cart.score(prepared.X_test, prepared.labels("test"))),
        "s_per_epoch": seconds / max(1, len(model.history_)),
        "epochs": len(model.history_),
        "active_nodes": int((model.pruning_ > 0).sum()),
    }


class _EpochClock(Callback):
    """Process CPU time at the start of training and at the end of every epoch."""

    def on_train_begin(self, estimator, **kw):
        self.marks = [time.process_time()]

    def on_epoch_end(self, estimator, **kw):
        self.marks.append(time.process_time())

    def per_epoch(self) -> list[float]:
        return [b - a for a, b in zip(self.marks, self.marks[1:])]


def _timed_fit(params: dict[str, Any], X, y, eval_set, test) -> tuple[float, float]:
    """(median CPU s per epoch over epochs 2+, accuracy on ``test``) of one fit."""
    clock = _EpochClock()
    model = LatentTreeClassifier(**params, random_state=0, device="cpu")
    model.fit(X, y, eval_set=eval_set, callbacks=[clock])
    return float(np.median(clock.per_epoch()[1:])), float(model.score(*test))


def _reference_s_per_epoch() -> tuple[float, str] | None:
    """The authors' code's CPU s/epoch at the breast_cancer setting and the side-by-side run that
    measured it: the latent row of ``benchmarks/results/reference_speed.json``, else None."""
    try:
        rows = json.loads((RESULTS_DIR / "reference_speed.json").read_text())["results"]["rows"]
        row = next(r for r in rows if r.get("key") == "latent" and r.get("protocol") != "skipped")
        return float(row["reference_s"]), f"run {row['run_id']} of commit {row['commit'][:12]} ({row['protocol']})"
    except (OSError, ValueError, KeyError, StopIteration):
        return None


def epoch_cpu_times(quick: bool = False) -> dict[str, Any]:
    """CPU s per epoch, one thread, compiled step vs autograd path, at the two settings."""

    prepared = prepare(load_dataset("breast_cancer"),
                       PrepConfig(scaling="standard", test_size=0.2, val_size=0.1, seed=0))
    bc_epochs = 10 if quick else 30
    Xtr, ytr, Xva, yva, source = device_timing.standardised_holdout("letter", 2000 if quick else 20000, 16, 26)
    letter_epochs = 3 if quick else 5
    settings = {
        "breast_cancer_d4_b64": (
            {"depth": 4, "batch_size": 64, "prune_strength": 1.0, "max_epochs": bc_epochs,
             "patience": bc_epochs + 1},
            prepared.X_train, prepared.labels("train"), (prepared.X_val, prepared.labels("val")),
            (prepared.X_test, prepared.labels("test")),
            f"breast_cancer, latent_train split seed 0 ({prepared.X_train.shape[0]} training rows), "
            f"{bc_epochs} epochs, test accuracy"),
        "letter_d8_b512": (
            {"depth": 8, "batch_size": 512, "prune_strength": 1.0, "max_epochs": letter_epochs,
             "patience": letter_epochs + 1},
            Xtr, ytr, (Xva, yva), (Xva, yva), f"{source}, {letter_epochs} epochs, validation accuracy"),
    }
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    try:
        for key, (params, X, y, ev, test, data) in settings.items():
            runs: dict[str, list[tuple[float, float]]] = {"compiled": [], "autograd": []}
            for _ in range(1 if quick else 2):
                for name, flag in (("compiled", True), ("autograd", False)):
                    train_loop.USE_ENGINE = flag
                    runs[name].append(_timed_fit(params, X, y, ev, test))
            row = {"params": params, "data": data}
            for name, values in runs.items():
                row[f"{name}_s_per_epoch"] = float(np.median([v[0] for v in values]))
                row[f"{name}_accuracy"] = float(np.mean([v[1] for v in values]))
            row["speedup"] = row["autograd_s_per_epoch"] / row["compiled_s_per_epoch"]
            out[key] = row
    finally:
        train_loop.USE_ENGINE = True
        torch.set_num_threads(threads)
    ref = _reference_s_per_epoch()
    if ref is not None:
        row = out["breast_cancer_d4_b64"]
        row["reference_s_per_epoch"], row["reference_measured_by"] = ref
        row["ratio_vs_reference"] = ref[0] / row["compiled_s_per_epoch"]
    out["measure"] = ("process CPU s per epoch, one thread, median of epochs 2+ (median over interleaved "
                      "repeats); an epoch includes the per-epoch evaluation and keeping the best state")
    return out


def _fit_call(model_kwargs: dict[str, Any], X: np.ndarray, y: np.ndarray, eval_set: tuple | None):
    def build(device: str):
        def call() -> None:
            model = LatentTreeClassifier(**model_kwargs, random_state=0, device=device)
            model.fit(X, y, eval_set=eval_set)
            if len(model.history_) != model_kwargs["max_epochs"]:  # every call must do the same work
                raise AssertionError(f"the fit stopped after {len(model.history_)} of "
                                     f"{model_kwargs['max_epochs']} epochs")
        return call
    return build


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """Latent-tree fits of a few epochs (per epoch), for :func:`benchmarks.device_timing.compare`."""
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    epochs = 1 if quick else 5
    small = {"depth": 2 if quick else DEPTH, "batch_size": 64, "max_epochs": epochs, "patience": epochs + 1}
    Xtr, ytr, Xva, yva, source = device_timing.standardised_holdout("letter", 600 if quick else 20000, 16, 26)
    big_epochs = 1 if quick else 2
    big = {"depth": 3 if quick else 8, "batch_size": 512, "max_epochs": big_epochs, "patience": big_epochs + 1}
    return device_timing.small_and_large_fits(
        quick,
        device_timing.EpochFit(f"latent tree fit d={small['depth']} b=64",
                               _fit_call(small, prepared.X_train, prepared.labels("train"),
                                         (prepared.X_val, prepared.labels("val"))), epochs, small,
                               f"breast_cancer (treeviz prepare, seed 0: {prepared.X_train.shape[0]} training rows)"),
        device_timing.EpochFit(f"latent tree fit d={big['depth']} b=512", _fit_call(big, Xtr, ytr, (Xva, yva)),
                               big_epochs, big, source))


def run(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    """The CPU benchmark (``device="cpu"``), or with another device the timing-only device mode."""
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="per epoch = a whole fit of a few epochs over its epochs")
    seeds = [0, 1] if quick else [0, 1, 2, 3, 4]
    max_epochs = 15 if quick else 100
    rows, results = [], {}
    for key in SETTINGS:
        per_seed = [_one(key, seed, max_epochs) for seed in seeds]
        metric = np.array([r["test_metric"] for r in per_seed])
        cart = np.array([r["cart_test_metric"] for r in per_seed])
        spe = float(np.mean([r["s_per_epoch"] for r in per_seed]))
        name = "accuracy" if key != "diabetes" else "R²"
        rows.append({"dataset": key, "metric": name, "latent": f"{metric.mean():.4f} ± {metric.std():.4f}",
                     f"CART d={DEPTH}": f"{cart.mean():.4f} ± {cart.std():.4f}",
                     "s/epoch": spe, "epochs": float(np.mean([r["epochs"] for r in per_seed])),
                     "active nodes": float(np.mean([r["active_nodes"] for r in per_seed]))})
        results[key] = {"test_metric": float(metric.mean()), "test_metric_std": float(metric.std()),
                        "cart_test_metric": float(cart.mean()), "cart_test_metric_std": float(cart.std()),
                        "s_per_epoch": spe, "metric": "accuracy" if key != "diabetes" else "r2",
                        "n_seeds": len(seeds), "depth": DEPTH, "per_seed": per_seed}
    epoch_cpu = epoch_cpu_times(quick)
    results["epoch_cpu"] = epoch_cpu
    one_thread = epoch_cpu["breast_cancer_d4_b64"]["compiled_s_per_epoch"]
    results["breast_cancer"]["s_per_epoch_one_thread_d4_b64"] = one_thread
    for key in ("breast_cancer_d4_b64", "letter_d8_b512"):
        row = epoch_cpu[key]
        rows.append({"dataset": f"{key}, 1 thread", "metric": "CPU s/epoch (compiled / autograd)",
                     "latent": f"{row['compiled_s_per_epoch']:.4f} / {row['autograd_s_per_epoch']:.4f}",
                     f"CART d={DEPTH}": "", "s/epoch": row["compiled_s_per_epoch"],
                     "epochs": row["params"]["max_epochs"], "active nodes": ""})
    return {"rows": rows, "results": device_timing.carry_device_section(NAME, results, quick=quick)}
