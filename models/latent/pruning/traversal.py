"""The read-out of the per-sample traversal values ``Z`` from path rewards and node activities."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from models.ground.errors import TreevizError
from models.latent.params import Number, check_rewards, readout_constants


class _Readout(torch.autograd.Function):
    """``z = relu(min(q + delta, cap))`` with ``cap = clip(a, 0, upper)``; see :func:`readout`.

    Works in ``Q``'s memory layout (node-major for ``Q`` from :func:`path_rewards`) and brings the
    incoming gradient to that layout once, because elementwise kernels that mix a transposed and
    a row-major operand are 10-25x slower on CPU. Gradient: to ``q`` where ``0 < z < cap`` (the
    ``q`` term is the minimum), to ``a`` where ``0 < z = cap`` (the cap is active; an exact tie
    ``q + delta == cap`` counts as the cap), summed over samples.
    """

    @staticmethod
    def forward(ctx: Any, Q: Tensor, a: Tensor, delta: float, upper: float) -> Tensor:
        Qt = Q.detach().t()
        cap = a.detach().clamp(0.0, upper).unsqueeze(1)
        Zt = torch.minimum(Qt + delta if delta != 0.0 else Qt, cap)
        Zt.clamp_min_(0.0)
        ctx.save_for_backward(a, Zt)
        ctx.upper = upper
        return Zt.t()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_Z: Tensor) -> tuple[Tensor, Tensor | None, None, None]:
        a, Zt = ctx.saved_tensors
        cap = a.clamp(0.0, ctx.upper).unsqueeze(1)
        Gt = grad_Z.t()
        if Gt.stride() != Zt.stride():
            Gt = _like_layout(Gt, Zt)
        G_on = Gt * torch.gt(Zt, 0.0, out=torch.empty_like(Zt))  # gradient where z > 0
        G_q = G_on * torch.lt(Zt, cap, out=torch.empty_like(Zt))  # ... and the q term is the minimum
        G_a = None
        if ctx.needs_input_grad[1]:
            G_a = (G_on.sum(1) - G_q.sum(1)) * ((a >= 0) & (a <= ctx.upper))
        return G_q.t(), G_a, None, None


def _like_layout(x: Tensor, ref: Tensor) -> Tensor:
    """A copy of ``x`` with ``ref``'s memory layout (row- or column-major 2-D)."""
    if ref.is_contiguous():
        return x.contiguous()
    return x.t().contiguous().t()


def readout(Q: Tensor, a: Tensor, mode: str = "code", shift: Number = 0.5) -> Tensor:
    """Per-sample traversal values ``Z`` (n, |T|) from path rewards and node activities.

    ``mode="code"`` (default): ``z = min(clip(q, 0, 1), a)``. This is what the reference code uses
    in every released experiment, so it reproduces the published numbers; ``z_it > 0`` only on
    sample ``i``'s hard root-to-leaf path (and only where ``a_t > 0``), i.e. routing is exactly
    hard and sparse at train and test time. It is *not* the argmin of eq. (3) in ``z``.

    ``mode="paper"``: ``z = min(max(q + shift, 0), a)`` with ``shift = 1/2`` (Prop. 1), the exact
    argmin of eq. (3) given ``a`` (use ``shift=0`` for [PRE]). Near a split boundary both children
    get mass (``z = 1/2`` capped by ``a`` at ``s = 0``); it is sparse only beyond margin 1/2. The
    solver tests compare this read-out with a generic QP solver.

    ``a`` (in ``[0, 1]``, as :func:`prune` returns) is identical in both modes. Both are computed
    as ``relu(min(q + delta, a))`` (``delta = 0`` for "code", ``shift`` for "paper"), which equals
    the formulas above for ``0 <= a <= 1``, with a custom backward that works in ``Q``'s memory
    layout (see :class:`_Readout`). Gradients reach ``q`` where the ``q`` term is the minimum and
    ``a`` where the cap ``a_t`` is active, as autograd through ``torch.minimum`` would, except at
    exact ties ``q + delta == a`` where the whole gradient goes to ``a`` instead of half of it
    (:func:`models.latent.reference.readout_reference` is the plain-autograd version). The result
    has ``Q``'s layout.
    """
    check_rewards(Q)
    if not isinstance(a, Tensor) or a.shape != (Q.shape[1],):
        raise TreevizError(f"a must be a tensor with one value per node, shape ({Q.shape[1]},); got "
                           f"{tuple(a.shape) if isinstance(a, Tensor) else type(a).__name__}.")
    delta, upper = readout_constants(mode, shift)
    return _Readout.apply(Q, a, delta, upper)
