"""What every latent-tree estimator shares: the depth "auto", training through
:func:`models.latent.train_loop.fit_net` (sample weights, the held-out validation rows, warm
starts), prediction (frozen or per-batch pruning, in float64), the :class:`~models.ground.tree.Tree`
with its display leaf values, and the model-file state. The estimators themselves are in
:mod:`models.latent.estimators`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from models.base import Callback, TreeEstimator, hold_out_rows, seed_everything
from models.devices import resolve_device
from models.ground.tree import Tree
from models.latent import heap
from models.latent.layers import LatentTreeNet, count_parameters
from models.latent.train_loop import Problem, as_tensor, fit_net, predict_outputs

#: The depth "auto" gives regression and clustering (and classification with few classes).
AUTO_DEPTH = 3
#: The deepest tree "auto" gives a classifier.
AUTO_DEPTH_MAX = 6


def auto_depth(n_classes: int) -> int:
    """Depth "auto" of a classifier: enough leaves for every class (2^D ≥ K), between 3 and 6.

    At depth 3 (8 leaves) the defaults fell 3.8 points behind CART's on letter (26 classes):
    82.7 % against 86.5 %; depth 5 reached 86.6 %. Two- to eight-class data keeps depth 3.
    """
    return min(AUTO_DEPTH_MAX, max(AUTO_DEPTH, math.ceil(math.log2(max(2, int(n_classes))))))


class LatentTreeBase(TreeEstimator):
    """The common part of :class:`~models.latent.estimators.LatentTreeClassifier`, ``LatentTreeRegressor`` and
    ``LatentTreeClustering`` (their parameters are documented there)."""

    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "mini-batch training shuffles the rows: repeating a row changes the number of rows, hence the "
            "batches and the stochastic gradient path, so a weight of 2 cannot train exactly like a repeat "
            "(weights do scale each row's loss; rows of weight 0 are left out, as if absent)",
    }

    _task = ""

    def __init__(self, *, depth=None, prune_strength=1.0, split="linear", head="linear", head_layers=2,
                 dropout=0.0, readout="code", formulation="icml", optimizer="qhadam",
                 learning_rate=1e-2, batch_size=64, max_epochs=100, patience=10, validation_fraction=0.1,
                 lr_patience=2, inference="frozen", eval_batch_size=None, warm_start=False, device="auto",
                 random_state=0):
        self.depth = depth
        self.prune_strength = prune_strength
        self.split = split
        self.head = head
        self.head_layers = head_layers
        self.dropout = dropout
        self.readout = readout
        self.formulation = formulation
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.lr_patience = lr_patience
        self.inference = inference
        self.eval_batch_size = eval_batch_size
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state

    def _depth(self) -> int:
        """The tree depth D: the ``depth`` parameter, or :data:`AUTO_DEPTH` when it is None ("auto")."""
        return AUTO_DEPTH if self.depth is None else int(self.depth)

    # ------------------------------------------------------------------ checks
    def _X(self, X: Any, *, reset: bool) -> np.ndarray:
        X = validate_data(self, X, reset=reset, dtype=np.float64)
        return X

    # ------------------------------------------------------------------ training
    def _train(self, X: np.ndarray, Y: np.ndarray, problem_fns: dict[str, Any], n_outputs: int,
               eval_set: tuple[np.ndarray, np.ndarray] | None, callbacks: Iterable[Callback] | None,
               feature_names: Sequence[str] | None, n_inputs: int | None = None,
               stratify: np.ndarray | None = None, sample_weight: Any = None) -> None:
        W = None
        if sample_weight is not None:  # rows of weight 0 are left out, as if absent
            W = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            keep = W > 0
            if not keep.any():
                raise ValueError("The sample weights sum to zero: at least one row must have a positive weight.")
            X, Y, W = X[keep], Y[keep], W[keep]
            stratify = None if stratify is None else stratify[keep]
        if X.shape[0] < 2:
            raise ValueError(f"Latent trees need at least 2 samples to train (got {X.shape[0]} sample).")
        self._set_feature_names(feature_names, self.n_features_in_)
        device = self._fit_device(rows=X.shape[0], batch=self.batch_size, depth=self._depth())
        rng = seed_everything(self.random_state)
        generator = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))
        W_val = None
        if eval_set is None:
            X, Y, W, eval_set, W_val = self._hold_out(X, Y, W, rng, stratify)
        self._net64 = None
        reuse = bool(self.warm_start) and hasattr(self, "net_") and self._same_architecture(n_outputs)
        if not reuse:
            self.net_ = self._build_net(n_inputs or X.shape[1], n_outputs).to(device)
        else:
            self.net_.to(device)
            self.net_.prune_strength = float(self.prune_strength)
        problem = Problem(X=as_tensor(X, device), Y=problem_fns["targets"](Y, device),
                          loss=problem_fns["loss"], score=problem_fns["score"],
                          W=None if W is None else as_tensor(W, device), loss_kind=problem_fns.get("kind"))
        if eval_set is not None:
            problem.X_val = as_tensor(eval_set[0], device)
            problem.Y_val = problem_fns["targets"](eval_set[1], device)
            problem.W_val = None if W_val is None else as_tensor(W_val, device)
        self._begin_training(callbacks, total=int(self.max_epochs))
        try:
            a, best_epoch = fit_net(
                self.net_, problem, batch_size=int(self.batch_size), max_epochs=int(self.max_epochs),
                patience=int(self.patience), lr_patience=int(self.lr_patience), optimizer=self.optimizer,
                learning_rate=float(self.learning_rate), generator=generator, record=self._record,
                init_bias=not reuse, stop=self._cancel_requested, plan=lambda epochs: self._progress(total=epochs),
            )
        finally:
            self._end_training()
        self.net_.eval()
        self.pruning_ = a.detach().cpu().numpy().astype(np.float64)
        self.best_epoch_ = int(best_epoch)
        self.n_parameters_ = count_parameters(self.net_)
        self.device_ = device

    def _hold_out(self, X: np.ndarray, Y: np.ndarray, W: np.ndarray | None, rng: np.random.Generator,
                  stratify: np.ndarray | None) -> tuple[Any, ...]:
        """Hold out ``validation_fraction`` of the rows for early stopping when ``fit`` got no
        ``eval_set`` (as scikit-learn's ``early_stopping=True``), stratified by class when every
        class allows it. Nothing is held out with ``patience=0``, a zero fraction, or too few rows.
        Returns (X, Y, W) of the rows kept for training, the held-out (X, Y) or None, and the
        held-out rows' weights (None without sample weights)."""
        n, frac = X.shape[0], float(self.validation_fraction)
        n_val = round(frac * n)
        if int(self.patience) == 0 or n_val < 1 or n - n_val < 2:
            return X, Y, W, None, None
        train, val = hold_out_rows(n, n_val, rng, stratify)
        if W is None:
            return X[train], Y[train], None, (X[val], Y[val]), None
        return X[train], Y[train], W[train], (X[val], Y[val]), W[val]

    def _architecture(self) -> dict[str, Any]:
        return {"depth": self._depth(), "split": self.split, "head": self.head, "head_layers": int(self.head_layers),
                    "dropout": float(self.dropout), "readout": self.readout, "formulation": self.formulation}

    def _same_architecture(self, n_outputs: int) -> bool:
        return getattr(self, "architecture_", None) == {**self._architecture(), "n_outputs": n_outputs}

    def _build_net(self, n_inputs: int, n_outputs: int) -> LatentTreeNet:
        self.architecture_ = {**self._architecture(), "n_outputs": n_outputs}
        self.n_net_inputs_ = int(n_inputs)
        return LatentTreeNet(n_inputs, n_outputs, self._depth(), prune_strength=float(self.prune_strength),
                             split=self.split, head=self.head, head_layers=int(self.head_layers),
                             dropout=float(self.dropout), readout=self.readout, formulation=self.formulation)

    # ------------------------------------------------------------------ prediction
    def _net_inputs(self, X: np.ndarray) -> np.ndarray:
        return X

    def _inference_net(self) -> LatentTreeNet:
        """A float64 copy of the trained network for prediction.

        Training runs in float32; predicting in float64 makes a row's output independent of the
        other rows it is predicted with (float32 matrix products round differently with the
        batch's shape), which scikit-learn's invariance checks require.
        """
        net = getattr(self, "_net64", None)
        if net is None:
            net = copy.deepcopy(self.net_).double().eval()
            self._net64 = net
        return net

    def _inputs64(self, X: Any) -> torch.Tensor:
        X = self._X(X, reset=False)
        return torch.tensor(self._net_inputs(X), dtype=torch.float64, device=self.device_)

    def _outputs(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "net_")
        Xt = self._inputs64(X)
        net = self._inference_net()
        if self.inference == "frozen":
            a = torch.tensor(self.pruning_, dtype=torch.float64, device=self.device_)
            out = predict_outputs(net, Xt, a)
        else:
            size = int(self.eval_batch_size or 2 * int(self.batch_size))
            out = predict_outputs(net, Xt, None, batch_mode_size=size)
        return out.detach().cpu().numpy()

    def tree_state(self, X: Any) -> dict[str, np.ndarray]:
        """Split scores s, rewards q, pruning a and traversal z of ``X`` (as used to predict)."""
        check_is_fitted(self, "net_")
        Xt = self._inputs64(X)
        a = torch.tensor(self.pruning_, dtype=torch.float64, device=self.device_)
        with torch.no_grad():
            state = self._inference_net().tree_state(Xt, a=a if self.inference == "frozen" else None)
        return {k: v.detach().cpu().numpy() for k, v in state.items()}

    # ------------------------------------------------------------------ the Tree
    def _tree_weights(self) -> tuple[np.ndarray, np.ndarray]:
        w, b = self._inference_net().splits.folded()
        return w.detach().cpu().numpy(), b.detach().cpu().numpy()

    def _empty_tree(self, leaf_value: np.ndarray, output_names: Sequence[str]) -> Tree:
        depth = self._depth()
        left, right = heap.children_arrays(depth)
        n_nodes, n_split = heap.n_nodes(depth), heap.n_splits(depth)
        w_split, b_split = self._tree_weights()
        weight = np.zeros((n_nodes, self.n_features_in_))
        weight[:n_split, self._input_columns()] = w_split
        bias = np.zeros(n_nodes)
        bias[:n_split] = b_split
        return Tree(
            children_left=left, children_right=right, weight=weight, bias=bias, leaf_value=leaf_value,
            active=self.pruning_, routing="hard", feature_names=self.feature_names_,
            output_names=tuple(output_names), task=self._task, family=self.family_key,
            meta={
                "prediction": "head",
                "head": self._head_size(),
                "empty_leaves": self._empty_leaves(left),
                "prune_strength": float(self.prune_strength),
                "readout": self.readout,
                "formulation": self.formulation,
                "inference": self.inference,
                "pruning_reference": "training data, λ scaled by n / batch_size",
                "batch_size": int(self.batch_size),
                "split": self.split,
                "n_parameters": int(self.n_parameters_),
                "notes": self._pruning_notes(n_nodes),
            },
        )

    def _head_size(self) -> dict[str, Any]:
        """The head's size and cost per row, as the Tree counts them (``meta["head"]``): its
        parameters, its nonzero weights, and one multiply-add per nonzero weight."""
        head = self._inference_net().head
        nonzero = sum(int(torch.count_nonzero(m.weight)) for m in head.modules() if isinstance(m, torch.nn.Linear))
        inputs = "[x; z]" if self._inference_net().head_input == "xz" else "z"
        return {"inputs": inputs, "parameters": count_parameters(head), "nonzero_weights": nonzero,
                "flops": nonzero}

    def _empty_leaves(self, children_left: np.ndarray) -> list[int]:
        """Leaves no training row reached (their values are placeholders); unknown (none listed)
        for a model file written before the counts were kept."""
        rows = getattr(self, "leaf_rows_", None)
        if rows is None:
            return []
        return [int(v) for v in np.flatnonzero((np.asarray(children_left) < 0) & (rows == 0))]

    def _pruning_notes(self, n_nodes: int) -> tuple[str, ...]:
        """What the explorer says about pruning: the frozen tree's pruned nodes beside the mean per
        training batch at the kept epoch (a frozen vector prunes no more nodes than any batch)."""
        frozen = int(np.count_nonzero(self.pruning_ == 0))
        kept = [r for r in getattr(self, "history_", []) if r.get("epoch") == getattr(self, "best_epoch_", -1)]
        if not kept or "batch_active_fraction" not in kept[0]:
            return (f"{frozen} of {n_nodes} nodes pruned (a solved once on the training data).",)
        per_batch = n_nodes * (1.0 - float(kept[0]["batch_active_fraction"]))
        return (f"{frozen} of {n_nodes} nodes pruned in this tree (a solved once on the training data, "
                f"λ scaled to the batch size), against {per_batch:.1f} on average per training batch at "
                f"epoch {kept[0]['epoch']}: a node is pruned here only when every batch would prune it.",)

    def _input_columns(self) -> np.ndarray:
        return np.arange(self.n_features_in_)

    def _set_leaf_values(self, X: np.ndarray, stats_targets: np.ndarray | None, n_out: int) -> None:
        """``leaf_value_`` (display only) and ``leaf_rows_``: the training rows reaching each node."""
        self.leaf_rows_ = None
        self.leaf_value_ = self._leaf_values(X, stats_targets, n_out)
        leaf_of = self._empty_tree(self.leaf_value_, [f"y{i}" for i in range(n_out)]).apply(X)
        self.leaf_rows_ = np.bincount(leaf_of, minlength=heap.n_nodes(self._depth())).astype(np.int64)

    def _leaf_values(self, X: np.ndarray, stats_targets: np.ndarray | None, n_out: int) -> np.ndarray:
        """Per-leaf class shares / mean target of the reference rows (display only; a leaf no row
        reaches gets the overall shares / mean as a placeholder, listed in ``meta["empty_leaves"]``)."""
        n_nodes = heap.n_nodes(self._depth())
        placeholder = np.where(np.asarray(heap.children_arrays(self._depth())[0])[:, None] < 0,
                               0.0, np.nan) * np.ones((n_nodes, n_out))
        tree = self._empty_tree(placeholder, [f"y{i}" for i in range(n_out)])
        values = np.full((n_nodes, n_out), np.nan)
        leaves = tree.leaves
        if self._task == "classification":
            stats = tree.node_stats(X, stats_targets)
            counts = stats.class_counts
            prior = counts[0] / max(1.0, counts[0].sum())
            with np.errstate(invalid="ignore", divide="ignore"):
                shares = counts / counts.sum(axis=1, keepdims=True)
            values[leaves] = np.where(counts[leaves].sum(axis=1, keepdims=True) > 0, shares[leaves], prior)
        elif self._task == "regression":
            Y = stats_targets.reshape(X.shape[0], -1)
            leaf_of = tree.apply(X)
            overall = Y.mean(axis=0)
            for leaf in leaves:
                rows = leaf_of == leaf
                values[leaf] = Y[rows].mean(axis=0) if rows.any() else overall
        else:
            leaf_of = tree.apply(X)
            counts = np.bincount(leaf_of, minlength=n_nodes)
            values[leaves, 0] = counts[leaves] / max(1, X.shape[0])
        return values

    # ------------------------------------------------------------------ persistence
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "net_")
        learned = {
            "architecture_": self.architecture_,
            "n_net_inputs_": int(self.n_net_inputs_),
            "best_epoch_": int(self.best_epoch_),
            "n_parameters_": int(self.n_parameters_),
        }
        arrays = {f"net.{k}": v.detach().cpu().numpy() for k, v in self.net_.state_dict().items()}
        arrays["pruning_"] = self.pruning_
        arrays["leaf_value_"] = self.leaf_value_
        if getattr(self, "leaf_rows_", None) is not None:
            arrays["leaf_rows_"] = self.leaf_rows_
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        arch = dict(learned["architecture_"])
        for key in ("depth", "split", "head", "head_layers", "dropout", "readout", "formulation"):
            if arch.get(key) != self._architecture()[key]:
                raise KeyError(f"architecture '{key}' ({arch.get(key)!r} vs parameter {self._architecture()[key]!r})")
        self.device_ = resolve_device(self.device)
        self.net_ = self._build_net(int(learned["n_net_inputs_"]), int(arch["n_outputs"]))
        state = {k[4:]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith("net.")}
        self.net_.load_state_dict(state)
        self.net_.to(self.device_).eval()
        self._net64 = None
        self.pruning_ = np.asarray(arrays["pruning_"], dtype=np.float64)
        self.leaf_value_ = np.asarray(arrays["leaf_value_"], dtype=np.float64)
        rows = arrays.get("leaf_rows_")  # absent from model files written before it was kept
        self.leaf_rows_ = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.best_epoch_ = int(learned.get("best_epoch_", 0))
        self.n_parameters_ = int(learned.get("n_parameters_", count_parameters(self.net_)))
