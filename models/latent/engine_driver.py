"""The Python side of the compiled latent-tree training step (:mod:`models.latent.engine`).

:func:`supported` says whether the compiled step applies to a network and its training settings,
:func:`batches` wraps the training tensors as the kernels read them, and :class:`Engine` holds the
parameters as one flat float64 vector with the optimiser's moments and BatchNorm's running
statistics, calls the kernels, and copies the parameters back into the torch module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from models.latent.engine import LOSSES, eval_rows, train_steps
from models.latent.fused import HAVE_NUMBA
from models.latent.params import readout_constants


def supported(net: Any, optimizer: str, batch_size: int, device: torch.device) -> bool:
    """Whether :class:`Engine` can train ``net``: on the CPU, with numba, the ICML formulation with
    λ > 0, a linear predictor, linear or ELU splits, QHAdam or Adam, batches of 2 rows or more."""
    head = getattr(net, "head", None)
    return (HAVE_NUMBA and device.type == "cpu" and getattr(net, "formulation", "") == "icml"
            and net.prune_strength > 0 and isinstance(head, nn.Linear)
            and net.splits.activation in ("linear", "elu") and net.head_input in ("xz", "z")
            and optimizer in ("qhadam", "adam") and batch_size >= 2
            and net.readout_mode in ("code", "paper"))


@dataclass
class Batches:
    """The training data as the kernel reads it (NumPy views of the problem's tensors)."""

    X: np.ndarray
    yf: np.ndarray  # (n, K) float targets (logistic and squared losses); (1, 1) when unused
    yi: np.ndarray  # (n,) class indices (cross-entropy); (1,) when unused
    w: np.ndarray  # (n,) row weights; (1,) when unused
    has_w: bool
    kind: int


def batches(X: torch.Tensor, Y: torch.Tensor, W: torch.Tensor | None, kind: str) -> Batches:
    """Wrap the training tensors (CPU) for the kernel; ``kind`` is "bce", "ce" or "mse"."""
    code = LOSSES[kind]
    Xn = np.ascontiguousarray(X.detach().numpy())
    if code == 1:
        yi = np.ascontiguousarray(Y.detach().numpy().astype(np.int64))
        yf = np.zeros((1, 1))
    else:
        yf = np.ascontiguousarray(Y.detach().numpy().astype(np.float64).reshape(Y.shape[0], -1))
        yi = np.zeros(1, dtype=np.int64)
    w = np.ones(1) if W is None else np.ascontiguousarray(W.detach().numpy().astype(np.float64))
    return Batches(Xn, yf, yi, w, W is not None, code)


class Engine:
    """Trains a :class:`~models.latent.layers.LatentTreeNet` with the compiled step.

    Holds the parameters as one flat float64 vector (split weights, split bias, BatchNorm scale and
    shift, β, predictor weights, predictor bias) with the
    optimiser's moments and BatchNorm's running statistics; :meth:`write_back` copies them into
    the torch module (done after every epoch, so callbacks and checkpoints see the current
    weights).
    """

    def __init__(self, net: Any, optimizer: str, learning_rate: float):
        self.net = net
        splits = net.splits
        self.params = [splits.linear.weight, splits.linear.bias, splits.bn.weight, splits.bn.bias,
                       splits.beta, net.head.weight, net.head.bias]
        if {id(p) for p in self.params} != {id(p) for p in net.parameters() if p.requires_grad}:
            raise RuntimeError("unexpected parameters for the compiled latent-tree step")
        self.theta = np.concatenate([p.detach().double().reshape(-1).numpy() for p in self.params])
        m, d = splits.linear.weight.shape
        K, F = net.head.weight.shape
        self.shape = np.array([m, d, K, F], dtype=np.int64)
        self.rm = splits.bn.running_mean.detach().double().numpy().copy()
        self.rv = splits.bn.running_var.detach().double().numpy().copy()
        if splits.bn.momentum is None or not splits.bn.track_running_stats:
            raise RuntimeError("the compiled step needs BatchNorm with a momentum and running statistics")
        self.momentum = float(splits.bn.momentum)
        self.eps_bn = float(splits.bn.eps)
        self.elu = splits.activation == "elu"
        self.xz = net.head_input == "xz"
        self.m1 = np.zeros_like(self.theta)
        self.m2 = np.zeros_like(self.theta)
        self.step = 0
        if optimizer == "qhadam":
            self.hyper = (0.995, 0.998, 0.7, 1.0, 1e-8)  # as models.latent.qhadam / make_optimizer
        else:
            self.hyper = (0.9, 0.999, 1.0, 1.0, 1e-8)  # torch.optim.Adam's defaults
        self.delta, self.upper = readout_constants(net.readout_mode, 0.5)
        self.steps_taken = 0
        self.work: np.ndarray | None = None

    def train(self, data: Batches, order: np.ndarray, starts: np.ndarray, batch: int, lr: float,
              stats: np.ndarray) -> None:
        """Train on the batches starting at ``order[starts]`` (``stats`` as
        :func:`models.latent.engine.train_steps`)."""
        b1, b2, nu1, nu2, eps = self.hyper
        before = self.step
        self.step = train_steps(data.X, data.yf, data.yi, data.w, data.has_w, data.kind, order, starts,
                                int(batch), self.theta, self.shape,
                                float(self.net.prune_strength), 0.5, self.delta, self.upper, self.elu, self.xz,
                                self.rm, self.rv, self.momentum, self.eps_bn, self.m1, self.m2, self.step,
                                float(lr), b1, b2, nu1, nu2, eps, stats, self._work(batch))
        self.steps_taken += self.step - before

    def _work(self, batch: int) -> np.ndarray:
        """The kernel's workspace for batches of ``batch`` rows (kept between calls)."""
        size = 4 * int(self.shape[0]) * int(batch)
        if self.work is None or self.work.shape[0] < size:
            self.work = np.empty(size)
        return self.work

    def outputs(self, X: np.ndarray, *, a: np.ndarray | None = None,
                strength_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Evaluation-mode outputs of the rows of ``X`` and the pruning vector used: ``a``, or when
        None the QP's solution on these rows with λ·strength_scale (frozen pruning)."""
        m, _, K, _ = (int(v) for v in self.shape)
        out = np.empty((X.shape[0], K))
        a_out = np.empty(2 * m + 1)
        solve = a is None
        a_in = a_out if solve else np.ascontiguousarray(a, dtype=np.float64)
        eval_rows(np.ascontiguousarray(X), self.theta, self.shape, self.elu, self.xz, self.rm, self.rv,
                  self.eps_bn, float(self.net.prune_strength) * float(strength_scale), a_in, solve, 0.5,
                  self.delta, self.upper, out, a_out)
        return out, (a_out if solve else a_in)

    def write_back(self) -> None:
        """Copy the parameters and running statistics into the torch module."""
        with torch.no_grad():
            pos = 0
            for p in self.params:
                size = p.numel()
                p.copy_(torch.from_numpy(self.theta[pos:pos + size]).view_as(p))
                pos += size
            bn = self.net.splits.bn
            bn.running_mean.copy_(torch.from_numpy(self.rm))
            bn.running_var.copy_(torch.from_numpy(self.rv))
            bn.num_batches_tracked.add_(self.steps_taken)
        self.steps_taken = 0

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.theta.copy(), self.rm.copy(), self.rv.copy()
