"""The compiled level solver (``models.tao.solvers.cd``) against liblinear, scikit-learn's Lasso and
SAGA, and cvxpy (the generic oracle), on random problems; its degenerate cases, warm starts, and
its use inside TAO (decision nodes and linear leaves)."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.linear_model import Lasso, LogisticRegression

from models.ground.errors import TreevizError
from models.tao import leaves
from models.tao.config import TAOConfig
from models.tao.estimators import TAOClassifier, TAORegressor
from models.tao.init import random_init
from models.tao.solvers.cd import l1_least_squares_level, l1_logistic_blocks, l1_logistic_level, l1_softmax_level
from models.tao.solvers.liblinear import l1_logistic_sklearn
from models.tao.solvers.objectives import logistic_objective
from models.tao.state import complete_tree

cp = pytest.importorskip("cvxpy")


def logistic_problems(rng, G, D, sizes=(20, 300)):
    """G noisy weighted binary problems with a sparse linear truth, rows tagged by group."""
    X, y, v, g = [], [], [], []
    for k in range(G):
        n = int(rng.integers(*sizes))
        Xk = rng.normal(size=(n, D)) * rng.uniform(0.2, 5.0, D)  # unequal feature scales
        w = rng.normal(size=D) * (rng.random(D) < 0.5)
        w[0] += 1.0
        yk = np.where(Xk @ w + 0.3 > 0, 1.0, -1.0)
        yk[rng.random(n) < 0.1] *= -1
        yk[0], yk[1] = 1.0, -1.0
        X.append(Xk)
        y.append(yk)
        v.append(rng.uniform(0.2, 2.0, n))
        g.append(np.full(n, k))
    return np.vstack(X), np.concatenate(y), np.concatenate(v), np.concatenate(g)


def cvxpy_logistic(X, y, v, lam):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    obj = cp.sum(cp.multiply(v, cp.logistic(-cp.multiply(y, X @ w + b)))) + lam * cp.norm1(w)
    cp.Problem(cp.Minimize(obj)).solve(solver="CLARABEL")
    return np.asarray(w.value, dtype=float), float(b.value)


@pytest.mark.parametrize("lam", [0.01, 1.0, 10.0])
def test_logistic_level_matches_liblinear_and_cvxpy(lam):
    """Every group's objective within 1e-4 relative of cvxpy's, and never above liblinear's
    (liblinear also penalises the bias a little) by more than 1e-6."""
    rng = np.random.default_rng(int(lam * 100))
    G, D = 12, 7
    X, y, v, g = logistic_problems(rng, G, D)
    W, B = l1_logistic_level(X, y, v, g, G, lam, tol=1e-7)
    for k in range(G):
        m = g == k
        f = logistic_objective(X[m], y[m], v[m], W[k], B[k], lam)
        ws, bs = l1_logistic_sklearn(X[m], y[m], v[m], lam, tol=1e-4, max_iter=200)
        fs = logistic_objective(X[m], y[m], v[m], ws, bs, lam)
        assert f <= fs * (1 + 1e-6), (k, f, fs)
        if k < 4:
            wc, bc = cvxpy_logistic(X[m], y[m], v[m], lam)
            fc = logistic_objective(X[m], y[m], v[m], wc, bc, lam)
            assert abs(f - fc) <= 1e-4 * abs(fc), (k, f, fc)


def test_many_features_and_a_strong_penalty_solve_in_covariance_form_over_the_active_ones():
    """D = 120 features, 200 to 300 rows: fewer than 4(D + 1), so only the step's active features
    (a strong λ keeps a few) put a problem in covariance form. The optimum still matches cvxpy and
    is never above liblinear's, and a weaker λ (many active, the residual form) agrees too."""
    rng = np.random.default_rng(5)
    G, D = 3, 120
    X, y, v, g = logistic_problems(rng, G, D, sizes=(200, 300))
    for lam in (30.0, 0.3):
        W, B = l1_logistic_level(X, y, v, g, G, lam, tol=1e-8)
        for k in range(G):
            m = g == k
            f = logistic_objective(X[m], y[m], v[m], W[k], B[k], lam)
            ws, bs = l1_logistic_sklearn(X[m], y[m], v[m], lam, tol=1e-4, max_iter=500)
            assert f <= logistic_objective(X[m], y[m], v[m], ws, bs, lam) * (1 + 1e-6)
            wc, bc = cvxpy_logistic(X[m], y[m], v[m], lam)
            fc = logistic_objective(X[m], y[m], v[m], wc, bc, lam)
            assert abs(f - fc) <= 1e-4 * abs(fc), (lam, k, f, fc)
        if lam == 30.0:
            assert 0 < np.count_nonzero(W, axis=1).max() < D // 4  # few features survive


@pytest.mark.parametrize("rows", [60, 600])  # the residual and the covariance form
def test_a_dense_warm_start_reaches_the_optimum_and_zeroes_features_absent_from_the_rows(rows):
    """TAO's random start gives every decision node a dense unit-Gaussian hyperplane. On many
    features its margins are large and wrong (a saturated loss: a flat Newton model), and a
    feature that is zero on all the node's rows (an image's border pixel) has no curvature and no
    slope. Either kept the warm start's weights: a pixel-like problem ended 5-500 times above
    liblinear's optimum with every weight nonzero. Now both reach liblinear's objective and the
    empty features' weights are 0."""
    rng = np.random.default_rng(3)
    D = 80
    X = rng.random((rows, D)) * (rng.random(D) < 0.7)  # about 30 % of the columns are all zero
    y = np.where(X[:, :10].sum(1) + 0.3 * rng.normal(size=rows) > X[:, :10].sum(1).mean(), 1.0, -1.0)
    v = rng.uniform(0.2, 2.0, rows) * 100
    group = np.zeros(rows, dtype=np.int64)
    lam = 10.0
    W, B = l1_logistic_level(X, y, v, group, 1, lam, w0=3 * rng.normal(size=(1, D)), b0=np.zeros(1), tol=1e-7,
                             max_iter=200)
    ws, bs = l1_logistic_sklearn(X, y, v, lam, tol=1e-6, max_iter=1000)
    f, fs = logistic_objective(X, y, v, W[0], B[0], lam), logistic_objective(X, y, v, ws, bs, lam)
    assert f <= fs * (1 + 1e-6), (f, fs)
    empty = ~X.any(axis=0)
    assert empty.sum() > 10 and np.all(W[0, empty] == 0.0)


@pytest.mark.parametrize("lam", [0.01, 3.0])
def test_logistic_blocks_equal_the_level_entry_bit_for_bit(lam):
    """The training loop's entry (rows already split by node, straight into the kernel's layout)
    gives exactly the level entry's result on the concatenated rows, warm starts included, for
    nodes in both the covariance form (many rows) and the residual form (few)."""
    rng = np.random.default_rng(11)
    G, D = 9, 6
    X, y, v, g = logistic_problems(rng, G, D, sizes=(8, 200))
    w0, b0 = rng.normal(size=(G, D)) * 0.1, rng.normal(size=G) * 0.1
    W, B = l1_logistic_level(X, y, v, g, G, lam, w0=w0, b0=b0, tol=1e-5, max_iter=50)
    blocks = [g == k for k in range(G)]
    W2, B2 = l1_logistic_blocks([X[m] for m in blocks], [y[m] for m in blocks], [v[m] for m in blocks], lam,
                                w0=w0, b0=b0, tol=1e-5, max_iter=50)
    np.testing.assert_array_equal(W2, W)
    np.testing.assert_array_equal(B2, B)


def test_logistic_level_degenerate_groups_and_dropped_weights():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    y = np.array([1, 1, 1, -1, -1, -1, 1, -1, 1, -1, 1, 1], dtype=float)
    v = np.ones(12)
    v[6:8] = 0.0  # rows with zero weight are ignored
    g = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 3])
    W, B = l1_logistic_level(X, y, v, g, 5, 0.1)  # group 4 has no row
    assert np.all(W[:3] == 0) and list(B[:3]) == [1.0, -1.0, 1.0]  # one class, one class, no weighted row
    assert B[4] == 1.0 and np.all(W[4] == 0)
    with pytest.raises(TreevizError, match="group ids"):
        l1_logistic_level(X, y, v, g + 10, 5, 0.1)
    with pytest.raises(TreevizError, match="non-negative"):
        l1_logistic_level(X, y, -v, g, 5, 0.1)


def test_logistic_warm_start_is_kept_at_the_optimum_and_never_worse():
    rng = np.random.default_rng(5)
    X, y, v, g = logistic_problems(rng, 5, 6)
    W, B = l1_logistic_level(X, y, v, g, 5, 1.0, tol=1e-9)
    W2, _ = l1_logistic_level(X, y, v, g, 5, 1.0, w0=W, b0=B, tol=1e-6)
    np.testing.assert_allclose(W2, W, atol=1e-6)
    # from a poor warm start (and a budget of one Newton step) the objective still only goes down
    w0, b0 = rng.normal(size=W.shape), rng.normal(size=5)
    W3, B3 = l1_logistic_level(X, y, v, g, 5, 1.0, w0=w0, b0=b0, max_iter=1)
    for k in range(5):
        m = g == k
        assert (logistic_objective(X[m], y[m], v[m], W3[k], B3[k], 1.0)
                <= logistic_objective(X[m], y[m], v[m], w0[k], b0[k], 1.0))


@pytest.mark.parametrize("lam", [0.0, 5.0, 200.0])
def test_least_squares_level_matches_lasso_and_cvxpy(lam):
    rng = np.random.default_rng(11)
    G, D, K = 5, 6, 2
    n = 400
    X = rng.normal(size=(n, D)) * rng.uniform(0.1, 10, D)
    Y = X @ rng.normal(size=(D, K)) + rng.normal(size=(n, K))
    s = rng.uniform(0.5, 2.0, n)
    g = rng.integers(G, size=n)
    W, C = l1_least_squares_level(X, Y, s, g, G, lam)

    def f(m, Wk, ck):
        return float((s[m, None] * (Y[m] - X[m] @ Wk.T - ck) ** 2).sum() + lam * np.abs(Wk).sum())

    for k in range(G):
        m = g == k
        if lam > 0:
            ref = Lasso(alpha=lam / (2 * s[m].sum()), tol=1e-12, max_iter=100_000).fit(X[m], Y[m], sample_weight=s[m])
            fr = f(m, ref.coef_.reshape(K, D), ref.intercept_)
            assert f(m, W[k], C[k]) <= fr * (1 + 1e-6)
        Wc, cc = cp.Variable((K, D)), cp.Variable(K)
        resid = Y[m] - X[m] @ Wc.T - np.ones((m.sum(), 1)) @ cp.reshape(cc, (1, K), order="C")
        prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(s[m][:, None] * np.ones((1, K)), cp.square(resid)))
                                      + lam * cp.sum(cp.abs(Wc))))
        prob.solve(solver="CLARABEL")
        assert abs(f(m, W[k], C[k]) - prob.value) <= 1e-4 * abs(prob.value)


def softmax_objective(X, Y, s, W, c, classes, lam):
    S = X @ W[classes].T + c[classes]
    mx = S.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(S - mx).sum(axis=1))
    return float((s * (lse - S[np.arange(Y.size), np.searchsorted(classes, Y)])).sum() + lam * np.abs(W[classes]).sum())


def test_softmax_level_matches_saga_and_cvxpy():
    rng = np.random.default_rng(2)
    G, D, K, n = 4, 5, 4, 600
    Y = rng.integers(K, size=n)
    X = rng.normal(size=(n, D)) + 1.2 * np.eye(K, D)[Y]
    s = rng.uniform(0.5, 2.0, n)
    g = rng.integers(G, size=n)
    active = np.ones((G, K), dtype=bool)
    active[1, 3] = False  # group 1 models three classes only
    Y[(g == 1) & (Y == 3)] = 0
    lam = 2.0
    W, C = l1_softmax_level(X, Y, s, g, active, lam, tol=1e-12, max_iter=2000)
    for k in range(G):
        m = g == k
        classes = np.flatnonzero(active[k])
        f = softmax_objective(X[m], Y[m], s[m], W[k], C[k], classes, lam)
        Wc, cc = cp.Variable((classes.size, D)), cp.Variable(classes.size)
        S = X[m] @ Wc.T + np.ones((m.sum(), 1)) @ cp.reshape(cc, (1, classes.size), order="C")
        onehot = np.eye(classes.size)[np.searchsorted(classes, Y[m])]
        obj = cp.sum(cp.multiply(s[m], cp.log_sum_exp(S, axis=1) - cp.sum(cp.multiply(onehot, S), axis=1)))
        prob = cp.Problem(cp.Minimize(obj + lam * cp.sum(cp.abs(Wc))))
        prob.solve(solver="CLARABEL")
        assert abs(f - prob.value) <= 1e-4 * abs(prob.value), (k, f, prob.value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = LogisticRegression(C=1 / lam, l1_ratio=1.0, solver="saga", tol=1e-4, max_iter=200).fit(
                X[m], Y[m], sample_weight=s[m])
        Wr, cr = np.zeros((K, D)), np.zeros(K)
        Wr[classes], cr[classes] = ref.coef_, ref.intercept_
        assert f <= softmax_objective(X[m], Y[m], s[m], Wr, cr, classes, lam) * (1 + 1e-6)
    with pytest.raises(TreevizError, match="class"):
        l1_softmax_level(X, np.full(n, 3), s, g, active, lam)


def _leaf_objectives(tree, out, X, Y, sw, cfg, groups):
    return sum(leaves._leaf_objective(tree, *out[leaf], X[i], Y[i], sw[i], cfg) for leaf, i in groups)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_a_level_of_linear_leaves_beats_the_per_leaf_scikit_learn_fit(task):
    """The compiled leaf pass reaches the level's leaf objective (cross-entropy / squared error plus
    λ‖W‖₁) of scikit-learn's per-leaf SAGA / Lasso within 1e-4 relative (its stopping rule,
    ``LEAF_CD_TOL``, is a relative decrease of 1e-5 per sweep), and models the same classes."""
    rng = np.random.default_rng(0)
    n, D = 1200, 6
    X = rng.normal(size=(n, D))
    if task == "classification":
        Y = np.argmax(X[:, :4] + 0.5 * rng.normal(size=(n, 4)), axis=1)
        cfg = TAOConfig(task=task, n_outputs=4, l1_penalty=1.0, leaf="linear", loss="cross_entropy")
    else:
        Y = (X @ rng.normal(size=(D, 1))) + 0.1 * rng.normal(size=(n, 1))
        cfg = TAOConfig(task=task, n_outputs=1, l1_penalty=1.0, leaf="linear")
    sw = np.ones(n)
    tree = random_init(X, Y, sw, cfg, 3, np.random.default_rng(1))
    groups = [(leaf, i) for leaf, i in tree.members(X).items() if tree.left[leaf] < 0 and i.size >= 2]
    ours = leaves._linear_leaves_cd(tree, X, Y, sw, cfg, groups)
    theirs = {leaf: leaves._linear_leaf(X[i], Y[i], sw[i], replace(cfg, solver="sklearn")) for leaf, i in groups}
    assert _leaf_objectives(tree, ours, X, Y, sw, cfg, groups) <= _leaf_objectives(tree, theirs, X, Y, sw, cfg,
                                                                                   groups) * (1 + 1e-4)
    for leaf, _ in groups:
        assert np.array_equal(ours[leaf][0] > -1e5, theirs[leaf][0] > -1e5)  # the same modelled classes


def test_default_cpu_solver_is_cd_and_fits_like_liblinear():
    """On the CPU "auto" picks the compiled solver; on a real problem it trains a tree as accurate
    as the liblinear path (both guarded, so the objective never increases)."""
    from sklearn.datasets import load_breast_cancer  # deferred: test-only data

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    cd_model = TAOClassifier(depth=4, l1_penalty=1.0, max_iter=8, init="random", random_state=0).fit(X, y)
    assert cd_model._config(2).solver == "cd"
    sk_model = TAOClassifier(depth=4, l1_penalty=1.0, max_iter=8, init="random", solver="sklearn",
                             random_state=0).fit(X, y)
    objs = [h["objective"] for h in cd_model.history_]
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(objs))
    assert cd_model.score(X, y) >= sk_model.score(X, y) - 0.02
    reg = TAORegressor(depth=3, leaf="linear", l1_penalty=1.0, max_iter=4, random_state=0).fit(X[:, 1:], X[:, 0])
    assert reg.score(X[:, 1:], X[:, 0]) > 0.9


def test_compiled_routing_equals_numpy_on_sparse_hyperplanes():
    """``decision_values``, ``route`` and ``apply`` (compiled, reading only nonzero weights) agree
    with w·x + b computed by numpy, and ``apply`` is the last level ``route`` reaches."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 7))
    tree = complete_tree(4, 7, 2)
    dec = tree.decision_nodes()
    tree.weight[dec] = rng.normal(size=(dec.size, 7)) * (rng.random((dec.size, 7)) < 0.4)
    tree.bias[dec] = rng.normal(size=dec.size) * 0.3
    nodes = rng.choice(dec, size=500)
    expected = np.einsum("ij,ij->i", X, tree.weight[nodes]) + tree.bias[nodes]
    np.testing.assert_allclose(tree.decision_values(X, np.arange(500), nodes), expected, rtol=0, atol=1e-12)
    levels = tree.route(X)
    leaf = levels[0].copy()
    for level in levels[1:]:
        leaf = np.where(level >= 0, level, leaf)
    np.testing.assert_array_equal(tree.apply(X), leaf)
    np.testing.assert_array_equal(tree.apply(X, start=np.full(500, 1)), tree.apply(X, start=1))
    for d in range(1, len(levels)):  # every step follows right iff w·x + b > 0
        moved = levels[d] >= 0
        parent = levels[d - 1][moved]
        s = np.einsum("ij,ij->i", X[moved], tree.weight[parent]) + tree.bias[parent]
        np.testing.assert_array_equal(levels[d][moved], np.where(s > 0, tree.right[parent], tree.left[parent]))
