"""The classification bandit's exploration policy: ε-greedy play with one sigmoid per class, whose
importance-weighted squared loss (the paper's eq. 8) gives the gradient of the played score."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from models.dgt.bandit.oracles import ClassificationOracle


class EpsilonGreedy:
    """ε-greedy play with the importance-weighted sigmoid surrogate (eq. 8). One query a round."""

    budget = 1
    window_key = "reward"

    def __init__(self, exploration: float, n_classes: int) -> None:
        self.exploration, self.n_classes = float(exploration), int(n_classes)

    def draws(self, n_rounds: int, generator: torch.Generator) -> tuple[Tensor, ...]:
        """Per round: a uniform number (explore iff < δ) and a uniformly drawn label."""
        return (torch.rand(n_rounds, generator=generator),
                torch.randint(self.n_classes, (n_rounds,), generator=generator))

    def play(self, theta: Tensor, draws: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """The played labels ŷ ~ p and p(ŷ), from the scores ``theta`` (B, K) (not differentiated)."""
        uniform, arm = draws
        best = theta.detach().argmax(dim=1)
        played = torch.where(uniform < self.exploration, arm, best)
        spread = self.exploration / self.n_classes
        greedy, other = (torch.tensor(v, dtype=theta.dtype, device=theta.device)
                         for v in (1.0 - self.exploration + spread, spread))
        return played, torch.where(played == best, greedy, other)

    def __call__(self, theta: Tensor, start: int, draws: Sequence[Tensor], oracle: ClassificationOracle
                 ) -> tuple[Tensor, Tensor]:
        """(surrogate summed over the rounds, loss incurred per round)."""
        played, prob = self.play(theta, draws)
        lost = oracle.loss(start, played)
        return sigmoid_surrogate(theta, played, 1.0 - lost, prob), lost

    def gradient(self, theta: np.ndarray, start: int, draws: Sequence[np.ndarray], oracle: ClassificationOracle
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The same play as :meth:`__call__` in numpy: (the surrogate's gradient with respect to
        ``theta`` in closed form, loss incurred per round). Eq. 8: 2/p(ŷ)·(σ(θ_ŷ) − r)·σ(θ_ŷ)(1 − σ(θ_ŷ))
        on θ_ŷ, 0 elsewhere."""
        uniform, arm = draws
        rows = np.arange(theta.shape[0])
        best = theta.argmax(axis=1)
        played = np.where(uniform < self.exploration, arm, best)
        spread = self.exploration / self.n_classes
        prob = np.where(played == best, 1.0 - self.exploration + spread, spread).astype(theta.dtype)
        lost = oracle.loss(start, torch.from_numpy(played)).numpy()
        s = 1.0 / (1.0 + np.exp(-theta[rows, played]))
        grad = np.zeros_like(theta)
        grad[rows, played] = 2.0 * (s - (1.0 - lost.astype(theta.dtype))) * s * (1.0 - s) / prob
        return grad, lost

    def window(self, mean_loss: float) -> float:
        return 1.0 - mean_loss


def sigmoid_surrogate(theta: Tensor, played: Tensor, reward: Tensor, prob: Tensor) -> Tensor:
    """Σ_rounds (σ(θ_ŷ) − r)² / p(ŷ): its gradient touches θ_ŷ only and equals eq. 8 there."""
    s = torch.sigmoid(theta.gather(1, played[:, None])[:, 0])
    return ((s - reward).pow(2) / prob).sum()


def normalised_sigmoids(scores: np.ndarray) -> np.ndarray:
    """Leaf class scores as the normalised per-class sigmoids: σ(θ_k) is the leaf's estimate of the
    reward of playing k, so their normalisation is the leaf's class distribution (argmax = argmax θ)."""
    s = 1.0 / (1.0 + np.exp(-scores))
    return s / s.sum(axis=1, keepdims=True)
