"""Pruning: the nodes a trained tree no longer needs, removed without changing its predictions
on the training data.

Node ids are kept: pruning only re-points a parent (or the root) at one of a node's children, or
turns a node into a leaf, so the result is always a subtree of the initial tree.
"""

from __future__ import annotations

import numpy as np

from models.tao.config import TAOConfig
from models.tao.state import TAOTree


def prune(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> int:
    """Remove zero-weight nodes, dead branches and pure subtrees until nothing changes.

    * ``w = 0``: the node sends everything one way (right iff its bias > 0); it is replaced by
      that child's subtree. Predictions do not change for any input.
    * a child no training sample reaches: the parent is replaced by the live child's subtree.
      Training predictions do not change.
    * constant leaves only: a subtree whose leaves all predict the same class (or the same value)
      becomes one leaf (class fractions pooled over its samples, so the arg max is unchanged).

    Returns the number of nodes removed.
    """
    before = tree.reachable().size
    while True:
        members = tree.members(X)
        changed = False
        for node in tree.postorder():
            if tree.left[node] < 0:
                continue
            left, right = int(tree.left[node]), int(tree.right[node])
            if not np.any(tree.weight[node]):
                keep = right if tree.bias[node] > 0 else left
            elif left not in members:
                keep = right
            elif right not in members:
                keep = left
            else:
                continue
            tree.splice(int(node), keep)
            changed = True
        if not cfg.linear_leaves:
            changed |= _collapse_pure(tree, tree.members(X), sw, cfg)
        if not changed:
            return before - tree.reachable().size


def _collapse_pure(tree: TAOTree, members: dict[int, np.ndarray], sw: np.ndarray, cfg: TAOConfig) -> bool:
    """Turn every largest subtree whose leaves all predict the same class (or value) into one leaf."""
    key: dict[int, object] = {}
    mass: dict[int, float] = {}
    pooled: dict[int, np.ndarray] = {}
    for node in tree.postorder():
        node = int(node)
        if tree.left[node] < 0:
            v = tree.value[node]
            key[node] = int(np.argmax(v)) if cfg.task == "classification" else tuple(v.tolist())
            mass[node] = float(sw[members[node]].sum()) if node in members else 0.0
            pooled[node] = v * mass[node]
            continue
        a, b = int(tree.left[node]), int(tree.right[node])
        same = key[a] is not None and key[a] == key[b]
        key[node] = key[a] if same else None
        mass[node] = mass[a] + mass[b]
        pooled[node] = pooled[a] + pooled[b]
    changed = False
    for node in tree.reachable():  # top-down: collapse the largest pure subtrees
        node = int(node)
        if tree.left[node] < 0 or key.get(node) is None:
            continue
        if cfg.task == "classification" and mass[node] > 0:
            value = pooled[node] / mass[node]
        else:
            value = tree.value[_first_leaf(tree, node)].copy()
        tree.make_leaf(node, value)
        changed = True
    return changed


def _first_leaf(tree: TAOTree, node: int) -> int:
    while tree.left[node] >= 0:
        node = int(tree.left[node])
    return node
