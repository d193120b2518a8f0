"""Latent-tree estimators: classification, regression and self-supervised hierarchical clustering.

Zantedeschi, Kusner & Niculae, "Learning Binary Decision Trees by Argmin Differentiation"
(ICML 2021); the 2020 preprint's learned-η pruning is available as ``formulation="preprint"``.
``docs/latent_trees.md`` writes out the method, its defaults and the choices made where the paper
and its public code differ.

Prediction
----------
The tree is a layer: predictions come from the predictor f_φ on [x; z], not from leaf values.
z depends on the pruning vector a, which the papers recompute on every evaluation batch; these
estimators default to ``inference="frozen"``: a is solved once, after training, on the training
data with λ scaled to the batch size (n_train / batch_size), and reused for every prediction, so
a sample's prediction never depends on which other samples are predicted with it.
``inference="batch"`` reproduces the papers' protocol (a per evaluation batch of
``eval_batch_size`` rows, 2 × batch_size by default).

``to_tree()`` gives the shared :class:`models.ground.tree.Tree`: each split's BatchNorm folded into an
affine rule (go left iff w̃·x + b̃ < 0, the paper's convention; the Tree sends s = 0 right), the
frozen a as ``active`` (0 = pruned), and as leaf values the class shares / mean target of the
training points reaching each leaf (for display: ``meta["prediction"] == "head"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import ClassifierMixin, ClusterMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.latent.estimator_base import AUTO_DEPTH, AUTO_DEPTH_MAX, LatentTreeBase, auto_depth
from models.latent.train_loop import weighted_mean

__all__ = ["AUTO_DEPTH", "AUTO_DEPTH_MAX", "LatentTreeClassifier", "LatentTreeClustering", "LatentTreeRegressor",
           "auto_depth", "parse_target_features"]


# ---------------------------------------------------------------------------- classification
def _ce_loss(binary: bool):
    """Logistic loss on one logit (binary) or cross-entropy on K logits, weighted by row."""
    if binary:
        bce = torch.nn.BCEWithLogitsLoss(reduction="none")
        return lambda out, y, w: weighted_mean(bce(out[:, 0], y), w)
    ce = torch.nn.CrossEntropyLoss(reduction="none")
    return lambda out, y, w: weighted_mean(ce(out, y), w)


def _standardisation(Y: np.ndarray, sample_weight: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (1 where it is 0) of the columns of Y, weighted by the sample
    weights when given, so rows of weight 0 do not count."""
    w = None if sample_weight is None else _check_sample_weight(sample_weight, Y, dtype=np.float64,
                                                                   ensure_non_negative=True)
    if w is not None and w.sum() <= 0:
        raise ValueError("The sample weights sum to zero: at least one row must have a positive weight.")
    mean = np.average(Y, axis=0, weights=w)
    std = np.sqrt(np.average((Y - mean) ** 2, axis=0, weights=w))
    return mean, np.where(std > 0, std, 1.0)


def _mse_loss(out: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """Mean squared error over the outputs of each row, weighted by row."""
    return weighted_mean(((out - y) ** 2).mean(dim=1), w)


def _accuracy(binary: bool):
    def score(out: torch.Tensor, y: torch.Tensor) -> float:
        pred = (out[:, 0] > 0).float() if binary else out.argmax(dim=1)
        return float((pred == y).float().mean())

    return score


class LatentTreeClassifier(ClassifierMixin, LatentTreeBase):
    """Latent (pruned) binary tree with a learned predictor on [x; z], for classification.

    Binary problems use one logit and a logistic loss (as in the papers); more classes use K
    logits and cross-entropy (the natural extension; the papers report only binary tasks).

    Parameters
    ----------
    depth : int or None
        Depth D of the complete tree (2^D − 1 oblique splits). None ("auto") gives enough leaves
        for every class, 2^D ≥ K, between 3 and 6 (:func:`auto_depth`).
    prune_strength : float
        λ of the pruning QP (per batch: it competes with a sum over the batch, so the same λ
        prunes more at smaller batch sizes); 0 switches pruning off.
    split : {"linear", "elu"}
        Split function: linear, or linear followed by ELU.
    head : {"linear", "mlp"}; head_layers : int; dropout : float
        The predictor on [x; z].
    readout : {"code", "paper"}
        How z is read from a (see :func:`models.latent.pruning.readout`).
    formulation : {"icml", "preprint"}
        ICML 2021 (λ inside the QP) or the 2020 preprint (learned η, penalty λ‖η‖_∞).
    optimizer : {"qhadam", "adam"}; learning_rate : float; batch_size : int
    max_epochs, patience : int
        Early stopping on the validation loss of ``eval_set`` (best weights kept).
    lr_patience : int
        Epochs without validation improvement before the learning rate is divided by 10.
    inference : {"frozen", "batch"}; eval_batch_size : int or None
    warm_start : bool
        Reuse the current weights when fit is called again (used by λ paths).
    device : "auto", "cpu" or "cuda"; random_state : int

    Notes
    -----
    ``fit(X, y, sample_weight=...)`` weights each row's loss, in training and in the held-out
    validation loss; rows of weight 0 are left out. The pruning QP of a batch counts its rows
    unweighted (its λ competes with a sum over the batch's rows, as in the papers).
    """

    _task = "classification"

    def _depth(self) -> int:
        """The ``depth`` parameter, or for "auto" (None) :func:`auto_depth` of the number of classes."""
        if self.depth is None and hasattr(self, "classes_"):
            return auto_depth(len(self.classes_))
        return super()._depth()

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> LatentTreeClassifier:
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"LatentTreeClassifier needs at least 2 classes; got 1 class ({classes[0]!r}).")
        if not (self.warm_start and hasattr(self, "classes_") and np.array_equal(classes, self.classes_)):
            self.classes_ = classes
        binary = self.classes_.size == 2

        def targets(labels: np.ndarray, device: str) -> torch.Tensor:
            idx = np.searchsorted(self.classes_, labels)
            return torch.as_tensor(idx, dtype=torch.float32 if binary else torch.long, device=device)

        ev = None
        if eval_set is not None:
            ev = (self._X(eval_set[0], reset=False), np.asarray(eval_set[1]))
        fns = {"targets": targets, "loss": _ce_loss(binary), "score": _accuracy(binary),
               "kind": "bce" if binary else "ce"}
        self._train(X, y, fns, 1 if binary else self.classes_.size, ev, callbacks, feature_names, stratify=y,
                    sample_weight=sample_weight)
        self._set_leaf_values(X, np.searchsorted(self.classes_, y), self.classes_.size)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        out = self._outputs(X)
        return out[:, 0] if out.shape[1] == 1 else out

    def predict_proba(self, X: Any) -> np.ndarray:
        out = self._outputs(X)
        if out.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-out[:, 0]))
            return np.column_stack([1.0 - p, p])
        out = out - out.max(axis=1, keepdims=True)
        e = np.exp(out)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        out = self._outputs(X)
        idx = (out[:, 0] > 0).astype(int) if out.shape[1] == 1 else out.argmax(axis=1)
        return self.classes_.take(idx)

    def to_tree(self) -> Tree:
        check_is_fitted(self, "net_")
        return self._empty_tree(self.leaf_value_, [str(c) for c in self.classes_])


# ---------------------------------------------------------------------------- regression
def _r2(out: torch.Tensor, y: torch.Tensor) -> float:
    resid = ((out - y) ** 2).sum()
    total = ((y - y.mean(dim=0)) ** 2).sum()
    return float(1.0 - resid / total) if float(total) > 0 else 0.0


class LatentTreeRegressor(RegressorMixin, LatentTreeBase):
    """Latent (pruned) binary tree with a learned predictor on [x; z], for regression.

    Targets are standardised for training (MSE loss, as in the papers) and predictions are put
    back in the original units. Parameters as for :class:`LatentTreeClassifier`.
    """

    _task = "regression"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> LatentTreeRegressor:
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, multi_output=True)
        Y = y.reshape(y.shape[0], -1)
        self.n_outputs_ = Y.shape[1] if y.ndim == 2 else 1
        if not (self.warm_start and hasattr(self, "y_mean_")):
            self.y_mean_, self.y_std_ = _standardisation(Y, sample_weight)

        def targets(values: np.ndarray, device: str) -> torch.Tensor:
            v = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
            return torch.as_tensor((v - self.y_mean_) / self.y_std_, dtype=torch.float32, device=device)

        ev = None
        if eval_set is not None:
            ev = (self._X(eval_set[0], reset=False), np.asarray(eval_set[1], dtype=np.float64))
        fns = {"targets": targets, "loss": _mse_loss, "score": _r2, "kind": "mse"}
        self._train(X, Y, fns, Y.shape[1], ev, callbacks, feature_names, sample_weight=sample_weight)
        self._set_leaf_values(X, Y, Y.shape[1])
        return self

    def predict(self, X: Any) -> np.ndarray:
        out = self._outputs(X) * self.y_std_ + self.y_mean_
        return out[:, 0] if self.n_outputs_ == 1 else out

    def to_tree(self) -> Tree:
        check_is_fitted(self, "net_")
        names = ["y"] if self.n_outputs_ == 1 else [f"y{i}" for i in range(self.n_outputs_)]
        return self._empty_tree(self.leaf_value_, names)

    def _get_model_state(self):
        learned, arrays = super()._get_model_state()
        learned["n_outputs_"] = int(self.n_outputs_)
        arrays["y_mean_"] = np.asarray(self.y_mean_, dtype=np.float64)
        arrays["y_std_"] = np.asarray(self.y_std_, dtype=np.float64)
        return learned, arrays

    def _set_model_state(self, learned, arrays):
        self.n_outputs_ = int(learned["n_outputs_"])
        self.y_mean_ = np.asarray(arrays["y_mean_"])
        self.y_std_ = np.asarray(arrays["y_std_"])
        super()._set_model_state(learned, arrays)


# ---------------------------------------------------------------------------- clustering
def parse_target_features(spec: str, feature_names: Sequence[str]) -> np.ndarray:
    """Column indexes from "0,1", "2" or feature names "RI, Na" (for the self-supervised task)."""
    parts = [p.strip() for p in str(spec).split(",") if p.strip()]
    if not parts:
        raise TreevizError("Name at least one feature to reconstruct (for example '0,1').")
    out = []
    for part in parts:
        if part.lstrip("-").isdigit():
            j = int(part)
            if not 0 <= j < len(feature_names):
                n = len(feature_names)
                raise TreevizError(f"There is no feature {j}; the data has {n} features (0..{n - 1}).")
        elif part in feature_names:
            j = list(feature_names).index(part)
        else:
            raise TreevizError(f"There is no feature named {part!r}.")
        out.append(j)
    cols = np.unique(np.asarray(out, dtype=np.int64))
    if cols.size >= len(feature_names):
        raise TreevizError("At least one feature must remain as input; reconstruct fewer features.")
    return cols


class LatentTreeClustering(ClusterMixin, LatentTreeBase):
    """Self-supervised hierarchical clustering with a latent tree (the ICML 2021 paper's clustering
    experiment).

    A few features (``target_features``) are held out and regressed from the others through the
    tree (MSE, linear predictor on [x_in; z]); no labels are used. Each point's cluster is the
    leaf at the end of its hard path; the tree's internal nodes form the hierarchy (dendrogram)
    over the leaves. ``labels_`` / ``predict`` give consecutive cluster ids (0..k−1 over the
    occupied leaves); ``cluster_leaves_`` maps them to Tree node ids.

    Parameters
    ----------
    target_features : str
        Comma-separated indexes or names of the features to reconstruct (Glass in the paper:
        "0,1", refractive index and sodium).
    depth, prune_strength, learning_rate, batch_size : default 4, 10.0, 1e-3, 8
        The paper's clustering setting (with linear splits and a linear predictor), not the
        classifier's defaults (see ``models/latent/family.py`` for the measurement).
    Other parameters as for :class:`LatentTreeClassifier`.
    """

    _task = "clustering"

    def __init__(self, *, depth=4, prune_strength=10.0, split="linear", head="linear", head_layers=2,
                 dropout=0.0, readout="code", formulation="icml", optimizer="qhadam",
                 learning_rate=1e-3, batch_size=8, max_epochs=100, patience=10, validation_fraction=0.1,
                 lr_patience=2, inference="frozen", eval_batch_size=None, warm_start=False, device="auto",
                 random_state=0, target_features="0"):
        super().__init__(depth=depth, prune_strength=prune_strength, split=split, head=head,
                         head_layers=head_layers, dropout=dropout, readout=readout,
                         formulation=formulation, optimizer=optimizer, learning_rate=learning_rate,
                         batch_size=batch_size, max_epochs=max_epochs, patience=patience,
                         validation_fraction=validation_fraction, lr_patience=lr_patience, inference=inference,
                         eval_batch_size=eval_batch_size,
                         warm_start=warm_start, device=device, random_state=random_state)
        self.target_features = target_features

    def _input_columns(self) -> np.ndarray:
        return np.setdiff1d(np.arange(self.n_features_in_), self.target_columns_)

    def _net_inputs(self, X: np.ndarray) -> np.ndarray:
        return X[:, self._input_columns()]

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None, *,
            callbacks: Iterable[Callback] | None = None, eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> LatentTreeClustering:
        X = validate_data(self, X, dtype=np.float64)
        if X.shape[1] < 2:
            raise ValueError("Self-supervised clustering needs at least 2 features: one to reconstruct, "
                             f"one as input (got {X.shape[1]} feature(s)).")
        names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(X.shape[1])]
        self.target_columns_ = parse_target_features(self.target_features, names)
        self.t_mean_, self.t_std_ = _standardisation(X[:, self.target_columns_], sample_weight)

        def targets(rows: np.ndarray, device: str) -> torch.Tensor:
            t = np.asarray(rows, dtype=np.float64)[:, self.target_columns_]
            return torch.as_tensor((t - self.t_mean_) / self.t_std_, dtype=torch.float32, device=device)

        ev = None
        if eval_set is not None:
            Xv = self._X(eval_set[0], reset=False)
            ev = (Xv[:, self._input_columns()], Xv)
        fns = {"targets": targets, "loss": _mse_loss, "score": _r2, "kind": "mse"}
        self._train(X[:, self._input_columns()], X, fns, self.target_columns_.size, ev, callbacks,
                    feature_names, n_inputs=X.shape[1] - self.target_columns_.size, sample_weight=sample_weight)
        self._set_leaf_values(X, None, 1)
        leaf_of = self._tree_for_routing().apply(X)
        self.cluster_leaves_ = np.unique(leaf_of)
        self.labels_ = np.searchsorted(self.cluster_leaves_, leaf_of)
        return self

    def _tree_for_routing(self) -> Tree:
        return self._empty_tree(self.leaf_value_, ["share of points"])

    def predict(self, X: Any) -> np.ndarray:
        """Cluster id of each row (its leaf; −1 for a leaf no training point reached)."""
        check_is_fitted(self, "net_")
        X = self._X(X, reset=False)
        leaf_of = self._tree_for_routing().apply(X)
        pos = np.searchsorted(self.cluster_leaves_, leaf_of)
        pos = np.minimum(pos, self.cluster_leaves_.size - 1)
        return np.where(self.cluster_leaves_[pos] == leaf_of, pos, -1)

    def to_tree(self) -> Tree:
        check_is_fitted(self, "net_")
        return self._tree_for_routing()

    def reconstruct(self, X: Any) -> np.ndarray:
        """The held-out features as the model reconstructs them (original units)."""
        out = self._outputs(X)
        return out * self.t_std_ + self.t_mean_

    def _get_model_state(self):
        learned, arrays = super()._get_model_state()
        arrays["target_columns_"] = self.target_columns_.astype(np.int64)
        arrays["t_mean_"], arrays["t_std_"] = self.t_mean_, self.t_std_
        arrays["cluster_leaves_"] = self.cluster_leaves_.astype(np.int64)
        return learned, arrays

    def _set_model_state(self, learned, arrays):
        self.target_columns_ = np.asarray(arrays["target_columns_"], dtype=np.int64)
        self.t_mean_, self.t_std_ = np.asarray(arrays["t_mean_"]), np.asarray(arrays["t_std_"])
        self.cluster_leaves_ = np.asarray(arrays["cluster_leaves_"], dtype=np.int64)
        super()._set_model_state(learned, arrays)
