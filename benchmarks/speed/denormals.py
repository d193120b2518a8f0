"""Training with subnormal floats flushed to zero (the default) against the CPU's own handling.

Two settings where it mattered, one torch thread each:

* **DGT**, one of Table 2's grid points: PenDigits (the shared data's UCI table, a stratified
  7494 / 3498 split with 20 % of the training part for validation, as ``benchmarks/paper/dgt_table2.py``),
  height 8, L 3, batch 128, λ1 0, momentum 0.8. RMSprop's momentum buffer passes through the
  subnormal range.
* **Skinny Trees** with their defaults (20 trees of depth 4, batch 16) on SatImage's raw,
  unscaled features (0-255) of the same kind of split: the sigmoid routing saturates and feeds
  subnormal values through every step.

Without the shared data, Gaussian rows of the same shapes stand in (each row says which). The two
modes run interleaved in this process (flushing switched with :data:`models.denormals.ENABLED`),
each a fresh fit of the same seed; a row gives the process CPU seconds per epoch (median over the
modes' repeats, whole fits divided by their epochs), the ratio, and the two fits' final training
losses (equal but for the last bits: flushing only zeroes values below 1.2e-38).

    python -m benchmarks.report.run denormals            # 3 repeats a mode (DGT 3 epochs, Skinny 20)
    python -m benchmarks.report.run denormals --quick    # 1 repeat, 1 500 rows (DGT 1 epoch, Skinny 2)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from benchmarks.common import shared_data_dir
from benchmarks.paper import dgt_common as dgt_benchmark
from models import denormals
from models.dgt.estimators import DGTClassifier
from models.skinny.estimators import SkinnyTreesClassifier

NAME = "denormals"
DGT_SETTING = dict(depth=8, n_layers=3, l1_penalty=0.0, momentum=0.8, batch_size=128, min_steps=0, device="cpu")


def _data(dataset: str, quick: bool) -> tuple[tuple[np.ndarray, ...], str]:
    root = shared_data_dir()
    if root is not None and (root / "uci").is_dir():
        Xa, ya, Xv, yv, _, _ = dgt_benchmark.split_for(dataset, 0, False)
        source = f"{dataset} split 0 ({Xa.shape[0]} training / {Xv.shape[0]} validation rows)"
    else:
        n_train, n_val, d, k = {"pendigits": (5995, 1499, 16, 10), "satimage": (3548, 887, 36, 6)}[dataset]
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(n_train + n_val, d)), rng.integers(0, k, size=n_train + n_val)
        Xa, ya, Xv, yv = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
        source = f"Gaussian rows of {dataset}'s shape ({n_train} training / {n_val} validation; shared data absent)"
    if quick:
        Xa, ya, Xv, yv = Xa[:1500], ya[:1500], Xv[:300], yv[:300]
        source += ", first 1500 / 300 rows"
    return (Xa, ya, Xv, yv), source


def _dgt(epochs: int) -> Any:
    return DGTClassifier(**DGT_SETTING, max_epochs=epochs, random_state=0)


def _skinny(epochs: int) -> Any:
    return SkinnyTreesClassifier(**SKINNY_SETTING, max_epochs=epochs, random_state=0)


SKINNY_SETTING = dict(device="cpu")
#: name, data set, model maker, epochs (full, quick)
PLANS = (("DGT epoch, PenDigits h 8 L 3, λ1 0, momentum 0.8", "pendigits", _dgt, (3, 1)),
         ("Skinny Trees epoch, defaults (20 trees, depth 4, batch 16), SatImage's unscaled features", "satimage",
          _skinny, (20, 2)))


def _epoch_seconds(make: Any, data: tuple[np.ndarray, ...], epochs: int, flush: bool) -> tuple[float, float]:
    """Process CPU seconds per epoch of one fit, and its last training loss."""
    Xa, ya, Xv, yv = data
    denormals.ENABLED = flush
    try:
        model = make(epochs)
        start = time.process_time()
        model.fit(Xa, ya, eval_set=(Xv, yv))
        return (time.process_time() - start) / epochs, float(model.history_[-1]["loss"])
    finally:
        denormals.ENABLED = True


def run(quick: bool = False) -> dict[str, Any]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows, table = [], []
    try:
        for name, dataset, make, (full_epochs, quick_epochs) in PLANS:
            data, source = _data(dataset, quick)
            epochs, repeats = (quick_epochs, 1) if quick else (full_epochs, 3)
            _epoch_seconds(make, tuple(a[:256] for a in data), 1, True)  # compile the numba kernels first
            seconds: dict[bool, list[float]] = {True: [], False: []}
            losses: dict[bool, float] = {}
            for _ in range(repeats):
                for flush in (False, True):
                    s, loss = _epoch_seconds(make, data, epochs, flush)
                    seconds[flush].append(s)
                    losses[flush] = loss
            off, on = float(np.median(seconds[False])), float(np.median(seconds[True]))
            rows.append({"name": name, "data": source, "cpu_s_per_epoch_default_handling": off,
                         "cpu_s_per_epoch_flushed": on, "speedup": off / on,
                         "final_loss_default_handling": losses[False], "final_loss_flushed": losses[True],
                         "epochs": epochs, "repeats": repeats, "one_thread": True})
            table.append({"row": name, "default s/epoch": f"{off:.3f}", "flushed s/epoch": f"{on:.3f}",
                          "speed-up": f"{off / on:.1f}x",
                          "loss (default / flushed)": f"{losses[False]:.5f} / {losses[True]:.5f}"})
    finally:
        torch.set_num_threads(threads)
    return {"rows": table, "results": {"rows": rows, "settings": {"dgt": DGT_SETTING, "skinny": SKINNY_SETTING}}}
