"""The DGT benchmark's timings: our side of the side-by-side settings, and the device mode.

* The ``speed`` part: process CPU seconds per training epoch of DGT on one torch thread (median
  over the epochs after the first, which carries one-off warm-up), at the two settings the
  side-by-side comparison with the authors' code uses: Abalone split 0 (h = 6, L = 3, batch 128,
  ℓ1 1e-5, grad clip 0.01, scaled quantiser; its test RMSE too) and the 20 000 × 50 synthetic
  regression (h = 8, L = 3, batch 512; the table of :mod:`benchmarks.synthetic`, through :func:`synth50`). Our
  side only: the side-by-side figures (both codes on one machine) are ``benchmarks/reference_speed.py``'s.
* The device mode (:func:`device_workloads`): seconds per training epoch of DGT on the CPU and on
  the GPU in this process, for the speed part's Abalone tree and for Table 2's Letter tree (h = 10,
  L = 3, batch 128, 12 800 training rows, about 7 M parameters); synthetic data of the same shape
  without the shared data (the rows say which). A fit of a few epochs is timed whole and divided
  by its epochs; the CPU's Letter rounds stop after 25 s."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from benchmarks import device_timing
from benchmarks.common import shared_data_dir
from benchmarks.paper.dgt_common import FIXED, HEIGHT, machine, regression_split, tree_params
from benchmarks.synthetic import dgt_table
from models.base import Callback
from models.dgt.estimators import DGTClassifier, DGTRegressor

#: The speed part's tree settings per data set (the side-by-side harness's).
SPEED_SETTINGS = {
    "abalone": dict(depth=6, n_layers=3, batch_size=128),
    "synth50": dict(depth=8, n_layers=3, batch_size=512),
}


def synth50() -> tuple[np.ndarray, ...]:
    """The side-by-side runs' synthetic regression (:func:`benchmarks.synthetic.dgt_table`) in float64:
    20 000 training, 5 000 validation and 5 000 test rows of 50 features."""
    return tuple(a.astype(np.float64) for a in dgt_table())


class _CpuClock(Callback):
    """Process CPU time at the start of training and at the end of every epoch."""

    marks: list[float]

    def on_train_begin(self, estimator, **kwargs):
        self.marks = [time.process_time()]

    def on_epoch_end(self, estimator, **kwargs):
        self.marks.append(time.process_time())


def _speed_data(name: str, quick: bool) -> tuple[tuple[np.ndarray, ...], str]:
    if name == "abalone":
        return regression_split("abalone", 0), "shared dgt/abalone split 0"
    Xa, ya, *rest = synth50()
    data = "synthetic 20 000 x 50 regression (benchmarks.synthetic.dgt_table)"
    if quick:
        Xa, ya = Xa[:4000], ya[:4000]
        data += ", first 4 000 training rows (quick)"
    return (Xa, ya, *rest), data


def speed_rows(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Process CPU seconds per epoch on one torch thread at the side-by-side settings, in this process."""
    epochs = s["speed_epochs"]
    default_threads = torch.get_num_threads()
    rows = []
    for name, tree in SPEED_SETTINGS.items():
        (Xa, ya, Xv, yv, Xt, yt), data = _speed_data(name, s["quick"])
        params = dict(width_multiplier=None, quantizer="scaled", l1_penalty=1e-5, l2_penalty=0.0, learning_rate=1e-2,
                      momentum=0.0, max_epochs=epochs, min_steps=0, grad_clip=0.01, device="cpu", **tree)
        clock = _CpuClock()
        torch.set_num_threads(1)
        try:
            model = DGTRegressor(**params, random_state=1)
            c0 = time.process_time()
            model.fit(Xa, ya, eval_set=(Xv, yv), callbacks=[clock])
            fit_cpu = time.process_time() - c0
        finally:
            torch.set_num_threads(default_threads)
        per_epoch = np.diff(np.asarray(clock.marks))[1:]
        summary = f"h={tree['depth']} L={tree['n_layers']} B={tree['batch_size']} n={Xa.shape[0]} 1 thread, CPU time"
        rows.append({
            "name": f"{name} CPU s/epoch, 1 thread, h {tree['depth']} L {tree['n_layers']} batch {tree['batch_size']}",
            "part": "speed", "dataset": name, "method": "DGT training epoch", "metric": "s_per_epoch",
            "ours_mean": float(np.median(per_epoch)), "ours_std": float(per_epoch.std()), "paper_mean": None,
            "paper_std": None, "within_one_std_or_better": None,
            "test_rmse": float(np.sqrt(np.mean((model.predict(Xt) - yt) ** 2))), "best_epoch": model.best_epoch_,
            "n_runs": 1, "n_splits": 1, "n_seeds": 1, "fit_cpu_s": fit_cpu, "device": "cpu", "torch_threads": 1,
            "n_train": int(Xa.shape[0]), "data": data,
            "protocol": "reduced" if s["quick"] else "full",
            "protocol_note": summary + ("; reduced: quick mode (CI smoke test), 3 epochs" if s["quick"] else ""),
            "protocol_settings": {**params, "epochs": epochs, "torch_threads": 1, "n_train": int(Xa.shape[0]),
                                  "timed": f"median process CPU s of epochs 2..{epochs} (epoch 1 is warm-up)",
                                  "side_by_side": "benchmarks/reference_speed.py"},
            "machine": machine("cpu")})
    return rows


# ------------------------------------------------------------------------------------------ device mode
def _abalone_or_synthetic() -> tuple[tuple[np.ndarray, ...], str]:
    """(X_train, y_train, X_val, y_val) of Abalone split 0, or synthetic data of its shape; the source."""
    root = shared_data_dir()
    if root is not None and (root / "dgt" / "abalone" / "abalone0.npz").is_file():
        Xa, ya, Xv, yv, _, _ = regression_split("abalone", 0)
        return (Xa, ya, Xv, yv), f"shared dgt/abalone split 0 ({Xa.shape[0]} training / {Xv.shape[0]} validation)"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2088 + 418, 10))
    y = 10.0 + X @ rng.normal(size=10) + np.sin(3 * X[:, 0]) + 0.5 * rng.normal(size=X.shape[0])
    return (X[:2088], y[:2088], X[2088:], y[2088:]), "synthetic, Abalone's shape (2088 + 418 x 10; shared data absent)"


def _fit_call(cls: type, params: dict[str, Any], data: tuple[np.ndarray, ...]):
    Xa, ya, Xv, yv = data

    def build(device: str):
        def call() -> None:
            cls(**{**params, "device": device}, random_state=0).fit(Xa, ya, eval_set=(Xv, yv))
        return call
    return build


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """DGT fits of a few epochs (per epoch), for :func:`benchmarks.device_timing.compare`."""
    abalone, abalone_source = _abalone_or_synthetic()
    if quick:
        abalone = tuple(a[:300] for a in abalone)
    small_epochs = 1 if quick else 3
    small = tree_params(3 if quick else 6, small_epochs, "cpu", **FIXED)
    n_train, n_val = (400, 100) if quick else (12800, 3200)
    X, y, source = device_timing.uci_or_synthetic("letter", n_train + n_val, 16, 26, seed=0)
    letter = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    big = tree_params(4 if quick else HEIGHT[("table2", "letter")], 1, "cpu", **FIXED)
    options = device_timing.epoch_options(quick)
    return [
        (f"DGT regressor fit h={small['depth']} L=3 B=128", _fit_call(DGTRegressor, small, abalone),
         {**options, "units": small_epochs, "params": {k: v for k, v in small.items() if k != "device"},
          "data": abalone_source + (f", first {abalone[0].shape[0]} rows" if quick else "")}),
        (f"DGT classifier fit h={big['depth']} L=3 B=128", _fit_call(DGTClassifier, big, letter),
         {**options, "units": 1, "max_seconds": None if quick else 25.0,
          "params": {k: v for k, v in big.items() if k != "device"},
          "data": f"{source}, {n_train} training / {n_val} validation rows"}),
    ]
