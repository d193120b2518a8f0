"""The floor of one exact DGT training step on this machine, one CPU thread, against the 10× target.

DGT's exact step (the collapsed linear stack, see ``models/dgt/fast/``) cannot avoid:

* the three products of the H × H hidden layer with a skinny r-column matrix (r = d + 1): the
  forward W₂ Q̃₁, the outer product ∂W₂ = ∂Q̃₂ Q̃₁ᵀ (the RMSprop step is elementwise, so every
  element of the gradient is needed) and W₂ᵀ ∂Q̃₂ (the gradient of the first layer);
* the smaller products of the last layer (n × H, n = 2^h − 1) and of the batch (B × r × n);
* one pass over the H × H weights and the RMSprop second moments: read both, write both (the
  optimiser's state changes everywhere at every step);
* the head (the hard tree's forward and the straight-through backward) on the batch.

Each part is timed alone (process CPU seconds, median of repeats, one thread, every product at
the fastest of its layouts), so the sum is a floor: a step that did nothing else, with no extra
pass over memory (the norm for the gradient clip, the gradient itself written and read back) and
no call overhead. The epoch floor is steps per epoch × that, plus one forward and the validation
products. The measured epoch of the current code (``fit_stack`` on random rows of the setting's
shape) is printed beside it.

    python -m benchmarks.speed.dgt_step_floor                 # abalone: h 6, L 3, batch 128, 2004 rows
    python -m benchmarks.speed.dgt_step_floor --setting big   # 20 000 × 50, h 8, L 3, batch 512

The targets are the authors' code's epoch ÷ 10 measured side by side (an earlier run of
``python -m benchmarks.reference_speed --run``):
abalone 0.2167 s → 0.0217 s, 20 000 × 50 3.401 s → 0.340 s (pass ``--target`` to change them).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from benchmarks.common import median_cpu_time as _cpu_time
from models.dgt.fast import HAVE_NUMBA, TreeData, fit_stack
from models.dgt.fast.kernels import fused_head
from models.dgt.network import DGTNetwork, hidden_widths
from models.dgt.train import TrainConfig

SETTINGS = {
    # d, height, batch, training rows, validation rows, the authors' epoch (CPU s) ÷ 10
    "abalone": dict(d=10, height=6, batch=128, rows=2004, val_rows=502, target=0.2167 / 10),
    "big": dict(d=50, height=8, batch=512, rows=20000, val_rows=5000, target=3.401 / 10),
}

if HAVE_NUMBA:
    from numba import njit

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _stream(w, sq, a, b):  # pragma: no cover - compiled
        """Read and write the weights and the second moments once (the least an RMSprop step does)."""
        for i in range(w.shape[0]):
            v = a * sq[i] + b
            sq[i] = v
            w[i] = w[i] - v


def _fastest(*variants) -> float:
    return min(_cpu_time(v) for v in variants)


def floor(setting: str) -> dict[str, float]:
    s = SETTINGS[setting]
    d, h, B = s["d"], s["height"], s["batch"]
    r, n = d + 1, 2**h - 1
    H = hidden_widths(h, 3)[0]
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=g)

    W, Q, A = rand(H, H) / H**0.5, rand(H, r), rand(H, r)
    Qt, At = Q.T.contiguous(), A.T.contiguous()
    out, out_t, G = torch.empty(H, r), torch.empty(r, H), torch.empty(H, H)
    parts: dict[str, float] = {}
    parts["forward W2 Q1"] = _fastest(lambda: torch.mm(W, Q, out=out), lambda: torch.mm(Q.T, W.T, out=out_t))
    parts["outer dQ2 Q1^T"] = _fastest(lambda: torch.mm(A, Qt, out=G), lambda: torch.mm(At.T, Qt, out=G))
    parts["W2^T dQ2"] = _fastest(lambda: torch.mm(W.T, A, out=out), lambda: torch.mm(At, W, out=out_t))
    W3, M, Q2t = rand(n, H), rand(n, r), rand(r, H)
    o1, o2, o3 = torch.empty(r, n), torch.empty(n, H), torch.empty(r, H)
    parts["last layer (3 products)"] = (_cpu_time(lambda: torch.mm(Q2t, W3.T, out=o1))
                                        + _cpu_time(lambda: torch.mm(M, Q2t, out=o2))
                                        + _cpu_time(lambda: torch.mm(M.T, W3, out=o3)))
    x, Gz = rand(B, r), rand(B, n)
    z, Mt = torch.empty(B, n), torch.empty(r, n)
    parts["batch (z, M)"] = _cpu_time(lambda: torch.mm(x, o1, out=z)) + _cpu_time(lambda: torch.mm(x.T, Gz, out=Mt))
    if HAVE_NUMBA:
        w, sq = W.numpy().ravel().copy(), np.abs(W.numpy().ravel()) * 1e-3
        parts["stream W2 + sq (read, write)"] = _cpu_time(lambda: _stream(w, sq, np.float32(0.99), np.float32(1e-9)))
        zz = (rand(1, B, n) * 0.8).numpy()
        leaves, y = rand(1, n + 1, 1).numpy(), torch.rand(1, B, 1, generator=g).numpy()
        GG, gl, lo, wi = np.zeros((1, B, n), np.float32), np.zeros_like(leaves), np.zeros(1), np.zeros(1)
        dl, dw = np.zeros((1, 1), np.int64), np.zeros((1, 1), np.float32)
        parts["head"] = _cpu_time(lambda: fused_head(zz, leaves, y, dl, dw, False, False, True, 2.0, GG, gl, lo, wi))
    step = sum(parts.values())
    steps = math.ceil(s["rows"] / B)
    xv = rand(s["val_rows"], r)
    zv = torch.empty(s["val_rows"], n)
    validation = parts["forward W2 Q1"] + _cpu_time(lambda: torch.mm(xv, o1, out=zv))
    return {**parts, "step": step, "steps": steps, "validation": validation,
            "epoch_floor": steps * step + validation, "target": s["target"]}


def measured_epoch(setting: str, epochs: int = 4) -> float:
    """Median CPU seconds of the current code's epochs 2+ on random rows of the setting's shape."""
    s = SETTINGS[setting]
    g = torch.Generator().manual_seed(1)
    X = torch.randn(s["rows"], s["d"], generator=g)
    y = (X[:, :1] > 0).float() * 0.5 + 0.1 * X[:, 1:2]
    Xv = torch.randn(s["val_rows"], s["d"], generator=g)
    yv = (Xv[:, :1] > 0).float() * 0.5 + 0.1 * Xv[:, 1:2]
    net = DGTNetwork(s["d"], s["height"], 1, n_layers=3, generator=g)
    marks = [time.process_time()]

    def record(numbers):
        marks.append(time.process_time())
        return True

    fit_stack([net], [TreeData(X=X, Y=y, X_val=Xv, Y_val=yv)], "mse",
              TrainConfig(epochs=epochs, batch_size=s["batch"], l1_penalty=1e-5),
              generators=[torch.Generator().manual_seed(2)], record=record,
              validation=lambda out, t: {"val_loss": float((out - t).pow(2).mean())})
    return float(np.median(np.diff(marks)[1:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", choices=sorted(SETTINGS), default="abalone")
    ap.add_argument("--target", type=float, default=None, help="seconds per epoch that 10x needs")
    ap.add_argument("--no-measure", action="store_true", help="skip timing the current code's epoch")
    a = ap.parse_args()
    torch.set_num_threads(1)  # one thread, as the side-by-side comparison
    res = floor(a.setting)
    target = a.target if a.target is not None else res["target"]
    print(f"DGT step floor, {a.setting}, one thread (process CPU ms, median):")
    for key, value in res.items():
        if key not in ("step", "steps", "validation", "epoch_floor", "target"):
            print(f"  {key:30s} {1e3 * value:8.3f}")
    print(f"  {'floor per step':30s} {1e3 * res['step']:8.3f}")
    print(f"floor per epoch: {res['steps']} steps + validation = {res['epoch_floor']:.4f} s; "
          f"10x needs <= {target:.4f} s (floor / target = {res['epoch_floor'] / target:.2f})")
    if not a.no_measure:
        epoch = measured_epoch(a.setting)
        print(f"current code, measured: {epoch:.4f} s per epoch ({epoch / res['epoch_floor']:.2f} x the floor)")


if __name__ == "__main__":
    main()
