"""Training T DGT trees of equal shapes as one batched program (:func:`fit_stack`): the trees'
data stacked, their parameters in one flat buffer, each step the collapsed forward, the head, the
exact gradients and the fused optimiser step, and each tree kept at its best validation epoch."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from models.denormals import flush_denormals
from models.dgt.fast.collapsed import (
    CollapsedStack,
    FlatParameters,
    SingleTree,
    augment,
    cheapest_order,
    parameter_shapes,
    stack_parameters,
    unstack_parameters,
)
from models.dgt.fast.head import CompiledHead, TorchHead
from models.dgt.fast.kernels import HAVE_NUMBA
from models.dgt.fast.optimiser import StackOptimiser
from models.dgt.network import DGTNetwork
from models.dgt.train import SCHEDULER_EVERY, TrainConfig, restart_period
from models.ground.errors import TreevizError

LOSSES = ("mse", "ce")


@dataclass
class TreeData:
    """One tree's tensors: training rows X (m, d), targets Y (m, K) float or (m,) class indices,
    optional row weights W (m,), optional validation rows."""

    X: Tensor
    Y: Tensor
    W: Tensor | None = None
    X_val: Tensor | None = None
    Y_val: Tensor | None = None


@dataclass
class TreeJob:
    """One tree ready to train: its initial network, data, settings, batch-order generator, loss
    (``"mse"`` or ``"ce"``), validation function and device (``X_all``: the rows whose leaves the
    fitted tree marks as reached)."""

    net: DGTNetwork
    data: TreeData
    config: TrainConfig
    generator: torch.Generator
    loss: str
    validation: Callable[[Tensor, Tensor], dict[str, float]]
    device: str
    X_all: Any = None

    def trains_faster_alone(self) -> bool:
        """Whether this tree trains faster alone than stacked with others: on the CPU (with the
        compiled optimiser step) a tree of two or more layers takes the single-tree path
        (:class:`SingleTree`), whose two-dimensional products beat the batched ones per tree
        (measured in ``benchmarks/speed/dgt_forest.py``)."""
        r = self.data.X.shape[1] + 1
        n = 2 ** self.net.height - 1
        return (HAVE_NUMBA and torch.device(self.device).type == "cpu" and len(self.net.layers) > 1
                and cheapest_order(r, n) == "r")

    def shape_key(self) -> tuple:
        """Jobs with equal keys can train as one batched program."""
        d = self.data
        return (tuple(d.X.shape), tuple(d.Y.shape), d.W is None,
                None if d.X_val is None else tuple(d.X_val.shape), self.config, self.loss, self.device,
                tuple(tuple(p.shape) for p in self.net.parameters()), self.net.quantizer)


def train_jobs(jobs: Sequence[TreeJob], *, record: Callable[[list[dict[str, Any]]], bool],
               stop: Callable[[], bool] = lambda: False) -> list[dict[str, Any]]:
    """Train jobs of equal :meth:`TreeJob.shape_key` together (see :func:`fit_stack`)."""
    if len({job.shape_key() for job in jobs}) != 1:
        raise ValueError("train_jobs needs jobs of equal shapes and settings")
    return fit_stack([j.net for j in jobs], [j.data for j in jobs], jobs[0].loss, jobs[0].config,
                     generators=[j.generator for j in jobs], record=record, validation=jobs[0].validation,
                     stop=stop)


def _stack(tensors: Sequence[Tensor | None]) -> Tensor | None:
    return None if tensors[0] is None else torch.stack(list(tensors))


class _StackTraining:
    """What :func:`fit_stack` trains: T trees' data stacked (X̃ (T, m, r), targets, weights,
    validation rows), their parameters, gradients and best parameters in flat buffers, the
    optimiser, the head and the collapsed products; one method per part of an epoch."""

    def __init__(self, nets: Sequence[DGTNetwork], data: Sequence[TreeData], loss: str, config: TrainConfig,
                 order: str | None, fused: bool | None) -> None:
        self.nets, self.data, self.T = nets, data, len(nets)
        net0 = nets[0]
        self.dtype, self.device = net0.leaves.dtype, net0.leaves.device
        self._stack_data(loss)
        self.layout = FlatParameters(parameter_shapes(net0), self.T, self.dtype, str(self.device))
        flat, self.views = stack_parameters(nets, self.layout)
        gflat, self.grads = self.layout.new()
        use_fused = HAVE_NUMBA and self.device.type == "cpu" if fused is None else bool(fused)
        self.optimiser = StackOptimiser(self.layout, flat, self.views, gflat, self.grads, config, fused=use_fused)
        self.best_flat = flat.clone()
        self.best = [math.inf] * self.T
        self.best_epoch = [0] * self.T
        self.head: CompiledHead | TorchHead = (
            CompiledHead(self.views[-1], self.grads[-1], loss, net0.quantizer) if use_fused
            else TorchHead(self.views[-1], self.grads[-1], net0.A, loss, net0.quantizer))
        self.stack = CollapsedStack(self.views, order)
        # one tree on the CPU: two-dimensional products into preallocated buffers
        self.single = SingleTree(self.views, self.grads) if (
            use_fused and self.T == 1 and self.stack.n_layers > 1 and self.stack.order == "r") else None
        self._buffers: dict[int, tuple[Tensor, Tensor, np.ndarray, np.ndarray]] = {}
        self.step = self._single_step if self.single is not None else self._stacked_step

    def _stack_data(self, loss: str) -> None:
        """The trees' rows with the ones column (T, m, r), targets and weights, also flattened to
        (T·m, ...) for the epoch's gather, and the validation rows."""
        data, T = self.data, self.T
        X = augment(torch.stack([d.X for d in data]))  # (T, m, r)
        Y = torch.stack([d.Y for d in data])
        if loss == "mse" and Y.dim() == 2:
            Y = Y[:, :, None]
        Wt = _stack([d.W for d in data])
        self.has_val = data[0].X_val is not None and data[0].X_val.shape[0] > 0
        self.X_val = augment(torch.stack([d.X_val for d in data])) if self.has_val else None
        _, self.m, self.r = X.shape
        self.y_shape = Y.shape[2:]
        self.flat_rows = (torch.arange(T, device=self.device) * self.m)[:, None]
        self.X2, self.Y2 = X.reshape(T * self.m, self.r), Y.reshape(T * self.m, *self.y_shape)
        self.W2 = None if Wt is None else Wt.reshape(T * self.m)

    def epoch_rows(self, generators: Sequence[torch.Generator]) -> tuple[Tensor, Tensor, Tensor | None]:
        """Every tree's rows, targets and weights in its epoch's batch order (drawn from its
        generator), gathered once: every batch is then a slice."""
        T, m = self.T, self.m
        order_rows = torch.stack([torch.randperm(m, generator=g) for g in generators]).to(self.device) + self.flat_rows
        idx = order_rows.reshape(-1)
        X_epoch = self.X2.index_select(0, idx).view(T, m, self.r)
        Y_epoch = self.Y2.index_select(0, idx).view(T, m, *self.y_shape)
        W_epoch = None if self.W2 is None else self.W2.index_select(0, idx).view(T, m)
        return X_epoch, Y_epoch, W_epoch

    def _batch_buffers(self, rows: int) -> tuple[Tensor, Tensor, np.ndarray, np.ndarray]:
        """The single tree's z and G (1, B, n) for a batch of ``rows`` rows, and their numpy views."""
        if rows not in self._buffers:
            z_buf = torch.empty(1, rows, self.views[-2].shape[1], dtype=self.dtype)  # (1, B, n)
            G_buf = torch.empty_like(z_buf)
            self._buffers[rows] = (z_buf, G_buf, z_buf.numpy(), G_buf.numpy())
        return self._buffers[rows]

    def _single_step(self, xb: Tensor, yb: Tensor, wb: Tensor | None, lr: float) -> None:
        """One step of a single tree on the CPU (:class:`SingleTree`, the compiled head and update)."""
        x2 = xb[0]
        z, G, np_z, np_G = self._batch_buffers(x2.shape[0])
        torch.mm(x2, self.single.forward(), out=z[0])
        self.head.into(np_z, yb, wb, np_G)
        self.single.backward(x2, G[0])
        self.optimiser.step(lr)
        self.single.stale = True

    def _stacked_step(self, xb: Tensor, yb: Tensor, wb: Tensor | None, lr: float) -> None:
        """One step of the T stacked trees (:class:`CollapsedStack`) on the batch xb (T, B, r)."""
        stack = self.stack
        P = stack.forward()
        z = torch.bmm(xb, P.transpose(1, 2))
        G = self.head.gradient(z, yb, wb)
        # for L = 1, ∂W̃₁ is M̃ itself: written straight into its gradient
        M = stack.gradient_input(G, xb, out=self.grads[0] if stack.n_layers == 1 else None)
        stack.backward(M, self.grads)
        self.optimiser.step(lr)

    def epoch_records(self, epoch: int, lr: float, step: int, steps_per_epoch: int,
                      learning_rate: float) -> list[dict[str, Any]]:
        """Each tree's record of the epoch (its mean loss and open-window fraction over the steps);
        raises when a loss is not finite."""
        total, open_window = self.head.epoch_totals()
        losses = (total / steps_per_epoch).tolist()
        opened = (open_window / steps_per_epoch).tolist()
        for value in losses:
            if not math.isfinite(value):
                raise TreevizError(f"Training diverged at epoch {epoch} (the loss is not a finite number); lower the "
                                   f"learning rate (now {learning_rate:g}).")
        return [{"epoch": epoch, "loss": losses[t], "lr": lr, "step": step, "ste_open": opened[t]}
                for t in range(self.T)]

    def validate(self, numbers: list[dict[str, Any]], epoch: int,
                 validation: Callable[[Tensor, Tensor], dict[str, float]]) -> None:
        """Each tree's validation numbers into its record; a tree whose validation loss is its best
        so far keeps a copy of its parameters."""
        with torch.no_grad():
            if self.single is not None:
                z_val = torch.mm(self.X_val[0], self.single.forward())[None]
            else:
                z_val = torch.bmm(self.X_val, self.stack.forward().transpose(1, 2))
            out = self.head.predict(z_val)
        for t in range(self.T):
            numbers[t].update(validation(out[t], self.data[t].Y_val))
            if numbers[t]["val_loss"] < self.best[t]:
                self.best[t], self.best_epoch[t] = numbers[t]["val_loss"], epoch
                for v, bv in zip(self.views, self.layout.views(self.best_flat)):
                    bv[t].copy_(v[t])

    def finish(self, step: int) -> list[dict[str, Any]]:
        """Write each tree's best parameters (its last without validation rows, or without a finite
        validation loss) into its network."""
        views, T = self.views, self.T
        final = views
        if self.has_val:
            final = [torch.stack([(bv if self.best[t] < math.inf else v)[t] for t in range(T)]) for v, bv in
                     zip(views, self.layout.views(self.best_flat))]
        unstack_parameters(final, self.nets)
        for net in self.nets:
            net.eval()
        return [{"best_epoch": self.best_epoch[t], "steps": step} for t in range(T)]


def _cosine_lr(config: TrainConfig, scheduler_steps: int, period: int) -> float:
    """The cosine-warm-restart learning rate after ``scheduler_steps`` scheduler steps."""
    t_cur = scheduler_steps % period
    return config.eta_min + (config.learning_rate - config.eta_min) * (1 + math.cos(math.pi * t_cur / period)) / 2


@flush_denormals
def fit_stack(nets: Sequence[DGTNetwork], data: Sequence[TreeData], loss: str, config: TrainConfig, *,
              generators: Sequence[torch.Generator],
              record: Callable[[list[dict[str, Any]]], bool],
              validation: Callable[[Tensor, Tensor], dict[str, float]],
              stop: Callable[[], bool] = lambda: False, order: str | None = None,
              fused: bool | None = None) -> list[dict[str, Any]]:
    """Train T networks of equal shapes on data of equal shapes, as one batched program, and leave
    each at its best validation epoch (its last epoch without validation rows).

    ``record(numbers)`` gets the epoch's list of per-tree records (as :func:`fit_network`'s) and
    returns False to stop; ``stop()``, asked before every step, ends training at once (the epoch
    is not recorded). ``generators[t]`` draws tree t's batch order. Returns each tree's
    ``{"best_epoch", "steps"}``. ``order`` forces the multiplication order, ``fused`` the compiled
    optimiser step (default: on the CPU when numba is present)."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}")
    if config.l1_penalty > 0 and config.l2_penalty > 0:
        raise TreevizError("Use an ℓ1 or an ℓ2 penalty, not both (the paper never combines them).")
    run = _StackTraining(nets, data, loss, config, order, fused)
    m, T = run.m, run.T
    batch = max(1, min(int(config.batch_size), m))
    steps_per_epoch = math.ceil(m / batch)
    period = restart_period(config.epochs, steps_per_epoch)
    step = 0
    scheduler_steps = 0
    stopped = False
    for epoch in range(1, int(config.epochs) + 1):
        start = time.perf_counter()
        X_epoch, Y_epoch, W_epoch = run.epoch_rows(generators)
        lr_epoch = _cosine_lr(config, scheduler_steps, period)
        for lo in range(0, m, batch):
            if stop():
                stopped = True
                break
            lr = _cosine_lr(config, scheduler_steps, period)
            wb = None if W_epoch is None else W_epoch[:, lo:lo + batch]
            run.step(X_epoch[:, lo:lo + batch], Y_epoch[:, lo:lo + batch], wb, lr)
            step += 1
            if step % SCHEDULER_EVERY == 0:
                scheduler_steps += 1
        if stopped or stop():
            break
        numbers = run.epoch_records(epoch, lr_epoch, step, steps_per_epoch, config.learning_rate)
        if run.has_val:
            run.validate(numbers, epoch, validation)
        else:
            run.best_epoch = [epoch] * T
        elapsed = time.perf_counter() - start
        for t in range(T):
            numbers[t]["best_epoch"] = run.best_epoch[t]
            numbers[t]["epoch_s"] = elapsed
        if not record(numbers):
            break
    return run.finish(step)
