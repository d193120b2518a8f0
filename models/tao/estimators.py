"""TAO estimators: sparse oblique trees (``TAOClassifier``, ``TAORegressor``) with constant, linear
or softmax (k-class) leaves, following Zharmagambetov's thesis (2022); forests are in
:mod:`models.tao.forest`.

Decisions the thesis leaves open, made here and documented in ``docs/tao.md``:

* λ is in **sum form** (``l1_penalty``): E = Σ_n loss + λ Σ‖w‖₁; converted per solver
  (liblinear / SAGA: C = 1/λ; Lasso: α = λ / (2 Σ s)).
* ``guard="objective"`` by default, so the objective never increases; ``"off"`` is the
  thesis's unguarded TAO.
* reverse BFS visiting order; top-down BFS recomputes the reduced sets before each level.
* ``init="auto"``: CART for depth ≤ 2, random (unit Gaussian weights, median biases) otherwise.
* softmax leaves: the 0/1 objective by default, cross-entropy with absent classes scored β as an
  option; k = ``leaf_classes``.
* ``solver="auto"``: the compiled level solver (:mod:`models.tao.solvers.cd`), on any device: it
  is faster than the batched torch solver even when a GPU is there (``docs/tao.md``, Speed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback, TreeEstimator, seed_everything
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.memory import check_tree_memory
from models.tao.config import TAOConfig
from models.tao.init import cart_init, clustering_init, random_init
from models.tao.loop import planned_iterations, train
from models.tao.objective import class_probabilities
from models.tao.state import ABSENT, TAOTree
from models.targets import MultiOutputRegression


def compact(tree: TAOTree) -> tuple[TAOTree, np.ndarray]:
    """The reachable part of ``tree`` renumbered breadth-first (root 0), and each new node's
    id in ``tree`` (``origin``)."""
    order = tree.reachable()
    new_id = np.full(tree.n_slots, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    left = np.where(tree.left[order] >= 0, new_id[np.maximum(tree.left[order], 0)], -1)
    right = np.where(tree.right[order] >= 0, new_id[np.maximum(tree.right[order], 0)], -1)
    out = TAOTree(left, right, tree.weight[order].copy(), tree.bias[order].copy(), tree.value[order].copy(),
                  None if tree.leaf_weight is None else tree.leaf_weight[order].copy(), 0)
    return out, order


def tao_tree_to_tree(tree: TAOTree, *, task: str, family: str, feature_names: Sequence[str],
                     output_names: Sequence[str], meta: dict[str, Any]) -> Tree:
    """The shared :class:`Tree` description of a (compact) TAO tree."""
    is_leaf = tree.left < 0
    leaf_value = np.where(is_leaf[:, None], tree.value, np.nan)
    weight = np.where(is_leaf[:, None], 0.0, tree.weight)
    leaf_weight = None
    if tree.leaf_weight is not None:
        leaf_weight = np.where(is_leaf[:, None, None], tree.leaf_weight, 0.0)
    return Tree(children_left=tree.left, children_right=tree.right, weight=weight,
                bias=np.where(is_leaf, 0.0, tree.bias), leaf_value=leaf_value, leaf_weight=leaf_weight,
                feature_names=tuple(feature_names), output_names=tuple(output_names), task=task, family=family,
                meta={"prediction": "leaf_value", **meta})


def tree_arrays(tree: TAOTree, prefix: str = "") -> dict[str, np.ndarray]:
    arrays = {f"{prefix}left": tree.left, f"{prefix}right": tree.right, f"{prefix}weight": tree.weight,
              f"{prefix}bias": tree.bias, f"{prefix}value": tree.value}
    if tree.leaf_weight is not None:
        arrays[f"{prefix}leaf_weight"] = tree.leaf_weight
    return arrays


def tree_from_arrays(arrays: dict[str, np.ndarray], prefix: str = "") -> TAOTree:
    try:
        lw = arrays.get(f"{prefix}leaf_weight")
        tree = TAOTree(np.asarray(arrays[f"{prefix}left"], dtype=np.int64),
                       np.asarray(arrays[f"{prefix}right"], dtype=np.int64),
                       np.array(arrays[f"{prefix}weight"], dtype=np.float64),
                       np.array(arrays[f"{prefix}bias"], dtype=np.float64),
                       np.array(arrays[f"{prefix}value"], dtype=np.float64),
                       None if lw is None else np.array(lw, dtype=np.float64), 0)
        Tree(children_left=tree.left, children_right=tree.right, weight=tree.weight, bias=tree.bias,
             leaf_value=np.where((tree.left < 0)[:, None], tree.value, np.nan))  # checks the structure
    except (KeyError, ValueError) as err:
        raise TreevizError(f"The model file's TAO tree is damaged ({err}); train the model again.") from None
    return tree


def drop_zero_weights(X: np.ndarray, Y: np.ndarray, sw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Remove samples of weight 0: they are absent from the objective, and left in they would keep
    dead branches alive and give a leaf reached only by them a 0/0 value."""
    keep = sw > 0
    if keep.all():
        return X, Y, sw
    return X[keep], Y[keep], sw[keep]


def auto_depth(n_classes: int) -> int:
    """The depth ``depth=None`` gives a classification tree: ⌈log2 K⌉ + 3 for K classes, between 4
    and 8. Enough leaves for every class with room to split each one several ways: Δ = 4 for two
    classes, 6 for 6-7, 7 for 10, 8 for 26 (``docs/tao.md`` gives the measurements behind it)."""
    return int(min(8, max(4, math.ceil(math.log2(max(2, int(n_classes)))) + 3)))


class FittedTAOTree:
    """Outputs of an estimator whose fitted model is a :class:`TAOTree` in ``tao_tree_`` (TAO trees,
    LapTAO): the leaf scores and the leaf each sample reaches."""

    def _scores(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "tao_tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.tao_tree_.leaf_scores(X, self.tao_tree_.apply(X))

    def apply(self, X: Any) -> np.ndarray:
        """Index (in :meth:`to_tree`'s numbering) of the leaf each sample reaches."""
        check_is_fitted(self, "tao_tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.tao_tree_.apply(X)


class _TAOBase(FittedTAOTree, TreeEstimator):
    _task = ""

    # ------------------------------------------------------------------ configuration
    def _config(self, n_outputs: int) -> TAOConfig:
        device = self._fit_device()  # "auto": the CPU (models.devices: no GPU win measured for TAO)
        solver = self.solver
        if solver == "auto":
            # the compiled solver is faster than the torch one even on a GPU: on an H200, a letter level
            # of 90 nodes took 214 ms with torch on the GPU, 118 ms with torch on one CPU thread and
            # 6 ms with cd (benchmarks/speed/tao_solvers.py)
            solver = "cd"
        extra = {}
        if self._task == "classification":
            extra = {"leaf_classes": self.leaf_classes, "loss": self.loss, "beta": float(self.beta)}
        return TAOConfig(task=self._task, n_outputs=n_outputs, l1_penalty=float(self.l1_penalty), leaf=self.leaf,
                         node_type=self.node_type, max_iter=int(self.max_iter), tol=float(self.tol),
                         order=self.order, guard=self.guard, solver=solver, device=device, **extra)

    def _initial_tree(self, X, Y, sw, cfg, rng) -> tuple[TAOTree, np.ndarray | None]:
        depth = auto_depth(cfg.n_outputs) if self.depth is None else int(self.depth)
        self.depth_ = depth
        check_tree_memory("A TAO tree", depth, X.shape[0], X.shape[1], cfg.n_outputs, leaf_weights=cfg.linear_leaves)
        init = self.init
        if init == "auto":
            init = "cart" if depth <= 2 else "random"
        if init == "cart":
            seed = int(rng.integers(2**31 - 1))
            return cart_init(X, Y, sw, cfg, depth, seed), None
        if init == "random":
            return random_init(X, Y, sw, cfg, depth, rng), None
        return clustering_init(X, Y, sw, cfg, depth, rng)

    # ------------------------------------------------------------------ fitting
    def _fit_tao(self, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, n_outputs: int,
                 callbacks: Iterable[Callback] | None, eval_set: tuple | None,
                 feature_names: Sequence[str] | None) -> None:
        cfg = self._config(n_outputs)
        self._set_feature_names(feature_names, X.shape[1])
        X, Y, sw = drop_zero_weights(X, Y, sw)
        rng = seed_everything(self.random_state)
        warm = bool(self.warm_start) and hasattr(self, "tao_tree_") and self.tao_tree_.n_features == X.shape[1] \
            and self.tao_tree_.value.shape[1] == n_outputs \
            and (self.tao_tree_.leaf_weight is not None) == cfg.linear_leaves
        if warm:
            tree, assigned = self.tao_tree_.copy(), None
        else:
            tree, assigned = self._initial_tree(X, Y, sw, cfg, rng)
        ev = None
        if eval_set is not None:
            Xv, yv = eval_set
            ev = (validate_data(self, Xv, reset=False, dtype=np.float64), np.asarray(yv))
        # the iterations, then the finishing step (prune, refit the leaves): one unit each
        self._begin_training(callbacks, cfg.max_iter + 1)

        y_train = self._train_labels(Y)
        trend: tuple[list[float], list[int]] = ([], [])

        def on_iteration(record: dict) -> bool:
            record["train_score"] = self._score_tree(tree, X, y_train)
            if ev is not None:
                record["val_score"] = self._score_tree(tree, *ev)
            trend[0].append(float(record["objective"]))
            trend[1].append(int(record["n_changed"]))
            self._progress(total=planned_iterations(*trend, cfg.max_iter, cfg.tol) + 1)
            return self._record(**record)

        try:
            train(tree, X, Y, sw, cfg, on_iteration=on_iteration, initial_leaf=assigned, stop=self._cancel_requested)
        finally:
            self._end_training()
        self.tao_tree_, self.node_origin_ = compact(tree)
        self.n_iter_ = len(self.history_)

    def _score_tree(self, tree: TAOTree, X: np.ndarray, y: np.ndarray) -> float:
        raise NotImplementedError  # pragma: no cover

    def _meta(self, origin: np.ndarray) -> dict[str, Any]:
        return {"l1_penalty": float(self.l1_penalty), "leaf": self.leaf, "init": self.init,
                "node_origin": [int(v) for v in origin], "absent_class_score": ABSENT}

    def to_tree(self) -> Tree:
        check_is_fitted(self, "tao_tree_")
        return tao_tree_to_tree(self.tao_tree_, task=self._task, family=self.family_key,
                                feature_names=self.feature_names_,
                                output_names=self._output_names(), meta=self._meta(self.node_origin_))

    # ------------------------------------------------------------------ model files
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "tao_tree_")
        arrays = tree_arrays(self.tao_tree_)
        arrays["node_origin"] = self.node_origin_
        return {"n_iter_": int(self.n_iter_)}, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.tao_tree_ = tree_from_arrays(arrays)
        self.node_origin_ = np.asarray(arrays.get("node_origin", np.arange(self.tao_tree_.n_slots)), dtype=np.int64)
        self.n_iter_ = int(learned.get("n_iter_", 0))


class _ClassLabels:
    """Classification pieces shared by trees and forests: labels in, class names out."""

    def _labels(self, X: Any, y: Any, sample_weight: Any, *, keep_classes: bool = False):
        """Validated (X, class indices, sample weights); sets ``classes_`` unless ``keep_classes``
        and the current classes cover ``y``."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        classes = np.unique(y)
        if not (keep_classes and hasattr(self, "classes_") and np.all(np.isin(classes, self.classes_))):
            self.classes_ = classes
        return X, np.searchsorted(self.classes_, y), sw

    def _output_names(self) -> list[str]:
        return [str(c) for c in self.classes_]

    def _train_labels(self, Y: np.ndarray) -> np.ndarray:
        """The training labels as ``fit`` got them (``Y`` holds class indices)."""
        return self.classes_.take(Y)


class _Targets(MultiOutputRegression):
    """Regression pieces shared by trees and forests: 1-D or 2-D targets in, the same shape out."""

    def _targets(self, X: Any, y: Any, sample_weight: Any):
        """Validated (X, targets as (n, k), sample weights); remembers whether y was 1-D."""
        X, Y, W = self._regression_data(X, y, sample_weight)
        return X, Y, _check_sample_weight(W, X, dtype=np.float64)  # all ones when none were given

    def _target_names(self, k: int) -> list[str]:
        return ["target"] if k == 1 else [f"target {j}" for j in range(k)]

    def _train_labels(self, Y: np.ndarray) -> np.ndarray:
        return Y


class TAOClassifier(ClassifierMixin, _ClassLabels, _TAOBase):
    """A sparse oblique classification tree trained by TAO (``docs/tao.md``).

    Parameters
    ----------
    depth : int or None, default None
        Depth Δ of the initial tree (complete for random init); pruning may shrink it. None
        ("auto") grows it with the number of classes K: ⌈log2 K⌉ + 3, between 4 and 8
        (:func:`auto_depth`); the depth used is ``depth_``.
    l1_penalty : float
        λ of the ℓ1 penalty on every node's weights, **sum form** (not divided by the number of
        samples): larger values give sparser, smaller trees.
    leaf : {"constant", "linear", "softmax"}
        Constant leaves (majority class, TAO-c), ℓ1 multinomial logistic leaves over all classes
        (TAO-l), or softmax-tree leaves over the ``leaf_classes`` most populous classes of the leaf.
    leaf_classes : int or None
        k of softmax leaves (None: all classes).
    node_type : {"oblique", "axis"}
        ℓ1-logistic hyperplanes, or exact weighted 0/1 axis-aligned splits.
    init : {"auto", "cart", "random", "clustering"}
        Initial tree; "auto" is CART for depth ≤ 2 and random otherwise; "clustering" is the
        softmax-tree init (classes grouped into leaves by k-means on their mean inputs).
    max_iter, tol : int, float
        TAO iterations, and the relative objective change below which training stops.
    order : {"reverse_bfs", "bfs"}
        Visiting order of the depth levels.
    guard : {"objective", "off", "node"}
        Keep a node update only if its reduced objective does not increase (monotone E):
        "objective" tries each pass unguarded first and redoes it guarded if E rose; "node"
        guards every pass from the start (see :mod:`models.tao.loop`).
    solver : {"auto", "cd", "sklearn", "torch"}
        Node solver: "cd" solves all nodes of a depth level in one compiled coordinate-descent call
        (decision nodes and linear leaves); "sklearn" calls liblinear / Lasso / SAGA per node;
        "torch" runs batched proximal gradient per level for the decision nodes (linear leaves
        then use scikit-learn); "auto" is cd (the fastest, even beside a GPU).
    loss : {"zero_one", "cross_entropy"}
        The training loss; cross-entropy scores a class absent from a leaf with ``beta``.
    beta : float
        Loss of a point whose class its leaf does not model (cross-entropy only).
    device : str
        Device of the torch solver ("auto": CUDA when present).
    warm_start : bool
        Start from the current tree when fitted again (λ paths, semi-supervised TAO).
    random_state : int or None
    """

    _task = "classification"

    def __init__(self, *, depth=None, l1_penalty=0.01, leaf="constant", leaf_classes=None, node_type="oblique",
                 init="auto", max_iter=20, tol=1e-4, order="reverse_bfs", guard="objective", solver="auto",
                 loss="zero_one", beta=100.0, device="auto", warm_start=False, random_state=0):
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
        self.device = device
        self.warm_start = warm_start
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> TAOClassifier:
        X, Y, sw = self._labels(X, y, sample_weight, keep_classes=bool(self.warm_start))
        self._fit_tao(X, Y, sw, self.classes_.size, callbacks, eval_set, feature_names)
        return self

    def _score_tree(self, tree: TAOTree, X: np.ndarray, y: np.ndarray) -> float:
        scores = tree.leaf_scores(X, tree.apply(X))
        return float(np.mean(self.classes_.take(np.argmax(scores, axis=1)) == y))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: the leaf's class fractions (constant leaves) or its softmax
        (linear / softmax leaves; classes a leaf does not model get exactly 0)."""
        scores = self._scores(X)
        return class_probabilities(self.tao_tree_, scores)

    def predict(self, X: Any) -> np.ndarray:
        scores = self._scores(X)  # first, so an unfitted model raises NotFittedError
        return self.classes_.take(np.argmax(scores, axis=1))


class TAORegressor(RegressorMixin, _Targets, _TAOBase):
    """A sparse oblique regression tree trained by TAO, with constant (mean) or ℓ1 linear (Lasso)
    leaves; vector targets are allowed. Parameters as :class:`TAOClassifier` (no softmax leaves,
    squared-error loss)."""

    _task = "regression"

    def __init__(self, *, depth=4, l1_penalty=0.01, leaf="constant", node_type="oblique", init="auto",
                 max_iter=20, tol=1e-4, order="reverse_bfs", guard="objective", solver="auto", device="auto",
                 warm_start=False, random_state=0):
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
        self.device = device
        self.warm_start = warm_start
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple | None = None, feature_names: Sequence[str] | None = None) -> TAORegressor:
        X, Y, sw = self._targets(X, y, sample_weight)
        self._fit_tao(X, Y, sw, Y.shape[1], callbacks, eval_set, feature_names)
        return self

    def _output_names(self) -> list[str]:
        return self._target_names(self.tao_tree_.value.shape[1])

    def _score_tree(self, tree: TAOTree, X: np.ndarray, y: np.ndarray) -> float:
        pred = tree.leaf_scores(X, tree.apply(X))
        y = np.asarray(y, dtype=np.float64).reshape(pred.shape)
        return float(r2_score(y, pred)) if y.shape[0] >= 2 else float("nan")

    def predict(self, X: Any) -> np.ndarray:
        return self._as_y_shape(self._scores(X))
