"""Free-embedding objectives (t-SNE, the elastic embedding) and the spectral-direction optimiser
of the coordinate step (the Z-step) of tree embeddings.

Notation: N points, embedding Z of shape (N, L) (L = 2 usually), sums over ordered pairs (n, m)
with n ≠ m (each unordered pair counts twice), ``Lap(A) = diag(A·1) − A``.

* **Elastic embedding (EE)**: ``E(Z) = Σ w⁺_nm ||z_n − z_m||² + λ Σ w⁻_nm exp(−||z_n − z_m||²)``
  with gradient ``4 (Lap(W⁺) − Lap(λ W⁻ ∘ K)) Z``, ``K_nm = exp(−||z_n − z_m||²)``.
  W⁺ = (P + Pᵀ)/2 from row-stochastic affinities P; W⁻ = 1 off the diagonal, or the squared input
  distances. With ``weight_norm="unit_sum"`` both are scaled to sum to 1, which divides E by about
  N and replaces λ by about λ/N.
* **t-SNE**: ``E(Z) = Σ p_nm log(p_nm / q_nm)`` with the joint P = (P + Pᵀ)/(2N) and the Student-t
  ``q_nm = Kt_nm / Σ_{k≠l} Kt_kl``, ``Kt_nm = 1/(1 + ||z_n − z_m||²)``; gradient
  ``4 Lap((P − Q) ∘ Kt) Z``.
* **Penalty** (what the alternation with the tree adds): ``μ ||Z − T||² − 2 ⟨β, Z − T⟩`` with the
  tree's outputs T and, for the augmented Lagrangian, multipliers β (β = 0: quadratic penalty).
  Up to a constant it is ``μ ||Z − (T + β/μ)||²``; its Hessian is 2μ I. μ multiplies the squared
  norm itself (not μ/2), the scale of the tree-embedding papers' μ schedules.

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
  :meth:`EmbeddingObjective.exact` gives the exact objective for reporting.

The **spectral direction** (Vladymyrov and Carreira-Perpiñán, 2012) preconditions the gradient with
``B = 4·s·Lap(W_attr) + 2μ I + ridge·I``: the Hessian of the attractive term at Z = 0 (W_attr = W⁺
for EE, the joint P for t-SNE, s the exaggeration) plus the penalty's. B is factorised once (an
eigendecomposition reused for every μ and s for small N, a sparse LU per (μ, s) for large N), and
each iteration solves ``B d = −g`` and backtracks with Armijo's rule.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import torch
from scipy.sparse.linalg import splu
from scipy.spatial.distance import cdist

from models.devices import resolve_device
from models.embedding.interpolation import GAUSSIAN, STUDENT_T, PairSum, RadialKernel
from models.graphs import entropic_affinities, laplacian, symmetrize
from models.ground.errors import TreevizError
from models.parallel import interruptible

#: Largest N for which ``path="auto"`` (and ``"exact"``) evaluates all pairs as dense N × N matrices:
#: none. The dense path is the reference (forced with ``path="dense"``); the chunked path computes the
#: same numbers (to rounding, tested) in bounded memory and was faster at every size measured: one
#: t-SNE ``value_and_grad`` (float64, one thread) took 14 ms against 64 ms at N = 1023 and 25 ms
#: against 306 ms at N = 2000; the elastic embedding 23 ms against 56 ms and 53 ms against 311 ms.
DENSE_MAX_POINTS = 0

#: Largest N for which ``path="auto"`` stays exact (dense, then chunked); above it the repulsion is
#: approximated on a grid (``"fft"``) where that path applies.
EXACT_MAX_POINTS = 5000

#: Largest N for which ``SpectralDirection(method="auto")`` caches an eigendecomposition.
EIGH_MAX_POINTS = 2000

#: Largest N for which ``SpectralDirection(method="auto")`` factorises B (sparse LU); above it B d = −g
#: is solved by preconditioned conjugate gradients ("cg"). On a 14 000-point kNN graph of 20-D data
#: (perplexity 15) the LU of B built from each point's 5 strongest weights alone held 2.5e7 entries
#: and took 9 s per (μ, s) (one thread), over a minute with every weight: the fill of a kNN graph
#: grows with the data's intrinsic dimension, so factorising does not scale.
SPLU_MAX_POINTS = 5000

#: Pairs per block of the chunked path (rows per block = BLOCK_PAIRS // N).
BLOCK_PAIRS = 1 << 20

PATHS = ("auto", "exact", "dense", "chunked", "fft")


# --------------------------------------------------------------------------------------------------
# helpers


def _resolve_path(path: str, n: int, fft_ok: bool = True) -> str:
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


def _pairwise_sq(Z: torch.Tensor) -> torch.Tensor:
    """All ||z_n − z_m||² from explicit differences (exact, O(N² L) memory)."""
    diff = Z[:, None, :] - Z[None, :, :]
    return (diff * diff).sum(-1)


def _lap_apply(A: torch.Tensor, Z: torch.Tensor, rows: slice | None = None) -> torch.Tensor:
    """``Lap(A) Z`` for a dense A, or its rows ``rows`` when A is that block of rows."""
    own = Z if rows is None else Z[rows]
    return A.sum(1, keepdim=True) * own - A @ Z


def _block_sq(Z: torch.Tensor, sq: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Squared distances from rows ``start:stop`` to rows ``start:`` (the upper-triangular block row)
    by the norm expansion ||a||² + ||b||² − 2 a·b; rounding can leave values of about −1e-13·||z||²
    where points coincide, harmless for both kernels (1/(1 + d²) and exp(−d²))."""
    d2 = torch.addmm(sq[None, start:], Z[start:stop], Z[start:].T, alpha=-2.0)
    return d2.add_(sq[start:stop, None])


def _edges(W: sp.csr_matrix, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    coo = W.tocoo()
    rows = torch.as_tensor(coo.row.astype(np.int64), device=device)
    cols = torch.as_tensor(coo.col.astype(np.int64), device=device)
    return rows, cols, torch.as_tensor(coo.data, dtype=dtype, device=device)


def _clean_affinities(affinities: Any) -> sp.csr_matrix:
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


# --------------------------------------------------------------------------------------------------
# penalty


@dataclass(frozen=True)
class Penalty:
    """The term ``μ ||Z − T||² − 2 ⟨β, Z − T⟩`` added to an embedding objective.

    Parameters
    ----------
    mu : float
        Penalty weight μ ≥ 0 (it multiplies the squared norm; the Hessian is 2μ I).
    target : torch.Tensor of shape (N, L)
        T, e.g. the tree's outputs F(X).
    multipliers : torch.Tensor of shape (N, L), optional
        Augmented-Lagrangian multipliers β; None means the quadratic penalty (β = 0). The
        minimiser over Z of the penalised objective tends to T + β/μ as μ grows.
    """

    mu: float
    target: torch.Tensor
    multipliers: torch.Tensor | None = None

    def value_and_grad(self, Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The penalty's value and its gradient ``2μ (Z − T) − 2β``."""
        R = Z - self.target.to(Z)
        value = self.mu * (R * R).sum()
        grad = (2.0 * self.mu) * R
        if self.multipliers is not None:
            beta = self.multipliers.to(Z)
            value = value - 2.0 * (beta * R).sum()
            grad = grad - 2.0 * beta
        return value, grad


def _make_penalty(mu: float, target: Any, multipliers: Any, n: int, dtype: torch.dtype) -> Penalty:
    mu = float(mu)
    if not math.isfinite(mu) or mu < 0:
        raise ValueError(f"The penalty weight μ must be finite and ≥ 0; got {mu}.")
    T = torch.as_tensor(target, dtype=dtype) if not isinstance(target, torch.Tensor) else target.to(dtype)
    if T.ndim != 2 or T.shape[0] != n:
        raise ValueError(f"The penalty target must have shape (N, L) with N = {n}; got {tuple(T.shape)}.")
    B = None
    if multipliers is not None:
        if isinstance(multipliers, torch.Tensor):
            B = multipliers.to(dtype)
        else:
            B = torch.as_tensor(multipliers, dtype=dtype)
        if B.shape != T.shape:
            raise ValueError(f"The multipliers must have the target's shape {tuple(T.shape)}; got {tuple(B.shape)}.")
    return Penalty(mu, T, B)


# --------------------------------------------------------------------------------------------------
# objectives


class EmbeddingObjective(ABC):
    """An embedding objective E(Z), optionally plus a :class:`Penalty`, with its exact gradient.

    Subclasses (:class:`ElasticEmbedding`, :class:`TSNE`) implement ``_dense`` (every pair) and
    ``_sparse`` (attraction over the graph's edges, repulsion from :meth:`_pair_sum`: exact in
    blocks, or on a grid). Tensors are evaluated on whatever device they are on (constant buffers
    are copied to it once) and in the objective's dtype (float64 by default). ``value`` returns a
    0-dim tensor. On the ``"fft"`` path the value and gradient are those of the grid approximation
    (the gradient is exact for that approximate value); :meth:`exact` gives the same objective on
    an exact path.

    Attributes
    ----------
    n_points : int
    path : {"dense", "chunked", "fft"}
    requested_path : str
        The path asked for ("auto" falls back to "chunked" for an embedding that is not 2-D).
    chunk_size : int
        Rows per block of the chunked path.
    fft_settings : dict
        ``cutoff``, ``box`` and ``nodes`` of the fft path's :class:`~models.embedding.interpolation.PairSum`.
    penalty : Penalty or None
    attractive_weights : scipy.sparse.csr_matrix
        W_attr, whose Laplacian (times 4 and ``attractive_scale``) is the spectral direction's
        preconditioner.
    attractive_scale : float
        1, or t-SNE's exaggeration factor.
    affinities : scipy.sparse.csr_matrix or None
        The row-stochastic affinities P the objective was built from, when built by
        :func:`embedding_objective`.
    """

    attractive_weights: sp.csr_matrix
    attractive_scale: float = 1.0
    affinities: sp.csr_matrix | None = None

    #: The repulsive kernel and the fft path's defaults (cutoff, box, nodes), set by each subclass.
    _radial_kernel: ClassVar[RadialKernel]
    _fft_defaults: ClassVar[dict[str, float]]

    def __init__(self, n_points: int, *, path: str, chunk_size: int | None, dtype: torch.dtype,
                 fft_ok: bool = True, fft_settings: dict[str, float] | None = None) -> None:
        self.n_points = int(n_points)
        self.path = _resolve_path(path, self.n_points, fft_ok)
        self.requested_path = path
        unknown = set(fft_settings or {}) - set(self._fft_defaults)
        if unknown:
            raise ValueError(f"Unknown fft settings {sorted(unknown)}; known: {sorted(self._fft_defaults)}.")
        self.fft_settings = {**self._fft_defaults, **(fft_settings or {})}
        if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1):
            raise ValueError(f"chunk_size must be a positive integer or None; got {chunk_size!r}.")
        self.chunk_size = int(chunk_size) if chunk_size is not None else max(1, BLOCK_PAIRS // max(self.n_points, 1))
        self.dtype = dtype
        self.penalty: Penalty | None = None
        self._cache: dict[torch.device, dict[str, Any]] = {}

    # public API ------------------------------------------------------------------------------

    @property
    def penalty_mu(self) -> float:
        """μ of the penalty, 0 without one."""
        return 0.0 if self.penalty is None else self.penalty.mu

    def with_penalty(self, mu: float, target: Any, multipliers: Any = None) -> EmbeddingObjective:
        """A copy with the penalty ``μ ||Z − T||² − 2 ⟨β, Z − T⟩`` (sharing the cached buffers)."""
        out = copy.copy(self)
        out.penalty = _make_penalty(mu, target, multipliers, self.n_points, self.dtype)
        return out

    def without_penalty(self) -> EmbeddingObjective:
        """A copy with no penalty: the embedding objective E alone."""
        out = copy.copy(self)
        out.penalty = None
        return out

    def exact(self) -> EmbeddingObjective:
        """This objective (penalty included) on an exact path: itself when it is exact already, else a
        copy on the chunked path, with its own buffers."""
        if self.path != "fft":
            return self
        out = copy.copy(self)
        out.path = _resolve_path("exact", self.n_points)
        out.requested_path = "exact"
        out._cache = {}
        return out

    def embedding_value(self, Z: Any) -> torch.Tensor:
        """E(Z) alone, without the penalty (e.g. E(F(X)) of a tree's outputs)."""
        return self._evaluate(self._prepare(Z), need_grad=False)[0]

    def value(self, Z: Any) -> torch.Tensor:
        """E(Z) plus the penalty, a 0-dim tensor."""
        Z = self._prepare(Z)
        value = self._evaluate(Z, need_grad=False)[0]
        if self.penalty is not None:
            value = value + self.penalty.value_and_grad(Z)[0]
        return value

    def grad(self, Z: Any) -> torch.Tensor:
        """The gradient of :meth:`value`, shape (N, L)."""
        return self.value_and_grad(Z)[1]

    def value_and_grad(self, Z: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`value` and :meth:`grad` in one pass over the pairs."""
        Z = self._prepare(Z)
        value, grad = self._evaluate(Z, need_grad=True)
        if self.penalty is not None:
            pv, pg = self.penalty.value_and_grad(Z)
            value, grad = value + pv, grad + pg
        return value, grad

    def repulsive_sum(self, Z: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The repulsive pair sum ``S = Σ_{n≠m} w⁻_nm k(||z_n − z_m||²)`` and ``∂S/∂Z`` on this
        objective's path (blocks for the dense path): t-SNE's normaliser Σ Kt, or the elastic
        embedding's repulsion without λ. It is the part the fft path approximates (for checks)."""
        Z = self._prepare(Z)
        objective = self
        if self.path == "dense":
            objective = copy.copy(self)
            objective.path, objective._cache = "chunked", {}
        total, grad = objective._pair_sum(Z, objective._buffers(Z.device), True)
        assert grad is not None
        return total, grad

    # internals -------------------------------------------------------------------------------

    def _prepare(self, Z: Any) -> torch.Tensor:
        if not isinstance(Z, torch.Tensor):
            Z = torch.as_tensor(np.asarray(Z, dtype=np.float64))
        Z = Z.detach().to(self.dtype)
        if Z.ndim != 2 or Z.shape[0] != self.n_points:
            raise ValueError(f"Z must have shape (N, L) with N = {self.n_points}; got {tuple(Z.shape)}.")
        return Z

    def _buffers(self, device: torch.device) -> dict[str, Any]:
        if device not in self._cache:
            self._cache[device] = self._build(device)
        return self._cache[device]

    def _evaluate(self, Z: torch.Tensor, need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.path == "fft" and Z.shape[1] != 2:
            if self.requested_path != "auto":
                raise ValueError(f"path='fft' is for 2-D embeddings; got Z with {Z.shape[1]} columns.")
            return self.exact()._evaluate(Z, need_grad)
        buffers = self._buffers(Z.device)
        if self.path == "dense":
            return self._dense(Z, buffers, need_grad)
        return self._sparse(Z, buffers, need_grad)

    def _pair_sum(
        self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``S = Σ_{n≠m} k_nm`` of the repulsive kernel and (with ``need_grad``) ``∂S/∂Z``: exact in
        blocks on the chunked path, the grid approximation and its exact gradient on the fft path."""
        if self.path == "fft":
            if "pair_sum" not in b:
                b["pair_sum"] = PairSum(self._radial_kernel, **self.fft_settings)
            out = b["pair_sum"](Z, need_grad=need_grad)
            if out is not None:
                return out.total, out.grad
            # too dense for near pairs (e.g. the first iterations from a tiny start): exact blocks
        total, G = self._repulsion(Z, b, need_grad)
        # ∂k(d²_nm)/∂z_n = k'(d²)·2(z_n − z_m), and −k' is the weight _grad_weights_ gives, for both kernels
        return total, (None if G is None else -4.0 * G)

    @abstractmethod
    def _build(self, device: torch.device) -> dict[str, Any]:
        """The constant buffers (weights, edges) on ``device``; built once per device."""

    @abstractmethod
    def _dense(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """E(Z) (and its gradient) with every pair at once as N × N matrices."""

    @abstractmethod
    def _sparse(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """E(Z) (and its gradient): attraction over the graph's edges, repulsion by :meth:`_pair_sum`."""


    @abstractmethod
    def _kernel_(self, d2: torch.Tensor, start: int, stop: int, b: dict[str, Any]) -> torch.Tensor:
        """The repulsive kernel of a block row of squared distances, computed in place."""

    @abstractmethod
    def _grad_weights_(self, K: torch.Tensor) -> torch.Tensor:
        """The weights a_nm of the repulsive gradient Σ_m a_nm (z_n − z_m), in place from K."""

    def _repulsion(
        self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``Σ_{n≠m} K_nm`` and (with ``need_grad``) ``G = Lap(A) Z`` over all ordered pairs.

        Only the upper-triangular part is computed: block row I = rows ``start:stop`` against
        columns ``start:``. The square block (I, I) holds both orders of its pairs; the rest is
        counted twice in the sum and added to the other rows' gradient through Aᵀ.
        """
        n = self.n_points
        sq = (Z * Z).sum(1)
        Z1 = torch.cat([Z, torch.ones(n, 1, dtype=Z.dtype, device=Z.device)], dim=1)  # A·[Z, 1] gives AZ and A·1
        total = torch.zeros((), dtype=Z.dtype, device=Z.device)
        G = torch.zeros_like(Z) if need_grad else None
        for start in range(0, n, self.chunk_size):
            stop = min(start + self.chunk_size, n)
            m = stop - start
            K = self._kernel_(_block_sq(Z, sq, start, stop), start, stop, b)
            K.diagonal().zero_()
            total = total + 2.0 * K.sum() - K[:, :m].sum()
            if G is None:
                continue
            A = self._grad_weights_(K)
            AZ = A @ Z1[start:]
            G[start:stop] += AZ[:, -1:] * Z[start:stop] - AZ[:, :-1]
            if stop < n:
                AtZ = A[:, m:].T @ Z1[start:stop]
                G[stop:] += AtZ[:, -1:] * Z[stop:] - AtZ[:, :-1]
        return total, G


REPULSIONS = ("ones", "sqdist")
WEIGHT_NORMS = ("rows", "unit_sum")


class ElasticEmbedding(EmbeddingObjective):
    """The elastic embedding ``Σ w⁺ ||z_n − z_m||² + λ Σ w⁻ exp(−||z_n − z_m||²)``.

    Parameters
    ----------
    affinities : sparse or dense (N, N)
        Non-negative affinities P, typically the row-stochastic entropic affinities; W⁺ is
        (P + Pᵀ)/2 (a no-op for a symmetric matrix), diagonal dropped.
    lam : float, default 100
        Repulsion weight λ ≥ 0.
    repulsion : {"ones", "sqdist"}, default "ones"
        W⁻: 1 for every pair n ≠ m, or the squared input distances ||x_n − x_m||² (needs ``X``).
    X : array of shape (N, D), optional
        The input points, for ``repulsion="sqdist"``.
    weight_norm : {"rows", "unit_sum"}, default "rows"
        "rows": W⁺ = (P + Pᵀ)/2 (degrees about 1, total about N) and W⁻ as given. "unit_sum": W⁺
        and W⁻ each scaled to sum to 1. The scale matters: on standardised breast cancer
        (perplexity 15) "rows" with λ = 100 spreads the points into an even lattice (1-NN accuracy
        in 2-D 0.65-0.72; L-BFGS reached E = 7.1e4, 1000 spectral-direction iterations 1.0e5-1.1e5),
        "rows" with λ = 1 gives 0.94 and "unit_sum" with λ = 100 gives 0.95 (E = 4.549, converged
        in about 340 iterations).
    path : {"auto", "exact", "dense", "chunked", "fft"}, default "auto"
        "auto": chunked up to 5000, fft above (chunked for ``"sqdist"``,
        which the fft path cannot do); "exact": dense or chunked (see the module docstring).
    chunk_size : int, optional
        Rows per block of the chunked path.
    fft_settings : dict, optional
        ``cutoff``, ``box``, ``nodes`` of the fft path (:class:`~models.embedding.interpolation.PairSum`);
        the elastic embedding's default cutoff 6 leaves no far field (exp(−36) ≈ 2e-16), so its
        fft path is the exact sum over pairs closer than 6.
    dtype : torch.dtype, default torch.float64
    """

    _radial_kernel = GAUSSIAN
    _fft_defaults: ClassVar[dict[str, float]] = {"cutoff": 6.0, "box": 6.0, "nodes": 5}

    def __init__(
        self,
        affinities: Any,
        *,
        lam: float = 100.0,
        repulsion: str = "ones",
        X: Any = None,
        weight_norm: str = "rows",
        path: str = "auto",
        chunk_size: int | None = None,
        fft_settings: dict[str, float] | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        W = _clean_affinities(symmetrize(_clean_affinities(affinities)))
        n = W.shape[0]
        if repulsion not in REPULSIONS:
            raise TreevizError(f"The repulsion weights must be one of {REPULSIONS}; got {repulsion!r}.")
        super().__init__(n, path=path, chunk_size=chunk_size, dtype=dtype, fft_ok=repulsion == "ones",
                         fft_settings=fft_settings)
        lam = float(lam)
        if not math.isfinite(lam) or lam < 0:
            raise TreevizError(f"The elastic embedding's repulsion weight λ must be finite and ≥ 0; got {lam}.")
        if weight_norm not in WEIGHT_NORMS:
            raise TreevizError(f"The weight normalisation must be one of {WEIGHT_NORMS}; got {weight_norm!r}.")
        self.lam, self.repulsion, self.weight_norm = lam, repulsion, weight_norm
        self._X: np.ndarray | None = None
        if repulsion == "sqdist":
            if X is None:
                raise ValueError("repulsion='sqdist' needs the input points X.")
            self._X = np.asarray(X, dtype=np.float64)
            if self._X.ndim != 2 or self._X.shape[0] != n:
                raise ValueError(f"X must have shape (N, D) with N = {n}; got {self._X.shape}.")
        pos_scale, neg_scale = 1.0, 1.0
        if weight_norm == "unit_sum":
            total = W.sum()
            pos_scale = 1.0 / total if total > 0 else 1.0
            if repulsion == "ones":
                neg_total = n * (n - 1.0)
            else:  # Σ_{n,m} ||x_n − x_m||² = 2N Σ_n ||x_n − x̄||²
                neg_total = 2.0 * n * float(((self._X - self._X.mean(0)) ** 2).sum())
            neg_scale = 1.0 / neg_total if neg_total > 0 else 1.0
        self.attractive_weights = (W * pos_scale).tocsr()
        self.attractive_scale = 1.0
        self._neg = lam * neg_scale  # λ times W⁻'s normalisation

    def _build(self, device: torch.device) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.path == "dense":
            out["Wp"] = torch.as_tensor(self.attractive_weights.toarray(), dtype=self.dtype, device=device)
            if self.repulsion == "ones":
                Wn = torch.ones(self.n_points, self.n_points, dtype=self.dtype, device=device)
                Wn.fill_diagonal_(0.0)
            else:
                Wn = torch.as_tensor(cdist(self._X, self._X, "sqeuclidean"), dtype=self.dtype, device=device)
                Wn.fill_diagonal_(0.0)
            out["Wn"] = Wn
        else:
            out["edges"] = _edges(self.attractive_weights, device, self.dtype)
            if self.repulsion == "sqdist":
                X = torch.as_tensor(self._X, dtype=self.dtype, device=device)
                out["X"], out["xsq"] = X, (X * X).sum(1)
        return out

    def _dense(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        d2 = _pairwise_sq(Z)
        rep = (self._neg * b["Wn"]) * torch.exp(-d2)
        value = (b["Wp"] * d2).sum() + rep.sum()
        grad = 4.0 * _lap_apply(b["Wp"] - rep, Z) if need_grad else None
        return value, grad

    def _sparse(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        rows, cols, w = b["edges"]
        diff = Z[rows] - Z[cols]
        value = (w * (diff * diff).sum(1)).sum()
        rep, dS = self._pair_sum(Z, b, need_grad)
        grad = None
        if need_grad:
            grad = torch.zeros_like(Z).index_add_(0, rows, (4.0 * w)[:, None] * diff)
            grad += self._neg * dS
        return value + self._neg * rep, grad

    def _kernel_(self, d2: torch.Tensor, start: int, stop: int, b: dict[str, Any]) -> torch.Tensor:
        K = d2.neg_().exp_()
        if self.repulsion == "sqdist":
            K.mul_(_block_sq(b["X"], b["xsq"], start, stop).clamp_min_(0.0))
        return K

    def _grad_weights_(self, K: torch.Tensor) -> torch.Tensor:
        return K


class TSNE(EmbeddingObjective):
    """t-SNE's ``KL(P || Q)`` with the Student-t kernel, from affinities P.

    Parameters
    ----------
    affinities : sparse or dense (N, N)
        Non-negative affinities: the row-stochastic entropic affinities (then the joint P is
        (P + Pᵀ)/(2N)), or an already joint P. The joint P is (A + Aᵀ) scaled to sum to 1, with the
        diagonal dropped, which gives both.
    exaggeration : float, default 1
        Early-exaggeration factor α > 0. With α ≠ 1 the objective is
        ``Σ p log p + α Σ p log(1 + d²) + log Σ Kt``, whose gradient is t-SNE's exaggerated one
        ``4 Lap((αP − Q) ∘ Kt) Z``; α = 1 is the KL divergence.
    path, chunk_size, dtype
        As for :class:`ElasticEmbedding` ("auto": fft above 5000 points for 2-D embeddings).
    fft_settings : dict, optional
        ``cutoff``, ``box``, ``nodes`` of the fft path (:class:`~models.embedding.interpolation.PairSum`);
        default 8, 8, 5.
    """

    _radial_kernel = STUDENT_T
    _fft_defaults: ClassVar[dict[str, float]] = {"cutoff": 8.0, "box": 8.0, "nodes": 5}

    def __init__(
        self,
        affinities: Any,
        *,
        exaggeration: float = 1.0,
        path: str = "auto",
        chunk_size: int | None = None,
        fft_settings: dict[str, float] | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        A = _clean_affinities(affinities)
        P = (A + A.T).tocsr()
        total = P.sum()
        if not total > 0:
            raise ValueError("The affinities are all zero; t-SNE needs some positive affinities.")
        P = (P / total).tocsr()
        super().__init__(P.shape[0], path=path, chunk_size=chunk_size, dtype=dtype, fft_settings=fft_settings)
        self.joint = P
        self.attractive_weights = P
        self.attractive_scale = self._check_exaggeration(exaggeration)
        self._plogp = float(np.sum(P.data * np.log(P.data)))

    @staticmethod
    def _check_exaggeration(alpha: float) -> float:
        alpha = float(alpha)
        if not math.isfinite(alpha) or alpha <= 0:
            raise TreevizError(f"The exaggeration factor must be a finite number > 0; got {alpha}.")
        return alpha

    @property
    def exaggeration(self) -> float:
        return self.attractive_scale

    def with_exaggeration(self, alpha: float) -> TSNE:
        """A copy with exaggeration factor α (sharing the cached buffers)."""
        out = copy.copy(self)
        out.attractive_scale = self._check_exaggeration(alpha)
        return out

    def _build(self, device: torch.device) -> dict[str, Any]:
        if self.path == "dense":
            return {"P": torch.as_tensor(self.joint.toarray(), dtype=self.dtype, device=device)}
        return {"edges": _edges(self.joint, device, self.dtype)}

    def _dense(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        alpha, P = self.attractive_scale, b["P"]
        d2 = _pairwise_sq(Z)
        Kt = 1.0 / (1.0 + d2)
        Kt.fill_diagonal_(0.0)
        zsum = Kt.sum()
        value = self._plogp + alpha * (P * torch.log1p(d2)).sum() + torch.log(zsum)
        grad = 4.0 * _lap_apply((alpha * P - Kt / zsum) * Kt, Z) if need_grad else None
        return value, grad

    def _sparse(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        alpha = self.attractive_scale
        rows, cols, p = b["edges"]
        diff = Z[rows] - Z[cols]
        d2e = (diff * diff).sum(1)
        zsum, dS = self._pair_sum(Z, b, need_grad)
        value = self._plogp + alpha * (p * torch.log1p(d2e)).sum() + torch.log(zsum)
        grad = None
        if need_grad:
            grad = torch.zeros_like(Z).index_add_(0, rows, (4.0 * alpha * p / (1.0 + d2e))[:, None] * diff)
            grad += dS / zsum
        return value, grad

    def _kernel_(self, d2: torch.Tensor, start: int, stop: int, b: dict[str, Any]) -> torch.Tensor:
        return d2.add_(1.0).reciprocal_()

    def _grad_weights_(self, K: torch.Tensor) -> torch.Tensor:
        return K.mul_(K)


def student_t_q(Z: Any) -> np.ndarray:
    """t-SNE's dense Q for an embedding Z (zero diagonal, sums to 1); for inspection at small N."""
    Z = torch.as_tensor(np.asarray(Z, dtype=np.float64))
    Kt = 1.0 / (1.0 + _pairwise_sq(Z))
    Kt.fill_diagonal_(0.0)
    return (Kt / Kt.sum()).numpy()


# --------------------------------------------------------------------------------------------------
# spectral direction


@dataclass
class ZStepResult:
    """What :meth:`SpectralDirection.minimize` did.

    Attributes
    ----------
    Z : torch.Tensor of shape (N, L)
        The final iterate (on the device of the initial one).
    values : list of float
        The objective at the start and after each iteration (strictly decreasing).
    steps, slopes : list of float
        Each iteration's accepted step α and directional derivative ⟨∇f, d⟩ < 0, so that
        ``values[i + 1] <= values[i] + c · steps[i] · slopes[i]`` (Armijo).
    n_iter : int
    converged : bool
        True when the relative change of the iterates fell below ``tol`` or the direction was no
        longer a descent direction (a stationary point).
    reason : str
        ``"tolerance"``, ``"stationary"``, ``"max_iter"`` or ``"line_search"`` (no step satisfied
        Armijo's rule; Z is the last accepted iterate).
    """

    Z: torch.Tensor
    values: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    slopes: list[float] = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    reason: str = "max_iter"


def armijo_backtracking(
    value_and_grad: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    Z: torch.Tensor,
    direction: torch.Tensor,
    value: float,
    slope: float,
    step: float,
    *,
    value_only: Callable[[torch.Tensor], torch.Tensor] | None = None,
    c: float = 0.1,
    rho: float = 0.8,
    max_backtracks: int = 100,
) -> tuple[float, torch.Tensor, float, torch.Tensor] | None:
    """Backtracking line search with Armijo's sufficient-decrease rule.

    Tries ``α = step · ρ^j`` for j = 0, 1, … and accepts the first with
    ``f(Z + α d) ≤ f(Z) + c α ⟨∇f, d⟩`` (``slope`` = ⟨∇f, d⟩ < 0). The first trial is evaluated
    with ``value_and_grad`` (it is usually accepted); later trials with ``value_only`` when given
    (cheaper), and the gradient is then computed once at the accepted point.

    Returns
    -------
    (alpha, Z_new, f_new, grad_new), or None when no trial step passed (a NaN value fails).
    """
    alpha = float(step)
    for j in range(max_backtracks + 1):
        Z_new = Z + alpha * direction
        if j == 0 or value_only is None:
            f_new, g_new = value_and_grad(Z_new)
        else:
            f_new, g_new = value_only(Z_new), None
        f_new = float(f_new)
        if f_new <= value + c * alpha * slope:
            if g_new is None:
                g_new = value_and_grad(Z_new)[1]
            return alpha, Z_new, f_new, g_new
        alpha *= rho
    return None


METHODS = ("auto", "eigh", "splu", "cg")


def _strongest(W: sp.csr_matrix, count: int) -> sp.csr_matrix:
    """Each row's ``count`` largest entries of W, symmetrised by the elementwise maximum."""
    if count < 1:
        raise ValueError(f"sparsify must be a positive integer; got {count}.")
    coo = W.tocoo()
    order = np.lexsort((-coo.data, coo.row))
    rows = coo.row[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, rows, side="left")
    keep = order[rank < count]
    M = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=W.shape)
    return M.maximum(M.T).tocsr()


class SpectralDirection:
    """The spectral-direction optimiser, with B = 4·s·Lap(W) + 2μ I + ridge·I factorised once.

    Parameters
    ----------
    weights : sparse or dense (N, N)
        The symmetric non-negative attractive weights W (an objective's ``attractive_weights``).
    method : {"auto", "eigh", "splu", "cg"}, default "auto"
        "eigh" eigendecomposes 4·Lap(W) = Q Λ Qᵀ once; then ``B⁻¹ G = Q (sΛ + 2μ + ridge)⁻¹ Qᵀ G``
        for any μ and s, at O(N² L) per solve. "splu" factorises the sparse B with SciPy's
        ``splu`` (symmetric ordering, no pivoting: B is positive definite) for each (μ, s),
        keeping the last ``max_factorizations``. "cg" solves B d = −g inexactly by conjugate
        gradients with B's diagonal as preconditioner, from d = 0, at most ``cg_iter`` iterations
        or until the preconditioned residual falls below ``cg_tol`` of its start: O(nnz(W) · L)
        per iteration and no N × N or fill-in memory. Started from 0, every CG iterate d_k
        minimises ½ dᵀBd + gᵀd over a Krylov space that contains it, so gᵀd_k = −d_kᵀBd_k < 0: an
        inexact solve is still a descent direction, and the Armijo search is unchanged. "auto"
        picks eigh for N ≤ 2000, splu up to 5000 and cg above (see :data:`SPLU_MAX_POINTS`).
    cg_iter, cg_tol : int, float, default 100 and 1e-3
        The "cg" method's most iterations and relative tolerance.
    ridge : float, default 1e-3
        Relative ridge: ``ridge · max diag(4·Lap(W))`` is added to B's diagonal, so B is positive
        definite also for μ = 0 (Lap(W) is singular). The spectral-direction papers use a tiny
        ridge (1e-10); on a kNN graph with two weakly connected clusters (two Gaussian blobs,
        N = 3000, perplexity 15) that sent the clusters 10⁶ apart in the first accepted step, after
        which the relative-change test stopped the run at KL 4.37; 1e-4 did the same, 1e-3 reached
        KL 2.82 in 100 iterations. On breast cancer (one connected graph) 1e-3 changed the t-SNE
        objective after 1000 iterations from 1.0962 to 1.0969.
    sparsify : int, optional
        Build B from each point's ``sparsify`` largest weights only (symmetrised by the maximum).
        B stays positive definite, so directions stay descent directions, and the sparse LU's
        fill drops: N = 10 000 points of 10-D data, perplexity 15, took 9 s to factorise in full
        and 0.8 s with ``sparsify=5``. Default: all weights.
    max_factorizations : int, default 2
        Sparse LU factors kept (an alternation switches between few (μ, s) values).
    stop : callable, optional
        A cancel: the eigendecomposition is left at once when it returns True, and "splu" is used.
    """

    def __init__(
        self,
        weights: Any,
        *,
        method: str = "auto",
        ridge: float = 1e-3,
        sparsify: int | None = None,
        max_factorizations: int = 2,
        cg_iter: int = 100,
        cg_tol: float = 1e-3,
        stop: Callable[[], bool] = lambda: False,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}; got {method!r}.")
        if not (math.isfinite(ridge) and ridge >= 0):
            raise ValueError(f"ridge must be finite and ≥ 0; got {ridge}.")
        if not sp.issparse(weights):
            weights = np.asarray(weights, dtype=np.float64)
        W = sp.csr_matrix(weights, dtype=np.float64)
        if sparsify is not None:
            W = _strongest(W, int(sparsify))
        self.n_points = W.shape[0]
        self._lap4 = (4.0 * laplacian(W)).tocsc()
        top = float(self._lap4.diagonal().max()) if self.n_points else 0.0
        self.ridge = float(ridge) * (top if top > 0 else 1.0)
        if method == "auto":
            method = ("eigh" if self.n_points <= EIGH_MAX_POINTS
                      else "splu" if self.n_points <= SPLU_MAX_POINTS else "cg")
        self.method = method
        if int(cg_iter) != cg_iter or cg_iter < 1 or not (math.isfinite(cg_tol) and cg_tol >= 0):
            raise ValueError(f"cg_iter must be a positive integer and cg_tol ≥ 0; got {cg_iter!r} and {cg_tol!r}.")
        self.cg_iter, self.cg_tol = int(cg_iter), float(cg_tol)
        self._lap4_csr = self._lap4.tocsr() if method == "cg" else None
        self._factors: OrderedDict[tuple[float, float], Any] = OrderedDict()
        self._max_factors = max(1, int(max_factorizations))
        self._eig_cache: dict[tuple[torch.device, torch.dtype], tuple[torch.Tensor, torch.Tensor]] = {}
        if self.method == "eigh":
            # seconds on 2000 points: a cancel leaves it to its thread and factorises per (μ, s) instead
            eig = interruptible(scipy.linalg.eigh, self._lap4.toarray(), stop=stop)
            if eig is None:
                self.method = "splu"
            else:
                self._evals, self._evecs = np.clip(eig[0], 0.0, None), eig[1]

    @classmethod
    def for_objective(cls, objective: EmbeddingObjective, **kwargs: Any) -> SpectralDirection:
        """The spectral direction of an objective's attractive weights."""
        return cls(objective.attractive_weights, **kwargs)

    def matrix(self, mu: float = 0.0, scale: float = 1.0) -> sp.csr_matrix:
        """B = 4·s·Lap(W) + (2μ + ridge) I as a sparse matrix (for checks)."""
        eye = sp.identity(self.n_points, format="csc")
        return (scale * self._lap4 + (2.0 * mu + self.ridge) * eye).tocsr()

    def solve(self, G: Any, mu: float = 0.0, scale: float = 1.0) -> Any:
        """B⁻¹ G for G of shape (N, L): a tensor (same device and dtype) or an ndarray."""
        as_numpy = not isinstance(G, torch.Tensor)
        Gt = torch.as_tensor(np.asarray(G, dtype=np.float64)) if as_numpy else G
        mu, scale = float(mu), float(scale)
        if self.method == "eigh":
            Q, lam = self._eig_on(Gt.device, Gt.dtype)
            coef = (Q.T @ Gt) / (scale * lam + 2.0 * mu + self.ridge)[:, None]
            out = Q @ coef
        elif self.method == "cg":
            x = self._cg(np.ascontiguousarray(Gt.detach().cpu().numpy(), dtype=np.float64), mu, scale)
            out = torch.as_tensor(x).to(device=Gt.device, dtype=Gt.dtype)
        else:
            lu = self._factor(mu, scale)
            x = lu.solve(np.ascontiguousarray(Gt.detach().cpu().numpy(), dtype=np.float64))
            out = torch.as_tensor(x).to(device=Gt.device, dtype=Gt.dtype)
        return out.numpy() if as_numpy else out

    def _cg(self, G: np.ndarray, mu: float, scale: float) -> np.ndarray:
        """B⁻¹ G approximately: Jacobi-preconditioned conjugate gradients from 0, each column of G
        its own CG (the columns run together, each with its own step sizes) until its
        preconditioned residual norm is below ``cg_tol`` times its start, or ``cg_iter`` iterations."""
        A = self._lap4_csr
        assert A is not None
        shift = 2.0 * mu + self.ridge
        inv_diag = 1.0 / (scale * A.diagonal() + shift)
        x = np.zeros_like(G)
        r = G.copy()
        z = r * inv_diag[:, None]
        p = z.copy()
        rz = (r * z).sum(0)
        limit = (self.cg_tol ** 2) * rz
        active = rz > 0
        for _ in range(self.cg_iter):
            if not active.any():
                break
            Bp = scale * (A @ p) + shift * p
            pBp = (p * Bp).sum(0)
            alpha = np.where(active, rz / np.where(pBp > 0, pBp, 1.0), 0.0)
            x += alpha * p
            r -= alpha * Bp
            z = r * inv_diag[:, None]
            rz_new = (r * z).sum(0)
            active &= rz_new > limit
            beta = np.where(active, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
            p = z + beta * p
            rz = rz_new
        return x

    def _eig_on(self, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        key = (device, dtype)
        if key not in self._eig_cache:
            self._eig_cache[key] = (
                torch.as_tensor(self._evecs, dtype=dtype, device=device),
                torch.as_tensor(self._evals, dtype=dtype, device=device),
            )
        return self._eig_cache[key]

    def _factor(self, mu: float, scale: float) -> Any:
        key = (mu, scale)
        if key in self._factors:
            self._factors.move_to_end(key)
            return self._factors[key]
        # B is symmetric positive definite: no pivoting needed, a symmetric ordering keeps fill low.
        lu = splu(
            self.matrix(mu, scale).tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
            options={"SymmetricMode": True},
        )
        self._factors[key] = lu
        while len(self._factors) > self._max_factors:
            self._factors.popitem(last=False)
        return lu

    def minimize(
        self,
        objective: EmbeddingObjective,
        Z0: Any,
        *,
        max_iter: int = 100,
        tol: float = 1e-4,
        c: float = 0.1,
        rho: float = 0.8,
        max_step: float = 1.0,
        max_backtracks: int = 100,
        callback: Callable[[int, torch.Tensor, float], Any] | None = None,
        stop: Callable[[], bool] = lambda: False,
    ) -> ZStepResult:
        """Minimise ``objective`` (E plus its penalty, if any) from Z0 along spectral directions.

        Each iteration solves ``B d = −∇f`` with B for the objective's μ and attractive scale,
        then backtracks from ``min(max_step, previous step / ρ)`` (1 at the first iteration: the
        previous accepted step, allowed to grow back by one factor ρ) with Armijo's rule
        (constant ``c``, shrink ``ρ``). It stops when ``||Z_k − Z_{k−1}||_F / ||Z_{k−1}||_F < tol``,
        after ``max_iter`` iterations, or when no step passes the line search. Values are strictly
        decreasing across iterations.

        Parameters
        ----------
        objective : EmbeddingObjective
        Z0 : tensor or array of shape (N, L)
            The start (a tensor stays on its device).
        max_iter : int, default 100
            The Z-step of a tree embedding uses 100; a free embedding 1000-2000.
        tol : float, default 1e-4
        c, rho : float
            Armijo constant and backtracking factor.
        max_step : float, default 1
            The largest trial step (1 is the natural step of the spectral direction).
        max_backtracks : int, default 100
        callback : callable, optional
            ``callback(iteration, Z, value)`` after each accepted step.
        stop : callable, optional
            Asked before every iteration; when it returns True (a cancel) the run ends there, with
            reason ``"stopped"``.
        """
        if max_iter < 0 or not (0 < c < 1) or not (0 < rho < 1) or not max_step > 0:
            raise ValueError("Need max_iter ≥ 0, 0 < c < 1, 0 < rho < 1 and max_step > 0.")
        Z = objective._prepare(Z0).clone()
        mu, scale = objective.penalty_mu, objective.attractive_scale
        f, g = objective.value_and_grad(Z)
        result = ZStepResult(Z=Z, values=[float(f)])
        step = max_step * rho  # so that the first trial is max_step
        for it in range(max_iter):
            if stop():
                result.reason = "stopped"
                break
            d = -self.solve(g, mu, scale)
            slope = float((g * d).sum())
            if not slope < 0:
                result.converged, result.reason = True, "stationary"
                break
            found = armijo_backtracking(
                objective.value_and_grad, Z, d, result.values[-1], slope, min(max_step, step / rho),
                value_only=objective.value, c=c, rho=rho, max_backtracks=max_backtracks,
            )
            if found is None:
                result.reason = "line_search"
                break
            step, Z_new, f_new, g = found
            change = float(torch.linalg.norm(Z_new - Z)) / max(float(torch.linalg.norm(Z)), 1e-300)
            Z = Z_new
            result.values.append(f_new)
            result.steps.append(step)
            result.slopes.append(slope)
            if callback is not None:
                callback(it, Z, f_new)
            if change < tol:
                result.converged, result.reason = True, "tolerance"
                break
        result.Z, result.n_iter = Z, len(result.steps)
        return result


# --------------------------------------------------------------------------------------------------
# free embedding


@dataclass
class FreeEmbedding:
    """A free (unconstrained) embedding and what produced it.

    Attributes
    ----------
    Z : ndarray of shape (N, L)
    objective : EmbeddingObjective
        The objective minimised (no exaggeration, no penalty): reuse it to evaluate E(F(X)).
    optimizer : SpectralDirection
        Its spectral direction, with the factorisation cached (reuse it for the Z-steps).
    result : ZStepResult
        The (final, unexaggerated) optimisation run.
    warmup : ZStepResult or None
        The early-exaggeration run, when there was one.
    affinities : scipy.sparse.csr_matrix
        The row-stochastic affinities the objective was built from.
    """

    Z: np.ndarray
    objective: EmbeddingObjective
    optimizer: SpectralDirection
    result: ZStepResult
    warmup: ZStepResult | None
    affinities: sp.csr_matrix

    @property
    def value(self) -> float:
        """The objective at Z."""
        return self.result.values[-1]


METHOD_NAMES = ("tsne", "ee")
INITS = ("random", "pca")


def initial_embedding(
    n_points: int,
    n_components: int,
    *,
    init: str | Any = "random",
    X: Any = None,
    scale: float = 1e-4,
    random_state: int | None = 0,
) -> np.ndarray:
    """A small starting embedding: ``scale · N(0, 1)`` ("random") or X's principal components with
    the first one scaled to standard deviation ``scale`` ("pca", signs fixed so the largest
    loading of each component is positive); an array is returned as float64 after a shape check."""
    if not isinstance(init, str):
        Z = np.asarray(init, dtype=np.float64)
        if Z.shape != (n_points, n_components):
            raise ValueError(f"The initial embedding must have shape {(n_points, n_components)}; got {Z.shape}.")
        return Z.copy()
    if init not in INITS:
        raise TreevizError(f"The initialisation must be one of {INITS} or an array; got {init!r}.")
    if init == "random":
        return scale * np.random.default_rng(random_state).standard_normal((n_points, n_components))
    if X is None:
        raise TreevizError("A PCA initialisation needs the input points X; pass X or use init='random'.")
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    vt = vt[:n_components]
    vt *= np.sign(vt[np.arange(vt.shape[0]), np.abs(vt).argmax(axis=1)])[:, None]
    Z = Xc @ vt.T
    if Z.shape[1] < n_components:
        raise TreevizError(f"A PCA initialisation needs at least {n_components} features; use init='random'.")
    sd = Z[:, 0].std()
    return Z * (scale / sd) if sd > 0 else Z


def embedding_objective(
    X: Any = None,
    method: str = "tsne",
    *,
    affinities: Any = None,
    perplexity: float = 15.0,
    n_neighbors: int | None = None,
    lam: float = 100.0,
    repulsion: str = "ones",
    weight_norm: str = "rows",
    path: str = "auto",
    dtype: torch.dtype = torch.float64,
) -> EmbeddingObjective:
    """The t-SNE or elastic-embedding objective E of the points ``X`` (entropic affinities with
    ``perplexity`` on ``n_neighbors`` neighbours) or of given row-stochastic ``affinities``; the
    parameters are :func:`free_embedding`'s. Its ``affinities`` attribute holds the row-stochastic P."""
    if method not in METHOD_NAMES:
        raise TreevizError(f"The embedding method must be 'tsne' or 'ee'; got {method!r}.")
    if (X is None) == (affinities is None):
        raise ValueError("Give exactly one of X (points) and affinities.")
    if affinities is None:
        P, _ = entropic_affinities(X, perplexity, n_neighbors)
    else:
        P = sp.csr_matrix(affinities, dtype=np.float64)
    if method == "tsne":
        objective: EmbeddingObjective = TSNE(P, path=path, dtype=dtype)
    else:
        objective = ElasticEmbedding(
            P, lam=lam, repulsion=repulsion, X=X, weight_norm=weight_norm, path=path, dtype=dtype
        )
    objective.affinities = P
    return objective


def free_embedding(
    X: Any = None,
    method: str = "tsne",
    *,
    affinities: Any = None,
    perplexity: float = 15.0,
    n_neighbors: int | None = None,
    n_components: int = 2,
    lam: float = 100.0,
    repulsion: str = "ones",
    weight_norm: str = "rows",
    init: str | Any = "random",
    init_scale: float = 1e-4,
    max_iter: int = 1000,
    tol: float = 1e-4,
    exaggeration: float = 1.0,
    exaggeration_iter: int = 0,
    path: str = "auto",
    solver: str = "auto",
    ridge: float = 1e-3,
    sparsify: int | None = None,
    random_state: int | None = 0,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float64,
    callback: Callable[[int, torch.Tensor, float], Any] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> FreeEmbedding:
    """The free t-SNE or elastic embedding, minimised with the spectral direction.

    Parameters
    ----------
    X : array of shape (N, D), optional
        The points; entropic affinities are computed from them. Give X or ``affinities``.
    method : {"tsne", "ee"}, default "tsne"
    affinities : sparse or dense (N, N), optional
        Row-stochastic affinities (e.g. from :func:`models.graphs.entropic_affinities`) instead of X.
    perplexity : float, default 15
    n_neighbors : int, optional
        k of the kNN graph; default ``min(N − 1, round(3·perplexity))``.
    n_components : int, default 2
    lam, repulsion, weight_norm
        The elastic embedding's λ (default 100), W⁻ and weight normalisation
        (:class:`ElasticEmbedding`).
    init : {"random", "pca"} or array, default "random"
        ``init_scale · N(0, 1)``, or PCA scaled to standard deviation ``init_scale`` (needs X), or a
        given array. Seeded by ``random_state``.
    init_scale : float, default 1e-4
    max_iter : int, default 1000
        Spectral-direction iterations in all (including the exaggerated ones).
    tol : float, default 1e-4
        Stop when the relative change of the iterates is below it.
    exaggeration, exaggeration_iter
        t-SNE only: run the first ``exaggeration_iter`` iterations with P multiplied by
        ``exaggeration``. Off by default (the spectral direction needs no early exaggeration).
    path : {"auto", "exact", "dense", "chunked", "fft"}, default "auto"
        See the module docstring; "auto" is exact up to 5000 points.
    solver, ridge, sparsify
        The spectral direction's factorisation, relative ridge and sparsification
        (:class:`SpectralDirection`).
    random_state : int or None, default 0
    device : str or torch.device, default "cpu"
        "auto", "cpu", "cuda" or "cuda:N".
    dtype : torch.dtype, default torch.float64
    callback : callable, optional
        ``callback(iteration, Z, value)`` after each iteration of the final (unexaggerated) run.
    stop : callable, optional
        Asked before every iteration; when it returns True (a cancel) the embedding ends there.

    Returns
    -------
    FreeEmbedding
        Z (ndarray), the objective, the optimiser with its cached factorisation, and the runs.
    """
    objective = embedding_objective(X, method, affinities=affinities, perplexity=perplexity, n_neighbors=n_neighbors,
                                    lam=lam, repulsion=repulsion, weight_norm=weight_norm, path=path, dtype=dtype)
    P = objective.affinities
    n = P.shape[0]
    optimizer = SpectralDirection.for_objective(objective, method=solver, ridge=ridge, sparsify=sparsify,
                                                stop=stop)
    dev = device if isinstance(device, torch.device) else torch.device(resolve_device(device))
    Z0 = initial_embedding(n, n_components, init=init, X=X, scale=init_scale, random_state=random_state)
    Z = torch.as_tensor(Z0, dtype=dtype, device=dev)
    warmup = None
    n_warm = int(exaggeration_iter) if method == "tsne" and float(exaggeration) != 1.0 else 0
    n_warm = min(max(n_warm, 0), int(max_iter))
    if n_warm:
        assert isinstance(objective, TSNE)
        warmup = optimizer.minimize(objective.with_exaggeration(exaggeration), Z, max_iter=n_warm, tol=0.0,
                                    stop=stop)
        Z = warmup.Z
    result = optimizer.minimize(objective, Z, max_iter=int(max_iter) - n_warm, tol=tol, callback=callback, stop=stop)
    return FreeEmbedding(
        Z=result.Z.detach().cpu().numpy(),
        objective=objective,
        optimizer=optimizer,
        result=result,
        warmup=warmup,
        affinities=P,
    )
