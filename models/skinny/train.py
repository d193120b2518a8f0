"""Proximal mini-batch SGD for Skinny Trees (the paper's Algorithm 1, as the authors' code runs it).

For every mini-batch: one plain SGD step (constant learning rate η, no momentum) on
h = mean batch loss + λ2/(m·|I|)·‖K‖² for the kernel K, the biases and the leaves; then the
step counter t grows by one and the prox acts on K's feature groups with the current λ0(t) (hard
thresholding at √(2ηλ0)) or, for the group-lasso baseline, block soft thresholding at
τ = η·λ1/√(m·|I|). Only the kernel is ridge-penalised and thresholded; biases and leaves are not.

The loss is a batch *mean* (sample weights make it a weighted mean). No early stopping: the paper
tunes the number of epochs instead, and the features kept are those of the last step. Features
can come back (a zero row's loss gradient can push it above the threshold again), so per-epoch
counts are what they are at the end of each epoch.

Everything stays on the training device; the prox is written without host synchronisation, so a
step costs the same on a GPU as its kernels do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from models.base import TrainingTensors as Data
from models.denormals import flush_denormals
from models.ground.errors import TreevizError
from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.prox import dense_to_sparse, group_soft_threshold, hard_threshold, l0_threshold

Loss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]


@dataclass(frozen=True)
class Schedule:
    """The penalty, in the units the prox uses.

    ``penalty`` is ``"l0"`` (group ℓ0, hard thresholding) or ``"group_lasso"``. For ℓ0,
    ``lambda0`` is γ (the largest λ0) with ``dense_to_sparse`` and the fixed λ0 otherwise, already
    divided by p; ``rate`` is s. ``ridge`` is λ2/(m·|I|); ``lasso`` is λ1/√(m·|I|).
    """

    penalty: str
    lambda0: float
    dense_to_sparse: bool
    rate: float
    ridge: float
    lasso: float
    min_keep: int

    def lambda0_at(self, step: int) -> float:
        if self.penalty != "l0":
            return 0.0
        return dense_to_sparse(step, self.lambda0, self.rate) if self.dense_to_sparse else self.lambda0

    def threshold_at(self, step: int, learning_rate: float) -> float:
        """The norm a row must exceed after step ``step`` (ℓ0), or the shrinkage τ (group lasso)."""
        if self.penalty == "l0":
            return l0_threshold(learning_rate, self.lambda0_at(step))
        return learning_rate * self.lasso


def prox_step(kernel: torch.Tensor, schedule: Schedule, step: int, learning_rate: float) -> None:
    """The prox after optimiser step ``step``, in place (no host synchronisation)."""
    threshold = schedule.threshold_at(step, learning_rate)
    if schedule.penalty == "l0":
        if threshold > 0.0:  # λ0 = 0: the prox is the identity
            hard_threshold(kernel, threshold, schedule.min_keep)
    else:
        group_soft_threshold(kernel, threshold, schedule.min_keep)


@flush_denormals
def fit_ensemble(model: SoftTreeEnsemble, data: Data, loss: Loss, schedule: Schedule, *,
                 learning_rate: float, batch_size: int, max_epochs: int, generator: torch.Generator,
                 record: Callable[..., bool], validation: Callable[[torch.Tensor, torch.Tensor], dict[str, float]],
                 step: int = 0, stop: Callable[[], bool] = lambda: False) -> int:
    """Train ``model`` in place; returns the optimiser-step counter after the last step.

    ``record(**numbers)`` gets one record per epoch and returns False to stop (a cancel).
    ``stop()``, asked before every optimiser step, ends training at once when True (a cancel
    between records; the epoch is not recorded).
    ``validation(outputs, targets)`` turns validation outputs into named numbers (loss, score).
    """
    params = [model.kernel, model.bias, model.leaves]
    n = data.X.shape[0]
    device = data.X.device
    for epoch in range(1, int(max_epochs) + 1):
        start = time.perf_counter()
        total = torch.zeros((), dtype=data.X.dtype, device=device)
        order = torch.randperm(n, generator=generator).to(device)
        batches = order.split(int(batch_size))
        for rows in batches:
            if stop():
                return step
            out = model(data.X[rows])
            objective = loss(out, data.Y[rows], None if data.W is None else data.W[rows])
            if schedule.ridge > 0.0:
                objective = objective + schedule.ridge * model.kernel.pow(2).sum()
            grads = torch.autograd.grad(objective, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.sub_(g, alpha=learning_rate)
                step += 1
                prox_step(model.kernel, schedule, step, learning_rate)
            total += objective.detach()
        mean_loss = float(total) / len(batches)
        if not math.isfinite(mean_loss):
            raise TreevizError(f"Training diverged at epoch {epoch} (the loss is not a finite number); lower the "
                               f"learning rate (now {learning_rate:g}).")
        with torch.no_grad():
            n_features = int((torch.linalg.vector_norm(model.kernel, dim=1) > 0).sum())
            numbers: dict[str, Any] = {"epoch": epoch, "loss": mean_loss, "n_features": n_features,
                                       "step": step, "lambda0": schedule.lambda0_at(step),
                                       "threshold": schedule.threshold_at(step, learning_rate)}
            if data.X_val is not None and data.X_val.shape[0] > 0:
                numbers.update(validation(model(data.X_val), data.Y_val))
        numbers["epoch_s"] = time.perf_counter() - start
        if not record(**numbers):
            break
    return step
