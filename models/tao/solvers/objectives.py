"""The weighted binary problem every node solver takes: input checks and the objectives it is
measured by (the sum-form ℓ1-logistic surrogate and the weighted 0/1 loss)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from models.ground.errors import TreevizError


def as_problem(X: Any, y: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``(X, y, v)`` and return float64 copies with ``y`` mapped to ±1."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise TreevizError(f"X must be a 2-D array (points × features); got shape {X.shape}.")
    n = X.shape[0]
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if y.shape[0] != n or v.shape[0] != n:
        raise TreevizError(
            f"X has {n} rows but y has {y.shape[0]} and v has {v.shape[0]} entries; they must match."
        )
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y)) and np.all(np.isfinite(v))):
        raise TreevizError("X, y and v must be finite (no NaN or infinity).")
    if np.any(v < 0):
        raise TreevizError("The point weights v must be non-negative.")
    return X, np.where(y > 0, 1.0, -1.0), v


def as_penalty(lam: float) -> float:
    """λ as a float, checked to be finite and ≥ 0."""
    lam = float(lam)
    if not math.isfinite(lam) or lam < 0:
        raise TreevizError(f"The penalty λ must be a finite number ≥ 0; got {lam}.")
    return lam


def logistic_objective(
    X: np.ndarray, y: np.ndarray, v: np.ndarray, w: np.ndarray, b: float, lam: float
) -> float:
    """Sum-form ℓ1-logistic objective of a decision node.

    Parameters
    ----------
    X : array of shape (n, D)
        Care points.
    y : array of shape (n,)
        Pseudolabels; ``> 0`` means right (+1), anything else left (−1).
    v : array of shape (n,)
        Non-negative point weights.
    w : array of shape (D,)
        Hyperplane weights.
    b : float
        Bias (not penalised).
    lam : float
        ℓ1 penalty λ ≥ 0 on ``w``, sum form.

    Returns
    -------
    float
        ``Σ v_n log(1 + exp(−y_n (w·x_n + b))) + λ‖w‖₁``, computed stably with ``np.logaddexp``.
    """
    X, y, v = as_problem(X, y, v)
    w = np.asarray(w, dtype=np.float64).reshape(-1)
    if w.shape[0] != X.shape[1]:
        raise TreevizError(f"w has {w.shape[0]} entries but X has {X.shape[1]} features.")
    z = X @ w + float(b)
    return float(np.sum(v * np.logaddexp(0.0, -y * z)) + float(lam) * np.sum(np.abs(w)))


def weighted_01_loss(X: np.ndarray, y: np.ndarray, v: np.ndarray, w: np.ndarray, b: float) -> float:
    """Weighted 0/1 loss ``Σ v_n · I(route_n ≠ y_n)`` of the hyperplane ``(w, b)``.

    A point is routed right (+1) iff ``w·x + b > 0`` (the project convention), else left (−1).

    Parameters
    ----------
    X : array of shape (n, D)
    y : array of shape (n,)
        ``> 0`` means right.
    v : array of shape (n,)
    w : array of shape (D,)
    b : float

    Returns
    -------
    float
    """
    X, y, v = as_problem(X, y, v)
    pred = np.where(X @ np.asarray(w, dtype=np.float64) + float(b) > 0, 1.0, -1.0)
    return float(np.sum(v * (pred != y)))
