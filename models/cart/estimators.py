"""CART (scikit-learn's greedy decision tree) adapted to treeviz's estimator frame.

Training is scikit-learn's; prediction goes through the shared :class:`models.ground.tree.Tree`, so a
model saved as arrays and loaded again predicts exactly as the freshly fitted one, and the Tree
conversion is tested against scikit-learn on every fit path.

scikit-learn casts inputs to float32 before comparing ``x[f] <= threshold`` (a float64).
:func:`float64_threshold` turns each threshold into the float64 boundary ``M`` for which
``x <= M`` holds exactly when ``float32(x) <= threshold``, so the Tree (which works in float64)
routes every float64 input the same way scikit-learn does.

Missing values (NaN) are handled as scikit-learn 1.9's trees handle them: each split learns on
which side missing values go (``tree_.missing_go_to_left``), kept in the Tree as
``missing_right``; a split that separates missing from present values has the threshold +inf in
scikit-learn, stored here as the largest float64 so every present value goes left.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from models.base import Callback, TreeEstimator
from models.ground.tree import Tree

_F32 = np.float32


def float64_threshold(threshold: np.ndarray) -> np.ndarray:
    """Largest float64 ``M`` with ``{x : x <= M} == {x : float32(x) <= threshold}``.

    float32 rounding is monotone, so ``float32(x) <= t`` iff ``float32(x) <= F`` where ``F`` is
    the largest float32 not above ``t``, iff ``x`` is at most the top of ``F``'s rounding
    interval: the midpoint between ``F`` and the next float32 up, included when round-half-even
    sends the midpoint to ``F`` (even significand), excluded otherwise.
    """
    t = np.asarray(threshold, dtype=np.float64)
    f = t.astype(_F32)
    f = np.where(f.astype(np.float64) > t, np.nextafter(f, _F32(-np.inf)), f)
    g = np.nextafter(f, _F32(np.inf))
    mid = (f.astype(np.float64) + g.astype(np.float64)) / 2.0
    even = (f.view(np.uint32) & 1) == 0
    m = np.where(even, mid, np.nextafter(mid, -np.inf))
    return np.where(np.isfinite(m), m, t)


def tree_from_sklearn(
    model: DecisionTreeClassifier | DecisionTreeRegressor,
    *,
    feature_names: Iterable[str] | None = None,
    output_names: Iterable[str] | None = None,
    task: str,
    family: str,
) -> Tree:
    """Convert a fitted scikit-learn decision tree into a :class:`Tree` with one-hot weight rows.

    Node ids are kept, so ``Tree`` node ``i`` is scikit-learn's node ``i``. ``family`` is the
    key written into the Tree (the estimator's ``family_key``).
    """
    st = model.tree_
    n, d = st.node_count, model.n_features_in_
    left = st.children_left.astype(np.int64)
    right = st.children_right.astype(np.int64)
    internal = left >= 0
    weight = np.zeros((n, d))
    weight[np.flatnonzero(internal), st.feature[internal]] = 1.0
    bias = np.zeros(n)
    threshold = float64_threshold(st.threshold[internal])
    bias[internal] = -np.where(np.isposinf(threshold), np.finfo(np.float64).max, threshold)
    missing_right = internal & (np.asarray(st.missing_go_to_left) == 0)
    value = st.value[:, :, :]  # (n_nodes, n_outputs, n_classes)
    if task == "classification":
        # scikit-learn >= 1.4 stores class fractions in tree_.value and predict_proba returns
        # them as they are; older versions stored weighted counts, normalised here.
        leaf_value = np.array(value[:, 0, :], dtype=np.float64)
        total = leaf_value.sum(axis=1)
        if not np.allclose(total[total > 0], 1.0):
            leaf_value /= np.where(total > 0, total, 1.0)[:, None]
    else:
        leaf_value = value[:, :, 0].astype(np.float64)
    leaf_value = leaf_value.copy()
    leaf_value[internal] = np.nan
    return Tree(
        children_left=left,
        children_right=right,
        weight=weight,
        bias=bias,
        leaf_value=leaf_value,
        missing_right=missing_right,
        feature_names=tuple(feature_names) if feature_names is not None else (),
        output_names=tuple(str(o) for o in output_names) if output_names is not None else (),
        task=task,
        family=family,
        meta={"prediction": "leaf_value", "axis_aligned": True},
    )


class _CARTBase(TreeEstimator):
    _sk_class: type
    _task: str
    # scikit-learn's tree fits CSR/CSC as they are, and the Tree routes them in row blocks; a
    # dense copy is still fitted when it fits in memory, because only it is equal to the dense fit
    _sparse_input = "native"
    _densify_reason = ("scikit-learn's sparse splitter adds in another order, so only a dense copy "
                       "fits exactly as the dense array")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are routed as scikit-learn routes them
        return tags

    def _sk_params(self) -> dict[str, Any]:
        return {
            "max_depth": self.max_depth,
            "min_samples_split": self.min_samples_split,
            "min_samples_leaf": self.min_samples_leaf,
            "criterion": self.criterion,
            "ccp_alpha": self.ccp_alpha,
            "max_leaf_nodes": self.max_leaf_nodes,
            "random_state": self.random_state,
        }

    def _fit_common(self, X: np.ndarray, y: np.ndarray, sample_weight: Any,
                    callbacks: Iterable[Callback] | None, eval_set: Any, feature_names: Any) -> Any:
        self._set_feature_names(feature_names, X.shape[1])
        self._begin_training(callbacks, total=1)
        try:
            self.estimator_ = self._sk_class(**self._sk_params())
            self.estimator_.fit(X, y, sample_weight=sample_weight)
            self.tree_structure_ = tree_from_sklearn(
                self.estimator_,
                feature_names=self.feature_names_,
                output_names=self._output_names(),
                task=self._task,
                family=self.family_key,
            )
            record: dict[str, Any] = {
                "epoch": 1,
                "train_score": self._score_array(X, y, sample_weight),
                "n_leaves": self.tree_structure_.n_leaves,
                "depth": self.tree_structure_.max_depth,
            }
            if eval_set is not None:
                Xv, yv = eval_set
                record["val_score"] = self.score(Xv, yv)
            self._record(**record)
        finally:
            self._end_training()
        return self

    def _output_names(self) -> tuple[str, ...] | None:
        return None

    def to_tree(self) -> Tree:
        """The fitted tree as the shared :class:`Tree` (one-hot weight rows, sklearn node ids)."""
        check_is_fitted(self, "tree_structure_")
        return self.tree_structure_

    def _validated_X(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "tree_structure_")
        return validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite="allow-nan",
                             accept_sparse=("csr", "csc"))

    def apply(self, X: Any) -> np.ndarray:
        """Leaf id reached by each sample."""
        X = self._validated_X(X)
        return self.tree_structure_.apply(X)

    # -------------------------------------------------------------- persistence
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "tree_structure_")
        t = self.tree_structure_
        learned = {"output_names": list(t.output_names)}
        arrays = {
            "children_left": t.children_left,
            "children_right": t.children_right,
            "weight": t.weight,
            "bias": t.bias,
            "leaf_value": t.leaf_value,
            "missing_right": t.missing_right.astype(np.uint8),
        }
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.tree_structure_ = Tree(
            children_left=arrays["children_left"],
            children_right=arrays["children_right"],
            weight=arrays["weight"],
            bias=arrays["bias"],
            leaf_value=arrays["leaf_value"],
            missing_right=arrays["missing_right"].astype(bool) if "missing_right" in arrays else None,
            feature_names=self.feature_names_,
            output_names=tuple(learned["output_names"]),
            task=self._task,
            family=self.family_key,
            meta={"prediction": "leaf_value", "axis_aligned": True},
        )


class CARTClassifier(ClassifierMixin, _CARTBase):
    """scikit-learn's ``DecisionTreeClassifier`` with treeviz's Tree, history and model files.

    Parameters
    ----------
    max_depth, min_samples_split, min_samples_leaf, criterion, ccp_alpha, max_leaf_nodes,
    random_state
        As in :class:`sklearn.tree.DecisionTreeClassifier`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> tree = CARTClassifier(max_depth=2).fit(X, y).to_tree()
    >>> tree.max_depth
    2
    """

    _sk_class = DecisionTreeClassifier
    _task = "classification"

    def __init__(self, *, max_depth=None, min_samples_split=2, min_samples_leaf=1, criterion="gini",
                 ccp_alpha=0.0, max_leaf_nodes=None, random_state=0):
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.criterion = criterion
        self.ccp_alpha = ccp_alpha
        self.max_leaf_nodes = max_leaf_nodes
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *,
            callbacks: Iterable[Callback] | None = None, eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> CARTClassifier:
        """Fit the tree.

        Parameters
        ----------
        X, y : training data and class labels.
        sample_weight : array of shape (n_samples,), optional
            Weights of the samples, as in scikit-learn.
        callbacks : list of :class:`models.base.Callback`, optional
        eval_set : (X_val, y_val), optional
            Scored after fitting and recorded in ``history_`` as ``val_score``.
        feature_names : list of str, optional
            Names shown in rules and figures (default: DataFrame columns, else x0, x1, ...).
        """
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan",
                             accept_sparse=("csr", "csc"))
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        return self._fit_common(X, y, sample_weight, callbacks, eval_set, feature_names)

    def _output_names(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.classes_)

    def predict_proba(self, X: Any) -> np.ndarray:
        X = self._validated_X(X)
        return self.tree_structure_.predict_value(X)

    def predict(self, X: Any) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_.take(np.argmax(proba, axis=1))

    def _score_array(self, X: np.ndarray, y: np.ndarray, sample_weight: Any = None) -> float:
        """Accuracy on validated arrays (the training record)."""
        pred = self.classes_.take(np.argmax(self.tree_structure_.predict_value(X), axis=1))
        return float(accuracy_score(y, pred, sample_weight=sample_weight))

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))


class CARTRegressor(RegressorMixin, _CARTBase):
    """scikit-learn's ``DecisionTreeRegressor`` with treeviz's Tree, history and model files."""

    _sk_class = DecisionTreeRegressor
    _task = "regression"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def __init__(self, *, max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 criterion="squared_error", ccp_alpha=0.0, max_leaf_nodes=None, random_state=0):
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.criterion = criterion
        self.ccp_alpha = ccp_alpha
        self.max_leaf_nodes = max_leaf_nodes
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *,
            callbacks: Iterable[Callback] | None = None, eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> CARTRegressor:
        """Fit the tree; arguments as for :meth:`CARTClassifier.fit` (y may have several columns)."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, multi_output=True,
                             ensure_all_finite="allow-nan", accept_sparse=("csr", "csc"))
        self.n_outputs_ = 1 if y.ndim == 1 else y.shape[1]
        return self._fit_common(X, y, sample_weight, callbacks, eval_set, feature_names)

    def _output_names(self) -> tuple[str, ...]:
        return ("y",) if self.n_outputs_ == 1 else tuple(f"y{i}" for i in range(self.n_outputs_))

    def predict(self, X: Any) -> np.ndarray:
        X = self._validated_X(X)
        out = self.tree_structure_.predict_value(X)
        return out[:, 0] if out.shape[1] == 1 else out

    def _score_array(self, X: np.ndarray, y: np.ndarray, sample_weight: Any = None) -> float:
        """R² on validated arrays (the training record)."""
        out = self.tree_structure_.predict_value(X)
        return float(r2_score(y, out[:, 0] if out.shape[1] == 1 else out, sample_weight=sample_weight))

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        return float(r2_score(y, self.predict(X), sample_weight=sample_weight))

    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        learned, arrays = super()._get_model_state()
        learned["n_outputs_"] = int(self.n_outputs_)
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.n_outputs_ = int(learned["n_outputs_"])
        super()._set_model_state(learned, arrays)
