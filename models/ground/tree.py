"""The Tree: one neutral description of a learned tree, shared by every model family.

However a family learns (greedy CART, TAO, argmin differentiation, gradient descent), its
``to_tree()`` ends in a :class:`Tree`, and everything downstream (routing, per-node statistics,
rules, counts, figures, JSON) reads only this object.

Conventions (one for every family)
----------------------------------
* Nodes are numbered ``0 .. n_nodes-1``; node 0 is the root. ``children_left[i] == -1`` and
  ``children_right[i] == -1`` at a leaf.
* A decision node ``i`` computes the decision value ``s_i(x) = weight[i] @ x + bias[i]``.
  **Hard routing sends x right iff s_i(x) > 0** (so s = 0 goes left, as in scikit-learn's
  ``x[f] <= threshold`` goes left). An axis-aligned split on feature ``f`` at threshold ``t``
  is the one-hot row ``weight[i] = e_f`` with ``bias[i] = -t``.
* **Soft routing** sends x right with probability ``S(s_i(x))`` where ``S`` is the logistic
  sigmoid or the smooth-step of width ``activation_width`` (Hazimeh et al. 2020). Families whose
  paper routes *left* with ``S(w x + b)`` store ``weight = -w`` and ``bias = -b``.
* **Missing values** (NaN): a decision node's value is missing for a sample when a feature with a
  nonzero weight in that node is NaN, and such a sample goes right iff ``missing_right[i]`` (with
  probability exactly 0 or 1, for soft routing too), as scikit-learn's trees do.
* ``leaf_value[i]`` is the output of leaf ``i`` (class scores or regression values); it is NaN at
  decision nodes. A linear leaf adds ``leaf_weight[i] @ x``.
* ``active[i]`` in [0, 1] is the node's activity (a_t of latent trees), shown in figures and used
  by counts (0 = pruned). It
  does not change routing: a family whose prediction depends on pruning (latent trees predict
  from a head on ``[x; z]``) says so in ``meta["prediction"]``.
* A **head** (``meta["prediction"] == "head"``) is a learned predictor on top of the tree; its
  size is ``meta["head"]`` (``parameters``, ``nonzero_weights``, ``flops`` per row). The size and
  cost counts include it, and such a tree's leaf values are no parameters (they only describe the
  rows that reach each leaf). ``meta["empty_leaves"]`` lists leaves no training row reached: their
  values are placeholders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from models.ground import counts, display, stats, tree_json, units
from models.ground import routing as tree_routing
from models.ground.jsonio import json_default
from models.ground.routing import PathStep, sigmoid, smoothstep
from models.ground.stats import NodeStats
from models.ground.tree_json import FORMAT_VERSION, MIN_FORMAT_VERSION

__all__ = ["ACTIVATIONS", "FORMAT_VERSION", "MIN_FORMAT_VERSION", "ROUTINGS", "TASKS", "NodeStats", "PathStep",
           "Tree", "sigmoid", "smoothstep"]

ROUTINGS = ("hard", "soft")
ACTIVATIONS = ("sigmoid", "smoothstep")
TASKS = ("classification", "regression", "clustering", "embedding")


def _as_array(value: Any, dtype: Any, name: str, ndim: int) -> np.ndarray:
    arr = np.array(value, dtype=dtype, copy=True)
    if arr.ndim != ndim:
        raise ValueError(f"Tree.{name} must be {ndim}-D, got shape {arr.shape}.")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Tree:
    """A learned binary tree in the one convention every family converts to (see module doc)."""

    children_left: np.ndarray
    children_right: np.ndarray
    weight: np.ndarray
    bias: np.ndarray
    leaf_value: np.ndarray
    active: np.ndarray | None = None
    routing: str = "hard"
    activation: str = "sigmoid"
    activation_width: float = 1.0
    leaf_weight: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    output_names: tuple[str, ...] = ()
    task: str = "classification"
    family: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    missing_right: np.ndarray | None = None

    # ------------------------------------------------------------------ construction
    def __post_init__(self) -> None:
        set_ = object.__setattr__
        left = _as_array(self.children_left, np.int64, "children_left", 1)
        right = _as_array(self.children_right, np.int64, "children_right", 1)
        n = left.shape[0]
        if n == 0:
            raise ValueError("A Tree needs at least one node.")
        weight = _as_array(self.weight, np.float64, "weight", 2)
        bias = _as_array(self.bias, np.float64, "bias", 1)
        leaf_value = np.array(self.leaf_value, dtype=np.float64, copy=True)
        if leaf_value.ndim == 1:
            leaf_value = leaf_value[:, None]
        leaf_value.setflags(write=False)
        active = (
            np.ones(n)
            if self.active is None
            else np.clip(np.asarray(self.active, dtype=np.float64), 0.0, 1.0)
        )
        active = _as_array(active, np.float64, "active", 1)
        for name, arr in (("children_right", right), ("bias", bias), ("active", active)):
            if arr.shape[0] != n:
                raise ValueError(f"Tree.{name} has {arr.shape[0]} entries for {n} nodes.")
        if weight.shape[0] != n or leaf_value.shape[0] != n:
            raise ValueError("Tree.weight and Tree.leaf_value need one row per node.")
        set_(self, "children_left", left)
        set_(self, "children_right", right)
        set_(self, "weight", weight)
        set_(self, "bias", bias)
        set_(self, "leaf_value", leaf_value)
        set_(self, "active", active)
        missing_right = _as_array(
            np.zeros(n, dtype=bool) if self.missing_right is None else self.missing_right,
            bool, "missing_right", 1,
        )
        if missing_right.shape[0] != n:
            raise ValueError(f"Tree.missing_right has {missing_right.shape[0]} entries for {n} nodes.")
        if np.any(missing_right & (left < 0)):
            # Leaves route nothing: store False there so equal trees compare equal.
            missing_right = missing_right & (left >= 0)
            missing_right.setflags(write=False)
        set_(self, "missing_right", missing_right)
        if self.leaf_weight is not None:
            lw = _as_array(self.leaf_weight, np.float64, "leaf_weight", 3)
            if lw.shape != (n, leaf_value.shape[1], weight.shape[1]):
                raise ValueError(
                    f"Tree.leaf_weight must have shape {(n, leaf_value.shape[1], weight.shape[1])},"
                    f" got {lw.shape}."
                )
            set_(self, "leaf_weight", lw)
        if self.routing not in ROUTINGS:
            raise ValueError(f"Tree.routing must be one of {ROUTINGS}, got {self.routing!r}.")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"Tree.activation must be one of {ACTIVATIONS}.")
        if self.task not in TASKS:
            raise ValueError(f"Tree.task must be one of {TASKS}, got {self.task!r}.")
        d = weight.shape[1]
        names = tuple(str(s) for s in self.feature_names) or tuple(f"x{j}" for j in range(d))
        if len(names) != d:
            raise ValueError(f"Tree has {d} features but {len(names)} feature names.")
        set_(self, "feature_names", names)
        k = leaf_value.shape[1]
        outs = tuple(str(s) for s in self.output_names) or tuple(f"y{j}" for j in range(k))
        if len(outs) != k:
            raise ValueError(f"Tree has {k} outputs but {len(outs)} output names.")
        set_(self, "output_names", outs)
        try:  # kept in its JSON form, so that a JSON round trip gives back an equal Tree
            meta = json.loads(json.dumps(dict(self.meta), default=json_default, allow_nan=False))
        except (TypeError, ValueError) as err:
            raise ValueError("Tree.meta must hold only JSON values (finite numbers, text, lists, dicts): "
                             f"{err}") from None
        set_(self, "meta", meta)
        self._check_structure()

    def _check_structure(self) -> None:
        left, right = self.children_left, self.children_right
        n = left.shape[0]
        is_leaf = left < 0
        if np.any(is_leaf != (right < 0)):
            raise ValueError("Every node must have either two children or none.")
        kids = np.concatenate([left[~is_leaf], right[~is_leaf]])
        if kids.size and (kids.min() < 1 or kids.max() >= n):
            raise ValueError("Child indices must point to existing non-root nodes.")
        if np.unique(kids).size != kids.size or kids.size != n - 1:
            raise ValueError("Every node except the root must have exactly one parent.")
        # Reachability from the root rules out cycles (n-1 edges + connected = a tree).
        if self.node_depth.min() < 0:
            raise ValueError("Some nodes are not reachable from the root.")
        leaves = np.flatnonzero(is_leaf)
        if not np.all(np.isfinite(self.leaf_value[leaves])):
            raise ValueError("Every leaf needs a finite leaf_value.")

    # ------------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        return int(self.children_left.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def n_outputs(self) -> int:
        return int(self.leaf_value.shape[1])

    @cached_property
    def is_leaf(self) -> np.ndarray:
        return self.children_left < 0

    @cached_property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.is_leaf)

    @cached_property
    def decision_nodes(self) -> np.ndarray:
        return np.flatnonzero(~self.is_leaf)

    @property
    def n_leaves(self) -> int:
        return int(self.leaves.size)

    @cached_property
    def parent(self) -> np.ndarray:
        parent = np.full(self.n_nodes, -1, dtype=np.int64)
        internal = self.decision_nodes
        parent[self.children_left[internal]] = internal
        parent[self.children_right[internal]] = internal
        return parent

    @cached_property
    def node_depth(self) -> np.ndarray:
        """Depth of each node (root = 0); -1 for a node not reachable from the root."""
        depth = np.full(self.n_nodes, -1, dtype=np.int64)
        depth[0] = 0
        frontier = np.array([0])
        level = 0
        while frontier.size:
            internal = frontier[self.children_left[frontier] >= 0]
            frontier = np.concatenate(
                [self.children_left[internal], self.children_right[internal]]
            )
            level += 1
            if frontier.size and (depth[frontier] >= 0).any():
                raise ValueError("The child arrays contain a cycle.")
            depth[frontier] = level
            if level > self.n_nodes:
                raise ValueError("The child arrays contain a cycle.")
        return depth

    @property
    def max_depth(self) -> int:
        return int(self.node_depth.max())

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Node ids at each depth, root level first."""
        order = np.argsort(self.node_depth, kind="stable")
        cuts = np.searchsorted(self.node_depth[order], np.arange(1, self.max_depth + 1))
        return np.split(order, cuts)

    def ancestors(self, node: int) -> list[int]:
        """Node ids from the root down to ``node`` (inclusive)."""
        out = [int(node)]
        while self.parent[out[-1]] >= 0:
            out.append(int(self.parent[out[-1]]))
        return out[::-1]

    def subtree_nodes(self, node: int, max_levels: int | None = None) -> np.ndarray:
        """Node ids of the subtree rooted at ``node`` down to ``max_levels`` levels below it."""
        out, frontier, level = [np.array([node])], np.array([node]), 0
        while frontier.size and (max_levels is None or level < max_levels):
            internal = frontier[self.children_left[frontier] >= 0]
            frontier = np.concatenate([self.children_left[internal], self.children_right[internal]])
            out.append(frontier)
            level += 1
        return np.sort(np.concatenate(out))

    def is_axis_aligned(self) -> np.ndarray:
        """Per node: True where the split uses exactly one feature (always False at leaves)."""
        nnz = np.count_nonzero(self.weight, axis=1)
        return (nnz == 1) & ~self.is_leaf

    # ------------------------------------------------------------------ routing (models.ground.routing)
    @cached_property
    def _sparse_weight(self) -> sp.csr_matrix | None:
        return tree_routing.sparse_weight(self)

    @cached_property
    def _uses_feature(self) -> np.ndarray | sp.csr_matrix:
        return tree_routing.feature_pattern(self)

    @cached_property
    def _sparse_rows(self) -> tuple[np.ndarray, np.ndarray]:
        return tree_routing.padded_rows(self)

    def decision_values(self, X: Any) -> np.ndarray:
        """``s = X @ weight.T + bias`` for every node, shape (n_samples, n_nodes); NaN where missing."""
        return tree_routing.decision_values(self, X)

    def paths(self, X: Any) -> np.ndarray:
        """Hard root-to-leaf paths, shape (n_samples, max_depth + 1), padded with -1."""
        return tree_routing.paths(self, X)

    def apply(self, X: Any) -> np.ndarray:
        """Leaf id reached by each sample under hard routing, shape (n_samples,)."""
        return tree_routing.apply(self, X)

    def decision_path(self, X: Any) -> sp.csr_matrix:
        """Node-membership indicator (n_samples, n_nodes) of the hard paths, like scikit-learn."""
        return tree_routing.decision_path(self, X)

    def right_probability(self, S: Any, nodes: Any = None) -> np.ndarray:
        """P(go right) for decision values ``S`` (of ``nodes``, default every node) under this tree's routing."""
        return tree_routing.right_probability(self, S, nodes)

    def reach_probability(self, X: Any) -> np.ndarray:
        """Probability that each sample reaches each node, shape (n_samples, n_nodes)."""
        return tree_routing.reach_probability(self, X)

    def predict_value(self, X: Any) -> np.ndarray:
        """The tree's output per sample, shape (n_samples, n_outputs)."""
        return tree_routing.predict_value(self, X)

    def sample_path(self, x: Any) -> list[PathStep]:
        """The decision nodes on one sample's (most probable) path, root first."""
        return tree_routing.sample_path(self, x)

    # ------------------------------------------------------------------ statistics (models.ground.stats)
    def class_index(self, labels: Any) -> np.ndarray:
        """Positions of class labels (compared as strings) in ``output_names``."""
        return stats.class_index(self, labels)

    def node_stats(self, X: Any, y: Any = None, *, soft: bool | None = None) -> NodeStats:
        """Counts (and class counts or target mean/std) of the samples reaching each node."""
        return stats.node_stats(self, X, y, soft=soft)

    # ------------------------------------------------------------------ size and cost (models.ground.counts)
    @property
    def head_decides(self) -> bool:
        """True when the model predicts from a head on top of the tree, not from the leaf values."""
        return counts.head_decides(self)

    def n_nonzero_weights(self) -> int:
        """Nonzero split weights over active decision nodes, plus a head's nonzero weights."""
        return counts.n_nonzero_weights(self)

    def n_params(self) -> int:
        """Parameter count following the TAO thesis (Zharmagambetov 2022), Appendix A."""
        return counts.n_params(self)

    def flops(self, X: Any) -> float:
        """Mean inference FLOPs per sample, counted as in the TAO thesis, Appendix A."""
        return counts.flops(self, X)

    # ------------------------------------------------------------------ other forms
    def in_input_units(self, mean: Any, scale: Any) -> Tree:
        """The same tree for inputs before an affine scaling ``x_model = (x - mean) / scale``."""
        return units.in_input_units(self, mean, scale)

    def _replace(self, **changes: Any) -> Tree:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Tree(**values)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN written as null) that :meth:`from_dict` turns back exactly."""
        return tree_json.to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tree:
        """The Tree that :meth:`to_dict` wrote."""
        return tree_json.from_dict(cls, data)

    def to_json(self, **dumps_kwargs: Any) -> str:
        return tree_json.to_json(self, **dumps_kwargs)

    @classmethod
    def from_json(cls, text: str) -> Tree:
        return tree_json.from_json(cls, text)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        return (f"Tree(task={self.task!r}, nodes={self.n_nodes}, leaves={self.n_leaves}, depth={self.max_depth}, "
                f"features={self.n_features}, routing={self.routing!r})")

    def _repr_html_(self) -> str | None:
        """The Tree explorer's diagram in a notebook (None, hence the text repr, until ``import treeviz``)."""
        return display.card_html(display.Card(title="Tree", trees=(self,)))

    def equals(self, other: Tree) -> bool:
        """Exact equality of structure, parameters and names (NaN equal to NaN)."""
        if not isinstance(other, Tree):
            return False
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if a is None or b is None or a.shape != b.shape:
                    return False
                if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                    return False
            elif a != b:
                return False
        return True

