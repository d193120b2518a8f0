"""The evaluation paths of the embedding objectives and the pair arithmetic they share.

Three evaluation paths. ``path="auto"`` is exact (chunked) up to 5000 points and ``"fft"`` above,
for 2-D embeddings and repulsions that depend on Z alone; ``"exact"`` is chunked at any size; each
can be forced:

* ``"dense"``: every pair at once as N × N matrices; the reference (tests), only when asked for.
* ``"chunked"``: the attractive term over the stored entries of the (kNN) affinity graph only, the
  repulsive term (EE's Σ w⁻ K, t-SNE's normaliser Σ Kt and its gradient) exactly over all pairs in
  blocks of rows, so memory stays O(N · block) and the result equals the dense path up to
  rounding. There is no sampling, so line searches see a deterministic objective. Only the
  upper-triangular blocks are computed (each pair once). Measured on this project's 2-core CPU
  machine, float64, N = 10 000 points of 10-D data (two Gaussian blobs), perplexity 15, L = 2,
  default blocks (~10⁶ pairs): t-SNE ``value`` 0.10 s / 0.055 s and ``value_and_grad`` 0.26 s /
  0.13 s (1 / 2 torch threads); EE 0.16 s / 0.08 s and 0.31 s / 0.16 s. 50 spectral-direction
  iterations of free t-SNE took 16 s / 12 s after a 9 s sparse LU factorisation (1 s with
  ``sparsify=5``), so a few hundred iterations take one to two minutes. While another heavy
  process shared the two cores, 2 threads were up to 10 times slower than 1 (threads waiting on
  each other); set the thread count accordingly.
* ``"fft"``: the attractive term as above; the repulsive sum by
  :class:`~models.embedding.interpolation.PairSum`: pairs closer than a cutoff exactly (k-d tree),
  the smooth rest of the kernel interpolated on a lattice and convolved by FFT. Value and gradient
  are those of one deterministic function (the gradient is the exact derivative of the
  approximate value), so the spectral direction's Armijo search works unchanged. t-SNE: cutoff 8,
  boxes of side 8 with 5 nodes per side; relative errors against the exact path about 1e-5
  (value) and 2e-3 (gradient). The elastic embedding's exp(−d²) is below 1e-15 beyond its cutoff 6,
  so its fft path is the exact sum over the near pairs. When the points are too dense for near
  pairs to pay (more than N²/16 candidates, e.g. the first iterations from a tiny start) an
  evaluation falls back to the chunked sum. On 10 000 pendigits points (one thread, a shared
  machine) one t-SNE ``value_and_grad`` took 0.07 s against 0.30 s chunked, and 300 free
  iterations 54 s against 106 s, ending at the same KL (1.1927 vs 1.1927, both exact).
  :meth:`~models.embedding.objectives.base.EmbeddingObjective.exact` gives the exact objective for reporting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

#: Largest N for which ``path="auto"`` (and ``"exact"``) evaluates all pairs as dense N × N matrices:
#: none. The dense path is the reference (forced with ``path="dense"``); the chunked path computes the
#: same numbers (to rounding, tested) in bounded memory and was faster at every size measured: one
#: t-SNE ``value_and_grad`` (float64, one thread) took 14 ms against 64 ms at N = 1023 and 25 ms
#: against 306 ms at N = 2000; the elastic embedding 23 ms against 56 ms and 53 ms against 311 ms.
DENSE_MAX_POINTS = 0

#: Largest N for which ``path="auto"`` stays exact (dense, then chunked); above it the repulsion is
#: approximated on a grid (``"fft"``) where that path applies.
EXACT_MAX_POINTS = 5000

#: Pairs per block of the chunked path (rows per block = BLOCK_PAIRS // N).
BLOCK_PAIRS = 1 << 20

PATHS = ("auto", "exact", "dense", "chunked", "fft")


def resolve_path(path: str, n: int, fft_ok: bool = True) -> str:
    """The evaluation path for N points: "auto" is exact up to :data:`EXACT_MAX_POINTS` and "fft"
    above (where ``fft_ok``); "exact" is chunked (dense only up to :data:`DENSE_MAX_POINTS`, none)."""
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}; got {path!r}.")
    if path == "auto" and n > EXACT_MAX_POINTS and fft_ok:
        return "fft"
    if path in ("auto", "exact"):
        return "dense" if n <= DENSE_MAX_POINTS else "chunked"
    if path == "fft" and not fft_ok:
        raise ValueError("path='fft' approximates a repulsion that depends on the embedding alone; the elastic "
                         "embedding's repulsion='sqdist' needs path='chunked' or 'dense'.")
    return path


def pairwise_sq(Z: torch.Tensor) -> torch.Tensor:
    """All ||z_n − z_m||² from explicit differences (exact, O(N² L) memory)."""
    diff = Z[:, None, :] - Z[None, :, :]
    return (diff * diff).sum(-1)


def lap_apply(A: torch.Tensor, Z: torch.Tensor, rows: slice | None = None) -> torch.Tensor:
    """``Lap(A) Z`` for a dense A, or its rows ``rows`` when A is that block of rows."""
    own = Z if rows is None else Z[rows]
    return A.sum(1, keepdim=True) * own - A @ Z


def block_sq(Z: torch.Tensor, sq: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Squared distances from rows ``start:stop`` to rows ``start:`` (the upper-triangular block row)
    by the norm expansion ||a||² + ||b||² − 2 a·b; rounding can leave values of about −1e-13·||z||²
    where points coincide, harmless for both kernels (1/(1 + d²) and exp(−d²))."""
    d2 = torch.addmm(sq[None, start:], Z[start:stop], Z[start:].T, alpha=-2.0)
    return d2.add_(sq[start:stop, None])


def edges(W: sp.csr_matrix, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    coo = W.tocoo()
    rows = torch.as_tensor(coo.row.astype(np.int64), device=device)
    cols = torch.as_tensor(coo.col.astype(np.int64), device=device)
    return rows, cols, torch.as_tensor(coo.data, dtype=dtype, device=device)


def clean_affinities(affinities: Any) -> sp.csr_matrix:
    """Affinities as a CSR float64 matrix with a zero diagonal, checked square and non-negative."""
    W = sp.csr_matrix(affinities, dtype=np.float64) if not sp.issparse(affinities) else affinities
    W = sp.csr_matrix(W, dtype=np.float64, copy=True)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"The affinities must be a square N × N matrix; got shape {W.shape}.")
    if W.nnz and (not np.all(np.isfinite(W.data)) or W.data.min() < 0):
        raise ValueError("The affinities must be finite and non-negative.")
    W.setdiag(0.0)
    W.eliminate_zeros()
    return W


def chunked_pair_sum(
    Z: torch.Tensor,
    chunk_size: int,
    kernel_: Callable[[torch.Tensor, int, int], torch.Tensor],
    grad_weights_: Callable[[torch.Tensor], torch.Tensor],
    need_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The chunked path's repulsive sum: ``Σ_{n≠m} K_nm`` and (with ``need_grad``) ``G = Lap(A) Z``
    over all ordered pairs, in blocks of ``chunk_size`` rows.

    ``kernel_(d2, start, stop)`` turns a block row of squared distances into the kernel in place,
    ``grad_weights_(K)`` the kernel into the gradient's weights A in place. Only the
    upper-triangular part is computed: block row I = rows ``start:stop`` against columns
    ``start:``. The square block (I, I) holds both orders of its pairs; the rest is counted twice
    in the sum and added to the other rows' gradient through Aᵀ.
    """
    n = Z.shape[0]
    sq = (Z * Z).sum(1)
    Z1 = torch.cat([Z, torch.ones(n, 1, dtype=Z.dtype, device=Z.device)], dim=1)  # A·[Z, 1] gives AZ and A·1
    total = torch.zeros((), dtype=Z.dtype, device=Z.device)
    G = torch.zeros_like(Z) if need_grad else None
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        m = stop - start
        K = kernel_(block_sq(Z, sq, start, stop), start, stop)
        K.diagonal().zero_()
        total = total + 2.0 * K.sum() - K[:, :m].sum()
        if G is None:
            continue
        A = grad_weights_(K)
        AZ = A @ Z1[start:]
        G[start:stop] += AZ[:, -1:] * Z[start:stop] - AZ[:, :-1]
        if stop < n:
            AtZ = A[:, m:].T @ Z1[start:stop]
            G[stop:] += AtZ[:, -1:] * Z[stop:] - AtZ[:, :-1]
    return total, G
