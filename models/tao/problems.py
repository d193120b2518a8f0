"""The reduced problem of a decision node, and the exact computations on it.

Fix every node but decision node i. Each sample reaching i would incur the loss ``l_left`` or
``l_right`` through the (fixed) children's subtrees, so the tree objective restricted to i is, up
to a constant, a weighted binary problem: the pseudolabel is the better child, the weight
``v = |l_left − l_right|``, and samples with ``v = 0`` ("don't care") can go either way. The
node's reduced objective is the weighted 0/1 loss on the care points plus λ‖w‖₁.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.tao.config import TAOConfig
from models.tao.objective import leaf_loss
from models.tao.state import TAOTree


@dataclass
class NodeProblem:
    """The reduced problem of one decision node, on its care points."""

    node: int
    X: np.ndarray  # care points
    y: np.ndarray  # pseudolabels, +1 = right child better, -1 = left
    v: np.ndarray  # weights |l_left - l_right| (times sample weights)
    n_right_now: int
    n_left_now: int


def reduced_problems(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
                     groups: list[tuple[int, np.ndarray]],
                     child_leaves: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
                     ) -> list[NodeProblem]:
    """Care points, pseudolabels and weights of decision nodes (all at one level).

    The losses come from the children's *current* subtrees, which the same pass may just have
    updated (leaves first), never from values cached at the start of the iteration.
    ``child_leaves`` = (leaf reached through the left child, leaf reached through the right child,
    whether the node sends the row right now, or None), one entry per row of the concatenated
    groups, when the caller already knows them (the training loop tracks them level by level,
    see :func:`models.tao.loop.one_pass`); otherwise every row is routed down both children here.
    """
    if not groups:
        return []
    rows = np.concatenate([idx for _, idx in groups])
    owner = np.concatenate([np.full(idx.size, node) for node, idx in groups])
    Ys, ss = Y[rows], sw[rows]
    if child_leaves is None:
        Xs = X[rows]
        through = [tree.apply(Xs, child) for child in (tree.left[owner], tree.right[owner])]
        goes_right = tree.decision_values(Xs, np.arange(rows.size), owner) > 0
    else:
        through = [child_leaves[0], child_leaves[1]]
        goes_right = child_leaves[2]
        if goes_right is None:
            goes_right = tree.decision_values(X, rows, owner) > 0
        # constant leaves never read the inputs, so their rows are not copied
        Xs = X[rows] if tree.leaf_weight is not None else X
    l_left, l_right = (ss * leaf_loss(tree, Xs, leaves, Ys, cfg) for leaves in through)
    v = np.abs(l_left - l_right)
    ybar = np.where(l_right < l_left, 1.0, -1.0)
    out, start = [], 0
    for node, idx in groups:
        sl = slice(start, start + idx.size)
        start += idx.size
        care = v[sl] > 0
        out.append(NodeProblem(node, X[rows[sl][care]], ybar[sl][care], v[sl][care],
                               int(goes_right[sl].sum()), int((~goes_right[sl]).sum())))
    return out


def reduced_objective(p: NodeProblem, w: np.ndarray, b: float, lam: float, s: np.ndarray | None = None) -> float:
    """Ē_i(θ) = Σ_care v·I(f(x) ≠ ȳ) + λ‖w‖₁, with right iff w·x + b > 0. ``s``: the projections
    ``p.X @ w`` when the caller already has them."""
    if s is None:
        s = p.X @ w if p.X.shape[0] else np.zeros(0)
    pred = np.where(s + b > 0, 1.0, -1.0)
    return float(np.sum(p.v * (pred != p.y)) + lam * np.abs(w).sum())


def exact_bias(p: NodeProblem, w: np.ndarray, s: np.ndarray | None = None) -> float:
    """The bias minimising the weighted 0/1 loss of ``p`` for the direction ``w`` (exact 1-D search
    over the cuts between consecutive distinct projections; the threshold is the midpoint).
    ``s``: the projections ``p.X @ w`` when the caller already has them."""
    if p.y.size == 0:
        return 1.0
    if s is None:
        s = p.X @ w
    order = np.argsort(s, kind="stable")
    s, y, v = s[order], p.y[order], p.v[order]
    # loss when the first k go left: right-labelled among them + left-labelled among the rest
    left_cost = np.concatenate([[0.0], np.cumsum(v * (y > 0))])
    right_cost = np.concatenate([np.cumsum((v * (y < 0))[::-1])[::-1], [0.0]])
    cost = left_cost + right_cost
    distinct = np.concatenate([[True], s[1:] > s[:-1], [True]])  # a cut only between distinct values
    cost = np.where(distinct, cost, np.inf)
    k = int(np.argmin(cost))
    if k == 0:
        return float(-s[0] + 1.0)  # everything right
    if k == s.size:
        return float(-s[-1])  # everything left (s + b <= 0)
    mid = 0.5 * (s[k - 1] + s[k])
    if not (s[k - 1] < mid < s[k]):  # adjacent floats: the cut sits on the left value
        mid = s[k - 1]
    return float(-mid)
