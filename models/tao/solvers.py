"""Node solvers of TAO (Tree Alternating Optimization): the reduced problem at a decision node.

Spec: ``tao.md`` §2.2 (reduced problem), §3.4 (solver settings, λ ↔ C), §3.5 (special cases),
§14 pitfalls 5–8. Fixing every node but one decision node turns the tree objective into a
weighted binary problem over the node's care points: label ``y_n = +1`` (the right child is the
better one) or ``-1`` (left), weight ``v_n > 0``. The oblique node fits the convex surrogate, in
**sum form** (λ is on an absolute scale; it is *not* divided by the number of points)::

    min_{w, b}  Σ_n v_n · log(1 + exp(−y_n (w·x_n + b)))  +  λ ‖w‖₁          (b is NOT penalised)

and an axis-aligned node minimises the weighted 0/1 loss exactly by enumeration.

**Routing convention (the project's one rule, ``DESIGN.md`` §3):** a node sends ``x`` RIGHT iff
``w·x + b > 0`` (strictly), left otherwise. (``tao.md`` §1 writes ``≥``; the two agree on every
training point for the thresholds produced here, see :func:`best_axis_split`.)

Back-ends:

* :func:`l1_logistic_sklearn` — scikit-learn's liblinear, as in the thesis. liblinear penalises
  the bias; with ``intercept_scaling = s`` the penalty on ``b`` is ``λ|b|/s`` (an approximation
  of the unpenalised bias that ``s = 100`` makes harmless in practice, §3.4).
* :func:`l1_logistic_torch` — our own batched FISTA that solves the problems of many nodes (for
  example one depth level of the tree) in one call, on CPU or GPU, with the bias exactly
  unpenalised and optional warm starts.
* :func:`best_axis_split` / :func:`axis_split_to_hyperplane` — exact axis-aligned splits.

Degenerate care sets (§3.5) never reach a solver: one class only → ``w = 0, b = ±1`` toward that
class; no care points → ``w = 0``.

Everything is float64 unless the torch solver is asked for another dtype.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from treeviz.errors import TreevizError

__all__ = [
    "LAMBDA_FLOOR_REL",
    "axis_split_to_hyperplane",
    "best_axis_split",
    "l1_logistic_sklearn",
    "l1_logistic_torch",
    "logistic_objective",
    "weighted_01_loss",
]

#: liblinear needs a finite ``C = 1/λ``. A request with ``λ = 0`` (or any ``λ`` below this floor)
#: is solved with ``λ_eff = LAMBDA_FLOOR_REL · Σ v``: relative to the loss (at most ``Σ v · log 2``
#: at the start) the penalty is then negligible, and the problem stays bounded on separable data.
LAMBDA_FLOOR_REL = 1e-12

#: Diagnostics of the last :func:`l1_logistic_torch` call that iterated (iterations, groups still
#: active at the end, final step constants); for tests and benchmarks only.
_LAST_RUN: dict[str, Any] = {}

#: Power-iteration steps for the per-group Lipschitz estimates of :func:`l1_logistic_torch`.
_POWER_ITERS = 20

#: After every accepted FISTA step a group's ``L`` is multiplied by this factor (a longer step is
#: tried); a failed quadratic bound doubles it again.
_L_SHRINK = 0.9


# ------------------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------------------


def _check_numpy_problem(X: Any, y: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``(X, y, v)`` and return float64 copies with ``y`` mapped to ±1."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise TreevizError(f"X must be a 2-D array (points × features); got shape {X.shape}.")
    n = X.shape[0]
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if y.shape[0] != n or v.shape[0] != n:
        raise TreevizError(
            f"X has {n} rows but y has {y.shape[0]} and v has {v.shape[0]} entries; they must match."
        )
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y)) and np.all(np.isfinite(v))):
        raise TreevizError("X, y and v must be finite (no NaN or infinity).")
    if np.any(v < 0):
        raise TreevizError("The point weights v must be non-negative.")
    return X, np.where(y > 0, 1.0, -1.0), v


def _check_lam_scalar(lam: float) -> float:
    lam = float(lam)
    if not math.isfinite(lam) or lam < 0:
        raise TreevizError(f"The penalty λ must be a finite number ≥ 0; got {lam}.")
    return lam


# ------------------------------------------------------------------------------------------------
# objective
# ------------------------------------------------------------------------------------------------


def logistic_objective(
    X: np.ndarray, y: np.ndarray, v: np.ndarray, w: np.ndarray, b: float, lam: float
) -> float:
    """Sum-form ℓ1-logistic objective of a decision node.

    Parameters
    ----------
    X : array of shape (n, D)
        Care points.
    y : array of shape (n,)
        Pseudolabels; ``> 0`` means right (+1), anything else left (−1).
    v : array of shape (n,)
        Non-negative point weights.
    w : array of shape (D,)
        Hyperplane weights.
    b : float
        Bias (not penalised).
    lam : float
        ℓ1 penalty λ ≥ 0 on ``w``, sum form.

    Returns
    -------
    float
        ``Σ v_n log(1 + exp(−y_n (w·x_n + b))) + λ‖w‖₁``, computed stably with ``np.logaddexp``.
    """
    X, y, v = _check_numpy_problem(X, y, v)
    w = np.asarray(w, dtype=np.float64).reshape(-1)
    if w.shape[0] != X.shape[1]:
        raise TreevizError(f"w has {w.shape[0]} entries but X has {X.shape[1]} features.")
    z = X @ w + float(b)
    return float(np.sum(v * np.logaddexp(0.0, -y * z)) + float(lam) * np.sum(np.abs(w)))


def weighted_01_loss(X: np.ndarray, y: np.ndarray, v: np.ndarray, w: np.ndarray, b: float) -> float:
    """Weighted 0/1 loss ``Σ v_n · I(route_n ≠ y_n)`` of the hyperplane ``(w, b)``.

    A point is routed right (+1) iff ``w·x + b > 0`` (the project convention), else left (−1).

    Parameters
    ----------
    X : array of shape (n, D)
    y : array of shape (n,)
        ``> 0`` means right.
    v : array of shape (n,)
    w : array of shape (D,)
    b : float

    Returns
    -------
    float
    """
    X, y, v = _check_numpy_problem(X, y, v)
    pred = np.where(X @ np.asarray(w, dtype=np.float64) + float(b) > 0, 1.0, -1.0)
    return float(np.sum(v * (pred != y)))


# ------------------------------------------------------------------------------------------------
# scikit-learn / liblinear back-end
# ------------------------------------------------------------------------------------------------


def l1_logistic_sklearn(
    X: np.ndarray,
    y: np.ndarray,
    v: np.ndarray,
    lam: float,
    *,
    tol: float = 1e-4,
    max_iter: int = 1000,
    intercept_scaling: float = 100.0,
) -> tuple[np.ndarray, float]:
    """Fit one decision node with scikit-learn's liblinear ℓ1-logistic regression.

    Solves ``min Σ v_n log(1+exp(−y_n(w·x_n+b))) + λ‖w‖₁`` through
    ``LogisticRegression(l1_ratio=1.0, C=1/λ, solver="liblinear")`` with ``sample_weight=v``
    (liblinear minimises ``‖w‖₁ + C Σ v_n logloss_n``, i.e. the sum form divided by λ, so
    ``C = 1/λ``; ``tao.md`` §3.4). ``penalty`` is left at its default: in scikit-learn 1.8–1.9
    ``l1_ratio=1`` selects the ℓ1 penalty and passing ``penalty`` raises a FutureWarning.

    **Approximation:** liblinear appends a constant feature equal to ``intercept_scaling`` (``s``)
    and penalises its weight like the others, so the problem actually solved has the extra term
    ``λ|b|/s``. ``s = 100`` makes it negligible for data on a unit-ish scale (§3.4, pitfall 5);
    raise ``s`` when the bias is large. Use :func:`l1_logistic_torch` for an exactly unpenalised
    bias.

    Special cases (no call to scikit-learn, ``tao.md`` §3.5): points with ``v = 0`` are dropped;
    no point left → ``w = 0, b = +1``; all remaining labels equal → ``w = 0, b = ±1`` toward that
    class (liblinear would raise a misleading "multiclass" error). ``λ = 0`` (or below
    :data:`LAMBDA_FLOOR_REL` ``· Σv``) is replaced by that floor because ``C`` must be finite.
    A :class:`~sklearn.exceptions.ConvergenceWarning` (liblinear hitting ``max_iter``) is
    silenced: the iterate is still a valid, usually near-optimal hyperplane, and the TAO guard
    (§2.4) decides whether it is kept.

    Parameters
    ----------
    X : array of shape (n, D)
        Care points.
    y : array of shape (n,)
        Pseudolabels; ``> 0`` means right (+1), anything else left (−1).
    v : array of shape (n,)
        Non-negative weights (``sample_weight``).
    lam : float
        λ ≥ 0, sum form.
    tol : float, default 1e-4
        liblinear's stopping tolerance.
    max_iter : int, default 1000
        liblinear's iteration limit.
    intercept_scaling : float, default 100.0
        See the approximation note above.

    Returns
    -------
    w : ndarray of shape (D,), float64
    b : float
        The node sends ``x`` right iff ``w·x + b > 0``.
    """
    X, y, v = _check_numpy_problem(X, y, v)
    lam = _check_lam_scalar(lam)
    if not intercept_scaling > 0:
        raise TreevizError("intercept_scaling must be positive.")
    D = X.shape[1]
    keep = v > 0
    X, y, v = X[keep], y[keep], v[keep]
    w = np.zeros(D, dtype=np.float64)
    if X.shape[0] == 0:
        return w, 1.0
    n_pos = int(np.count_nonzero(y > 0))
    if n_pos == X.shape[0]:
        return w, 1.0
    if n_pos == 0:
        return w, -1.0
    if D == 0:  # only a bias: its exact (unpenalised) optimum is the weighted log-odds
        return w, float(np.log(v[y > 0].sum() / v[y < 0].sum()))
    lam_eff = max(lam, LAMBDA_FLOOR_REL * float(v.sum()))
    clf = LogisticRegression(
        l1_ratio=1.0,
        C=1.0 / lam_eff,
        solver="liblinear",
        intercept_scaling=float(intercept_scaling),
        tol=float(tol),
        max_iter=int(max_iter),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y.astype(np.int64), sample_weight=v)
    # classes_ = [-1, 1]: a positive decision value means class +1 = right.
    w = np.asarray(clf.coef_, dtype=np.float64).reshape(-1).copy()
    return w, float(np.asarray(clf.intercept_, dtype=np.float64).reshape(-1)[0])


# ------------------------------------------------------------------------------------------------
# batched PyTorch FISTA back-end
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


def _rowdot(X: torch.Tensor, W: torch.Tensor, group: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Margins ``z_n = W[group_n] · x_n + b[group_n]``."""
    return (X * W[group]).sum(1) + b[group]


def _group_sum(values: torch.Tensor, group: torch.Tensor, G: int) -> torch.Tensor:
    out = torch.zeros((G,) + tuple(values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, group, values)


def _group_objective(
    X: torch.Tensor,
    y: torch.Tensor,
    v: torch.Tensor,
    group: torch.Tensor,
    G: int,
    W: torch.Tensor,
    b: torch.Tensor,
    lam: torch.Tensor,
) -> torch.Tensor:
    """Per-group objective ``Σ_{n∈g} v_n logloss_n + λ_g ‖W_g‖₁`` (shape ``(G,)``)."""
    loss = _group_sum(v * _softplus(-y * _rowdot(X, W, group, b)), group, G)
    return loss + lam * W.abs().sum(1)


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

    Row ``n`` belongs to problem ``group[n]``; problem ``g`` is ::

        min_{w_g, b_g}  Σ_{n: group[n]=g} v_n log(1 + exp(−y_n (w_g·x_n + b_g)))  +  λ_g ‖w_g‖₁

    with the bias exactly unpenalised. Groups are disjoint sets of rows (typically the nodes of
    one depth level, which partition the data); all groups advance together with gathers
    (``W[group]``) and ``index_add_`` reductions, without a Python loop over groups.

    Method. Each group is solved in an exactly equivalent, better conditioned parametrisation:
    features centred and scaled by the group's weighted mean ``μ_g`` and standard deviation
    ``σ_g`` (``u = σ⊙w``, ``b̃ = b + w·μ``; the ℓ1 term becomes a per-coordinate weighted ℓ1,
    whose prox is still a soft threshold; features constant within a group get ``w_j = 0``, the
    exact optimum since their effect is absorbed by the bias). FISTA with a per-group step
    ``1/L_g``, ``L_g = 1.05 · ¼ λ_max([X̃_g 1]ᵀ diag(v_g) [X̃_g 1])`` from a batched power
    iteration (20 steps; clipped to ``[¼Σv, ¼ trace]``, both exact bounds on ``¼ λ_max`` after
    centring), safeguarded per group by

    * backtracking: when the quadratic upper bound fails at the new point, ``L_g`` doubles and
      the step is redone from the same extrapolated point; after every accepted step ``L_g`` is
      multiplied by 0.9 (the ¼ curvature bound is loose near a solution, badly so on (nearly)
      separable care sets; the momentum update uses the step-size ratio);
    * adaptive restart with rejection: a step that would increase the group's objective is
      rejected and the momentum reset, so accepted iterates never increase the objective (the
      returned point is the best one seen, and a final check in the original coordinates makes
      sure it is never worse than the warm start).

    Objective changes are summed from per-row differences computed without cancellation, and
    the row margins are updated incrementally (two passes over the data per iteration), so the
    decrease and bound tests stay exact well below the rounding error of the objective.

    A group stops when its composite gradient mapping is small,
    ``L_g ‖x⁺ − y‖_∞ ≤ tol · Σ_{n∈g} v_n`` (a relative first-order optimality residual: every
    partial derivative of the loss is bounded by ``Σ v`` in the scaled coordinates), or when a
    momentum-free step under a valid bound no longer decreases the objective (rounding floor);
    the solver stops when all groups have stopped or after ``max_iter`` iterations. Rows of
    finished groups are dropped from the work arrays as they finish.

    Special groups (not iterated): no row with ``v > 0`` → ``w = 0, b = 0`` (the caller handles
    dead nodes); all labels of one sign → ``w = 0, b = ±1`` toward that class, as in
    :func:`l1_logistic_sklearn` (the warm start is ignored for them).

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
        Relative optimality tolerance, see above.
    max_iter : int, default 2000

    Returns
    -------
    W : ndarray of shape (G, D), float64
    b : ndarray of shape (G,), float64
        Group ``g`` sends ``x`` right iff ``W[g]·x + b[g] > 0``.
    """
    dev = torch.device(device)
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
    if w0 is not None:
        W0 = _to_tensor(w0, dev, dtype)
        B0 = _to_tensor(b0, dev, dtype)
        if tuple(W0.shape) != (G, D) or B0.numel() != G:
            raise TreevizError(f"The warm start must have w0 of shape ({G}, {D}) and b0 of shape ({G},).")
        B0 = B0.reshape(G)
        if not (torch.isfinite(W0).all() and torch.isfinite(B0).all()):
            raise TreevizError("The warm start w0, b0 must be finite.")

    yt = torch.where(yt > 0, 1.0, -1.0).to(dtype)
    keep = vt > 0
    if not bool(keep.all()):
        Xt, yt, vt, gt = Xt[keep], yt[keep], vt[keep], gt[keep]

    s_pos = _group_sum(vt * (yt > 0), gt, G)
    s_neg = _group_sum(vt * (yt < 0), gt, G)
    W_out = torch.zeros((G, D), dtype=dtype, device=dev)
    b_out = torch.zeros(G, dtype=dtype, device=dev)
    b_out[(s_pos > 0) & (s_neg == 0)] = 1.0
    b_out[(s_neg > 0) & (s_pos == 0)] = -1.0
    solve = (s_pos > 0) & (s_neg > 0)

    def _numpy(Wr: torch.Tensor, br: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        return (
            Wr.detach().to("cpu", torch.float64).numpy().copy(),
            br.detach().to("cpu", torch.float64).numpy().copy(),
        )

    if not bool(solve.any()):
        return _numpy(W_out, b_out)
    if D == 0:  # bias only: exact unpenalised optimum
        b_out = torch.where(solve, torch.log(s_pos / s_neg.clamp_min(1e-300)), b_out)
        return _numpy(W_out, b_out)

    rows = solve[gt]
    Xs, ys, vs, gs = Xt[rows], yt[rows], vt[rows], gt[rows]

    # ---- per-group centring and scaling (exact reparametrisation) ------------------------------
    sv = s_pos + s_neg  # (G,), > 0 where solve
    sv_safe = torch.where(solve, sv, torch.ones_like(sv))
    mu = _group_sum(vs[:, None] * Xs, gs, G) / sv_safe[:, None]
    Xc = Xs - mu[gs]
    sigma = torch.sqrt(_group_sum(vs[:, None] * Xc * Xc, gs, G) / sv_safe[:, None])
    const = (sigma <= 1e-12 * mu.abs()) | (sigma == 0)  # (G, D) constant within the group
    sigma = torch.where(const, torch.ones_like(sigma), sigma)
    Xh = torch.where(const[gs], torch.zeros_like(Xc), Xc / sigma[gs])
    del Xc
    free = (~const).to(dtype)  # 1 where the coordinate may be nonzero

    # ---- starting point ------------------------------------------------------------------------
    if w0 is not None:
        Wstart = torch.where(solve[:, None], W0, torch.zeros_like(W0))
        Bstart = torch.where(solve, B0, torch.zeros_like(B0))
    else:
        Wstart = torch.zeros((G, D), dtype=dtype, device=dev)
        Bstart = torch.where(solve, torch.log(s_pos.clamp_min(1e-300) / s_neg.clamp_min(1e-300)), b_out)
    U = Wstart * sigma * free
    B = Bstart + (Wstart * mu).sum(1)
    pen = lam_t[:, None] / sigma  # per-coordinate ℓ1 weight in the scaled coordinates

    # Products with the (rows × D) data reuse one work buffer: a fresh allocation per product
    # costs as much as the product itself on CPU. The closures read the current (possibly
    # compacted) Xh and gs.
    work = torch.empty_like(Xh)

    def margins(Wm: torch.Tensor, Bv: torch.Tensor) -> torch.Tensor:
        buf = work[: Xh.shape[0]]
        torch.index_select(Wm, 0, gs, out=buf)
        return buf.mul_(Xh).sum(1) + Bv[gs]

    def grad_w(r_rows: torch.Tensor) -> torch.Tensor:
        buf = work[: Xh.shape[0]]
        torch.mul(Xh, r_rows[:, None], out=buf)
        return _group_sum(buf, gs, G)

    # ---- Lipschitz constants: batched power iteration on [X̃ 1]ᵀ V [X̃ 1] -----------------------
    gen = torch.Generator(device="cpu").manual_seed(0)
    q = (torch.rand((G, D + 1), generator=gen, dtype=torch.float64) + 0.5).to(device=dev, dtype=dtype)
    q[:, :D] *= free
    q = q / q.norm(dim=1, keepdim=True)
    est = torch.zeros(G, dtype=dtype, device=dev)
    for _ in range(_POWER_ITERS):
        t_rows = vs * margins(q[:, :D], q[:, D])
        Mq = torch.cat([grad_w(t_rows), _group_sum(t_rows, gs, G)[:, None]], 1)
        est = Mq.norm(dim=1)
        q = Mq / est.clamp_min(torch.finfo(dtype).tiny)[:, None]
    trace_bound = sv * (free.sum(1) + 1.0)  # λ_max ≤ trace = Σv (#free features + 1)
    L = 0.25 * torch.minimum(torch.maximum(1.05 * est, sv), trace_bound)
    L = torch.where(solve, L, torch.ones_like(L))

    # ---- FISTA -----------------------------------------------------------------------------------
    # State per group: x = (U, B) with row margins zx; the extrapolated point y = (Uy, By) with
    # margins zx + pz. Objective changes are accumulated from per-row differences computed stably
    # (_softplus_delta) instead of differencing two large sums, so the decrease and the quadratic
    # bound tests stay meaningful far below the rounding error of the objective itself.
    eps = torch.finfo(dtype).eps
    zx = margins(U, B)
    pz = torch.zeros_like(zx)  # z(y) - z(x)
    Uy, By = U.clone(), B.clone()
    t = torch.ones(G, dtype=dtype, device=dev)
    active = solve.clone()
    it = -1
    for it in range(int(max_iter)):
        if it % 100 == 99:  # refresh the incrementally updated margins
            zx = margins(U, B)
        mx = -ys * zx
        my = mx - ys * pz
        r = -vs * ys * torch.sigmoid(my)
        gU = grad_w(r)
        gB = _group_sum(r, gs, G)
        step = 1.0 / L
        Ut = Uy - gU * step[:, None]
        Un = torch.sign(Ut) * (Ut.abs() - pen * step[:, None]).clamp_min(0) * free
        Bn = By - gB * step
        dU, dB = Un - Uy, Bn - By
        dz = margins(dU, dB)  # z(x+) - z(y)
        sx = pz + dz  # z(x+) - z(x)
        dfy_rows = vs * _softplus_delta(my, -ys * dz)
        df_y = _group_sum(dfy_rows, gs, G)  # f(x+) - f(y)
        dF_x = _group_sum(vs * _softplus_delta(mx, -ys * sx), gs, G) + (pen * (Un.abs() - U.abs())).sum(1)
        lin = (gU * dU).sum(1) + gB * dB
        quad = 0.5 * L * ((dU * dU).sum(1) + dB * dB)
        slack = (
            64 * eps * (_group_sum(dfy_rows.abs(), gs, G) + (gU * dU).abs().sum(1) + (gB * dB).abs() + quad)
        )
        ok_bt = df_y <= lin + quad + slack
        ok_dec = dF_x <= 0
        accept = active & ok_bt & ok_dec
        residual = L * torch.maximum(dU.abs().amax(1), dB.abs())
        # a momentum-free step under a valid bound can only fail to decrease by rounding: the group
        # is at its rounding floor
        at_floor = ok_bt & ~ok_dec & (t == 1)
        converged = active & ok_bt & ((residual <= tol * sv) | at_floor)
        grow = active & ~ok_bt
        # after an accepted step try a longer one (the ¼-curvature bound is loose near the optimum)
        L_next = torch.where(grow, 2.0 * L, torch.where(accept, _L_SHRINK * L, L))
        t_next = 0.5 * (1.0 + torch.sqrt(1.0 + 4.0 * t * t * L / L_next))
        beta = torch.where(accept, (t - 1.0) / t_next, torch.zeros_like(t))
        # bound failed: redo the step from the same y with the larger L (keep the momentum);
        # no decrease: restart from x without momentum
        restart = active & ok_bt & ~ok_dec
        keep_y = active & ~ok_bt
        acc_rows = accept[gs]
        U_new = torch.where(accept[:, None], Un, U)
        B_new = torch.where(accept, Bn, B)
        zx = torch.where(acc_rows, zx + sx, zx)
        Uy = torch.where(keep_y[:, None], Uy, U_new + beta[:, None] * (U_new - U))
        By = torch.where(keep_y, By, B_new + beta * (B_new - B))
        pz = torch.where(keep_y[gs], pz, torch.where(acc_rows, beta[gs] * sx, torch.zeros_like(pz)))
        U, B, L = U_new, B_new, L_next
        t = torch.where(accept, t_next, torch.where(restart, torch.ones_like(t), t))
        active = active & ~converged
        if it % 5 == 4 or dev.type == "cpu":
            if not bool(active.any()):
                break
            # drop the rows of finished groups once they are a large share of the work
            if it % 10 == 9:
                keep_rows = active[gs]
                if int(keep_rows.sum()) < 0.6 * Xh.shape[0]:
                    Xh, ys, vs, gs = Xh[keep_rows], ys[keep_rows], vs[keep_rows], gs[keep_rows]
                    zx, pz = zx[keep_rows], pz[keep_rows]

    _LAST_RUN.clear()
    _LAST_RUN.update(iterations=it + 1, active=active.cpu().numpy().copy(), L=L.cpu().numpy().copy())

    # ---- back to the original coordinates, never worse than the start ------------------------------
    W_fit = U / sigma * free
    B_fit = B - (W_fit * mu).sum(1)
    ys, vs, gs = yt[rows], vt[rows], gt[rows]
    F_fit = _group_objective(Xs, ys, vs, gs, G, W_fit, B_fit, lam_t)
    F_start = _group_objective(Xs, ys, vs, gs, G, Wstart, Bstart, lam_t)
    better = F_fit <= F_start
    W_sol = torch.where(better[:, None], W_fit, Wstart)
    B_sol = torch.where(better, B_fit, Bstart)
    W_out = torch.where(solve[:, None], W_sol, W_out)
    b_out = torch.where(solve, B_sol, b_out)
    return _numpy(W_out, b_out)


# ------------------------------------------------------------------------------------------------
# exact axis-aligned splits
# ------------------------------------------------------------------------------------------------


def _threshold_between(a: float, b: float, orientation: int) -> float:
    """A threshold ``t`` separating ``a < b`` under the strict rules of :func:`best_axis_split`.

    The midpoint when it lies strictly between; if ``a`` and ``b`` are adjacent floats there is
    no such number and ``t = a`` (orientation +1: right iff ``x > a``) or ``t = b`` (orientation
    −1: right iff ``x < b``) reproduces the split exactly.
    """
    t = 0.5 * a + 0.5 * b
    if not (a < t < b):
        t = a + 0.5 * (b - a)
    if a < t < b:
        return float(t)
    return float(a) if orientation > 0 else float(b)


def best_axis_split(X: np.ndarray, y: np.ndarray, v: np.ndarray) -> tuple[int, float, int, float]:
    """Exact weighted 0/1-optimal axis-aligned split (``tao.md`` §2.2 "Exactness").

    Minimises ``Σ v_n · I(pred_n ≠ y_n)`` over every feature ``j``, every cut between consecutive
    distinct values of ``x_j`` and both orientations, plus the two constant splits:

    * orientation +1: right (+1) iff ``x_j > t``;
    * orientation −1: right (+1) iff ``x_j < t`` (left iff ``x_j > t``).

    ``t`` is the midpoint between the two consecutive distinct values, so no training point lies
    on it and the rules equal "right iff ``x_j ≤ t``" etc. on the training points; both are
    reproduced exactly by :func:`axis_split_to_hyperplane` with "right iff ``w·x + b > 0``"
    (and also with ``≥``). The constant splits ("everything right" / "everything left") are
    returned as ``feature = -1``, ``threshold = nan``, ``orientation = +1`` / ``−1``.

    Ties are broken deterministically: constant splits first (all right, then all left), then the
    smallest feature index, then the smallest threshold, then orientation +1 before −1. Preferring
    the constant split on ties keeps nodes sparse and lets TAO prune them.

    Parameters
    ----------
    X : array of shape (n, D)
    y : array of shape (n,)
        ``> 0`` means right (+1), anything else left (−1).
    v : array of shape (n,)
        Non-negative weights.

    Returns
    -------
    feature : int
        Column index, or −1 for a constant split.
    threshold : float
        ``nan`` for a constant split.
    orientation : int
        +1 or −1.
    loss : float
        The minimal weighted 0/1 loss.
    """
    X, y, v = _check_numpy_problem(X, y, v)
    n, D = X.shape
    vp = np.where(y > 0, v, 0.0)
    vm = np.where(y > 0, 0.0, v)
    total_p, total_m = float(vp.sum()), float(vm.sum())
    # constants: all right errs on the left-labelled mass, all left on the right-labelled mass
    best = (-1, float("nan"), 1, total_m)
    if total_p < total_m:
        best = (-1, float("nan"), -1, total_p)
    if n < 2 or D == 0:
        return best
    order = np.argsort(X, axis=0, kind="stable")  # (n, D)
    xs = np.take_along_axis(X, order, axis=0)
    cp = np.cumsum(vp[order], axis=0)[:-1]  # mass of +1 points at or below cut i, (n-1, D)
    cm = np.cumsum(vm[order], axis=0)[:-1]
    valid = xs[:-1] < xs[1:]  # cut between sorted positions i and i+1
    # orientation +1: lower part predicted left (errs on +1 there), upper part right (errs on −1)
    loss_pos = cp + (total_m - cm)
    loss_neg = cm + (total_p - cp)
    losses = np.stack([loss_pos, loss_neg], axis=-1)  # (n-1, D, 2)
    losses = np.where(valid[..., None], losses, np.inf)
    # order candidates as (feature, cut position = increasing threshold, orientation)
    flat = np.transpose(losses, (1, 0, 2)).reshape(-1)
    k = int(np.argmin(flat))
    if not flat[k] < best[3]:
        return best
    j, rem = divmod(k, 2 * (n - 1))
    i, o = divmod(rem, 2)
    orientation = 1 if o == 0 else -1
    t = _threshold_between(float(xs[i, j]), float(xs[i + 1, j]), orientation)
    return int(j), t, orientation, float(flat[k])


def axis_split_to_hyperplane(
    feature: int, threshold: float, orientation: int, D: int
) -> tuple[np.ndarray, float]:
    """The hyperplane ``(w, b)`` that routes exactly like an axis-aligned split.

    With the project rule "right iff ``w·x + b > 0``":

    * orientation +1: ``w = e_j, b = −t`` → right iff ``x_j > t``;
    * orientation −1: ``w = −e_j, b = t`` → right iff ``x_j < t``;
    * ``feature = -1`` (constant split): ``w = 0, b = orientation`` (+1 all right, −1 all left).

    ``x_j − t`` is computed exactly in floating point as far as its sign goes, so the routing of
    every finite point is reproduced exactly.

    Parameters
    ----------
    feature : int
        Column index or −1.
    threshold : float
        Ignored when ``feature = -1``.
    orientation : int
        +1 or −1.
    D : int
        Number of features.

    Returns
    -------
    w : ndarray of shape (D,), float64
    b : float
    """
    if orientation not in (1, -1):
        raise TreevizError(f"orientation must be +1 or -1; got {orientation}.")
    w = np.zeros(int(D), dtype=np.float64)
    if int(feature) == -1:
        return w, float(orientation)
    if not 0 <= int(feature) < D:
        raise TreevizError(f"feature must be -1 or lie in [0, {D}); got {feature}.")
    if not math.isfinite(float(threshold)):
        raise TreevizError("An axis-aligned split needs a finite threshold.")
    w[int(feature)] = float(orientation)
    return w, -float(orientation) * float(threshold)
