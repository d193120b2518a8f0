"""The embedding objective's common part: its public API, the penalty, and the dispatch to the
evaluation paths (see :mod:`models.embedding.objectives.paths`)."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
import torch

from models.embedding.interpolation import PairSum, RadialKernel
from models.embedding.objectives.paths import BLOCK_PAIRS, chunked_pair_sum, resolve_path
from models.embedding.objectives.penalty import Penalty, make_penalty


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
        self.path = resolve_path(path, self.n_points, fft_ok)
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
        out.penalty = make_penalty(mu, target, multipliers, self.n_points, self.dtype)
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
        out.path = resolve_path("exact", self.n_points)
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
        """``Σ_{n≠m} K_nm`` and (with ``need_grad``) ``G = Lap(A) Z`` over all ordered pairs, in
        blocks of rows (:func:`~models.embedding.objectives.paths.chunked_pair_sum`)."""
        return chunked_pair_sum(Z, self.chunk_size, lambda d2, start, stop: self._kernel_(d2, start, stop, b),
                                self._grad_weights_, need_grad)
