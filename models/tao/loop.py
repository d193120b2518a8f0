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

After the iterations, :func:`finish`: prune, one exact leaf pass on the final routing, and a
second prune.
"""

from __future__ import annotations

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


def one_pass(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, *,
             levels: list[np.ndarray] | None = None, leaves_only: bool = False,
             stop: Callable[[], bool] = lambda: False) -> tuple[int, int]:
    """One TAO iteration over all depth levels; returns (changed decision nodes, guard rejections).
    ``stop()`` is asked before each level; when True the pass ends there (every node update
    leaves a valid tree)."""
    changed = rejected = 0
    depth = tree.depths()
    max_depth = int(depth.max())
    order = range(max_depth, -1, -1) if cfg.order == "reverse_bfs" else range(max_depth + 1)
    if levels is None or cfg.order == "bfs":
        levels = tree.route(X) if levels is None else levels
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
            c, r = fit_decisions(tree, X, Y, sw, cfg, dec_groups)
            changed += c
            rejected += r
    return changed, rejected


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
