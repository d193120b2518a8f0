"""Leaf updates: each leaf refitted on its reduced set, with the other nodes fixed.

A constant leaf is set to its exact optimum (class fractions, or the weighted mean). A linear leaf
is fitted by ℓ1 least squares (regression) or by ℓ1 multinomial logistic regression
(classification); a softmax-tree leaf models only the ``leaf_classes`` most populous classes of its
reduced set, and the other classes get the score :data:`~models.tao.state.ABSENT`. With
``solver="cd"`` all linear leaves of a depth level are fitted in one compiled call
(:mod:`models.tao.solvers.cd`), warm-started from their current parameters; otherwise each leaf
calls scikit-learn (Lasso; SAGA for the softmax, as in the thesis).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression

from models.tao.config import TAOConfig
from models.tao.objective import sample_loss
from models.tao.solvers import cd
from models.tao.state import ABSENT, TAOTree

#: Relative objective decrease per sweep at which the compiled leaf solvers stop.
LEAF_CD_TOL = 1e-5


def constant_leaf(tree: TAOTree, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """The exact constant leaf: class fractions (argmax = weighted majority, ties to the smallest
    class id) or the weighted mean; for linear-leaf trees the log-fractions (softmax = fractions)."""
    if cfg.task == "regression":
        return np.average(Y, axis=0, weights=sw)
    counts = np.bincount(Y, weights=sw, minlength=cfg.n_outputs)
    if tree.leaf_weight is not None:  # a softmax-tree leaf models its k most populous classes only
        counts = np.where(np.isin(np.arange(counts.size), _leaf_classes(counts, cfg)), counts, 0.0)
    frac = counts / counts.sum()
    if tree.leaf_weight is None:
        return frac
    with np.errstate(divide="ignore"):
        return np.where(frac > 0, np.log(np.maximum(frac, 1e-300)), ABSENT)


def _leaf_classes(counts: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """The classes a linear leaf models: those present, or for softmax leaves with
    ``leaf_classes = k`` the k most populous (ties to the smaller class id), sorted."""
    present = np.flatnonzero(counts > 0)
    if cfg.leaf == "softmax" and cfg.leaf_classes is not None and present.size > cfg.leaf_classes:
        order = np.argsort(-counts, kind="stable")
        present = np.sort(order[: cfg.leaf_classes])
    return present


def _leaf_objective(tree: TAOTree, value: np.ndarray, W: np.ndarray | None, Xi: np.ndarray, Yi: np.ndarray,
                    swi: np.ndarray, cfg: TAOConfig) -> float:
    """The leaf's own part of E: its samples' weighted loss plus λ‖W‖₁ of a linear leaf."""
    scores = np.broadcast_to(value, (Xi.shape[0], value.shape[0])).copy()
    if W is not None:
        scores += Xi @ W.T
    loss = np.sum(swi * sample_loss(tree, scores, Yi, cfg))
    return float(loss + (cfg.l1_penalty * np.abs(W).sum() if W is not None else 0.0))


def _linear_leaf(Xi: np.ndarray, Yi: np.ndarray, swi: np.ndarray, cfg: TAOConfig) -> tuple[np.ndarray, np.ndarray]:
    """An ℓ1 linear leaf: Lasso (regression) or ℓ1 softmax over the leaf's classes (classification).

    λ is in sum form and converted for each solver: Lasso minimises
    (1/(2Σs)) Σ s‖y − ŷ‖² + α‖W‖₁, so α = λ / (2 Σ s); LogisticRegression minimises
    C Σ s·logloss + ‖W‖₁, so C = 1/λ. SAGA, not SAG: scikit-learn's ``sag`` has no ℓ1 penalty.
    """
    K, D = cfg.n_outputs, Xi.shape[1]
    W = np.zeros((K, D))
    lam = cfg.l1_penalty
    if cfg.task == "regression":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if lam > 0:
                model = Lasso(alpha=lam / (2.0 * swi.sum()), tol=cfg.solver_tol,
                              max_iter=max(1000, cfg.solver_max_iter))
            else:
                model = LinearRegression()
            model.fit(Xi, Yi, sample_weight=swi)
        W[:] = np.asarray(model.coef_).reshape(K, D)
        return np.asarray(model.intercept_, dtype=np.float64).reshape(K), W
    present = _leaf_classes(np.bincount(Yi, weights=swi, minlength=K), cfg)
    if present.size < 2:
        value = np.full(K, ABSENT)
        value[present] = 0.0
        return value, W
    keep = np.isin(Yi, present)
    Xk, yk, sk = Xi[keep], Yi[keep], swi[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=1.0 / max(lam, 1e-12), l1_ratio=1.0, solver="saga",
                                   tol=cfg.solver_tol, max_iter=cfg.solver_max_iter, random_state=0)
        model.fit(Xk, yk, sample_weight=sk)
    value = np.full(K, ABSENT)
    classes = model.classes_.astype(np.int64)
    if classes.size == 2:  # one logit: class b scores w·x + b against class a's 0
        value[classes[0]] = 0.0
        value[classes[1]] = float(model.intercept_[0])
        W[classes[1]] = model.coef_[0]
    else:
        value[classes] = model.intercept_
        W[classes] = model.coef_
    return value, W


def _linear_leaves_cd(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
                      groups: list[tuple[int, np.ndarray]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """(value, W) of every linear leaf in ``groups`` (each with at least ``min_leaf_samples`` rows),
    from one compiled call, warm-started from the leaves' current parameters."""
    K, D = cfg.n_outputs, X.shape[1]
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if cfg.task == "regression":
        rows = np.concatenate([idx for _, idx in groups])
        group = np.concatenate([np.full(idx.size, g) for g, (_, idx) in enumerate(groups)])
        leaves = [leaf for leaf, _ in groups]
        W, C = cd.l1_least_squares_level(X[rows], Y[rows], sw[rows], group, len(groups), cfg.l1_penalty,
                                         W0=tree.leaf_weight[leaves], c0=tree.value[leaves], tol=LEAF_CD_TOL,
                                         max_iter=max(1000, cfg.solver_max_iter))
        return {leaf: (C[g], W[g]) for g, leaf in enumerate(leaves)}
    solve: list[tuple[int, np.ndarray, np.ndarray]] = []  # (leaf, rows, classes)
    for leaf, idx in groups:
        present = _leaf_classes(np.bincount(Y[idx], weights=sw[idx], minlength=K), cfg)
        if present.size < 2:
            value = np.full(K, ABSENT)
            value[present] = 0.0
            out[leaf] = (value, np.zeros((K, D)))
        else:
            solve.append((leaf, idx[np.isin(Y[idx], present)], present))
    if not solve:
        return out
    G = len(solve)
    active = np.zeros((G, K), dtype=bool)
    W0, c0 = np.zeros((G, K, D)), np.zeros((G, K))
    for g, (leaf, rows, present) in enumerate(solve):
        active[g, present] = True
        old = tree.value[leaf]
        if np.all(old[present] > ABSENT / 2):  # warm start: every class the leaf models now had a score
            c0[g, present] = old[present]
            W0[g, present] = tree.leaf_weight[leaf][present]
        else:  # cold start at the class log-fractions
            counts = np.bincount(Y[rows], weights=sw[rows], minlength=K)[present]
            c0[g, present] = np.log(counts / counts.sum())
    rows = np.concatenate([r for _, r, _ in solve])
    group = np.concatenate([np.full(r.size, g) for g, (_, r, _) in enumerate(solve)])
    W, C = cd.l1_softmax_level(X[rows], Y[rows], sw[rows], group, active, cfg.l1_penalty, W0=W0, c0=c0,
                               tol=LEAF_CD_TOL, max_iter=max(200, cfg.solver_max_iter))
    for g, (leaf, _, present) in enumerate(solve):
        value = np.full(K, ABSENT)
        Wg = np.zeros((K, D))
        if present.size == 2:  # one logit, as scikit-learn's binary model: class b scores (w_b − w_a)·x + c_b − c_a
            a, b = present
            value[a], value[b] = 0.0, C[g, b] - C[g, a]
            Wg[b] = W[g, b] - W[g, a]
        else:
            value[present] = C[g, present]
            Wg[present] = W[g, present]
        out[leaf] = (value, Wg)
    return out


def fit_leaves(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
               groups: list[tuple[int, np.ndarray]]) -> int:
    """Refit each leaf on its reduced set (``groups``: (leaf, sample indices)); returns the number
    of updates the guard rejected.

    With ``guard="objective"`` a linear leaf's update is kept only if the leaf's own objective
    does not increase (a constant leaf is exact and always kept). A leaf that no sample reaches is
    left as it is: nothing defines it, and pruning removes it later.
    """
    rejected = 0
    batched: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if cfg.linear_leaves and cfg.solver == "cd":
        fit = [(leaf, idx) for leaf, idx in groups if idx.size >= max(1, cfg.min_leaf_samples)]
        batched = _linear_leaves_cd(tree, X, Y, sw, cfg, fit) if fit else {}
    for leaf, idx in groups:
        if idx.size == 0:
            continue
        Yi, swi = Y[idx], sw[idx]
        constant = constant_leaf(tree, Yi, swi, cfg)
        if not cfg.linear_leaves:
            tree.value[leaf] = constant
            continue
        Xi = X[idx]
        if idx.size < cfg.min_leaf_samples:
            value, W = constant, np.zeros_like(tree.leaf_weight[leaf])
        elif leaf in batched:
            value, W = batched[leaf]
        else:
            value, W = _linear_leaf(Xi, Yi, swi, cfg)
        if cfg.guard != "off":
            new = _leaf_objective(tree, value, W, Xi, Yi, swi, cfg)
            old = _leaf_objective(tree, tree.value[leaf], tree.leaf_weight[leaf], Xi, Yi, swi, cfg)
            if new > old + 1e-12 * max(1.0, abs(old)):
                rejected += 1
                continue
        tree.value[leaf] = value
        tree.leaf_weight[leaf] = W
    return rejected


def refit_leaves(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> None:
    """Refit every leaf on the current routing, decision nodes frozen (the exact leaf pass that
    finishes training, as in LapTAO's post-processing)."""
    groups = [(n, i) for n, i in tree.members(X).items() if tree.left[n] < 0]
    fit_leaves(tree, X, Y, sw, cfg, groups)
