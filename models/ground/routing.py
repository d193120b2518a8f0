"""Routing samples through a :class:`~models.ground.tree.Tree`: decision values, hard paths, soft
reach probabilities and the tree's output, under the conventions of the tree module.

Each function takes the tree first; :class:`Tree`'s methods of the same names call them. Inputs are
checked once (:func:`check_X`): a 2-D float64 array, or scipy.sparse made CSR and routed in row
blocks of :data:`_CHUNK_ROWS`, each made dense, so no whole dense copy is made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from models.ground.errors import TreevizError

if TYPE_CHECKING:
    from models.ground.tree import Tree

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


# ---------------------------------------------------------------------- inputs
def check_X(tree: Tree, X: Any) -> np.ndarray | sp.csr_array:
    """``X`` as a 2-D float64 array, or as CSR when it is scipy.sparse (routed in row blocks
    of :data:`_CHUNK_ROWS`, each made dense, so no whole dense copy is made)."""
    if sp.issparse(X):
        return _check_sparse_X(tree, X)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != tree.n_features:
        raise TreevizError(
            f"The tree expects {tree.n_features} features but the data has "
            f"{X.shape[-1] if X.ndim else 0}; use data prepared the same way as for training."
        )
    if np.isinf(X).any():
        raise TreevizError(
            "The data contains infinite values; prepare it the same way as the training data "
            "before routing it (missing values may stay NaN)."
        )
    return X


def _check_sparse_X(tree: Tree, X: Any) -> sp.csr_array:
    if X.ndim != 2 or X.shape[1] != tree.n_features:
        raise TreevizError(
            f"The tree expects {tree.n_features} features but the data has {X.shape[-1]}; use data "
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


def by_row_blocks(fn: Any, X: np.ndarray | sp.csr_array) -> np.ndarray:
    """``fn`` (dense rows -> one result row per row) applied to checked ``X``: at once when
    dense, else block by block of :data:`_CHUNK_ROWS` rows made dense."""
    if not sp.issparse(X):
        return fn(X)
    starts = range(0, X.shape[0], _CHUNK_ROWS) if X.shape[0] else [0]
    return np.concatenate([fn(X[s : s + _CHUNK_ROWS].toarray()) for s in starts])


# ---------------------------------------------------------------------- weights, as routing reads them
def sparse_weight(tree: Tree) -> sp.csr_matrix | None:
    """The split weights as CSR when they are sparse enough for a sparse matmul to pay, else None."""
    density = np.count_nonzero(tree.weight) / max(1, tree.weight.size)
    return sp.csr_matrix(tree.weight) if density < _SPARSE_DENSITY else None


def feature_pattern(tree: Tree) -> np.ndarray | sp.csr_matrix:
    """(n_nodes, n_features) 0/1 pattern of nonzero weights (sparse like the weights)."""
    if tree._sparse_weight is not None:
        pattern = tree._sparse_weight.copy()
        pattern.data = np.ones_like(pattern.data)
        return pattern
    return (tree.weight != 0).astype(np.float64)


def padded_rows(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """Each node's nonzero weights as padded (n_nodes, m) feature indexes and values, where
    m is the largest number of nonzeros of any node (1 for axis-aligned trees)."""
    rows, cols = np.nonzero(tree.weight)
    counts = np.bincount(rows, minlength=tree.n_nodes)
    width = max(1, int(counts.max()) if counts.size else 1)
    slot = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    feat = np.zeros((tree.n_nodes, width), dtype=np.int64)
    val = np.zeros((tree.n_nodes, width))
    feat[rows, slot] = cols
    val[rows, slot] = tree.weight[rows, cols]
    return feat, val


# ---------------------------------------------------------------------- decision values and hard paths
def decision_values(tree: Tree, X: Any) -> np.ndarray:
    """``s = X @ weight.T + bias`` for every node, shape (n_samples, n_nodes).

    NaN where the value is missing: a feature with a nonzero weight in that node is NaN for
    that sample (NaN in a feature the node does not use is ignored). Values at leaves are
    meaningless (their weight rows are zero) and left as ``bias``.
    """
    X = check_X(tree, X)
    out = np.empty((X.shape[0], tree.n_nodes))
    ws = tree._sparse_weight
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
            out[rows] = block @ tree.weight.T
        if has_nan:
            missing = np.asarray((tree._uses_feature @ nan.T.astype(np.float64)).T) > 0
            np.copyto(out[rows], np.nan, where=missing)
    out += tree.bias
    return out


def route(tree: Tree, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hard paths and the decision value at each step, level by level, for dense checked ``X``.

    Only the node a sample sits at is evaluated, from that node's nonzero weights, so the
    cost is n_samples × depth × (nonzeros per node) rather than n_samples × n_nodes × d.
    Padding slots hold weight 0 on feature 0. NaN inputs are read as 0 so that a padding slot
    or a zero weight adds an exact 0; a step whose node uses a NaN feature has value NaN and
    goes right iff ``missing_right`` says so.
    """
    n = X.shape[0]
    feat, val = tree._sparse_rows
    nan = np.isnan(X)
    has_nan = bool(nan.any())
    if has_nan:
        X = np.where(nan, 0.0, X)
    paths = np.full((n, tree.max_depth + 1), -1, dtype=np.int64)
    values = np.full((n, tree.max_depth), np.nan)
    node = np.zeros(n, dtype=np.int64)
    paths[:, 0] = 0
    active = np.arange(n)
    for level in range(1, tree.max_depth + 1):
        active = active[~tree.is_leaf[node[active]]]
        if active.size == 0:
            break
        cur = node[active]
        cols = feat[cur]
        s = np.einsum("ij,ij->i", X[active[:, None], cols], val[cur]) + tree.bias[cur]
        right = s > 0
        if has_nan:
            missing = (nan[active[:, None], cols] & (val[cur] != 0)).any(axis=1)
            s[missing] = np.nan
            right = np.where(missing, tree.missing_right[cur], right)
        values[active, level - 1] = s
        node[active] = np.where(right, tree.children_right[cur], tree.children_left[cur])
        paths[active, level] = node[active]
    return paths, values


def paths(tree: Tree, X: Any) -> np.ndarray:
    """Hard root-to-leaf paths, shape (n_samples, max_depth + 1), padded with -1.

    For soft trees this is the most probable branch at every node (S(s) > 1/2 iff s > 0). A
    missing value follows ``missing_right``.
    """
    return by_row_blocks(lambda rows: route(tree, rows)[0], check_X(tree, X))


def apply(tree: Tree, X: Any) -> np.ndarray:
    """Leaf id reached by each sample under hard routing, shape (n_samples,)."""
    found = paths(tree, X)
    last = (found >= 0).sum(axis=1) - 1
    return found[np.arange(found.shape[0]), last]


def decision_path(tree: Tree, X: Any) -> sp.csr_matrix:
    """Node-membership indicator (n_samples, n_nodes) of the hard paths, like scikit-learn."""
    found = paths(tree, X)
    rows, cols = np.nonzero(found >= 0)
    return sp.csr_matrix(
        (np.ones(rows.size, dtype=np.int8), (rows, found[rows, cols])),
        shape=(found.shape[0], tree.n_nodes),
    )


def sample_path(tree: Tree, x: Any) -> list[PathStep]:
    """The decision nodes on one sample's (most probable) path, root first."""
    X = check_X(tree, x)
    if X.shape[0] != 1:
        raise TreevizError("sample_path takes exactly one sample.")
    X = X.toarray() if sp.issparse(X) else X
    found, values = route(tree, X)
    steps = []
    for level, node in enumerate(found[0]):
        if node < 0 or tree.is_leaf[node]:
            break
        s = float(values[0, level])
        right = bool(tree.missing_right[node]) if math.isnan(s) else s > 0
        steps.append(
            PathStep(
                node=int(node),
                depth=int(tree.node_depth[node]),
                value=s,
                goes_right=right,
                p_right=float(right_probability(tree, np.array([s]), [node])[0]),
            )
        )
    return steps


# ---------------------------------------------------------------------- soft routing and outputs
def right_probability(tree: Tree, S: Any, nodes: Any = None) -> np.ndarray:
    """P(go right) for decision values ``S`` under this tree's routing.

    ``nodes`` names the node of each entry along the last axis of ``S`` (default: every node
    in order, as :func:`decision_values` returns them). A NaN value is missing and goes right
    with probability ``missing_right[node]``, exactly 0 or 1.
    """
    S = np.asarray(S, dtype=np.float64)
    missing = np.isnan(S)
    if missing.any():
        S = np.where(missing, 0.0, S)
    if tree.routing == "hard":
        p = (S > 0).astype(np.float64)
    elif tree.activation == "smoothstep":
        p = smoothstep(S, tree.activation_width)
    else:
        p = sigmoid(S)
    if missing.any():
        go_right = tree.missing_right if nodes is None else tree.missing_right[np.asarray(nodes)]
        p = np.where(missing, go_right.astype(np.float64), p)
    return p


def reach_probability(tree: Tree, X: Any) -> np.ndarray:
    """Probability that each sample reaches each node, shape (n_samples, n_nodes).

    Hard routing gives 0/1 entries; soft routing multiplies branch probabilities down each path.
    """
    S = decision_values(tree, X)
    p_right = right_probability(tree, S)
    reach = np.zeros_like(S)
    reach[:, 0] = 1.0
    for nodes in tree.levels:
        internal = nodes[~tree.is_leaf[nodes]]
        if internal.size == 0:
            continue
        p = reach[:, internal]
        reach[:, tree.children_right[internal]] = p * p_right[:, internal]
        reach[:, tree.children_left[internal]] = p * (1.0 - p_right[:, internal])
    return reach


def predict_value(tree: Tree, X: Any) -> np.ndarray:
    """The tree's output per sample, shape (n_samples, n_outputs).

    Hard routing: the value of the leaf reached. Soft routing: the leaf values weighted by the
    probability of reaching each leaf. Linear leaves add ``leaf_weight[leaf] @ x``, which is
    NaN when a feature with a nonzero leaf weight is NaN.
    """
    return by_row_blocks(lambda rows: _predict_rows(tree, rows), check_X(tree, X))


def _predict_rows(tree: Tree, X: np.ndarray) -> np.ndarray:
    if tree.routing == "hard":
        leaf = apply(tree, X)
        out = tree.leaf_value[leaf].copy()
        if tree.leaf_weight is not None:
            out += _linear_terms("nkd,nd->nk", tree.leaf_weight[leaf], X)
        return out
    reach = reach_probability(tree, X)[:, tree.leaves]
    out = reach @ tree.leaf_value[tree.leaves]
    if tree.leaf_weight is not None:
        per_leaf = _linear_terms("lkd,nd->nlk", tree.leaf_weight[tree.leaves], X)
        # a leaf the sample cannot reach adds nothing, even when its linear term is NaN
        per_leaf = np.where(reach[:, :, None] > 0, per_leaf, 0.0)
        out += np.einsum("nl,nlk->nk", reach, per_leaf)
    return out


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
