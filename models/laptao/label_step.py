"""LapTAO's label step, multiplier update, label-propagation start and exact leaf solve.

LapTAO minimises, over the tree outputs ``t = [T(x_1), …, T(x_N)]`` (N × C, one column per output),
the **matrix form** of the objective::

    E(t) = Σ_c (t_c − y_c)ᵀ J (t_c − y_c) + γ Σ_c t_cᵀ Lap t_c  (+ α φ(tree))

``J`` is the diagonal 0/1 mask of the labelled points (a boolean mask, never "labelled first"),
``y`` the targets (one-hot rows for classification; rows of unlabelled points are ignored) and
``Lap = Deg − W`` the Laplacian of the symmetric graph W. Decisions taken here:

- **Factor 2 in the graph term.** For symmetric W, ``Σ_nm w_nm (t_n − t_m)² = 2 tᵀ Lap t``. γ
  multiplies ``tᵀ Lap t``, as in every algorithmic equation of the thesis (label step, exact leaf
  solve); with the sum form γ would be worth half as much. γ = 0.1 is meant on a graph whose
  degrees are about 1 (:mod:`models.laptao.graph`).
- **Multiplier step.** With auxiliary coordinates z (z = t at the solution) and multipliers ν,
  the augmented Lagrangian is ``E(z) − Σ ν∘(z − t) + μ ‖z − t‖²``. The thesis updates
  ``ν ← ν − μ (z − t)`` (``step=1``, the default here); the textbook step for a ``μ‖·‖²`` penalty is
  ``ν ← ν − 2μ (z − t)`` (``step=2``), after which ν equals the gradient of E at z exactly. The
  thesis's step goes half way there.
- **The start** solves the μ = 0 system ``(J + γ Lap) z₀ = J y`` (label propagation). It is
  singular when a connected component of the graph holds no labelled point; such components get a
  small ridge (``ridge``, 1e-8) on their diagonal, and only at μ = 0. Their right-hand side is zero,
  so they get z₀ = 0 whatever the ridge (the minimum-norm solution) and the components with labels
  are solved exactly.

The label step solves ``(J + γ Lap + μ I) z = J y + μ t + ν/2`` for all C columns at once, with a
factorisation cached across iterations (:class:`CachedSolver`: eigendecomposition of
``J + γ Lap``, or a sparse LU refactorised only when μ changes) or with conjugate gradients
(:class:`CGSolver`). The exact leaf solve (:func:`exact_leaf_values`) finds the constant leaf
values minimising E for a fixed routing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from sklearn.exceptions import ConvergenceWarning

from models.ground.errors import TreevizError
from models.parallel import interruptible

METHODS = ("auto", "eigen", "lu", "cg")
#: "auto" uses the dense eigendecomposition up to this many points and sparse CG above. The thesis
#: used the eigendecomposition up to a few thousand points, but it holds two dense N × N arrays and
#: costs O(N³) once: 0.23 s at 1000 points, 1.7 s at 2000, 10.5 s at 3500 (one thread), when a whole
#: CG label step on 14 000 points takes 0.02–0.25 s (few to all labels). So the exact path is kept
#: for small N only, where it is cheap, and the default path above stays sparse (O(N k) memory).
EIGEN_MAX_POINTS = 1000


# ------------------------------------------------------------------------------------------- inputs
def partial_labels(y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-hot targets from class labels where −1 marks an unlabelled point (scikit-learn's convention).

    Parameters
    ----------
    y : array-like of shape (N,)
        Class labels; −1 for unlabelled points.

    Returns
    -------
    Y : ndarray of shape (N, C)
        One-hot rows for labelled points, zero rows for unlabelled ones.
    labelled : ndarray of shape (N,), bool
    classes : ndarray of shape (C,)
        The sorted classes seen among the labelled points (column order of Y).
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise TreevizError(f"The labels must be one value per point; got shape {y.shape}.")
    labelled = y != -1
    if not labelled.any():
        raise TreevizError("Every point is unlabelled (−1); label at least one point per class.")
    classes, codes = np.unique(y[labelled], return_inverse=True)
    Y = np.zeros((y.size, classes.size))
    Y[np.flatnonzero(labelled), codes] = 1.0
    return Y, labelled, classes


def keep_fraction(labelled: np.ndarray, fraction: float, groups: np.ndarray | None,
                  rng: np.random.Generator) -> np.ndarray:
    """The labelled mask with only ``fraction`` of its points left labelled, drawn at random.

    With ``groups`` (each point's class), the draw is stratified: every class keeps
    ``max(1, round(fraction · n_c))`` of its n_c labelled points, so no class loses all its labels.
    Without, ``max(1, round(fraction · n))`` of the n labelled points are kept. ``fraction = 1``
    returns the mask unchanged and draws nothing.
    """
    labelled = np.asarray(labelled, dtype=bool)
    if not 0.0 < fraction <= 1.0:
        raise TreevizError(f"The labelled fraction must be in (0, 1]; got {fraction!r}.")
    if fraction == 1.0:
        return labelled.copy()
    out = np.zeros_like(labelled)
    pools = [np.flatnonzero(labelled)] if groups is None else [
        np.flatnonzero(labelled & (groups == g)) for g in np.unique(groups[labelled])]
    for pool in pools:
        count = max(1, round(fraction * pool.size))
        out[rng.choice(pool, size=count, replace=False)] = True
    return out


def label_matrix(laplacian, labelled, gamma: float) -> sparse.csr_matrix:
    """``J + γ Lap``, the part of the label-step matrix that does not change with μ."""
    lap = _check_laplacian(laplacian)
    mask = _check_mask(labelled, lap.shape[0])
    gamma = _check_gamma(gamma)
    return (sparse.diags(mask.astype(np.float64)) + gamma * lap).tocsr()


def unlabelled_components(laplacian, labelled) -> np.ndarray:
    """Boolean mask of the points in connected components of the graph with no labelled point."""
    lap = _check_laplacian(laplacian)
    mask = _check_mask(labelled, lap.shape[0])
    n_comp, comp = connected_components(lap, directed=False)
    has_label = np.bincount(comp[mask], minlength=n_comp) > 0
    return ~has_label[comp]


# ------------------------------------------------------------------------------------- objectives
def laptao_objective(t, Y, labelled, laplacian, gamma: float) -> float:
    """E(t) without the tree's penalty: ``Σ_c (t_c − y_c)ᵀ J (t_c − y_c) + γ Σ_c t_cᵀ Lap t_c``."""
    lap = _check_laplacian(laplacian)
    mask = _check_mask(labelled, lap.shape[0])
    T, Yc = _columns(t, lap.shape[0]), _targets(Y, mask)
    data = float(np.sum((T[mask] - Yc[mask]) ** 2))
    return data + _check_gamma(gamma) * float(np.sum(T * (lap @ T)))


def augmented_lagrangian(z, t, Y, labelled, laplacian, gamma: float, nu, mu: float) -> float:
    """``E(z) − Σ ν∘(z − t) + μ ‖z − t‖²`` without the tree's penalty."""
    n = _check_laplacian(laplacian).shape[0]
    Z, T, Nu = _columns(z, n), _columns(t, n), _columns(nu, n)
    gap = Z - T
    return laptao_objective(Z, Y, labelled, laplacian, gamma) - float(np.sum(Nu * gap)) + mu * float(np.sum(gap**2))


def label_step_gradient(z, t, Y, labelled, laplacian, gamma: float, nu, mu: float) -> np.ndarray:
    """Half the gradient of :func:`augmented_lagrangian` in z: ``J(z − y) + γ Lap z − ν/2 + μ(z − t)``.

    It is zero at the label step's solution. Returned in z's shape.
    """
    lap = _check_laplacian(laplacian)
    mask = _check_mask(labelled, lap.shape[0])
    n = lap.shape[0]
    Z, T, Nu = _columns(z, n), _columns(t, n), _columns(nu, n)
    grad = mask[:, None] * (Z - _targets(Y, mask)) + _check_gamma(gamma) * (lap @ Z) - Nu / 2 + mu * (Z - T)
    return grad.reshape(np.shape(z))


def label_step_rhs(Y, labelled, t, nu, mu: float) -> np.ndarray:
    """The label step's right-hand side ``J y + μ t + ν/2`` (N × C)."""
    n = np.shape(labelled)[0]
    mask = _check_mask(labelled, n)
    return _targets(Y, mask) + mu * _columns(t, n) + _columns(nu, n) / 2


# ----------------------------------------------------------------------------------------- solvers
@dataclass
class CGInfo:
    """How a conjugate-gradient solve ended: iterations, worst relative residual, converged."""

    iterations: int
    residual: float
    converged: bool


def conjugate_gradients(A, B: np.ndarray, *, x0: np.ndarray | None = None, rtol: float = 1e-6,
                        max_iter: int | None = None, diagonal: np.ndarray | None = None,
                        single_products: bool = False) -> tuple[np.ndarray, CGInfo]:
    """Solve ``A X = B`` for every column of B at once by (Jacobi-preconditioned) conjugate gradients.

    Each column runs its own CG recursion; one product ``A @ P`` per iteration serves all the
    columns still running. A column stops when ``‖b − A x‖ ≤ rtol ‖b‖``; a zero column has the
    solution zero.

    Parameters
    ----------
    A : sparse matrix or ndarray of shape (N, N)
        Symmetric positive definite.
    B : ndarray of shape (N, C)
    x0 : ndarray of shape (N, C), optional
        Warm start (the previous label step's z).
    rtol : float, default 1e-6
    max_iter : int, optional
        Default ``max(100, 2 N)``.
    diagonal : ndarray of shape (N,), optional
        A's diagonal, for the Jacobi preconditioner; none if omitted.
    single_products : bool, default False
        Form the products ``A @ P`` in single precision (a sparse A: about 2.5× faster, half the
        memory traffic), everything else in double. The recursion's residual then drifts from the
        true one by about 1e-7 relative, so for a tolerance well above that (the leave-one-out
        score's unit solves) the true residual is checked in double precision at the end and any
        column above the tolerance is finished by double-precision CG from where it stands.

    Returns
    -------
    X : ndarray of shape (N, C)
    info : CGInfo
    """
    B = np.asarray(B, dtype=np.float64)
    n, c = B.shape
    max_iter = max(100, 2 * n) if max_iter is None else int(max_iter)
    inv_diag = np.ones(n) if diagonal is None else 1.0 / np.asarray(diagonal, dtype=np.float64)
    X = np.zeros_like(B) if x0 is None else np.array(x0, dtype=np.float64).reshape(n, c)
    b_norm = np.linalg.norm(B, axis=0)
    X[:, b_norm == 0] = 0.0
    R = B - A @ X
    target = rtol * b_norm
    S = inv_diag[:, None] * R
    P = S.copy()
    rs = np.sum(R * S, axis=0)
    res = np.linalg.norm(R, axis=0)
    # The columns still running are kept side by side in compact arrays (one sparse product per
    # iteration for all of them, no gathers and scatters through the full N × C arrays); a column
    # leaves them, its X written back, once it has converged.
    cols = np.flatnonzero(res > target)
    Xa, Ra, Pa, rsa = X[:, cols], R[:, cols], P[:, cols], rs[cols]
    A_single = None
    if single_products and cols.size:  # A's index arrays are shared, only the values are copied
        A = sparse.csr_matrix(A)
        A_single = sparse.csr_matrix((A.data.astype(np.float32), A.indices, A.indptr), shape=A.shape)
    it = 0
    while cols.size and it < max_iter:
        APa = A @ Pa if A_single is None else (A_single @ Pa.astype(np.float32)).astype(np.float64)
        alpha = rsa / np.einsum("ij,ij->j", Pa, APa)
        Xa += alpha * Pa
        Ra -= alpha * APa
        Sa = inv_diag[:, None] * Ra
        rs_new = np.einsum("ij,ij->j", Ra, Sa)
        Pa *= rs_new / rsa
        Pa += Sa
        rsa = rs_new
        res[cols] = np.linalg.norm(Ra, axis=0)
        it += 1
        done = ~(res[cols] > target[cols])
        if done.any():
            X[:, cols[done]] = Xa[:, done]
            keep = ~done
            cols, Xa, Ra, Pa, rsa = cols[keep], Xa[:, keep], Ra[:, keep], Pa[:, keep], rsa[keep]
    X[:, cols] = Xa
    if A_single is not None:  # the true residual, in double precision
        R = A @ X
        np.subtract(B, R, out=R)
        res = np.linalg.norm(R, axis=0)
        del R
        redo = np.flatnonzero(res > target)
        if redo.size and it < max_iter:
            X[:, redo], more = conjugate_gradients(A, B[:, redo], x0=X[:, redo], rtol=rtol, max_iter=max_iter - it,
                                                   diagonal=diagonal)
            it += more.iterations
            res[redo] = more.residual * b_norm[redo]
    active = res > target
    rel = np.divide(res, b_norm, out=np.zeros_like(res), where=b_norm > 0)
    return X, CGInfo(iterations=it, residual=float(rel.max(initial=0.0)), converged=not active.any())


class CachedSolver:
    """The label step by a factorisation computed once and re-used while only the right-hand side changes.

    ``method="eigen"``: a dense eigendecomposition ``J + γ Lap = Q Λ Qᵀ`` made once; every μ then
    costs ``z = Q (Λ + μ I)⁻¹ Qᵀ rhs`` (O(N² C)). For small N only (it holds N × N arrays). At
    μ = 0 the eigenvalues at or below 1e-12 × the largest are left out (the minimum-norm solution,
    which equals the ridge solution of the module docstring for a right-hand side that is zero on
    unlabelled components).

    ``method="lu"``: a sparse LU of ``J + γ Lap + μ I``, kept for the last μ and made again when μ
    changes (``n_factorizations`` counts them). At μ = 0 the ridge goes on unlabelled components.

    Parameters
    ----------
    laplacian : sparse matrix or ndarray of shape (N, N)
    labelled : ndarray of shape (N,), bool
    gamma : float
        Weight of ``zᵀ Lap z`` (the matrix form); > 0.
    method : {"eigen", "lu"}
    ridge : float, default 1e-8
    stop : callable, optional
        A cancel: the eigendecomposition is left at once when it returns True, and "lu" is used.
    """

    def __init__(self, laplacian, labelled, gamma: float, *, method: str = "eigen", ridge: float = 1e-8,
                 stop: Callable[[], bool] = lambda: False):
        if method not in ("eigen", "lu"):
            raise TreevizError(f"The cached label-step solver is 'eigen' or 'lu'; got {method!r}.")
        self.method = method
        self.matrix = label_matrix(laplacian, labelled, gamma)
        self.n = self.matrix.shape[0]
        self._ridge = _ridge_diagonal(laplacian, labelled, ridge)
        self.n_factorizations = 0
        self._lu = None
        self._lu_mu: float | None = None
        if method == "eigen":
            # seconds on a few thousand points: a cancel leaves it to its thread and factorises per μ instead
            eig = interruptible(np.linalg.eigh, self.matrix.toarray(), stop=stop)
            if eig is None:
                self.method = "lu"
            else:
                self._evals, self._Q = eig
                self.n_factorizations = 1

    def solve(self, rhs, mu: float, *, x0=None) -> np.ndarray:
        """z with ``(J + γ Lap + μ I) z = rhs`` (``x0`` is accepted for a common interface, unused)."""
        mu = _check_mu(mu)
        R = _columns(rhs, self.n)
        if self.method == "eigen":
            d = self._evals + mu
            if mu == 0:
                keep = d > 1e-12 * max(1.0, float(np.abs(self._evals).max()))
                inv = np.where(keep, 1.0 / np.where(keep, d, 1.0), 0.0)
            else:
                inv = 1.0 / d
            Z = self._Q @ (inv[:, None] * (self._Q.T @ R))
        else:
            if self._lu is None or self._lu_mu != mu:
                shift = self._ridge if mu == 0 else np.full(self.n, mu)
                self._lu = splu((self.matrix + sparse.diags(shift)).tocsc())
                self._lu_mu = mu
                self.n_factorizations += 1
            Z = self._lu.solve(R)
        return Z.reshape(np.shape(rhs))


class CGSolver:
    """The label step by conjugate gradients, Jacobi-preconditioned, warm-started from ``x0``.

    Each solve stops at ``‖rhs − A z‖ ≤ rtol ‖rhs‖`` per column or after ``max_iter`` iterations (a
    :class:`~sklearn.exceptions.ConvergenceWarning` then says so); ``last_info`` keeps the
    :class:`CGInfo`. At μ = 0 the ridge goes on unlabelled components.

    Parameters
    ----------
    laplacian, labelled, gamma, ridge
        As :class:`CachedSolver`.
    rtol : float, default 1e-6
    max_iter : int, optional
        Default ``max(100, 2 N)``.
    """

    method = "cg"

    def __init__(self, laplacian, labelled, gamma: float, *, rtol: float = 1e-6, max_iter: int | None = None,
                 ridge: float = 1e-8):
        if not rtol > 0:
            raise TreevizError(f"The conjugate-gradient tolerance must be positive; got {rtol}.")
        self.matrix = label_matrix(laplacian, labelled, gamma)
        self.n = self.matrix.shape[0]
        self.rtol, self.max_iter = float(rtol), max_iter
        self._ridge = _ridge_diagonal(laplacian, labelled, ridge)
        self._diag = self.matrix.diagonal()
        self.last_info: CGInfo | None = None
        #: products in single precision (see :func:`conjugate_gradients`); for loose tolerances only
        self.single_products = False
        self._system: tuple[float, sparse.csr_matrix] | None = None

    def system(self, mu: float) -> sparse.csr_matrix:
        """The matrix solved at μ: ``J + γ Lap + μ I`` (at μ = 0 with the ridge on unlabelled
        components); the last one is kept, so repeated solves at one μ share it."""
        mu = _check_mu(mu)
        if self._system is None or self._system[0] != mu:
            self._system = None  # the old one goes before the new one is built
            self._system = (mu, (self.matrix + sparse.diags(self._ridge if mu == 0 else np.full(self.n, mu))).tocsr())
        return self._system[1]

    def solve(self, rhs, mu: float, *, x0=None) -> np.ndarray:
        """z with ``(J + γ Lap + μ I) z = rhs``, starting from ``x0`` (zeros if omitted)."""
        mu = _check_mu(mu)
        shift = self._ridge if mu == 0 else np.full(self.n, mu)
        A = self.system(mu)
        R = _columns(rhs, self.n)
        start = None if x0 is None else _columns(x0, self.n)
        Z, info = conjugate_gradients(A, R, x0=start, rtol=self.rtol, max_iter=self.max_iter,
                                      diagonal=self._diag + shift, single_products=self.single_products)
        self.last_info = info
        if not info.converged:
            warnings.warn(f"The label step's conjugate gradients stopped after {info.iterations} iterations at a "
                          f"relative residual of {info.residual:.1e} (tolerance {self.rtol:.0e}).",
                          ConvergenceWarning, stacklevel=2)
        return Z.reshape(np.shape(rhs))


def make_solver(laplacian, labelled, gamma: float, *, method: str = "auto", rtol: float = 1e-6,
                max_iter: int | None = None, ridge: float = 1e-8,
                stop: Callable[[], bool] = lambda: False) -> CachedSolver | CGSolver:
    """A label-step solver: ``"eigen"``, ``"lu"``, ``"cg"``, or ``"auto"`` (eigen up to
    :data:`EIGEN_MAX_POINTS` points, CG above); ``stop`` (a cancel) cuts the eigendecomposition
    short (see :class:`CachedSolver`)."""
    if method not in METHODS:
        raise TreevizError(f"The label-step solver must be one of {', '.join(METHODS)}; got {method!r}.")
    if method == "auto":
        method = "eigen" if _check_laplacian(laplacian).shape[0] <= EIGEN_MAX_POINTS else "cg"
    if method == "cg":
        return CGSolver(laplacian, labelled, gamma, rtol=rtol, max_iter=max_iter, ridge=ridge)
    return CachedSolver(laplacian, labelled, gamma, method=method, ridge=ridge, stop=stop)


# ------------------------------------------------------------------------------ the LapTAO steps
def label_propagation(solver: CachedSolver | CGSolver, Y, labelled) -> np.ndarray:
    """The start z₀: ``(J + γ Lap) z₀ = J y`` (μ = 0, ν = 0), with the ridge guard of the module docstring.

    Returned with Y's shape; argmax over the columns is the label-propagation classifier.
    """
    mask = _check_mask(labelled, solver.n)
    return solver.solve(_targets(Y, mask), 0.0).reshape(np.shape(Y))


def label_step(solver: CachedSolver | CGSolver, Y, labelled, t, nu, mu: float, *, x0=None) -> np.ndarray:
    """The z-step: ``(J + γ Lap + μ I) z = J y + μ t + ν/2`` for the tree outputs t and multipliers ν.

    Parameters
    ----------
    solver : CachedSolver or CGSolver
        Built on the same Laplacian, labelled mask and γ.
    Y : ndarray of shape (N, C) or (N,)
        Targets; rows of unlabelled points are ignored (they may hold anything, NaN included).
    labelled : ndarray of shape (N,), bool
    t : ndarray like Y
        The current tree's outputs on all N points.
    nu : ndarray like Y
        The multipliers.
    mu : float
        The penalty parameter, > 0.
    x0 : ndarray like Y, optional
        Warm start for CG (the previous z).

    Returns
    -------
    z : ndarray like t
    """
    if not mu > 0:
        raise TreevizError(f"The label step needs a positive penalty parameter μ; got {mu}.")
    rhs = label_step_rhs(Y, _check_mask(labelled, solver.n), t, nu, mu)
    return solver.solve(rhs, mu, x0=x0).reshape(np.shape(t))


def update_multipliers(nu, z, t, mu: float, *, step: int = 1) -> np.ndarray:
    """``ν − step · μ (z − t)``: ``step=1`` is the thesis's update, ``step=2`` the textbook one."""
    if step not in (1, 2):
        raise TreevizError(f"The multiplier step is 1 (the thesis's) or 2 (the textbook's); got {step}.")
    return np.asarray(nu, dtype=np.float64) - step * mu * (np.asarray(z, dtype=np.float64) - np.asarray(t))


def tree_targets(z, nu, mu: float) -> np.ndarray:
    """The tree step's regression targets ``z − ν/(2μ)`` (completing the square in the Lagrangian)."""
    if not mu > 0:
        raise TreevizError(f"The tree step needs a positive penalty parameter μ; got {mu}.")
    return np.asarray(z, dtype=np.float64) - np.asarray(nu, dtype=np.float64) / (2.0 * mu)


# ------------------------------------------------------------------------------ exact leaf solve
def leaf_membership(leaf) -> tuple[np.ndarray, sparse.csr_matrix]:
    """The leaves that some point reaches (sorted ids) and the N × m 0/1 membership matrix M."""
    leaf = np.asarray(leaf)
    if leaf.ndim != 1 or leaf.size == 0 or not np.issubdtype(leaf.dtype, np.integer):
        raise TreevizError("The leaf assignment must be one integer leaf id per point.")
    leaves, col = np.unique(leaf, return_inverse=True)
    M = sparse.csr_matrix((np.ones(leaf.size), (np.arange(leaf.size), col)), shape=(leaf.size, leaves.size))
    return leaves, M


def exact_leaf_values(leaf, Y, labelled, laplacian, gamma: float, *,
                      previous: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The constant leaf values minimising E for a fixed routing (decision nodes frozen).

    With ``t = M c`` (M the membership matrix, c the m × C leaf values) E is a quadratic in c whose
    minimiser solves ``(Mᵀ J M + γ Mᵀ Lap M) c = Mᵀ J y`` (the same matrix-form γ as the label
    step). Leaves no point reaches are not in the system (the caller keeps their values). The matrix
    is singular on a group of leaves linked by graph edges among themselves but to no labelled
    point: E is the same for every constant value on such a group, and it gets the mean of the
    group's ``previous`` values (so a lone such leaf keeps its value), or 0 without ``previous``.

    Parameters
    ----------
    leaf : ndarray of shape (N,), int
        The leaf each point reaches (any node ids, e.g. ``tree.apply(X)``).
    Y : ndarray of shape (N, C) or (N,)
        Targets; rows of unlabelled points are ignored.
    labelled : ndarray of shape (N,), bool
    laplacian : sparse matrix or ndarray of shape (N, N)
    gamma : float
    previous : ndarray of shape (n_nodes, C) or (n_nodes,), optional
        Current values indexed by leaf id.

    Returns
    -------
    leaves : ndarray of shape (m,)
        Sorted ids of the leaves some point reaches.
    values : ndarray of shape (m, C), or (m,) for 1-D Y
    """
    lap = _check_laplacian(laplacian)
    n = lap.shape[0]
    mask = _check_mask(labelled, n)
    gamma = _check_gamma(gamma)
    leaves, M = leaf_membership(leaf)
    if M.shape[0] != n:
        raise TreevizError(f"The leaf assignment has {M.shape[0]} points but the graph has {n}.")
    Yc = _targets(Y, mask)
    labelled_per_leaf = np.asarray(M.T @ mask.astype(np.float64)).ravel()
    leaf_lap = (M.T @ lap @ M).toarray()
    A = np.diag(labelled_per_leaf) + gamma * leaf_lap
    b = np.asarray(M.T @ Yc)
    m = leaves.size
    values = np.zeros((m, Yc.shape[1]))
    n_groups, group = connected_components(sparse.csr_matrix(np.abs(leaf_lap) > 0), directed=False)
    has_label = np.bincount(group, weights=labelled_per_leaf, minlength=n_groups) > 0
    solvable = has_label[group]
    if solvable.any():
        idx = np.flatnonzero(solvable)
        values[idx] = np.linalg.solve(A[np.ix_(idx, idx)], b[idx])
    if previous is not None and not solvable.all():
        prev = np.asarray(previous, dtype=np.float64).reshape(-1, Yc.shape[1])[leaves]
        for g in np.flatnonzero(~has_label):
            members = group == g
            values[members] = prev[members].mean(axis=0)
    return leaves, values.reshape((m, *np.shape(Y)[1:]))


# ------------------------------------------------------------------------------------- helpers
def _ridge_diagonal(laplacian, labelled, ridge: float) -> np.ndarray:
    if not ridge > 0:
        raise TreevizError(f"The ridge for unlabelled parts of the graph must be positive; got {ridge}.")
    return np.where(unlabelled_components(laplacian, labelled), float(ridge), 0.0)


def _check_laplacian(laplacian) -> sparse.csr_matrix:
    lap = sparse.csr_matrix(laplacian, dtype=np.float64)
    if lap.shape[0] != lap.shape[1]:
        raise TreevizError(f"The graph Laplacian must be square; got shape {lap.shape}.")
    if lap.nnz and not np.all(np.isfinite(lap.data)):
        raise TreevizError("The graph Laplacian has missing or infinite entries.")
    return lap


def _check_mask(labelled, n: int) -> np.ndarray:
    mask = np.asarray(labelled)
    if mask.shape != (n,) or mask.dtype != bool:
        raise TreevizError(f"The labelled mask must be {n} booleans, one per point of the graph.")
    if not mask.any():
        raise TreevizError("No point is labelled; LapTAO needs at least one labelled point.")
    return mask


def _check_gamma(gamma: float) -> float:
    gamma = float(gamma)
    if not (np.isfinite(gamma) and gamma > 0):
        raise TreevizError(f"The graph weight γ must be positive; got {gamma}.")
    return gamma


def _check_mu(mu: float) -> float:
    mu = float(mu)
    if not (np.isfinite(mu) and mu >= 0):
        raise TreevizError(f"The penalty parameter μ must be zero or positive; got {mu}.")
    return mu


def _columns(a, n: int) -> np.ndarray:
    """``a`` as an N × C float array (a 1-D array becomes one column)."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise TreevizError(f"Expected {n} rows (one per point of the graph); got shape {np.shape(a)}.")
    return arr


def _targets(Y, mask: np.ndarray) -> np.ndarray:
    """``J y``: targets as N × C with the rows of unlabelled points set to 0 (they may hold NaN)."""
    T = _columns(Y, mask.shape[0])
    return np.where(mask[:, None], T, 0.0)
