"""LapTAO estimators: semi-supervised sparse oblique trees with a graph-Laplacian penalty
(Zharmagambetov, PhD thesis 2022, chapter 3).

``fit`` takes every training point, labelled or not: unlabelled points have the label −1
(:class:`LapTAOClassifier`, scikit-learn's convention) or a target row of NaN
(:class:`LapTAORegressor`). It builds the neighbourhood graph over all points
(:func:`models.laptao.graph.laptao_graph`), starts from label propagation, fits a TAO regression
tree to the propagated targets, and then alternates label steps and warm-started TAO tree steps
along the μ schedule (:mod:`models.laptao.loop`). With constant leaves the leaf values are finally
solved exactly for the final routing. Predictions go through the tree alone, so unseen points are
predicted like training points.

Decisions where the thesis is silent or ambiguous:

* Classification is regression on one-hot targets (the thesis's choice). Every row of z, of the
  tree targets and of the leaf values then sums to 1 (the all-ones column solves each linear system
  and the multipliers' rows sum to 0), so a leaf's values are class scores summing to 1; they can
  dip below 0. ``predict`` is their arg max; ``predict_proba`` clips them at 0 and renormalises
  (uniform for a leaf with no positive score).
* The tree step's ℓ1 penalty is α itself (``penalty_mode="fixed"``), not α/μ: the thesis's
  formula divides by μ, but with μ₀ = 10⁻³ that would prune every tree to a stump;
  ``penalty_mode="over_mu"`` gives the literal form.
* The multiplier update is the thesis's ``ν ← ν − μ (z − t)`` (``multiplier_step=1``); the
  textbook step for a μ‖·‖² penalty is twice that (``multiplier_step=2``).
* LapTAO has no sample weights (the thesis's objective has none); ``fit`` does not take them.
* The graph's perplexity is tuned per data set, as in the thesis, but from the labelled points
  alone: by default (``perplexity=None``) the candidate whose label propagation best predicts each
  labelled point from the others (:func:`models.laptao.graph.select_perplexity`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from models.base import Callback, CancelWhen, TreeEstimator, seed_everything
from models.graphs import usable_perplexity
from models.ground.errors import TreevizError
from models.ground.forecast import remaining_work
from models.ground.tree import Tree
from models.laptao.graph import laptao_graph, select_perplexity
from models.laptao.label_step import keep_fraction, make_solver, partial_labels
from models.laptao.loop import Problem, Settings, alternate, solve_leaves
from models.tao.core import (
    FittedTAOTree,
    TAORegressor,
    TAOTree,
    auto_depth,
    tao_tree_to_tree,
    tree_arrays,
    tree_from_arrays,
)
from models.targets import MultiOutputRegression

#: The TAO guard of LapTAO's tree steps: every pass guarded from the start ("node"). TAO's default
#: ("objective") first tries each pass unguarded and redoes it guarded when the objective rose; in
#: LapTAO's warm-started tree steps the unguarded pass raised it on every iteration measured (on
#: the 14 000-point scale table, all 123 iterations of the 20 warm-started fits were redone), so the
#: default spent half its passes on passes thrown away. Guarding from the start gives those fits
#: the same trees (the redo is the guarded pass from the same tree) at half the cost; the objective
#: still never increases.
TREE_GUARD = "node"


class TAOTreeStep:
    """The tree step: a TAO regression tree on all N training points, warm-started from the last fit."""

    def __init__(self, X: np.ndarray, regressor: TAORegressor, stop: Callable[[], bool] = lambda: False):
        self.X = X
        self.regressor = regressor
        self.cancel = [CancelWhen(stop)]  # a cancel ends the TAO fit early
        self.origin: np.ndarray | None = None  # each node's id in the first tree
        self.n_fits = 0
        #: Each fit's work so far, in TAO's progress units: an iteration each, and one for its
        #: finishing step (prune, refit the leaves).
        self.fit_units: list[float] = []

    def fit(self, targets: np.ndarray, penalty: float) -> None:
        self.regressor.set_params(l1_penalty=float(penalty), warm_start=self.n_fits > 0)
        self.regressor.fit(self.X, targets, callbacks=self.cancel)
        origin = self.regressor.node_origin_
        self.origin = origin if self.origin is None else self.origin[origin]
        self.n_fits += 1
        self.fit_units.append(float(int(self.regressor.n_iter_) + 1))

    @property
    def tree(self) -> TAOTree:
        return self.regressor.tao_tree_

    def outputs(self, X: np.ndarray | None = None) -> np.ndarray:
        X = self.X if X is None else X
        return self.tree.leaf_scores(X, self.tree.apply(X))

    def penalty_norm(self) -> float:
        return self.tree.l1_norm()


class _LapTAOBase(FittedTAOTree, TreeEstimator):
    _task = ""

    # ------------------------------------------------------------------ parameters
    def _check_common(self, X: Any, y: Any) -> np.ndarray:
        if y is None:
            raise TreevizError("LapTAO requires y to be passed, but the target y is None; give −1 (classes) or NaN "
                               "(targets) for the unlabelled points.")
        return validate_data(self, X, dtype=np.float64)

    # ------------------------------------------------------------------ fitting
    def _fit_laptao(self, X: np.ndarray, Y: np.ndarray, labelled: np.ndarray, depth: int,
                    callbacks: Iterable[Callback] | None, eval_set: tuple | None,
                    feature_names: Sequence[str] | None, groups: np.ndarray | None) -> None:
        """The whole fit. ``groups`` (each point's class, or None for regression) stratifies the
        draw of the labels kept when ``labelled_fraction`` < 1."""
        self._set_feature_names(feature_names, X.shape[1])
        # the work planned: each μ step's tree fits in TAO's units (an iteration each, one for the
        # finishing step), half the iteration cap a fit until the fits are seen (_forecast)
        self._begin_training(callbacks, int(self.n_mu) * int(self.n_inner) * (int(self.tao_iter) / 2 + 1))
        try:
            self._fit_path(X, Y, labelled, depth, eval_set, groups)
        finally:
            self._end_training()

    def _fit_path(self, X: np.ndarray, Y: np.ndarray, labelled: np.ndarray, depth: int, eval_set: tuple | None,
                  groups: np.ndarray | None) -> None:
        """The fit's work (see :meth:`_fit_laptao`); every phase ends early on a cancel, keeping a usable model."""
        stop = self._cancel_requested
        setup = time.perf_counter()
        rng = seed_everything(self.random_state)
        tao_seed = int(rng.integers(2**31 - 1))
        # the labels kept are drawn after the tree's seed, so labelled_fraction = 1 changes nothing
        labelled = keep_fraction(labelled, float(self.labelled_fraction), groups, rng)
        Y = np.where(labelled[:, None], Y, 0.0)
        self.labelled_ = labelled
        if self.perplexity is None:  # tuned on the labels kept: leave-one-out label propagation
            perplexity, lap, scores = select_perplexity(X, Y, labelled, float(self.gamma), groups=groups,
                                                        n_neighbors=self.n_neighbors, rng=rng, stop=stop)
        else:
            perplexity, scores = usable_perplexity(self.perplexity, X.shape[0], self.n_neighbors), {}
            _, lap = laptao_graph(X, perplexity, self.n_neighbors)
        self.perplexity_ = perplexity
        self.perplexity_scores_ = scores
        problem = Problem(Y=Y, labelled=labelled, laplacian=lap, gamma=float(self.gamma),
                          # once cancelled, no factorisation: the few solves left are cheaper by CG
                          solver=make_solver(lap, labelled, float(self.gamma), method="cg" if stop() else self.solver,
                                             stop=stop))
        self.depth_ = depth
        regressor = TAORegressor(depth=depth, l1_penalty=float(self.l1_penalty), leaf=self.leaf, init=self.init,
                                 max_iter=int(self.tao_iter), guard=TREE_GUARD, device=self.device,
                                 random_state=tao_seed)
        step = TAOTreeStep(X, regressor, stop)
        settings = Settings(l1_penalty=float(self.l1_penalty), mu0=float(self.mu0), mu_factor=float(self.mu_factor),
                            n_mu=int(self.n_mu), n_inner=int(self.n_inner), tol=float(self.tol),
                            multiplier_step=int(self.multiplier_step), penalty_mode=self.penalty_mode)
        ev = None
        if eval_set is not None:
            Xv, yv = eval_set
            ev = (validate_data(self, Xv, reset=False, dtype=np.float64), np.asarray(yv))
        first = [True]
        work: list[float] = []  # each μ step's tree work, the first fit (before the steps) first

        def on_step(record: dict) -> bool:
            if first[0]:  # the graph, label propagation and the first tree count towards the first step
                record["time_s"] = time.perf_counter() - setup
                first[0] = False
            if not work:  # the first fit, before the steps, is a step of its own
                work.append(step.fit_units[0])
            work.append(sum(step.fit_units) - sum(work))
            self._progress(**self._forecast(work, int(record["mu_step"])))
            t = step.outputs()
            record["train_score"] = self._score_outputs(t[labelled], Y[labelled])
            if ev is not None:
                record["val_score"] = self._score_outputs(step.outputs(ev[0]), self._eval_targets(ev[1]))
            tree = step.tree
            record.update(n_leaves=int(tree.leaves().size), n_decision_nodes=int(tree.decision_nodes().size),
                          n_nonzero=tree.n_nonzero())
            return self._record(**record)

        result = alternate(problem, step, settings, on_step=on_step, stop=stop)
        tree = step.tree.copy()
        self.label_propagation_ = result.z0
        self.objective_ = problem.objective(step.outputs()) + float(self.l1_penalty) * tree.l1_norm()
        self.objective_before_leaf_solve_ = self.objective_
        if self.leaf == "constant" and self.leaf_solve:
            tree.value = solve_leaves(problem, tree.apply(X), tree.value)
            self.objective_ = problem.objective(tree.leaf_scores(X, tree.apply(X))) \
                + float(self.l1_penalty) * tree.l1_norm()
        self.tao_tree_ = tree
        self.node_origin_ = step.origin
        self.n_iter_ = len(self.history_)

    def _forecast(self, work: list[float], steps_done: int) -> dict[str, float]:
        """The progress bar's units done and planned after ``steps_done`` μ steps whose tree work
        was ``work`` (the first fit's first): the steps left are planned by
        :func:`~models.ground.forecast.remaining_work`, as warm-started fits get shorter."""
        done = float(sum(work[1:]))
        # a step's least: one alternation (the gap already small) whose fit stops at TAO's least,
        # two iterations (the second sees no change) and the finishing step
        floor = float(min(2, int(self.tao_iter)) + 1)
        left = remaining_work(work, int(self.n_mu) - steps_done, floor=floor,
                              cap=float(int(self.n_inner) * (int(self.tao_iter) + 1)))
        return {"done": done, "total": done + left}

    # ------------------------------------------------------------------ predictions
    # ------------------------------------------------------------------ the Tree
    def _meta(self) -> dict[str, Any]:
        return {"l1_penalty": float(self.l1_penalty), "gamma": float(self.gamma), "leaf": self.leaf,
                "node_origin": [int(v) for v in self.node_origin_], "notes": self._notes()}

    def _notes(self) -> list[str]:
        return ["Trained semi-supervised: the leaf values come from labels smoothed over a neighbourhood graph "
                "of labelled and unlabelled points, not from the labelled points alone."]

    def to_tree(self) -> Tree:
        check_is_fitted(self, "tao_tree_")
        return tao_tree_to_tree(self.tao_tree_, task=self._task, family=self.family_key,
                                feature_names=self.feature_names_, output_names=self._output_names(),
                                meta=self._meta())

    # ------------------------------------------------------------------ model files
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "tao_tree_")
        arrays = tree_arrays(self.tao_tree_)
        arrays["node_origin"] = self.node_origin_
        arrays["labelled"] = self.labelled_.astype(np.uint8)
        return {"n_iter_": int(self.n_iter_), "depth_": int(self.depth_), "objective_": float(self.objective_),
                "perplexity_": float(self.perplexity_),
                "perplexity_scores_": [[float(k), float(v)] for k, v in self.perplexity_scores_.items()]}, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.tao_tree_ = tree_from_arrays(arrays)
        self.node_origin_ = np.asarray(arrays.get("node_origin", np.arange(self.tao_tree_.n_slots)), dtype=np.int64)
        self.labelled_ = np.asarray(arrays["labelled"]).astype(bool)
        self.n_iter_ = int(learned.get("n_iter_", 0))
        self.depth_ = int(learned.get("depth_", 0))
        self.perplexity_ = float(learned["perplexity_"])
        self.perplexity_scores_ = {float(k): float(v) for k, v in learned.get("perplexity_scores_", [])}
        self.objective_ = float(learned.get("objective_", float("nan")))

    # ------------------------------------------------------------------ per task
    def _score_outputs(self, t: np.ndarray, Y: np.ndarray) -> float:
        raise NotImplementedError  # pragma: no cover

    def _eval_targets(self, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _output_names(self) -> list[str]:
        raise NotImplementedError  # pragma: no cover


def _init_params(self, **values: Any) -> None:
    for name, value in values.items():
        setattr(self, name, value)


class LapTAOClassifier(ClassifierMixin, _LapTAOBase):
    """A semi-supervised sparse oblique classification tree trained by LapTAO.

    Unlabelled training points have the label −1; at least one point must be labelled, with at
    least two classes among the labelled points. The tree regresses one-hot class scores smoothed
    over a neighbourhood graph of all the points; ``predict`` is the arg max of the leaf's scores.

    Parameters
    ----------
    labelled_fraction : float, default 0.1
        The fraction of the given labels used in training; the rest are hidden (treated as −1),
        drawn at random with ``random_state``, stratified by class with at least one label per
        class. ``labelled_`` records which points kept their labels.
    gamma : float, default 0.1
        γ, the weight of ``Σ_c t_cᵀ Lap t_c`` (the Laplacian's matrix form, half the pairwise sum)
        on a graph whose degrees are about 1.
    perplexity : float or None, default None
        Perplexity K of the graph's entropic affinities. None ("auto"): tuned on the labelled
        points, the one of 3, 5, 10, 15 and 30 whose label propagation predicts each labelled point
        best from the others (leave-one-out mean squared error; ``perplexity_scores_`` keeps every
        candidate's, :func:`models.laptao.graph.select_perplexity`). On a data set too small for it
        (with the default k) K is lowered to (N − 1)/3; ``perplexity_`` holds the value used.
    n_neighbors : int or None, default None
        k, the neighbours per point (None: 3K, at most N − 1); must exceed K (with the automatic K,
        only the candidates below k are tried).
    depth : int or None, default None
        Depth of the initial tree; None ("auto"): ⌈log2 K⌉ + 3 for K classes, between 4 and 8.
    l1_penalty : float, default 0.01
        α, the ℓ1 penalty on node weights (sum form) of every tree step.
    leaf : {"constant", "linear"}, default "constant"
        Constant leaves (solved exactly at the end) or Lasso leaves.
    mu0, mu_factor, n_mu : float, float, int, default 1e-3, 1.5, 20
        The μ schedule μ_k = μ₀ · factor^k, k < n_mu.
    n_inner : int, default 1
        Most label-step / tree-step alternations per μ.
    tol : float, default 1e-4
        A μ's alternations end early once ‖z − t‖ / ‖z‖ is below this.
    tao_iter : int, default 15
        TAO iterations per tree step.
    multiplier_step : {1, 2}, default 1
        ν ← ν − s μ (z − t): 1 is the thesis's step, 2 the textbook one.
    penalty_mode : {"fixed", "over_mu"}, default "fixed"
        The tree step's penalty: α, or α/μ.
    leaf_solve : bool, default True
        Solve the constant leaf values exactly for the final routing.
    init : {"auto", "cart", "random"}, default "auto"
        Initial tree (auto: CART for depth ≤ 2, random otherwise).
    solver : {"auto", "eigen", "lu", "cg"}, default "auto"
        Label-step solver (auto: the cached eigendecomposition up to 1000 points, sparse CG above).
    device : str, default "auto"
        Device of TAO's node solver (the label step runs on the CPU).
    random_state : int or None, default 0
    """

    _task = "classification"
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_classifiers_classes":
            "−1 marks an unlabelled point (scikit-learn's semi-supervised convention), so the labels {−1, 1} "
            "the check uses leave a single class",
    }

    def __init__(self, *, labelled_fraction=0.1, gamma=0.1, perplexity=None, n_neighbors=None, depth=None,
                 l1_penalty=0.01, leaf="constant", mu0=1e-3, mu_factor=1.5, n_mu=20, n_inner=1, tol=1e-4, tao_iter=15,
                 multiplier_step=1, penalty_mode="fixed", leaf_solve=True, init="auto", solver="auto",
                 device="auto", random_state=0):
        _init_params(self, labelled_fraction=labelled_fraction, gamma=gamma, perplexity=perplexity,
                     n_neighbors=n_neighbors, depth=depth,
                     l1_penalty=l1_penalty, leaf=leaf, mu0=mu0, mu_factor=mu_factor, n_mu=n_mu, n_inner=n_inner,
                     tol=tol, tao_iter=tao_iter, multiplier_step=multiplier_step, penalty_mode=penalty_mode,
                     leaf_solve=leaf_solve, init=init, solver=solver, device=device, random_state=random_state)

    def fit(self, X: Any, y: Any, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> LapTAOClassifier:
        """Fit on all points; ``y`` holds −1 for the unlabelled ones. There are no sample weights."""
        X = self._check_common(X, y)
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise TreevizError(f"Give one label per point (−1 for unlabelled): {X.shape[0]} points, "
                               f"labels of shape {y.shape}.")
        check_classification_targets(y[y != -1])
        Y, labelled, classes = partial_labels(y)
        if classes.size < 2:
            raise TreevizError("LapTAO needs labelled points of at least two classes; only one class is labelled.")
        self.classes_ = classes
        depth = auto_depth(classes.size) if self.depth is None else int(self.depth)
        self._fit_laptao(X, Y, labelled, depth, callbacks, eval_set, feature_names, np.argmax(Y, axis=1))
        return self

    def _score_outputs(self, t: np.ndarray, Y: np.ndarray) -> float:
        if Y.ndim == 1:  # class labels (an eval set)
            return float(np.mean(self.classes_.take(np.argmax(t, axis=1)) == Y))
        return float(np.mean(np.argmax(t, axis=1) == np.argmax(Y, axis=1)))

    def _eval_targets(self, y: np.ndarray) -> np.ndarray:
        return y

    def _output_names(self) -> list[str]:
        return [str(c) for c in self.classes_]

    def _notes(self) -> list[str]:
        return [*super()._notes(),
                "Leaf values are class scores (means of smoothed one-hot targets, summing to 1); a leaf predicts "
                "its highest score."]

    def decision_function(self, X: Any) -> np.ndarray:
        """The class scores of each sample's leaf (rows sum to 1; entries may be slightly negative);
        for two classes, as scikit-learn expects, the second class's score minus the first's (> 0
        predicts the second class)."""
        scores = self._scores(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict_proba(self, X: Any) -> np.ndarray:
        """The leaf's class scores clipped at 0 and renormalised (uniform where no score is positive)."""
        scores = np.clip(self._scores(X), 0.0, None)
        total = scores.sum(axis=1, keepdims=True)
        uniform = np.full_like(scores, 1.0 / scores.shape[1])
        return np.where(total > 0, scores / np.where(total > 0, total, 1.0), uniform)

    def predict(self, X: Any) -> np.ndarray:
        scores = self._scores(X)  # checks that the model is fitted
        return self.classes_.take(np.argmax(scores, axis=1))


class LapTAORegressor(MultiOutputRegression, RegressorMixin, _LapTAOBase):
    """A semi-supervised sparse oblique regression tree trained by LapTAO.

    Unlabelled training points have a target of NaN (a whole row of NaN for vector targets; a row
    with only some NaN is refused). Parameters as :class:`LapTAOClassifier`, except that ``depth``
    defaults to 4. The training score in ``history_`` is R² on the labelled points.
    """

    _task = "regression"

    def __init__(self, *, labelled_fraction=0.1, gamma=0.1, perplexity=None, n_neighbors=None, depth=4,
                 l1_penalty=0.01, leaf="constant", mu0=1e-3, mu_factor=1.5, n_mu=20, n_inner=1, tol=1e-4, tao_iter=15,
                 multiplier_step=1, penalty_mode="fixed", leaf_solve=True, init="auto", solver="auto",
                 device="auto", random_state=0):
        _init_params(self, labelled_fraction=labelled_fraction, gamma=gamma, perplexity=perplexity,
                     n_neighbors=n_neighbors, depth=depth,
                     l1_penalty=l1_penalty, leaf=leaf, mu0=mu0, mu_factor=mu_factor, n_mu=n_mu, n_inner=n_inner,
                     tol=tol, tao_iter=tao_iter, multiplier_step=multiplier_step, penalty_mode=penalty_mode,
                     leaf_solve=leaf_solve, init=init, solver=solver, device=device, random_state=random_state)

    def fit(self, X: Any, y: Any, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> LapTAORegressor:
        """Fit on all points; ``y`` is NaN for the unlabelled ones. There are no sample weights."""
        X = self._check_common(X, y)
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError):
            raise TreevizError("The regression targets must be numbers (NaN for unlabelled points).") from None
        if y.ndim not in (1, 2) or y.shape[0] != X.shape[0] or y.size == 0:
            raise TreevizError(f"Give one target (or one row of targets) per point: {X.shape[0]} points, "
                               f"targets of shape {y.shape}.")
        self._remember_y_shape(y)
        Y = y.reshape(X.shape[0], -1)
        if np.isinf(Y).any():
            raise TreevizError("The regression targets contain infinite values.")
        missing = np.isnan(Y)
        labelled = ~missing.any(axis=1)
        if np.any(missing.any(axis=1) & ~missing.all(axis=1)):
            raise TreevizError("A point has some targets missing and others not; give all of a point's targets, "
                               "or mark it unlabelled with NaN in every column.")
        if not labelled.any():
            raise TreevizError("Every target is missing (NaN); label at least one point.")
        Y = np.where(labelled[:, None], Y, 0.0)
        self._fit_laptao(X, Y, labelled, int(self.depth), callbacks, eval_set, feature_names, None)
        return self

    def _score_outputs(self, t: np.ndarray, Y: np.ndarray) -> float:
        Y = np.asarray(Y, dtype=np.float64).reshape(t.shape)
        return float(r2_score(Y, t)) if Y.shape[0] >= 2 else float("nan")

    def _eval_targets(self, y: np.ndarray) -> np.ndarray:
        return y

    def _output_names(self) -> list[str]:
        k = self.tao_tree_.value.shape[1]
        return ["target"] if k == 1 else [f"target {j}" for j in range(k)]

    def predict(self, X: Any) -> np.ndarray:
        out = self._scores(X)
        return self._as_y_shape(out)
