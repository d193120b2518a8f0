"""StumpClassifier and StumpRegressor: one best axis-aligned split (or a single leaf), numpy only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback, TreeEstimator
from models.ground.tree import Tree


def _impurity(counts: np.ndarray, criterion: str) -> np.ndarray:
    """Gini or entropy of class-count rows (weighted counts), 0 for empty rows."""
    total = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
    if criterion == "gini":
        return 1.0 - (p * p).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=-1)


def best_split(X: np.ndarray, stats: np.ndarray, sw: np.ndarray, cost) -> tuple[int, float, float]:
    """(feature, threshold, gain) of the split that lowers the weighted cost most.

    ``stats`` holds per-sample statistics whose weighted sums give a node's cost through ``cost``
    (class one-hots for classification; y and y² for regression). gain is -inf with no split.
    """
    total_w = sw.sum()
    parent = cost(stats.T @ sw, total_w)
    best = (0, 0.0, -np.inf)
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        x, w = X[order, j], sw[order]
        left = np.cumsum(stats[order] * w[:, None], axis=0)[:-1]
        left_w = np.cumsum(w)[:-1]
        cut = np.flatnonzero(x[1:] > x[:-1])  # split only between distinct values
        if cut.size == 0:
            continue
        right = left[-1] + stats[order][-1] * w[-1] - left[cut]
        children = cost(left[cut], left_w[cut]) + cost(right, total_w - left_w[cut])
        k = int(np.argmin(children))
        gain = (parent - children[k]) / total_w
        if gain > best[2]:
            best = (j, float((x[cut[k]] + x[cut[k] + 1]) / 2), float(gain))
    return best


class _Stump(TreeEstimator):
    _task = ""
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_classifiers_train": "one split cannot reach scikit-learn's accuracy threshold",
        "check_regressors_train": "one split cannot reach scikit-learn's R² threshold",
        "check_sample_weight_equivalence_on_dense_data":
            "equally good splits are told apart by float rounding, which differs between weights and repeats",
    }

    def _fit_stump(self, X, stats, sw, leaf_values, callbacks: Iterable[Callback] | None,
                   eval_set: Any, feature_names: Sequence[str] | None, score_args: tuple) -> None:
        self._set_feature_names(feature_names, X.shape[1])
        self._begin_training(callbacks, total=1)
        try:
            j, t, gain = best_split(X, stats, sw, self._cost)
            d = X.shape[1]
            if gain >= float(self.min_gain) and np.isfinite(gain) and gain > 0:
                left_rows = X[:, j] <= t
                weight = np.zeros((3, d))
                weight[0, j] = 1.0
                values = np.vstack([np.full(leaf_values(np.ones(len(X), bool)).shape, np.nan),
                                    leaf_values(left_rows), leaf_values(~left_rows)])
                self.tree_ = Tree(children_left=[1, -1, -1], children_right=[2, -1, -1], weight=weight,
                                  bias=[-t, 0.0, 0.0], leaf_value=values, **self._tree_names())
            else:
                self.tree_ = Tree(children_left=[-1], children_right=[-1], weight=np.zeros((1, d)),
                                  bias=[0.0], leaf_value=leaf_values(np.ones(len(X), bool))[None, :],
                                  **self._tree_names())
            record = {"epoch": 1, "train_score": self._score_array(X, *score_args),
                      "n_leaves": self.tree_.n_leaves}
            if eval_set is not None:
                record["val_score"] = self.score(*eval_set)
            self._record(**record)
        finally:
            self._end_training()

    def _tree_names(self) -> dict[str, Any]:
        return {"feature_names": self.feature_names_, "output_names": self._output_names(),
                "task": self._task, "family": self.family_key}

    def to_tree(self) -> Tree:
        check_is_fitted(self, "tree_")
        return self.tree_

    def _values(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "tree_")
        return self.tree_.predict_value(validate_data(self, X, reset=False, dtype=np.float64))

    def _get_model_state(self):
        t = self.to_tree()
        return {}, {"left": t.children_left, "right": t.children_right, "weight": t.weight, "bias": t.bias,
                    "leaf_value": t.leaf_value}

    def _set_model_state(self, learned, arrays):
        self._restore_outputs(arrays["leaf_value"].shape[1])
        self.tree_ = Tree(children_left=arrays["left"], children_right=arrays["right"], weight=arrays["weight"],
                          bias=arrays["bias"], leaf_value=arrays["leaf_value"], **self._tree_names())


class StumpClassifier(ClassifierMixin, _Stump):
    """A decision stump for classification: class fractions in each leaf."""

    _task = "classification"

    def __init__(self, *, min_gain=0.0, criterion="gini", random_state=0):
        self.min_gain = min_gain
        self.criterion = criterion
        self.random_state = random_state

    def _cost(self, counts: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return _impurity(counts, self.criterion) * weight

    def fit(self, X, y, sample_weight=None, *, callbacks=None, eval_set=None, feature_names=None):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        self.classes_, idx = np.unique(y, return_inverse=True)
        onehot = np.eye(self.classes_.size)[idx]

        def fractions(rows: np.ndarray) -> np.ndarray:
            counts = onehot[rows].T @ sw[rows]
            return counts / max(counts.sum(), 1e-300)

        self._fit_stump(X, onehot, sw, fractions, callbacks, eval_set, feature_names, (y, sw))
        return self

    def _output_names(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.classes_)

    def _restore_outputs(self, n_outputs: int) -> None:
        """classes_ come back through the base class."""

    def _score_array(self, X, y, sw) -> float:
        pred = self.classes_.take(np.argmax(self.tree_.predict_value(X), axis=1))
        return float(np.average(pred == y, weights=sw))

    def predict_proba(self, X) -> np.ndarray:
        return self._values(X)

    def predict(self, X) -> np.ndarray:
        values = self._values(X)  # first, so an unfitted model raises NotFittedError
        return self.classes_.take(np.argmax(values, axis=1))


class StumpRegressor(RegressorMixin, _Stump):
    """A decision stump for regression: the mean target in each leaf."""

    _task = "regression"

    def __init__(self, *, min_gain=0.0, random_state=0):
        self.min_gain = min_gain
        self.random_state = random_state

    @staticmethod
    def _cost(sums: np.ndarray, weight: np.ndarray) -> np.ndarray:
        w = np.maximum(weight, 1e-300)
        return sums[..., 1] - sums[..., 0] ** 2 / w  # weighted sum of squared deviations

    def fit(self, X, y, sample_weight=None, *, callbacks=None, eval_set=None, feature_names=None):
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        stats = np.column_stack([y, y * y])

        def mean(rows: np.ndarray) -> np.ndarray:
            return np.array([np.average(y[rows], weights=sw[rows]) if sw[rows].sum() > 0 else y.mean()])

        self._fit_stump(X, stats, sw, mean, callbacks, eval_set, feature_names, (y, sw))
        return self

    def _output_names(self) -> tuple[str, ...]:
        return ("y",)

    def _restore_outputs(self, n_outputs: int) -> None:
        """One output; nothing else to restore."""

    def _score_array(self, X, y, sw) -> float:
        pred = self.tree_.predict_value(X)[:, 0]
        resid = np.average((y - pred) ** 2, weights=sw)
        total = np.average((y - np.average(y, weights=sw)) ** 2, weights=sw)
        return float(1.0 - resid / total) if total > 0 else 0.0

    def predict(self, X) -> np.ndarray:
        return self._values(X)[:, 0]
