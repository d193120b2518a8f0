"""The bandit's oracles: the only holders of the labels, answering the loss of what was played and
counting every query against a round's budget."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

#: Huber's ξ on the [0, 1]-scaled target (the authors' code's default).
HUBER_XI = 0.2
LOSSES = ("squared", "huber")


class BanditProtocolError(RuntimeError):
    """The learner asked the oracle more than a round allows (a bug in the learner, not bad data)."""


class _Oracle:
    """Holds the labels of a stream and answers loss queries, one round at a time or several
    consecutive rounds at once. ``order[t]`` is the row shown at round t. ``queries`` counts every
    answer; each round may be asked at most ``budget`` times."""

    def __init__(self, targets: Tensor, order: Tensor, budget: int) -> None:
        self.__targets = targets  # name-mangled: nothing outside the oracle reads the labels
        self._order = order
        self._asked = np.zeros(int(order.shape[0]), dtype=np.int32)
        self.budget = int(budget)
        self.queries = 0

    @property
    def n_rounds(self) -> int:
        return int(self._asked.shape[0])

    def _answer(self, start: int, count: int) -> Tensor:
        """Charge one query to each of rounds start..start + count − 1; their targets."""
        stop = start + count
        if start < 0 or stop > self.n_rounds:
            raise BanditProtocolError(f"rounds {start}..{stop - 1} are outside the stream of {self.n_rounds}")
        asked = self._asked[start:stop]
        if asked.size and asked.max() >= self.budget:
            t = start + int(np.argmax(asked >= self.budget))
            raise BanditProtocolError(f"round {t} was already asked {self.budget} time(s), its budget")
        asked += 1
        self.queries += count
        return self.__targets[self._order[start:stop]]

    def _row_targets(self) -> Tensor:
        return self.__targets


class ClassificationOracle(_Oracle):
    """Answers the 0-1 loss of one played label (class index) per round."""

    def __init__(self, labels: Tensor, order: Tensor) -> None:
        super().__init__(labels, order, budget=1)

    def loss(self, start: int, played: Tensor) -> Tensor:
        """0-1 losses (float, shape (B,)) of labels ``played`` at rounds start..start + B − 1."""
        return (played != self._answer(start, played.shape[0])).to(torch.float32)

    def comparator_losses(self, row_predictions: Tensor) -> np.ndarray:
        """Per-round 0-1 losses of a comparator's labels (one per row of the data, not per round;
        not charged as queries: the comparator is not the learner)."""
        wrong = row_predictions[self._order] != self._row_targets()[self._order]
        return wrong.double().cpu().numpy()


def bandit_loss(diff: Tensor, kind: str) -> Tensor:
    """The regression loss of prediction − target, averaged over outputs: squared d², or Huber
    (ξ = 0.2): ½d² when |d| ≤ ξ, else ξ|d| − ½ξ²."""
    if kind == "squared":
        per = diff * diff
    else:
        a = diff.abs()
        per = torch.where(a <= HUBER_XI, 0.5 * diff * diff, HUBER_XI * a - 0.5 * HUBER_XI ** 2)
    return per.mean(dim=-1)


class RegressionOracle(_Oracle):
    """Answers the loss of a played value on targets min-max scaled to [0, 1].

    ``targets`` (n, K) are in the data's units; the scale (``target_min``, ``target_range``; a
    constant target gets range 1) is computed here unless given. ``budget`` is 1 for the one-point
    estimator, 2 for the two-point one."""

    def __init__(self, targets: np.ndarray, order: Tensor, *, loss: str = "squared", budget: int = 2,
                 target_min: np.ndarray | None = None, target_range: np.ndarray | None = None) -> None:
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}")
        Y = np.asarray(targets, dtype=np.float64)
        Y = Y.reshape(Y.shape[0], -1)
        if target_min is None:
            target_min = Y.min(axis=0)
        if target_range is None:
            span = Y.max(axis=0) - target_min
            target_range = np.where(span > 0, span, 1.0)
        self.target_min = np.asarray(target_min, dtype=np.float64).reshape(-1)
        self.target_range = np.asarray(target_range, dtype=np.float64).reshape(-1)
        self.kind = loss
        scaled = torch.tensor((Y - self.target_min) / self.target_range, dtype=torch.float32, device=order.device)
        super().__init__(scaled, order, budget=budget)

    def loss(self, start: int, played: Tensor) -> Tensor:
        """Losses (shape (B,)) of values ``played`` (B, K), on the [0, 1] scale, at rounds
        start..start + B − 1."""
        return bandit_loss(played - self._answer(start, played.shape[0]), self.kind)

    def comparator_losses(self, row_predictions: Tensor) -> np.ndarray:
        """Per-round losses of a comparator's scaled predictions (one row per data row)."""
        diff = row_predictions[self._order] - self._row_targets()[self._order]
        return bandit_loss(diff, self.kind).double().cpu().numpy()
