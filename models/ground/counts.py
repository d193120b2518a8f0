"""A tree's size and inference cost, counted as in the TAO thesis (Zharmagambetov 2022), Appendix A.

Only active nodes (``active > 0``) count. Where a head decides (``meta["prediction"] == "head"``),
its own counts (``meta["head"]``) are added and the leaf values, which then only describe the rows
reaching each leaf, are no parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from models.ground import routing

if TYPE_CHECKING:
    from models.ground.tree import Tree


def head_decides(tree: Tree) -> bool:
    """True when the model predicts from a head on top of the tree, not from the leaf values."""
    return tree.meta.get("prediction", "leaf_value") == "head"


def _head(tree: Tree, key: str) -> int:
    head = tree.meta.get("head") if head_decides(tree) else None
    return int(head.get(key, 0)) if isinstance(head, dict) else 0


def n_nonzero_weights(tree: Tree) -> int:
    """Nonzero split weights over active decision nodes (leaf weights excluded), plus a head's
    nonzero weights (``meta["head"]``)."""
    nodes = tree.decision_nodes[tree.active[tree.decision_nodes] > 0]
    return int(np.count_nonzero(tree.weight[nodes])) + _head(tree, "nonzero_weights")


def n_params(tree: Tree) -> int:
    """Parameter count following the TAO thesis (Zharmagambetov 2022), Appendix A.

    Decision node: nonzero weights + 1 bias (axis-aligned = 2). Constant leaf: n_outputs.
    Linear leaf: nonzero leaf weights + n_outputs. Only active nodes count. Feature indexes of
    sparse weights are not counted (one per nonzero weight, :func:`n_nonzero_weights`). Where a
    head decides, its parameters count and the leaf values (descriptions, no parameters) do not.
    """
    counted = tree.active > 0
    dec = tree.decision_nodes[counted[tree.decision_nodes]]
    leaves = tree.leaves[counted[tree.leaves]]
    total = int(np.count_nonzero(tree.weight[dec])) + dec.size
    if head_decides(tree):
        return int(total) + _head(tree, "parameters")
    total += leaves.size * tree.n_outputs
    if tree.leaf_weight is not None:
        total += int(np.count_nonzero(tree.leaf_weight[leaves]))
    return int(total)


def flops(tree: Tree, X: Any) -> float:
    """Mean inference FLOPs per sample, counted as in the TAO thesis, Appendix A.

    Sum over decision nodes on the sample's path of nnz(weight), plus nnz(leaf weights) for a
    linear leaf; axis-aligned nodes count 1 and constant leaves 0. Soft trees visit every
    node, so each sample pays for the whole tree. A head adds its own count per row
    (``meta["head"]["flops"]``: one multiply-add per nonzero weight).
    """
    X = routing.check_X(tree, X)
    nnz_node = np.count_nonzero(tree.weight, axis=1).astype(np.float64)
    if tree.leaf_weight is not None:
        nnz_node = nnz_node + np.count_nonzero(tree.leaf_weight.reshape(tree.n_nodes, -1), axis=1)
    head = float(_head(tree, "flops"))
    if tree.routing == "soft":
        return float(nnz_node.sum()) + head
    paths = routing.paths(tree, X)
    per_sample = np.where(paths >= 0, nnz_node[np.maximum(paths, 0)], 0.0).sum(axis=1)
    return float(per_sample.mean()) + head if per_sample.size else 0.0
