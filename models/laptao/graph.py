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
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from models.graphs import entropic_affinities, laplacian, symmetrize
from treeviz.errors import TreevizError


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


def laptao_graph(X: np.ndarray, perplexity: float = 15.0,
                 n_neighbors: int | None = None) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
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

    Returns
    -------
    W, laplacian : scipy.sparse.csr_matrix of shape (N, N)
        As :func:`graph_from_affinities`; the degrees average exactly 1.
    """
    P, _ = entropic_affinities(X, perplexity, n_neighbors)
    return graph_from_affinities(P)
