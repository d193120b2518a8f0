"""DGT estimators: ``DGTClassifier`` and ``DGTRegressor``.

A hard oblique tree of height h trained end to end as a quantised network
(:mod:`models.dgt.network`) with the authors' optimiser recipe (:mod:`models.dgt.train`).
Decisions made here (see ``docs/dgt.md``):

* Inputs are z-scored with the training mean and standard deviation (a constant column gets scale
  1), regression targets are min-max scaled to [0, 1] with the training minimum and range (a
  constant target gets range 1), as the paper does; the Tree and every prediction are in the
  data's own units.
* **The model is the extracted tree.** After training, the L layers collapse into one hyperplane per
  node in float64 and are rewritten in input units; ``predict`` routes through that
  :class:`~models.ground.tree.Tree`, so a saved and reloaded model predicts exactly what the fitted one
  does, and the Tree drawn is the model. The float32 network agrees with it except where a split
  value is within rounding of 0 (float32 and float64 may round such a value to opposite signs).
* Without an ``eval_set``, ``validation_fraction`` of the training rows is held out (stratified
  for classification) to keep the best epoch, as the paper's "0.8 : 0.2 of train" protocol.
* ``min_steps`` raises the number of epochs on small data sets so that training gets at least that
  many optimiser steps (200 epochs on iris are only 200 steps, too few to train).
* Leaves no training point reaches keep their random values; the Tree marks them (and decision
  nodes no training point reaches) inactive, so they are drawn as pruned and not counted.
* Classification leaves hold the softmax of the leaf's class scores Θ[l]; ``predict_proba`` is that
  softmax and ``predict`` its argmax (= argmax Θ[l]).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback, TreeEstimator, class_targets, hold_out_rows, seed_everything
from models.devices import resolve_device
from models.dgt.fast import TreeData, TreeJob, train_jobs
from models.dgt.network import DGTNetwork, n_internal
from models.dgt.train import TrainConfig
from models.ground import threads
from models.ground.tree import Tree
from models.memory import check_tree_memory
from models.targets import MultiOutputRegression


def epochs_for(n_rows: int, batch_size: int, max_epochs: int, min_steps: int) -> int:
    """``max_epochs``, raised so that training takes at least ``min_steps`` optimiser steps."""
    steps_per_epoch = max(1, math.ceil(n_rows / max(1, min(batch_size, n_rows))))
    return int(max(int(max_epochs), math.ceil(int(min_steps) / steps_per_epoch)))


#: Below this many parameters a training step is too small to gain from more than one CPU thread.
SMALL_NETWORK = 200_000


def cpu_threads(net: DGTNetwork) -> int:
    """Torch threads for training ``net`` on the CPU: one for a small network, whose steps are a
    few tiny kernels (two threads on a busy 2-core machine made an iris fit 80 times slower: 17 s
    against 0.22 s), torch's default for the over-parameterised stacks, whose steps are dominated
    by products with the hidden layers."""
    n_params = sum(p.numel() for p in net.parameters())
    return 1 if n_params < SMALL_NETWORK else torch.get_num_threads()


def standardiser(X: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Training mean and standard deviation per column (a constant column gets scale 1)."""
    mean = np.average(X, axis=0, weights=w)
    scale = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
    return mean, np.where(scale > 0, scale, 1.0)


def hard_tree(weight: np.ndarray, bias: np.ndarray, leaf_values: np.ndarray, *, reached: np.ndarray | None,
              feature_names: Sequence[str], output_names: Sequence[str], task: str, family: str,
              meta: dict[str, Any]) -> Tree:
    """The complete tree of height h as a :class:`Tree` (heap order, hard routing, right iff
    w·x + b > 0): decision nodes 0..2^h − 2, leaf l at node 2^h − 1 + l. ``reached`` (2^h,) marks
    the leaves some training point reaches; the others, and decision nodes above none of them,
    are inactive."""
    n_nodes = weight.shape[0]
    total = 2 * n_nodes + 1
    ids = np.arange(total)
    left = np.where(ids < n_nodes, 2 * ids + 1, -1)
    right = np.where(ids < n_nodes, 2 * ids + 2, -1)
    W = np.zeros((total, weight.shape[1]))
    W[:n_nodes] = weight
    b = np.zeros(total)
    b[:n_nodes] = bias
    values = np.full((total, leaf_values.shape[1]), np.nan)
    values[n_nodes:] = leaf_values
    active = np.ones(total)
    if reached is not None:
        active[n_nodes:] = reached
        for node in range(n_nodes - 1, -1, -1):
            active[node] = max(active[2 * node + 1], active[2 * node + 2])
    return Tree(children_left=left, children_right=right, weight=W, bias=b, leaf_value=values, active=active,
                routing="hard", feature_names=tuple(feature_names), output_names=tuple(output_names), task=task,
                family=family, meta=meta)


def _class_validation(out: torch.Tensor, target: torch.Tensor) -> dict[str, float]:
    """Validation cross-entropy and accuracy of the hard tree's leaf scores."""
    return {"val_loss": float(torch.nn.functional.cross_entropy(out, target)),
            "val_score": float((out.argmax(dim=1) == target).double().mean())}


def _regression_validation(out: torch.Tensor, target: torch.Tensor) -> dict[str, float]:
    """Validation mean squared error (on the scaled targets) and R² of the hard tree."""
    pred, truth = out.cpu().double().numpy(), target.cpu().double().numpy()
    numbers = {"val_loss": float(np.mean((pred - truth) ** 2))}
    if truth.shape[0] >= 2:
        numbers["val_score"] = float(r2_score(truth, pred))
    return numbers


class _DGTBase(TreeEstimator):
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "mini-batch RMSprop shuffles the rows: repeating a row changes the batches and the stochastic gradient "
            "path, so a weight of 2 cannot train exactly like a repeat (weights do scale each row's loss; rows of "
            "weight 0 are left out, as if absent)",
    }
    _task = ""

    def __init__(self, *, depth=6, n_layers=1, width_multiplier=None, quantizer="scaled", l1_penalty=0.0,
                 l2_penalty=0.0, learning_rate=1e-2, momentum=0.0, batch_size=128, max_epochs=200, min_steps=1000,
                 grad_clip=0.01, validation_fraction=0.2, device="auto", random_state=0):
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
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ training
    def _config(self, n_rows: int) -> TrainConfig:
        return TrainConfig(epochs=epochs_for(n_rows, int(self.batch_size), int(self.max_epochs), int(self.min_steps)),
                           batch_size=int(self.batch_size), learning_rate=float(self.learning_rate),
                           momentum=float(self.momentum), l1_penalty=float(self.l1_penalty),
                           l2_penalty=float(self.l2_penalty), grad_clip=float(self.grad_clip))

    def _hold_out(self, X: np.ndarray, Y: np.ndarray, W: np.ndarray | None, rng: np.random.Generator,
                  stratify: np.ndarray | None):
        n = X.shape[0]
        n_val = round(float(self.validation_fraction) * n)
        if n_val < 1 or n - n_val < 2:
            return X, Y, W, None
        train, val = hold_out_rows(n, n_val, rng, stratify)
        return X[train], Y[train], None if W is None else W[train], (X[val], Y[val])

    def _run(self, job: TreeJob, callbacks: Iterable[Callback] | None) -> None:
        """Train a prepared job (see :meth:`_prepare_tree`) with callbacks, and keep its tree."""
        self._begin_training(callbacks, total=job.config.epochs)
        try:
            with threads.limited(cpu_threads(job.net) if job.device == "cpu" else torch.get_num_threads()):
                info = train_jobs([job], record=lambda numbers: self._record(**numbers[0]),
                                  stop=self._cancel_requested)[0]
        finally:
            self._end_training()
        self._finish_tree(job, info)

    def _prepare_tree(self, X: np.ndarray, Y: np.ndarray, W: np.ndarray | None, n_outputs: int, loss: str,
                      validation: Any, eval_set: tuple[np.ndarray, np.ndarray] | None,
                      feature_names: Sequence[str] | None, stratify: np.ndarray | None = None) -> TreeJob:
        """Everything a fit does before training: the rows kept, the hold-out, the scaling, the
        initial network and its batch-order generator (the forest trains several such jobs as
        one batched program)."""
        if W is not None:
            keep = W > 0
            if not keep.any():
                raise ValueError("The sample weights sum to zero: at least one row must have a positive weight.")
            X, Y, W = X[keep], Y[keep], W[keep]
            stratify = None if stratify is None else stratify[keep]
            if np.all(W == W[0]):
                W = None
        self._set_feature_names(feature_names, self.n_features_in_)
        device = self._fit_device(rows=X.shape[0], batch=self.batch_size, depth=self.depth)
        rng = seed_everything(self.random_state)
        generator = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))
        X_all = X
        if eval_set is None:
            X, Y, W, eval_set = self._hold_out(X, Y, W, rng, stratify)
        self.x_mean_, self.x_scale_ = standardiser(X, W)

        def as_tensor(a: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.tensor(np.asarray(a), dtype=dtype, device=device)

        def scaled(a: np.ndarray) -> torch.Tensor:
            return as_tensor((a - self.x_mean_) / self.x_scale_)

        target_dtype = torch.long if Y.dtype.kind in "iu" else torch.float32
        data = TreeData(X=scaled(X), Y=as_tensor(Y, target_dtype), W=None if W is None else as_tensor(W))
        if eval_set is not None and len(eval_set[0]):
            data.X_val, data.Y_val = scaled(eval_set[0]), as_tensor(eval_set[1], target_dtype)
        check_tree_memory("A DGT tree", int(self.depth), X.shape[0], X.shape[1], n_outputs)
        net = DGTNetwork(X.shape[1], int(self.depth), n_outputs, n_layers=int(self.n_layers),
                         width_multiplier=self.width_multiplier, quantizer=self.quantizer,
                         generator=generator).to(device)
        return TreeJob(net=net, data=data, config=self._config(X.shape[0]), generator=generator, loss=loss,
                       validation=validation, device=device, X_all=X_all)

    def _finish_tree(self, job: TreeJob, info: dict[str, Any]) -> None:
        self.n_epochs_ = len(self.history_)
        self.best_epoch_ = int(info["best_epoch"])
        self.n_steps_ = int(info["steps"])
        self.device_ = job.device
        self._set_tree(job.net, job.X_all)

    def _set_tree(self, net: DGTNetwork, X: np.ndarray) -> None:
        """The model: the trained network collapsed into one hyperplane per node, in the data's
        units, with the leaves reached by the rows of X marked."""
        weight, bias = net.collapse()
        # w·((x − μ)/σ) + b = (w/σ)·x + (b − (w/σ)·μ): the splits in the data's units
        self.split_weight_ = weight / self.x_scale_
        self.split_bias_ = bias - self.split_weight_ @ self.x_mean_
        self.leaves_ = net.leaf_table()
        self._network = net.cpu().requires_grad_(False)  # the trained network (not saved; the tree is the model)
        self._build_tree(self._reached(X))

    def _tree_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"split_weight": self.split_weight_, "split_bias": self.split_bias_, "leaves": self.leaves_,
                  "x_mean": self.x_mean_, "x_scale": self.x_scale_}
        if self.leaf_reached_ is not None:
            arrays["leaf_reached"] = self.leaf_reached_.astype(np.int8)
        return arrays

    def _height(self) -> int:
        """The tree's height h: ``depth``, or the height a fit chose for ``depth=None`` (``depth_``)."""
        return int(self.depth if getattr(self, "depth_", None) is None else self.depth_)

    def _restore_tree(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`_tree_arrays` (after the subclass has restored its own numbers)."""
        n_nodes = n_internal(self._height())
        weight = np.asarray(arrays["split_weight"], dtype=np.float64)
        if weight.shape != (n_nodes, self.n_features_in_) or np.asarray(arrays["leaves"]).shape[0] != n_nodes + 1:
            raise ValueError("the tree's arrays do not match depth and the number of features")
        self.split_weight_ = weight
        self.split_bias_ = np.asarray(arrays["split_bias"], dtype=np.float64)
        self.leaves_ = np.asarray(arrays["leaves"], dtype=np.float64)
        self.x_mean_ = np.asarray(arrays["x_mean"], dtype=np.float64)
        self.x_scale_ = np.asarray(arrays["x_scale"], dtype=np.float64)
        self.device_ = resolve_device(self.device)
        reached = arrays.get("leaf_reached")
        self._build_tree(None if reached is None else np.asarray(reached).astype(bool))

    def _reached(self, X: np.ndarray) -> np.ndarray:
        n_nodes = self.split_weight_.shape[0]
        self._build_tree(None)
        leaves = self.tree_.apply(X) - n_nodes
        return np.bincount(leaves, minlength=n_nodes + 1) > 0

    def _build_tree(self, reached: np.ndarray | None) -> None:
        self.leaf_reached_ = reached
        h = self._height()
        meta: dict[str, Any] = {"prediction": "leaf_value", "height": h, "n_layers": int(self.n_layers)}
        if reached is not None:
            meta["notes"] = [
                f"{int(reached.sum())} of {2 ** h} leaves are reached by training points; the others keep their "
                "random initial values and are drawn as pruned."]
        self.tree_ = hard_tree(self.split_weight_, self.split_bias_, self._leaf_values(), reached=reached,
                               feature_names=self.feature_names_, output_names=self._output_names(),
                               task=self._task, family=self.family_key, meta=meta)

    # ------------------------------------------------------------------ prediction
    def _values(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.tree_.predict_value(X)

    def apply(self, X: Any) -> np.ndarray:
        """The leaf (0..2^h − 1, left to right) each row reaches."""
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.tree_.apply(X) - n_internal(self._height())

    def to_tree(self) -> Tree:
        check_is_fitted(self, "tree_")
        return self.tree_

    # ------------------------------------------------------------------ model files
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "tree_")
        learned = {"n_epochs_": int(self.n_epochs_), "best_epoch_": int(self.best_epoch_),
                   "n_steps_": int(self.n_steps_)}
        return learned, self._tree_arrays()

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.n_epochs_ = int(learned.get("n_epochs_", 0))
        self.best_epoch_ = int(learned.get("best_epoch_", 0))
        self.n_steps_ = int(learned.get("n_steps_", 0))
        self._restore_tree(arrays)


class DGTClassifier(ClassifierMixin, _DGTBase):
    """DGT for classification: a hard oblique tree of height ``depth`` whose leaves hold class
    scores, trained with cross-entropy on the scores of the leaf reached.

    Parameters
    ----------
    depth : int
        Height h: 2^h − 1 oblique splits, 2^h leaves (the paper's best: 6 to 10).
    n_layers : int
        L linear layers in the split stack (the paper's over-parameterisation; 1 = a plain tree);
        they collapse into one hyperplane per node after training.
    width_multiplier : float or None
        Hidden widths as a multiple of 2^h − 1; None takes the paper's Table 12.
    quantizer : {"scaled", "plain"}
        The authors' scaled sign (used for the paper's numbers) or the paper's Algorithm 2.
    l1_penalty, l2_penalty : float
        ℓ1 or ℓ2 strength on the split layers' weights and biases (not both).
    learning_rate, momentum, batch_size, max_epochs, min_steps, grad_clip : RMSprop settings
        Cosine warm restarts every 10 steps; global gradient norm clipped to ``grad_clip``.
    validation_fraction : float
        Rows held out to keep the best epoch when ``fit`` gets no ``eval_set``.
    device : "auto", "cpu" or "cuda"; random_state : int

    Attributes
    ----------
    tree_ : Tree
        The hard tree in the data's units (the model: ``predict`` routes through it).
    split_weight_, split_bias_ : ndarray
        (2^h − 1, d) and (2^h − 1,) hyperplanes in input units.
    leaves_ : ndarray
        (2^h, K) leaf class scores Θ.
    history_ : list of dict
        Per epoch: ``loss``, ``val_loss``, ``val_score`` (accuracy), ``lr``, ``ste_open`` (fraction
        of split values with |z| ≤ 1), ``best_epoch``, ``epoch_s``.
    """

    _task = "classification"

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None, feature_names: Sequence[str] | None = None) -> DGTClassifier:
        self._run(self._prepare(X, y, sample_weight, eval_set, feature_names), callbacks)
        return self

    def _prepare(self, X: Any, y: Any, sample_weight: Any, eval_set: tuple[Any, Any] | None,
                 feature_names: Sequence[str] | None) -> TreeJob:
        X, Y, ev = class_targets(self, X, y, eval_set)
        W = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                                    ensure_non_negative=True)
        return self._prepare_tree(X, Y, W, self.classes_.size, "ce", _class_validation, ev, feature_names,
                                  stratify=Y)

    def _leaf_values(self) -> np.ndarray:
        scores = self.leaves_ - self.leaves_.max(axis=1, keepdims=True)
        e = np.exp(scores)
        return e / e.sum(axis=1, keepdims=True)

    def predict_proba(self, X: Any) -> np.ndarray:
        return self._values(X)

    def predict(self, X: Any) -> np.ndarray:
        scores = self._values(X)
        return self.classes_.take(scores.argmax(axis=1))

    def _output_names(self) -> list[str]:
        return [str(c) for c in self.classes_]


class ScaledTargets:
    """Regression targets min-max scaled to [0, 1] for training: ``target_min_`` and
    ``target_range_`` map the leaves back to the data's units and are saved with the model. Placed
    before the tree's base class, so that the model state methods extend the base's."""

    def _scale(self, Y: np.ndarray) -> np.ndarray:
        return (Y - self.target_min_) / self.target_range_

    def _leaf_values(self) -> np.ndarray:
        return self.leaves_ * self.target_range_ + self.target_min_

    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        learned, arrays = super()._get_model_state()
        arrays["target_min"], arrays["target_range"] = self.target_min_, self.target_range_
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.target_min_ = np.asarray(arrays["target_min"], dtype=np.float64)
        self.target_range_ = np.asarray(arrays["target_range"], dtype=np.float64)
        super()._set_model_state(learned, arrays)


class DGTRegressor(MultiOutputRegression, RegressorMixin, ScaledTargets, _DGTBase):
    """DGT for regression (squared loss on targets min-max scaled to [0, 1]); parameters as
    :class:`DGTClassifier`. Leaves hold values in the data's units; ``target_min_`` and
    ``target_range_`` are the scaling."""

    _task = "regression"

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None, feature_names: Sequence[str] | None = None) -> DGTRegressor:
        self._run(self._prepare(X, y, sample_weight, eval_set, feature_names), callbacks)
        return self

    def _prepare(self, X: Any, y: Any, sample_weight: Any, eval_set: tuple[Any, Any] | None,
                 feature_names: Sequence[str] | None) -> TreeJob:
        X, Y, W = self._regression_data(X, y, sample_weight)
        self.target_min_ = Y.min(axis=0)
        span = Y.max(axis=0) - self.target_min_
        self.target_range_ = np.where(span > 0, span, 1.0)
        ev = None
        if eval_set is not None:
            X_val = validate_data(self, eval_set[0], reset=False, dtype=np.float64)
            Y_val = np.asarray(eval_set[1], dtype=np.float64).reshape(X_val.shape[0], -1)
            ev = (X_val, self._scale(Y_val))

        return self._prepare_tree(X, self._scale(Y), W, Y.shape[1], "mse", _regression_validation, ev, feature_names)

    def predict(self, X: Any) -> np.ndarray:
        out = self._values(X)
        return self._as_y_shape(out)

    def _output_names(self) -> list[str]:
        k = self.leaves_.shape[1]
        return ["target"] if k == 1 else [f"target {j}" for j in range(k)]
