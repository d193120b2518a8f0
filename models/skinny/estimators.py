"""Skinny Trees estimators: ``SkinnyTreesClassifier`` and ``SkinnyTreesRegressor``.

An ensemble of soft oblique trees (:mod:`models.skinny.ensemble`) trained by proximal mini-batch
SGD with group-ℓ0 feature selection (:mod:`models.skinny.train`), following Ibrahim, Behdin &
Mazumder (AISTATS 2024) and, where the paper is silent, the authors' public code. Decisions made
here (see ``docs/skinny_trees.md``):

* ``lambda0`` is the authors' λ0 **before** their division by p: the prox uses λ0 = lambda0 / p.
  With ``schedule="dense_to_sparse"`` it is the largest λ0 of the ramp γ(1 − e^(−s·t)) over the
  optimiser steps t; with ``"fixed"`` it is used from the first step. The authors' code uses 100
  (γ = 100/p); that removed nothing on digits and one of xor's two needed features. The default
  here, None ("auto"), trains a short λ0 path relative to the kernel's initial row norm together
  and keeps the largest λ0 whose validation score stays within a point of keeping every feature
  (:mod:`models.skinny.auto`; fitted ``lambda0_`` and ``lambda0_path_``).
* Columns constant over the training rows are always removed (``constant_features_``).
* Binary problems use two logits and softmax cross-entropy, as the authors' code does.
* Regression targets are standardised for training by default (``target_scaling``) and
  predictions put back in the data's units; ``"none"`` trains on the raw targets, as the paper's
  synthetic experiments do.
* ``max_epochs=None`` ("auto") trains for about 10 000 optimiser steps, or 1 000 per class when
  that is more (between 10 and 300 epochs), because the ramp and the ridge shrinkage that remove
  features run in steps, not epochs.
* ``min_features`` (default 1) keeps the largest rows when the prox would remove every feature;
  0 is the paper's operator, which can leave a constant model.
* Predictions use only the selected features (a zero row contributes nothing), computed in
  float64 on the CPU, so :meth:`compact` gives a model that predicts identically.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback, TreeEstimator, class_targets, seed_everything
from models.devices import resolve_device
from models.ground.errors import TreevizError
from models.ground.jsonio import plain
from models.ground.tree import Tree
from models.skinny.auto import fit_path, selection_notes, varying_columns
from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.fused import Trials, train, trial_data, unpack
from models.skinny.train import Data, Schedule, fit_ensemble
from models.targets import MultiOutputRegression

#: Optimiser steps that ``max_epochs=None`` aims for, or per output (class) when that is more: on
#: letter (26 classes) 10 000 steps reached 0.83 test accuracy (CART: 0.865), three times as many 0.90.
AUTO_STEPS, AUTO_STEPS_PER_OUTPUT = 10_000, 1_000
#: Bounds on the epochs of ``max_epochs=None``.
AUTO_EPOCHS = (10, 300)


def auto_epochs(n_rows: int, batch_size: int, n_outputs: int = 1) -> int:
    """Epochs for about :data:`AUTO_STEPS` optimiser steps (:data:`AUTO_STEPS_PER_OUTPUT` per output
    when that is more), between 10 and 300."""
    steps_per_epoch = max(1, math.ceil(n_rows / max(1, batch_size)))
    steps = max(AUTO_STEPS, AUTO_STEPS_PER_OUTPUT * int(n_outputs))
    return int(min(AUTO_EPOCHS[1], max(AUTO_EPOCHS[0], math.ceil(steps / steps_per_epoch))))


@dataclass
class _Job:
    """One estimator's prepared fit, waiting to be trained with others (:func:`fit_together`)."""

    estimator: Any
    model: SoftTreeEnsemble
    generator: torch.Generator
    X: np.ndarray
    Y: np.ndarray
    W: np.ndarray | None
    eval_set: Any
    n_outputs: int
    validation: Any
    epochs: int
    device: str

    def shape_key(self) -> tuple:
        """What trials trained together must share: the tensors' shapes, the step sequence and the
        data (the same rows, targets and weights)."""
        e = self.estimator
        return (type(e), int(e.n_trees), int(e.depth), e.activation, float(e.smoothstep_width), e.penalty,
                int(e.min_features), int(e.batch_size), self.epochs, self.device, getattr(e, "target_scaling", None),
                self.X.shape, self.n_outputs)


def fit_together(estimators: Sequence[Any], X: Any, y: Any, sample_weight: Any = None, *,
                 eval_set: tuple[Any, Any] | None = None,
                 feature_names: Sequence[str] | None = None) -> list[str | None]:
    """Fit Skinny Trees estimators on the same data as one batched program per shape.

    Estimators that share ``n_trees``, ``depth``, ``activation``, ``smoothstep_width``,
    ``penalty``, ``min_features``, ``batch_size`` and the training length (and, for regressors,
    ``target_scaling``) train together: their parameters are stacked along a leading trial
    dimension, and each keeps its own ``random_state`` (initialisation and data order),
    ``lambda0``, ``schedule``, ``temperature``, ``lambda2``, ``lambda1`` and ``learning_rate``.
    Each ends exactly as ``estimator.fit(X, y, sample_weight, eval_set=eval_set)`` would (to float
    rounding): the same model, history and selected features; the trials of a feature-budget
    search differ in just these settings. ``feature_names`` are every estimator's, as in ``fit``.
    Returns one entry per estimator: None, or the error of a fit that diverged (that estimator is
    then left unfitted).
    """
    jobs: list[_Job] = []
    for est in estimators:
        if not isinstance(est, _SkinnyTreesBase):
            raise TypeError(f"fit_together trains Skinny Trees estimators, not {type(est).__name__}.")
        est._collect = jobs
        try:
            est.fit(X, y, sample_weight, eval_set=eval_set, feature_names=feature_names)
        finally:
            est._collect = None
    errors: dict[int, str | None] = {}
    groups: dict[tuple, list[_Job]] = {}
    for job in jobs:
        groups.setdefault(job.shape_key(), []).append(job)
    for group in groups.values():
        first = group[0]
        data = trial_data(first.X, first.Y, first.W, first.eval_set, first.n_outputs, first.device)
        trials = Trials.from_models([j.model for j in group],
                                    [j.estimator._schedule(j.estimator.n_features_in_) for j in group],
                                    [float(j.estimator.learning_rate) for j in group], [j.generator for j in group])
        for j in group:
            j.estimator._begin_training(None, total=first.epochs)
        try:
            steps = train(trials, data, task=first.estimator._task or "classification",
                          batch_size=int(first.estimator.batch_size), max_epochs=first.epochs,
                          record=lambda t, numbers, group=group: group[t].estimator._record(**numbers),
                          validation=[j.validation for j in group])
        except TreevizError as err:  # one trial alone: its divergence is raised
            trials.errors[0] = str(err)
            steps = trials.step
        for t, j in enumerate(group):
            j.estimator._end_training()
            errors[id(j.estimator)] = trials.errors[t]
            if trials.errors[t] is None:
                j.estimator.n_steps_ = steps
                j.estimator._finish(trials, t, j.device)
    return [errors.get(id(est)) for est in estimators]  # an "auto" λ0 trains its own path, at once


class _SkinnyTreesBase(TreeEstimator):
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "mini-batch SGD shuffles the rows: repeating a row changes the number of rows, hence the batches and "
            "the stochastic gradient path, so a weight of 2 cannot train exactly like a repeat (weights do scale "
            "each row's loss; rows of weight 0 are left out, as if absent)",
    }
    _task = ""
    #: Several estimators fitted as one batched program (:func:`fit_together`): the hook through
    #: which a search trains its trials together without naming this family.
    fit_together = staticmethod(fit_together)
    #: The parameters that may differ among estimators that train in one batch; estimators that
    #: differ in any other parameter train in separate batches.
    together_params: ClassVar[tuple[str, ...]] = ("random_state", "lambda0", "schedule", "temperature", "lambda2",
                                                  "lambda1", "learning_rate")

    def __init__(self, *, n_trees=20, depth=4, activation="sigmoid", smoothstep_width=1.0, penalty="l0",
                 lambda0=None, schedule="dense_to_sparse", temperature=0.01, lambda2=0.1, lambda1=1.0,
                 min_features=1, learning_rate=0.1, batch_size=16, max_epochs=None, device="auto",
                 random_state=0):
        self.n_trees = n_trees
        self.depth = depth
        self.activation = activation
        self.smoothstep_width = smoothstep_width
        self.penalty = penalty
        self.lambda0 = lambda0
        self.schedule = schedule
        self.temperature = temperature
        self.lambda2 = lambda2
        self.lambda1 = lambda1
        self.min_features = min_features
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ training
    def _schedule(self, n_features: int, lambda0: float | None = None) -> Schedule:
        """The penalty for ``n_features`` inputs (p), with ``lambda0`` for the parameter if given."""
        nodes = int(self.n_trees) * (2 ** int(self.depth) - 1)
        lambda0 = self.lambda0 if lambda0 is None else lambda0
        if lambda0 is None:
            raise TreevizError("lambda0 is 'auto' here; pass a number to build one fixed penalty.")
        return Schedule(penalty=self.penalty, lambda0=float(lambda0) / n_features,
                        dense_to_sparse=self.schedule == "dense_to_sparse", rate=float(self.temperature),
                        ridge=float(self.lambda2) / nodes if self.penalty == "l0" else 0.0,
                        lasso=float(self.lambda1) / math.sqrt(nodes), min_keep=int(self.min_features))

    def _fit_ensemble(self, X: np.ndarray, Y: np.ndarray, W: np.ndarray | None, n_outputs: int,
                      validation: Any, eval_set: tuple[np.ndarray, np.ndarray] | None,
                      callbacks: Iterable[Callback] | None, feature_names: Sequence[str] | None) -> None:
        if W is not None:  # rows of weight 0 are left out, as if absent
            keep = W > 0
            if not keep.any():
                raise ValueError("The sample weights sum to zero: at least one row must have a positive weight.")
            X, Y, W = X[keep], Y[keep], W[keep]
            if np.all(W == W[0]):
                W = None
        self._set_feature_names(feature_names, self.n_features_in_)
        X, eval_set = self._drop_constant_columns(X, eval_set)
        device = self._fit_device(rows=X.shape[0], batch=self.batch_size, depth=self.depth, trees=self.n_trees)
        rng = seed_everything(self.random_state)
        generator = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))
        model = SoftTreeEnsemble(X.shape[1], n_outputs, int(self.n_trees), int(self.depth),
                                 activation=self.activation, width=float(self.smoothstep_width),
                                 generator=generator).to(device)

        epochs = (auto_epochs(X.shape[0], int(self.batch_size), n_outputs) if self.max_epochs is None
                  else int(self.max_epochs))
        self.lambda0_path_ = self.lambda0_selected_on_ = None
        if self.lambda0 is None:  # "auto": a λ0 path, the largest λ0 that keeps the validation score
            self._fit_path(model, generator, X, Y, W, eval_set, n_outputs, validation, callbacks, epochs, device)
            return
        self.lambda0_ = float(self.lambda0)
        if getattr(self, "_plain_path", False):  # autograd, step by step: the reference for tests and benchmarks
            self._fit_plain(model, X, Y, W, eval_set, validation, callbacks, epochs, generator, device)
            return
        if getattr(self, "_collect", None) is not None:  # fit_together trains it with others
            self._collect.append(_Job(self, model, generator, X, Y, W, eval_set, n_outputs, validation, epochs,
                                      device))
            return
        data = trial_data(X, Y, W, eval_set, n_outputs, device)
        trials = Trials.from_models([model], [self._schedule(self.n_features_in_)], [float(self.learning_rate)],
                                    [generator])
        self._begin_training(callbacks, total=epochs)
        try:
            self.n_steps_ = train(trials, data, task=self._task or "classification", batch_size=int(self.batch_size),
                                  max_epochs=epochs, record=lambda t, numbers: self._record(**numbers),
                                  validation=validation, stop=self._cancel_requested)
        finally:
            self._end_training()
        self._finish(trials, 0, device)

    def _fit_plain(self, model: SoftTreeEnsemble, X: np.ndarray, Y: np.ndarray, W: np.ndarray | None,
                   eval_set: Any, validation: Any, callbacks: Any, epochs: int, generator: torch.Generator,
                   device: str) -> None:
        """Train through :func:`models.skinny.train.fit_ensemble` (autograd through the ensemble,
        one step at a time): the same model as the fused path, to float rounding, only slower."""
        def as_tensor(a: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.tensor(np.asarray(a), dtype=dtype, device=device)

        classes = Y.dtype.kind in "iu"
        target_dtype = torch.long if classes else torch.float32
        data = Data(X=as_tensor(X), Y=as_tensor(Y, target_dtype), W=None if W is None else as_tensor(W))
        if eval_set is not None and len(eval_set[0]):
            data.X_val, data.Y_val = as_tensor(eval_set[0]), as_tensor(eval_set[1], target_dtype)

        def loss(out: torch.Tensor, target: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
            each = torch.nn.functional.cross_entropy(out, target, reduction="none") if classes else \
                (out - target).pow(2).mean(dim=1)
            return each.mean() if w is None else (each * w).sum() / w.sum()

        self._begin_training(callbacks, total=epochs)
        try:
            self.n_steps_ = fit_ensemble(
                model, data, loss, self._schedule(self.n_features_in_), learning_rate=float(self.learning_rate),
                batch_size=int(self.batch_size), max_epochs=epochs, generator=generator, record=self._record,
                validation=validation, stop=self._cancel_requested)
        finally:
            self._end_training()
        self.n_epochs_ = len(self.history_)
        self.device_ = device
        self._set_ensemble(self._full_kernel(model.kernel.detach().cpu().double().numpy()),
                           model.bias.detach().cpu().double().numpy(), model.leaves.detach().cpu().double().numpy())

    def _drop_constant_columns(self, X: np.ndarray, eval_set: Any) -> tuple[np.ndarray, Any]:
        """X and the validation set without the training rows' constant columns (``varying_columns``)."""
        self._columns = varying_columns(X)
        self.constant_features_ = np.setdiff1d(np.arange(X.shape[1]), self._columns)
        if self._columns.size == X.shape[1]:
            return X, eval_set
        if eval_set is not None:
            eval_set = (np.asarray(eval_set[0])[:, self._columns], eval_set[1])
        return np.ascontiguousarray(X[:, self._columns]), eval_set

    def _full_kernel(self, kernel: np.ndarray) -> np.ndarray:
        """The trained kernel with a zero row for every column left out of training."""
        columns = getattr(self, "_columns", None)
        if columns is None or kernel.shape[0] == self.n_features_in_:
            return kernel
        full = np.zeros((self.n_features_in_, kernel.shape[1]), dtype=kernel.dtype)
        full[columns] = kernel
        return full

    def _fit_path(self, model: SoftTreeEnsemble, generator: torch.Generator, X: np.ndarray, Y: np.ndarray,
                  W: np.ndarray | None, eval_set: Any, n_outputs: int, validation: Any, callbacks: Any, epochs: int,
                  device: str) -> None:
        """``lambda0=None``: :mod:`models.skinny.auto`'s λ0 path, its chosen trial kept."""
        self.lambda0_selected_on_ = "validation" if eval_set is not None and len(eval_set[0]) else "training"
        if self.lambda0_selected_on_ == "training":
            eval_set = (X, Y)
        data = trial_data(X, Y, W, eval_set, n_outputs, device)
        self._begin_training(callbacks, total=epochs)
        try:
            path = fit_path(self, model, generator, data, n_inputs=self.n_features_in_, epochs=epochs,
                            task=self._task or "classification", validation=validation)
        finally:
            self._end_training()
        self.history_ = [{k: plain(v) for k, v in r.items()} for r in path.records[path.chosen]]
        self.lambda0_ = path.lambdas[path.chosen]
        self.lambda0_path_ = path.summary()
        self.n_steps_ = path.steps
        self._finish(path.trials, path.chosen, device)

    def _finish(self, trials: Trials, index: int, device: str) -> None:
        """Take trial ``index``'s trained parameters (the ensemble's layout, float64 on the CPU)."""
        kernel, bias, leaves = unpack(trials.K[index:index + 1], trials.LV[index:index + 1], trials.n_trees,
                                      trials.depth)[0]
        self.n_epochs_ = len(self.history_)
        self.device_ = device
        self._set_ensemble(self._full_kernel(kernel.detach().cpu().double().numpy()),
                           *(a.detach().cpu().double().numpy() for a in (bias, leaves)))

    def _set_ensemble(self, kernel: np.ndarray, bias: np.ndarray, leaves: np.ndarray) -> None:
        self.kernel_, self.bias_, self.leaves_ = kernel, bias, leaves
        self.feature_norms_ = np.linalg.norm(kernel, axis=1)
        self.selected_features_ = np.flatnonzero(self.feature_norms_ > 0)
        sel = self.selected_features_
        model = SoftTreeEnsemble(sel.size, leaves.shape[2], int(self.n_trees), int(self.depth),
                                 activation=self.activation, width=float(self.smoothstep_width), dtype=torch.float64)
        with torch.no_grad():
            model.kernel.copy_(torch.from_numpy(kernel[sel]))
            model.bias.copy_(torch.from_numpy(bias))
            model.leaves.copy_(torch.from_numpy(leaves))
        self._inference = model.requires_grad_(False)

    # ------------------------------------------------------------------ prediction
    def _model(self) -> SoftTreeEnsemble:
        """The ensemble over the selected features only, in float64 on the CPU."""
        return self._inference

    def _outputs(self, X: Any) -> np.ndarray:
        """(n, c) ensemble outputs: class logits, or standardised regression values."""
        check_is_fitted(self, "kernel_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        with torch.no_grad():
            out = self._model()(torch.from_numpy(np.ascontiguousarray(X[:, self.selected_features_])))
        return out.numpy()

    def get_support(self, indices: bool = False) -> np.ndarray:
        """The selected features: a boolean mask over the input columns, or their indices."""
        check_is_fitted(self, "kernel_")
        if indices:
            return self.selected_features_.copy()
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_features_] = True
        return mask

    def compact(self) -> _SkinnyTreesBase:
        """The same model rebuilt on the selected columns only: it takes
        ``X[:, selected_features_]`` and predicts exactly what this model predicts from ``X``."""
        check_is_fitted(self, "kernel_")
        sel = self.selected_features_
        small = type(self)(**self.get_params())
        learned, arrays = self._learned_state()
        learned = {**learned, "n_features_in_": int(sel.size),
                   "feature_names": [self.feature_names_[k] for k in sel], "has_feature_names_in": False,
                   "constant_features_": []}
        arrays = {**arrays, "kernel": self.kernel_[sel]}
        small._restore_state(learned, arrays)
        small.history_ = [dict(r) for r in getattr(self, "history_", [])]
        return small

    # ------------------------------------------------------------------ the Tree
    def _leaf_values(self) -> np.ndarray:
        """(m, 2^d, c) each tree's leaf values as its share of the prediction (logits, or values)."""
        return self.leaves_

    def to_trees(self) -> list[Tree]:
        """Each soft tree as a :class:`Tree` (``routing="soft"``): node i sends x left with
        probability S(w·x + b), which the Tree stores as −w, −b (the Tree's S gives the right
        branch). The trees' expected leaf values sum to the model's output."""
        check_is_fitted(self, "kernel_")
        depth, n_nodes = int(self.depth), 2 ** int(self.depth) - 1
        total = 2 ** (depth + 1) - 1
        ids = np.arange(total)
        left = np.where(ids < n_nodes, 2 * ids + 1, -1)
        right = np.where(ids < n_nodes, 2 * ids + 2, -1)
        values = self._leaf_values()
        notes = self._notes()
        trees = []
        for j in range(int(self.n_trees)):
            cols = slice(j * n_nodes, (j + 1) * n_nodes)
            weight = np.zeros((total, self.n_features_in_))
            weight[:n_nodes] = -self.kernel_[:, cols].T
            bias = np.zeros(total)
            bias[:n_nodes] = -self.bias_[cols]
            leaf_value = np.full((total, values.shape[2]), np.nan)
            leaf_value[n_nodes:] = values[j]
            trees.append(Tree(
                children_left=left, children_right=right, weight=weight, bias=bias, leaf_value=leaf_value,
                routing="soft", activation=self.activation, activation_width=float(self.smoothstep_width),
                feature_names=self.feature_names_, output_names=self._output_names(), task=self._task,
                family=self.family_key,
                meta={"prediction": "sum of the trees' expected leaf values",
                      "ensemble": self._ensemble_note(), "tree_index": j, "n_trees": int(self.n_trees),
                      "selected_features": [int(k) for k in self.selected_features_], "notes": notes},
            ))
        return trees

    def _notes(self) -> list[str]:
        p, k = self.n_features_in_, int(self.selected_features_.size)
        return [f"{k} of {p} features selected: every node of every tree uses only these (the others' weights "
                "are exactly zero in all trees).", *selection_notes(self)]

    # ------------------------------------------------------------------ model files
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "kernel_")
        learned = {"n_steps_": int(getattr(self, "n_steps_", 0)), "n_epochs_": int(getattr(self, "n_epochs_", 0)),
                   "constant_features_": [int(j) for j in getattr(self, "constant_features_", ())],
                   **{k: plain(getattr(self, k, None)) for k in ("lambda0_", "lambda0_path_", "lambda0_selected_on_")}}
        return learned, {"kernel": self.kernel_, "bias": self.bias_, "leaves": self.leaves_}

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        kernel = np.asarray(arrays["kernel"], dtype=np.float64)
        bias = np.asarray(arrays["bias"], dtype=np.float64)
        leaves = np.asarray(arrays["leaves"], dtype=np.float64)
        nodes = int(self.n_trees) * (2 ** int(self.depth) - 1)
        if kernel.shape != (self.n_features_in_, nodes) or bias.shape != (nodes,) or \
                leaves.shape[:2] != (int(self.n_trees), 2 ** int(self.depth)):
            raise ValueError("the ensemble's arrays do not match n_trees, depth and the number of features")
        self.n_steps_ = int(learned.get("n_steps_", 0))
        self.n_epochs_ = int(learned.get("n_epochs_", 0))
        self.constant_features_ = np.asarray(learned.get("constant_features_", []), dtype=int)
        self.lambda0_, self.lambda0_path_, self.lambda0_selected_on_ = (
            learned.get(k) for k in ("lambda0_", "lambda0_path_", "lambda0_selected_on_"))
        self.device_ = resolve_device(self.device)
        self._set_ensemble(kernel, bias, leaves)


class SkinnyTreesClassifier(ClassifierMixin, _SkinnyTreesBase):
    """Skinny Trees for classification: soft oblique trees whose summed leaf values are class
    logits (two for binary problems), trained by proximal SGD with group-ℓ0 feature selection.

    Parameters
    ----------
    n_trees, depth : int
        m trees, each a perfect binary tree of depth d (2^d − 1 split nodes).
    activation : {"sigmoid", "smoothstep"}
        Routing function S: the logistic sigmoid (the authors' code), or the smooth-step of width
        ``smoothstep_width`` (γ_ss; exactly 0 or 1 beyond ±γ_ss/2, so routing can be hard).
    penalty : {"l0", "group_lasso"}
        Group ℓ0 with hard thresholding (Skinny Trees), or the group-lasso baseline (block soft
        thresholding with ``lambda1``; no ridge term).
    lambda0 : float or None
        The authors' λ0 before division by p (the prox uses lambda0 / p); None ("auto", the
        default) chooses it on the validation rows from a λ0 path (:mod:`models.skinny.auto`).
    schedule : {"dense_to_sparse", "fixed"}
        Ramp λ0 over the optimiser steps t as (lambda0/p)(1 − e^(−temperature·t)), or use it fixed.
    temperature : float
        s, the ramp rate per optimiser step.
    lambda2 : float
        Ridge strength on the split weights, used as λ2 / (m·(2^d − 1)).
    lambda1 : float
        Group-lasso strength (``penalty="group_lasso"`` only), used as λ1 / √(m·(2^d − 1)).
    min_features : int
        The prox never leaves fewer nonzero features than this (0: the paper's operator).
    learning_rate, batch_size : float, int
        Plain SGD (no momentum) with a constant learning rate.
    max_epochs : int or None
        Epochs; None gives about 10 000 optimiser steps, or 1 000 per class (10 to 300 epochs).
    device : "auto", "cpu" or "cuda"; random_state : int

    Attributes
    ----------
    selected_features_ : ndarray of int
        Indices of the features whose group is nonzero after the last step.
    feature_norms_ : ndarray
        Each feature's group norm (zero for removed features).
    constant_features_ : ndarray of int
        The columns constant over the training rows, left out of training (never selected).
    lambda0_ : float
        The λ0 used (the parameter, or the one an "auto" λ0 chose).
    lambda0_path_ : list of dict or None
        With an "auto" λ0, each value tried (ratio, λ0, features kept, validation numbers).
    history_ : list of dict
        Per epoch: ``loss`` (training, with the ridge term), ``n_features``, ``lambda0``,
        ``threshold`` and, with ``eval_set``, ``val_loss`` and ``val_score`` (accuracy).
    """

    _task = "classification"

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> SkinnyTreesClassifier:
        X, Y, ev = class_targets(self, X, y, eval_set)
        W = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                                    ensure_non_negative=True)
        classes = self.classes_
        ce = torch.nn.CrossEntropyLoss(reduction="none")

        def validation(out, target):
            proba = torch.softmax(out, dim=1).cpu().double().numpy()
            labels = target.cpu().numpy()
            return {"val_loss": float(ce(out, target).mean()),
                    "val_score": float(np.mean(proba.argmax(axis=1) == labels))}

        self._fit_ensemble(X, Y, W, classes.size, validation, ev, callbacks, feature_names)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        out = self._outputs(X)
        out = out - out.max(axis=1, keepdims=True)
        e = np.exp(out)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        out = self._outputs(X)
        return self.classes_.take(out.argmax(axis=1))

    def _output_names(self) -> list[str]:
        return [str(c) for c in self.classes_]

    def _ensemble_note(self) -> str:
        return ("The trees' expected leaf values (class logits) are summed over the trees; a softmax of the sum gives "
                "the class probabilities.")


class SkinnyTreesRegressor(MultiOutputRegression, RegressorMixin, _SkinnyTreesBase):
    """Skinny Trees for regression (MSE), with the classifier's parameters plus
    ``target_scaling``: ``"standard"`` trains on z-scored targets and predicts in the data's units;
    ``"none"`` trains on the raw targets (the paper's synthetic experiments)."""

    _task = "regression"

    def __init__(self, *, n_trees=20, depth=4, activation="sigmoid", smoothstep_width=1.0, penalty="l0",
                 lambda0=None, schedule="dense_to_sparse", temperature=0.01, lambda2=0.1, lambda1=1.0,
                 min_features=1, learning_rate=0.1, batch_size=16, max_epochs=None, target_scaling="standard",
                 device="auto", random_state=0):
        super().__init__(n_trees=n_trees, depth=depth, activation=activation, smoothstep_width=smoothstep_width,
                         penalty=penalty, lambda0=lambda0, schedule=schedule, temperature=temperature,
                         lambda2=lambda2, lambda1=lambda1, min_features=min_features,
                         learning_rate=learning_rate, batch_size=batch_size, max_epochs=max_epochs,
                         device=device, random_state=random_state)
        self.target_scaling = target_scaling

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None,
            feature_names: Sequence[str] | None = None) -> SkinnyTreesRegressor:
        X, Y, W = self._regression_data(X, y, sample_weight)
        if self.target_scaling == "standard":
            w = np.ones(X.shape[0]) if W is None else W
            self.target_mean_ = np.average(Y, axis=0, weights=w)
            scale = np.sqrt(np.average((Y - self.target_mean_) ** 2, axis=0, weights=w))
            self.target_scale_ = np.where(scale > 0, scale, 1.0)
        else:
            self.target_mean_, self.target_scale_ = np.zeros(Y.shape[1]), np.ones(Y.shape[1])
        ev = None
        if eval_set is not None:
            X_val = validate_data(self, eval_set[0], reset=False, dtype=np.float64)
            Y_val = np.asarray(eval_set[1], dtype=np.float64).reshape(X_val.shape[0], -1)
            ev = (X_val, (Y_val - self.target_mean_) / self.target_scale_)

        def validation(out, target):
            pred = out.cpu().double().numpy()
            truth = target.cpu().double().numpy()
            numbers = {"val_loss": float(np.mean((pred - truth) ** 2))}
            if truth.shape[0] >= 2:
                numbers["val_score"] = float(r2_score(truth, pred))
            return numbers

        self._fit_ensemble(X, (Y - self.target_mean_) / self.target_scale_, W, Y.shape[1], validation, ev,
                           callbacks, feature_names)
        return self

    def predict(self, X: Any) -> np.ndarray:
        out = self._outputs(X) * self.target_scale_ + self.target_mean_
        return self._as_y_shape(out)

    def _output_names(self) -> list[str]:
        k = self.leaves_.shape[2]
        return ["target"] if k == 1 else [f"target {j}" for j in range(k)]

    def _leaf_values(self) -> np.ndarray:
        """Leaf values in the data's units: each tree's share of the prediction, with the target
        mean split equally between the trees (so the trees' expected values sum to the prediction)."""
        return self.leaves_ * self.target_scale_ + self.target_mean_ / int(self.n_trees)

    def _ensemble_note(self) -> str:
        return "The trees' expected leaf values are summed over the trees to give the prediction."

    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        learned, arrays = super()._get_model_state()
        arrays["target_mean"], arrays["target_scale"] = self.target_mean_, self.target_scale_
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super()._set_model_state(learned, arrays)
        self.target_mean_ = np.asarray(arrays["target_mean"], dtype=np.float64)
        self.target_scale_ = np.asarray(arrays["target_scale"], dtype=np.float64)

