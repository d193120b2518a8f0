"""The pruning QP of one batch: :func:`prune` picks the fast path or the general solver."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from models.ground.errors import TreevizError
from models.latent.params import Number, check_lam, check_rewards, check_shift
from models.latent.pruning.fast import prune_fast
from models.latent.pruning.pav import PruneQP
from models.latent.pruning.rewards import is_tree_consistent

SOLVERS = ("auto", "fast", "general")


def prune(
    Q: Tensor,
    lam: Number,
    *,
    eta: Tensor | np.ndarray | None = None,
    shift: Number = 0.5,
    solver: str = "auto",
) -> Tensor:
    """Solve the pruning QP for one batch: the node activities ``a``, differentiable.

    Parameters
    ----------
    Q : Tensor, shape (n, |T|)
        Path rewards of the batch (see :func:`path_rewards`), float32 or float64, any device.
    lam : float > 0
        Pruning strength, absolute per batch: larger prunes more. ``lam <= 0`` is an error; to
        train without pruning skip this layer (the reference code does that for ``lam = 0``).
    eta : Tensor or array, shape (|T|,), optional
        [PRE] learned per-node preferences (use with ``lam=1.0, shift=0.0``). Gradients flow to
        it when it requires grad. Forces the general solver.
    shift : float
        ``1/2`` ([ICML], default) or ``0`` ([PRE]).
    solver : {"auto", "fast", "general"}
        ``"auto"``: the fast per-node path (:func:`prune_fast`) when ``eta`` is None and ``Q``
        is tree-consistent (one vectorised check), else the general PAV solver (:class:`PruneQP`,
        computed on the CPU). ``"fast"`` / ``"general"`` force one; ``"fast"`` on a
        non-tree-consistent ``Q`` or with ``eta`` is an error.

    Returns
    -------
    Tensor, shape (|T|,): ``a`` in ``[0, 1]``, on ``Q``'s device and dtype. ``a_t = 0`` means node
    ``t`` (and, since ``a_child <= a_parent``, its subtree) is pruned for this batch.
    """
    lam = check_lam(lam)
    shift = check_shift(shift)
    check_rewards(Q)
    if solver not in SOLVERS:
        raise TreevizError(f"Unknown pruning solver {solver!r}; use one of {', '.join(SOLVERS)}.")
    if eta is not None:
        if solver == "fast":
            raise TreevizError("The fast pruning path does not support per-node preferences eta; use "
                               "solver='general' or 'auto'.")
        if not isinstance(eta, Tensor):
            eta = torch.as_tensor(np.asarray(eta), dtype=Q.dtype, device=Q.device)
        if eta.shape != (Q.shape[1],):
            raise TreevizError(f"eta must have one value per node, shape ({Q.shape[1]},); got {tuple(eta.shape)}.")
        return PruneQP.apply(Q, eta, lam, shift)
    if solver == "general":
        return PruneQP.apply(Q, None, lam, shift)
    consistent = is_tree_consistent(Q)
    if solver == "fast" and not consistent:
        raise TreevizError(
            "The fast pruning path needs tree-consistent path rewards (q_child <= q_parent for every "
            "sample, as path_rewards produces), but Q is not; use solver='general' or 'auto'."
        )
    if consistent:
        return prune_fast(Q, lam, shift)
    return PruneQP.apply(Q, None, lam, shift)
