"""Skinny Trees training with each optimiser step fused into a few tensor operations, over a batch
of trials at once.

:func:`models.skinny.train.fit_ensemble` is the plain path: autograd through
:class:`~models.skinny.ensemble.SoftTreeEnsemble`, one step after another. At the authors' toy size
(breast_cancer, 20 trees of depth 4, batch 16) a step is microseconds of arithmetic, and autograd's
bookkeeping and Python's per-operation cost dominate. This module trains the same model with the
same steps, but

* the gradients are written out by hand (tested against autograd in float64), with the learning
  rate folded into the loss gradient so that every parameter update is one fused
  ``baddbmm_`` (gradient and step together, the ridge as one rescaling);
* every intermediate lives in a buffer allocated once per fit, and every view of it (one per tree
  level) is made once, so a step is a fixed list of ``out=`` operations;
* the biases ride in the kernel as an extra row against a column of ones appended to X, so the
  split values and the bias gradient come out of the same matrix products;
* the feature count, the validation pass and the history record run once per epoch; nothing in a
  step reads a number back to the host (the λ0 thresholds of an epoch's steps go to the device in
  one transfer), so on a GPU the steps queue without waiting;
* a leading *trial* dimension T stacks independent models (their own seeds, data orders, λ0, λ2,
  ramp rates and learning rates, same shapes and batch size): one batched program trains every
  trial of a search, and T = 1 is a single fit.

Layout. Inside the trainer the kernel's columns are reordered level by level: the nodes of level ℓ
form one block of m·2^ℓ columns, node position major and tree minor, with node positions in
bit-reversed order (the node reached by decisions b_0 … b_(ℓ−1), 0 = left, sits at position
Σ b_k 2^k). Then the reach probabilities of level ℓ+1 are simply [P_ℓ·S_ℓ, P_ℓ − P_ℓ·S_ℓ]: two
contiguous halves, written by two operations per level without interleaving. Leaves are ordered
the same way. :func:`pack` and :func:`unpack` convert from and to the ensemble's breadth-first
layout, so results are the plain path's model (same numbers up to float rounding).

Backward. With A the reach probability of a node, S its left probability and V(node) the expected
value of ∂loss/∂P(leaf) over the leaves below it given that the node is reached, V(leaf) =
∂loss/∂P(leaf) = g·o_leaf, V = V_R + S·(V_L − V_R) going up, and ∂loss/∂z = A·S'(z)·(V_L − V_R).
For the sigmoid A·S' = A·S·(1 − S) = S·P_R, where P_R = A·(1 − S) is the right child's reach
probability, already in the forward buffers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from models.denormals import flush_denormals
from models.ground.errors import TreevizError
from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.train import Schedule


# ------------------------------------------------------------------------------------------ layout
def _bitrev(j: int, bits: int) -> int:
    return int(f"{j:0{bits}b}"[::-1], 2) if bits else 0


def column_order(n_trees: int, depth: int) -> np.ndarray:
    """``order[c]`` = the ensemble's kernel column (tree·|I| + breadth-first node) at the trainer's column c."""
    n_nodes = 2**depth - 1
    cols = []
    for level in range(depth):
        for j in range(2**level):
            node = 2**level - 1 + _bitrev(j, level)
            cols.extend(t * n_nodes + node for t in range(n_trees))
    return np.asarray(cols, dtype=np.int64)


def leaf_order(n_trees: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(tree, leaf) of the ensemble's leaves at each of the trainer's leaf rows."""
    js = np.repeat(np.arange(2**depth), n_trees)
    return np.tile(np.arange(n_trees), 2**depth), np.asarray([_bitrev(int(j), depth) for j in js], dtype=np.int64)


def pack(kernels: Sequence[torch.Tensor], biases: Sequence[torch.Tensor], leaves: Sequence[torch.Tensor],
         n_trees: int, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack T ensembles into the trainer's layout: K (T, p+1, N) with the biases as the last row,
    and LV (T, 2^d·m, c)."""
    cols = torch.from_numpy(column_order(n_trees, depth)).to(kernels[0].device)
    trees, leaf = (torch.from_numpy(a).to(kernels[0].device) for a in leaf_order(n_trees, depth))
    K = torch.stack([torch.cat((k, b[None]), 0)[:, cols] for k, b in zip(kernels, biases)])
    LV = torch.stack([o[trees, leaf] for o in leaves])
    return K.contiguous(), LV.contiguous()


def unpack(K: torch.Tensor, LV: torch.Tensor, n_trees: int, depth: int) -> list[tuple[torch.Tensor, ...]]:
    """The inverse of :func:`pack`: per trial (kernel (p, N), bias (N,), leaves (m, 2^d, c))."""
    cols = torch.from_numpy(column_order(n_trees, depth)).to(K.device)
    trees, leaf = (torch.from_numpy(a).to(K.device) for a in leaf_order(n_trees, depth))
    out = []
    for t in range(K.shape[0]):
        full = torch.empty_like(K[t])
        full[:, cols] = K[t]
        leaves = torch.empty((n_trees, 2**depth, LV.shape[2]), dtype=LV.dtype, device=LV.device)
        leaves[trees, leaf] = LV[t]
        out.append((full[:-1].clone(), full[-1].clone(), leaves))
    return out


# ------------------------------------------------------------------------------------------ buffers
class _Workspace:
    """The level buffers of one step, for one batch size, and a view per level of each (made once)."""

    def __init__(self, T: int, B: int, m: int, depth: int, c: int, dtype: torch.dtype, device: torch.device,
                 smooth: bool) -> None:
        N, L = m * (2**depth - 1), m * 2**depth
        new = lambda *shape: torch.empty(shape, dtype=dtype, device=device)  # noqa: E731
        self.S = new(T, B, N)  # split values, then left probabilities (in place)
        self.dZ = new(T, B, N)
        self.SP = new(T, B, N) if smooth else None  # S'(z) for the smooth-step
        self.gT = new(T, c, B)  # η·∂loss/∂outputs, transposed (c rows: the leaf products are then wide)
        self.V_leaf = new(T, B, L)
        P = [torch.ones((T, B, 1, m), dtype=dtype, device=device)] + \
            [new(T, B, 2 ** (level + 1), m) for level in range(depth)]
        V = [new(T, B, 2**level, m) for level in range(depth)] + [self.V_leaf.view(T, B, 2**depth, m)]
        self.P_leaf = P[depth].view(T, B, L)
        self.P_leaf_t = self.P_leaf.transpose(1, 2)
        # per level ℓ: the reach probabilities P_ℓ, the next level's halves, S_ℓ, ∂z_ℓ, V's halves
        self.levels = []
        off = 0
        for level in range(depth):
            h, width = 2**level, m * 2**level
            cols = slice(off, off + width)
            self.levels.append((
                P[level], P[level + 1][:, :, :h], P[level + 1][:, :, h:],
                self.S[:, :, cols].view(T, B, h, m), self.dZ[:, :, cols].view(T, B, h, m),
                None if self.SP is None else self.SP[:, :, cols].view(T, B, h, m),
                V[level + 1][:, :, :h], V[level + 1][:, :, h:], V[level] if level else None, new(T, B, h, m)))
            off += width
        self.backward_levels = self.levels[::-1]


@dataclass
class TrialData:
    """Training tensors on the device: X with a column of ones appended, targets as (n, c) rows
    (one-hot for classes), optional row weights, optional validation set (X with ones)."""

    X: torch.Tensor
    Y: torch.Tensor
    W: torch.Tensor | None = None
    X_val: torch.Tensor | None = None
    Y_val: torch.Tensor | None = None


def augment(X: torch.Tensor) -> torch.Tensor:
    """X with a column of ones appended (the biases are the kernel's last row)."""
    return torch.cat((X, X.new_ones(X.shape[0], 1)), 1)


def trial_data(X: np.ndarray, Y: np.ndarray, W: np.ndarray | None, eval_set: tuple[np.ndarray, np.ndarray] | None,
               n_outputs: int, device: str) -> TrialData:
    """The training tensors on ``device`` in float32: X with its ones column, targets as rows
    (one-hot for class indices), validation targets as given (class indices or values)."""
    def as_tensor(a: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.tensor(np.asarray(a), dtype=dtype, device=device)  # a copy: inputs may be read-only

    classes = Y.dtype.kind in "iu"
    if classes:
        targets = torch.nn.functional.one_hot(as_tensor(Y, torch.long), n_outputs).to(torch.float32)
    else:
        targets = as_tensor(Y)
    data = TrialData(X=augment(as_tensor(X)), Y=targets, W=None if W is None else as_tensor(W))
    if eval_set is not None and len(eval_set[0]):
        data.X_val = augment(as_tensor(eval_set[0]))
        data.Y_val = as_tensor(eval_set[1], torch.long if classes else torch.float32)
    return data


@dataclass
class Trials:
    """T models of one shape being trained together (the trainer's layout) and their settings."""

    K: torch.Tensor
    LV: torch.Tensor
    n_trees: int
    depth: int
    activation: str
    width: float
    schedules: list[Schedule]
    learning_rates: list[float]
    generators: list[torch.Generator]
    step: int = 0
    errors: list[str | None] = field(default_factory=list)

    @classmethod
    def from_models(cls, models: Sequence[SoftTreeEnsemble], schedules: Sequence[Schedule],
                    learning_rates: Sequence[float], generators: Sequence[torch.Generator]) -> Trials:
        first = models[0]
        with torch.no_grad():
            K, LV = pack([mo.kernel for mo in models], [mo.bias for mo in models], [mo.leaves for mo in models],
                        first.n_trees, first.depth)
        return cls(K, LV, first.n_trees, first.depth, first.activation, first.width, list(schedules),
                   [float(lr) for lr in learning_rates], list(generators), errors=[None] * len(models))

    def write_back(self, models: Sequence[SoftTreeEnsemble]) -> None:
        """Copy the trained parameters into ``models`` (the ensemble's own layout)."""
        with torch.no_grad():
            for model, (k, b, o) in zip(models, unpack(self.K, self.LV, self.n_trees, self.depth)):
                model.kernel.copy_(k)
                model.bias.copy_(b)
                model.leaves.copy_(o)


# ------------------------------------------------------------------------------------------ forward
def _activate(z: torch.Tensor, activation: str, width: float, sp: torch.Tensor | None) -> None:
    """z → S(z) in place; for the smooth-step also S'(z) into ``sp``."""
    if activation == "sigmoid":
        z.sigmoid_()
        return
    if activation != "smoothstep":
        raise ValueError(f"activation must be 'sigmoid' or 'smoothstep', got {activation!r}")
    u = z.mul_(1.0 / width).add_(0.5).clamp_(0.0, 1.0)
    if sp is not None:  # 6u(1 − u)/width
        torch.mul(u, 1.0 - u, out=sp).mul_(6.0 / width)
    s = u * u * (3.0 - 2.0 * u)
    z.copy_(s)


def outputs(trials: Trials, X: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """(T, n, c) the trials' outputs on X (with its ones column), without gradients, in blocks of
    ``chunk`` rows (small enough that a block's level buffers stay in cache)."""
    T, m, depth = trials.K.shape[0], trials.n_trees, trials.depth
    out = torch.empty((T, X.shape[0], trials.LV.shape[2]), dtype=trials.K.dtype, device=trials.K.device)
    with torch.no_grad():
        for start in range(0, X.shape[0], chunk):
            x = X[start:start + chunk]
            B = x.shape[0]
            S = torch.matmul(x, trials.K)  # (T, B, N)
            _activate(S, trials.activation, trials.width, None)
            P = S.new_ones(T, B, 1, m)
            off = 0
            for level in range(depth):
                h = 2**level
                nxt = S.new_empty(T, B, 2 * h, m)
                torch.mul(P, S[:, :, off:off + m * h].view(T, B, h, m), out=nxt[:, :, :h])
                torch.sub(P, nxt[:, :, :h], out=nxt[:, :, h:])
                P = nxt
                off += m * h
            torch.bmm(P.view(T, B, -1), trials.LV, out=out[:, start:start + B])
    return out


# ------------------------------------------------------------------------------------------ training
def _batch_bounds(n: int, B: int) -> list[tuple[int, int]]:
    return [(start, min(n, start + B)) for start in range(0, n, B)]


@flush_denormals
def train(trials: Trials, data: TrialData, *, task: str, batch_size: int, max_epochs: int,
          record: Callable[[int, dict[str, Any]], bool],
          validation: Any = None,
          stop: Callable[[], bool] = lambda: False) -> int:
    """Train every trial in place for ``max_epochs`` epochs; returns the step counter.

    ``task`` is ``"classification"`` (softmax cross-entropy on one-hot ``data.Y``) or
    ``"regression"`` (squared error averaged over the outputs). The loss of a batch is its mean
    (weighted mean with ``data.W``). ``record(trial, numbers)`` gets each trial's epoch record and
    returns False to stop training (every trial). ``stop()`` is asked before every step.
    ``validation(outputs, targets)`` turns one trial's validation outputs into named numbers (one
    function for every trial, or a sequence of one per trial).
    A trial whose loss stops being finite keeps training (its numbers mean nothing) with its
    error in ``trials.errors``; with one trial the error is raised.
    """
    K, LV = trials.K, trials.LV
    T, p1, _ = K.shape
    p, c, m, depth = p1 - 1, LV.shape[2], trials.n_trees, trials.depth
    n, dtype, device = data.X.shape[0], K.dtype, K.device
    B = min(int(batch_size), n)
    smooth = trials.activation == "smoothstep"
    classify = task == "classification"
    schedules, lrs = trials.schedules, trials.learning_rates
    penalty, min_keep = schedules[0].penalty, min(int(schedules[0].min_keep), p)
    new = lambda *shape: torch.empty(shape, dtype=dtype, device=device)  # noqa: E731
    as_t = lambda values: torch.tensor(values, dtype=dtype, device=device)  # noqa: E731
    lr = as_t(lrs).view(T, 1, 1)
    ridge = as_t([s.ridge for s in schedules])
    use_ridge = bool((ridge > 0).any())
    decay = torch.ones((T, p1, 1), dtype=dtype, device=device)  # the ridge's shrinkage, not on the bias row
    decay[:, :p, 0] -= 2.0 * lr.view(T, 1) * ridge.view(T, 1)
    # The leaf values are used transposed, (T, c, leaves): with c (often 2) as the short side, the
    # products with the (B, leaves) reach probabilities run as wide matrix products, several times
    # faster than with c as their inner or outer dimension.
    Kp, LVt = K[:, :p, :], LV.transpose(1, 2).contiguous()
    weighted = data.W is not None

    # One table of what a step reads (X with ones, targets, weights), gathered in the epoch's
    # order once per epoch; every step's inputs are fixed views of it, made once here.
    table = torch.cat([data.X, data.Y.to(dtype)] + ([data.W.to(dtype)[:, None]] if weighted else []), 1)
    rows = new(T, n, table.shape[1])
    F = new(T, c, n)  # the outputs of the epoch's steps (transposed): the epoch's loss is computed from them once
    Omega = new(T, 1, n) if weighted else None  # each row's share of its batch's mean, times η
    bounds = _batch_bounds(n, B)
    gscale = 1.0 if classify else 2.0 / c  # ∂loss/∂f = gscale·(softmax − one-hot) or gscale·(f − y)
    share = None if weighted else as_t([1.0 / (hi - lo) for lo, hi in bounds for _ in range(hi - lo)])
    n_steps = len(bounds)
    Thr = new(n_steps, T, 1, 1)
    Norms = new(n_steps + 1, T, p, 1)  # the kept rows' norms after each step (row 0: before the epoch)
    mask = new(T, p, 1)
    work = {b: _Workspace(T, b, m, depth, c, dtype, device, smooth) for b in {hi - lo for lo, hi in bounds}}
    steps = []
    for i, (lo, hi) in enumerate(bounds):
        x = rows[:, lo:hi, :p1]
        coef = Omega[:, :, lo:hi] if weighted else lr * (gscale / (hi - lo))  # the mean's 1/B and the step η
        steps.append((work[hi - lo], x, x.transpose(1, 2), rows[:, lo:hi, p1:p1 + c].transpose(1, 2), F[:, :, lo:hi],
                      coef, Thr[i],
                      Norms[i + 1]))
    tau = None
    if penalty != "l0":
        tau = as_t([s.threshold_at(0, lr_) for s, lr_ in zip(schedules, lrs)]).view(T, 1, 1)
    zero = torch.zeros((), dtype=dtype, device=device)
    step = trials.step
    for epoch in range(1, int(max_epochs) + 1):
        start = time.perf_counter()
        _gather_epoch(trials.generators, table, rows, bounds, Omega, lr * gscale)
        if penalty == "l0":
            Thr.copy_(as_t([[s.threshold_at(step + i, lr_) for s, lr_ in zip(schedules, lrs)]
                            for i in range(1, n_steps + 1)]).view(n_steps, T, 1, 1))
        if use_ridge:
            torch.linalg.vector_norm(Kp, dim=2, keepdim=True, out=Norms[0])
        for ws, x, xt, y, f, coef, thr, norms in steps:
            if stop():
                trials.step = step
                LV.copy_(LVt.transpose(1, 2))
                return step
            # forward: split values, left probabilities, reach probabilities level by level, outputs
            torch.bmm(x, K, out=ws.S)
            _activate(ws.S, trials.activation, trials.width, ws.SP)
            for P, left, right, s_, *_ in ws.levels:
                torch.mul(P, s_, out=left)
                torch.sub(P, left, out=right)
            torch.bmm(LVt, ws.P_leaf_t, out=f)  # (T, c, B)
            # η·∂loss/∂outputs (softmax − one-hot, or 2(f − y)/c), over the batch's mean
            if classify:
                torch.sub(torch.softmax(f, 1), y, out=ws.gT)
            else:
                torch.sub(f, y, out=ws.gT)
            ws.gT.mul_(coef)  # η·gscale/B or η·ω: every update below is then one fused step
            # backward: the leaves (V at the leaves uses the leaves before their step), then the levels
            torch.bmm(ws.gT.transpose(1, 2), LVt, out=ws.V_leaf)
            LVt.baddbmm_(ws.gT, ws.P_leaf, alpha=-1.0)
            for P, _, right, s_, dz, sp, VL, VR, V, D in ws.backward_levels:
                torch.sub(VL, VR, out=D)
                if smooth:
                    torch.mul(P, sp, out=dz)
                else:
                    torch.mul(s_, right, out=dz)
                dz.mul_(D)
                if V is not None:  # V = V_R + S·(V_L − V_R), for the level above
                    torch.addcmul(VR, s_, D, out=V)
            if use_ridge:
                K.mul_(decay)
            K.baddbmm_(xt, ws.dZ, alpha=-1.0)
            step += 1
            row_norms = _group_prox(Kp, penalty, min_keep, thr, tau, mask, zero)
            if use_ridge:
                torch.mul(row_norms, mask, out=norms)
        # once per epoch: the loss, the feature counts, validation, the records
        LV.copy_(LVt.transpose(1, 2))
        targets = rows[:, :, p1:p1 + c].transpose(1, 2)
        shares = Omega[:, 0, :] / (lr.view(T, 1) * gscale) if weighted else share
        mean_loss = _epoch_loss(F, targets, shares, classify, Norms[:n_steps], ridge if use_ridge else None)
        counts = (torch.linalg.vector_norm(Kp, dim=2) > 0).sum(1).tolist()
        val = outputs(trials, data.X_val) if data.X_val is not None and data.X_val.shape[0] else None
        if not _record_epoch(trials, data, epoch, step, mean_loss, counts, val, time.perf_counter() - start,
                             record, validation):
            break
    trials.step = step
    return step


def _gather_epoch(generators: Sequence[torch.Generator], table: torch.Tensor, rows: torch.Tensor,
                  bounds: Sequence[tuple[int, int]], Omega: torch.Tensor | None, scale: torch.Tensor) -> None:
    """The epoch's inputs, in place: ``table``'s rows in each trial's fresh order (drawn from its
    generator) into ``rows`` (T, n, columns); with row weights (``Omega`` given, the weight in the
    last column), each row's ω = w / (the sum of w over its batch), times ``scale`` (η·gscale)."""
    T, n = rows.shape[0], rows.shape[1]
    orders = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(rows.device)
    torch.index_select(table, 0, orders.view(-1), out=rows.view(T * n, -1))
    if Omega is not None:
        w = rows[:, :, -1:]
        for lo, hi in bounds:
            torch.mul(w[:, lo:hi], scale / w[:, lo:hi].sum(1, keepdim=True), out=Omega[:, :, lo:hi].transpose(1, 2))


def _group_prox(Kp: torch.Tensor, penalty: str, min_keep: int, thr: torch.Tensor, tau: torch.Tensor | None,
                mask: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """The group prox on the feature rows of the kernel ``Kp`` (T, p, m·(2^d − 1)), in place: ℓ0 keeps
    the rows whose norm clears ``thr`` (hard threshold), the group lasso shrinks them by ``tau``;
    either keeps at least ``min_keep`` nonzero rows. The kept fraction of each row goes into ``mask``
    (T, p, 1); returns the rows' norms before the prox."""
    row_norms = torch.linalg.vector_norm(Kp, dim=2, keepdim=True)  # (T, p, 1)
    if penalty == "l0":
        if min_keep > 0:  # keep the min_keep largest nonzero rows when fewer clear the threshold
            kth = row_norms.amax(1, keepdim=True) if min_keep == 1 else \
                torch.topk(row_norms, min_keep, dim=1).values[:, min_keep - 1:min_keep]
            torch.gt(row_norms, torch.minimum(thr, torch.nextafter(kth, zero)), out=mask)
        else:
            torch.gt(row_norms, thr, out=mask)
    else:
        above = row_norms > tau
        factor = torch.where(above, 1.0 - tau / torch.where(above, row_norms, 1.0), 0.0)
        if min_keep > 0:
            kth = torch.topk(row_norms, min_keep, dim=1).values[:, min_keep - 1:min_keep]
            factor = torch.where(~above & (row_norms >= kth) & (row_norms > 0), 1.0, factor)
        mask.copy_(factor)
    Kp.mul_(mask)
    return row_norms


def _epoch_loss(F: torch.Tensor, targets: torch.Tensor, shares: torch.Tensor, classify: bool,
                norms: torch.Tensor, ridge: torch.Tensor | None) -> list[float]:
    """Each trial's mean training loss over the epoch's steps, from the outputs ``F`` (T, c, n) the
    steps computed: the per-row loss times the row's share of its batch's mean (``shares``), summed
    over the rows, plus ridge·‖K‖² before each step (``norms``: the kept rows' norms after the
    previous step, one slice per step) when ``ridge`` is given; over the number of steps."""
    if classify:
        per_row = -(torch.log_softmax(F, 1) * targets).sum(1)
    else:
        per_row = (F - targets).pow(2).mean(1)
    per_row = per_row * shares
    total = per_row.sum(1)
    if ridge is not None:
        total = total + ridge * norms.square().sum((2, 3)).sum(0)
    return (total / norms.shape[0]).tolist()


def _record_epoch(trials: Trials, data: TrialData, epoch: int, step: int, mean_loss: list[float],
                  counts: list[int], val: torch.Tensor | None, elapsed: float,
                  record: Callable[[int, dict[str, Any]], bool], validation: Any) -> bool:
    """Each trial's epoch record, given to ``record``; False when any record asked to stop. A trial
    whose loss is not finite gets its error in ``trials.errors`` (raised when it is the only one)."""
    T, schedules, lrs = len(mean_loss), trials.schedules, trials.learning_rates
    go = True
    for t in range(T):
        if not math.isfinite(mean_loss[t]):
            message = (f"Training diverged at epoch {epoch} (the loss is not a finite number); lower the "
                       f"learning rate (now {lrs[t]:g}).")
            if T == 1:
                trials.step = step
                raise TreevizError(message)
            trials.errors[t] = trials.errors[t] or message
        numbers: dict[str, Any] = {"epoch": epoch, "loss": mean_loss[t], "n_features": int(counts[t]),
                                   "step": step, "lambda0": schedules[t].lambda0_at(step),
                                   "threshold": schedules[t].threshold_at(step, lrs[t])}
        if val is not None and validation is not None:
            check = validation[t] if isinstance(validation, Sequence) else validation
            numbers.update(check(val[t], data.Y_val))
        numbers["epoch_s"] = elapsed if T == 1 else elapsed / T
        go = record(t, numbers) and go
    return go
