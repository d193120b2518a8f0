"""The pruning layer of the ICML formulation, split scores → (Q, a, Z), on the fastest route available.

Two implementations compute the same layer and know nothing of each other:

* :mod:`models.latent.fused`: one compiled numba kernel on the CPU, forward and backward;
* :mod:`models.latent.pruning`: the composition ``path_rewards → prune_fast → readout`` of torch
  operations, which runs on any device (what a GPU uses).

:func:`latent_layer` picks the kernel when it can run (a CPU float32/float64 tensor, numba
installed) and the composition otherwise. The tests check that both give the same values and
gradients.
"""

from __future__ import annotations

from torch import Tensor

from models.latent.fused import fused_available, fused_layer
from models.latent.params import Number, check_lam
from models.latent.pruning import path_rewards, prune_fast, readout

__all__ = ["latent_layer"]


def latent_layer(S: Tensor, lam: Number, *, shift: Number = 0.5,
                 mode: str = "code") -> tuple[Tensor, Tensor, Tensor]:
    """The whole pruning layer of the ICML formulation: split scores → (Q, a, Z).

    Equal to ``Q = path_rewards(S); a = prune(Q, lam, shift=shift); Z = readout(Q, a, mode)``
    (Q from split scores is always tree-consistent, so the per-node fast path applies). On the
    CPU it runs as one compiled kernel (:func:`~models.latent.fused.fused_layer`, forward and
    backward), elsewhere as that composition of torch operations.
    """
    lam = check_lam(lam)
    if fused_available(S):
        return fused_layer(S, lam, float(shift), mode)
    Q = path_rewards(S)
    a = prune_fast(Q, lam, shift)
    return Q, a, readout(Q, a, mode, shift)
