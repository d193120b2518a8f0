"""Leaf updates: each leaf refitted on its reduced set, with the other nodes fixed.

A constant leaf is set to its exact optimum (class fractions, or the weighted mean). A linear leaf
is fitted by Lasso (regression) or by ℓ1 multinomial logistic regression with SAGA
(classification); a softmax-tree leaf models only the ``leaf_classes`` most populous classes of its
reduced set, and the other classes get the score :data:`~models.tao.state.ABSENT`.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression

from models.tao.config import TAOConfig
from models.tao.objective import sample_loss
from models.tao.state import ABSENT, TAOTree


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


def fit_leaves(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
               groups: list[tuple[int, np.ndarray]]) -> int:
    """Refit each leaf on its reduced set (``groups``: (leaf, sample indices)); returns the number
    of updates the guard rejected.

    With ``guard="objective"`` a linear leaf's update is kept only if the leaf's own objective
    does not increase (a constant leaf is exact and always kept). A leaf that no sample reaches is
    left as it is: nothing defines it, and pruning removes it later.
    """
    rejected = 0
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
        else:
            value, W = _linear_leaf(Xi, Yi, swi, cfg)
        if cfg.guard == "objective":
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
