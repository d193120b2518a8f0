"""The free (unconstrained) embedding: the objective of a data set, a start, and the minimisation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from models.devices import resolve_device
from models.embedding.objectives.base import EmbeddingObjective
from models.embedding.objectives.elastic import ElasticEmbedding
from models.embedding.objectives.spectral import SpectralDirection, ZStepResult
from models.embedding.objectives.tsne import TSNE
from models.graphs import entropic_affinities
from models.ground.errors import TreevizError


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
#: How a free embedding is minimised: the spectral direction (the thesis's) or openTSNE's gradient
#: descent (t-SNE only; the Z-steps still take the spectral direction).
ENGINES = ("spectral", "opentsne")
#: openTSNE's own schedule: this many iterations at this exaggeration (momentum 0.5), then the rest
#: unexaggerated (momentum 0.8).
OPENTSNE_EARLY = (250, 12.0)
#: Iterations between two calls of openTSNE's callbacks (progress, cancel).
OPENTSNE_EVERY = 10


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
    engine: str = "spectral",
) -> FreeEmbedding:
    """The free t-SNE or elastic embedding, minimised with the spectral direction (or openTSNE).

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
    engine : {"spectral", "opentsne"}, default "spectral"
        "opentsne" minimises the same t-SNE objective (these affinities, symmetrised) with
        openTSNE's gradient descent (:func:`opentsne_minimize`): ``max_iter`` iterations, the first
        250 exaggerated 12 times (openTSNE's schedule; ``exaggeration``, ``tol`` and ``solver`` are
        the spectral direction's), on the CPU, its callbacks and ``stop`` every 10 iterations. On
        digits (1 437 points) it reached KL 0.839 in 3.5 CPU s where 2 000 spectral-direction
        iterations reached 0.838 in 48 s. The optimiser returned is still the spectral direction,
        for the Z-steps.

    Returns
    -------
    FreeEmbedding
        Z (ndarray), the objective, the optimiser with its cached factorisation, and the runs.
    """
    if engine not in ENGINES:
        raise TreevizError(f"The free embedding's engine must be one of {ENGINES}; got {engine!r}.")
    if engine == "opentsne" and method != "tsne":
        raise TreevizError("openTSNE minimises t-SNE only; use engine='spectral' for the elastic embedding.")
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
    if engine == "opentsne":
        assert isinstance(objective, TSNE)
        result = opentsne_minimize(objective, Z0, int(max_iter), callback=callback, stop=stop,
                                   random_state=random_state)
        result.Z = result.Z.to(device=dev)
        return FreeEmbedding(Z=result.Z.cpu().numpy(), objective=objective, optimizer=optimizer, result=result,
                             warmup=None, affinities=P)
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


def opentsne_minimize(objective: TSNE, Z0: np.ndarray, max_iter: int, *,
                      callback: Callable[[int, torch.Tensor, float], Any] | None = None,
                      stop: Callable[[], bool] = lambda: False, random_state: int | None = 0) -> ZStepResult:
    """Minimise t-SNE's KL divergence from ``Z0`` with openTSNE's gradient descent (its Barnes-Hut
    or FFT repulsion: openTSNE's "auto"), on the objective's own joint affinities:
    :data:`OPENTSNE_EARLY` first, then the rest of ``max_iter``, on this process's torch threads.
    ``callback(iteration, Z, KL)`` and ``stop`` are asked every :data:`OPENTSNE_EVERY` iterations
    (KL as openTSNE estimates it); the result's ``values`` are the objective (exact) at the start
    and at the end."""
    from openTSNE import TSNEEmbedding  # deferred: 1.4 s of imports, for the opentsne engine only
    from openTSNE.affinity import Affinities  # deferred: as above

    affinities = Affinities()
    affinities.P = objective.joint.copy()  # a copy: openTSNE exaggerates its P in place
    done = [0, 0]  # the iterations of the phases finished, and of all reported so far

    def report(iteration: int, error: float, embedding: np.ndarray) -> bool:
        done[1] = done[0] + iteration
        if callback is not None:
            callback(done[1], torch.as_tensor(np.asarray(embedding)), float(error))
        return bool(stop())

    exact = objective.exact()
    start = float(exact.value(torch.as_tensor(Z0, dtype=torch.float64)))
    embedding = TSNEEmbedding(np.array(Z0, dtype=np.float64), affinities, n_jobs=max(1, torch.get_num_threads()),
                              random_state=random_state, negative_gradient_method="auto")
    early = min(OPENTSNE_EARLY[0], max_iter)
    for n_iter, settings in ((early, {"exaggeration": OPENTSNE_EARLY[1], "momentum": 0.5}),
                             (max_iter - early, {"momentum": 0.8})):
        if n_iter <= 0 or stop():
            continue
        embedding = embedding.optimize(n_iter=n_iter, callbacks=report, callbacks_every_iters=OPENTSNE_EVERY,
                                       **settings)
        if stop():  # stopped at a callback: the iterations reported are those done
            break
        done[0] = done[1] = done[0] + n_iter
    Z = torch.as_tensor(np.array(embedding, dtype=np.float64))
    return ZStepResult(Z=Z, values=[start, float(exact.value(Z))], n_iter=done[1], converged=False,
                       reason="max_iter")

