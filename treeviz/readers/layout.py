"""Tidy drawing positions for binary trees (Reingold–Tilford with threaded contours).

The layout obeys the classic aesthetic rules for drawing a tree:

1. nodes of the same depth lie on one horizontal line, ``y = -(depth - depth(root))``;
2. a parent is centred over its two children (a node with one visible child sits right above it);
3. two nodes on the same level are at least ``sibling_sep`` apart and subtrees never overlap;
4. a subtree is drawn the same way wherever it occurs, and a tree and its mirror image are drawn as
   mirror images of each other.

Each subtree is laid out once, bottom-up, relative to its own root. Two sibling subtrees are then
pushed apart just far enough that, on every level they share, the right contour of the left one
and the left contour of the right one are ``sibling_sep`` apart. Contours are followed through
"threads" (links from the deepest node of a shallower subtree to the next contour node of its
deeper sibling), so the walk at each node costs ``min(height(left), height(right))`` steps and the
whole layout is linear in the number of nodes (Reingold & Tilford 1981; Walker 1990). Everything
is iterative, so 40+ levels or a 10,000-deep caterpillar are fine.

Examples
--------
>>> import numpy as np
>>> left, right = np.array([1, -1, 3, -1, -1]), np.array([2, -1, 4, -1, -1])
>>> pos = tidy_layout((left, right))
>>> pos[0], pos[3]
((0.0, 0.0), (0.0, -2.0))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from models.ground.errors import TreevizError

__all__ = ["layout_arrays", "naive_layout_width", "tidy_layout"]


def _children(tree: Any) -> tuple[list[int], list[int]]:
    if isinstance(tree, (tuple, list)) and len(tree) == 2:
        left, right = tree
    else:
        left, right = tree.children_left, tree.children_right
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    if left.shape != right.shape or left.ndim != 1:
        raise ValueError("children_left and children_right must be 1-D arrays of equal length.")
    return left.tolist(), right.tolist()


def _visible(
    left: list[int], right: list[int], root: int, max_levels: int | None, keep: Any
) -> tuple[list[int], list[int], list[tuple[int, ...]]]:
    """Breadth-first list of the shown nodes, their depth below ``root`` and shown children."""
    keep_list = None if keep is None else np.asarray(keep, dtype=bool).tolist()
    order, depth, kids = [root], [0], []
    i = 0
    while i < len(order):
        v, d = order[i], depth[i]
        i += 1
        if left[v] < 0 or (max_levels is not None and d >= max_levels):
            kids.append(())
            continue
        ch = tuple(c for c in (left[v], right[v]) if c >= 0 and (keep_list is None or keep_list[c]))
        kids.append(ch)
        order.extend(ch)
        depth.extend([d + 1] * len(ch))
    return order, depth, kids


def layout_arrays(
    tree: Any,
    root: int = 0,
    max_levels: int | None = None,
    sibling_sep: float = 1.0,
    *,
    keep: Sequence[bool] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tidy positions of the nodes of a (sub)tree as arrays.

    Parameters
    ----------
    tree : Tree or (children_left, children_right)
        Anything with ``children_left`` / ``children_right`` arrays (-1 at a leaf), or the pair.
    root : int
        The node whose subtree is drawn; it is placed at ``(0, 0)``.
    max_levels : int, optional
        Draw only nodes at most this many levels below ``root`` (``0`` = the root alone), the
        same convention as :meth:`models.ground.tree.Tree.subtree_nodes`. Nodes on the last level are
        laid out as leaves.
    sibling_sep : float
        Minimum horizontal distance between two nodes on the same level.
    keep : bool array (n_nodes,), optional
        Nodes to draw; a node that is not kept is left out together with its whole subtree
        (used to hide pruned nodes). The root is always drawn.

    Returns
    -------
    nodes, x, y : ndarray
        Node ids in breadth-first order (parents before children, left before right) and their
        coordinates; ``y = -(depth below root)``.
    """
    left, right = _children(tree)
    n = len(left)
    root = int(root)
    if not 0 <= root < n:
        raise TreevizError(f"Node {root} does not exist; the tree has nodes 0..{n - 1}.")
    if max_levels is not None and int(max_levels) < 0:
        raise TreevizError("The number of levels to show must be 0 or more.")
    if not sibling_sep > 0:
        raise ValueError("sibling_sep must be positive.")
    if keep is not None and len(keep) != n:
        raise ValueError(f"keep has {len(keep)} entries for {n} nodes.")
    sep = float(sibling_sep)
    order, depth, kids = _visible(left, right, root, None if max_levels is None else int(max_levels), keep)
    m = len(order)
    index = {v: i for i, v in enumerate(order)}
    # Work on positions 0..m-1 of ``order``; children always come after their parent.
    kid = [tuple(index[c] for c in ch) for ch in kids]

    offset = [0.0] * m  # x relative to the parent
    thread = [-1] * m  # next contour node for a childless node inside a deeper sibling
    thread_off = [0.0] * m  # x(thread target) - x(node)
    ext_l, ext_r = list(range(m)), list(range(m))  # leftmost / rightmost node on deepest level
    ext_l_pos, ext_r_pos = [0.0] * m, [0.0] * m  # their x relative to the subtree root
    height = [0] * m

    def next_right(v: int) -> tuple[int, float]:
        ch = kid[v]
        if ch:
            return ch[-1], offset[ch[-1]]
        return thread[v], thread_off[v]

    def next_left(v: int) -> tuple[int, float]:
        ch = kid[v]
        if ch:
            return ch[0], offset[ch[0]]
        return thread[v], thread_off[v]

    for v in range(m - 1, -1, -1):
        ch = kid[v]
        if not ch:
            continue
        if len(ch) == 1:
            (c,) = ch
            ext_l[v], ext_r[v] = ext_l[c], ext_r[c]
            ext_l_pos[v], ext_r_pos[v] = ext_l_pos[c], ext_r_pos[c]
            height[v] = height[c] + 1
            continue
        a, b = ch
        # Walk the right contour of a and the left contour of b level by level.
        li, ri, pl, pr, dist = a, b, 0.0, 0.0, sep
        while True:
            gap = pl - pr + sep
            dist = max(dist, gap)
            nl, dl = next_right(li)
            nr, dr = next_left(ri)
            if nl < 0 or nr < 0:
                break
            li, pl = nl, pl + dl
            ri, pr = nr, pr + dr
        half = dist / 2.0
        offset[a], offset[b] = -half, half
        if nl >= 0:  # a is deeper: b's deepest right node continues on a's right contour
            t = ext_r[b]
            thread[t], thread_off[t] = nl, (-half + pl + dl) - (half + ext_r_pos[b])
        elif nr >= 0:  # b is deeper: a's deepest left node continues on b's left contour
            t = ext_l[a]
            thread[t], thread_off[t] = nr, (half + pr + dr) - (-half + ext_l_pos[a])
        ha, hb = height[a], height[b]
        lo = a if ha >= hb else b  # the subtree that owns the deepest level's left end
        hi = b if hb >= ha else a
        ext_l[v], ext_l_pos[v] = ext_l[lo], ext_l_pos[lo] + offset[lo]
        ext_r[v], ext_r_pos[v] = ext_r[hi], ext_r_pos[hi] + offset[hi]
        height[v] = max(ha, hb) + 1

    x = [0.0] * m
    for v in range(m):
        xv = x[v]
        for c in kid[v]:
            x[c] = xv + offset[c]
    return (
        np.asarray(order, dtype=np.int64),
        np.asarray(x, dtype=np.float64),
        (-np.asarray(depth, dtype=np.int64)).astype(np.float64),  # no -0.0 at the root
    )


def tidy_layout(
    tree: Any,
    root: int = 0,
    max_levels: int | None = None,
    sibling_sep: float = 1.0,
    *,
    keep: Sequence[bool] | np.ndarray | None = None,
) -> dict[int, tuple[float, float]]:
    """Tidy positions ``{node: (x, y)}`` of the nodes of a (sub)tree.

    The same as :func:`layout_arrays` (see there for the parameters), as a dict.

    Examples
    --------
    >>> import numpy as np
    >>> left = np.array([1, 3, 5, -1, -1, -1, -1])
    >>> right = np.array([2, 4, 6, -1, -1, -1, -1])
    >>> sorted(x for x, y in tidy_layout((left, right)).values() if y == -2)
    [-1.5, -0.5, 0.5, 1.5]
    """
    nodes, x, y = layout_arrays(tree, root, max_levels, sibling_sep, keep=keep)
    return {int(v): (float(a), float(b)) for v, a, b in zip(nodes.tolist(), x.tolist(), y.tolist())}


def naive_layout_width(tree: Any, root: int = 0, sibling_sep: float = 1.0) -> float:
    """Width of the naive drawing that puts the leaves side by side in order (for comparison)."""
    nodes, _, _ = layout_arrays(tree, root)
    left, _ = _children(tree)
    n_leaves = sum(1 for v in nodes.tolist() if left[v] < 0)
    return (n_leaves - 1) * sibling_sep
