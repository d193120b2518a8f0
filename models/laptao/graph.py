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
from models.laptao.label_step import make_solver
from treeviz.errors import TreevizError

#: Perplexities :func:`select_perplexity` tries by default (the spec's grid {5, 10, 15, 30}, with 3 added
#: because it won on digits and MNIST).
PERPLEXITY_GRID = (3.0, 5.0, 10.0, 15.0, 30.0)

#: Perplexity used when no labelled point can be held out (every class has a single label).
FALLBACK_PERPLEXITY = 15.0

#: Most labelled points the leave-one-out score holds out (a random subset above this).
LOO_MAX_POINTS = 300
#: Held-out points solved for at once (between two checks for a cancel).
LOO_BLOCK = 32

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
                        method: str = "auto", stop: Callable[[], bool] = lambda: False) -> float:
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
    method : {"auto", "lu", "cg"}
        How ``A`` is solved: a sparse LU (exact), conjugate gradients to a relative residual of
        1e-8 (sparse, O(N k) memory), or "auto": LU up to :data:`LU_MAX_POINTS` points, CG above.
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
    if method not in ("auto", "lu", "cg"):
        raise TreevizError(f"The leave-one-out solver must be 'auto', 'lu' or 'cg'; got {method!r}.")
    if method == "auto":
        method = "lu" if n <= LU_MAX_POINTS else "cg"
    solver = make_solver(laplacian, labelled, gamma, method=method, rtol=1e-8)
    Yc = np.where(labelled[:, None], np.asarray(Y, dtype=np.float64).reshape(n, -1), 0.0)
    z = solver.solve(Yc, 0.0)
    a = np.empty(rows.size)
    for start in range(0, rows.size, LOO_BLOCK):
        if stop():
            return float("nan")
        block = rows[start:start + LOO_BLOCK]
        unit = np.zeros((n, block.size))
        unit[block, np.arange(block.size)] = 1.0
        a[start:start + block.size] = solver.solve(unit, 0.0)[block, np.arange(block.size)]
    free = 1.0 - a
    ok = free > 1e-10
    pred = np.zeros((rows.size, Yc.shape[1]))
    pred[ok] = (z[rows[ok]] - a[ok, None] * Yc[rows[ok]]) / free[ok, None]
    return float(np.mean(np.sum((pred - Yc[rows]) ** 2, axis=1)))


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
