"""The TAO training loop (Carreira-Perpiñán & Tavallali 2018; Zharmagambetov, PhD thesis 2022).

One iteration visits the depth levels leaves first (reverse BFS, the default). All nodes of one
level are non-descendants of each other, so each can be optimised on its own reduced set with the
others fixed (the separability theorem), and the reduced sets computed at the start of the
iteration stay valid for every node visited later in it. Top-down (``order="bfs"``) recomputes
the reduced sets before every level instead. Each level refits its leaves
(:mod:`models.tao.leaves`) and then its decision nodes (:mod:`models.tao.decisions`).

With ``guard="objective"`` (the default) an iteration first runs the plain pass and keeps it if
the objective E did not increase; otherwise the tree is put back and the pass is redone with
every update guarded, which cannot increase E. ``guard="off"`` is the thesis's unguarded TAO.
``guard="node"`` runs the guarded pass from the start, without the plain attempt: the same tree as
``"objective"`` whenever every plain pass would have been rejected (as in LapTAO's warm-started tree
steps, where the plain pass raised E on every iteration measured), at half the passes.

After the iterations, :func:`finish`: prune, one exact leaf pass on the final routing, and a
second prune.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from models.tao.config import TAOConfig
from models.tao.decisions import fit_decisions
from models.tao.leaves import fit_leaves, refit_leaves
from models.tao.objective import objective, objective_and_error
from models.tao.prune import prune
from models.tao.state import TAOTree, group_rows


def _levels_from_assignment(tree: TAOTree, leaf_of_sample: np.ndarray) -> list[np.ndarray]:
    """Levels (as :meth:`TAOTree.route`) when samples are *assigned* to leaves (clustering init)."""
    parent = np.full(tree.n_slots, -1, dtype=np.int64)
    internal = np.flatnonzero(tree.left >= 0)
    parent[tree.left[internal]] = internal
    parent[tree.right[internal]] = internal
    depth = tree.depths()
    paths = [leaf_of_sample.astype(np.int64)]
    cur = paths[0]
    while np.any(parent[cur] >= 0):
        cur = np.where(parent[cur] >= 0, parent[cur], cur)
        paths.append(cur)
    n_levels = int(depth.max()) + 1
    levels = [np.full(leaf_of_sample.size, -1, dtype=np.int64) for _ in range(n_levels)]
    for p in paths:
        for d in range(n_levels):
            hit = depth[p] == d
            levels[d][hit] = p[hit]
    return levels


def _groups_at(levels: list[np.ndarray], d: int) -> list[tuple[int, np.ndarray]]:
    """(node, sample indices) for every node at depth ``d`` that some sample reaches."""
    if d >= len(levels):
        return []
    return [(node, idx) for node, idx in group_rows(levels[d]) if node >= 0]


def _deepest(levels: list[np.ndarray]) -> np.ndarray:
    """The last node of every sample's path in ``levels`` (its leaf)."""
    last = levels[0].copy()
    for level in levels[1:]:
        hit = level >= 0
        last[hit] = level[hit]
    return last


def _child_leaves(tree: TAOTree, X: np.ndarray, levels: list[np.ndarray], d: int, rows: np.ndarray,
                  owner: np.ndarray, exit_leaf: np.ndarray, routed: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(leaf through the left child, leaf through the right child, goes right now) of the rows of
    the depth-``d`` decision nodes ``owner``. The child on a row's path is ``levels[d + 1]``, and
    the leaf it leads to now is ``exit_leaf`` (kept up to date level by level), so only the other
    child's subtree is routed. None when the levels do not continue below ``d`` (then the caller
    routes both children)."""
    if d + 1 >= len(levels):
        return None
    on = levels[d + 1][rows]
    left, right = tree.left[owner], tree.right[owner]
    on_left = on == left
    if not np.all(on_left | (on == right)):
        return None
    via_on = exit_leaf[rows]
    via_off = tree.apply_rows(X, rows, np.where(on_left, right, left))
    return (np.where(on_left, via_on, via_off), np.where(on_left, via_off, via_on),
            ~on_left if routed else None)


def one_pass(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, *,
             levels: list[np.ndarray] | None = None, leaves_only: bool = False,
             stop: Callable[[], bool] = lambda: False) -> tuple[int, int]:
    """One TAO iteration over all depth levels; returns (changed decision nodes, guard rejections).
    ``stop()`` is asked before each level; when True the pass ends there (every node update
    leaves a valid tree).

    Leaves first (reverse BFS), a decision node's reduced problem needs the leaf each of its
    samples reaches through either child, with the levels below already updated in this pass.
    Rather than routing every sample down both children at every level (depth² node evaluations
    per sample and pass), the pass keeps ``exit_leaf``: the leaf each sample reaches now from its
    node at the level just done. The child on a sample's path then costs nothing and only the
    other child's subtree is routed; after the level's update one decision value per sample moves
    ``exit_leaf`` up a level. The leaves are exactly those the direct routing gives.
    """
    changed = rejected = 0
    depth = tree.depths()
    max_depth = int(depth.max())
    order = range(max_depth, -1, -1) if cfg.order == "reverse_bfs" else range(max_depth + 1)
    routed = levels is None
    if levels is None or cfg.order == "bfs":
        levels = tree.route(X) if levels is None else levels
    track = cfg.order == "reverse_bfs" and not leaves_only
    exit_leaf = _deepest(levels) if track else None
    for d in order:
        if stop():
            break
        if cfg.order == "bfs" and d > 0:
            # top-down: the levels above changed the routing, so the reduced sets computed at the
            # start would be stale (a node would be trained on points that no longer reach it)
            levels = tree.route(X)
        groups = _groups_at(levels, d)
        leaf_groups = [(n, i) for n, i in groups if tree.left[n] < 0]
        dec_groups = [(n, i) for n, i in groups if tree.left[n] >= 0]
        rejected += fit_leaves(tree, X, Y, sw, cfg, leaf_groups)
        if not leaves_only and dec_groups:
            known = None
            if track:
                nodes = np.array([node for node, _ in dec_groups], dtype=np.int64)
                rows = np.concatenate([idx for _, idx in dec_groups])
                owner = np.repeat(nodes, [idx.size for _, idx in dec_groups])
                known = _child_leaves(tree, X, levels, d, rows, owner, exit_leaf, routed)
                w_before, b_before = tree.weight[nodes].copy(), tree.bias[nodes].copy()
            c, r = fit_decisions(tree, X, Y, sw, cfg, dec_groups, known)
            changed += c
            rejected += r
            if track:
                _move_up(tree, X, rows, owner, nodes, w_before, b_before, known, exit_leaf)
    return changed, rejected


def _move_up(tree: TAOTree, X: np.ndarray, rows: np.ndarray, owner: np.ndarray, nodes: np.ndarray,
             w_before: np.ndarray, b_before: np.ndarray,
             known: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None, exit_leaf: np.ndarray) -> None:
    """After a level's decision nodes were updated: ``exit_leaf`` of their rows becomes the leaf
    each row reaches from its node at this level. A node whose parameters did not change sends
    its rows where it sent them at the start of the pass, so only the changed nodes' rows need a
    new decision value."""
    if known is None:
        exit_leaf[rows] = tree.apply_rows(X, rows, owner)
        return
    via_left, via_right, goes_right = known
    if goes_right is None:  # the levels were assigned (clustering init), not routed
        redo = np.ones(rows.size, dtype=bool)
    else:
        moved = np.any(tree.weight[nodes] != w_before, axis=1) | (tree.bias[nodes] != b_before)
        slot = np.zeros(tree.n_slots, dtype=bool)
        slot[nodes[moved]] = True
        redo = slot[owner]
        exit_leaf[rows] = np.where(goes_right, via_right, via_left)
    if np.any(redo):
        right = tree.decision_values(X, rows[redo], owner[redo]) > 0
        exit_leaf[rows[redo]] = np.where(right, via_right[redo], via_left[redo])


def train(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, *,
          on_iteration: Callable[[dict], bool] | None = None, initial_leaf: np.ndarray | None = None,
          finalize: bool = True, stop: Callable[[], bool] = lambda: False) -> TAOTree:
    """Run TAO on ``tree`` in place and return it.

    Parameters
    ----------
    tree : TAOTree
        The initial tree (from :mod:`models.tao.init`) or a previous result (warm start).
    X : (N, D) float64;  Y : (N,) class indices or (N, K) float targets;  sw : (N,) weights.
    on_iteration : callable, optional
        Called with each iteration's record (iteration, objective, train_error, n_nonzero,
        n_decision_nodes, n_leaves, n_changed, n_rejected, time_s); return False to stop.
    initial_leaf : (N,) int, optional
        Leaf assignment used as the reduced sets of the first iteration (the clustering init of
        :func:`models.tao.init.clustering_init`).
    finalize : bool
        Prune, refit the leaves once and prune again at the end (the default).
    stop : callable, optional
        Asked before every depth level; when it returns True (a cancel) the iterations end at
        once, without a record of the unfinished one (the finishing step still runs).
    """
    e_prev = objective(tree, X, Y, sw, cfg)
    for it in range(cfg.max_iter):
        start = time.perf_counter()
        levels = _levels_from_assignment(tree, initial_leaf) if (it == 0 and initial_leaf is not None) else None
        if cfg.guard == "objective":
            # First try the plain (unguarded) pass; keep it if E did not increase. Otherwise redo the
            # pass from the saved tree with every node update guarded, which cannot increase E.
            saved = tree.copy()
            changed, rejected = one_pass(tree, X, Y, sw, replace(cfg, guard="off"), levels=levels, stop=stop)
            if stop():  # an unfinished pass is not kept
                _restore(tree, saved)
                break
            e, error = objective_and_error(tree, X, Y, sw, cfg)
            if e > e_prev + 1e-12 * max(1.0, abs(e_prev)):
                _restore(tree, saved)
                changed, rejected = one_pass(tree, X, Y, sw, cfg, levels=levels, stop=stop)
                e, error = objective_and_error(tree, X, Y, sw, cfg)
        else:
            changed, rejected = one_pass(tree, X, Y, sw, cfg, levels=levels, stop=stop)
            e, error = objective_and_error(tree, X, Y, sw, cfg)
        if stop():
            break
        record = {"iteration": it + 1, "objective": e, "train_error": error,
                  "n_nonzero": tree.n_nonzero(), "n_decision_nodes": int(tree.decision_nodes().size),
                  "n_leaves": int(tree.leaves().size), "n_changed": changed, "n_rejected": rejected,
                  "time_s": time.perf_counter() - start}
        if on_iteration is not None and on_iteration(record) is False:
            break
        if changed == 0 and it > 0 and initial_leaf is None:
            break
        if abs(e_prev - e) <= cfg.tol * max(1.0, abs(e_prev)) and it > 0:
            break
        e_prev = e
    if finalize:
        finish(tree, X, Y, sw, cfg)
    return tree


def planned_iterations(objectives: list[float], changed: list[int], max_iter: int, tol: float) -> float:
    """How many iterations a run that has done ``len(objectives)`` is likely to do in all.

    The loop ends at ``max_iter``, when no node changes, or when the objective changes by at most
    ``tol`` of itself; after three iterations each trend is extrapolated over the last few (the
    first, which starts from the initial tree, left out): the count of changed nodes falling
    linearly to 0, the relative change of the objective falling geometrically to ``tol``. The
    sooner end wins; at least one more iteration is planned while the run goes on. This is a
    guess for the progress bar, never a rule of the loop.
    """
    k = len(objectives)
    left = float(max_iter - k)
    if k >= 3:
        first = max(1, k - 4)
        fall = (changed[first] - changed[-1]) / (k - 1 - first)
        if fall > 0:
            left = min(left, changed[-1] / fall)
        rel = [abs(a - b) / max(1.0, abs(a)) for a, b in itertools.pairwise(objectives)]
        j = max(0, len(rel) - 4)
        if len(rel) - 1 > j and rel[j] > 0 and rel[-1] > tol > 0:
            ratio = (rel[-1] / rel[j]) ** (1.0 / (len(rel) - 1 - j))
            if ratio < 1.0:
                left = min(left, math.log(tol / rel[-1]) / math.log(ratio))
    return float(min(max_iter, k + max(1.0, left)))


def _restore(tree: TAOTree, saved: TAOTree) -> None:
    """Put ``saved``'s parameters back into ``tree`` (in place: callers hold ``tree``)."""
    tree.left[:], tree.right[:] = saved.left, saved.right
    tree.weight[:], tree.bias[:], tree.value[:] = saved.weight, saved.bias, saved.value
    if tree.leaf_weight is not None:
        tree.leaf_weight[:] = saved.leaf_weight
    tree.root = saved.root


def finish(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> None:
    """Prune, refit the leaves on the final routing, prune again."""
    prune(tree, X, Y, sw, cfg)
    refit_leaves(tree, X, Y, sw, cfg)
    prune(tree, X, Y, sw, cfg)
