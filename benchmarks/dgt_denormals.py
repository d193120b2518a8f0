"""DGT epochs with subnormal floats flushed to zero (the default) against the CPU's own handling.

The setting is one of Table 2's grid points where it mattered: PenDigits (the shared data's UCI
table, a stratified 7494 / 3498 split with 20 % of the training part for validation, as
``benchmarks/dgt.py``), height 8, L 3, batch 128, λ1 0, momentum 0.8, one torch thread. Without the
shared data, Gaussian rows of PenDigits' shape stand in (the row says which). The two modes run
interleaved in this process (flushing switched with :data:`models.denormals.ENABLED`), each a
fresh fit of the same seed; a row gives the process CPU seconds per epoch (median over the modes'
repeats, whole fits divided by their epochs) and the ratio, and the two fits' final training losses
(equal but for the last bits: flushing only zeroes values below 1.2e-38).

    python -m benchmarks.run dgt_denormals            # 3 epochs x 3 repeats a mode
    python -m benchmarks.run dgt_denormals --quick    # 1 epoch, 1 repeat, 1 500 rows
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from benchmarks import dgt as dgt_benchmark
from benchmarks.common import shared_data_dir
from models import denormals
from models.dgt.estimators import DGTClassifier

NAME = "dgt_denormals"
SETTING = dict(depth=8, n_layers=3, l1_penalty=0.0, momentum=0.8, batch_size=128, min_steps=0, device="cpu")


def _data(quick: bool) -> tuple[tuple[np.ndarray, ...], str]:
    root = shared_data_dir()
    if root is not None and (root / "uci").is_dir():
        Xa, ya, Xv, yv, _, _ = dgt_benchmark.split_for("pendigits", 0, False)
        source = f"PenDigits split 0 ({Xa.shape[0]} training / {Xv.shape[0]} validation rows)"
    else:
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(7494, 16)), rng.integers(0, 10, size=7494)
        Xa, ya, Xv, yv = X[:5995], y[:5995], X[5995:], y[5995:]
        source = "Gaussian rows of PenDigits' shape (5995 training / 1499 validation; shared data absent)"
    if quick:
        Xa, ya, Xv, yv = Xa[:1500], ya[:1500], Xv[:300], yv[:300]
        source += ", first 1500 / 300 rows"
    return (Xa, ya, Xv, yv), source


def _epoch_seconds(data: tuple[np.ndarray, ...], epochs: int, flush: bool) -> tuple[float, float]:
    """Process CPU seconds per epoch of one fit, and its last training loss."""
    Xa, ya, Xv, yv = data
    denormals.ENABLED = flush
    try:
        model = DGTClassifier(**SETTING, max_epochs=epochs, random_state=0)
        start = time.process_time()
        model.fit(Xa, ya, eval_set=(Xv, yv))
        return (time.process_time() - start) / epochs, float(model.history_[-1]["loss"])
    finally:
        denormals.ENABLED = True


def run(quick: bool = False) -> dict[str, Any]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        data, source = _data(quick)
        epochs, repeats = (1, 1) if quick else (3, 3)
        _epoch_seconds(tuple(a[:256] for a in data), 1, True)  # compile the numba kernels first
        seconds: dict[bool, list[float]] = {True: [], False: []}
        losses: dict[bool, float] = {}
        for _ in range(repeats):
            for flush in (False, True):
                s, loss = _epoch_seconds(data, epochs, flush)
                seconds[flush].append(s)
                losses[flush] = loss
    finally:
        torch.set_num_threads(threads)
    off, on = float(np.median(seconds[False])), float(np.median(seconds[True]))
    row = {"name": "DGT epoch, PenDigits h 8 L 3, λ1 0, momentum 0.8, one thread", "data": source,
           "cpu_s_per_epoch_default_handling": off, "cpu_s_per_epoch_flushed": on, "speedup": off / on,
           "final_loss_default_handling": losses[False], "final_loss_flushed": losses[True],
           "epochs": epochs, "repeats": repeats, "setting": SETTING}
    table = [{"row": row["name"], "default s/epoch": f"{off:.3f}", "flushed s/epoch": f"{on:.3f}",
              "speed-up": f"{off / on:.1f}x", "loss (default / flushed)": f"{losses[False]:.5f} / {losses[True]:.5f}"}]
    return {"rows": table, "results": {"rows": [row], "notes": source}}
