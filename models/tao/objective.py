"""What TAO minimises: the per-sample loss and the tree objective E(Θ).

For a fixed tree structure, in **sum form** (λ is not divided by the number of samples)::

    E(Θ) = Σ_n s_n L(y_n, T(x_n; Θ)) + λ Σ_i ‖w_i‖₁

with ``s_n`` optional sample weights, L the 0/1 loss (classification; cross-entropy with absent
classes scored β is an option for softmax leaves) or the squared error (regression, vector targets
allowed), and the ℓ1 sum over decision nodes and linear leaves.
"""

from __future__ import annotations

import numpy as np

from models.tao.config import TAOConfig
from models.tao.state import TAOTree


def class_probabilities(tree: TAOTree, scores: np.ndarray) -> np.ndarray:
    """Class probabilities from leaf scores: constant leaves store them; linear leaves a softmax."""
    if tree.leaf_weight is None:
        return scores
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sample_loss(tree: TAOTree, scores: np.ndarray, Y: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """Per-sample loss L(y_n, leaf output) (unweighted)."""
    if cfg.task == "regression":
        return ((scores - Y) ** 2).sum(axis=1)
    if cfg.loss == "zero_one":
        return (np.argmax(scores, axis=1) != Y).astype(np.float64)
    p = class_probabilities(tree, scores)[np.arange(Y.shape[0]), Y]
    with np.errstate(divide="ignore"):
        return np.minimum(-np.log(p), cfg.beta)  # absent class (p = 0): β, never inf (the thesis's ST⁺)


def leaf_loss(tree: TAOTree, X: np.ndarray, leaves: np.ndarray, Y: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """Per-sample loss of the samples ``X`` placed at ``leaves`` (unweighted). Constant leaves
    under the 0/1 loss read each leaf's class once instead of scoring every sample (the same
    argmax, ties to the smaller class id)."""
    if tree.leaf_weight is None and cfg.task == "classification" and cfg.loss == "zero_one":
        return (np.argmax(tree.value, axis=1)[leaves] != Y).astype(np.float64)
    return sample_loss(tree, tree.leaf_scores(X, leaves), Y, cfg)


def _error(scores: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> float:
    if cfg.task == "classification":
        return float(np.sum(sw * (np.argmax(scores, axis=1) != Y)) / np.sum(sw))
    return float(np.sqrt(np.sum(sw * ((scores - Y) ** 2).sum(axis=1)) / (np.sum(sw) * Y.shape[1])))


def _objective(tree: TAOTree, scores: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> float:
    return float(np.sum(sw * sample_loss(tree, scores, Y, cfg)) + cfg.l1_penalty * tree.l1_norm())


def predictions_error(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> float:
    """Weighted training error rate (classification) or RMSE (regression)."""
    return _error(tree.leaf_scores(X, tree.apply(X)), Y, sw, cfg)


def objective(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> float:
    """E(Θ) in sum form (see the module docstring)."""
    return _objective(tree, tree.leaf_scores(X, tree.apply(X)), Y, sw, cfg)


def objective_and_error(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray,
                        cfg: TAOConfig) -> tuple[float, float]:
    """:func:`objective` and :func:`predictions_error` from one pass of the data through the tree."""
    scores = tree.leaf_scores(X, tree.apply(X))
    return _objective(tree, scores, Y, sw, cfg), _error(scores, Y, sw, cfg)
