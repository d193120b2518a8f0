"""The pruning layer's inputs: checks of λ, the shift and the shapes of S and Q, and the read-out constants.

Both ways of computing the layer use these: the composed torch functions
(:mod:`models.latent.pruning`) and the compiled CPU kernel (:mod:`models.latent.fused`), so
neither needs the other. Every check raises a :class:`~models.ground.errors.TreevizError` whose message
is a full sentence saying what was wrong and what to do.
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor

from models.ground.errors import TreevizError
from models.latent import heap

__all__ = [
    "READOUT_MODES",
    "check_lam",
    "check_rewards",
    "check_shift",
    "depth_of_scores",
    "readout_constants",
]

#: How z is read from the path rewards and the pruning vector (see :func:`readout_constants`).
READOUT_MODES = ("code", "paper")

Number = int | float


def check_lam(lam: Any) -> float:
    """λ as a Python float; a sentence-style error unless it is a finite number > 0.

    λ = 0 is refused rather than read as "no pruning": the QP then has no unique solution (a
    node whose batch has no positive shifted reward gives 0/0). A caller that wants no pruning
    skips the layer and uses ``z = clip(q, 0, 1)``, which is what the reference code does.
    """
    if isinstance(lam, Tensor):
        if lam.numel() != 1:
            raise TreevizError(f"The pruning strength lam must be a single number, got a tensor of shape "
                               f"{tuple(lam.shape)}.")
        lam = lam.item()
    try:
        value = float(lam)
    except (TypeError, ValueError):
        raise TreevizError(f"The pruning strength lam must be a number > 0, got {lam!r}.") from None
    if not math.isfinite(value) or value <= 0.0:
        raise TreevizError(
            f"The pruning strength lam must be a finite number > 0, got {lam!r}. With lam = 0 the pruning "
            "problem has no unique solution; to switch pruning off, skip the pruning layer and use "
            "z = clip(q, 0, 1) instead."
        )
    return value


def check_shift(shift: Any) -> float:
    """The shift added to the path rewards as a Python float (1/2 for [ICML], 0 for [PRE])."""
    try:
        value = float(shift)
    except (TypeError, ValueError):
        raise TreevizError(f"The shift must be a number (1/2 for [ICML], 0 for [PRE]), "
                           f"got {shift!r}.") from None
    if not math.isfinite(value):
        raise TreevizError(f"The shift must be a finite number (1/2 for [ICML], 0 for [PRE]), got {shift!r}.")
    return value


def check_rewards(Q: Any, name: str = "Q") -> int:
    """Validate an ``(n, |T|)`` floating tensor of path rewards; return the tree depth."""
    if not isinstance(Q, Tensor):
        raise TreevizError(f"{name} must be a torch tensor of shape (n_samples, n_nodes), "
                           f"got {type(Q).__name__}.")
    if Q.dim() != 2:
        raise TreevizError(f"{name} must have shape (n_samples, n_nodes); got shape {tuple(Q.shape)}.")
    if not Q.is_floating_point():
        raise TreevizError(f"{name} must be a floating-point tensor, got dtype {Q.dtype}.")
    if Q.shape[0] == 0:
        raise TreevizError(f"{name} has no rows (an empty batch); pruning needs at least one sample.")
    try:
        return heap.depth_from_n_nodes(Q.shape[1])
    except ValueError as err:
        raise TreevizError(f"{name} has {Q.shape[1]} columns, which is not the node count 2**(D+1) - 1 of a "
                           f"complete binary tree.") from err


def depth_of_scores(S: Any) -> int:
    """Validate an ``(n, 2**D - 1)`` floating tensor of split scores; return the tree depth ``D``."""
    if not isinstance(S, Tensor) or S.dim() != 2 or not S.is_floating_point():
        raise TreevizError("The split scores S must be a floating-point tensor of shape "
                           "(n_samples, n_splits).")
    try:
        return heap.depth_from_n_splits(S.shape[1])
    except ValueError as err:
        raise TreevizError(f"S has {S.shape[1]} columns, which is not the split count 2**D - 1 of a complete "
                           f"binary tree.") from err


def readout_constants(mode: str, shift: Number = 0.5) -> tuple[float, float]:
    """``(delta, upper)`` with ``z = relu(min(q + delta, clip(a, 0, upper)))`` for a read-out mode.

    ``"code"``: ``(0, 1)``, i.e. ``z = min(clip(q, 0, 1), a)``; ``"paper"``: ``(shift, inf)``, i.e.
    ``z = min(max(q + shift, 0), a)``. Both equal these formulas for ``0 <= a <= 1``.
    """
    if mode == "code":
        return 0.0, 1.0
    if mode == "paper":
        return check_shift(shift), math.inf
    raise TreevizError(f"Unknown read-out mode {mode!r}; use 'code' (reference code) or 'paper' (eq. 3).")
