"""The scikit-learn back-end: one decision node per call, through liblinear's ℓ1 logistic
regression, as in the thesis."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from models.ground.errors import TreevizError
from models.tao.solvers.objectives import as_penalty, as_problem

#: liblinear needs a finite ``C = 1/λ``. A request with ``λ = 0`` (or any ``λ`` below this floor)
#: is solved with ``λ_eff = LAMBDA_FLOOR_REL · Σ v``: relative to the loss (at most ``Σ v · log 2``
#: at the start) the penalty is then negligible, and the problem stays bounded on separable data.
LAMBDA_FLOOR_REL = 1e-12


def l1_logistic_sklearn(
    X: np.ndarray,
    y: np.ndarray,
    v: np.ndarray,
    lam: float,
    *,
    tol: float = 1e-4,
    max_iter: int = 1000,
    intercept_scaling: float = 100.0,
) -> tuple[np.ndarray, float]:
    """Fit one decision node with scikit-learn's liblinear ℓ1-logistic regression.

    Solves ``min Σ v_n log(1+exp(−y_n(w·x_n+b))) + λ‖w‖₁`` through
    ``LogisticRegression(l1_ratio=1.0, C=1/λ, solver="liblinear")`` with ``sample_weight=v``
    (liblinear minimises ``‖w‖₁ + C Σ v_n logloss_n``, i.e. the sum form divided by λ, so
    ``C = 1/λ``). ``penalty`` is left at its default: in scikit-learn 1.8–1.9 ``l1_ratio=1``
    selects the ℓ1 penalty and passing ``penalty`` raises a FutureWarning.

    **Approximation:** liblinear appends a constant feature equal to ``intercept_scaling`` (``s``)
    and penalises its weight like the others, so the problem actually solved has the extra term
    ``λ|b|/s``. With liblinear's default ``s = 1`` the bias is pinned near 0 and spurious
    features make up for it; ``s = 100`` makes the term negligible for data on a unit-ish scale.
    Raise ``s`` when the bias is large, or use :func:`models.tao.solvers.fista.l1_logistic_torch`
    for an exactly unpenalised bias.

    Special cases, answered without calling scikit-learn: points with ``v = 0`` are dropped; no
    point left → ``w = 0, b = +1``; all remaining labels equal → ``w = 0, b = ±1`` toward that
    class (liblinear would raise a misleading "multiclass" error). ``λ = 0`` (or below
    :data:`LAMBDA_FLOOR_REL` ``· Σv``) is replaced by that floor because ``C`` must be finite.
    A :class:`~sklearn.exceptions.ConvergenceWarning` (liblinear hitting ``max_iter``) is
    silenced: the iterate is still a valid, usually near-optimal hyperplane, and the TAO guard
    (:func:`models.tao.decisions.fit_decisions`) decides whether it is kept.

    Parameters
    ----------
    X, y, v, lam
        The node's problem, as for :func:`models.tao.solvers.objectives.logistic_objective`
        (``v`` is liblinear's ``sample_weight``).
    tol : float, default 1e-4
        liblinear's stopping tolerance.
    max_iter : int, default 1000
        liblinear's iteration limit.
    intercept_scaling : float, default 100.0
        See the approximation note above.

    Returns
    -------
    w : ndarray of shape (D,), float64
    b : float
        The node sends ``x`` right iff ``w·x + b > 0``.
    """
    X, y, v = as_problem(X, y, v)
    lam = as_penalty(lam)
    if not intercept_scaling > 0:
        raise TreevizError("intercept_scaling must be positive.")
    D = X.shape[1]
    keep = v > 0
    X, y, v = X[keep], y[keep], v[keep]
    w = np.zeros(D, dtype=np.float64)
    if X.shape[0] == 0:
        return w, 1.0
    n_pos = int(np.count_nonzero(y > 0))
    if n_pos == X.shape[0]:
        return w, 1.0
    if n_pos == 0:
        return w, -1.0
    if D == 0:  # only a bias: its exact (unpenalised) optimum is the weighted log-odds
        return w, float(np.log(v[y > 0].sum() / v[y < 0].sum()))
    lam_eff = max(lam, LAMBDA_FLOOR_REL * float(v.sum()))
    clf = LogisticRegression(
        l1_ratio=1.0,
        C=1.0 / lam_eff,
        solver="liblinear",
        intercept_scaling=float(intercept_scaling),
        tol=float(tol),
        max_iter=int(max_iter),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y.astype(np.int64), sample_weight=v)
    # classes_ = [-1, 1]: a positive decision value means class +1 = right.
    w = np.asarray(clf.coef_, dtype=np.float64).reshape(-1).copy()
    return w, float(np.asarray(clf.intercept_, dtype=np.float64).reshape(-1)[0])
