"""Slow reference implementations of the pruning layer, for tests and benchmarks only.

The library never calls anything here. Each function writes one piece of the pruning layer the
plain way, with torch operations and ordinary autograd, so that the tests can check the fast
versions in :mod:`models.latent.pruning` (custom backward passes, node-major memory layouts,
NumPy kernels) against it:

* :func:`path_rewards_reference`: the path rewards level by level with ``torch.minimum``;
* :func:`readout_reference`: the read-out of ``z`` written as its formula;
* :func:`pruning_objective`: the value of the relaxed QP's objective at a point ``(a, z)``,
  to compare a solution with a generic solver's.

See ``docs/latent_trees.md`` for the formulas.
"""

from __future__ import annotations

import torch
from torch import Tensor

from models.ground.errors import TreevizError
from models.latent.params import Number, depth_of_scores

__all__ = ["path_rewards_reference", "pruning_objective", "readout_reference"]


def path_rewards_reference(S: Tensor) -> Tensor:
    """:func:`~models.latent.pruning.path_rewards` with plain autograd (``torch.minimum`` per level).

    Its gradient is autograd's through ``torch.minimum``: at an exact tie between a node's own
    edge and its parent's path minimum it splits the gradient in halves, where ``path_rewards``
    gives all of it to the parent's path (both are valid subgradients).
    """
    depth = depth_of_scores(S)
    n = S.shape[0]
    q = S.new_ones((n, 1))
    levels = [q]
    for d in range(depth):
        w = 2**d
        s = S[:, w - 1: 2 * w - 1]
        q = torch.stack((torch.minimum(q, -s), torch.minimum(q, s)), dim=2).reshape(n, 2 * w)
        levels.append(q)
    return torch.cat(levels, dim=1)


def readout_reference(Q: Tensor, a: Tensor, mode: str = "code", shift: Number = 0.5) -> Tensor:
    """:func:`~models.latent.pruning.readout` written as its formula, with plain autograd.

    ``"code"``: ``z = min(clip(q, 0, 1), a)``; ``"paper"``: ``z = min(max(q + shift, 0), a)``.
    """
    if mode == "code":
        return torch.minimum(Q.clamp(0.0, 1.0), a)
    if mode == "paper":
        return torch.minimum((Q + float(shift)).clamp_min(0.0), a)
    raise TreevizError(f"Unknown read-out mode {mode!r}; use 'code' or 'paper'.")


def pruning_objective(
    Q: Tensor,
    a: Tensor,
    z: Tensor,
    lam: Number,
    eta: Tensor | None = None,
    shift: Number = 0.5,
) -> Tensor:
    """Value of the relaxed pruning QP's objective at ``(a, z)``.

    ``(lam/2) ||a - eta||^2 + 1/2 sum_i ||z_i - q_i - shift||^2`` (``eta = 0`` unless given). It
    does not check feasibility (``a_child <= a_parent``, ``0 <= z <= a``).
    """
    lam = float(lam)
    a = torch.as_tensor(a, dtype=Q.dtype, device=Q.device)
    z = torch.as_tensor(z, dtype=Q.dtype, device=Q.device)
    diff_a = a if eta is None else a - torch.as_tensor(eta, dtype=Q.dtype, device=Q.device)
    return 0.5 * lam * (diff_a**2).sum() + 0.5 * ((z - Q - float(shift)) ** 2).sum()
