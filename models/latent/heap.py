"""Bookkeeping for the complete binary tree of a latent tree, stored in heap order.

A latent tree of maximum depth ``D`` is the complete binary tree with ``|T| = 2**(D+1) - 1``
nodes, numbered in heap (breadth-first) order, 0-based, exactly as in the reference code
(the papers number from 1):

* the root is node 0; the left child of ``t`` is ``2t + 1`` and the right child ``2t + 2``;
  the parent of ``t > 0`` is ``(t - 1) // 2``;
* the nodes of depth ``d`` are ``2**d - 1 ... 2**(d+1) - 2``; the depth of ``t`` is
  ``floor(log2(t + 1))``;
* split (branching) nodes are ``0 ... 2**D - 2``; leaves are ``2**D - 1 ... 2**(D+1) - 2``;
* an odd index is a left child, an even index (other than 0) a right child.

``A_L(t)`` (:func:`left_ancestors`) are the ancestors of ``t`` whose *left* child lies on the
root-to-``t`` path, ``A_R(t)`` (:func:`right_ancestors`) those whose right child does. With the
paper's sign convention (a sample goes left iff its split score ``s < 0``) the path reward of
``t`` is ``min({s_u : u in A_R(t)} | {-s_u : u in A_L(t)})``, capped at 1 by the root
(see :func:`models.latent.pruning.path_rewards`).

Everything here is plain Python / NumPy and cheap; array-returning functions build a new array
on each call so callers may modify what they get.
"""

from __future__ import annotations

import itertools

import numpy as np

IntOrArray = int | np.ndarray

__all__ = [
    "children_arrays",
    "depth_from_n_nodes",
    "depth_from_n_splits",
    "is_leaf",
    "leaf_nodes",
    "left_ancestors",
    "left_child",
    "level",
    "n_leaves",
    "n_nodes",
    "n_splits",
    "node_depth",
    "node_depths",
    "parent",
    "parents",
    "path_to",
    "right_ancestors",
    "right_child",
    "split_nodes",
]


def _check_depth(depth: int) -> int:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValueError(f"The tree depth must be a non-negative integer, got {depth!r}.")
    return int(depth)


def n_nodes(depth: int) -> int:
    """Number of nodes ``|T| = 2**(depth+1) - 1`` of the complete tree of this depth."""
    return 2 ** (_check_depth(depth) + 1) - 1


def n_splits(depth: int) -> int:
    """Number of split (branching) nodes ``2**depth - 1``; they are nodes ``0 .. 2**depth - 2``."""
    return 2 ** _check_depth(depth) - 1


def n_leaves(depth: int) -> int:
    """Number of leaves ``2**depth``; they are the last ``2**depth`` node indices."""
    return 2 ** _check_depth(depth)


def _depth_from_count(count: int, what: str, offset: int) -> int:
    count = int(count)
    depth = (count + 1).bit_length() - 1 - offset
    if depth < 0 or 2 ** (depth + offset) - 1 != count:
        raise ValueError(
            f"{count} {what} do not form a complete binary tree; a tree of depth D has "
            f"{'2**(D+1) - 1 nodes' if offset else '2**D - 1 split nodes'}."
        )
    return depth


def depth_from_n_nodes(count: int) -> int:
    """The depth ``D`` with ``n_nodes(D) == count`` (ValueError if there is none)."""
    return _depth_from_count(count, "nodes", 1)


def depth_from_n_splits(count: int) -> int:
    """The depth ``D`` with ``n_splits(D) == count`` (ValueError if there is none)."""
    return _depth_from_count(count, "split nodes", 0)


def parent(t: IntOrArray) -> IntOrArray:
    """Parent ``(t - 1) // 2`` of node ``t`` (int or integer array); ``-1`` for the root."""
    if isinstance(t, (int, np.integer)):
        return -1 if t == 0 else (int(t) - 1) // 2
    t = np.asarray(t, dtype=np.int64)
    return np.where(t == 0, -1, (t - 1) // 2)


def parents(depth: int) -> np.ndarray:
    """``(|T|,)`` int64 array of parents, ``-1`` at the root."""
    return parent(np.arange(n_nodes(depth), dtype=np.int64))


def left_child(t: IntOrArray) -> IntOrArray:
    """Left child ``2t + 1`` (no check that ``t`` is a split node)."""
    return 2 * t + 1


def right_child(t: IntOrArray) -> IntOrArray:
    """Right child ``2t + 2`` (no check that ``t`` is a split node)."""
    return 2 * t + 2


def is_leaf(t: IntOrArray, depth: int) -> bool | np.ndarray:
    """Whether node ``t`` is a leaf of the depth-``depth`` tree."""
    if isinstance(t, (int, np.integer)):
        return bool(t >= n_splits(depth))
    return np.asarray(t) >= n_splits(depth)


def node_depth(t: IntOrArray) -> IntOrArray:
    """Depth ``floor(log2(t + 1))`` of node ``t`` (root = 0); works on ints and integer arrays."""
    if isinstance(t, (int, np.integer)):
        if t < 0:
            raise ValueError(f"Node indices are non-negative, got {t}.")
        return (int(t) + 1).bit_length() - 1
    t = np.asarray(t, dtype=np.int64)
    if t.size and t.min() < 0:
        raise ValueError("Node indices are non-negative.")
    # exact integer log2 (no float rounding): count how many powers of two fit in t + 1
    out = np.zeros(t.shape, dtype=np.int64)
    v = t + 1
    while np.any(v > 1):
        out += v > 1
        v = v >> 1
    return out


def node_depths(depth: int) -> np.ndarray:
    """``(|T|,)`` int64 array: the depth of every node of the depth-``depth`` tree."""
    depth = _check_depth(depth)
    return np.repeat(np.arange(depth + 1, dtype=np.int64), 2 ** np.arange(depth + 1))


def level(d: int) -> range:
    """Node indices of depth ``d``: ``range(2**d - 1, 2**(d+1) - 1)``."""
    d = _check_depth(d)
    return range(2**d - 1, 2 ** (d + 1) - 1)


def split_nodes(depth: int) -> np.ndarray:
    """Indices of the split nodes ``0 .. 2**depth - 2``."""
    return np.arange(n_splits(depth), dtype=np.int64)


def leaf_nodes(depth: int) -> np.ndarray:
    """Indices of the leaves ``2**depth - 1 .. 2**(depth+1) - 2``."""
    return np.arange(n_splits(depth), n_nodes(depth), dtype=np.int64)


def path_to(t: int) -> list[int]:
    """Nodes on the root-to-``t`` path, root first, ``t`` last."""
    if t < 0:
        raise ValueError(f"Node indices are non-negative, got {t}.")
    out = [int(t)]
    while out[-1] > 0:
        out.append((out[-1] - 1) // 2)
    return out[::-1]


def left_ancestors(t: int) -> list[int]:
    """``A_L(t)``: ancestors of ``t`` whose left child is on the root-to-``t`` path (root first)."""
    path = path_to(t)
    return [u for u, child in itertools.pairwise(path) if child == 2 * u + 1]


def right_ancestors(t: int) -> list[int]:
    """``A_R(t)``: ancestors of ``t`` whose right child is on the root-to-``t`` path (root first)."""
    path = path_to(t)
    return [u for u, child in itertools.pairwise(path) if child == 2 * u + 2]


def children_arrays(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``(children_left, children_right)``: ``(|T|,)`` int64 arrays, ``-1`` at the leaves.

    This is the layout :class:`models.ground.tree.Tree` (and scikit-learn's ``tree_``) uses.
    """
    total, splits = n_nodes(depth), n_splits(depth)
    left = np.full(total, -1, dtype=np.int64)
    right = np.full(total, -1, dtype=np.int64)
    inner = np.arange(splits, dtype=np.int64)
    left[:splits] = 2 * inner + 1
    right[:splits] = 2 * inner + 2
    return left, right
