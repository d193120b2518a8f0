"""DGT forests: seconds per tree-epoch batched and one tree at a time, and the batched products' layout.

Table 4's forests (30 trees of height 8, L 3, 200 epochs, on Abalone and Comp-Activ) are the
longest protocol left in the DGT benchmark. Two measurements, the variants interleaved over rounds
in this process:

* **Per tree-epoch**, on one torch thread (process CPU time) and on every core up to
  ``MAX_THREADS`` (wall time): T trees trained together as one batched program (``fit_stack`` on
  T stacked networks, the GPU's path) against the same T trees trained one at a time
  (``fit_stack`` on each alone, the single-tree path :class:`models.dgt.fast.SingleTree`), and a
  ``DGTForestRegressor`` fit of T trees (the path the forest chooses: on the CPU, trees with hidden
  layers one at a time), on Gaussian rows of Abalone's shape (2 088 training and 418 validation
  rows, 10 features: one DGT split's parts), h 8, L 3 (hidden width 1 530, Table 12), batch 128,
  λ1 1e-5. A whole fit of a few epochs is timed and divided by its trees and epochs; a 30-tree,
  200-epoch forest is then 6 000 of those.
* **The products' layout**: the three products of one step with the 1 530 × 1 530 hidden layer,
  for 15 stacked trees (``torch.bmm``), one thread, in the layout
  :class:`models.dgt.fast.CollapsedStack` runs them (the chain transposed: Q̃ᵀ Wᵀ, ∂Q̃ᵀ W and
  (∂Q̃ᵀ)ᵀ Q̃ᵀ) and untransposed (W Q̃, Wᵀ ∂Q̃ and ∂Q̃ Q̃ᵀ, its layout before 2026-12-05): the same
  arithmetic, each the median of repeats.

    python -m benchmarks.report.run dgt_forest           # 15 trees, 3 epochs, 3 rounds
    python -m benchmarks.report.run dgt_forest --quick   # 3 trees of height 4, 2 epochs, 1 round
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from benchmarks.common import measured_on, median_cpu_time
from models.dgt.fast import TreeData, fit_stack
from models.dgt.forest import DGTForestRegressor
from models.dgt.network import DGTNetwork, hidden_widths
from models.dgt.train import TrainConfig

NAME = "dgt_forest"
ROWS, VAL_ROWS, FEATURES = 2088, 418, 10
FULL = {"trees": 15, "height": 8, "epochs": 3, "rounds": 3, "repeat": 15}
QUICK = {"trees": 3, "height": 4, "epochs": 2, "rounds": 1, "repeat": 3}
#: The per tree-epoch rows run on one thread and on every core up to this many.
MAX_THREADS = 4
#: A Table 4 forest: 30 trees × 200 epochs.
FOREST_TREE_EPOCHS = 30 * 200


def _data(seed: int) -> TreeData:
    g = torch.Generator().manual_seed(seed)
    X, Xv = torch.randn(ROWS, FEATURES, generator=g), torch.randn(VAL_ROWS, FEATURES, generator=g)

    def target(A: torch.Tensor) -> torch.Tensor:
        return (A[:, :1] > 0).float() * 0.5 + 0.1 * A[:, 1:2]

    return TreeData(X=X, Y=target(X), X_val=Xv, Y_val=target(Xv))


def _clock(threads: int) -> Callable[[], float]:
    """Process CPU time on one thread; wall time on several (CPU time would add the threads up)."""
    return time.process_time if threads == 1 else time.perf_counter


def _fit_seconds(trees: list[int], height: int, epochs: int, clock: Callable[[], float] = time.process_time) -> float:
    """Seconds of one ``fit_stack`` of the trees with these seeds, stacked."""
    nets = [DGTNetwork(FEATURES, height, 1, n_layers=3, generator=torch.Generator().manual_seed(t)) for t in trees]
    data = [_data(t) for t in trees]
    start = clock()
    fit_stack(nets, data, "mse", TrainConfig(epochs=epochs, batch_size=128, l1_penalty=1e-5),
              generators=[torch.Generator().manual_seed(100 + t) for t in trees], record=lambda numbers: True,
              validation=lambda out, y: {"val_loss": float((out - y).pow(2).mean())})
    return clock() - start


def _forest_seconds(n_trees: int, height: int, epochs: int, clock: Callable[[], float]) -> float:
    """Seconds of a ``DGTForestRegressor`` fit of ``n_trees`` trees on rows of the same shape (the
    path the forest itself chooses; its thread count is the one set around this call)."""
    data = _data(0)
    X, y = data.X.numpy().astype(np.float64), data.Y.numpy()[:, 0].astype(np.float64)
    Xv, yv = data.X_val.numpy().astype(np.float64), data.Y_val.numpy()[:, 0].astype(np.float64)
    forest = DGTForestRegressor(n_trees=n_trees, depth=height, n_layers=3, l1_penalty=1e-5, batch_size=128,
                                max_epochs=epochs, min_steps=0, device="cpu", n_jobs=torch.get_num_threads(),
                                random_state=0)
    start = clock()
    forest.fit(X, y, eval_set=(Xv, yv))
    return clock() - start


def _protocol(s: dict[str, int]) -> dict[str, str]:
    """A row's protocol: the benchmark's own sizes (``FULL``), or reduced ones in ``--quick``."""
    sizes = f"{s['trees']} trees of height {s['height']}, {s['epochs']} epochs, {s['rounds']} round(s)"
    if s == FULL:
        return {"protocol": "full", "protocol_note": sizes}
    return {"protocol": "reduced", "protocol_note": f"{sizes}; reduced: quick (the benchmark: {FULL['trees']} trees of "
                                                    f"height {FULL['height']}, {FULL['epochs']} epochs, "
                                                    f"{FULL['rounds']} rounds)"}


def tree_epoch_rows(s: dict[str, int], thread_counts: list[int]) -> list[dict[str, Any]]:
    trees, height, epochs = list(range(s["trees"])), s["height"], s["epochs"]
    rows = []
    for n_threads in thread_counts:
        torch.set_num_threads(n_threads)
        clock = _clock(n_threads)
        _fit_seconds(trees[:2], height, 1, clock)  # compile and load the numba kernels, warm the allocator
        _fit_seconds(trees[:1], height, 1, clock)
        batched, alone, forest = [], [], []
        per = len(trees) * epochs
        for _ in range(s["rounds"]):
            batched.append(_fit_seconds(trees, height, epochs, clock) / per)
            alone.append(sum(_fit_seconds([t], height, epochs, clock) for t in trees) / per)
            forest.append(_forest_seconds(len(trees), height, epochs, clock) / per)
        b, a, f = (float(np.median(v)) for v in (batched, alone, forest))
        unit = "CPU s" if n_threads == 1 else "wall s"
        rows.append({"name": f"h {height} L 3, {len(trees)} trees: {unit} per tree-epoch, {n_threads} thread(s)",
                     "threads": n_threads, "clock": "process CPU time" if n_threads == 1 else "wall time",
                     "batched_s": b, "one_at_a_time_s": a, "forest_s": f, "speedup_one_at_a_time": b / a,
                     "batched_values": batched, "one_at_a_time_values": alone, "forest_values": forest,
                     "forest_s_estimate": f * FOREST_TREE_EPOCHS, "epochs": epochs, "rounds": s["rounds"],
                     "hidden_width": hidden_widths(height, 3)[0], **_protocol(s)})
    return rows


def layout_rows(s: dict[str, int]) -> list[dict[str, Any]]:
    T, r = s["trees"], FEATURES + 1
    H = hidden_widths(s["height"], 3)[0]
    g = torch.Generator().manual_seed(0)
    W = torch.randn(T, H, H, generator=g) / H**0.5
    Q, dQ = torch.randn(T, H, r, generator=g), torch.randn(T, H, r, generator=g)
    Qt, dQt, outer = Q.transpose(1, 2).contiguous(), dQ.transpose(1, 2).contiguous(), torch.empty(T, H, H)
    products = {
        "forward": (lambda: torch.bmm(Qt, W.transpose(1, 2)), lambda: torch.bmm(W, Q)),
        "first layers' gradient": (lambda: torch.bmm(dQt, W), lambda: torch.bmm(W.transpose(1, 2), dQ)),
        "outer product": (lambda: torch.bmm(dQt.transpose(1, 2), Qt, out=outer),
                          lambda: torch.bmm(dQ, Q.transpose(1, 2), out=outer)),
    }
    rows = []
    for name, (transposed, plain) in products.items():
        t_s, p_s = [], []
        for _ in range(s["rounds"]):
            t_s.append(median_cpu_time(transposed, s["repeat"]))
            p_s.append(median_cpu_time(plain, s["repeat"]))
        t, p = float(np.median(t_s)), float(np.median(p_s))
        a, b = transposed().clone(), plain().clone()
        if a.shape != b.shape:  # the transposed layout's result is the other's transpose
            a = a.transpose(1, 2)
        rows.append({"name": f"{name}, {T} trees, H {H}, r {r}: CPU s, 1 thread", "transposed_s": t,
                     "untransposed_s": p, "speedup_transposed": p / t,
                     "max_abs_diff": float((a - b).abs().max()), "max_abs": float(b.abs().max()), **_protocol(s)})
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    threads = torch.get_num_threads()
    s = QUICK if quick else FULL
    thread_counts = sorted({1, min(os.cpu_count() or 1, MAX_THREADS)})
    try:
        measured = measured_on()
        epochs = tree_epoch_rows(s, thread_counts)
        torch.set_num_threads(1)
        layout = layout_rows(s)
    finally:
        torch.set_num_threads(threads)
    table = [{"row": r["name"], "batched": f"{r['batched_s']:.4f}", "one at a time": f"{r['one_at_a_time_s']:.4f}",
              "speed-up": f"{r['speedup_one_at_a_time']:.2f}x (one at a time)",
              "forest fit": f"{r['forest_s']:.4f}",
              "30 x 200 forest": f"{r['forest_s_estimate']:.0f} s"} for r in epochs]
    table += [{"row": r["name"], "batched": f"{r['transposed_s']:.4f} (transposed)",
               "one at a time": f"{r['untransposed_s']:.4f} (untransposed)",
               "speed-up": f"{r['speedup_transposed']:.2f}x (transposed)", "forest fit": "",
               "30 x 200 forest": ""} for r in layout]
    return {"rows": table, "results": {"rows": epochs + layout, "measured": measured, "settings": s,
                                       "data": f"Gaussian rows, {ROWS} training / {VAL_ROWS} validation x "
                                               f"{FEATURES} features (Abalone's shape)"}}
