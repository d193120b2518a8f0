"""The compiled back-end: every node problem of one depth level in one numba call, by coordinate
descent, with warm starts.

The problems (ℓ1-logistic for decision nodes, ℓ1-least-squares and ℓ1-softmax for linear leaves), the
methods and their stopping rules are described in :mod:`models.tao.solvers.cd_kernels`, which holds the
compiled loops. This module is their Python entry point: it checks the inputs (decision nodes drop their
rows of weight 0), sorts the rows by node once and transposes the features once (``Xt``, so that a
feature's values within one node are contiguous), then makes one kernel call per level.
"""

from __future__ import annotations

import numpy as np

from models.ground.errors import TreevizError
from models.tao.solvers.cd_kernels import lasso_level, logistic_level, softmax_level
from models.tao.solvers.objectives import as_penalty


def _sorted_by_group(group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(row order that makes each group contiguous, group start offsets of length G + 1)."""
    group = np.asarray(group, dtype=np.int64).reshape(-1)
    if group.size and (group.min() < 0 or group.max() >= n_groups):
        raise TreevizError(f"group ids must lie in [0, {n_groups}); got {group.min()} … {group.max()}.")
    order = np.argsort(group, kind="stable")
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(group, minlength=n_groups), out=starts[1:])
    return order, starts


def _rows(X: np.ndarray, n: int) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != n:
        raise TreevizError(f"X must have shape (n, D) with n = {n}; got {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise TreevizError("X must be finite (no NaN or infinity).")
    return X


def l1_logistic_level(X: np.ndarray, y: np.ndarray, v: np.ndarray, group: np.ndarray, n_groups: int, lam: float, *,
                      w0: np.ndarray | None = None, b0: np.ndarray | None = None, tol: float = 1e-7,
                      max_iter: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Solve the ℓ1-logistic problems of ``n_groups`` decision nodes (row ``n`` belongs to node
    ``group[n]``) in one compiled call; the same interface as
    :func:`models.tao.solvers.fista.l1_logistic_torch`.

    Parameters
    ----------
    X : (N, D); y : (N,), ``> 0`` = right; v : (N,) ≥ 0 (rows with ``v = 0`` are dropped)
    group : (N,) ints in [0, n_groups)
    lam : λ ≥ 0, sum form.
    w0, b0 : (G, D), (G,) warm starts (default zeros).
    tol : relative first-order optimality tolerance (see :mod:`models.tao.solvers.cd_kernels`).
    max_iter : most proximal-Newton steps per node.

    Returns
    -------
    W : (G, D), B : (G,) — node g sends x right iff ``W[g]·x + B[g] > 0``.
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    X = _rows(X, y.size)
    if v.size != y.size or np.any(v < 0) or not np.all(np.isfinite(v)):
        raise TreevizError("v must hold one finite, non-negative weight per row.")
    lam = as_penalty(lam)
    D = X.shape[1]
    keep = v > 0
    order, starts = _sorted_by_group(np.asarray(group)[keep], n_groups)
    rows = np.flatnonzero(keep)[order]
    Xt = np.ascontiguousarray(X[rows].T)
    W = np.zeros((n_groups, D)) if w0 is None else np.array(w0, dtype=np.float64).reshape(n_groups, D)
    B = np.zeros(n_groups) if b0 is None else np.array(b0, dtype=np.float64).reshape(n_groups)
    logistic_level(Xt, np.where(y[rows] > 0, 1.0, -1.0), v[rows], starts, lam, W, B, int(max_iter), float(tol))
    return W, B


def l1_logistic_blocks(Xs: list[np.ndarray], ys: list[np.ndarray], vs: list[np.ndarray], lam: float, *,
                       w0: np.ndarray, b0: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`l1_logistic_level` for data already split by node: node g's rows are ``Xs[g]`` (n_g, D),
    labels ``ys[g]`` (±1) and weights ``vs[g]`` (all > 0, finite; the training loop's care points).
    Each block is written straight into the transposed layout the kernel reads, so the rows are
    copied once (no concatenation, gather, transposition or input scan on the way); the same
    result, bit for bit, as :func:`l1_logistic_level` on the concatenated rows."""
    G = len(Xs)
    D = w0.shape[1]
    starts = np.zeros(G + 1, dtype=np.int64)
    np.cumsum([x.shape[0] for x in Xs], out=starts[1:])
    Xt = np.empty((D, int(starts[-1])))
    for g, x in enumerate(Xs):
        Xt[:, starts[g]:starts[g + 1]] = x.T
    y = np.where(np.concatenate(ys) > 0, 1.0, -1.0) if G else np.zeros(0)
    v = np.concatenate(vs).astype(np.float64, copy=False) if G else np.zeros(0)
    W = np.array(w0, dtype=np.float64).reshape(G, D)
    B = np.array(b0, dtype=np.float64).reshape(G)
    logistic_level(Xt, y, v, starts, as_penalty(lam), W, B, int(max_iter), float(tol))
    return W, B


def l1_least_squares_level(X: np.ndarray, Y: np.ndarray, s: np.ndarray, group: np.ndarray, n_groups: int, lam: float,
                           *, W0: np.ndarray | None = None, c0: np.ndarray | None = None, tol: float = 1e-10,
                           max_iter: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``min Σ s ‖Y − W x − c‖² + λ‖W‖₁`` for every group (the linear leaves of one level).

    ``Y`` is (N, K); returns ``W`` (G, K, D) and intercepts ``c`` (G, K). ``W0``, ``c0``: warm
    starts (default: zero weights and the weighted mean). ``tol``: relative objective decrease per
    sweep at which a problem stops; ``max_iter``: most sweeps.
    """
    Y = np.asarray(Y, dtype=np.float64)
    Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    X = _rows(X, Y.shape[0])
    lam = as_penalty(lam)
    order, starts = _sorted_by_group(group, n_groups)
    Xt = np.ascontiguousarray(X[order].T)
    Yt = np.ascontiguousarray(Y[order].T)
    K, D = Y.shape[1], X.shape[1]
    W = np.zeros((n_groups, K, D)) if W0 is None else np.array(W0, dtype=np.float64).reshape(n_groups, K, D)
    if c0 is None:
        C = np.zeros((n_groups, K))
    else:
        C = np.array(c0, dtype=np.float64).reshape(n_groups, K)
    lasso_level(Xt, Yt, s[order], starts, lam, W, C, int(max_iter), float(tol))
    return W, C


def l1_softmax_level(X: np.ndarray, Y: np.ndarray, s: np.ndarray, group: np.ndarray, active: np.ndarray, lam: float,
                     *, W0: np.ndarray | None = None, c0: np.ndarray | None = None, tol: float = 1e-9,
                     max_iter: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Solve the ℓ1-softmax problem of every group over its classes ``active[g]`` (G, K) bool.

    ``Y``: class indices (N,), each row's class active in its group. Returns ``W`` (G, K, D) and
    intercepts ``c`` (G, K); inactive classes keep their ``W0`` / ``c0`` entries. ``tol``: relative
    objective decrease per sweep over the classes; ``max_iter``: most sweeps.
    """
    Y = np.asarray(Y, dtype=np.int64).reshape(-1)
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    X = _rows(X, Y.size)
    active = np.asarray(active, dtype=bool)
    lam = as_penalty(lam)
    G, K = active.shape
    order, starts = _sorted_by_group(group, G)
    if Y.size and not np.all(active[np.asarray(group, dtype=np.int64), Y]):
        raise TreevizError("every row's class must be one its group models (active).")
    D = X.shape[1]
    W = np.zeros((G, K, D)) if W0 is None else np.array(W0, dtype=np.float64).reshape(G, K, D)
    C = np.zeros((G, K)) if c0 is None else np.array(c0, dtype=np.float64).reshape(G, K)
    softmax_level(np.ascontiguousarray(X[order].T), Y[order], s[order], starts, active, lam, W, C, int(max_iter),
                   float(tol))
    return W, C
