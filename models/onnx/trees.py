"""Hard oblique trees as ONNX nodes: every split value at once, a walk down the tree, the leaf's output.

A node sends x right iff ``weight @ x + bias > 0`` (:mod:`models.ground.tree`). The graph computes
the split values of all decision nodes, then walks from the root, one level per step, taking at
each node the child its split value picks, and reads the reached leaf's value (plus its linear
term for linear and softmax leaves) from a table.

Exactness. A row reaches a different leaf only if a split value rounds to the other side of 0, so
the split values are summed in the estimator's own order where that order is known:

* TAO trees (and LapTAO's and the tree embedding's) route through a compiled loop that adds each
  node's nonzero weight-times-feature terms one after the other, feature by feature, then the
  bias. The graph does the same, one Mul and one Add per term (``sequential=True``): the split
  values, hence the leaves, are bit for bit those of ``predict``.
* :class:`~models.ground.tree.Tree` (CART, DGT, latent-tree clustering) sums each node's nonzero
  terms with ``np.einsum``, which adds one or two terms in order but vectorises longer sums in an
  order of its own. Trees with at most two nonzero weights per node (CART's one-hot rows) are
  therefore summed term by term, exactly; denser ones (DGT, latent trees) by a MatMul, which agrees
  with numpy to rounding (about 1e-16 relative). A row could only change leaf if one of its split
  values were that close to 0.

Leaf values are gathered, never summed, so constant leaves are exact; linear leaves add
``leaf_weight[leaf] @ x`` by ReduceSum, equal to the estimators' BLAS product to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from models.ground.tree import Tree
from models.onnx.graph import Graph
from models.onnx.outputs import axes, rows_of

#: Most nonzero weights per node for which ``np.einsum`` adds the terms in order (checked in the tests).
EINSUM_IN_ORDER = 2


@dataclass(frozen=True)
class HardTree:
    """The arrays of one hard tree, whatever its family: children (-1 at a leaf), split weights and
    biases, leaf values (n_nodes, K), optional leaf weights (n_nodes, K, D), the root, and whether
    the estimator sums split terms in order (see the module docstring)."""

    left: np.ndarray
    right: np.ndarray
    weight: np.ndarray
    bias: np.ndarray
    value: np.ndarray
    leaf_weight: np.ndarray | None = None
    root: int = 0
    sequential: bool = False

    @classmethod
    def from_tree(cls, tree: Tree) -> HardTree:
        """A shared :class:`Tree` with hard routing (predictions through ``Tree.predict_value``)."""
        return cls(tree.children_left, tree.children_right, tree.weight, tree.bias, tree.leaf_value,
                   tree.leaf_weight, 0, sequential=False)

    @classmethod
    def from_tao(cls, tree: Any) -> HardTree:
        """A TAO tree (``tao_tree_``, ``trees_[i]``: left, right, weight, bias, value, leaf_weight, root)."""
        return cls(np.asarray(tree.left), np.asarray(tree.right), np.asarray(tree.weight), np.asarray(tree.bias),
                   np.asarray(tree.value), None if tree.leaf_weight is None else np.asarray(tree.leaf_weight),
                   int(tree.root), sequential=True)

    @property
    def n_outputs(self) -> int:
        return int(np.asarray(self.value).reshape(len(self.left), -1).shape[1])

    def reachable(self) -> tuple[np.ndarray, int]:
        """The nodes reachable from the root (breadth first) and the depth of the deepest."""
        order, depth, frontier = [self.root], 0, [self.root]
        while True:
            frontier = [int(c) for v in frontier if self.left[v] >= 0 for c in (self.left[v], self.right[v])]
            if not frontier:
                return np.array(order, dtype=np.int64), depth
            order += frontier
            depth += 1


def _padded(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nonzero weights in feature order, padded with weight 0 on feature 0:
    (n, width) feature indices and values."""
    rows, cols = np.nonzero(weight)
    counts = np.bincount(rows, minlength=weight.shape[0])
    width = max(1, int(counts.max()) if counts.size else 1)
    slot = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    feat = np.zeros((weight.shape[0], width), dtype=np.int64)
    val = np.zeros((weight.shape[0], width))
    feat[rows, slot] = cols
    val[rows, slot] = weight[rows, cols]
    return feat, val


def split_values(g: Graph, x: str, weight: np.ndarray, bias: np.ndarray, *, sequential: bool) -> str:
    """(N, n) ``x @ weight.T + bias``: term by term in feature order (0 + each nonzero term, then the
    bias, as the compiled routing and short ``np.einsum`` sums add them), or by one MatMul."""
    feat, val = _padded(weight)
    if not sequential and feat.shape[1] > EINSUM_IN_ORDER:
        return g.node("Add", [g.node("MatMul", [x, g.const(weight.T, "split_w")], "wx"), g.const(bias, "split_b")],
                      "split")
    acc = None
    for k in range(feat.shape[1]):
        cols = g.node("Gather", [x, g.const(feat[:, k], "split_feature")], "x_split", axis=1)
        term = g.node("Mul", [cols, g.const(val[:, k], "split_w")], "term")
        acc = term if acc is None else g.node("Add", [acc, term], "wx")
    return g.node("Add", [acc, g.const(bias, "split_b")], "split")


def reached_leaf(g: Graph, x: str, tree: HardTree) -> str:
    """(N,) int64: the node id of the leaf each row reaches (right iff the split value is > 0)."""
    nodes, depth = tree.reachable()
    decision = nodes[tree.left[nodes] >= 0]
    node = rows_of(g, x, np.array(tree.root, dtype=np.int64), "root")
    if decision.size == 0:
        return node
    S = split_values(g, x, np.asarray(tree.weight)[decision], np.asarray(tree.bias)[decision],
                     sequential=tree.sequential)
    n = len(tree.left)
    column = np.zeros(n, dtype=np.int64)
    column[decision] = np.arange(decision.size)
    ids = np.arange(n, dtype=np.int64)
    # a leaf is its own child, so rows that reached a leaf stay there while the others go on down
    left = g.const(np.where(tree.left >= 0, tree.left, ids).astype(np.int64), "left")
    right = g.const(np.where(tree.right >= 0, tree.right, ids).astype(np.int64), "right")
    column = g.const(column, "column")
    zero = g.const(np.array(0.0), "zero")
    for _ in range(depth):
        at = g.node("Unsqueeze", [g.node("Gather", [column, node], "col", axis=0), axes(g, 1)], "col")
        s = g.node("Squeeze", [g.node("GatherElements", [S, at], "s", axis=1), axes(g, 1)], "s")
        goes_right = g.node("Greater", [s, zero], "goes_right")
        node = g.node("Where", [goes_right, g.node("Gather", [right, node], "right_child", axis=0),
                                g.node("Gather", [left, node], "left_child", axis=0)], "node")
    return node


def leaf_outputs(g: Graph, x: str, tree: HardTree, leaf: str) -> str:
    """(N, K) the reached leaf's output: its value, plus ``leaf_weight[leaf] @ x`` for linear leaves."""
    value = np.asarray(tree.value, dtype=np.float64).reshape(len(tree.left), -1)
    is_leaf = np.asarray(tree.left) < 0
    table = np.where(is_leaf[:, None], value, 0.0)  # decision rows are never gathered; keep them finite
    out = g.node("Gather", [g.const(table, "leaf_value"), leaf], "leaf_value", axis=0)
    if tree.leaf_weight is None:
        return out
    W = np.where(is_leaf[:, None, None], np.asarray(tree.leaf_weight, dtype=np.float64), 0.0)
    if not W.any():
        return out
    rows = g.node("Gather", [g.const(W, "leaf_weight"), leaf], "leaf_weight", axis=0)  # (N, K, D)
    terms = g.node("Mul", [rows, g.node("Unsqueeze", [x, axes(g, 1)], "x_row")], "leaf_terms")
    return g.node("Add", [out, g.node("ReduceSum", [terms, axes(g, 2)], "leaf_linear", keepdims=0)], "leaf_output")


def tree_outputs(g: Graph, x: str, tree: HardTree) -> str:
    """(N, K) the tree's output for each row."""
    return leaf_outputs(g, x, tree, reached_leaf(g, x, tree))
