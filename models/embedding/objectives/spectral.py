"""The spectral-direction optimiser of the coordinate step (the Z-step) and of free embeddings.

The **spectral direction** (Vladymyrov and Carreira-Perpiñán, 2012) preconditions the gradient with
``B = 4·s·Lap(W_attr) + 2μ I + ridge·I``: the Hessian of the attractive term at Z = 0 (W_attr = W⁺
for EE, the joint P for t-SNE, s the exaggeration) plus the penalty's. B is factorised once (an
eigendecomposition reused for every μ and s for small N, a sparse LU per (μ, s) for large N), and
each iteration solves ``B d = −g`` and backtracks with Armijo's rule.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import torch
from scipy.sparse.linalg import splu

from models.embedding.objectives.base import EmbeddingObjective
from models.graphs import laplacian
from models.parallel import interruptible

#: Largest N for which ``SpectralDirection(method="auto")`` caches an eigendecomposition.
EIGH_MAX_POINTS = 2000

#: Largest N for which ``SpectralDirection(method="auto")`` factorises B (sparse LU); above it B d = −g
#: is solved by preconditioned conjugate gradients ("cg"). On a 14 000-point kNN graph of 20-D data
#: (perplexity 15) the LU of B built from each point's 5 strongest weights alone held 2.5e7 entries
#: and took 9 s per (μ, s) (one thread), over a minute with every weight: the fill of a kNN graph
#: grows with the data's intrinsic dimension, so factorising does not scale.
SPLU_MAX_POINTS = 5000



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


def strongest(W: sp.csr_matrix, count: int) -> sp.csr_matrix:
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
            W = strongest(W, int(sparsify))
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
