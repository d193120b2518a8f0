"""Tree embeddings: a t-SNE or elastic embedding whose out-of-sample mapping is a sparse oblique
decision tree trained by TAO (Zharmagambetov, PhD thesis 2022, chapter 4).

The parametric problem is ``min_F E(F(X)) + λ φ(F)``: E the embedding objective (t-SNE's KL
divergence or the elastic embedding), F a sparse oblique tree with linear leaves and φ its ℓ1 norm.
A tree is not differentiable, so the method of auxiliary coordinates introduces free coordinates
Z = F(X) and alternates, for an increasing penalty weight μ:

* **Z-step** (the embedding optimiser with a pull towards the tree):
  ``min_Z E(Z) + μ ||Z − F(X)||² − 2 ⟨β, Z − F(X)⟩``, i.e. ``E(Z) + μ ||Z − (F(X) + β/μ)||²`` up to
  a constant, solved by the spectral direction warm-started from the previous Z;
* **F-step** (ordinary regression): TAO on the targets ``Z − β/μ``,
  ``min_F ||(Z − β/μ) − F(X)||² + λ_μ φ(F)`` with ``λ_μ = λ μ0 / μ`` (see below), warm-started
  from the previous tree;
* **multipliers** (augmented Lagrangian only): ``β ← β − μ (Z − F(X))`` with the unshifted Z.

With β ≡ 0 (``augmented_lagrangian=False``) this is the quadratic-penalty method. The shifted
coordinates ``F(X) + β/μ`` and ``Z − β/μ`` are only targets; Z and F are never overwritten by them.

Choices made where the thesis is silent or where it offers two readings:

* **Tree penalty along the path.** The thesis's eq. 4.8 divides the tree penalty by μ in the
  F-step; it then reports that keeping it at λ instead "shows better performance" and uses that.
  Held at λ, the F-step at μ minimises, times μ, ``μλ φ(F) + μ ||Z − F(X)||² − 2 ⟨β, Z − F(X)⟩``:
  the tree penalty the path trades against E is **μλ, growing with μ**, so the problem changes
  along the path and late steps buy sparsity with embedding quality. Measured with the thesis's
  fixed λ (t-SNE, depth 5, λ = 10, μ ×1.4 per step, augmented Lagrangian), on digits (12 steps):
  φ(F) fell from 1.03e4 to 3.6e3 while μλφ rose from 1.0 to 14 (E is about 1.5), and E(F(X))
  went from the direct fit's 1.71 down to 1.30 at step 5 and back up to 1.60; on MNIST 5000
  (8 steps) from 2.48 down to 2.38 at step 2 and up to 3.11, above the direct fit. No pruning
  happened (32 leaves throughout), and 400 Z-step iterations instead of 100 changed nothing on
  digits (1.33 at step 5, 1.59 at the end), so neither the warm start nor the Z-step causes it.
  This module therefore uses eq. 4.8's λ/μ with the penalty's units pinned at the path's start:
  the F-step at μ_k uses ``λ · μ0 / μ_k``. The first F-step has the direct fit's penalty λ, so the
  path still starts at the direct fit and the tree is not pruned away at tiny μ (λ/μ with λ in
  the F-step's own units would be about 1e5·λ at the first step, presumably why the thesis
  dropped the division), and the whole path is the augmented Lagrangian of one problem,
  ``min_F E(F(X)) + μ0 λ φ(F)``. The penalty objective below is
  ``P_μ(Z, F) = E(Z) + μ0 λ φ(F) + μ ||Z − F(X)||² − 2 ⟨β, Z − F(X)⟩``: the Z-step and the F-step
  each leave it non-increasing (the spectral direction decreases its Z part, and guarded TAO never
  increases the tree objective from its warm start). On the same runs E(F(X)) then decreased to
  1.21 (digits) and 2.02 (MNIST 5000), and on breast cancer (depth 3, λ = 0.1, 20 steps) from
  1.81 to 1.47 (1.50 with the fixed λ).
* **Start of the path.** Z starts at the free embedding Z0 and F at the *direct fit*: TAO from a
  random complete tree on the targets Z0 (the μ → 0⁺ end of the path), β = 0. ``history_[0]`` is
  that state, so the learning curve starts at the direct fit.
* **μ schedule.** μ_k = μ0 · factor^k for k = 0 … n_mu − 1, one (Z, F) alternation per μ. The
  thesis's raw μ0 values depend on how E is scaled; by default μ0 follows a scale-free rule,
  ``μ0 = mu0_ratio · E(Z0) / ||Z0 − F0(X)||²`` with ratio 0.3, which on breast cancer with t-SNE
  gives about the thesis's 1e-5.
* **Output.** The tree F. Its outputs F(X) (``embedding_``) are the tree embedding; ``Z_`` holds
  the final free coordinates of the alternation, for diagnostics only.

Baselines: :func:`direct_fit` fits a TAO tree (the start of the path) or a scikit-learn CART
regression tree, its depth pre-pruned on a 30 % validation split as in the thesis, to Z0.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import TransformerMixin
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.validation import check_is_fitted, validate_data

from models.base import Callback, CancelWhen, TreeEstimator
from models.embedding.defaults import auto_depth, auto_l1_penalty
from models.embedding.objectives import EmbeddingObjective, FreeEmbedding, embedding_objective, free_embedding
from models.graphs import usable_perplexity
from models.ground.errors import TreevizError
from models.ground.forecast import remaining_work
from models.ground.tree import Tree
from models.tao.core import FittedTAOTree, TAORegressor, tao_tree_to_tree, tree_arrays, tree_from_arrays

METHODS = ("tsne", "ee")
LEAVES = ("constant", "linear")
DIRECT_KINDS = ("tao", "cart")

#: Share of the points the CART baseline holds out to choose its depth (as in the thesis).
CART_VALIDATION_FRACTION = 0.3

#: Depths the CART baseline tries (the thesis shows depths up to 30).
CART_DEPTHS = tuple(range(1, 31))

#: A μ step's planned work (for the progress bar only), in the time of a free embedding's iteration,
#: per iteration its Z-step may take (``z_iter``): with the defaults (20 steps of at most 100
#: iterations) a μ step took 0.63-0.84 of that on 500 digits, 1 000 digits and breast cancer. How
#: long the Z-steps stay at their cap before they fall varies (7 or 10 steps on breast cancer in two
#: runs, 1 on 500 digits), so the plan holds (at most its share of the steps left) until they fall
#: from it, unless the steps seen say that more is left.
MU_STEP_SHARE = 0.7


def _mu_path_left(z_iters: list[float], z_unit: float, tree_units: list[float], steps_left: int, z_cap: int) -> float:
    """The μ path's work left, in the progress bar's units (a free embedding's iteration's time),
    after the steps whose Z-steps took ``z_iters`` iterations and whose tree fits took
    ``tree_units``. The Z-steps' iterations fall as Z settles, from the first step on (from the
    cap, ``z_cap``, to one on digits and breast cancer: :func:`~models.ground.forecast.remaining_work`),
    each at the last step's cost per iteration, ``z_unit``; the tree fits, warm-started, cost about
    the same each step (their mean over the last two)."""
    z_left = remaining_work(z_iters, steps_left, floor=1.0, cap=float(z_cap), min_steps=1) * z_unit
    recent = tree_units[-2:]
    return z_left + steps_left * sum(recent) / len(recent)


class _PathProgress:
    """The progress bar's units of the μ path (for the progress bar only): each step's Z-step and
    tree refit in the time of a free iteration (``unit_s``, measured), after ``free_units``; the
    work left is the plan (``planned``: :data:`MU_STEP_SHARE` a step, at most its share of the steps
    left) until the Z-steps fall from their cap (``z_cap``), then the forecast of the steps seen
    (:func:`_mu_path_left`), or that forecast whenever it is more."""

    def __init__(self, free_units: float, unit_s: float, planned: float, n_mu: int, z_cap: int):
        self.free_units, self.unit_s, self.planned, self.n_mu, self.z_cap = free_units, unit_s, planned, n_mu, z_cap
        self.done = free_units
        self.z_iters: list[float] = []
        self.tree_units: list[float] = []

    def step(self, z_iter: int, z_seconds: float, tree_seconds: float) -> tuple[float, float]:
        """Count a step; returns the units done and the planned total."""
        self.z_iters.append(float(max(1, z_iter)))
        self.tree_units.append(tree_seconds / self.unit_s)
        self.done += z_seconds / self.unit_s + self.tree_units[-1]
        steps_left = self.n_mu - len(self.z_iters)
        left = _mu_path_left(self.z_iters, z_seconds / self.unit_s / self.z_iters[-1], self.tree_units, steps_left,
                             self.z_cap)
        if not (max(self.z_iters) >= self.z_cap > self.z_iters[-1]):  # not yet fallen from the cap
            left = max(left, min(self.free_units + self.planned - self.done, self.planned * steps_left / self.n_mu))
        return self.done, self.done + left


# --------------------------------------------------------------------------------------------------
# baselines


def _tao_mapping(*, depth: int, l1_penalty: float, leaf: str, tao_iter: int, device: str,
                 random_state: Any, warm_start: bool = False) -> TAORegressor:
    """The TAO regression tree used for direct fits and F-steps (random complete initial tree)."""
    return TAORegressor(depth=depth, l1_penalty=l1_penalty, leaf=leaf, init="random", max_iter=tao_iter,
                        device=device, warm_start=warm_start, random_state=random_state)


def direct_fit(
    X: Any,
    Z0: Any,
    *,
    kind: str = "tao",
    depth: int = 3,
    l1_penalty: float = 0.1,
    leaf: str = "linear",
    tao_iter: int = 15,
    validation_fraction: float = CART_VALIDATION_FRACTION,
    depths: Iterable[int] = CART_DEPTHS,
    device: str = "auto",
    random_state: int | None = 0,
) -> Any:
    """Fit a tree mapping X → Z0 directly (regression on a free embedding); its ``predict`` is F(X).

    Parameters
    ----------
    X : array of shape (N, D)
    Z0 : array of shape (N, L)
        The free embedding.
    kind : {"tao", "cart"}, default "tao"
        "tao": a sparse oblique TAO tree from a random complete tree of ``depth``, ``tao_iter``
        iterations, penalty ``l1_penalty`` (sum form) and ``leaf`` leaves: the start of the tree
        embedding's path. "cart": scikit-learn's multi-output CART regression tree, its
        ``max_depth`` chosen among ``depths`` by the mean squared error on a held-out
        ``validation_fraction`` of the points and then kept as fitted on the remaining ones
        (pre-pruning on a validation split).
    depth, l1_penalty, leaf, tao_iter, device
        TAO only.
    validation_fraction, depths
        CART only.
    random_state : int or None, default 0

    Returns
    -------
    TAORegressor or sklearn.tree.DecisionTreeRegressor
        Fitted. The CART tree also carries ``validation_mse_`` (depth → validation MSE).
    """
    if kind not in DIRECT_KINDS:
        raise TreevizError(f"The direct fit's kind must be 'tao' or 'cart'; got {kind!r}.")
    X = np.asarray(X, dtype=np.float64)
    Z0 = np.asarray(Z0, dtype=np.float64)
    if X.ndim != 2 or Z0.ndim != 2 or X.shape[0] != Z0.shape[0]:
        raise TreevizError(f"X and Z0 must be 2-D with the same number of rows; got {X.shape} and {Z0.shape}.")
    if kind == "tao":
        return _tao_mapping(depth=depth, l1_penalty=l1_penalty, leaf=leaf, tao_iter=tao_iter, device=device,
                            random_state=random_state).fit(X, Z0)
    if not 0.0 < float(validation_fraction) < 1.0:
        raise TreevizError(f"The validation fraction must be between 0 and 1; got {validation_fraction}.")
    depths = sorted({int(d) for d in depths})
    if not depths or depths[0] < 1:
        raise TreevizError("The CART depths to try must be positive integers.")
    Xt, Xv, Zt, Zv = train_test_split(X, Z0, test_size=float(validation_fraction), random_state=random_state)
    best, scores = None, {}
    for d in depths:
        model = DecisionTreeRegressor(max_depth=d, random_state=random_state).fit(Xt, Zt)
        scores[d] = float(np.mean((model.predict(Xv) - Zv) ** 2))
        if best is None or scores[d] < scores[best[0]]:
            best = (d, model)
        if model.get_depth() < d:  # deeper trees are all the same tree
            break
    assert best is not None
    model = best[1]
    model.validation_mse_ = scores
    return model


# --------------------------------------------------------------------------------------------------
# the estimator

#: The embedding's dimension: the thesis's maps, and everything the app draws, are 2-D.
N_COMPONENTS = 2


class TreeEmbedding(TransformerMixin, FittedTAOTree, TreeEstimator):
    """t-SNE or the elastic embedding with a sparse oblique TAO tree as the mapping.

    Parameters
    ----------
    method : {"tsne", "ee"}, default "tsne"
        The embedding objective: t-SNE's KL divergence or the elastic embedding.
    perplexity : float, default 15
        Perplexity of the entropic affinities; on a data set too small for it (with the default
        neighbour count) it is lowered to (N − 1)/3, and ``perplexity_`` holds the value used.
    n_neighbors : int, optional
        Neighbours the affinities are spread over; default ``min(N − 1, round(3·perplexity))``.
    lam_ee : float, default 100
        The elastic embedding's repulsion weight (ignored by t-SNE).
    depth : int, optional
        Depth of the random complete initial tree (pruning may shrink it). None ("auto") chooses
        it from the training points, and from their classes when ``fit`` is given labels
        (:func:`models.embedding.defaults.auto_depth`: about √N leaves, two per class, between 2
        and 8); ``depth_`` holds the depth used.
    l1_penalty : float, optional
        λ of the tree's ℓ1 penalty in sum form (the squared error is summed over points, so λ is
        relative to the number of points and the scale of the embedding's coordinates): the
        direct fit's penalty and the first F-step's. The F-step at μ uses ``λ · μ0 / μ``, so the
        whole path minimises ``E(F(X)) + μ0 λ φ(F)`` (see the module docstring for why not the
        thesis's fixed λ). None ("auto"): 0.08 per training point
        (:func:`models.embedding.defaults.auto_l1_penalty`); ``l1_penalty_`` holds the λ used.
    leaf : {"linear", "constant"}, default "linear"
        Lasso-linear leaves (the thesis) or constant leaves.
    mu0 : float, optional
        The first penalty weight; None: ``mu0_ratio · E(Z0) / ||Z0 − F0(X)||²``.
    mu0_ratio : float, default 0.3
        The constant of that scale-free rule.
    mu_factor : float, default 1.4
        μ is multiplied by it after each step.
    n_mu : int, default 20
        Number of μ steps (one Z-step and one F-step each).
    z_iter : int, default 100
        Most spectral-direction iterations per Z-step.
    z_tol : float, default 1e-4
        A Z-step stops when the relative change of its iterates is below it.
    free_iter : int, default 2000
        Most iterations of the free embedding.
    tao_iter : int, default 15
        TAO iterations of the direct fit and of each F-step.
    augmented_lagrangian : bool, default True
        Multipliers β (the thesis's experiments); False is the quadratic penalty (β = 0).
    penalty_mode : {"over_mu", "fixed"}, default "over_mu"
        The F-step's ℓ1 penalty at μ: λ·μ0/μ (eq. 4.8's λ/μ with λ in the direct fit's units, so
        the path minimises one problem, E(F(X)) + μ0·λ·φ(F)), or λ at every step, the thesis's
        choice (see the module docstring for why it is not the default).
    device : str, default "auto"
        Device of the embedding objective and of TAO's torch solver.
    random_state : int or None, default 0
        Seeds the free embedding's start and the random initial tree.

    Attributes
    ----------
    depth_ : int
        The depth of the initial tree (``depth``, or the automatic depth).
    l1_penalty_ : float
        λ used (``l1_penalty``, or the automatic one).
    free_embedding_ : ndarray (N, 2)
        Z0, the free embedding of the training points.
    direct_embedding_ : ndarray (N, 2)
        F0(X), the direct fit's outputs on the training points (the start of the path).
    embedding_ : ndarray (N, 2)
        The tree's outputs F(X) on the training points: the tree embedding.
    Z_ : ndarray (N, 2)
        The free coordinates at the end of the alternation.
    multipliers_ : ndarray (N, 2)
        β at the end (zeros for the quadratic penalty).
    tao_tree_ : TAOTree
        The fitted tree F (``transform``, ``apply`` and ``to_tree`` read it).
    direct_tao_tree_ : TAOTree
        The direct fit F0 (``direct_transform`` reads it).
    free_objective_, direct_fit_objective_, objective_ : float
        E(Z0), E(F0(X)) and E(F(X)), the embedding objective of the free embedding, of the direct
        fit and of the tree embedding on the training points.
    objective_function_ : EmbeddingObjective
        The embedding objective E of the training points, exact (chunked), to evaluate
        other embeddings of them (after fitting; a loaded model rebuilds it with
        :meth:`embedding_objective`).
    mu0_ : float
        The first μ used.
    history_ : list of dict
        Step 0 is the direct fit; then one record per μ step (see :meth:`fit`).
    """

    def __init__(self, *, method="tsne", perplexity=15.0, n_neighbors=None, lam_ee=100.0, depth=None, l1_penalty=None,
                 leaf="linear", mu0=None, mu0_ratio=0.3, mu_factor=1.4, n_mu=20, z_iter=100, z_tol=1e-4,
                 free_iter=2000, tao_iter=15, augmented_lagrangian=True, penalty_mode="over_mu", device="auto",
                 random_state=0):
        self.method = method
        self.perplexity = perplexity
        self.n_neighbors = n_neighbors
        self.lam_ee = lam_ee
        self.depth = depth
        self.l1_penalty = l1_penalty
        self.leaf = leaf
        self.mu0 = mu0
        self.mu0_ratio = mu0_ratio
        self.mu_factor = mu_factor
        self.n_mu = n_mu
        self.z_iter = z_iter
        self.z_tol = z_tol
        self.free_iter = free_iter
        self.tao_iter = tao_iter
        self.augmented_lagrangian = augmented_lagrangian
        self.penalty_mode = penalty_mode
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ parameters
    def _check_params(self, n: int, y: Any = None) -> dict[str, Any]:
        """The parameters as the family's schema checked them before this fit, adjusted to ``n``
        training points (and the number of classes in ``y``, for the automatic depth)."""
        p = dict(self._checked_params)
        p["perplexity"] = usable_perplexity(p["perplexity"], n, p["n_neighbors"])
        p["device"] = self._fit_device(rows=n)
        if p["depth"] is None:
            n_classes = None
            if y is not None:
                y = np.asarray(y)
                if y.shape[0] != n:
                    raise TreevizError(f"fit was given {y.shape[0]} labels for {n} rows; give one label per row, "
                                       "or none.")
                n_classes = np.unique(y.astype(str)).size
            p["depth"] = auto_depth(n, n_classes)
        if p["l1_penalty"] is None:
            p["l1_penalty"] = auto_l1_penalty(n)
        return p

    def embedding_objective(self, X: Any) -> EmbeddingObjective:
        """The embedding objective E of the points ``X`` with this model's settings (method,
        perplexity, neighbours, λ of the elastic embedding). On the training points it is the E the
        model was fitted for (e.g. to score other embeddings of them after loading the model),
        evaluated exactly at any size."""
        X = np.asarray(X, dtype=np.float64)
        perplexity = usable_perplexity(self.perplexity, X.shape[0], self.n_neighbors)
        return embedding_objective(X, self.method, perplexity=perplexity, n_neighbors=self.n_neighbors,
                                   lam=float(self.lam_ee), path="exact")

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any = None, *, callbacks: Iterable[Callback] | None = None,
            feature_names: Sequence[str] | None = None) -> TreeEmbedding:
        """Free embedding, direct fit, then the μ path; returns ``self``. ``y``, optional class
        labels, only chooses the automatic depth (``depth=None``) by its number of classes; the
        embedding never sees it.

        ``history_`` records (plain numbers): ``step`` (0 = the direct fit), ``mu``, ``E_tree``
        = E(F(X)), ``E_Z`` = E(Z), ``dist2`` = ||Z − F(X)||², ``objective_start``,
        ``objective_after_z`` and ``objective`` (the penalty objective P_μ at the step's start, after
        its Z-step and after its F-step, all at the step's μ and β), ``z_iter`` (Z-step iterations),
        ``n_leaves``, ``n_decision_nodes``, ``n_nonzero`` (split weights), ``n_nonzero_leaf``
        (linear-leaf weights), ``l1_norm`` (φ(F)), ``tree_penalty`` (the F-step's λ μ0 / μ; λ at
        step 0) and ``seconds`` (at step 0 the free embedding's and the direct fit's, and
        ``free_seconds`` the free embedding's alone). Callbacks get each record as it is appended.

        Above 5000 points the free embedding and the Z-steps minimise E with its repulsion
        approximated (``path="fft"`` in :mod:`models.embedding.objectives`), and the penalty
        objectives are measured with that approximation, and each spectral direction is solved
        inexactly by conjugate gradients (a factorisation of B does not scale, see
        :data:`~models.embedding.objectives.SPLU_MAX_POINTS`); ``E_tree``, ``E_Z`` and the
        ``*_objective_`` attributes are always exact.
        """
        X = validate_data(self, X, dtype=np.float64)
        p = self._check_params(X.shape[0], y)
        self.depth_, self.l1_penalty_ = int(p["depth"]), float(p["l1_penalty"])
        self._set_feature_names(feature_names, X.shape[1])
        # work units: one per iteration of the free embedding, then the μ path's in the time of one,
        # planned at MU_STEP_SHARE a step (_mu_path_left when the steps seen say more is left)
        self._begin_training(callbacks, p["free_iter"] + self._mu_path_plan(p))  # before it, so a cancel reaches it
        try:
            self._fit_path(X, p)
        finally:
            self._end_training()
        return self

    def _fit_path(self, X: np.ndarray, p: dict[str, Any]) -> None:
        """The fit's work (see :meth:`fit`); every phase ends early on a cancel, keeping a usable model."""
        stop = self._cancel_requested
        cancel = [CancelWhen(stop)]  # hands the cancel to the TAO tree's fits
        device = torch.device(p["device"])
        start = time.perf_counter()
        free_units = float(p["free_iter"])

        def free_progress(iteration: int, *_: Any) -> None:
            if iteration % 10 == 0:
                self._progress(done=min(iteration, free_units))

        free: FreeEmbedding = free_embedding(
            X, self.method, perplexity=p["perplexity"], n_neighbors=p["n_neighbors"],
            n_components=N_COMPONENTS, lam=p["lam_ee"], max_iter=p["free_iter"], tol=p["z_tol"],
            random_state=self.random_state, device=device, stop=stop, callback=free_progress,
        )
        # the optimiser's objective (above 5000 points its repulsion is approximated on a grid) and
        # the exact one, which every reported E uses
        objective: EmbeddingObjective = free.objective
        exact = objective.exact()
        self.objective_function_ = exact
        self.perplexity_ = p["perplexity"]
        free_seconds = time.perf_counter() - start
        Z0 = free.Z
        self.free_embedding_ = Z0.copy()
        self.free_objective_ = float(exact.embedding_value(Z0))

        tree = _tao_mapping(depth=p["depth"], l1_penalty=p["l1_penalty"], leaf=self.leaf, tao_iter=p["tao_iter"],
                            device=p["device"], random_state=self.random_state, warm_start=True)
        tree.fit(X, Z0, callbacks=cancel, feature_names=self.feature_names_)
        # the μ path's units: a free iteration's time (the free embedding's own, measured)
        path = _PathProgress(free_units, max(free_seconds / max(1, int(free.result.n_iter)), 1e-9),
                             self._mu_path_plan(p), int(p["n_mu"]), int(p["z_iter"]))
        self.direct_tao_tree_ = tree.tao_tree_.copy()
        FX = tree.predict(X)
        self.direct_embedding_ = FX.copy()
        self.direct_fit_objective_ = float(exact.embedding_value(FX))
        dist2 = float(((Z0 - FX) ** 2).sum())
        if p["mu0"] is not None:
            mu0 = p["mu0"]
        else:
            mu0 = p["mu0_ratio"] * abs(self.free_objective_) / max(dist2, 1e-300)
        self.mu0_ = float(mu0)

        dtype = objective.dtype
        Z = torch.as_tensor(Z0, dtype=dtype, device=device)
        beta = torch.zeros_like(Z)
        lam = p["l1_penalty"]

        def step_penalty(mu: float) -> float:
            """The F-step's ℓ1 penalty at μ: λ·μ0/μ ("over_mu", exactly λ at μ0) or λ ("fixed")."""
            return lam * (self.mu0_ / mu) if self.penalty_mode == "over_mu" else lam

        def penalty_objective(E_Z: float, Zt: torch.Tensor, F: np.ndarray, mu: float, phi: float) -> float:
            R = Zt - torch.as_tensor(F, dtype=dtype, device=device)
            lam_E = mu * step_penalty(mu)  # the tree penalty in E's units: μ0·λ, or μλ when fixed
            return float(E_Z + lam_E * phi + mu * float((R * R).sum()) - 2.0 * float((beta * R).sum()))

        self._progress(done=free_units, total=free_units + self._mu_path_plan(p))
        ok = self._record(
            step=0, mu=0.0, E_tree=self.direct_fit_objective_, E_Z=self.free_objective_, dist2=dist2,
            objective_start=free.value, objective_after_z=free.value, objective=free.value,
            z_iter=int(free.result.n_iter), **self._tree_counts(tree),
            tree_penalty=float(lam), seconds=time.perf_counter() - start, free_seconds=free_seconds,
        )
        mu = float(mu0)
        for k in range(p["n_mu"] if ok else 0):
            t0 = time.perf_counter()
            phi = tree.tao_tree_.l1_norm()
            # Z-step: min_Z E(Z) + μ||Z − F(X)||² − 2⟨β, Z − F(X)⟩ from the previous Z.
            pen = objective.with_penalty(mu, FX, beta if self.augmented_lagrangian else None)
            res = free.optimizer.minimize(pen, Z, max_iter=p["z_iter"], tol=p["z_tol"], stop=stop)
            z_seconds = time.perf_counter() - t0
            if stop():  # cancelled: keep the last recorded step, whose Z, tree and F(X) agree
                break
            tree_penalty = step_penalty(mu)
            obj_start = res.values[0] + mu * tree_penalty * phi
            Z = res.Z
            obj_after_z = res.values[-1] + mu * tree_penalty * phi
            # F-step: TAO on the shifted targets Z − β/μ, warm-started, with the step's penalty.
            target = (Z - beta / mu).detach().cpu().numpy()
            tree.set_params(l1_penalty=tree_penalty)
            tree_start = time.perf_counter()
            tree.fit(X, target, callbacks=cancel, feature_names=self.feature_names_)
            tree_seconds = time.perf_counter() - tree_start
            FX = tree.predict(X)
            E_Z = float(objective.embedding_value(Z))
            obj = penalty_objective(E_Z, Z, FX, mu, tree.tao_tree_.l1_norm())
            if exact is not objective:
                E_Z = float(exact.embedding_value(Z))
            R = Z - torch.as_tensor(FX, dtype=dtype, device=device)
            dist2 = float((R * R).sum())
            E_tree = float(exact.embedding_value(FX))
            record = dict(step=k + 1, mu=mu, E_tree=E_tree, E_Z=E_Z, dist2=dist2, objective_start=obj_start,
                          objective_after_z=obj_after_z, objective=obj, z_iter=int(res.n_iter),
                          **self._tree_counts(tree), tree_penalty=tree_penalty,
                          seconds=time.perf_counter() - t0)
            # Multipliers (augmented Lagrangian), with the unshifted Z.
            if self.augmented_lagrangian:
                beta = beta - mu * R
            mu *= p["mu_factor"]
            done, total = path.step(int(res.n_iter), z_seconds, tree_seconds)
            self._progress(done=done, total=total)
            if not self._record(**record):
                break
        self.tao_tree_ = tree.tao_tree_.copy()
        self.node_origin_ = np.asarray(tree.node_origin_, dtype=np.int64)
        self.Z_ = Z.detach().cpu().numpy()
        self.multipliers_ = beta.detach().cpu().numpy()
        self.embedding_ = FX
        self.objective_ = float(exact.embedding_value(FX))
        self.n_iter_ = len(self.history_) - 1

    @staticmethod
    def _mu_path_plan(p: dict[str, Any]) -> float:
        """The μ path's planned work in the progress bar's units (:data:`MU_STEP_SHARE`)."""
        return float(p["n_mu"]) * MU_STEP_SHARE * float(p["z_iter"])

    @staticmethod
    def _tree_counts(tree: TAORegressor) -> dict[str, float]:
        t = tree.tao_tree_
        leaves = t.leaves()
        nz_leaf = 0 if t.leaf_weight is None else int(np.count_nonzero(t.leaf_weight[leaves]))
        return {"n_leaves": int(leaves.size), "n_decision_nodes": int(t.decision_nodes().size),
                "n_nonzero": t.n_nonzero(), "n_nonzero_leaf": nz_leaf, "l1_norm": t.l1_norm()}

    def fit_transform(self, X: Any, y: Any = None, *, callbacks: Iterable[Callback] | None = None,
                      feature_names: Sequence[str] | None = None) -> np.ndarray:
        """Fit and return ``embedding_`` (the tree's outputs on X)."""
        return self.fit(X, y, callbacks=callbacks, feature_names=feature_names).embedding_

    # ------------------------------------------------------------------ using the fitted tree
    def transform(self, X: Any) -> np.ndarray:
        """Embed points (new or not) through the tree: F(X), shape (n, 2)."""
        return self._scores(X)

    def direct_transform(self, X: Any) -> np.ndarray:
        """Embed points through the direct fit F0 (the TAO tree fitted to the free embedding)."""
        check_is_fitted(self, "direct_tao_tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.direct_tao_tree_.leaf_scores(X, self.direct_tao_tree_.apply(X))

    def to_tree(self) -> Tree:
        """The shared :class:`Tree` of the fitted tree (outputs: the embedding's coordinates)."""
        check_is_fitted(self, "tao_tree_")
        notes = ["The leaves' outputs are embedding coordinates (a linear leaf maps its points into the plane)."]
        return tao_tree_to_tree(self.tao_tree_, task="embedding", family=self.family_key,
                                feature_names=self.feature_names_, output_names=("z1", "z2"),
                                meta={"l1_penalty": self.l1_penalty_, "leaf": self.leaf, "method": self.method,
                                      "node_origin": [int(v) for v in self.node_origin_], "notes": notes})

    # ------------------------------------------------------------------ model files
    _ARRAYS = ("free_embedding_", "direct_embedding_", "embedding_", "Z_", "multipliers_")
    _VALUES = ("free_objective_", "direct_fit_objective_", "objective_", "mu0_", "perplexity_", "l1_penalty_")

    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "tao_tree_")
        arrays = {**tree_arrays(self.tao_tree_), **tree_arrays(self.direct_tao_tree_, "direct_"),
                  "node_origin": self.node_origin_}
        arrays.update({name.rstrip("_"): np.asarray(getattr(self, name)) for name in self._ARRAYS})
        learned = {name: float(getattr(self, name)) for name in self._VALUES}
        learned["n_iter_"] = int(self.n_iter_)
        learned["depth_"] = int(self.depth_)
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.tao_tree_ = tree_from_arrays(arrays)
        self.direct_tao_tree_ = tree_from_arrays(arrays, "direct_")
        self.node_origin_ = np.asarray(arrays["node_origin"], dtype=np.int64)
        for name in self._ARRAYS:
            setattr(self, name, np.array(arrays[name.rstrip("_")], dtype=np.float64))
        # files written before depth and λ had an automatic value hold neither: they were the parameters
        old = {"l1_penalty_": self.l1_penalty, "depth_": self.depth}
        for name in self._VALUES:
            setattr(self, name, float(learned.get(name, old.get(name))))
        self.n_iter_ = int(learned["n_iter_"])
        self.depth_ = int(learned.get("depth_", old["depth_"]))
