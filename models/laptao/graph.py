"""The neighbourhood graph LapTAO smooths over: weights W and Laplacian ``Lap = Deg − W``.

The graph covers every training point, labelled or not. As in the thesis, its weights are
entropic (perplexity-calibrated Gaussian) affinities on the k nearest neighbours
(:func:`models.graphs.entropic_affinities`; perplexity K = 15 and k = 3K = 45 by default, the
usual t-SNE rule, since the thesis does not give its values). Its scale is a decision, because the
penalty weight γ (0.1 in the thesis) only means what the thesis tuned it for on the same scale:

- Each row of the affinities P is a distribution over the point's k neighbours (it sums to 1).
- ``W = (P + Pᵀ) / 2`` with a zero diagonal, so W is symmetric, non-negative, sums to N and the
  degrees are about 1 (exactly 1 on average). Raw 0/1 or Gaussian k-NN weights would have degrees
  of about k and silently multiply the effective γ by about k.

Other row-stochastic affinities (a k-NN graph with weights 1/k, say) can be given ready-made to
:func:`graph_from_affinities`.

**Choosing the perplexity** (:func:`select_perplexity`, the estimators' ``perplexity=None``). The
thesis tunes K "for each dataset" and gives no values. K decides how far labels spread before the
tree sees them, and it matters more than any other setting we measured: the accuracy of label
propagation on the unlabelled training points (digits, 1 % labels, three draws) is 86.6 / 90.8 /
79.1 / 73.2 / 58.5 % for K = 3 / 5 / 10 / 15 / 30 on the first draw, and the same ordering holds on
the MNIST 5000 subset and at 5 % labels. So K is chosen from the labels alone, by leave-one-out
cross-validation of label propagation (the μ = 0 label step): each labelled point in turn is
hidden, the others are propagated, and the score is the mean squared error ``‖z₋ᵢ(xᵢ) − yᵢ‖²`` of
the hidden point's propagated scores (the Brier score for one-hot classes). Hiding one label is a
rank-one change of ``J + γ Lap``, so all the hidden-point predictions come from one factorisation:
``z₋ᵢ(xᵢ) = (zᵢ − aᵢᵢ yᵢ) / (1 − aᵢᵢ)`` with ``aᵢᵢ = ((J + γ Lap)⁻¹)ᵢᵢ``. The score is continuous
rather than an accuracy because with 1 % of the labels there are too few held-out points for an
accuracy to separate the candidates (the leave-one-out accuracy often tied). On 18 draws (digits
and MNIST 5000, 1 / 5 / 20 % labels, three draws each) the K it chose was within 1 point of the
best candidate's unlabelled-point accuracy on 17 (4.2 points on the other), and 6 to 13 points
above K = 15 at 1 % labels. Points whose class has no other label are left out (hiding their label
removes the class, whatever K).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse

from models.graphs import (
    default_neighbors,
    entropic_affinities,
    laplacian,
    nearest_neighbors,
    symmetrize,
    usable_perplexity,
)
from models.ground.errors import TreevizError
from models.laptao.label_step import conjugate_gradients, make_solver

#: Perplexities :func:`select_perplexity` tries by default (the usual t-SNE range 5 to 30, with 3 added
#: because it won on digits and MNIST).
PERPLEXITY_GRID = (3.0, 5.0, 10.0, 15.0, 30.0)

#: Perplexity used when no labelled point can be held out (every class has a single label).
FALLBACK_PERPLEXITY = 15.0

#: Most labelled points the leave-one-out score holds out (a random subset above this).
LOO_MAX_POINTS = 300
#: Held-out points solved for at once (between two checks for a cancel). Small blocks keep CG's
#: N × block arrays in cache: at 14 000 points 16 columns a block take 0.77 of the time of 32 (64: 1.17).
LOO_BLOCK = 16

#: Relative residual of the conjugate-gradient solves of the leave-one-out score: ``z`` (the
#: propagated labels) to :data:`LOO_RTOL`, the diagonal entries ``a_ii`` to :data:`LOO_UNIT_RTOL`.
#: For any approximate solution x of ``A x = e_i`` with residual ``r = e_i − A x``, the estimate
#: ``a_ii ≈ x_i + xᵀ r`` (= 2 e_iᵀ x − xᵀ A x) is off by exactly ``rᵀ A⁻¹ r ≤ ‖r‖² / λ_min(A)``:
#: quadratic in the residual, so a residual of 1e-5 gives ``a_ii`` to about 1e-10 / λ_min, far below
#: what separates two candidates, and the solves may use single-precision products (their drift
#: only enters through r, computed in double). On the 14 000-point scale table this cuts the
#: leave-one-out time by a third (all labels) to a half (1 % labels), the scores equal to ~1e-7.
LOO_RTOL = 1e-8
LOO_UNIT_RTOL = 1e-5
#: The unit solves form their sparse products in single precision when their tolerance is at least
#: this (a float32 product is exact to about 1e-7; the true residual is checked in double at the end).
LOO_SINGLE_MIN_RTOL = 1e-6
#: The largest neighbourhood (fraction of the points) an ``a_ii`` is solved on before a global solve
#: takes over (:func:`local_diagonal`): with many labels ``A⁻¹ e_i`` decays fast and 2–3 hops meet
#: the residual (about 1 500–3 000 points of the 14 000-point scale table); with few labels it does not.
LOCAL_MAX_FRACTION = 0.25
#: "auto" solves the ``a_ii`` on neighbourhoods from this many points on. The neighbourhoods that
#: meet the residual hold about the same number of points whatever N (1 500–3 000 with all labels),
#: while a global solve grows with N: on the scale table (all labels, one thread) the neighbourhood
#: solves take 0.75–2.5 s a candidate at 14 000 points against 1.0–2.3 s globally, and 4.1 / 8.5 s
#: at 140 000 points against 21.7 / 37.2 s (perplexity 5 / 15).
LOCAL_MIN_POINTS = 30_000
#: After this many held-out points, the neighbourhood solves are given up if most of them failed.
LOCAL_PROBE = 8
#: Neighbourhoods smaller than this are grown before a solve is tried.
LOCAL_MIN_BALL = 200

#: Above this many points the leave-one-out solves use conjugate gradients instead of a sparse LU.
#: The k-NN graphs of real data have little sparse structure a direct solver can use: the LU's fill-in
#: is close to dense (6 s a factorisation at 3 500 points, one per candidate). CG on ``J + γ Lap``
#: takes 6–76 iterations at 14 000 points (all labels to 1 %), so it is used from a small N on.
LU_MAX_POINTS = 1000


def graph_from_affinities(P) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """The LapTAO graph from any non-negative affinities: ``W = (P + Pᵀ)/2`` with zero diagonal.

    Parameters
    ----------
    P : array or sparse matrix of shape (N, N)
        Non-negative affinities, normally row-stochastic (entropic or k-NN affinities), so that
        the degrees of W are about 1.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (N, N)
        Symmetric, non-negative, zero diagonal.
    laplacian : scipy.sparse.csr_matrix of shape (N, N)
        ``Deg − W`` with ``Deg = diag(W 1)``: symmetric positive semi-definite, ``Lap 1 = 0``.
    """
    P = sparse.csr_matrix(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise TreevizError(f"The affinities must be a square N × N matrix; got shape {P.shape}.")
    if P.nnz and (not np.all(np.isfinite(P.data)) or P.data.min() < 0):
        raise TreevizError("The affinities must be finite and non-negative.")
    W = symmetrize(P)
    W.setdiag(0.0)
    W.eliminate_zeros()
    W.sort_indices()
    lap = laplacian(W)
    lap.sort_indices()
    return W, lap


def laptao_graph(X: np.ndarray, perplexity: float = 15.0, n_neighbors: int | None = None, *,
                 neighbors: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """The LapTAO graph over all points: symmetrised entropic affinities and their Laplacian.

    Parameters
    ----------
    X : ndarray of shape (N, D)
        All points, labelled and unlabelled, in the feature space the tree uses. No NaN.
    perplexity : float, default 15
        K, the effective number of neighbours of each point.
    n_neighbors : int, optional
        k, the neighbours each point's affinities are spread over; K < k ≤ N − 1.
        Default ``round(3K)`` (at most N − 1).
    neighbors : (idx, d2), optional
        A neighbour search of X already made (:func:`models.graphs.nearest_neighbors`, at least k
        columns), reused instead of searching again.

    Returns
    -------
    W, laplacian : scipy.sparse.csr_matrix of shape (N, N)
        As :func:`graph_from_affinities`; the degrees average exactly 1. Both are sparse with
        O(N k) entries: no N × N array is formed.
    """
    P, _ = entropic_affinities(X, perplexity, n_neighbors, neighbors=neighbors)
    return graph_from_affinities(P)


def leave_one_out_error(laplacian, Y: np.ndarray, labelled: np.ndarray, gamma: float, rows: np.ndarray, *,
                        method: str = "auto", unit_rtol: float = LOO_UNIT_RTOL,
                        stop: Callable[[], bool] = lambda: False) -> float:
    """Mean squared error of label propagation at each labelled point of ``rows`` when its own label is hidden.

    Label propagation solves ``A z = J y`` with ``A = J + γ Lap`` (the μ = 0 label step). Hiding the
    label of point i removes ``e_i e_iᵀ`` from A and ``e_i y_iᵀ`` from the right-hand side, and by the
    Sherman–Morrison formula the propagated scores at i become ``(z_i − a_ii y_i) / (1 − a_ii)``
    with ``a_ii = (A⁻¹)_ii``. A point whose label is the only one in its part of the graph has
    ``a_ii = 1`` (nothing is left to propagate from): its prediction is 0.

    Parameters
    ----------
    laplacian : sparse matrix of shape (N, N)
    Y : ndarray of shape (N, C)
        Targets (one-hot rows for classes); rows of unlabelled points are ignored.
    labelled : ndarray of shape (N,), bool
    gamma : float
    rows : ndarray of int
        Labelled points to hold out, one at a time.
    method : {"auto", "lu", "cg", "local"}
        How ``A`` is solved: a sparse LU (exact); conjugate gradients (sparse, O(N k) memory), z
        to a relative residual of :data:`LOO_RTOL` and the ``a_ii`` to ``unit_rtol``; "local": as
        "cg", but each ``a_ii`` from the held-out point's graph neighbourhood where that meets the
        same residual (:func:`local_diagonal`); or "auto": LU up to :data:`LU_MAX_POINTS` points,
        "local" from :data:`LOCAL_MIN_POINTS` points, "cg" between.
    unit_rtol : float
        Residual of the ``a_ii`` solves (see :data:`LOO_UNIT_RTOL`).
    stop : callable, optional
        Asked between blocks of :data:`LOO_BLOCK` held-out points; when it returns True (a
        cancel) the error is NaN.

    Returns
    -------
    float
        ``mean_i ‖z₋ᵢ(x_i) − y_i‖²`` over ``rows``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0 or not np.all(labelled[rows]):
        raise TreevizError("Leave-one-out needs at least one labelled point to hold out.")
    n = labelled.size
    if method not in ("auto", "lu", "cg", "local"):
        raise TreevizError(f"The leave-one-out solver must be 'auto', 'lu', 'cg' or 'local'; got {method!r}.")
    if method == "auto":
        method = "lu" if n <= LU_MAX_POINTS else ("cg" if n < LOCAL_MIN_POINTS else "local")
    local = method == "local"
    method = "cg" if local else method
    solver = make_solver(laplacian, labelled, gamma, method=method, rtol=LOO_RTOL)
    Yc = np.where(labelled[:, None], np.asarray(Y, dtype=np.float64).reshape(n, -1), 0.0)
    z = solver.solve(Yc, 0.0)
    system = None
    if method == "cg":  # the a_ii: their error is quadratic in the residual (see LOO_UNIT_RTOL)
        solver.rtol = max(float(unit_rtol), LOO_RTOL)
        solver.single_products = solver.rtol >= LOO_SINGLE_MIN_RTOL
        system = solver.system(0.0)
    a = np.full(rows.size, np.nan)
    if local:  # each a_ii from its neighbourhood where that is as exact; the others by CG below
        pos = np.full(n, -1, dtype=np.int64)
        for j, i in enumerate(rows):
            if j % LOO_BLOCK == 0 and stop():
                return float("nan")
            a[j] = local_diagonal(system, int(i), solver.rtol, pos)
            if j + 1 == LOCAL_PROBE and np.isnan(a[:j + 1]).sum() * 2 > LOCAL_PROBE:
                break  # few labels: the neighbourhoods do not suffice, solve every point globally
    pending = np.flatnonzero(np.isnan(a))
    for start in range(0, pending.size, LOO_BLOCK):
        if stop():
            return float("nan")
        at = pending[start:start + LOO_BLOCK]
        block = rows[at]
        cols = np.arange(block.size)
        unit = np.zeros((n, block.size))
        unit[block, cols] = 1.0
        x = solver.solve(unit, 0.0)
        a[at] = x[block, cols]
        if system is not None:  # + xᵀ r: the error of a_ii is then rᵀ A⁻¹ r, however x was reached
            r = system @ x  # r = unit − A x, in place
            np.negative(r, out=r)
            r[block, cols] += 1.0
            a[at] += np.einsum("ij,ij->j", x, r)
    free = 1.0 - a
    ok = free > 1e-10
    pred = np.zeros((rows.size, Yc.shape[1]))
    pred[ok] = (z[rows[ok]] - a[ok, None] * Yc[rows[ok]]) / free[ok, None]
    return float(np.mean(np.sum((pred - Yc[rows]) ** 2, axis=1)))


def local_diagonal(A: sparse.csr_matrix, i: int, rtol: float, pos: np.ndarray, *,
                   max_fraction: float = LOCAL_MAX_FRACTION) -> float:
    """``(A⁻¹)_ii`` from the graph neighbourhood of i, or NaN where that is not as exact as a global solve.

    For a symmetric positive definite sparse A whose inverse decays away from i (label propagation
    with many labels), ``A x = e_i`` is solved on the ball S of the points within h hops of i, with
    x = 0 outside it (h = 1, 2, …). The residual of that x on the whole graph is the local solve's
    residual on S plus ``−A_{∂S,S} x_S`` on the points just outside; once its norm is at most
    ``rtol`` the x is as good as a global CG solve stopped at ``rtol``, and ``a_ii ≈ x_i + xᵀ r`` is
    off by ``rᵀ A⁻¹ r`` (see :data:`LOO_UNIT_RTOL`), exactly as there. When the ball outgrows
    ``max_fraction`` of the points first, NaN: the caller solves globally.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix of shape (N, N)
        Symmetric positive definite, sorted indices.
    i : int
    rtol : float
        Residual to reach (``‖e_i‖ = 1``).
    pos : ndarray of shape (N,), int64
        Scratch: all −1 on entry, left all −1 on return.
    max_fraction : float
    """
    n = A.shape[0]
    indptr, indices, data = A.indptr, A.indices, A.data
    ball = np.array([i], dtype=np.int64)
    pos[i] = 0
    frontier = ball
    try:
        while True:
            starts, ends = indptr[frontier], indptr[frontier + 1]
            nbrs = indices[_ranges(starts, ends)]
            new = np.unique(nbrs[pos[nbrs] < 0])
            if new.size == 0 or ball.size + new.size > max_fraction * n:
                return float("nan")  # the whole component, or too large: solve globally
            pos[new] = np.arange(ball.size, ball.size + new.size)
            ball = np.concatenate([ball, new])
            frontier = new
            starts, ends = indptr[ball], indptr[ball + 1]
            take = _ranges(starts, ends)
            cols, vals = indices[take], data[take]
            row = np.repeat(np.arange(ball.size), ends - starts)
            local = pos[cols]
            inside = local >= 0
            # rows gathered in the ball's order: A_SS in CSR directly (column order within a row is free)
            ptr = np.concatenate([[0], np.cumsum(np.bincount(row[inside], minlength=ball.size))])
            A_ss = sparse.csr_matrix((vals[inside], local[inside], ptr), shape=(ball.size, ball.size))
            if ball.size < LOCAL_MIN_BALL and new.size:
                continue  # one hop never meets the residual (a ball of tens of points): grow first
            e = np.zeros((ball.size, 1))
            e[0, 0] = 1.0
            x, _ = conjugate_gradients(A_ss, e, rtol=0.1 * rtol, diagonal=A_ss.diagonal())
            x = x[:, 0]
            r_in = e[:, 0] - A_ss @ x
            out = ~inside  # −A_{∂S,S} x_S, gathered per outside point
            r_out = np.bincount(cols[out], weights=vals[out] * x[row[out]], minlength=n)
            if float(r_in @ r_in + r_out @ r_out) <= rtol * rtol:
                return float(x[0] + x @ r_in)
    finally:
        pos[ball] = -1


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenated index ranges ``starts[j] … ends[j] − 1``."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(total, dtype=np.int64) + offsets


def select_perplexity(X: np.ndarray, Y: np.ndarray, labelled: np.ndarray, gamma: float, *,
                      groups: np.ndarray | None = None, n_neighbors: int | None = None,
                      grid: tuple[float, ...] = PERPLEXITY_GRID, rng: np.random.Generator | None = None,
                      stop: Callable[[], bool] = lambda: False,
                      ) -> tuple[float, sparse.csr_matrix, dict[float, float]]:
    """The perplexity of ``grid`` whose graph propagates the labels best, by leave-one-out (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (N, D)
        All points, labelled and unlabelled.
    Y : ndarray of shape (N, C)
        Targets; rows of unlabelled points are ignored.
    labelled : ndarray of shape (N,), bool
    gamma : float
        γ of the label step (the same system is used).
    groups : ndarray of shape (N,), optional
        Each point's class (classification): a labelled point is held out only if its class keeps
        another label. None (regression): every labelled point can be held out.
    n_neighbors : int, optional
        k for every candidate (then only perplexities below k are tried); default 3K each.
    grid : tuple of float
        Candidate perplexities; those too large for N points are lowered to (N − 1)/3, as
        everywhere (:func:`models.graphs.usable_perplexity`), and duplicates dropped.
    rng : numpy Generator, optional
        Draws the held-out points when more than :data:`LOO_MAX_POINTS` qualify.
    stop : callable, optional
        Asked during the search; when it returns True (a cancel) the best candidate scored so
        far is returned (the first candidate when none was scored).

    Returns
    -------
    perplexity : float
        The candidate with the smallest leave-one-out error (the smaller perplexity on a tie), or,
        when no point can be held out, the candidate nearest :data:`FALLBACK_PERPLEXITY`.
    laplacian : scipy.sparse.csr_matrix
        That perplexity's graph Laplacian.
    scores : dict
        Perplexity → leave-one-out error, for every candidate tried (empty for the fallback).
    """
    n = X.shape[0]
    labelled = np.asarray(labelled, dtype=bool)
    if groups is None:
        rows = np.flatnonzero(labelled) if labelled.sum() >= 2 else np.zeros(0, dtype=np.int64)
    else:
        _, cls, counts = np.unique(np.asarray(groups)[labelled], return_inverse=True, return_counts=True)
        rows = np.flatnonzero(labelled)[counts[cls] >= 2]
    if rows.size > LOO_MAX_POINTS:
        rows = np.sort((rng or np.random.default_rng(0)).choice(rows, LOO_MAX_POINTS, replace=False))
    candidates = sorted({usable_perplexity(p, n) for p in grid} if n_neighbors is None
                        else {float(p) for p in grid if p < n_neighbors})
    if rows.size == 0 or not candidates:
        perplexity = (min(candidates, key=lambda p: abs(p - FALLBACK_PERPLEXITY)) if candidates
                      else usable_perplexity(FALLBACK_PERPLEXITY, n, n_neighbors))
        return perplexity, laptao_graph(X, perplexity, n_neighbors)[1], {}
    # one neighbour search for every candidate: each graph uses the first k of the largest k needed
    k_max = max(default_neighbors(n, p) if n_neighbors is None else int(n_neighbors) for p in candidates)
    neighbors = nearest_neighbors(X, k_max)
    scores: dict[float, float] = {}
    best: tuple[float, float, sparse.csr_matrix] | None = None
    for p in candidates:
        _, lap = laptao_graph(X, p, n_neighbors, neighbors=neighbors)
        error = leave_one_out_error(lap, Y, labelled, gamma, rows, stop=stop)
        if stop():
            best = best or (error, p, lap)
            break
        scores[p] = error
        if best is None or scores[p] < best[0]:
            best = (scores[p], p, lap)
    return best[1], best[2], scores
