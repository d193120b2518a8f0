"""t-SNE: ``E(Z) = Σ p_nm log(p_nm / q_nm)`` with the Student-t kernel.

The joint P = (P + Pᵀ)/(2N) and ``q_nm = Kt_nm / Σ_{k≠l} Kt_kl``, ``Kt_nm = 1/(1 + ||z_n − z_m||²)``;
gradient ``4 Lap((P − Q) ∘ Kt) Z``.
"""

from __future__ import annotations

import copy
import math
from typing import Any, ClassVar

import numpy as np
import torch

from models.embedding.interpolation import STUDENT_T
from models.embedding.objectives.base import EmbeddingObjective
from models.embedding.objectives.paths import clean_affinities, edges, lap_apply, pairwise_sq
from models.ground.errors import TreevizError


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
        A = clean_affinities(affinities)
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
        return {"edges": edges(self.joint, device, self.dtype)}

    def _dense(self, Z: torch.Tensor, b: dict[str, Any], need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        alpha, P = self.attractive_scale, b["P"]
        d2 = pairwise_sq(Z)
        Kt = 1.0 / (1.0 + d2)
        Kt.fill_diagonal_(0.0)
        zsum = Kt.sum()
        value = self._plogp + alpha * (P * torch.log1p(d2)).sum() + torch.log(zsum)
        grad = 4.0 * lap_apply((alpha * P - Kt / zsum) * Kt, Z) if need_grad else None
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
    Kt = 1.0 / (1.0 + pairwise_sq(Z))
    Kt.fill_diagonal_(0.0)
    return (Kt / Kt.sum()).numpy()
