"""Forests of TAO trees (``docs/tao.md``): each tree is trained independently by TAO on its own
random subsample (90 % without replacement by default) from its own random initial tree.

Aggregation follows the thesis: regression averages the trees; classification takes a
**majority vote** with constant leaves (TAO-c) and **averages class probabilities** with linear
or softmax leaves (TAO-l). Ties in a vote go to the smaller class index.

The trees are independent, so ``n_jobs`` of them train at once in worker processes (loky's
reusable pool, joblib's default, through :func:`models.parallel.run_in_order`), each on one
thread. Every tree's seed is drawn from ``random_state`` before any tree trains, and a tree's
subsample, initial tree and training depend only on its seed, so the forest is the same for any
``n_jobs``. Results come back in tree order, so callbacks see one record per tree, in order, as in
a sequential fit. Progress inside a tree (its TAO iterations) is not reported, in either mode, but
a cancel reaches the tree in training within a depth level (in worker processes through a
:class:`~models.base.CancelFlag`), and the forest waits for workers still starting no longer than
:data:`models.parallel.GRACE_S`: it keeps the trees it received, the last one possibly trained
only part way, and abandons the others. The first tree always starts, even when the cancel reached
the workers first, so a cancelled forest has at least one tree once its workers had started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from joblib.parallel import get_active_backend
from sklearn.base import ClassifierMixin, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from models.base import Callback, seed_everything
from models.ground import threads
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.parallel import run_in_order
from models.tao.config import TAOConfig
from models.tao.estimators import (
    _ClassLabels,
    _TAOBase,
    _Targets,
    compact,
    drop_zero_weights,
    tao_tree_to_tree,
    tree_arrays,
    tree_from_arrays,
)
from models.tao.loop import train
from models.tao.objective import class_probabilities


class _ForestBase(_TAOBase):
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "each tree trains on a random subsample of the rows drawn without replacement; repeating a row "
            "changes the number of rows and hence the draw, so no weighting of the subsample can equal "
            "repetition (zero weights are equivalent: those rows are dropped before subsampling)",
    }

    def _fit_forest(self, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, n_outputs: int,
                    callbacks: Iterable[Callback] | None, feature_names: Sequence[str] | None) -> None:
        if self.n_jobs == 0:
            raise TreevizError("Parameter 'n_jobs' must be -1 (every core this run may use) or at least 1; got 0.")
        cfg = self._config(n_outputs)
        self._set_feature_names(feature_names, X.shape[1])
        X, Y, sw = drop_zero_weights(X, Y, sw)
        rng = seed_everything(self.random_state)
        n = X.shape[0]
        m = max(2, round(float(self.subsample) * n)) if n >= 2 else n
        seeds = [int(s) for s in rng.integers(2**31 - 1, size=int(self.n_trees))]
        self.depth_ = int(self.depth)
        # Trees on a GPU stay in this process: one CUDA context per worker would cost more than it gains.
        # So does a forest that is itself trained in a joblib worker (a benchmark's or a search's): the
        # level above already uses the cores.
        in_worker = getattr(get_active_backend()[0], "nesting_level", 0) > 0
        on_gpu = cfg.solver == "torch" and cfg.device.startswith("cuda")
        workers = 1 if on_gpu or in_worker else threads.worker_count(self.n_jobs, len(seeds))
        self._begin_training(callbacks, len(seeds))
        trees, origins = [], []
        grown = run_in_order(_grow_tree, (clone(self), X, Y, sw, m, cfg), seeds, workers, self._cancel_requested)
        try:
            for t, (arrays, origin, summary) in enumerate(grown):
                tree = tree_from_arrays(arrays)
                trees.append(tree)
                origins.append(origin)
                if not self._record(tree=t + 1, **summary):
                    break
        finally:
            grown.close()
            self._end_training()
        if not trees:
            raise TreevizError("The forest was stopped before its first tree was trained.")
        self.trees_ = trees
        self.node_origins_ = origins
        self.n_iter_ = len(self.history_)

    # ------------------------------------------------------------------ the trees
    def _tree_scores(self, X: Any) -> list[np.ndarray]:
        check_is_fitted(self, "trees_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return [t.leaf_scores(X, t.apply(X)) for t in self.trees_]

    def to_trees(self) -> list[Tree]:
        check_is_fitted(self, "trees_")
        return [tao_tree_to_tree(t, task=self._task, family=self.family_key, feature_names=self.feature_names_,
                                 output_names=self._output_names(),
                                 meta={**self._meta(o), "forest_index": i, "forest_size": len(self.trees_),
                                       "ensemble": self._combination()})
                for i, (t, o) in enumerate(zip(self.trees_, self.node_origins_))]

    def _combination(self) -> str:
        """How the forest combines its trees, in a sentence (shown with the forest summary)."""
        if self._task == "regression":
            return "The forest predicts the mean of its trees' predictions."
        if self.leaf == "linear":
            return "The forest predicts by averaging its trees' class probabilities (linear leaves)."
        return "The forest predicts by majority vote of its trees (constant leaves)."

    def to_tree(self, index: int = 0) -> Tree:
        """One tree of the forest (the first by default); :meth:`to_trees` gives all of them."""
        trees = self.to_trees()
        if not 0 <= index < len(trees):
            raise TreevizError(f"The forest has {len(trees)} trees; choose an index from 0 to {len(trees) - 1}.")
        return trees[index]

    def _get_model_state(self):
        check_is_fitted(self, "trees_")
        learned = {"n_trees_fitted": len(self.trees_), "n_iter_": int(self.n_iter_)}
        arrays: dict[str, np.ndarray] = {}
        for i, (t, o) in enumerate(zip(self.trees_, self.node_origins_)):
            arrays.update(tree_arrays(t, prefix=f"t{i}_"))
            arrays[f"t{i}_origin"] = o
        return learned, arrays

    def _set_model_state(self, learned, arrays):
        n = int(learned.get("n_trees_fitted", 0))
        if n < 1:
            raise TreevizError("The model file holds no trees; train the forest again.")
        self.trees_ = [tree_from_arrays(arrays, prefix=f"t{i}_") for i in range(n)]
        self.node_origins_ = [np.asarray(arrays.get(f"t{i}_origin", np.arange(t.n_slots)), dtype=np.int64)
                              for i, t in enumerate(self.trees_)]
        self.n_iter_ = int(learned.get("n_iter_", 0))


_Grown = tuple[dict[str, np.ndarray], np.ndarray, dict[str, Any]]


def _grow_tree(maker: _ForestBase, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, m: int, cfg: TAOConfig,
               seed: int, stop: Callable[[], bool] = lambda: False) -> _Grown:
    """Train one tree from its seed alone: its subsample of ``m`` rows, its initial tree (``maker``,
    an unfitted copy of the forest, knows the depth and init), then TAO, until ``stop()`` (a
    cancel). Returns plain data: the compact tree's arrays, each node's origin and the tree's
    history record."""
    tree_rng = np.random.default_rng(seed)
    n = X.shape[0]
    idx = np.sort(tree_rng.choice(n, size=min(m, n), replace=False))
    Xs, Ys, ss = X[idx], Y[idx], sw[idx]
    tree, assigned = maker._initial_tree(Xs, Ys, ss, cfg, tree_rng)
    records: list[dict] = []
    train(tree, Xs, Ys, ss, cfg, initial_leaf=assigned, on_iteration=records.append, stop=stop)
    tree, origin = compact(tree)
    last = records[-1] if records else {}
    summary = {"iterations": len(records), "objective": last.get("objective"),
               "tree_train_error": last.get("train_error"), "n_nonzero": tree.n_nonzero(),
               "n_decision_nodes": int(tree.decision_nodes().size), "n_leaves": int(tree.leaves().size)}
    return tree_arrays(tree), origin, summary


class TAOForestClassifier(ClassifierMixin, _ClassLabels, _ForestBase):
    """A forest of TAO classification trees (TAO-c: constant leaves, majority vote; TAO-l: linear
    leaves, averaged probabilities). Tree parameters as :class:`TAOClassifier`; ``n_trees`` trees,
    each on a ``subsample`` fraction of the training set drawn without replacement, with its own
    random initial tree (``init="random"``, the thesis's forests). ``n_jobs`` trees train at once in
    worker processes (scikit-learn's meaning; -1, the default, is capped by the process's thread
    budget, see :func:`models.ground.threads.worker_count`); the forest is the same for any value."""

    _task = "classification"

    def __init__(self, *, n_trees=10, subsample=0.9, depth=6, l1_penalty=0.01, leaf="constant", leaf_classes=None,
                 node_type="oblique", init="random", max_iter=20, tol=1e-4, order="reverse_bfs", guard="objective",
                 solver="auto", loss="zero_one", beta=100.0, n_jobs=-1, device="auto", random_state=0):
        self.n_trees = n_trees
        self.subsample = subsample
        self.depth = depth
        self.l1_penalty = l1_penalty
        self.leaf = leaf
        self.leaf_classes = leaf_classes
        self.node_type = node_type
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.order = order
        self.guard = guard
        self.solver = solver
        self.loss = loss
        self.beta = beta
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> TAOForestClassifier:
        X, Y, sw = self._labels(X, y, sample_weight)
        self._fit_forest(X, Y, sw, self.classes_.size, callbacks, feature_names)
        return self

    def tree_predictions(self, X: Any) -> np.ndarray:
        """Class index predicted by every tree, shape (n_trees, n_samples)."""
        return np.stack([np.argmax(s, axis=1) for s in self._tree_scores(X)])

    def predict_proba(self, X: Any) -> np.ndarray:
        """Vote fractions (constant leaves) or the mean of the trees' probabilities (linear leaves)."""
        scores = self._tree_scores(X)
        K = self.classes_.size
        if self.leaf == "constant":
            votes = np.stack([np.argmax(s, axis=1) for s in scores])
            counts = np.stack([(votes == k).sum(axis=0) for k in range(K)], axis=1)
            return counts / votes.shape[0]
        return np.mean([class_probabilities(t, s) for t, s in zip(self.trees_, scores)], axis=0)

    def predict(self, X: Any) -> np.ndarray:
        proba = self.predict_proba(X)  # first, so an unfitted model raises NotFittedError
        return self.classes_.take(np.argmax(proba, axis=1))


class TAOForestRegressor(RegressorMixin, _Targets, _ForestBase):
    """A forest of TAO regression trees whose prediction is the trees' mean. Parameters as
    :class:`TAOForestClassifier` (constant or linear leaves, ``n_jobs``)."""

    _task = "regression"

    def __init__(self, *, n_trees=10, subsample=0.9, depth=6, l1_penalty=0.01, leaf="constant", node_type="oblique",
                 init="random", max_iter=20, tol=1e-4, order="reverse_bfs", guard="objective", solver="auto",
                 n_jobs=-1, device="auto", random_state=0):
        self.n_trees = n_trees
        self.subsample = subsample
        self.depth = depth
        self.l1_penalty = l1_penalty
        self.leaf = leaf
        self.node_type = node_type
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.order = order
        self.guard = guard
        self.solver = solver
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> TAOForestRegressor:
        X, Y, sw = self._targets(X, y, sample_weight)
        self._fit_forest(X, Y, sw, Y.shape[1], callbacks, feature_names)
        return self

    def _output_names(self) -> list[str]:
        return self._target_names(self.trees_[0].value.shape[1])

    def tree_predictions(self, X: Any) -> np.ndarray:
        """Every tree's prediction, shape (n_trees, n_samples) (first output)."""
        return np.stack([s[:, 0] for s in self._tree_scores(X)])

    def predict(self, X: Any) -> np.ndarray:
        return self._as_y_shape(np.mean(self._tree_scores(X), axis=0))
