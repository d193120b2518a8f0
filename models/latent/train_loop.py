"""Mini-batch training of a :class:`~models.latent.layers.LatentTreeNet` (Algorithm 2 of [ICML]).

For each batch: split scores → pruning QP on the batch → z → predictor → loss → backprop
(through the QP by its own Jacobian). After each epoch the model is evaluated with *frozen
pruning*: a is solved once on a reference set (the training data, at most ``REFERENCE_ROWS``
rows) with λ scaled by n_ref / batch_size. That scaling matches a training batch in the sizes
of a's nonzero entries, not in which nodes are exactly 0: the frozen vector prunes only the
nodes that every batch would prune, so usually fewer (see :func:`frozen_pruning`). Early
stopping keeps the best-validation weights;
ReduceLROnPlateau divides the learning rate by 10 after ``lr_patience`` epochs without a
better validation loss (as in the reference code).

On the CPU the common configuration (ICML formulation, linear or ELU splits, linear predictor,
QHAdam or Adam) trains with the compiled step of :mod:`models.latent.engine`: the same
mathematics as the autograd path (tested equal), without its per-operation overhead. The
per-epoch evaluation then runs in the same kernel: one evaluation pass over the reference set
gives both the frozen pruning vector and the reference rows' outputs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from models.latent import engine_driver as compiled
from models.latent import heap
from models.latent.layers import LatentTreeNet
from models.latent.qhadam import QHAdam

#: Largest reference set used to freeze the pruning vector and to score the training data.
REFERENCE_ROWS = 8192
#: Rows per forward pass at evaluation time (memory bound only; results do not depend on it
#: with frozen pruning).
EVAL_CHUNK = 8192
#: Training steps per call of the compiled step; ``stop()`` is asked between calls.
STEPS_PER_CALL = 16
#: Whether ``fit_net(engine=None)`` uses the compiled step where it applies (benchmarks set it
#: False to time the autograd path in the same process).
USE_ENGINE = True


@dataclass
class Problem:
    """Tensors and functions of one supervised problem, on the training device."""

    X: torch.Tensor
    Y: torch.Tensor
    #: (outputs, targets, row weights or None) -> the weighted mean loss
    loss: Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]
    score: Callable[[torch.Tensor, torch.Tensor], float]  # (outputs, targets) -> higher is better
    X_val: torch.Tensor | None = None
    Y_val: torch.Tensor | None = None
    #: sample weights of the training and validation rows (None: every row weighs 1)
    W: torch.Tensor | None = None
    W_val: torch.Tensor | None = None
    #: the loss in words for the compiled step: "bce" (logistic on one logit), "ce"
    #: (cross-entropy) or "mse" (mean squared error over the outputs); None: autograd only
    loss_kind: str | None = None


def weighted_mean(losses: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """The mean of per-row losses, weighted by the sample weights ``w`` when given."""
    if w is None:
        return losses.mean()
    return (losses * w).sum() / w.sum()


def make_optimizer(name: str, params: Any, lr: float) -> torch.optim.Optimizer:
    if name == "qhadam":
        return QHAdam(params, lr=lr, nus=(0.7, 1.0), betas=(0.995, 0.998))
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise ValueError(f"optimizer must be 'qhadam' or 'adam', got {name!r}")


def reference_rows(n: int, generator: torch.Generator) -> torch.Tensor:
    """Indices of the reference set: all rows, or a seeded sample of ``REFERENCE_ROWS``."""
    if n <= REFERENCE_ROWS:
        return torch.arange(n)
    return torch.randperm(n, generator=generator)[:REFERENCE_ROWS].sort().values


@torch.no_grad()
def frozen_pruning(net: LatentTreeNet, X_ref: torch.Tensor, batch_size: int) -> torch.Tensor:
    """a solved on the reference set with λ scaled to the training batch size (eval mode).

    With N reference rows and batch size B the QP runs with λ·N/B, so node t's value solves
    λ a = (B/N) Σ_i (q_it + ½ − a)_+: the equation of a batch of B rows that were each the
    reference set's average. By the QP's batch-replication identity (tiling a batch k times with
    λ equals the batch with λ/k) this is exactly a training batch's a when the reference set is k
    copies of one batch; on real data it holds approximately for the sizes of the nonzero entries.

    It does not hold for which nodes are exactly 0. a_t = 0 exactly when no row comes within
    margin ½ of node t (every q_it ≤ −½), and λ does not enter that condition. At the same
    weights the frozen a is therefore zero exactly on the nodes that are zero in every batch of a
    partition of the reference set: it prunes no more nodes than any one batch, and usually fewer.
    Measured on breast_cancer (standard scaling, λ = 1, batch 64, 409 training rows, 5 seeds):
    0.8 pruned nodes frozen against 2.7 per training batch of the last epoch at depth 3 (15
    nodes), 4.0 against 6.5 at depth 4 (31 nodes), while the nonzero frozen entries were within
    0.12 of the batches' mean a. ``docs/latent_trees.md`` has the table and the command.
    """
    was_training = net.training
    net.eval()
    scale = X_ref.shape[0] / max(1, batch_size)
    a = net.tree_state(X_ref, strength_scale=scale)["a"]
    net.train(was_training)
    return a


@torch.no_grad()
def predict_outputs(net: LatentTreeNet, X: torch.Tensor, a: torch.Tensor | None, *,
                    batch_mode_size: int | None = None) -> torch.Tensor:
    """Raw outputs in eval mode: with a frozen ``a``, or (``a`` None) with a recomputed on
    consecutive evaluation batches of ``batch_mode_size`` rows, as the reference code does."""
    was_training = net.training
    net.eval()
    chunk = batch_mode_size if a is None else EVAL_CHUNK
    outs = [net(X[i : i + chunk], a=a)[0] for i in range(0, X.shape[0], max(1, chunk))]
    net.train(was_training)
    return torch.cat(outs) if outs else torch.zeros((0, 0), device=X.device)


def fit_net(net: LatentTreeNet, problem: Problem, *, batch_size: int, max_epochs: int, patience: int,
            lr_patience: int, optimizer: str, learning_rate: float, generator: torch.Generator,
            record: Callable[..., bool], init_bias: bool,
            stop: Callable[[], bool] = lambda: False, engine: bool | None = None,
            plan: Callable[[float], None] | None = None) -> tuple[torch.Tensor, int]:
    """Train ``net`` in place; returns (frozen pruning vector, best epoch).

    ``record(**values)`` is called after every epoch (it appends to ``history_`` and runs the
    callbacks); it returns False to stop (a cancel). ``stop()``, asked before every optimiser
    step (every :data:`STEPS_PER_CALL` steps with the compiled step), ends training at once when
    True (a cancel between records; the epoch is not recorded). ``engine``: None uses the
    compiled step of :mod:`models.latent.engine` where it applies, False never, True requires it.
    ``plan(epochs)``, if given, hears before each record how many epochs the run is likely to take
    in all (:func:`planned_epochs`), for a progress bar.
    """
    n = problem.X.shape[0]
    batch_size = int(min(batch_size, n))
    ref = reference_rows(n, generator).to(problem.X.device)
    X_ref, Y_ref = problem.X[ref], problem.Y[ref]
    if init_bias:  # before the optimiser exists, so β stays a trained parameter
        sample = torch.randperm(n, generator=generator)[: max(batch_size, min(n, 4096))]
        net.splits.init_bias(problem.X[sample.to(problem.X.device)])
    opt = make_optimizer(optimizer, net.parameters(), learning_rate)
    scheduler = (torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.1, patience=lr_patience)
                 if lr_patience > 0 else None)
    usable = (problem.loss_kind is not None and problem.X.dtype in (torch.float32, torch.float64)
              and compiled.supported(net, optimizer, batch_size, problem.X.device))
    if engine and not usable:
        raise ValueError("the compiled latent-tree step does not apply to this configuration")
    if engine is None:
        engine = USE_ENGINE and usable
    kernel = compiled.Engine(net, optimizer, learning_rate) if (usable and engine) else None
    if kernel is not None:
        data = compiled.batches(problem.X, problem.Y, problem.W, problem.loss_kind)
        X_ref_np = X_ref.detach().numpy()
        starts = np.arange(0, n, batch_size, dtype=np.int64)
    has_val = problem.X_val is not None and problem.X_val.shape[0] > 0
    best_loss, best_state, best_epoch, waited = math.inf, None, 0, 0
    improved: list[bool] = []
    n_nodes = heap.n_nodes(net.depth)
    for epoch in range(1, max_epochs + 1):
        start = time.perf_counter()
        net.train()
        order = torch.randperm(n, generator=generator).to(problem.X.device)
        lr = float(opt.param_groups[0]["lr"])
        if kernel is not None:
            stats = np.zeros(4)
            order_np = order.numpy()
            for i in range(0, starts.shape[0], STEPS_PER_CALL):
                if stop():
                    break
                kernel.train(data, order_np, starts[i : i + STEPS_PER_CALL], batch_size, lr, stats)
            kernel.write_back()
            total, seen = float(stats[0]), float(stats[1])
            batch_active = float(stats[2] / stats[3]) if stats[3] else 0.0
        else:
            total, seen, batch_active = _torch_epoch(net, problem, order, batch_size, opt, stop, n_nodes)
        if stop():
            break
        if kernel is not None:
            out_np, a_np = kernel.outputs(X_ref_np, strength_scale=X_ref.shape[0] / max(1, batch_size))
            a = torch.from_numpy(a_np)
            out_ref = torch.from_numpy(out_np).to(problem.X.dtype)
        else:
            a = frozen_pruning(net, X_ref, batch_size)
            out_ref = predict_outputs(net, X_ref, a)
        values: dict[str, Any] = {
            "epoch": epoch,
            "loss": total / max(1, seen),
            "train_score": problem.score(out_ref, Y_ref),
            "n_active_nodes": int((a > 0).sum()),
            "active_fraction": float((a > 0).float().mean()),
            "a_norm": float(torch.linalg.vector_norm(a)),
            "batch_active_fraction": batch_active,
            "lr": lr,
        }
        if has_val:
            if kernel is not None:
                out_val = torch.from_numpy(np.concatenate(
                    [kernel.outputs(problem.X_val[i : i + EVAL_CHUNK].detach().numpy(), a=a_np)[0]
                     for i in range(0, problem.X_val.shape[0], EVAL_CHUNK)])).to(problem.X.dtype)
            else:
                out_val = predict_outputs(net, problem.X_val, a)
            val_loss = float(problem.loss(out_val, problem.Y_val, problem.W_val))
            values["val_loss"] = val_loss
            values["val_score"] = problem.score(out_val, problem.Y_val)
            monitor = val_loss
        else:
            monitor = values["loss"]
        values["seconds"] = time.perf_counter() - start
        if monitor < best_loss - 1e-12:
            best_loss, best_epoch, waited = monitor, epoch, 0
            if has_val:
                best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        else:
            waited += 1
        improved.append(waited == 0)
        if plan is not None:
            plan(planned_epochs(epoch, best_epoch, improved, max_epochs, patience if has_val else 0))
        if not record(**values):
            break
        if has_val and patience > 0 and waited >= patience:
            break
        if scheduler is not None:
            scheduler.step(monitor)
    if best_state is not None:
        net.load_state_dict(best_state)
    return frozen_pruning(net, X_ref, batch_size), best_epoch


def planned_epochs(epoch: int, best_epoch: int, improved: list[bool], max_epochs: int, patience: int) -> float:
    """How many epochs a run with early stopping is likely to take in all, after ``epoch`` epochs.

    It stops ``patience`` epochs after its best one at the latest, unless the validation loss
    improves again; while it still improves, it is expected to go on for a while in proportion to
    how long it has improved: half the best epoch, scaled by the share of the last five epochs that
    improved and by how much of the patience is left. Without early stopping (``patience`` 0),
    ``max_epochs``. A guess for the progress bar only.
    """
    if patience <= 0:
        return float(max_epochs)
    recent = improved[-5:]
    share = sum(recent) / len(recent) if recent else 1.0
    waited = epoch - best_epoch
    more = 0.5 * best_epoch * share * max(0.0, 1.0 - waited / patience)
    return float(min(max_epochs, max(epoch + 1, best_epoch + patience + more)))


def _torch_epoch(net: LatentTreeNet, problem: Problem, order: torch.Tensor, batch_size: int,
                 opt: torch.optim.Optimizer, stop: Callable[[], bool], n_nodes: int) -> tuple[float, float, float]:
    """One epoch of the autograd path; returns (Σ loss·weight, Σ weight, mean active fraction)."""
    n = order.shape[0]
    total, seen, active_batches = 0.0, 0, []
    for i in range(0, n, batch_size):
        if stop():
            break
        idx = order[i : i + batch_size]
        if idx.numel() < 2 and seen:  # BatchNorm cannot train on one row
            continue
        out, state = net(problem.X[idx])
        w = None if problem.W is None else problem.W[idx]
        loss = problem.loss(out, problem.Y[idx], w) + net.penalty()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        weight = idx.numel() if w is None else float(w.sum())
        total += float(loss.detach()) * weight
        seen += weight
        active_batches.append(float((state["a"].detach() > 0).sum()) / n_nodes)
    return total, seen, float(np.mean(active_batches)) if active_batches else 0.0


def as_tensor(X: np.ndarray, device: str) -> torch.Tensor:
    return torch.tensor(np.asarray(X), dtype=torch.float32, device=device)  # a copy: inputs may be read-only
