"""Neighbourhood graphs shared by the graph-based families (tree embeddings, Laplacian-regularised
trees): entropic affinities, their symmetrised and joint forms, and the graph Laplacian.

Entropic affinities (SNE's perplexity calibration restricted to the k nearest neighbours): for each
point n a precision β_n > 0 is chosen so that the row distribution

    p_{m|n} = exp(−β_n d²_nm) / Σ_{j ∈ kNN(n)} exp(−β_n d²_nj),   m ∈ kNN(n),

has entropy H_n = −Σ_m p_{m|n} log p_{m|n} equal to log K (natural log), i.e. perplexity
exp(H_n) = K. The result is a row-stochastic sparse N × N matrix with a zero diagonal.

The weights graph-based methods use downstream:

* ``symmetrize(P)`` = (P + Pᵀ)/2: degrees are about 1, the scale the tree-embedding and LapTAO
  defaults were tuned for (unnormalised 0/1 or Gaussian kNN weights would have degrees about k);
* ``joint_probabilities(P)`` = (P + Pᵀ)/(2N): t-SNE's joint probabilities, summing to 1;
* ``laplacian(W)`` = D − W, with Σ_{n,m} w_nm (t_n − t_m)² = 2 tᵀ (D − W) t.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from models.ground.errors import TreevizError

#: Precision of the calibration: |H_n − log K| below this for every row (so the perplexity is
#: within about K · 1e-11 of K).
ENTROPY_TOL = 1e-11

#: Bisection / Newton iterations before giving up (Newton converges in well under 20).
MAX_CALIBRATION_ITER = 200

#: Coordinates (rows × k × D) per chunk when the exact squared distances to the neighbours are
#: recomputed: about 8 MB of differences at a time, whatever N, k and D.
_DISTANCE_CHUNK = 1 << 20


def default_neighbors(n_points: int, perplexity: float) -> int:
    """The default neighbour count: 3·perplexity rounded, at most N − 1 (the usual t-SNE rule)."""
    return int(min(n_points - 1, round(3 * perplexity)))


def usable_perplexity(perplexity: float, n_points: int, k: int | None = None) -> float:
    """The perplexity a model actually uses on ``n_points`` points.

    With the default neighbour count (``k`` None) a perplexity too large for a small data set is
    lowered to (N − 1)/3, so that the default 3·perplexity neighbours fit among the N − 1 others
    and a model's defaults train on any table of at least 4 rows. An explicit ``k`` is the user's
    choice and is only checked (perplexity < k ≤ N − 1), with a sentence if it does not fit.
    """
    perplexity = float(perplexity)
    if n_points < 4:
        raise TreevizError(f"A neighbourhood graph needs at least 4 points; got {n_points} sample(s).")
    if k is None:
        return max(1.0, min(perplexity, (n_points - 1) / 3.0))
    if not perplexity < k <= n_points - 1:
        raise TreevizError(
            f"The number of neighbours k must exceed the perplexity and be at most N − 1 (here {perplexity:g} < k ≤ "
            f"{n_points - 1}); got {k}. Leave it unset (3·perplexity) or choose a value in that range."
        )
    return perplexity


def nearest_neighbors(X: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest neighbours of every point (itself excluded) and their exact squared distances.

    The search is scikit-learn's ``NearestNeighbors`` with its automatic algorithm: a k-d or ball
    tree in few dimensions, otherwise a brute-force search done in row chunks (its pairwise-distance
    reductions keep a bounded block of distances at a time). Neither forms the N × N distance
    matrix, so memory stays O(N k). The squared distances are then recomputed exactly from the
    coordinates, in row chunks.

    Parameters
    ----------
    X : array-like of shape (N, D)
        The points (finite).
    k : int
        Neighbours per point, 1 ≤ k ≤ N − 1.

    Returns
    -------
    idx : ndarray of shape (N, k), int64
        Each row's neighbours, nearest first (ties broken by scikit-learn, deterministically for a
        given X). The first k' columns are the k'-nearest neighbours for any k' ≤ k, so one search
        serves several graphs (:func:`entropic_affinities`'s ``neighbors``).
    d2 : ndarray of shape (N, k), float64
        ``‖x_n − x_idx[n, j]‖²``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise TreevizError("The points must be a finite 2-D array (points × features) to find neighbours.")
    n = X.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n - 1:
        raise TreevizError(f"The number of neighbours must be an integer from 1 to N − 1 = {n - 1}; got {k}.")
    idx = NearestNeighbors(n_neighbors=int(k)).fit(X).kneighbors(return_distance=False).astype(np.int64)
    return idx, _neighbour_sq_distances(X, idx)


def entropic_affinities(X: Any, perplexity: float = 15.0, k: int | None = None, *,
                        neighbors: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Perplexity-calibrated Gaussian affinities on the k nearest neighbours.

    Parameters
    ----------
    X : array-like of shape (N, D)
        The points, one per row (finite).
    perplexity : float, default 15
        The target perplexity K ≥ 1: each row's entropy is log K.
    k : int, optional
        Neighbours per point, K < k ≤ N − 1. Default ``min(N − 1, round(3 K))``.
    neighbors : (idx, d2), optional
        A neighbour search already made, as :func:`nearest_neighbors` returns it (nearest first,
        at least k columns); its first k columns are used instead of searching again. The result
        is the same as without it (up to how ties at the k-th neighbour are broken).

    Returns
    -------
    P : scipy.sparse.csr_matrix of shape (N, N), float64
        Row-stochastic (each row sums to 1), zero diagonal, exactly k stored entries per row
        (sorted column indices), each row's perplexity equal to K within about 1e-10. With k much
        larger than K the farthest neighbours' weights can underflow to exact zeros (e.g. iris,
        K = 5, k = N − 1); they stay stored, so the kNN structure is kept.
    beta : ndarray of shape (N,)
        The precision β_n of each row (multiplying squared distances). A row whose point has K or
        more other points tied at its smallest distance (exact duplicates, typically) cannot reach
        perplexity K with a finite β: it gets β = inf and the uniform distribution over the tied
        points (its other stored entries are explicit zeros), which is the β → ∞ limit.

    Raises
    ------
    TreevizError (a ValueError)
        If K < 1, if k ≤ K or k > N − 1, if there are not enough points, or if X is not a finite
        2-D array.

    Notes
    -----
    The neighbours come from scikit-learn's ``NearestNeighbors``; their squared distances are then
    recomputed exactly from the coordinates. Calibration runs on all rows at once on the log-β
    scale: a Newton step (dH/dlog β = −β² Var_p(d²)) kept inside a bisection bracket. Distances
    are shifted by each row's smallest one, which leaves p unchanged and keeps every exponential in
    (0, 1], so duplicate points give no NaN. Ties at the boundary of the k-neighbour set are broken
    by scikit-learn (deterministically for a given X).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise TreevizError("The points must be a finite 2-D array (points × features) to compute affinities.")
    n = X.shape[0]
    perplexity = float(perplexity)
    if not math.isfinite(perplexity) or perplexity < 1:
        raise TreevizError(f"The perplexity must be a number ≥ 1; got {perplexity}. Use a value such as 15.")
    if n - 1 <= perplexity:
        raise TreevizError(
            f"A perplexity of {perplexity:g} needs more than {math.floor(perplexity) + 1} points; got {n}. "
            "Lower the perplexity or use more points."
        )
    k = default_neighbors(n, perplexity) if k is None else k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not perplexity < k <= n - 1:
        raise TreevizError(
            f"The number of neighbours k must be an integer with perplexity < k ≤ N − 1 "
            f"(here {perplexity:g} < k ≤ {n - 1}); got {k}. Use more neighbours (3·perplexity is usual) "
            "or a smaller perplexity."
        )
    k = int(k)
    if neighbors is None:
        idx = np.sort(NearestNeighbors(n_neighbors=k).fit(X).kneighbors(return_distance=False), axis=1)
        d2 = _neighbour_sq_distances(X, idx)
    else:
        idx, d2 = (np.asarray(a) for a in neighbors)
        if idx.ndim != 2 or idx.shape[0] != n or idx.shape[1] < k or d2.shape != idx.shape:
            raise TreevizError(f"The neighbours given must be two {n} × (at least {k}) arrays (indices, squared "
                               f"distances), nearest first; got shapes {idx.shape} and {d2.shape}.")
        order = np.argsort(idx[:, :k], axis=1, kind="stable")  # stored by column index, as without them
        idx = np.take_along_axis(idx[:, :k], order, axis=1)
        d2 = np.take_along_axis(np.asarray(d2[:, :k], dtype=np.float64), order, axis=1)
    p, beta = _calibrate(d2, math.log(perplexity))
    indptr = np.arange(0, n * k + 1, k)
    P = sp.csr_matrix((p.ravel(), idx.ravel(), indptr), shape=(n, n))
    P.has_sorted_indices = True
    return P, beta


def _neighbour_sq_distances(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Exact ||x_n − x_m||² for every stored neighbour m of n, computed in row chunks."""
    out = np.empty(idx.shape, dtype=np.float64)
    rows = max(1, _DISTANCE_CHUNK // max(1, idx.shape[1] * X.shape[1]))
    for start in range(0, X.shape[0], rows):
        stop = min(start + rows, X.shape[0])
        diff = X[idx[start:stop]] - X[start:stop, None, :]
        out[start:stop] = np.einsum("nkd,nkd->nk", diff, diff)
    return out


def _row_distribution(shifted: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """p, entropy H and Var_p(d²) of each row for precisions ``beta`` (distances shifted to min 0)."""
    e = np.exp(-beta[:, None] * shifted)  # in (0, 1]; the row minimum gives exactly 1
    s = e.sum(axis=1)
    p = e / s[:, None]
    mean = np.einsum("nk,nk->n", p, shifted)
    entropy = beta * mean + np.log(s)
    var = np.einsum("nk,nk->n", p, (shifted - mean[:, None]) ** 2)
    return p, entropy, var


def _calibrate(d2: np.ndarray, target: float) -> tuple[np.ndarray, np.ndarray]:
    """Solve H_n(β_n) = target for every row at once; returns (p, beta)."""
    n, _ = d2.shape
    shifted = d2 - d2.min(axis=1, keepdims=True)
    # H decreases in β from log k (β = 0) to log(#points tied at the minimum) (β → ∞).
    ties = np.count_nonzero(shifted <= 0, axis=1)
    degenerate = np.log(ties) >= target - ENTROPY_TOL
    positive = np.where(shifted > 0, shifted, np.nan)
    with np.errstate(all="ignore"):
        scale = np.nanmean(positive, axis=1)
    u = np.where(np.isfinite(scale) & (scale > 0), -np.log(np.where(scale > 0, scale, 1.0)), 0.0)
    lo = np.full(n, -np.inf)
    hi = np.full(n, np.inf)
    active = ~degenerate
    for _ in range(MAX_CALIBRATION_ITER):
        if not active.any():
            break
        rows = np.flatnonzero(active)
        ur = u[rows]
        beta = np.exp(ur)
        _, entropy, var = _row_distribution(shifted[rows], beta)
        f = entropy - target
        done = np.abs(f) < ENTROPY_TOL
        lo[rows] = np.where(f > 0, ur, lo[rows])  # entropy too high: β must grow
        hi[rows] = np.where(f < 0, ur, hi[rows])
        with np.errstate(all="ignore"):  # β² overflows for very peaked rows: Newton is then skipped
            slope = -(beta**2) * var  # dH / d log β
            newton = ur - f / slope
        lor, hir = lo[rows], hi[rows]
        inside = np.isfinite(newton) & (newton > lor) & (newton < hir)
        bisect = np.where(
            np.isfinite(lor) & np.isfinite(hir), 0.5 * (lor + hir), np.where(f > 0, ur + 2.0, ur - 2.0)
        )
        step = np.clip(np.where(inside, newton, bisect), -700.0, 700.0)
        u[rows] = np.where(done, ur, step)
        active[rows] = ~done
    beta = np.exp(u)
    p, _, _ = _row_distribution(shifted, beta)
    if degenerate.any():
        tied = (shifted[degenerate] <= 0).astype(np.float64)
        p[degenerate] = tied / tied.sum(axis=1, keepdims=True)
        beta[degenerate] = np.inf
    return p, beta


def _as_square(W: Any, what: str) -> sp.csr_matrix | np.ndarray:
    if sp.issparse(W):
        W = sp.csr_matrix(W, dtype=np.float64)
    else:
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2:
            raise ValueError(f"{what} must be a square 2-D matrix; got shape {W.shape}.")
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"{what} must be a square matrix; got shape {W.shape}.")
    return W


def symmetrize(P: Any) -> sp.csr_matrix | np.ndarray:
    """(P + Pᵀ)/2, the symmetrised affinities (sparse in, sparse out; dense in, dense out)."""
    P = _as_square(P, "The affinity matrix")
    return ((P + P.T) / 2).tocsr() if sp.issparse(P) else (P + P.T) / 2


def joint_probabilities(P: Any) -> sp.csr_matrix | np.ndarray:
    """t-SNE's joint probabilities (P + Pᵀ)/(2N) from row-stochastic affinities P.

    With P's rows summing to 1 the result is symmetric and sums to 1 (sparse in, sparse out).
    """
    P = _as_square(P, "The affinity matrix")
    n = P.shape[0]
    return ((P + P.T) / (2 * n)).tocsr() if sp.issparse(P) else (P + P.T) / (2 * n)


def laplacian(W: Any) -> sp.csr_matrix | np.ndarray:
    """The graph Laplacian D − W of a symmetric non-negative weight matrix W, D = diag(W·1).

    Sparse in, sparse (CSR) out; dense in, dense out. W's diagonal cancels (self-loops do not
    change D − W). ``Σ_{n,m} w_nm (t_n − t_m)² = 2 tᵀ (D − W) t`` and ``(D − W)·1 = 0``.

    Raises
    ------
    ValueError
        If W is not square, has a negative or non-finite entry, or is not symmetric (to 1e-12
        relative to its largest entry).
    """
    W = _as_square(W, "The weight matrix")
    values = W.data if sp.issparse(W) else W
    if values.size and (not np.all(np.isfinite(values)) or values.min() < 0):
        raise ValueError("The weight matrix must be finite and non-negative to form a graph Laplacian.")
    biggest = float(np.abs(values).max()) if values.size else 0.0
    asym = W - W.T
    asym = abs(asym).max() if sp.issparse(W) else np.abs(asym).max()
    if asym > 1e-12 * max(biggest, 1e-300):
        raise ValueError("The weight matrix must be symmetric to form a graph Laplacian; symmetrize it first.")
    degree = np.asarray(W.sum(axis=1)).ravel()
    if sp.issparse(W):
        return (sp.diags(degree, format="csr") - W).tocsr()
    return np.diag(degree) - W
