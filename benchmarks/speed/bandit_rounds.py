"""The bandit learners' hand-written rounds against the same rounds through autograd.

Table 6's setting on Abalone's split 0 (the shared data's DGT split; Gaussian rows of the same
shape stand in without it): the two-point estimator with the squared loss, δ 0.5, RMSprop at
lr 1e-3, a step every 4 rounds, 10 passes over the training part. Two learners, each from the same
start and on the same stream, one torch thread, the two modes interleaved in this process:

* the online linear baseline θ = x Wᵀ + b (:class:`models.dgt.bandit.LinearRounds`);
* the DGT-Bandit tree, h 6, L 1 (:class:`models.dgt.bandit.TreeRounds`).

A row gives the process CPU seconds per 1 000 rounds of each mode (median over the repeats), the
ratio, and the two runs' final mean loss played and largest parameter difference. In float32 the
modes round differently (in float64 they agree to 1e-10, ``tests/models/dgt/test_bandit_fast.py``):
the linear baseline's parameters stay within about 1e-7; a tree's hard routing can flip on such a
difference, after which its parameters drift apart (3e-2 on Abalone) while the mean loss played
agrees to about 1e-4.

    python -m benchmarks.report.run bandit_rounds            # 10 passes (20 880 rounds), 3 repeats a mode
    python -m benchmarks.report.run bandit_rounds --quick    # 1 pass, 1 repeat
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch

from benchmarks.common import shared_data_dir
from benchmarks.paper.dgt_common import regression_split
from models.dgt.bandit import RegressionOracle, TwoPoint, learn, row_forward, stream_order
from models.dgt.network import DGTNetwork

NAME = "bandit_rounds"
SETTING = {"estimator": "two_point", "delta": 0.5, "loss": "squared", "learning_rate": 1e-3, "accumulate": 4,
           "depth": 6, "n_layers": 1}


def _data() -> tuple[np.ndarray, np.ndarray, str]:
    root = shared_data_dir()
    if root is not None and (root / "uci").is_dir():
        Xa, ya, *_ = regression_split("abalone", 0)
        return Xa, ya, f"abalone split 0 ({Xa.shape[0]} training rows, {Xa.shape[1]} features)"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2088, 10))
    return X, X @ rng.normal(size=10) + rng.normal(size=2088), "Gaussian rows of abalone's shape (shared data absent)"


def _learners(d: int) -> dict[str, torch.nn.Module]:
    """name -> the learner's starting module, each built from the same seed."""
    linear = torch.nn.Linear(d, 1)
    with torch.no_grad():
        linear.weight.uniform_(-d ** -0.5, d ** -0.5, generator=torch.Generator().manual_seed(0))
        linear.bias.zero_()
    tree = DGTNetwork(d, SETTING["depth"], 1, n_layers=SETTING["n_layers"], quantizer="scaled",
                      generator=torch.Generator().manual_seed(0))
    return {"linear baseline": linear, "DGT-Bandit tree, h 6, L 1": tree}


def _forward(module: torch.nn.Module) -> Any:
    """What the learner plays: the layer itself, or the tree's per-row straight-through forward."""
    return module if isinstance(module, torch.nn.Linear) else (lambda x: row_forward(module, x))


def _one(start: torch.nn.Module, X: torch.Tensor, y: np.ndarray, order: torch.Tensor,
         draws: list[torch.Tensor], hand: bool) -> tuple[float, float, torch.nn.Module]:
    """CPU seconds of one stream, its mean loss played and the trained module."""
    module = copy.deepcopy(start)
    forward = _forward(module)
    est = TwoPoint(SETTING["delta"])
    oracle = RegressionOracle(y, order, loss=SETTING["loss"], budget=est.budget)
    n = int(order.shape[0])
    records: list[dict[str, Any]] = []
    begin = time.process_time()
    learn(forward, module.parameters(), X, order, oracle, est, draws, learning_rate=SETTING["learning_rate"],
          accumulate=SETTING["accumulate"], eval_every=n, record=lambda **r: records.append(r) or True,
          hand=module if hand else None)
    return time.process_time() - begin, float(records[-1]["avg_loss"]), module


def run(quick: bool = False) -> dict[str, Any]:
    X_raw, y, source = _data()
    passes, repeats = (1, 1) if quick else (10, 3)
    X = torch.tensor((X_raw - X_raw.mean(0)) / np.where(X_raw.std(0) > 0, X_raw.std(0), 1.0), dtype=torch.float32)
    n_rounds = passes * X.shape[0]
    order = torch.as_tensor(stream_order(X.shape[0], n_rounds, np.random.default_rng(0)))
    draws = list(TwoPoint(SETTING["delta"]).draws(n_rounds, torch.Generator().manual_seed(1)))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows, table = [], []
    try:
        for name, start in _learners(X.shape[1]).items():
            _one(start, X[:64], y[:64], order[:8] % 64, [d[:8] for d in draws], True)  # compile
            seconds: dict[bool, list[float]] = {False: [], True: []}
            out: dict[bool, tuple[float, torch.nn.Module]] = {}
            for _ in range(repeats):
                for hand in (False, True):
                    s, loss, module = _one(start, X, y, order, draws, hand)
                    seconds[hand].append(s)
                    out[hand] = (loss, module)
            auto, fast = float(np.median(seconds[False])), float(np.median(seconds[True]))
            diff = max(float((a - b).detach().abs().max())
                       for a, b in zip(out[False][1].parameters(), out[True][1].parameters()))
            per_k = 1000.0 / n_rounds
            rows.append({"name": name, "data": source, "rounds": n_rounds, "repeats": repeats, "one_thread": True,
                         "cpu_s_per_1000_rounds_autograd": auto * per_k, "cpu_s_per_1000_rounds_hand": fast * per_k,
                         "speedup": auto / fast, "mean_loss_played_autograd": out[False][0],
                         "mean_loss_played_hand": out[True][0], "max_parameter_difference": diff,
                         "protocol": "reduced" if quick else "full",
                         "protocol_note": (f"{passes} pass(es), {repeats} repeat(s) a mode, one torch thread"
                                           + ("; reduced: quick (the benchmark: 10 passes, 3 repeats)" if quick
                                              else ""))})
            table.append({"learner": name, "autograd s/1k rounds": f"{auto * per_k:.3f}",
                          "hand-written s/1k rounds": f"{fast * per_k:.3f}", "speed-up": f"{auto / fast:.1f}x",
                          "loss played (autograd / hand)": f"{out[False][0]:.6f} / {out[True][0]:.6f}",
                          "max |Δparam|": f"{diff:.1e}"})
    finally:
        torch.set_num_threads(threads)
    return {"rows": table, "results": {"rows": rows, "settings": SETTING}}
