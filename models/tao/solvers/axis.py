"""Exact axis-aligned splits: the weighted 0/1-optimal split of a decision node by enumeration,
and the hyperplane that routes exactly like it.

Unlike the oblique nodes, which fit a convex surrogate (ℓ1 logistic regression), enumeration
minimises the node's weighted 0/1 loss itself.
"""

from __future__ import annotations

import math

import numpy as np

from models.ground.errors import TreevizError
from models.tao.solvers.objectives import as_problem


def _threshold_between(a: float, b: float, orientation: int) -> float:
    """A threshold ``t`` separating ``a < b`` under the strict rules of :func:`best_axis_split`.

    The midpoint when it lies strictly between; if ``a`` and ``b`` are adjacent floats there is
    no such number and ``t = a`` (orientation +1: right iff ``x > a``) or ``t = b`` (orientation
    −1: right iff ``x < b``) reproduces the split exactly.
    """
    t = 0.5 * a + 0.5 * b
    if not (a < t < b):
        t = a + 0.5 * (b - a)
    if a < t < b:
        return float(t)
    return float(a) if orientation > 0 else float(b)


def best_axis_split(X: np.ndarray, y: np.ndarray, v: np.ndarray) -> tuple[int, float, int, float]:
    """Exact weighted 0/1-optimal axis-aligned split.

    Minimises ``Σ v_n · I(pred_n ≠ y_n)`` over every feature ``j``, every cut between consecutive
    distinct values of ``x_j`` and both orientations, plus the two constant splits:

    * orientation +1: right (+1) iff ``x_j > t``;
    * orientation −1: right (+1) iff ``x_j < t`` (left iff ``x_j > t``).

    ``t`` is the midpoint between the two consecutive distinct values, so no training point lies
    on it and the rules equal "right iff ``x_j ≤ t``" etc. on the training points; both are
    reproduced exactly by :func:`axis_split_to_hyperplane` with "right iff ``w·x + b > 0``"
    (and also with ``≥``). The constant splits ("everything right" / "everything left") are
    returned as ``feature = -1``, ``threshold = nan``, ``orientation = +1`` / ``−1``.

    Ties are broken deterministically: constant splits first (all right, then all left), then the
    smallest feature index, then the smallest threshold, then orientation +1 before −1. Preferring
    the constant split on ties keeps nodes sparse and lets TAO prune them.

    Parameters
    ----------
    X : array of shape (n, D)
    y : array of shape (n,)
        ``> 0`` means right (+1), anything else left (−1).
    v : array of shape (n,)
        Non-negative weights.

    Returns
    -------
    feature : int
        Column index, or −1 for a constant split.
    threshold : float
        ``nan`` for a constant split.
    orientation : int
        +1 or −1.
    loss : float
        The minimal weighted 0/1 loss.
    """
    X, y, v = as_problem(X, y, v)
    n, D = X.shape
    vp = np.where(y > 0, v, 0.0)
    vm = np.where(y > 0, 0.0, v)
    total_p, total_m = float(vp.sum()), float(vm.sum())
    # constants: all right errs on the left-labelled mass, all left on the right-labelled mass
    best = (-1, float("nan"), 1, total_m)
    if total_p < total_m:
        best = (-1, float("nan"), -1, total_p)
    if n < 2 or D == 0:
        return best
    order = np.argsort(X, axis=0, kind="stable")  # (n, D)
    xs = np.take_along_axis(X, order, axis=0)
    cp = np.cumsum(vp[order], axis=0)[:-1]  # mass of +1 points at or below cut i, (n-1, D)
    cm = np.cumsum(vm[order], axis=0)[:-1]
    valid = xs[:-1] < xs[1:]  # cut between sorted positions i and i+1
    # orientation +1: lower part predicted left (errs on +1 there), upper part right (errs on −1)
    loss_pos = cp + (total_m - cm)
    loss_neg = cm + (total_p - cp)
    losses = np.stack([loss_pos, loss_neg], axis=-1)  # (n-1, D, 2)
    losses = np.where(valid[..., None], losses, np.inf)
    # order candidates as (feature, cut position = increasing threshold, orientation)
    flat = np.transpose(losses, (1, 0, 2)).reshape(-1)
    k = int(np.argmin(flat))
    if not flat[k] < best[3]:
        return best
    j, rem = divmod(k, 2 * (n - 1))
    i, o = divmod(rem, 2)
    orientation = 1 if o == 0 else -1
    t = _threshold_between(float(xs[i, j]), float(xs[i + 1, j]), orientation)
    return int(j), t, orientation, float(flat[k])


def axis_split_to_hyperplane(
    feature: int, threshold: float, orientation: int, D: int
) -> tuple[np.ndarray, float]:
    """The hyperplane ``(w, b)`` that routes exactly like an axis-aligned split.

    With the project rule "right iff ``w·x + b > 0``":

    * orientation +1: ``w = e_j, b = −t`` → right iff ``x_j > t``;
    * orientation −1: ``w = −e_j, b = t`` → right iff ``x_j < t``;
    * ``feature = -1`` (constant split): ``w = 0, b = orientation`` (+1 all right, −1 all left).

    ``x_j − t`` is computed exactly in floating point as far as its sign goes, so the routing of
    every finite point is reproduced exactly.

    Parameters
    ----------
    feature : int
        Column index or −1.
    threshold : float
        Ignored when ``feature = -1``.
    orientation : int
        +1 or −1.
    D : int
        Number of features.

    Returns
    -------
    w : ndarray of shape (D,), float64
    b : float
    """
    if orientation not in (1, -1):
        raise TreevizError(f"orientation must be +1 or -1; got {orientation}.")
    w = np.zeros(int(D), dtype=np.float64)
    if int(feature) == -1:
        return w, float(orientation)
    if not 0 <= int(feature) < D:
        raise TreevizError(f"feature must be -1 or lie in [0, {D}); got {feature}.")
    if not math.isfinite(float(threshold)):
        raise TreevizError("An axis-aligned split needs a finite threshold.")
    w[int(feature)] = float(orientation)
    return w, -float(orientation) * float(threshold)
