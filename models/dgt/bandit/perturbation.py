"""The regression bandit's gradient estimators: the one-point (eq. 9) and two-point (eq. 10)
perturbations of the played value, each with its number of loss queries a round."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from models.dgt.bandit.oracles import RegressionOracle

ESTIMATORS = ("two_point", "one_point")


class _Perturbation:
    window_key = "played_loss"

    def __init__(self, delta: float) -> None:
        self.delta = float(delta)

    def draws(self, n_rounds: int, generator: torch.Generator, n_outputs: int = 1) -> tuple[Tensor, ...]:
        """Per round: a Rademacher sign u ∈ {±1}^K."""
        return (torch.randint(2, (n_rounds, n_outputs), generator=generator).to(torch.float32) * 2 - 1,)

    def window(self, mean_loss: float) -> float:
        return mean_loss


class OnePoint(_Perturbation):
    """Play θ + δu, g = ℓ(θ + δu)·u/δ (eq. 9). One query a round; the loss incurred is ℓ(θ + δu)."""

    budget = 1

    def estimate(self, loss_played: Tensor, u: Tensor) -> Tensor:
        return loss_played[:, None] * u / self.delta

    def __call__(self, theta: Tensor, start: int, draws: Sequence[Tensor], oracle: RegressionOracle
                 ) -> tuple[Tensor, Tensor]:
        (u,) = draws
        lost = oracle.loss(start, theta.detach() + self.delta * u)
        return (self.estimate(lost, u) * theta).sum(), lost

    def gradient(self, theta: np.ndarray, start: int, draws: Sequence[np.ndarray], oracle: RegressionOracle
                 ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`__call__` in numpy: (the surrogate's gradient with respect to ``theta``, which is
        the estimate itself, loss incurred per round)."""
        (u,) = draws
        lost = oracle.loss(start, torch.from_numpy(theta + self.delta * u)).numpy()
        return (lost[:, None] * u / self.delta).astype(theta.dtype), lost


class TwoPoint(_Perturbation):
    """Query θ + δu and θ − δu, g = (ℓ(θ + δu) − ℓ(θ − δu))/(2δ)·u (eq. 10; with one output u² = 1,
    so g is eq. 10 whatever u). Two queries a round; the loss incurred is their mean."""

    budget = 2

    def estimate(self, loss_plus: Tensor, loss_minus: Tensor, u: Tensor) -> Tensor:
        return ((loss_plus - loss_minus) / (2 * self.delta))[:, None] * u

    def __call__(self, theta: Tensor, start: int, draws: Sequence[Tensor], oracle: RegressionOracle
                 ) -> tuple[Tensor, Tensor]:
        (u,) = draws
        centre = theta.detach()
        plus = oracle.loss(start, centre + self.delta * u)
        minus = oracle.loss(start, centre - self.delta * u)
        return (self.estimate(plus, minus, u) * theta).sum(), 0.5 * (plus + minus)

    def gradient(self, theta: np.ndarray, start: int, draws: Sequence[np.ndarray], oracle: RegressionOracle
                 ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`__call__` in numpy: (the surrogate's gradient with respect to ``theta``, which is
        the estimate itself, loss incurred per round)."""
        (u,) = draws
        plus = oracle.loss(start, torch.from_numpy(theta + self.delta * u)).numpy()
        minus = oracle.loss(start, torch.from_numpy(theta - self.delta * u)).numpy()
        return (((plus - minus) / (2 * self.delta))[:, None] * u).astype(theta.dtype), 0.5 * (plus + minus)
