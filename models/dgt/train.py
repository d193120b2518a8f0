"""Supervised training of a DGT network (the paper's Algorithm 3 with the authors' optimiser recipe).

* RMSprop over every parameter (lr 1e-2, ε = 1e-5 as the authors' code, α = 0.99, momentum as given);
* loss = mean ℓ(f, y) (weighted mean with sample weights) + λ1·Σ|p| or λ2/2·Σp² over the predicate
  layers' weights **and** biases (never Θ, never the AND matrix);
* the gradient's global norm clipped to ``grad_clip`` (0.01 in the paper);
* cosine annealing with warm restarts, T_0 = (E·steps_per_epoch // 10 + 1) // 4 + 2 scheduler
  steps and η_min = 1e-4, **stepped every 10 optimiser steps** (about four cosine cycles);
* after each epoch the validation loss of the hard tree; the best epoch's parameters are kept.

The estimators train through :mod:`models.dgt.fast`, which runs this recipe on the collapsed linear
stack with hand-written exact gradients (and several trees at once); :func:`fit_network` is the
layer-by-layer autograd loop it is tested against, step for step.

Everything stays on the training device: the epoch's loss and the straight-through health (the
fraction of split values with |z| ≤ 1, where a gradient flows) are summed as tensors and read once
per epoch.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from models.base import TrainingTensors as Data
from models.denormals import flush_denormals
from models.dgt.network import DGTNetwork
from models.ground.errors import TreevizError

#: Loss of a batch: (outputs, targets, weights or None) → scalar.
Loss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]
#: The scheduler steps once every this many optimiser steps.
SCHEDULER_EVERY = 10


@dataclass(frozen=True)
class TrainConfig:
    epochs: int
    batch_size: int = 128
    learning_rate: float = 1e-2
    momentum: float = 0.0
    l1_penalty: float = 0.0
    l2_penalty: float = 0.0
    grad_clip: float = 0.01
    eta_min: float = 1e-4
    eps: float = 1e-5


def restart_period(epochs: int, steps_per_epoch: int) -> int:
    """T_0 of the authors' cosine warm restarts, in scheduler steps (one per 10 optimiser steps)."""
    return (int(epochs) * int(steps_per_epoch) // SCHEDULER_EVERY + 1) // 4 + 2


def penalty(net: DGTNetwork, config: TrainConfig) -> torch.Tensor | None:
    """λ1·Σ|p| or λ2/2·Σp² over the predicate layers (None when both are 0)."""
    params = net.regularised_parameters()
    if config.l1_penalty > 0:
        return config.l1_penalty * sum(p.abs().sum() for p in params)
    if config.l2_penalty > 0:
        return 0.5 * config.l2_penalty * sum(p.pow(2).sum() for p in params)
    return None


@flush_denormals
def fit_network(net: DGTNetwork, data: Data, loss: Loss, config: TrainConfig, *, generator: torch.Generator,
                record: Callable[..., bool],
                validation: Callable[[torch.Tensor, torch.Tensor], dict[str, float]],
                stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """Train ``net`` in place and leave it at its best validation epoch (the last epoch without a
    validation set). ``record(**numbers)`` gets one record per epoch and returns False to stop;
    ``stop()``, asked before every optimiser step, ends training at once when True (a cancel
    between records; the epoch is not recorded). Returns ``{"best_epoch", "steps"}``."""
    if config.l1_penalty > 0 and config.l2_penalty > 0:
        raise TreevizError("Use an ℓ1 or an ℓ2 penalty, not both (the paper never combines them).")
    n = data.X.shape[0]
    device = data.X.device
    batch = max(1, min(int(config.batch_size), n))
    steps_per_epoch = math.ceil(n / batch)
    optimizer = torch.optim.RMSprop(net.parameters(), lr=config.learning_rate, alpha=0.99, eps=config.eps,
                                    momentum=config.momentum)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        optimizer, T_0=restart_period(config.epochs, steps_per_epoch), eta_min=config.eta_min)
    params = list(net.parameters())
    has_val = data.X_val is not None and data.X_val.shape[0] > 0
    best, best_epoch, best_state = math.inf, 0, None
    step = 0
    for epoch in range(1, int(config.epochs) + 1):
        start = time.perf_counter()
        net.train()
        total = torch.zeros((), dtype=data.X.dtype, device=device)
        open_window = torch.zeros((), dtype=data.X.dtype, device=device)
        order = torch.randperm(n, generator=generator).to(device)
        lr = optimizer.param_groups[0]["lr"]
        for rows in order.split(batch):
            if stop():
                break
            x = data.X[rows]
            z = net.split_values(x)
            out, _ = net.head(z)
            objective = loss(out, data.Y[rows], None if data.W is None else data.W[rows])
            reg = penalty(net, config)
            total = total + objective.detach()
            if reg is not None:
                objective = objective + reg
            optimizer.zero_grad(set_to_none=True)
            objective.backward()
            if config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
            optimizer.step()
            step += 1
            if step % SCHEDULER_EVERY == 0:
                scheduler.step()
            open_window = open_window + (z.detach().abs() <= 1).to(z.dtype).mean()
        if stop():
            break
        mean_loss = float(total) / steps_per_epoch
        if not math.isfinite(mean_loss):
            raise TreevizError(f"Training diverged at epoch {epoch} (the loss is not a finite number); lower the "
                               f"learning rate (now {config.learning_rate:g}).")
        numbers: dict[str, Any] = {"epoch": epoch, "loss": mean_loss, "lr": lr, "step": step,
                                   "ste_open": float(open_window) / steps_per_epoch}
        net.eval()
        if has_val:
            with torch.no_grad():
                out, _ = net(data.X_val)
                numbers.update(validation(out, data.Y_val))
            current = numbers["val_loss"]
            if current < best:
                best, best_epoch = current, epoch
                best_state = copy.deepcopy(net.state_dict())
        else:
            best_epoch = epoch
        numbers["best_epoch"] = best_epoch
        numbers["epoch_s"] = time.perf_counter() - start
        if not record(**numbers):
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return {"best_epoch": best_epoch, "steps": step}
