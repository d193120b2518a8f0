"""The tree TAO trains: parameters per node in flat arrays, a root pointer, and routing.

Node ids are those of the initial tree and never change while training: pruning only
re-points a parent (or the root) at one of a node's children, so the trained tree's nodes are
always a subset of the initial tree's (TAO keeps the same or a smaller structure), and the
estimators' ``node_origin_`` (``meta["node_origin"]`` of the exported :class:`models.ground.tree.Tree`)
maps back to them.

Routing follows the one project convention (:mod:`models.ground.tree`): a decision node sends ``x``
right iff ``weight @ x + bias > 0``. The thesis writes ``>= 0``; with ``> 0`` a CART split
``x_j <= t -> left`` converts exactly to ``w = e_j, b = -t`` (no ``nextafter`` needed), and the
same rule is used for training-time reduced sets, pruning, FLOPs and inference. Routing is done
in float64 on the CPU whatever the node solver's device, so reduced sets never depend on it.

Leaves hold ``value`` (n_nodes, K) and, for linear / softmax leaves, ``leaf_weight``
(n_nodes, K, D): the leaf's output is ``value + leaf_weight @ x``. Classification leaves output
class scores; a class a leaf does not model gets the score :data:`ABSENT` and zero weights, so
its softmax probability is exactly 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

# Score of a class a leaf does not model: exp(ABSENT - anything sensible) is exactly 0.0.
ABSENT = -1.0e6


@dataclass
class TAOTree:
    """Mutable parameters of a binary tree under TAO training (see module doc)."""

    left: np.ndarray  # (n,) int64, -1 at a leaf
    right: np.ndarray
    weight: np.ndarray  # (n, D) float64, split hyperplanes (rows of leaves unused, zero)
    bias: np.ndarray  # (n,)
    value: np.ndarray  # (n, K) leaf values / intercepts (rows of decision nodes unused)
    leaf_weight: np.ndarray | None = None  # (n, K, D) for linear / softmax leaves
    root: int = 0

    # ------------------------------------------------------------------ structure
    @property
    def n_slots(self) -> int:
        return int(self.left.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.weight.shape[1])

    def copy(self) -> TAOTree:
        return TAOTree(self.left.copy(), self.right.copy(), self.weight.copy(), self.bias.copy(),
                       self.value.copy(), None if self.leaf_weight is None else self.leaf_weight.copy(),
                       self.root)

    def depths(self) -> np.ndarray:
        """Depth of every node reachable from the root; -1 for nodes no longer in the tree."""
        depth = np.full(self.n_slots, -1, dtype=np.int64)
        depth[self.root] = 0
        frontier = np.array([self.root])
        d = 0
        while frontier.size:
            frontier = frontier[self.left[frontier] >= 0]
            frontier = np.concatenate([self.left[frontier], self.right[frontier]])
            d += 1
            depth[frontier] = d
        return depth

    def reachable(self) -> np.ndarray:
        """Ids of the nodes in the tree, in breadth-first order."""
        order = [self.root]
        i = 0
        while i < len(order):
            v = order[i]
            if self.left[v] >= 0:
                order += [int(self.left[v]), int(self.right[v])]
            i += 1
        return np.array(order, dtype=np.int64)

    def decision_nodes(self) -> np.ndarray:
        nodes = self.reachable()
        return nodes[self.left[nodes] >= 0]

    def leaves(self) -> np.ndarray:
        nodes = self.reachable()
        return nodes[self.left[nodes] < 0]

    def postorder(self) -> np.ndarray:
        """Reachable nodes, children before parents."""
        return self.reachable()[::-1]

    def l1_norm(self) -> float:
        """Σ ‖w_i‖₁ over decision nodes plus Σ ‖W_leaf‖₁ over linear leaves (the penalised part)."""
        total = float(np.abs(self.weight[self.decision_nodes()]).sum())
        if self.leaf_weight is not None:
            total += float(np.abs(self.leaf_weight[self.leaves()]).sum())
        return total

    def n_nonzero(self) -> int:
        """Nonzero split weights over decision nodes (leaf weights excluded)."""
        return int(np.count_nonzero(self.weight[self.decision_nodes()]))

    # ------------------------------------------------------------------ routing
    def _sparse_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The split weights in compressed rows: node i's nonzeros are ``vals[indptr[i]:indptr[i+1]]``
        at features ``cols[...]``."""
        W = self.weight
        mask = W != 0.0
        indptr = np.zeros(W.shape[0] + 1, dtype=np.int64)
        np.cumsum(mask.sum(axis=1), out=indptr[1:])
        cols = np.nonzero(mask)[1].astype(np.int64)  # row-major order
        return indptr, cols, W[mask]

    def decision_values(self, X: np.ndarray, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """``weight[nodes[k]] @ X[rows[k]] + bias[nodes[k]]`` for each k.

        One compiled pass over the rows that reads only each node's nonzero weights, so sparse
        hyperplanes are cheap and nothing is copied per node.
        """
        return _sparse_rows_dot(_c_float64(X), np.asarray(rows, dtype=np.int64), np.asarray(nodes, dtype=np.int64),
                                *self._sparse_weights(), self.bias)

    def route(self, X: np.ndarray, start: np.ndarray | int | None = None) -> list[np.ndarray]:
        """Node of every sample at each level below ``start`` (default: the root).

        Returns ``levels`` with ``levels[d][n]`` the node sample ``n`` is at ``d`` levels below its
        start, or -1 when its path ended (at a leaf) above that level. One compiled pass (right iff
        ``w·x + b > 0``).
        """
        n = X.shape[0]
        if start is None or np.isscalar(start):
            cur = np.full(n, self.root if start is None else int(start), dtype=np.int64)
        else:
            cur = np.asarray(start, dtype=np.int64).copy()
        n_levels = int(self.depths().max()) + 1
        out = _route_rows(_c_float64(X), cur, self.left, self.right, *self._sparse_weights(), self.bias, n_levels)
        used = int(np.max(np.flatnonzero((out >= 0).any(axis=1)), initial=0)) + 1
        return [out[d] for d in range(used)]

    def apply(self, X: np.ndarray, start: np.ndarray | int | None = None) -> np.ndarray:
        """The leaf each sample reaches from ``start`` (default: the root); one compiled pass."""
        n = X.shape[0]
        if start is None or np.isscalar(start):
            cur = np.full(n, self.root if start is None else int(start), dtype=np.int64)
        else:
            cur = np.array(start, dtype=np.int64)
        return _apply_subset(_c_float64(X), np.arange(n, dtype=np.int64), cur, self.left, self.right,
                             *self._sparse_weights(), self.bias)

    def apply_rows(self, X: np.ndarray, rows: np.ndarray, start: np.ndarray) -> np.ndarray:
        """The leaf that sample ``X[rows[k]]`` reaches from node ``start[k]``, for each k: as
        ``apply(X[rows], start)``, without copying the rows."""
        return _apply_subset(_c_float64(X), np.asarray(rows, dtype=np.int64), np.array(start, dtype=np.int64),
                             self.left, self.right, *self._sparse_weights(), self.bias)

    def leaf_scores(self, X: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        """Leaf outputs ``value + leaf_weight @ x`` for the samples ``X`` at ``leaves``."""
        out = np.take(self.value, np.asarray(leaves, dtype=np.int64), axis=0)  # a new array
        if self.leaf_weight is not None:
            for leaf, members in group_rows(leaves):
                W = self.leaf_weight[leaf]
                cols = np.flatnonzero(np.any(W != 0, axis=0))
                if cols.size:
                    out[members] += X[np.ix_(members, cols)] @ W[:, cols].T
        return out

    def members(self, X: np.ndarray) -> dict[int, np.ndarray]:
        """Reduced sets: node id -> indices of the training samples that reach it."""
        out: dict[int, np.ndarray] = {}
        for level in self.route(X):
            for node, idx in group_rows(level):
                if node >= 0:
                    out[int(node)] = idx
        return out

    def splice(self, node: int, keep: int) -> None:
        """Put child ``keep`` (with its whole subtree) in ``node``'s place."""
        if node == self.root:
            self.root = int(keep)
            return
        parent = np.flatnonzero((self.left == node) | (self.right == node))
        for p in parent:
            if self.left[p] == node:
                self.left[p] = keep
            else:
                self.right[p] = keep

    def make_leaf(self, node: int, value: np.ndarray) -> None:
        """Turn ``node`` into a constant leaf with ``value`` (its subtree is dropped)."""
        self.left[node] = -1
        self.right[node] = -1
        self.weight[node] = 0.0
        self.bias[node] = 0.0
        self.value[node] = value
        if self.leaf_weight is not None:
            self.leaf_weight[node] = 0.0


def _c_float64(X: np.ndarray) -> np.ndarray:
    return X if (X.dtype == np.float64 and X.flags.c_contiguous) else np.ascontiguousarray(X, dtype=np.float64)


@njit(cache=True)
def _route_rows(X, cur, left, right, indptr, cols, vals, bias, n_levels):
    n = cur.size
    out = np.full((n_levels, n), -1, dtype=np.int64)
    for r in range(n):
        node = cur[r]
        out[0, r] = node
        d = 0
        while left[node] >= 0 and d + 1 < n_levels:
            acc = 0.0
            for p in range(indptr[node], indptr[node + 1]):
                acc += vals[p] * X[r, cols[p]]
            node = right[node] if acc + bias[node] > 0.0 else left[node]
            d += 1
            out[d, r] = node
    return out


@njit(cache=True)
def _apply_subset(X, rows, cur, left, right, indptr, cols, vals, bias):
    for k in range(cur.size):
        node = cur[k]
        r = rows[k]
        while left[node] >= 0:
            acc = 0.0
            for p in range(indptr[node], indptr[node + 1]):
                acc += vals[p] * X[r, cols[p]]
            node = right[node] if acc + bias[node] > 0.0 else left[node]
        cur[k] = node
    return cur


@njit(cache=True)
def _sparse_rows_dot(X, rows, nodes, indptr, cols, vals, bias):
    out = np.empty(rows.size)
    for k in range(rows.size):
        node = nodes[k]
        r = rows[k]
        acc = 0.0
        for p in range(indptr[node], indptr[node + 1]):
            acc += vals[p] * X[r, cols[p]]
        out[k] = acc + bias[node]  # the dot product first, as every caller computes w·x + b
    return out


def group_rows(labels: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``[(label, indices where labels == label), ...]`` for each distinct label (sorted).

    Integer labels in a range not much wider than their count (node ids, the common case) are
    grouped by a compiled counting sort in O(n); it yields the same indices, in the same order,
    as a stable argsort, which the other labels still use."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return []
    if labels.dtype.kind in "iu" and labels.ndim == 1:
        lo, hi = int(labels.min()), int(labels.max())
        if hi - lo <= 2 * labels.size + 1024:
            order, counts = _counting_order(labels.astype(np.int64, copy=False), lo, hi - lo + 1)
            ends = np.cumsum(counts)
            present = np.flatnonzero(counts)
            return [(lo + int(b), order[ends[b] - counts[b]:ends[b]]) for b in present]
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    cuts = np.flatnonzero(np.diff(sorted_labels)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [labels.size]])
    return [(int(sorted_labels[a]), order[a:b]) for a, b in zip(starts, ends)]


@njit(cache=True)
def _counting_order(labels, lo, n_bins):
    """Stable counting sort of integer ``labels`` in ``[lo, lo + n_bins)``: (order, count per bin)."""
    counts = np.zeros(n_bins, dtype=np.int64)
    for i in range(labels.size):
        counts[labels[i] - lo] += 1
    pos = np.empty(n_bins, dtype=np.int64)
    total = 0
    for b in range(n_bins):
        pos[b] = total
        total += counts[b]
    order = np.empty(labels.size, dtype=np.int64)
    for i in range(labels.size):
        b = labels[i] - lo
        order[pos[b]] = i
        pos[b] += 1
    return order, counts


def complete_tree(depth: int, n_features: int, n_outputs: int, *, linear_leaves: bool = False) -> TAOTree:
    """A complete binary tree of ``depth`` in heap order (children of i are 2i+1 and 2i+2)."""
    n = 2 ** (depth + 1) - 1
    ids = np.arange(n)
    internal = ids < 2**depth - 1
    left = np.where(internal, 2 * ids + 1, -1)
    right = np.where(internal, 2 * ids + 2, -1)
    return TAOTree(left.astype(np.int64), right.astype(np.int64), np.zeros((n, n_features)), np.zeros(n),
                   np.zeros((n, n_outputs)),
                   np.zeros((n, n_outputs, n_features)) if linear_leaves else None, 0)
