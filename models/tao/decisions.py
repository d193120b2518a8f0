"""Decision-node updates: each node of one depth level solves its reduced problem, and the guard
decides which parameters it keeps.

Which solver a node's problem goes to:

* no care point: every hyperplane has the same loss, so the ℓ1 optimum is ``w = 0``, sending
  everything to the side that currently receives more; one pseudolabel only: ``w = 0`` with
  ``b = ±1`` toward it. Both are exact, and pruning later removes the child they starve;
* ``node_type="axis"``: exact enumeration of weighted 0/1 axis-aligned splits;
* ``solver="cd"``: the compiled level solver (:mod:`models.tao.solvers.cd`), all the level's nodes
  in one call, warm-started from their current parameters, to a first-order tolerance of
  :data:`CD_TOL` (relative), at most ``solver_max_iter`` proximal-Newton steps per node;
* ``solver="sklearn"``: liblinear, one node at a time;
* ``solver="torch"``: the batched FISTA solver, all the level's nodes in one call, warm-started
  from their current parameters, with a tighter tolerance and more iterations than liblinear
  (at least 500 iterations, tolerance at most 1e-5), and torch limited to one CPU thread
  (:func:`models.ground.threads.limited`): the solver makes many small tensor operations per step, and
  with several threads on a shared or busy CPU their synchronisation dominates (measured 1.4×
  liblinear's time with one thread, 8–180× with two on a loaded 2-core machine).
"""

from __future__ import annotations

import numpy as np

from models.ground import threads
from models.tao.config import TAOConfig
from models.tao.problems import NodeProblem, exact_bias, reduced_objective, reduced_problems
from models.tao.solvers import axis, cd, fista, liblinear
from models.tao.state import TAOTree

#: First-order tolerance of the compiled solver on decision nodes: the minimum-norm subgradient at
#: most this fraction of Σv. Reaches liblinear's objective (tol 1e-4) or better on every letter node
#: (``benchmarks/speed/tao_solvers.py``).
CD_TOL = 1e-5


def solve_problems(problems: list[NodeProblem], tree: TAOTree, cfg: TAOConfig) -> dict[int, tuple[np.ndarray, float]]:
    """New (w, b) per node: the exact constant split where it is optimal, else the solver."""
    D = tree.n_features
    out: dict[int, tuple[np.ndarray, float]] = {}
    hard: list[NodeProblem] = []
    for p in problems:
        if p.y.size == 0:  # no care point: every θ has the same loss; with ℓ1 the optimum is w = 0
            out[p.node] = (np.zeros(D), 1.0 if p.n_right_now >= p.n_left_now else -1.0)
        elif np.all(p.y == p.y[0]):  # one pseudolabel: send everything to that child
            out[p.node] = (np.zeros(D), float(p.y[0]))
        else:
            hard.append(p)
    if not hard:
        return out
    if cfg.node_type == "axis":
        for p in hard:
            feature, threshold, orientation, _ = axis.best_axis_split(p.X, p.y, p.v)
            w, b = axis.axis_split_to_hyperplane(feature, threshold, orientation, D)
            out[p.node] = (np.asarray(w, dtype=np.float64), float(b))
        return out
    lam = max(cfg.l1_penalty, 0.0)
    if cfg.solver == "sklearn":
        for p in hard:
            w, b = liblinear.l1_logistic_sklearn(p.X, p.y, p.v, lam, tol=cfg.solver_tol,
                                                 max_iter=cfg.solver_max_iter)
            out[p.node] = (np.asarray(w, dtype=np.float64), float(b))
        return out
    w0 = np.stack([tree.weight[p.node] for p in hard])
    b0 = np.array([tree.bias[p.node] for p in hard], dtype=np.float64)
    if cfg.solver == "cd":  # care points only (v > 0), already by node: straight into the solver's layout
        W, B = cd.l1_logistic_blocks([p.X for p in hard], [p.y for p in hard], [p.v for p in hard], lam,
                                     w0=w0, b0=b0, tol=CD_TOL, max_iter=cfg.solver_max_iter)
        for g, p in enumerate(hard):
            out[p.node] = (W[g], float(B[g]))
        return out
    Xall = np.concatenate([p.X for p in hard])
    group = np.concatenate([np.full(p.y.size, g) for g, p in enumerate(hard)])
    with threads.limited(1):
        W, B = fista.l1_logistic_torch(
            Xall, np.concatenate([p.y for p in hard]), np.concatenate([p.v for p in hard]), group, len(hard), lam,
            w0=w0, b0=b0, device=cfg.device, tol=min(cfg.solver_tol, 1e-5), max_iter=max(cfg.solver_max_iter, 500))
    for g, p in enumerate(hard):
        out[p.node] = (np.asarray(W[g], dtype=np.float64), float(B[g]))
    return out


def fit_decisions(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
                  groups: list[tuple[int, np.ndarray]],
                  child_leaves: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None) -> tuple[int, int]:
    """Update every decision node of one level; returns (changed, rejected by the guard).

    With ``guard="objective"`` four candidates compete on the node's reduced objective: the
    solver's (w, b), the same w with the exact 0/1-optimal bias, the old parameters, and the old w
    with its exact bias. The best wins (ties prefer the new ones, listed first); the old
    parameters are a candidate, so the reduced objective never increases. ``child_leaves``: see
    :func:`models.tao.problems.reduced_problems`.
    """
    problems = reduced_problems(tree, X, Y, sw, cfg, groups, child_leaves)
    new = solve_problems(problems, tree, cfg)
    changed = rejected = 0
    for p in problems:
        w, b = new[p.node]
        if cfg.guard != "off":
            w_old, b_old = tree.weight[p.node].copy(), float(tree.bias[p.node])
            # each direction projected once for its two candidates; when the direction did not
            # change, the old one's exact-bias candidate is the new one's (listed earlier, so it
            # wins the tie) and is not evaluated twice
            s_new = p.X @ w
            s_old = s_new if np.array_equal(w, w_old) else p.X @ w_old
            candidates = [(w, b, s_new), (w, exact_bias(p, w, s_new), s_new), (w_old, b_old, s_old)]
            if s_old is not s_new:
                candidates.append((w_old, exact_bias(p, w_old, s_old), s_old))
            scores = [reduced_objective(p, cw, cb, cfg.l1_penalty, cs) for cw, cb, cs in candidates]
            best = int(np.argmin(scores))
            w, b, _ = candidates[best]
            if best >= 2:  # the surrogate's direction lost; at most the old bias improves
                rejected += 1
                if best == 2:
                    continue
        if not (np.array_equal(w, tree.weight[p.node]) and b == tree.bias[p.node]):
            changed += 1
        tree.weight[p.node] = w
        tree.bias[p.node] = b
    return changed, rejected
