"""The batched torch back-end: FISTA for the ℓ1-logistic problems of many decision nodes at once.

Row ``n`` belongs to problem (group) ``g = group[n]``; problem ``g`` is ::

    min_{w_g, b_g}  Σ_{n: group[n]=g} v_n log(1 + exp(−y_n (w_g·x_n + b_g)))  +  λ_g ‖w_g‖₁

with the bias exactly unpenalised. Groups are disjoint sets of rows (typically the nodes of one
depth level, which partition the data); all groups advance together with gathers (``W[group]``)
and ``index_add_`` reductions, without a Python loop over groups. The phases, one function each:

1. **Setup** (:func:`_validated`, :func:`_standardise`, :func:`_starting_point`). Groups with one
   class only, or no row with ``v > 0``, are answered without iterating. The others are solved in
   an exactly equivalent, better conditioned parametrisation: features centred and scaled by the
   group's weighted mean ``μ_g`` and standard deviation ``σ_g`` (``u = σ⊙w``, ``b̃ = b + w·μ``).
   The ℓ1 term becomes a per-coordinate weighted ℓ1 whose prox is still a soft threshold. A
   feature constant within a group gets ``w_j = 0``, the exact optimum, since the bias absorbs
   its effect.
2. **Step size** (:func:`_step_constants`). A per-group step ``1/L_g`` with
   ``L_g = 1.05 · ¼ λ_max([X̃_g 1]ᵀ diag(v_g) [X̃_g 1])`` from a batched power iteration (20
   steps), clipped to ``[¼Σv, ¼ trace]``: both are exact bounds on ``¼ λ_max`` after centring.
3. **One proximal step with backtracking** (:func:`_proximal_step`). A gradient step from the
   extrapolated point, a soft threshold, and the quadratic upper-bound test. When the bound fails,
   ``L_g`` doubles and the step is redone from the same extrapolated point. After every accepted
   step ``L_g`` is multiplied by 0.9: the ¼ curvature bound is loose near a solution, badly so on
   (nearly) separable care sets, and the momentum update uses the step-size ratio.
4. **The monotone safeguard** (:func:`_objective_decreases`, :func:`_advance`). A step that would
   increase the group's objective is rejected and the momentum reset (adaptive restart with
   rejection), so accepted iterates never increase the objective.
5. **Unpacking** (:func:`_original_coordinates`, :func:`_no_worse_than_start`). Back to the
   original coordinates; a final check there makes sure the result is never worse than the warm
   start.

Objective changes are summed from per-row differences computed without cancellation, and the row
margins are updated incrementally (two passes over the data per iteration), so the decrease and
bound tests stay exact well below the rounding error of the objective itself.

A group stops when its composite gradient mapping is small, ``L_g ‖x⁺ − y‖_∞ ≤ tol · Σ_{n∈g} v_n``
(a relative first-order optimality residual: every partial derivative of the loss is bounded by
``Σ v`` in the scaled coordinates), or when a momentum-free step under a valid bound no longer
decreases the objective (its rounding floor). The solver stops when all groups have stopped or
after ``max_iter`` iterations. Rows of finished groups are dropped from the work arrays as they
finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from models.ground.errors import TreevizError

#: Power-iteration steps for the per-group Lipschitz estimates.
_POWER_ITERS = 20

#: After every accepted step a group's ``L`` is multiplied by this factor (a longer step is
#: tried); a failed quadratic bound doubles it again.
_L_SHRINK = 0.9

#: The incrementally updated row margins are recomputed from scratch every this many iterations.
_REFRESH_EVERY = 100

#: Rows of finished groups are dropped when the live rows fall below this share of the work arrays.
_COMPACT_BELOW = 0.6


# ------------------------------------------------------------------------------------------------
# tensor helpers
# ------------------------------------------------------------------------------------------------


def _to_tensor(a: Any, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.detach().to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(a, dtype=np.float64), device=device).to(dtype)


def _softplus(m: torch.Tensor) -> torch.Tensor:
    """``log(1 + exp(m))`` without overflow and without torch's ``threshold`` shortcut."""
    return m.clamp_min(0) + torch.log1p(torch.exp(-m.abs()))


def _softplus_delta(m: torch.Tensor, dm: torch.Tensor) -> torch.Tensor:
    """``softplus(m + dm) − softplus(m)`` with a relative error of a few ulps of the result.

    For ``|dm| ≤ 1`` it is ``log1p(expm1(dm) · σ(m))`` (no cancellation); larger changes are
    differenced directly, which is accurate enough for them.
    """
    stable = torch.log1p(torch.expm1(dm.clamp(-1.0, 1.0)) * torch.sigmoid(m))
    return torch.where(dm.abs() <= 1.0, stable, _softplus(m + dm) - _softplus(m))


def _group_sum(values: torch.Tensor, group: torch.Tensor, G: int) -> torch.Tensor:
    out = torch.zeros((G, *tuple(values.shape[1:])), dtype=values.dtype, device=values.device)
    return out.index_add_(0, group, values)


def _to_numpy(W: torch.Tensor, b: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    return (
        W.detach().to("cpu", torch.float64).numpy().copy(),
        b.detach().to("cpu", torch.float64).numpy().copy(),
    )


# ------------------------------------------------------------------------------------------------
# 1. setup
# ------------------------------------------------------------------------------------------------


@dataclass
class _Batch:
    """The problems as given, validated: rows with ``v > 0``, labels ±1, one λ per group and an
    optional warm start, in original coordinates."""

    X: torch.Tensor  # (N, D)
    y: torch.Tensor  # (N,) ±1
    v: torch.Tensor  # (N,) > 0
    group: torch.Tensor  # (N,) int64
    G: int
    lam: torch.Tensor  # (G,)
    W0: torch.Tensor | None  # (G, D)
    B0: torch.Tensor | None  # (G,)

    def rows(self, keep: torch.Tensor) -> _Batch:
        """The same batch restricted to the rows where ``keep`` holds."""
        return _Batch(self.X[keep], self.y[keep], self.v[keep], self.group[keep], self.G, self.lam,
                      self.W0, self.B0)

    def objective(self, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Per-group objective ``Σ_{n∈g} v_n logloss_n + λ_g ‖W_g‖₁`` (shape ``(G,)``)."""
        margins = (self.X * W[self.group]).sum(1) + b[self.group]
        loss = _group_sum(self.v * _softplus(-self.y * margins), self.group, self.G)
        return loss + self.lam * W.abs().sum(1)


def _validated(X: Any, y: Any, v: Any, group: Any, n_groups: int, lam: Any, w0: Any, b0: Any,
               dev: torch.device, dtype: torch.dtype) -> _Batch:
    """Check the inputs of :func:`l1_logistic_torch` and bring them to ``dev`` and ``dtype``."""
    G = int(n_groups)
    if G < 1:
        raise TreevizError(f"n_groups must be at least 1; got {n_groups}.")
    Xt = _to_tensor(X, dev, dtype)
    if Xt.ndim != 2:
        raise TreevizError(f"X must be a 2-D array (points × features); got shape {tuple(Xt.shape)}.")
    N, D = Xt.shape
    yt = _to_tensor(y, dev, dtype).reshape(-1)
    vt = _to_tensor(v, dev, dtype).reshape(-1)
    gt = torch.as_tensor(group.detach().cpu().numpy() if isinstance(group, torch.Tensor) else group)
    gt = gt.reshape(-1)
    if yt.shape[0] != N or vt.shape[0] != N or gt.shape[0] != N:
        raise TreevizError("X, y, v and group must have the same number of rows.")
    if gt.dtype.is_floating_point and not bool(torch.all(gt == gt.round())):
        raise TreevizError("group must hold integer problem indices.")
    gt = gt.to(torch.int64)
    if N and (int(gt.min()) < 0 or int(gt.max()) >= G):
        raise TreevizError(f"group indices must lie in [0, {G}).")
    gt = gt.to(dev)
    if not (torch.isfinite(Xt).all() and torch.isfinite(yt).all() and torch.isfinite(vt).all()):
        raise TreevizError("X, y and v must be finite (no NaN or infinity).")
    if bool((vt < 0).any()):
        raise TreevizError("The point weights v must be non-negative.")
    lam_t = _to_tensor(lam, dev, dtype).reshape(-1)
    if lam_t.numel() == 1:
        lam_t = lam_t.expand(G).clone()
    if lam_t.shape[0] != G:
        raise TreevizError(f"lam must be a scalar or have one entry per group ({G}).")
    if not (torch.isfinite(lam_t).all() and bool((lam_t >= 0).all())):
        raise TreevizError("The penalty λ must be finite and ≥ 0.")
    if (w0 is None) != (b0 is None):
        raise TreevizError("Give both w0 and b0 for a warm start, or neither.")
    W0 = B0 = None
    if w0 is not None:
        W0 = _to_tensor(w0, dev, dtype)
        B0 = _to_tensor(b0, dev, dtype)
        if tuple(W0.shape) != (G, D) or B0.numel() != G:
            raise TreevizError(f"The warm start must have w0 of shape ({G}, {D}) and b0 of shape ({G},).")
        B0 = B0.reshape(G)
        if not (torch.isfinite(W0).all() and torch.isfinite(B0).all()):
            raise TreevizError("The warm start w0, b0 must be finite.")
    batch = _Batch(Xt, torch.where(yt > 0, 1.0, -1.0).to(dtype), vt, gt, G, lam_t, W0, B0)
    keep = vt > 0
    return batch if bool(keep.all()) else batch.rows(keep)


@dataclass
class _Scaled:
    """The groups being solved, centred and scaled per group (``u = σ⊙w``, ``b̃ = b + w·μ``).

    Products with the (rows × D) data reuse one work buffer: a fresh allocation per product costs
    as much as the product itself on the CPU. The row arrays shrink as groups finish
    (:meth:`keep_rows`); the buffer keeps its size and is sliced.
    """

    X: torch.Tensor  # (rows, D): (x − μ_g) / σ_g, zero in the group's constant columns
    y: torch.Tensor
    v: torch.Tensor
    group: torch.Tensor
    G: int
    mu: torch.Tensor  # (G, D)
    sigma: torch.Tensor  # (G, D), 1 in constant columns
    free: torch.Tensor  # (G, D): 1 where the coordinate may be nonzero
    pen: torch.Tensor  # (G, D): per-coordinate ℓ1 weight λ_g / σ_gj
    mass: torch.Tensor  # (G,): Σ v of the group
    work: torch.Tensor

    def group_sum(self, values: torch.Tensor) -> torch.Tensor:
        return _group_sum(values, self.group, self.G)

    def margins(self, W: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """Row margins ``z_n = W[g_n] · x̃_n + B[g_n]``."""
        buf = self.work[: self.X.shape[0]]
        torch.index_select(W, 0, self.group, out=buf)
        return buf.mul_(self.X).sum(1) + B[self.group]

    def grad_w(self, r: torch.Tensor) -> torch.Tensor:
        """Per-group ``Σ_n r_n x̃_n``: the weight gradient for row derivatives ``r``."""
        buf = self.work[: self.X.shape[0]]
        torch.mul(self.X, r[:, None], out=buf)
        return self.group_sum(buf)

    def keep_rows(self, keep: torch.Tensor) -> None:
        self.X, self.y, self.v, self.group = self.X[keep], self.y[keep], self.v[keep], self.group[keep]


def _standardise(batch: _Batch, solve: torch.Tensor, mass: torch.Tensor) -> _Scaled:
    """Centre and scale every group's rows by its weighted mean and standard deviation."""
    X, v, g, G = batch.X, batch.v, batch.group, batch.G
    mass_safe = torch.where(solve, mass, torch.ones_like(mass))
    mu = _group_sum(v[:, None] * X, g, G) / mass_safe[:, None]
    Xc = X - mu[g]
    sigma = torch.sqrt(_group_sum(v[:, None] * Xc * Xc, g, G) / mass_safe[:, None])
    const = (sigma <= 1e-12 * mu.abs()) | (sigma == 0)  # (G, D) constant within the group
    sigma = torch.where(const, torch.ones_like(sigma), sigma)
    Xh = torch.where(const[g], torch.zeros_like(Xc), Xc / sigma[g])
    del Xc
    return _Scaled(Xh, batch.y, v, g, G, mu, sigma, (~const).to(X.dtype), batch.lam[:, None] / sigma, mass,
                   torch.empty_like(Xh))


def _starting_point(batch: _Batch, solve: torch.Tensor, s_pos: torch.Tensor, s_neg: torch.Tensor,
                    b_default: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The warm start, or ``w = 0`` with the optimal constant bias (the weighted log-odds)."""
    if batch.W0 is not None:
        W = torch.where(solve[:, None], batch.W0, torch.zeros_like(batch.W0))
        B = torch.where(solve, batch.B0, torch.zeros_like(batch.B0))
        return W, B
    W = torch.zeros((batch.G, batch.X.shape[1]), dtype=batch.X.dtype, device=batch.X.device)
    B = torch.where(solve, torch.log(s_pos.clamp_min(1e-300) / s_neg.clamp_min(1e-300)), b_default)
    return W, B


# ------------------------------------------------------------------------------------------------
# 2. step size
# ------------------------------------------------------------------------------------------------


def _step_constants(p: _Scaled, solve: torch.Tensor) -> torch.Tensor:
    """``L_g``: the curvature bound of each group's loss, from a batched power iteration on
    ``[X̃ 1]ᵀ V [X̃ 1]``; 1 for groups not solved."""
    dtype, dev = p.X.dtype, p.X.device
    D = p.X.shape[1]
    gen = torch.Generator(device="cpu").manual_seed(0)
    q = (torch.rand((p.G, D + 1), generator=gen, dtype=torch.float64) + 0.5).to(device=dev, dtype=dtype)
    q[:, :D] *= p.free
    q = q / q.norm(dim=1, keepdim=True)
    est = torch.zeros(p.G, dtype=dtype, device=dev)
    for _ in range(_POWER_ITERS):
        t_rows = p.v * p.margins(q[:, :D], q[:, D])
        Mq = torch.cat([p.grad_w(t_rows), p.group_sum(t_rows)[:, None]], 1)
        est = Mq.norm(dim=1)
        q = Mq / est.clamp_min(torch.finfo(dtype).tiny)[:, None]
    trace_bound = p.mass * (p.free.sum(1) + 1.0)  # λ_max ≤ trace = Σv (#free features + 1)
    L = 0.25 * torch.minimum(torch.maximum(1.05 * est, p.mass), trace_bound)
    return torch.where(solve, L, torch.ones_like(L))


# ------------------------------------------------------------------------------------------------
# 3. one proximal step with backtracking
# ------------------------------------------------------------------------------------------------


@dataclass
class _State:
    """FISTA's state per group: the iterate x = (U, B) with row margins ``zx``, the extrapolated
    point y = (Uy, By) with margins ``zx + pz``, the momentum ``t``, the step constants ``L`` and
    which groups still iterate."""

    U: torch.Tensor
    B: torch.Tensor
    zx: torch.Tensor
    Uy: torch.Tensor
    By: torch.Tensor
    pz: torch.Tensor  # z(y) − z(x)
    t: torch.Tensor
    L: torch.Tensor
    active: torch.Tensor

    @classmethod
    def start(cls, p: _Scaled, U: torch.Tensor, B: torch.Tensor, L: torch.Tensor, solve: torch.Tensor) -> _State:
        zx = p.margins(U, B)
        return cls(U, B, zx, U.clone(), B.clone(), torch.zeros_like(zx),
                   torch.ones(p.G, dtype=U.dtype, device=U.device), L, solve.clone())


@dataclass
class _Trial:
    """One proximal-gradient step from y to x⁺ and whether the quadratic upper bound holds there
    (``fits``; otherwise ``L`` was too small and the step is redone)."""

    U: torch.Tensor  # x⁺
    B: torch.Tensor
    dU: torch.Tensor  # x⁺ − y
    dB: torch.Tensor
    sx: torch.Tensor  # z(x⁺) − z(x) per row
    mx: torch.Tensor  # −y_n z_n(x) per row
    fits: torch.Tensor


def _proximal_step(p: _Scaled, s: _State) -> _Trial:
    """A gradient step from the extrapolated point, the soft threshold, and the bound test.

    Objective changes are accumulated from per-row differences computed stably
    (:func:`_softplus_delta`) instead of differencing two large sums, so the bound test stays
    meaningful far below the rounding error of the objective itself.
    """
    mx = -p.y * s.zx
    my = mx - p.y * s.pz
    r = -p.v * p.y * torch.sigmoid(my)
    gU = p.grad_w(r)
    gB = p.group_sum(r)
    step = 1.0 / s.L
    Ut = s.Uy - gU * step[:, None]
    Un = torch.sign(Ut) * (Ut.abs() - p.pen * step[:, None]).clamp_min(0) * p.free
    Bn = s.By - gB * step
    dU, dB = Un - s.Uy, Bn - s.By
    dz = p.margins(dU, dB)  # z(x+) - z(y)
    dfy_rows = p.v * _softplus_delta(my, -p.y * dz)
    df_y = p.group_sum(dfy_rows)  # f(x+) - f(y)
    lin = (gU * dU).sum(1) + gB * dB
    quad = 0.5 * s.L * ((dU * dU).sum(1) + dB * dB)
    eps = torch.finfo(p.X.dtype).eps
    slack = 64 * eps * (p.group_sum(dfy_rows.abs()) + (gU * dU).abs().sum(1) + (gB * dB).abs() + quad)
    return _Trial(Un, Bn, dU, dB, s.pz + dz, mx, df_y <= lin + quad + slack)


# ------------------------------------------------------------------------------------------------
# 4. the monotone safeguard
# ------------------------------------------------------------------------------------------------


def _objective_decreases(p: _Scaled, s: _State, trial: _Trial) -> torch.Tensor:
    """Per group: does x⁺ not increase the objective F = loss + weighted ℓ1 (from x)?"""
    dF_x = p.group_sum(p.v * _softplus_delta(trial.mx, -p.y * trial.sx)) + (
        p.pen * (trial.U.abs() - s.U.abs())).sum(1)
    return dF_x <= 0


def _advance(p: _Scaled, s: _State, trial: _Trial, decreases: torch.Tensor, tol: float) -> None:
    """Accept, backtrack or restart each active group, update ``L`` and the momentum, and stop the
    groups that converged."""
    fits = trial.fits
    accept = s.active & fits & decreases
    residual = s.L * torch.maximum(trial.dU.abs().amax(1), trial.dB.abs())
    # a momentum-free step under a valid bound can only fail to decrease by rounding: the group is
    # at its rounding floor
    at_floor = fits & ~decreases & (s.t == 1)
    converged = s.active & fits & ((residual <= tol * p.mass) | at_floor)
    grow = s.active & ~fits
    # after an accepted step try a longer one (the ¼-curvature bound is loose near the optimum)
    L_next = torch.where(grow, 2.0 * s.L, torch.where(accept, _L_SHRINK * s.L, s.L))
    t_next = 0.5 * (1.0 + torch.sqrt(1.0 + 4.0 * s.t * s.t * s.L / L_next))
    beta = torch.where(accept, (s.t - 1.0) / t_next, torch.zeros_like(s.t))
    # bound failed: redo the step from the same y with the larger L (keep the momentum);
    # no decrease: restart from x without momentum
    restart = s.active & fits & ~decreases
    keep_y = s.active & ~fits
    acc_rows = accept[p.group]
    U_new = torch.where(accept[:, None], trial.U, s.U)
    B_new = torch.where(accept, trial.B, s.B)
    s.zx = torch.where(acc_rows, s.zx + trial.sx, s.zx)
    s.Uy = torch.where(keep_y[:, None], s.Uy, U_new + beta[:, None] * (U_new - s.U))
    s.By = torch.where(keep_y, s.By, B_new + beta * (B_new - s.B))
    s.pz = torch.where(keep_y[p.group], s.pz,
                       torch.where(acc_rows, beta[p.group] * trial.sx, torch.zeros_like(s.pz)))
    s.U, s.B, s.L = U_new, B_new, L_next
    s.t = torch.where(accept, t_next, torch.where(restart, torch.ones_like(s.t), s.t))
    s.active = s.active & ~converged


def _drop_finished_rows(p: _Scaled, s: _State) -> None:
    """Drop the rows of finished groups once they are a large share of the work."""
    keep = s.active[p.group]
    if int(keep.sum()) < _COMPACT_BELOW * p.X.shape[0]:
        p.keep_rows(keep)
        s.zx, s.pz = s.zx[keep], s.pz[keep]


def _iterate(p: _Scaled, s: _State, tol: float, max_iter: int, on_cpu: bool) -> None:
    """FISTA until every group has stopped or ``max_iter`` iterations."""
    for it in range(int(max_iter)):
        if it % _REFRESH_EVERY == _REFRESH_EVERY - 1:
            s.zx = p.margins(s.U, s.B)
        trial = _proximal_step(p, s)
        _advance(p, s, trial, _objective_decreases(p, s, trial), tol)
        if it % 5 == 4 or on_cpu:  # reading a flag back from a GPU waits for it: every 5 steps there
            if not bool(s.active.any()):
                break
            if it % 10 == 9:
                _drop_finished_rows(p, s)


# ------------------------------------------------------------------------------------------------
# 5. unpacking
# ------------------------------------------------------------------------------------------------


def _original_coordinates(p: _Scaled, s: _State) -> tuple[torch.Tensor, torch.Tensor]:
    W = s.U / p.sigma * p.free
    return W, s.B - (W * p.mu).sum(1)


def _no_worse_than_start(batch: _Batch, W: torch.Tensor, B: torch.Tensor, W_start: torch.Tensor,
                         B_start: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group, the fitted point or the starting point, whichever has the lower objective."""
    better = batch.objective(W, B) <= batch.objective(W_start, B_start)
    return torch.where(better[:, None], W, W_start), torch.where(better, B, B_start)


def l1_logistic_torch(
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    v: np.ndarray | torch.Tensor,
    group: np.ndarray | torch.Tensor,
    n_groups: int,
    lam: float | np.ndarray | torch.Tensor,
    *,
    w0: np.ndarray | torch.Tensor | None = None,
    b0: np.ndarray | torch.Tensor | None = None,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float64,
    tol: float = 1e-6,
    max_iter: int = 2000,
) -> tuple[np.ndarray, np.ndarray]:
    """Solve many independent decision-node problems at once with batched FISTA.

    Problem ``g`` is the ℓ1-logistic problem of the rows with ``group[n] = g``, bias unpenalised;
    the method is described in the module docstring.

    Special groups (not iterated): no row with ``v > 0`` → ``w = 0, b = 0`` (the caller handles
    dead nodes); all labels of one sign → ``w = 0, b = ±1`` toward that class, as in
    :func:`models.tao.solvers.liblinear.l1_logistic_sklearn` (the warm start is ignored for them).

    Parameters
    ----------
    X : array or tensor of shape (N, D)
    y : array or tensor of shape (N,)
        ``> 0`` means right (+1), anything else left (−1).
    v : array or tensor of shape (N,)
        Non-negative weights; rows with ``v = 0`` are ignored.
    group : int array or tensor of shape (N,)
        Problem index of each row, in ``[0, n_groups)``.
    n_groups : int
        Number of problems ``G``.
    lam : float or array of shape (G,)
        λ ≥ 0 per problem (sum form); a scalar applies to all.
    w0, b0 : arrays of shape (G, D) and (G,), optional
        Warm start (both or neither). Default: ``w = 0`` and the optimal constant bias.
    device : str or torch.device, default "cpu"
    dtype : torch.dtype, default torch.float64
        float32 works (e.g. on a GPU) but cannot reach ``tol`` much below 1e-5.
    tol : float, default 1e-6
        Relative optimality tolerance (see the module docstring).
    max_iter : int, default 2000

    Returns
    -------
    W : ndarray of shape (G, D), float64
    b : ndarray of shape (G,), float64
        Group ``g`` sends ``x`` right iff ``W[g]·x + b[g] > 0``.
    """
    dev = torch.device(device)
    batch = _validated(X, y, v, group, n_groups, lam, w0, b0, dev, dtype)
    G, D = batch.G, batch.X.shape[1]
    s_pos = _group_sum(batch.v * (batch.y > 0), batch.group, G)
    s_neg = _group_sum(batch.v * (batch.y < 0), batch.group, G)
    W_out = torch.zeros((G, D), dtype=dtype, device=dev)
    b_out = torch.zeros(G, dtype=dtype, device=dev)
    b_out[(s_pos > 0) & (s_neg == 0)] = 1.0
    b_out[(s_neg > 0) & (s_pos == 0)] = -1.0
    solve = (s_pos > 0) & (s_neg > 0)
    if not bool(solve.any()):
        return _to_numpy(W_out, b_out)
    if D == 0:  # bias only: exact unpenalised optimum
        b_out = torch.where(solve, torch.log(s_pos / s_neg.clamp_min(1e-300)), b_out)
        return _to_numpy(W_out, b_out)

    solved = batch.rows(solve[batch.group])
    p = _standardise(solved, solve, s_pos + s_neg)
    W_start, B_start = _starting_point(batch, solve, s_pos, s_neg, b_out)
    U = W_start * p.sigma * p.free
    B = B_start + (W_start * p.mu).sum(1)
    state = _State.start(p, U, B, _step_constants(p, solve), solve)
    _iterate(p, state, tol, max_iter, on_cpu=dev.type == "cpu")
    W_fit, B_fit = _original_coordinates(p, state)
    W_sol, B_sol = _no_worse_than_start(solved, W_fit, B_fit, W_start, B_start)
    return _to_numpy(torch.where(solve[:, None], W_sol, W_out), torch.where(solve, B_sol, b_out))
