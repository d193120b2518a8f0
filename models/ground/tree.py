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
import math
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from models.ground.errors import TreevizError
from models.ground.jsonio import check_version, json_default

ROUTINGS = ("hard", "soft")
ACTIVATIONS = ("sigmoid", "smoothstep")
TASKS = ("classification", "regression", "clustering", "embedding")
FORMAT_VERSION = 1
#: The oldest tree description version :meth:`Tree.from_dict` reads (``FORMAT_VERSION`` is the newest).
MIN_FORMAT_VERSION = 1

# Above this density a dense matmul beats a sparse one for decision values.
_SPARSE_DENSITY = 0.1
# Rows of X processed at once when computing decision values, to bound memory.
_CHUNK_ROWS = 8192


@dataclass(frozen=True)
class PathStep:
    """One decision node on a sample's root-to-leaf path."""

    node: int
    depth: int
    value: float  # decision value s(x) = weight @ x + bias; NaN when missing
    goes_right: bool
    p_right: float  # 1.0 / 0.0 for hard routing


@dataclass(frozen=True)
class NodeStats:
    """Per-node statistics of a data set routed through a tree.

    ``count[i]`` is the number of samples reaching node ``i`` (a sum of reach probabilities for
    soft routing). ``class_counts[i, k]`` counts samples of class index ``k`` (classification).
    ``value_mean`` / ``value_std`` are the mean and standard deviation of the target among the
    samples reaching each node (regression), NaN where no sample arrives.
    """

    count: np.ndarray
    class_counts: np.ndarray | None = None
    value_mean: np.ndarray | None = None
    value_std: np.ndarray | None = None

    @property
    def class_fraction(self) -> np.ndarray | None:
        if self.class_counts is None:
            return None
        total = self.class_counts.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, self.class_counts / np.where(total > 0, total, 1), 0.0)


def smoothstep(t: np.ndarray, width: float = 1.0) -> np.ndarray:
    """The smooth-step S(t) = 3u^2 - 2u^3 with u = clip(t / width + 1/2, 0, 1).

    Exactly 0 for t <= -width/2 and exactly 1 for t >= width/2.
    """
    u = np.clip(np.asarray(t, dtype=np.float64) / width + 0.5, 0.0, 1.0)
    return u * u * (3.0 - 2.0 * u)


def sigmoid(t: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    t = np.asarray(t, dtype=np.float64)
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


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

    # ------------------------------------------------------------------ routing
    def _check_X(self, X: Any) -> np.ndarray | sp.csr_array:
        """``X`` as a 2-D float64 array, or as CSR when it is scipy.sparse (routed in row blocks
        of :data:`_CHUNK_ROWS`, each made dense, so no whole dense copy is made)."""
        if sp.issparse(X):
            return self._check_sparse_X(X)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise TreevizError(
                f"The tree expects {self.n_features} features but the data has "
                f"{X.shape[-1] if X.ndim else 0}; use data prepared the same way as for training."
            )
        if np.isinf(X).any():
            raise TreevizError(
                "The data contains infinite values; prepare it the same way as the training data "
                "before routing it (missing values may stay NaN)."
            )
        return X

    def _check_sparse_X(self, X: Any) -> sp.csr_array:
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise TreevizError(
                f"The tree expects {self.n_features} features but the data has {X.shape[-1]}; use data "
                "prepared the same way as for training."
            )
        if X.dtype.kind not in "biuf":
            raise TreevizError(f"The sparse data holds {X.dtype} values; the tree needs numbers.")
        X = sp.csr_array(X, dtype=np.float64)
        if np.isinf(X.data).any():
            raise TreevizError(
                "The data contains infinite values; prepare it the same way as the training data "
                "before routing it (missing values may stay NaN)."
            )
        return X

    def _by_row_blocks(self, fn: Any, X: np.ndarray | sp.csr_array) -> np.ndarray:
        """``fn`` (dense rows -> one result row per row) applied to checked ``X``: at once when
        dense, else block by block of :data:`_CHUNK_ROWS` rows made dense."""
        if not sp.issparse(X):
            return fn(X)
        starts = range(0, X.shape[0], _CHUNK_ROWS) if X.shape[0] else [0]
        return np.concatenate([fn(X[s : s + _CHUNK_ROWS].toarray()) for s in starts])

    @cached_property
    def _sparse_weight(self) -> sp.csr_matrix | None:
        density = np.count_nonzero(self.weight) / max(1, self.weight.size)
        return sp.csr_matrix(self.weight) if density < _SPARSE_DENSITY else None

    @cached_property
    def _uses_feature(self) -> np.ndarray | sp.csr_matrix:
        """(n_nodes, n_features) 0/1 pattern of nonzero weights (sparse like the weights)."""
        if self._sparse_weight is not None:
            pattern = self._sparse_weight.copy()
            pattern.data = np.ones_like(pattern.data)
            return pattern
        return (self.weight != 0).astype(np.float64)

    def decision_values(self, X: Any) -> np.ndarray:
        """``s = X @ weight.T + bias`` for every node, shape (n_samples, n_nodes).

        NaN where the value is missing: a feature with a nonzero weight in that node is NaN for
        that sample (NaN in a feature the node does not use is ignored). Values at leaves are
        meaningless (their weight rows are zero) and left as ``bias``.
        """
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.n_nodes))
        ws = self._sparse_weight
        for start in range(0, X.shape[0], _CHUNK_ROWS):
            block = X[start : start + _CHUNK_ROWS]
            block = block.toarray() if sp.issparse(block) else block
            rows = slice(start, start + block.shape[0])
            nan = np.isnan(block)
            has_nan = nan.any()
            if has_nan:
                # 0 * NaN is NaN in a matmul: compute with NaN as 0, then mark what is missing.
                block = np.where(nan, 0.0, block)
            if ws is not None:
                out[rows] = (ws @ block.T).T
            else:
                out[rows] = block @ self.weight.T
            if has_nan:
                missing = np.asarray((self._uses_feature @ nan.T.astype(np.float64)).T) > 0
                np.copyto(out[rows], np.nan, where=missing)
        out += self.bias
        return out

    @cached_property
    def _sparse_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Each node's nonzero weights as padded (n_nodes, m) feature indexes and values, where
        m is the largest number of nonzeros of any node (1 for axis-aligned trees)."""
        rows, cols = np.nonzero(self.weight)
        counts = np.bincount(rows, minlength=self.n_nodes)
        width = max(1, int(counts.max()) if counts.size else 1)
        slot = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
        feat = np.zeros((self.n_nodes, width), dtype=np.int64)
        val = np.zeros((self.n_nodes, width))
        feat[rows, slot] = cols
        val[rows, slot] = self.weight[rows, cols]
        return feat, val

    def _route(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hard paths and the decision value at each step, level by level.

        Only the node a sample sits at is evaluated, from that node's nonzero weights, so the
        cost is n_samples × depth × (nonzeros per node) rather than n_samples × n_nodes × d.
        Padding slots hold weight 0 on feature 0. NaN inputs are read as 0 so that a padding slot
        or a zero weight adds an exact 0; a step whose node uses a NaN feature has value NaN and
        goes right iff ``missing_right`` says so.
        """
        n = X.shape[0]
        feat, val = self._sparse_rows
        nan = np.isnan(X)
        has_nan = bool(nan.any())
        if has_nan:
            X = np.where(nan, 0.0, X)
        paths = np.full((n, self.max_depth + 1), -1, dtype=np.int64)
        values = np.full((n, self.max_depth), np.nan)
        node = np.zeros(n, dtype=np.int64)
        paths[:, 0] = 0
        active = np.arange(n)
        for level in range(1, self.max_depth + 1):
            active = active[~self.is_leaf[node[active]]]
            if active.size == 0:
                break
            cur = node[active]
            cols = feat[cur]
            s = np.einsum("ij,ij->i", X[active[:, None], cols], val[cur]) + self.bias[cur]
            right = s > 0
            if has_nan:
                missing = (nan[active[:, None], cols] & (val[cur] != 0)).any(axis=1)
                s[missing] = np.nan
                right = np.where(missing, self.missing_right[cur], right)
            values[active, level - 1] = s
            node[active] = np.where(right, self.children_right[cur], self.children_left[cur])
            paths[active, level] = node[active]
        return paths, values

    def paths(self, X: Any) -> np.ndarray:
        """Hard root-to-leaf paths, shape (n_samples, max_depth + 1), padded with -1.

        For soft trees this is the most probable branch at every node (S(s) > 1/2 iff s > 0). A
        missing value follows ``missing_right``.
        """
        return self._by_row_blocks(lambda rows: self._route(rows)[0], self._check_X(X))

    def apply(self, X: Any) -> np.ndarray:
        """Leaf id reached by each sample under hard routing, shape (n_samples,)."""
        paths = self.paths(X)
        last = (paths >= 0).sum(axis=1) - 1
        return paths[np.arange(paths.shape[0]), last]

    def decision_path(self, X: Any) -> sp.csr_matrix:
        """Node-membership indicator (n_samples, n_nodes) of the hard paths, like scikit-learn."""
        paths = self.paths(X)
        rows, cols = np.nonzero(paths >= 0)
        return sp.csr_matrix(
            (np.ones(rows.size, dtype=np.int8), (rows, paths[rows, cols])),
            shape=(paths.shape[0], self.n_nodes),
        )

    def right_probability(self, S: Any, nodes: Any = None) -> np.ndarray:
        """P(go right) for decision values ``S`` under this tree's routing.

        ``nodes`` names the node of each entry along the last axis of ``S`` (default: every node
        in order, as :meth:`decision_values` returns them). A NaN value is missing and goes right
        with probability ``missing_right[node]``, exactly 0 or 1.
        """
        S = np.asarray(S, dtype=np.float64)
        missing = np.isnan(S)
        if missing.any():
            S = np.where(missing, 0.0, S)
        if self.routing == "hard":
            p = (S > 0).astype(np.float64)
        elif self.activation == "smoothstep":
            p = smoothstep(S, self.activation_width)
        else:
            p = sigmoid(S)
        if missing.any():
            go_right = self.missing_right if nodes is None else self.missing_right[np.asarray(nodes)]
            p = np.where(missing, go_right.astype(np.float64), p)
        return p

    def reach_probability(self, X: Any) -> np.ndarray:
        """Probability that each sample reaches each node, shape (n_samples, n_nodes).

        Hard routing gives 0/1 entries; soft routing multiplies branch probabilities down each path.
        """
        S = self.decision_values(X)
        p_right = self.right_probability(S)
        reach = np.zeros_like(S)
        reach[:, 0] = 1.0
        for nodes in self.levels:
            internal = nodes[~self.is_leaf[nodes]]
            if internal.size == 0:
                continue
            p = reach[:, internal]
            reach[:, self.children_right[internal]] = p * p_right[:, internal]
            reach[:, self.children_left[internal]] = p * (1.0 - p_right[:, internal])
        return reach

    def predict_value(self, X: Any) -> np.ndarray:
        """The tree's output per sample, shape (n_samples, n_outputs).

        Hard routing: the value of the leaf reached. Soft routing: the leaf values weighted by the
        probability of reaching each leaf. Linear leaves add ``leaf_weight[leaf] @ x``, which is
        NaN when a feature with a nonzero leaf weight is NaN.
        """
        return self._by_row_blocks(self._predict_rows, self._check_X(X))

    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        if self.routing == "hard":
            leaf = self.apply(X)
            out = self.leaf_value[leaf].copy()
            if self.leaf_weight is not None:
                out += _linear_terms("nkd,nd->nk", self.leaf_weight[leaf], X)
            return out
        reach = self.reach_probability(X)[:, self.leaves]
        out = reach @ self.leaf_value[self.leaves]
        if self.leaf_weight is not None:
            per_leaf = _linear_terms("lkd,nd->nlk", self.leaf_weight[self.leaves], X)
            # a leaf the sample cannot reach adds nothing, even when its linear term is NaN
            per_leaf = np.where(reach[:, :, None] > 0, per_leaf, 0.0)
            out += np.einsum("nl,nlk->nk", reach, per_leaf)
        return out

    def class_index(self, labels: Any) -> np.ndarray:
        """Positions of class labels (compared as strings) in ``output_names``.

        Estimators may order classes differently from a dataset, so statistics and figures map
        labels through this rather than assuming the dataset's class order.
        """
        labels = np.asarray(labels).astype(str)
        uniq, inverse = np.unique(labels, return_inverse=True)
        lookup = {name: i for i, name in enumerate(self.output_names)}
        missing = [str(u) for u in uniq if u not in lookup]
        if missing:
            raise TreevizError(
                f"Class {missing[0]!r} is not one of this tree's outputs "
                f"({', '.join(self.output_names[:10])}); use the data the tree was trained on."
            )
        return np.array([lookup[u] for u in uniq], dtype=np.int64)[inverse.reshape(-1)]

    # ------------------------------------------------------------------ statistics
    def node_stats(self, X: Any, y: Any = None, *, soft: bool | None = None) -> NodeStats:
        """Counts (and class counts or target mean/std) of the samples reaching each node.

        Parameters
        ----------
        X : array (n_samples, n_features)
        y : array, optional
            Class indices ``0..n_outputs-1`` for classification, or target values (1-D) for
            regression. Ignored for clustering and embedding trees (their leaves hold cluster or
            embedding outputs, not labels).
        soft : bool, optional
            Weight samples by their reach probability. Defaults to True for soft trees.
        """
        soft = self.routing == "soft" if soft is None else soft
        X = self._check_X(X)
        if soft:
            weights = self.reach_probability(X)  # (n, n_nodes), dense
        else:
            # sparse (n, n_nodes) membership: deep trees on large data stay cheap
            weights = self.decision_path(X).astype(np.float64)
        count = np.asarray(weights.sum(axis=0)).reshape(-1)
        if y is None or self.task in ("clustering", "embedding"):
            return NodeStats(count=count)
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise TreevizError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
        if self.task == "classification":
            y = y.astype(np.int64)
            k = self.n_outputs
            if y.size and (y.min() < 0 or y.max() >= k):
                raise TreevizError(f"Class indices must lie in 0..{k - 1} for this tree.")
            onehot = sp.csr_matrix((np.ones(y.size), (np.arange(y.size), y)), shape=(y.size, k))
            counts = weights.T @ onehot
            return NodeStats(count=count, class_counts=counts.toarray() if sp.issparse(counts) else counts)
        yv = y.astype(np.float64).reshape(y.shape[0], -1)[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.asarray(weights.T @ yv).reshape(-1) / count
            second = np.asarray(weights.T @ (yv * yv)).reshape(-1) / count
        std = np.sqrt(np.maximum(second - mean * mean, 0.0))
        return NodeStats(count=count, value_mean=mean, value_std=std)

    # ------------------------------------------------------------------ paths
    def sample_path(self, x: Any) -> list[PathStep]:
        """The decision nodes on one sample's (most probable) path, root first."""
        X = self._check_X(x)
        if X.shape[0] != 1:
            raise TreevizError("sample_path takes exactly one sample.")
        X = X.toarray() if sp.issparse(X) else X
        paths, values = self._route(X)
        steps = []
        for level, node in enumerate(paths[0]):
            if node < 0 or self.is_leaf[node]:
                break
            s = float(values[0, level])
            right = bool(self.missing_right[node]) if math.isnan(s) else s > 0
            steps.append(
                PathStep(
                    node=int(node),
                    depth=int(self.node_depth[node]),
                    value=s,
                    goes_right=right,
                    p_right=float(self.right_probability(np.array([s]), [node])[0]),
                )
            )
        return steps

    # ------------------------------------------------------------------ size and cost
    def _counted(self) -> np.ndarray:
        return self.active > 0

    @property
    def head_decides(self) -> bool:
        """True when the model predicts from a head on top of the tree, not from the leaf values."""
        return self.meta.get("prediction", "leaf_value") == "head"

    def _head(self, key: str) -> int:
        head = self.meta.get("head") if self.head_decides else None
        return int(head.get(key, 0)) if isinstance(head, dict) else 0

    def n_nonzero_weights(self) -> int:
        """Nonzero split weights over active decision nodes (leaf weights excluded), plus a head's
        nonzero weights (``meta["head"]``)."""
        nodes = self.decision_nodes[self._counted()[self.decision_nodes]]
        return int(np.count_nonzero(self.weight[nodes])) + self._head("nonzero_weights")

    def n_params(self) -> int:
        """Parameter count following the TAO thesis (Zharmagambetov 2022), Appendix A.

        Decision node: nonzero weights + 1 bias (axis-aligned = 2). Constant leaf: n_outputs.
        Linear leaf: nonzero leaf weights + n_outputs. Only active nodes count. Feature indexes of
        sparse weights are not counted (one per nonzero weight, :meth:`n_nonzero_weights`). Where a
        head decides, its parameters count and the leaf values (descriptions, no parameters) do not.
        """
        counted = self._counted()
        dec = self.decision_nodes[counted[self.decision_nodes]]
        leaves = self.leaves[counted[self.leaves]]
        total = int(np.count_nonzero(self.weight[dec])) + dec.size
        if self.head_decides:
            return int(total) + self._head("parameters")
        total += leaves.size * self.n_outputs
        if self.leaf_weight is not None:
            total += int(np.count_nonzero(self.leaf_weight[leaves]))
        return int(total)

    def flops(self, X: Any) -> float:
        """Mean inference FLOPs per sample, counted as in the TAO thesis, Appendix A.

        Sum over decision nodes on the sample's path of nnz(weight), plus nnz(leaf weights) for a
        linear leaf; axis-aligned nodes count 1 and constant leaves 0. Soft trees visit every
        node, so each sample pays for the whole tree. A head adds its own count per row
        (``meta["head"]["flops"]``: one multiply-add per nonzero weight).
        """
        X = self._check_X(X)
        nnz_node = np.count_nonzero(self.weight, axis=1).astype(np.float64)
        if self.leaf_weight is not None:
            nnz_node = nnz_node + np.count_nonzero(self.leaf_weight.reshape(self.n_nodes, -1), axis=1)
        head = float(self._head("flops"))
        if self.routing == "soft":
            return float(nnz_node.sum()) + head
        paths = self.paths(X)
        per_sample = np.where(paths >= 0, nnz_node[np.maximum(paths, 0)], 0.0).sum(axis=1)
        return float(per_sample.mean()) + head if per_sample.size else 0.0

    def in_input_units(self, mean: Any, scale: Any) -> Tree:
        """The same tree for inputs before an affine scaling ``x_model = (x - mean) / scale``.

        Hyperplanes are rewritten exactly in the original units: ``w·((x - μ)/σ) + b`` equals
        ``(w/σ)·x + (b - Σ w μ/σ)``, so rules read in the data's own units (e.g. "petal width >
        0.8"). Routing raw inputs through the result agrees with routing scaled inputs through
        this tree up to floating-point rounding at the thresholds; use it to *show* rules.
        """
        mean = np.asarray(mean, dtype=np.float64).reshape(-1)
        scale = np.asarray(scale, dtype=np.float64).reshape(-1)
        if mean.shape != (self.n_features,) or scale.shape != (self.n_features,):
            raise TreevizError(f"The scaling needs {self.n_features} means and scales.")
        if np.any(scale == 0) or not np.all(np.isfinite(scale)):
            raise TreevizError("Scales must be finite and nonzero.")
        weight = self.weight / scale
        bias = self.bias - weight @ mean
        leaf_weight, leaf_value = self.leaf_weight, self.leaf_value
        if leaf_weight is not None:
            leaf_weight = leaf_weight / scale
            leaf_value = leaf_value - np.where(self.is_leaf[:, None], leaf_weight @ mean, 0.0)
        return self._replace(weight=weight, bias=bias, leaf_weight=leaf_weight, leaf_value=leaf_value)

    def _replace(self, **changes: Any) -> Tree:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Tree(**values)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN written as null) that :meth:`from_dict` turns back exactly."""

        def enc(a: np.ndarray | None) -> Any:
            if a is None:
                return None
            if np.isinf(a).any():
                raise ValueError("A Tree with infinite parameters cannot be written as JSON.")
            obj = a.astype(object)  # Python floats: json writes them with an exact repr
            obj[np.isnan(a)] = None
            return obj.tolist()

        return {
            "format": "treeviz.Tree",
            "version": FORMAT_VERSION,
            "children_left": self.children_left.tolist(),
            "children_right": self.children_right.tolist(),
            "weight": enc(self.weight),
            "bias": enc(self.bias),
            "leaf_value": enc(self.leaf_value),
            "active": enc(self.active),
            "leaf_weight": enc(self.leaf_weight),
            "routing": self.routing,
            "activation": self.activation,
            "activation_width": self.activation_width,
            "feature_names": list(self.feature_names),
            "output_names": list(self.output_names),
            "task": self.task,
            "family": self.family,
            "meta": self.meta,
            "missing_right": self.missing_right.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tree:
        """The Tree that :meth:`to_dict` wrote. A description without ``missing_right`` (written
        before trees routed missing values) sends every missing value left."""
        if not isinstance(data, dict) or data.get("format") != "treeviz.Tree":
            raise TreevizError("This is not a treeviz tree description (missing 'format').")
        check_version(data, what="This tree description", kind="tree descriptions", oldest=MIN_FORMAT_VERSION,
                      newest=FORMAT_VERSION, again=f"write the tree again with a treeviz that writes version "
                                                  f"{FORMAT_VERSION} (Tree.to_json)")

        def dec(v: Any) -> np.ndarray | None:
            if v is None:
                return None
            return np.array(_none_to_nan(v), dtype=np.float64)

        names = {f.name for f in fields(cls)}
        kwargs = {k: data[k] for k in names if k in data}
        for key in ("weight", "bias", "leaf_value", "active", "leaf_weight"):
            kwargs[key] = dec(data.get(key))
        kwargs["feature_names"] = tuple(data.get("feature_names", ()))
        kwargs["output_names"] = tuple(data.get("output_names", ()))
        missing_right = data.get("missing_right")
        if missing_right is not None and (
            not isinstance(missing_right, list) or not all(isinstance(v, bool) for v in missing_right)
        ):
            raise TreevizError("The tree description is inconsistent: missing_right must be a list of booleans.")
        try:
            return cls(**kwargs)
        except (ValueError, TypeError) as err:
            raise TreevizError(f"The tree description is inconsistent: {err}") from err

    def to_json(self, **dumps_kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **dumps_kwargs)

    @classmethod
    def from_json(cls, text: str) -> Tree:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise TreevizError(f"The tree file is not valid JSON ({err.msg}, line {err.lineno}).") from err
        return cls.from_dict(data)

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


def _linear_terms(subscripts: str, weights: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``np.einsum(subscripts, weights, X)`` where a NaN in X spoils only the terms whose weight on
    that feature is nonzero (a plain product would turn 0 * NaN into NaN)."""
    nan = np.isnan(X)
    if not nan.any():
        return np.einsum(subscripts, weights, X)
    out = np.einsum(subscripts, weights, np.where(nan, 0.0, X))
    missing = np.einsum(subscripts, (weights != 0).astype(np.float64), nan.astype(np.float64)) > 0
    out[missing] = np.nan
    return out


def _none_to_nan(v: Any) -> Any:
    if v is None:
        return math.nan
    if isinstance(v, list):
        return [_none_to_nan(u) for u in v]
    return v
