"""The optimiser step over T stacked trees' parameters, the authors' recipe as
:func:`models.dgt.train.fit_network` applies it: ℓ1 (or ℓ2) on every split layer's weights and
biases, the gradient's global norm clipped per tree, then RMSprop (through a momentum buffer when
asked). On the CPU one compiled pass (:func:`~models.dgt.fast.kernels.fused_update`), elsewhere
torch operations (:func:`torch_update`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from models.dgt.fast import kernels
from models.dgt.fast.collapsed import FlatParameters
from models.dgt.train import TrainConfig

#: torch's clip_grad_norm_ adds this to the norm before dividing.
CLIP_EPS = 1e-6
ALPHA = 0.99


def torch_update(views, grads, sq, buf, penalised, config: TrainConfig, lr: float) -> None:
    """The optimiser step of :func:`fused_update` as torch operations (GPUs, and without numba)."""
    T = views[0].shape[0]
    sumsq = torch.zeros(T, dtype=views[0].dtype, device=views[0].device)
    for p, g, pen in zip(views, grads, penalised):
        if pen and config.l1_penalty > 0:
            g.add_(torch.sign(p), alpha=config.l1_penalty)
        elif pen and config.l2_penalty > 0:
            g.add_(p, alpha=config.l2_penalty)
        sumsq += g.reshape(T, -1).pow(2).sum(dim=1)
    if config.grad_clip > 0:
        coef = (config.grad_clip / (sumsq.sqrt() + CLIP_EPS)).clamp(max=1.0)
    for p, g, s, m in zip(views, grads, sq, buf):
        if config.grad_clip > 0:
            g.mul_(coef.view(T, *([1] * (g.dim() - 1))))
        s.mul_(ALPHA).addcmul_(g, g, value=1 - ALPHA)
        avg = s.sqrt().add_(config.eps)
        if config.momentum > 0:
            m.mul_(config.momentum).addcdiv_(g, avg)
            p.add_(m, alpha=-lr)
        else:
            p.addcdiv_(g, avg, value=-lr)


class StackOptimiser:
    """The optimiser state of T stacked trees (RMSprop's moments and the momentum buffers, laid out
    as the parameters' flat buffer ``flat``) and its step, which updates the parameters in place
    from their gradients (``gflat``; left as the loss's gradient by the compiled step, with the
    penalty and clip added by the torch one). ``fused``: the compiled step on numpy views (the CPU)."""

    def __init__(self, layout: FlatParameters, flat: Tensor, views: Sequence[Tensor], gflat: Tensor,
                 grads: Sequence[Tensor], config: TrainConfig, *, fused: bool) -> None:
        self.views, self.grads, self.config, self.fused = views, grads, config, fused
        sqflat, self.sq = layout.new()
        bufflat, self.buf = layout.new()
        self.penalised = np.array([True] * (len(views) - 1) + [False])
        self.n_trees = layout.n_trees
        if fused:
            self.np_w, self.np_g, self.np_sq, self.np_buf = (t.numpy() for t in (flat, gflat, sqflat, bufflat))
            self.offsets, self.sizes = layout.offsets, np.asarray(layout.sizes, dtype=np.int64)
            self.norms = np.zeros(self.n_trees, dtype=np.float64)
            # sign(w) as int8 for the ℓ1-only recipe (the paper's), see fused_update
            use_signs = config.l1_penalty > 0 and config.l2_penalty == 0 and config.momentum == 0
            self.signs = np.sign(self.np_w).astype(np.int8) if use_signs else np.zeros(0, dtype=np.int8)

    def step(self, lr: float) -> None:
        """One step at learning rate ``lr``."""
        config = self.config
        if self.fused:
            kernels.fused_update(self.np_w, self.np_g, self.np_sq, self.np_buf, self.offsets, self.sizes,
                                 self.penalised, self.n_trees, config.l1_penalty, config.l2_penalty, config.grad_clip,
                                 lr, ALPHA, config.eps, config.momentum, self.norms, self.signs)
        else:
            torch_update(self.views, self.grads, self.sq, self.buf, self.penalised, config, lr)
