"""The penalty the alternation with the tree adds to an embedding objective.

``μ ||Z − T||² − 2 ⟨β, Z − T⟩`` with the tree's outputs T and, for the augmented Lagrangian,
multipliers β (β = 0: quadratic penalty). Up to a constant it is ``μ ||Z − (T + β/μ)||²``; its
Hessian is 2μ I. μ multiplies the squared norm itself (not μ/2), the scale of the tree-embedding
papers' μ schedules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Penalty:
    """The term ``μ ||Z − T||² − 2 ⟨β, Z − T⟩`` added to an embedding objective.

    Parameters
    ----------
    mu : float
        Penalty weight μ ≥ 0 (it multiplies the squared norm; the Hessian is 2μ I).
    target : torch.Tensor of shape (N, L)
        T, e.g. the tree's outputs F(X).
    multipliers : torch.Tensor of shape (N, L), optional
        Augmented-Lagrangian multipliers β; None means the quadratic penalty (β = 0). The
        minimiser over Z of the penalised objective tends to T + β/μ as μ grows.
    """

    mu: float
    target: torch.Tensor
    multipliers: torch.Tensor | None = None

    def value_and_grad(self, Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The penalty's value and its gradient ``2μ (Z − T) − 2β``."""
        R = Z - self.target.to(Z)
        value = self.mu * (R * R).sum()
        grad = (2.0 * self.mu) * R
        if self.multipliers is not None:
            beta = self.multipliers.to(Z)
            value = value - 2.0 * (beta * R).sum()
            grad = grad - 2.0 * beta
        return value, grad


def make_penalty(mu: float, target: Any, multipliers: Any, n: int, dtype: torch.dtype) -> Penalty:
    mu = float(mu)
    if not math.isfinite(mu) or mu < 0:
        raise ValueError(f"The penalty weight μ must be finite and ≥ 0; got {mu}.")
    T = torch.as_tensor(target, dtype=dtype) if not isinstance(target, torch.Tensor) else target.to(dtype)
    if T.ndim != 2 or T.shape[0] != n:
        raise ValueError(f"The penalty target must have shape (N, L) with N = {n}; got {tuple(T.shape)}.")
    B = None
    if multipliers is not None:
        if isinstance(multipliers, torch.Tensor):
            B = multipliers.to(dtype)
        else:
            B = torch.as_tensor(multipliers, dtype=dtype)
        if B.shape != T.shape:
            raise ValueError(f"The multipliers must have the target's shape {tuple(T.shape)}; got {tuple(B.shape)}.")
    return Penalty(mu, T, B)
