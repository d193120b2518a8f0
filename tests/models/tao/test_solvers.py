"""Decision-node solvers of TAO: sklearn/liblinear wrapper, batched torch FISTA, exact axis splits.

Covered: the reduced problem's objective and λ in sum form (C = 1/λ for liblinear), the degenerate
care sets (one class, no care point), the bias left unpenalised, separable care sets, batched vs
one-at-a-time solves, and exact axis-aligned enumeration. All numerics in float64 with fixed seeds.
The generic oracle is cvxpy + CLARABEL.

Tolerances: the sklearn wrapper is run with ``intercept_scaling=1e4`` wherever it is compared with
an exact solver at 1e-4/1e-5 relative. liblinear penalises the bias by ``λ|b|/intercept_scaling``;
with the default 100 and λ = 10 that is ~0.1·|b| in the objective, i.e. up to ~1e-4 relative on
these problems — the size of the tolerance itself. With 1e4 the approximation is ~1e-6 relative.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from models.ground.errors import TreevizError
from models.tao.solvers.axis import axis_split_to_hyperplane, best_axis_split
from models.tao.solvers.fista import l1_logistic_torch
from models.tao.solvers.liblinear import l1_logistic_sklearn
from models.tao.solvers.objectives import logistic_objective, weighted_01_loss

cp = pytest.importorskip("cvxpy")

LAMS = (0.01, 0.1, 1.0, 10.0)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Run torch single-threaded here. The problems are small; with several intra-op threads on a
    busy shared machine every small op waits at an OpenMP barrier (measured: 15-25x slower)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def noisy_problem(rng: np.random.Generator, n: int, D: int, noise: float = 0.1, shift: float = 0.0):
    """Non-separable reduced problem: sparse linear truth, label noise, random positive weights."""
    X = rng.normal(size=(n, D)) + shift
    w_true = rng.normal(size=D) * (rng.random(D) < 0.5)
    w_true[0] += 1.0  # at least one relevant feature
    y = np.where(X @ w_true + 0.3 > 0, 1.0, -1.0)
    y[rng.random(n) < noise] *= -1
    y[0], y[1] = 1.0, -1.0  # both classes present
    v = rng.uniform(0.2, 2.0, n)
    return X, y, v


def torch_single(X, y, v, lam, **kw):
    W, B = l1_logistic_torch(X, y, v, np.zeros(len(y), dtype=np.int64), 1, lam, **kw)
    return W[0], float(B[0])


def cvxpy_solve(X, y, v, lam):
    D = X.shape[1]
    w, b = cp.Variable(D), cp.Variable()
    obj = cp.sum(cp.multiply(v, cp.logistic(-cp.multiply(y, X @ w + b)))) + lam * cp.norm1(w)
    cp.Problem(cp.Minimize(obj)).solve(solver="CLARABEL")
    return np.asarray(w.value, dtype=float), float(b.value)


def rel_gap(f, f_ref):
    return (f - f_ref) / abs(f_ref)


def support(w, thr=1e-6):
    return np.abs(w) > thr


def loss_gradient(X, y, v, w, b):
    """Gradient of Σ v log(1+exp(−y(w·x+b))) with respect to (w, b)."""
    z = X @ w + b
    r = -v * y / (1.0 + np.exp(y * z))  # −v y σ(−y z)
    return X.T @ r, float(r.sum())


# --------------------------------------------------------------------------------------------
# agreement between back-ends and with a generic solver
# --------------------------------------------------------------------------------------------


def test_sklearn_and_torch_agree_on_random_problems():
    """30 problems, D 2–20, n 20–300, λ ∈ {0.01, 0.1, 1, 10}; torch solves them all in ONE batched
    call (features zero-padded to a common D — a zero column is constant, so its weight is 0)."""
    rng = np.random.default_rng(0)
    probs = []
    for k in range(30):
        n, D = int(rng.integers(20, 301)), int(rng.integers(2, 21))
        probs.append((*noisy_problem(rng, n, D), LAMS[k % 4]))
    Dmax = max(p[0].shape[1] for p in probs)
    Xall = np.vstack([np.pad(X, ((0, 0), (0, Dmax - X.shape[1]))) for X, *_ in probs])
    yall = np.concatenate([p[1] for p in probs])
    vall = np.concatenate([p[2] for p in probs])
    gall = np.concatenate([np.full(len(p[1]), g) for g, p in enumerate(probs)])
    lams = np.array([p[3] for p in probs])
    W, B = l1_logistic_torch(Xall, yall, vall, gall, len(probs), lams, tol=1e-9, max_iter=20000)
    for g, (X, y, v, lam) in enumerate(probs):
        D = X.shape[1]
        assert np.all(W[g, D:] == 0.0)
        ws, bs = l1_logistic_sklearn(X, y, v, lam, tol=1e-8, max_iter=10000, intercept_scaling=1e4)
        fs = logistic_objective(X, y, v, ws, bs, lam)
        ft = logistic_objective(X, y, v, W[g, :D], B[g], lam)
        assert abs(rel_gap(fs, ft)) <= 1e-4, (g, fs, ft)
        assert ft <= fs * (1 + 1e-9), "the exact-bias solver should not be worse than liblinear"
        diff = support(ws) != support(W[g, :D])
        # same support up to tiny coefficients
        assert np.all(np.maximum(np.abs(ws), np.abs(W[g, :D]))[diff] < 1e-4), (g, ws, W[g, :D])


@pytest.mark.parametrize("seed", range(6))
def test_both_backends_match_cvxpy(seed):
    rng = np.random.default_rng(100 + seed)
    n, D = int(rng.integers(20, 61)), int(rng.integers(2, 7))
    lam = LAMS[seed % 4]
    X, y, v = noisy_problem(rng, n, D, noise=0.15)
    wc, bc = cvxpy_solve(X, y, v, lam)
    fc = logistic_objective(X, y, v, wc, bc, lam)
    ws, bs = l1_logistic_sklearn(X, y, v, lam, tol=1e-8, max_iter=10000, intercept_scaling=1e4)
    wt, bt = torch_single(X, y, v, lam, tol=1e-9, max_iter=20000)
    assert abs(rel_gap(logistic_objective(X, y, v, ws, bs, lam), fc)) <= 1e-5
    assert abs(rel_gap(logistic_objective(X, y, v, wt, bt, lam), fc)) <= 1e-5


def test_batched_equals_one_at_a_time():
    rng = np.random.default_rng(7)
    D = 8
    sizes = [30, 200, 75, 0, 120, 12, 50]  # group 3 is empty
    parts = [noisy_problem(rng, max(n, 2), D, shift=rng.normal()) for n in sizes]
    parts[3] = (np.empty((0, D)), np.empty(0), np.empty(0))
    X5, y5, v5 = parts[5]
    parts[5] = (X5, np.ones_like(y5), v5)  # single class → w = 0, b = +1
    lams = np.array([0.01, 0.1, 1.0, 1.0, 10.0, 0.3, 3.0])
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    v = np.concatenate([p[2] for p in parts])
    g = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])
    # shuffle rows: groups need not be contiguous
    perm = rng.permutation(len(y))
    W, B = l1_logistic_torch(X[perm], y[perm], v[perm], g[perm], len(parts), lams, tol=1e-10, max_iter=20000)
    assert W.shape == (len(parts), D) and B.shape == (len(parts),)
    assert W.dtype == np.float64 and B.dtype == np.float64
    assert np.all(W[3] == 0) and B[3] == 0.0  # empty group
    assert np.all(W[5] == 0) and B[5] == 1.0  # single class
    for i, (Xi, yi, vi) in enumerate(parts):
        if i in (3, 5):
            continue
        wi, bi = torch_single(Xi, yi, vi, lams[i], tol=1e-10, max_iter=20000)
        f_batch = logistic_objective(Xi, yi, vi, W[i], B[i], lams[i])
        f_alone = logistic_objective(Xi, yi, vi, wi, bi, lams[i])
        assert abs(rel_gap(f_batch, f_alone)) <= 1e-8, (i, f_batch, f_alone)


def test_torch_accepts_tensors_and_scalar_or_array_lambda():
    rng = np.random.default_rng(3)
    X, y, v = noisy_problem(rng, 80, 5)
    g = np.zeros(80, dtype=np.int64)
    W1, B1 = l1_logistic_torch(X, y, v, g, 1, 0.5)
    W2, B2 = l1_logistic_torch(
        torch.tensor(X), torch.tensor(y), torch.tensor(v), torch.tensor(g), 1, np.array([0.5])
    )
    np.testing.assert_array_equal(W1, W2)
    np.testing.assert_array_equal(B1, B2)


# --------------------------------------------------------------------------------------------
# separable, degenerate, uncentred and mis-scaled problems
# --------------------------------------------------------------------------------------------


def test_separable_node_solved_exactly():
    """Separable care points with a margin, λ = 1e-3 → weighted 0/1 loss 0."""
    rng = np.random.default_rng(11)
    for D in (2, 5, 12):
        X = rng.normal(size=(600, D)) + 1.0
        w_true = np.zeros(D)
        w_true[: min(3, D)] = rng.normal(size=min(3, D))
        s = X @ w_true - 0.5
        keep = np.abs(s) > 0.3 * np.linalg.norm(w_true)  # margin
        X, y = X[keep][:150], np.where(s[keep] > 0, 1.0, -1.0)[:150]
        v = rng.uniform(0.5, 2.0, len(y))
        assert 0 < (y > 0).sum() < len(y)
        ws, bs = l1_logistic_sklearn(X, y, v, 1e-3)
        wt, bt = torch_single(X, y, v, 1e-3)
        assert weighted_01_loss(X, y, v, ws, bs) == 0.0
        assert weighted_01_loss(X, y, v, wt, bt) == 0.0


def test_single_class_and_empty_care(monkeypatch):
    """Degenerate care sets need no solver call: one class → w = 0 and sign(b) toward it; empty → w = 0."""

    def boom(self, *a, **k):  # pragma: no cover - must not be reached
        raise AssertionError("LogisticRegression.fit must not be called")

    monkeypatch.setattr(LogisticRegression, "fit", boom)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 4))
    v = rng.uniform(0.5, 1.5, 20)
    for label in (1.0, -1.0):
        w, b = l1_logistic_sklearn(X, np.full(20, label), v, 0.1)
        assert np.all(w == 0) and w.shape == (4,) and np.sign(b) == label
        # points of the other class with zero weight do not count
        y = np.full(20, label)
        y[:3] = -label
        vz = v.copy()
        vz[:3] = 0.0
        w, b = l1_logistic_sklearn(X, y, vz, 0.1)
        assert np.all(w == 0) and np.sign(b) == label
    w, b = l1_logistic_sklearn(np.empty((0, 4)), np.empty(0), np.empty(0), 0.1)
    assert np.all(w == 0) and w.shape == (4,) and b == 1.0

    # torch: single-class groups are masked; empty groups give w = 0, b = 0
    y = np.r_[np.ones(10), -np.ones(10)]
    g = np.r_[np.zeros(10, int), np.ones(10, int)]
    W, B = l1_logistic_torch(X, y, v, g, 3, 0.1)
    assert np.all(W == 0)
    assert B[0] == 1.0 and B[1] == -1.0 and B[2] == 0.0
    W, B = l1_logistic_torch(np.empty((0, 4)), np.empty(0), np.empty(0), np.empty(0, int), 2, 0.1)
    assert np.all(W == 0) and np.all(B == 0) and W.shape == (2, 4)


def test_intercept_not_penalized():
    """The bias is not penalised: uncentred features (mean 3), 2 relevant of 10, balanced; λ gives support 2."""
    rng = np.random.default_rng(0)
    n, D = 400, 10
    Z = rng.normal(size=(n, D))
    X = Z + 3.0
    y = np.where(Z[:, 0] + Z[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    assert abs((y > 0).mean() - 0.5) < 0.05
    v = np.ones(n)
    lam = 30.0
    ws, bs = l1_logistic_sklearn(X, y, v, lam)  # intercept_scaling = 100
    wt, bt = torch_single(X, y, v, lam)
    for w, b in ((ws, bs), (wt, bt)):
        assert np.count_nonzero(w) <= 2
        assert set(np.flatnonzero(w)) <= {0, 1}
        assert abs(b) > 1.0
    # what liblinear's default intercept_scaling=1 does instead: bias pinned near 0, spurious features
    wbad, bbad = l1_logistic_sklearn(X, y, v, lam, intercept_scaling=1.0)
    assert np.count_nonzero(wbad) > 2 and abs(bbad) < 1.0


@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_lambda_C_mapping(lam):
    """λ is in sum form: the returned solution beats (w=0, best constant bias), random perturbations, and the
    solutions of mis-scaled problems (λ·n — the mean-form confusion — and λ/10, λ·10)."""
    rng = np.random.default_rng(21)
    X, y, v = noisy_problem(rng, 150, 6, noise=0.2, shift=0.5)
    n = len(y)
    def f(w, b):
        return logistic_objective(X, y, v, w, b, lam)
    b_const = np.log(v[y > 0].sum() / v[y < 0].sum())
    for solve in (
        lambda lam_: l1_logistic_sklearn(X, y, v, lam_),
        lambda lam_: torch_single(X, y, v, lam_),
    ):
        w, b = solve(lam)
        f0 = f(w, b)
        assert f0 <= f(np.zeros(6), b_const)
        for _ in range(10):
            for scale in (1e-2, 1e-1):
                dw, db = rng.normal(size=6) * scale, rng.normal() * scale
                assert f0 <= f(w + dw, b + db) + 1e-12 * abs(f0)
        for wrong in (lam * n, lam / 10, lam * 10):
            assert f0 <= f(*solve(wrong)) + 1e-12 * abs(f0)


def test_lambda_zero():
    """λ = 0: the torch solver runs unpenalised; the sklearn wrapper uses the documented floor."""
    rng = np.random.default_rng(2)
    X, y, v = noisy_problem(rng, 200, 5, noise=0.25)
    ws, bs = l1_logistic_sklearn(X, y, v, 0.0, tol=1e-8, intercept_scaling=1e4)
    wt, bt = torch_single(X, y, v, 0.0, tol=1e-9, max_iter=20000)
    assert np.all(np.isfinite(ws)) and np.isfinite(bs)
    fs, ft = logistic_objective(X, y, v, ws, bs, 0.0), logistic_objective(X, y, v, wt, bt, 0.0)
    assert abs(rel_gap(fs, ft)) <= 1e-6


def test_sklearn_wrapper_raises_no_warnings():
    """No FutureWarning (``penalty`` deprecated in 1.8) and ConvergenceWarning is swallowed."""
    rng = np.random.default_rng(4)
    X, y, v = noisy_problem(rng, 100, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        l1_logistic_sklearn(X, y, v, 0.1)
        l1_logistic_sklearn(X, y, v, 1e-6, max_iter=1, tol=1e-12)  # would warn: did not converge


# --------------------------------------------------------------------------------------------
# warm starts, optimality conditions
# --------------------------------------------------------------------------------------------


def test_objective_never_increases_from_warm_start():
    rng = np.random.default_rng(9)
    G, D = 4, 7
    parts = [noisy_problem(rng, int(rng.integers(30, 150)), D, shift=3.0 * (i % 2)) for i in range(G)]
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    v = np.concatenate([p[2] for p in parts])
    g = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])
    lams = np.array([0.01, 0.1, 1.0, 10.0])
    W_opt, B_opt = l1_logistic_torch(X, y, v, g, G, lams, tol=1e-10, max_iter=20000)
    starts = [
        (rng.normal(size=(G, D)), rng.normal(size=G)),  # random
        (10 * rng.normal(size=(G, D)), 5 * rng.normal(size=G)),  # far away
        (W_opt, B_opt),  # at the optimum
        (W_opt + 1e-3 * rng.normal(size=(G, D)), B_opt),  # near it
    ]
    for w0, b0 in starts:
        for max_iter in (1, 2, 5, 50):
            W, B = l1_logistic_torch(X, y, v, g, G, lams, w0=w0, b0=b0, max_iter=max_iter)
            for i, (Xi, yi, vi) in enumerate(parts):
                f_new = logistic_objective(Xi, yi, vi, W[i], B[i], lams[i])
                f_start = logistic_objective(Xi, yi, vi, w0[i], b0[i], lams[i])
                assert f_new <= f_start, (i, max_iter, f_new, f_start)


@pytest.mark.parametrize("lam,shift", [(0.05, 0.0), (1.0, 3.0), (10.0, -1.0)])
def test_torch_solution_is_stationary(lam, shift):
    """Subgradient optimality at the returned point: ∂/∂b = 0, g_j = −λ sign(w_j) on the support,
    |g_j| ≤ λ off it."""
    rng = np.random.default_rng(31)
    X, y, v = noisy_problem(rng, 250, 12, noise=0.15, shift=shift)
    X[:, 3] *= 20.0  # badly scaled feature
    w, b = torch_single(X, y, v, lam, tol=1e-9, max_iter=20000)
    gw, gb = loss_gradient(X, y, v, w, b)
    scale_b = v.sum()
    scale_w = np.sqrt(v.sum() * (v[:, None] * X**2).sum(0))  # ≥ Σ v |x_j|
    assert abs(gb) <= 1e-5 * scale_b
    nz = w != 0
    assert (nz.any() and (~nz).any()) or lam < 0.1
    assert np.all(np.abs(gw[nz] + lam * np.sign(w[nz])) <= 1e-5 * scale_w[nz])
    assert np.all(np.abs(gw[~nz]) <= lam * (1 + 1e-4))


def test_float32_and_invalid_inputs():
    rng = np.random.default_rng(8)
    X, y, v = noisy_problem(rng, 120, 5)
    g = np.zeros(120, dtype=np.int64)
    w64, b64 = torch_single(X, y, v, 0.5, tol=1e-9)
    W32, B32 = l1_logistic_torch(X, y, v, g, 1, 0.5, dtype=torch.float32, tol=1e-5)
    f64 = logistic_objective(X, y, v, w64, b64, 0.5)
    assert abs(rel_gap(logistic_objective(X, y, v, W32[0], B32[0], 0.5), f64)) <= 1e-4
    with pytest.raises(TreevizError):
        l1_logistic_torch(X, y, -v, g, 1, 0.5)
    with pytest.raises(TreevizError):
        l1_logistic_torch(X, y, v, g + 1, 1, 0.5)
    with pytest.raises(TreevizError):
        l1_logistic_torch(X, y, v, g, 1, -1.0)
    with pytest.raises(TreevizError):
        l1_logistic_torch(X, y, v, g, 1, [0.1, 0.2])
    with pytest.raises(TreevizError):
        l1_logistic_torch(X, y, v, g, 1, 0.1, w0=np.zeros((1, 5)))
    with pytest.raises(TreevizError):
        l1_logistic_torch(X, y, v, g, 1, 0.1, w0=np.zeros((1, 4)), b0=np.zeros(1))
    with pytest.raises(TreevizError):
        l1_logistic_sklearn(X, y, v, -0.1)
    with pytest.raises(TreevizError):
        l1_logistic_sklearn(X[:, 0], y, v, 0.1)


# --------------------------------------------------------------------------------------------
# exact axis-aligned splits
# --------------------------------------------------------------------------------------------


def brute_force_split(X, y, v):
    """All (feature, threshold, orientation) by direct evaluation, plus both constant splits."""
    best = min(float(v[y < 0].sum()), float(v[y > 0].sum()))
    for j in range(X.shape[1]):
        u = np.unique(X[:, j])
        cands = np.r_[u[0] - 1.0, (u[:-1] + u[1:]) / 2, u[-1] + 1.0]
        for t, o in itertools.product(cands, (1, -1)):
            pred = np.where(X[:, j] > t, o, -o)
            best = min(best, float(v[pred != y].sum()))
    return best


def split_predictions(X, feature, threshold, orientation):
    if feature == -1:
        return np.full(len(X), float(orientation))
    if orientation == 1:
        return np.where(X[:, feature] > threshold, 1.0, -1.0)
    return np.where(X[:, feature] < threshold, 1.0, -1.0)


@pytest.mark.parametrize("seed", range(25))
def test_axis_aligned_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    n, D = 30, int(rng.integers(1, 6))
    if seed % 3 == 0:
        X = rng.integers(0, 5, size=(n, D)).astype(float)  # many ties
    elif seed % 3 == 1:
        X = np.round(rng.normal(size=(n, D)), 1)  # some ties
    else:
        X = rng.normal(size=(n, D))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    if seed == 5:
        y[:] = 1.0  # one class: the constant split is optimal
    v = rng.uniform(0.1, 3.0, n) if seed % 2 else np.ones(n)
    feature, threshold, orientation, loss = best_axis_split(X, y, v)
    assert loss == pytest.approx(brute_force_split(X, y, v), abs=1e-9)
    pred = split_predictions(X, feature, threshold, orientation)
    assert float(v[pred != y].sum()) == pytest.approx(loss, abs=1e-9)
    w, b = axis_split_to_hyperplane(feature, threshold, orientation, D)
    routed = np.where(X @ w + b > 0, 1.0, -1.0)  # project rule: right iff w·x + b > 0
    np.testing.assert_array_equal(routed, pred)
    assert weighted_01_loss(X, y, v, w, b) == pytest.approx(loss, abs=1e-9)
    if seed == 5:
        assert feature == -1 and orientation == 1 and loss == 0.0


def test_axis_split_adjacent_floats_and_constants():
    a = 1.0
    b = np.nextafter(a, 2.0)  # no float strictly between a and b
    X = np.array([[a], [a], [b], [b]])
    for y in (np.array([-1.0, -1, 1, 1]), np.array([1.0, 1, -1, -1])):
        f, t, o, loss = best_axis_split(X, y, np.ones(4))
        assert loss == 0.0 and f == 0
        w, bb = axis_split_to_hyperplane(f, t, o, 1)
        np.testing.assert_array_equal(np.where(X @ w + bb > 0, 1.0, -1.0), y)
    f, t, o, loss = best_axis_split(X, -np.ones(4), np.ones(4))
    assert (f, o, loss) == (-1, -1, 0.0) and np.isnan(t)
    w, bb = axis_split_to_hyperplane(f, t, o, 1)
    assert np.all(w == 0) and bb == -1.0
    # one point, and a feature-less problem: only constant splits exist
    assert best_axis_split(np.array([[0.3]]), np.array([1.0]), np.array([2.0]))[0] == -1
    assert best_axis_split(np.empty((5, 0)), np.ones(5), np.ones(5))[0] == -1


# --------------------------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    rng = np.random.default_rng(13)
    G, D = 6, 10
    parts = [noisy_problem(rng, int(rng.integers(50, 400)), D, shift=i - 2) for i in range(G)]
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    v = np.concatenate([p[2] for p in parts])
    g = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])
    lams = np.array([0.01, 0.1, 1.0, 10.0, 0.5, 2.0])
    Wc, Bc = l1_logistic_torch(X, y, v, g, G, lams, tol=1e-10, max_iter=20000)
    Wg, Bg = l1_logistic_torch(X, y, v, g, G, lams, tol=1e-10, max_iter=20000, device="cuda")
    for i, (Xi, yi, vi) in enumerate(parts):
        fc = logistic_objective(Xi, yi, vi, Wc[i], Bc[i], lams[i])
        fg = logistic_objective(Xi, yi, vi, Wg[i], Bg[i], lams[i])
        assert abs(rel_gap(fg, fc)) <= 1e-8
    W32, B32 = l1_logistic_torch(X, y, v, g, G, lams, tol=1e-5, device="cuda", dtype=torch.float32)
    for i, (Xi, yi, vi) in enumerate(parts):
        fc = logistic_objective(Xi, yi, vi, Wc[i], Bc[i], lams[i])
        assert abs(rel_gap(logistic_objective(Xi, yi, vi, W32[i], B32[i], lams[i]), fc)) <= 1e-4
