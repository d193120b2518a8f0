"""DGT-Forest (the paper's §5.2): bagging of independent DGT trees.

Each tree is a :class:`~models.dgt.estimators.DGTClassifier` / ``DGTRegressor`` with the forest's
tree parameters, trained on its own bootstrap sample (``subsample``·n rows drawn **with
replacement**, as the paper's bagging) with its own seed. Regression predicts the mean of the
trees; classification takes the majority vote (ties go to the smaller class index). Without an
``eval_set`` each tree holds out ``validation_fraction`` of its own sample to keep its best epoch.

The trees train together as **one batched program** (:func:`models.dgt.fast.train_jobs`): their
parameters are stacked on a leading dimension and every step is a batched matrix product over the
trees, each tree with its own bootstrap rows, hold-out, scaling, initial weights, batch order,
optimiser state and best epoch. On the CPU, trees with hidden layers (``n_layers`` ≥ 2) train one
after another instead, each through the single-tree path (:class:`models.dgt.fast.SingleTree`),
whose two-dimensional products are faster per tree there than the batched ones
(``benchmarks/speed/dgt_forest.py`` measures both). A tree depends only on its seed, drawn from
``random_state`` before any tree trains, so each tree is the one that fitting ``DGTClassifier`` /
``DGTRegressor`` with ``random_state=seed`` on its bootstrap rows gives (exactly when it trains
alone, to float rounding when batched; tested). Trees whose shapes differ (a classification
bootstrap sample that needed extra rows for a missing class) form their own batch. ``n_jobs`` caps
the torch threads (one thread for small networks, whose steps are too small to share). Callbacks
get one record per tree, in tree order, after training. A cancel reaches the training within an
optimiser step, and the forest keeps every tree that took a step, each at its best epoch so far
(the trees of a batched program all part way; trees trained one after another: those finished and
the one in training part way), as a single tree cancelled part way; a callback that stops the
forest at a tree's record keeps the trees recorded so far.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback, TreeEstimator, class_targets, seed_everything
from models.dgt.estimators import SMALL_NETWORK, DGTClassifier, DGTRegressor
from models.dgt.fast import train_jobs
from models.ground import threads
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.targets import MultiOutputRegression

_TREE_PARAMS = ("depth", "n_layers", "width_multiplier", "quantizer", "l1_penalty", "l2_penalty", "learning_rate",
                "momentum", "batch_size", "max_epochs", "min_steps", "grad_clip", "validation_fraction", "device")


class _DGTForestBase(TreeEstimator):
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "each tree trains on a bootstrap sample and by mini-batch RMSprop; repeating a row changes the draw "
            "and the batches, so no weighting can equal repetition (rows of weight 0 are left out)",
    }
    _tree_class: ClassVar[type] = DGTClassifier
    _task = ""

    def __init__(self, *, n_trees=10, subsample=1.0, depth=6, n_layers=1, width_multiplier=None, quantizer="scaled",
                 l1_penalty=1e-5, l2_penalty=0.0, learning_rate=1e-2, momentum=0.0, batch_size=128, max_epochs=200,
                 min_steps=500, grad_clip=0.01, validation_fraction=0.2, n_jobs=-1, device="auto", random_state=0):
        self.n_trees = n_trees
        self.subsample = subsample
        self.depth = depth
        self.n_layers = n_layers
        self.width_multiplier = width_multiplier
        self.quantizer = quantizer
        self.l1_penalty = l1_penalty
        self.l2_penalty = l2_penalty
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.min_steps = min_steps
        self.grad_clip = grad_clip
        self.validation_fraction = validation_fraction
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state

    def _tree_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _TREE_PARAMS}

    def _fit_forest(self, X: np.ndarray, y: np.ndarray, W: np.ndarray | None, eval_set: Any,
                    callbacks: Iterable[Callback] | None, feature_names: Sequence[str] | None) -> None:
        self._set_feature_names(feature_names, X.shape[1])
        if W is not None:
            keep = W > 0
            if not keep.any():
                raise ValueError("The sample weights sum to zero: at least one row must have a positive weight.")
            X, y, W = X[keep], y[keep], W[keep]
        if self.n_jobs == 0:
            raise TreevizError("Parameter 'n_jobs' must be -1 (every core this run may use) or at least 1; got 0.")
        rng = seed_everything(self.random_state)
        n = X.shape[0]
        m = max(2, round(float(self.subsample) * n))
        seeds = [int(s) for s in rng.integers(2**31 - 1, size=int(self.n_trees))]
        # every tree is prepared before training begins (as a single tree's fit): a cancel is
        # then asked before every optimiser step of the batched program
        jobs = []
        for seed in seeds:
            tree, idx = _bootstrap_tree(self._tree_class, self._tree_params(), X, y, m, seed)
            job = tree._prepare(X[idx], y[idx], None if W is None else W[idx], eval_set, self.feature_names_)
            jobs.append((tree, job))
        # the work is counted in tree-epochs, as the batched program runs them; a record per tree
        # comes only at the end
        planned = sum(job.config.epochs for _, job in jobs)
        self._begin_training(callbacks, planned)
        done = [0]
        trees: list[TreeEstimator] = []
        try:
            histories: list[list[dict[str, Any]]] = [[] for _ in jobs]
            infos: list[dict[str, Any] | None] = [None] * len(jobs)
            # trees of equal shapes (all of them, unless a bootstrap sample needed extra rows for a
            # missing class) train together as one batched program, except where a tree trains
            # faster alone (on the CPU, trees with hidden layers): then one after another
            groups: dict[tuple, list[int]] = {}
            for t, (_, job) in enumerate(jobs):
                groups.setdefault((t,) if job.trains_faster_alone() else job.shape_key(), []).append(t)
            for members in groups.values():
                if self._cancel_requested():
                    break
                group = [jobs[t][1] for t in members]

                def keep(numbers: list[dict[str, Any]], members: list[int] = members) -> bool:
                    for t, record in zip(members, numbers):
                        histories[t].append(record)
                    done[0] += len(numbers)
                    self._progress(done=done[0])
                    return True

                n_params = len(group) * sum(p.numel() for p in group[0].net.parameters())
                # n_jobs in scikit-learn's meaning, as threads (no task count caps them)
                n_threads = threads.worker_count(self.n_jobs, os.cpu_count() or 1)
                with threads.limited(1 if n_params < SMALL_NETWORK else n_threads):
                    for t, info in zip(members, train_jobs(group, record=keep, stop=self._cancel_requested)):
                        infos[t] = info
            # a cancel during the batched program leaves every tree of the groups that took a step
            # at its best epoch so far (its last parameters before the first record), as a single
            # tree cancelled part way: the forest keeps them all and still records each
            cancelled = self.stopped_early_
            for t, ((tree, job), info) in enumerate(zip(jobs, infos)):
                if info is None or not (histories[t] or info["steps"] > 0):
                    break
                tree.history_, tree.stopped_early_ = histories[t], cancelled
                tree._finish_tree(job, info)
                trees.append(tree)
                if not self._record(tree=t + 1, **_summary(tree)) and not cancelled:
                    break
        finally:
            self._end_training()
        if not trees:
            raise TreevizError("The forest was stopped before its first tree was trained.")
        self.estimators_ = trees

    def to_trees(self) -> list[Tree]:
        check_is_fitted(self, "estimators_")
        out = []
        for i, est in enumerate(self.estimators_):
            tree = est.to_tree()
            meta = {**tree.meta, "forest_index": i, "forest_size": len(self.estimators_),
                    "ensemble": self._combination()}
            out.append(tree._replace(family=self.family_key, meta=meta))
        return out

    def to_tree(self, index: int = 0) -> Tree:
        trees = self.to_trees()
        if not 0 <= index < len(trees):
            raise TreevizError(f"The forest has {len(trees)} trees; choose an index from 0 to {len(trees) - 1}.")
        return trees[index]

    def _tree_values(self, X: Any) -> np.ndarray:
        """(n_trees, n, K) each tree's leaf values."""
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.stack([est.tree_.predict_value(X) for est in self.estimators_])

    # ------------------------------------------------------------------ model files
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "estimators_")
        learned: dict[str, Any] = {"n_trees_fitted": len(self.estimators_), "trees": []}
        arrays: dict[str, np.ndarray] = {}
        for i, est in enumerate(self.estimators_):
            tree_learned, tree_arrays = est._get_model_state()
            learned["trees"].append(tree_learned)
            arrays.update({f"t{i}_{k}": v for k, v in tree_arrays.items()})
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        n = int(learned.get("n_trees_fitted", 0))
        if n < 1:
            raise TreevizError("The model file holds no trees; train the forest again.")
        trees = []
        for i in range(n):
            est = self._tree_class(**self._tree_params())
            est.n_features_in_ = self.n_features_in_
            est.feature_names_ = self.feature_names_
            if hasattr(self, "classes_"):
                est.classes_ = self.classes_
            prefix = f"t{i}_"
            est._set_model_state(learned["trees"][i],
                                 {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
            trees.append(est)
        self.estimators_ = trees


def _bootstrap_tree(tree_class: type, params: dict[str, Any], X: np.ndarray, y: np.ndarray, m: int, seed: int
                    ) -> tuple[TreeEstimator, np.ndarray]:
    """One tree from its seed alone: an unfitted estimator with ``random_state=seed`` and the rows
    of its bootstrap sample (``m`` rows drawn with replacement, plus one row of each class the
    sample missed). Fitting the estimator on those rows trains the forest's tree alone."""
    tree_rng = np.random.default_rng(seed)
    n = X.shape[0]
    idx = tree_rng.choice(n, size=m, replace=True)
    if tree_class._task == "classification" and np.unique(y[idx]).size < np.unique(y).size:
        # a bootstrap sample missing a class: add one row of each missing class
        missing = np.setdiff1d(np.unique(y), np.unique(y[idx]))
        idx = np.concatenate([idx, [tree_rng.choice(np.flatnonzero(y == c)) for c in missing]])
    return tree_class(**params, random_state=seed), idx


def _summary(tree: TreeEstimator) -> dict[str, Any]:
    """The forest's history record of one tree: its epochs and its best validation epoch."""
    best = min(tree.history_, key=lambda r: r.get("val_loss", np.inf)) if tree.history_ else {}
    return {"epochs": tree.n_epochs_, "best_epoch": tree.best_epoch_, "val_loss": best.get("val_loss"),
            "val_score": best.get("val_score")}


class DGTForestClassifier(ClassifierMixin, _DGTForestBase):
    """Bagged DGT classification trees, combined by majority vote. Tree parameters as
    :class:`~models.dgt.estimators.DGTClassifier`; ``n_trees`` trees, each on a bootstrap sample of
    ``subsample``·n rows drawn with replacement. The trees train in this process, as one batched
    program or one after another (see the module's description); ``n_jobs`` caps their torch
    threads (-1, the default, is the process's thread budget, see
    :func:`models.ground.threads.worker_count`)."""

    _task = "classification"
    _tree_class = DGTClassifier

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> DGTForestClassifier:
        X, Y, _ = class_targets(self, X, y)
        W = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                                    ensure_non_negative=True)
        # the trees take the labels themselves (and the validation set as given)
        self._fit_forest(X, self.classes_.take(Y), W, eval_set, callbacks, feature_names)
        return self

    def _votes(self, X: Any) -> np.ndarray:
        values = self._tree_values(X)  # (T, n, K_tree): each tree's classes are the forest's classes
        votes = np.zeros(values.shape[1:])
        np.add.at(votes, (np.arange(values.shape[1])[None, :].repeat(values.shape[0], 0), values.argmax(axis=2)), 1)
        return votes

    def predict_proba(self, X: Any) -> np.ndarray:
        """The fraction of the trees voting for each class."""
        votes = self._votes(X)
        return votes / votes.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        votes = self._votes(X)
        return self.classes_.take(votes.argmax(axis=1))

    def _output_names(self) -> list[str]:
        return [str(c) for c in self.classes_]

    def _combination(self) -> str:
        return "The forest predicts by majority vote of its trees."


class DGTForestRegressor(MultiOutputRegression, RegressorMixin, _DGTForestBase):
    """Bagged DGT regression trees whose prediction is the trees' mean; parameters as
    :class:`DGTForestClassifier`."""

    _task = "regression"
    _tree_class = DGTRegressor

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> DGTForestRegressor:
        X, Y, W = self._regression_data(X, y, sample_weight)
        self._fit_forest(X, self._as_y_shape(Y), W, eval_set, callbacks, feature_names)
        return self

    def predict(self, X: Any) -> np.ndarray:
        out = self._tree_values(X).mean(axis=0)
        return self._as_y_shape(out)

    def _combination(self) -> str:
        return "The forest predicts the mean of its trees' predictions."

