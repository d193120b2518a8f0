"""TAO training (models.tao: state, init, objective, leaves, problems, decisions, prune, loop):
reduced problems, monotonicity, leaves, visiting order, pruning, initial trees and softmax-tree
leaves.

Routing convention of the project: a decision node sends x RIGHT iff w·x + b > 0 (strictly).
"""

import itertools

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, make_blobs
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from models.cart.estimators import float64_threshold
from models.tao import decisions, loop
from models.tao.config import TAOConfig
from models.tao.decisions import fit_decisions, solve_problems
from models.tao.estimators import TAOClassifier, compact, tao_tree_to_tree
from models.tao.init import cart_init, clustering_init, greedy_level_pairs, random_init
from models.tao.leaves import constant_leaf, fit_leaves, refit_leaves
from models.tao.loop import _groups_at, one_pass, train
from models.tao.objective import class_probabilities, objective, predictions_error, sample_loss
from models.tao.problems import reduced_objective, reduced_problems
from models.tao.prune import prune
from models.tao.solvers import liblinear
from models.tao.state import ABSENT, complete_tree, group_rows

CLS3 = TAOConfig(task="classification", n_outputs=3)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def ones(n):
    return np.ones(n, dtype=np.float64)


def predict_scores(tree, X):
    return tree.leaf_scores(X, tree.apply(X))


def one_hot(k, K=3):
    v = np.zeros(K)
    v[k] = 1.0
    return v


# ---------------------------------------------------------------------------- hand-built tree
def hand_tree():
    """Depth 2, D = 2, K = 3. Root: right iff x0 > 0. Nodes 1 and 2: right iff x1 > 0.
    Leaves 3, 4 (under 1) predict classes 0, 1; leaves 5, 6 (under 2) predict 0, 2."""
    tree = complete_tree(2, 2, 3)
    tree.weight[0] = [1.0, 0.0]
    tree.weight[1] = [0.0, 1.0]
    tree.weight[2] = [0.0, 1.0]
    for leaf, k in ((3, 0), (4, 1), (5, 0), (6, 2)):
        tree.value[leaf] = one_hot(k)
    return tree


# x, y, and for the ROOT: left subtree's class, right subtree's class
HAND_X = np.array([[1.0, 0.5], [-1.0, 1.0], [1.0, 1.0], [-1.0, 2.0], [-1.0, -2.0], [2.0, -3.0]])
HAND_Y = np.array([1, 1, 2, 2, 0, 2])
# left subtree predicts [1, 1, 1, 1, 0, 0]; right subtree predicts [2, 2, 2, 2, 0, 0]
ROOT_CARE = np.array([0, 1, 2, 3])  # exactly one child correct
ROOT_PSEUDO = np.array([-1.0, -1.0, 1.0, 1.0])  # 0, 1: left correct; 2, 3: right correct


def test_hand_built_tree_routes_right_iff_positive():
    tree = hand_tree()
    np.testing.assert_array_equal(tree.apply(HAND_X), [6, 4, 6, 4, 3, 5])
    # exactly on a hyperplane goes LEFT (w·x + b = 0 is not > 0)
    np.testing.assert_array_equal(tree.apply(np.array([[0.0, 0.0], [1.0, 0.0]])), [3, 5])


@pytest.mark.parametrize("sw", [None, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
def test_pseudolabels_and_weights_01(sw):
    tree = hand_tree()
    s = ones(6) if sw is None else np.asarray(sw)
    [p] = reduced_problems(tree, HAND_X, HAND_Y, s, CLS3, [(0, np.arange(6))])
    assert p.node == 0
    # care set = points where exactly one child is correct, in input order; don't-care points excluded
    np.testing.assert_array_equal(p.X, HAND_X[ROOT_CARE])
    # pseudolabel = the child that is correct (+1 right, -1 left)
    np.testing.assert_array_equal(p.y, ROOT_PSEUDO)
    # 0/1 loss: weights are 1 (times the sample weight)
    np.testing.assert_array_equal(p.v, s[ROOT_CARE])
    # current routing of the reduced set: x0 > 0 for points 0, 2, 5
    assert (p.n_right_now, p.n_left_now) == (3, 3)
    # the current root misroutes point 0 (care, left better, sent right) and point 3
    assert reduced_objective(p, tree.weight[0], tree.bias[0], 0.0) == s[0] + s[3]
    assert reduced_objective(p, tree.weight[0], tree.bias[0], 0.5) == s[0] + s[3] + 0.5


def test_pseudolabels_of_a_level_of_decision_nodes():
    tree = hand_tree()
    groups = _groups_at(tree.route(HAND_X), 1)
    assert [g for g, _ in groups] == [1, 2]
    p1, p2 = reduced_problems(tree, HAND_X, HAND_Y, ones(6), CLS3, groups)
    # node 1 holds points 1, 3, 4 (x0 <= 0): leaves 3 -> class 0, 4 -> class 1
    # point 1 (y=1): right correct; point 3 (y=2): both wrong (don't care); point 4 (y=0): left correct
    np.testing.assert_array_equal(p1.X, HAND_X[[1, 4]])
    np.testing.assert_array_equal(p1.y, [1.0, -1.0])
    np.testing.assert_array_equal(p1.v, [1.0, 1.0])
    # node 2 holds points 0, 2, 5: leaves 5 -> class 0, 6 -> class 2
    # point 0 (y=1): both wrong; point 2 (y=2): right correct; point 5 (y=2): right correct
    np.testing.assert_array_equal(p2.X, HAND_X[[2, 5]])
    np.testing.assert_array_equal(p2.y, [1.0, 1.0])


def test_single_pseudolabel_and_no_care_points_give_constant_splits():
    tree = hand_tree()
    groups = _groups_at(tree.route(HAND_X), 1)
    problems = reduced_problems(tree, HAND_X, HAND_Y, ones(6), CLS3, groups)
    new = solve_problems(problems, tree, CLS3)
    # node 2: every care point prefers the right child -> w = 0, everything right (b > 0)
    w, b = new[2]
    assert not np.any(w) and b > 0
    # a node whose children predict the same class has no care point -> w = 0
    tree.value[4] = one_hot(0)
    [p] = reduced_problems(tree, HAND_X, HAND_Y, ones(6), CLS3, groups[:1])
    assert p.y.size == 0
    w, b = solve_problems([p], tree, CLS3)[1]
    assert not np.any(w)


# ---------------------------------------------------------------------------- reduced-problem identity
def _subtree_losses(tree, child, X, Y, sw, cfg):
    return sw * sample_loss(tree, tree.leaf_scores(X, tree.apply(X, child)), Y, cfg)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reduced_problem_equivalence(task, seed):
    """Tree loss over R_i == Σ min(l_left, l_right) + Σ_care v·I(f_i(x) != ȳ) for any θ_i: the reduced problem
    is exact."""
    rng = np.random.default_rng(seed)
    n, D = 120, 4
    X = rng.standard_normal((n, D))
    sw = rng.uniform(0.5, 2.0, size=n)
    if task == "classification":
        Y = rng.integers(0, 3, size=n)
        cfg = TAOConfig(task=task, n_outputs=3)
    else:
        Y = rng.standard_normal((n, 2))
        cfg = TAOConfig(task=task, n_outputs=2)
    tree = random_init(X, Y, sw, cfg, 3, rng)
    # random leaf values so that plenty of points are care points
    for leaf in tree.leaves():
        tree.value[leaf] = one_hot(rng.integers(3)) if task == "classification" else rng.standard_normal(2)
    members = tree.members(X)
    checked = 0
    for node in tree.decision_nodes():
        idx = members[int(node)]
        [p] = reduced_problems(tree, X, Y, sw, cfg, [(int(node), idx)])
        l_left = _subtree_losses(tree, tree.left[node], X[idx], Y[idx], sw[idx], cfg)
        l_right = _subtree_losses(tree, tree.right[node], X[idx], Y[idx], sw[idx], cfg)
        care = l_left != l_right
        np.testing.assert_allclose(p.v, np.abs(l_left - l_right)[care])
        np.testing.assert_array_equal(p.y, np.where(l_right < l_left, 1.0, -1.0)[care])
        consts = []
        for _ in range(5):
            w, b = rng.standard_normal(D), rng.standard_normal()
            trial = tree.copy()
            trial.weight[node], trial.bias[node] = w, b
            total = np.sum(sw[idx] * sample_loss(trial, predict_scores(trial, X[idx]), Y[idx], cfg))
            identity = np.minimum(l_left, l_right).sum() + reduced_objective(p, w, b, 0.0)
            np.testing.assert_allclose(total, identity, rtol=1e-12, atol=1e-9)
            # with the penalty, E and the node's reduced objective differ by a θ_i-free constant
            consts.append(objective(trial, X, Y, sw, cfg) - reduced_objective(p, w, b, cfg.l1_penalty))
            checked += 1
        np.testing.assert_allclose(consts, consts[0], rtol=1e-10, atol=1e-8)
    assert checked >= 5 * 7


# ---------------------------------------------------------------------------- monotonicity
@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("order", ["reverse_bfs", "bfs"])
@pytest.mark.parametrize("lam", [0.01, 1.0, 10.0])
def test_monotone_objective_guarded(cancer, order, lam):
    X, y = cancer
    model = TAOClassifier(depth=4, l1_penalty=lam, max_iter=15, tol=0.0, order=order, guard="objective",
                          init="random", solver="sklearn", random_state=0).fit(X, y)
    E = np.array([r["objective"] for r in model.history_])
    assert len(E) >= 1
    assert np.all(np.diff(E) <= 1e-9), E
    # the post-processed tree (pruned, leaves refitted) is no worse than the last iteration
    cfg = model._config(model.classes_.size)
    final = objective(model.tao_tree_, X, np.searchsorted(model.classes_, y), ones(len(y)), cfg)
    assert final <= E[-1] + 1e-9


def test_monotone_objective_includes_the_initial_tree(cancer):
    X, y = cancer
    cfg = TAOConfig(task="classification", n_outputs=2, l1_penalty=1.0, max_iter=6, tol=0.0)
    tree = random_init(X, y, ones(len(y)), cfg, 4, np.random.default_rng(3))
    E = [objective(tree, X, y, ones(len(y)), cfg)]
    train(tree, X, y, ones(len(y)), cfg, on_iteration=lambda r: E.append(r["objective"]) is None)
    assert np.all(np.diff(E) <= 1e-9), E
    assert objective(tree, X, y, ones(len(y)), cfg) <= E[-1] + 1e-9


def test_monotone_exact_axis_aligned(digits):
    """Exact weighted 0/1 enumeration at every node: the training error never increases."""
    X, y = digits
    cfg = TAOConfig(task="classification", n_outputs=10, l1_penalty=0.0, node_type="axis", guard="off",
                    max_iter=6, tol=0.0)
    sw = ones(len(y))
    tree = cart_init(X, y, sw, cfg, 5, 0)
    errors = [predictions_error(tree, X, y, sw, cfg)]
    train(tree, X, y, sw, cfg, on_iteration=lambda r: errors.append(r["train_error"]) is None)
    errors.append(predictions_error(tree, X, y, sw, cfg))  # after pruning and the final leaf pass
    assert np.all(np.diff(errors) <= 1e-12), errors
    assert errors[-1] < errors[0]  # TAO improves on the CART tree it starts from
    # every split stays axis-aligned: one nonzero of magnitude 1
    w = tree.weight[tree.decision_nodes()]
    assert np.all(np.count_nonzero(w, axis=1) == 1) and np.all(np.abs(w[w != 0]) == 1.0)


# ---------------------------------------------------------------------------- leaves
@pytest.mark.parametrize("task,leaf,solver", [("classification", "constant", "cd"), ("regression", "constant", "cd"),
                                              ("classification", "linear", "cd"), ("regression", "linear", "cd"),
                                              ("classification", "linear", "sklearn"),
                                              ("regression", "linear", "sklearn")])
def test_leaf_update_never_increases_loss(iris, task, leaf, solver):
    """A leaf pass never increases E and leaves the decision nodes alone. A second pass is exactly
    idempotent where the leaf fit starts cold (scikit-learn, constant leaves); the compiled solver
    warm-starts from the leaves' current parameters, so there a second pass can only lower E."""
    X, y = iris
    if task == "classification":
        Y, K = y, 3
    else:
        Y, K = np.column_stack([X[:, 3] + 0.1 * y, X[:, 2]]), 2
        X = X[:, :2]
    cfg = TAOConfig(task=task, n_outputs=K, leaf=leaf, l1_penalty=0.1, solver=solver)
    sw = np.random.default_rng(0).uniform(0.5, 1.5, size=len(y))
    tree = random_init(X, Y, sw, cfg, 2, np.random.default_rng(0))
    for node in tree.leaves():  # spoil the leaves
        tree.value[node] = np.random.default_rng(int(node)).standard_normal(K)
    decisions = (tree.weight.copy(), tree.bias.copy(), tree.left.copy(), tree.right.copy())
    e0 = objective(tree, X, Y, sw, cfg)
    refit_leaves(tree, X, Y, sw, cfg)
    e1 = objective(tree, X, Y, sw, cfg)
    assert e1 <= e0 + 1e-12
    snapshot = tree.copy()
    refit_leaves(tree, X, Y, sw, cfg)
    if leaf == "constant" or solver == "sklearn":
        assert objective(tree, X, Y, sw, cfg) == e1  # idempotent
        np.testing.assert_array_equal(tree.value, snapshot.value)
        if leaf == "linear":
            np.testing.assert_array_equal(tree.leaf_weight, snapshot.leaf_weight)
    else:
        assert objective(tree, X, Y, sw, cfg) <= e1 + 1e-12
    for a, b in zip(decisions, (tree.weight, tree.bias, tree.left, tree.right)):
        np.testing.assert_array_equal(a, b)  # decision nodes frozen


def test_constant_leaves_are_exact(iris):
    X, y = iris
    cfg = TAOConfig(task="classification", n_outputs=3)
    tree = random_init(X, y, ones(len(y)), cfg, 2, np.random.default_rng(1))
    refit_leaves(tree, X, y, ones(len(y)), cfg)
    for leaf, idx in tree.members(X).items():
        if tree.left[leaf] < 0:
            counts = np.bincount(y[idx], minlength=3)
            np.testing.assert_allclose(tree.value[leaf], counts / counts.sum())
            assert np.argmax(tree.value[leaf]) == np.flatnonzero(counts == counts.max())[0]  # ties: smallest id


def test_dead_leaf_is_not_refitted():
    tree = hand_tree()
    before = tree.value.copy()
    fit_leaves(tree, HAND_X, HAND_Y, ones(6), CLS3, [(3, np.array([], dtype=np.int64))])
    np.testing.assert_array_equal(tree.value, before)


# ---------------------------------------------------------------------------- visiting order
def _instrument(monkeypatch, tree_ref, X, log):
    """Record, at every leaf / decision update, whether the reduced sets the loop passes equal
    the reduced sets recomputed from the current tree."""
    real_leaves, real_decisions = loop.fit_leaves, loop.fit_decisions

    def check(groups):
        fresh = tree_ref[0].members(X)
        for node, idx in groups:
            log.append(np.array_equal(np.sort(idx), fresh.get(int(node), np.array([], dtype=np.int64))))

    def leaves(tree, X_, Y, sw, cfg, groups):
        check(groups)
        return real_leaves(tree, X_, Y, sw, cfg, groups)

    def decisions(tree, X_, Y, sw, cfg, groups, *rest):
        check(groups)
        return real_decisions(tree, X_, Y, sw, cfg, groups, *rest)

    monkeypatch.setattr(loop, "fit_leaves", leaves)
    monkeypatch.setattr(loop, "fit_decisions", decisions)


@pytest.mark.parametrize("order", ["reverse_bfs", "bfs"])
def test_reverse_bfs_reduced_sets_valid(monkeypatch, cancer, order):
    X, y = cancer
    cfg = TAOConfig(task="classification", n_outputs=2, l1_penalty=0.1, order=order, guard="off", max_iter=3,
                    tol=0.0)
    tree = random_init(X, y, ones(len(y)), cfg, 4, np.random.default_rng(0))
    log = []
    _instrument(monkeypatch, [tree], X, log)
    for _ in range(3):
        one_pass(tree, X, y, ones(len(y)), cfg)
    assert len(log) > 3 * 5 and all(log)


def test_top_down_without_recompute_uses_stale_reduced_sets(cancer):
    """The classic top-down mistake: a pass on reduced sets computed once at its start trains some node on
    points that no longer reach it (what ``order="bfs"`` avoids by re-routing before each level)."""
    X, y = cancer
    sw = ones(len(y))
    cfg = TAOConfig(task="classification", n_outputs=2, l1_penalty=0.1, guard="off")
    stale_seen = False
    for seed in range(3):
        tree = random_init(X, y, sw, cfg, 4, np.random.default_rng(seed))
        levels = tree.route(X)  # computed once, never refreshed
        for d in range(len(levels)):
            groups = _groups_at(levels, d)
            fresh = tree.members(X)
            stale_seen |= any(not np.array_equal(idx, fresh.get(node, np.zeros(0, int))) for node, idx in groups)
            fit_leaves(tree, X, y, sw, cfg, [(n, i) for n, i in groups if tree.left[n] < 0])
            dec = [(n, i) for n, i in groups if tree.left[n] >= 0]
            if dec:
                fit_decisions(tree, X, y, sw, cfg, dec)
        if stale_seen:
            break
    assert stale_seen


@pytest.mark.parametrize("init,guard,leaf", [("random", "off", "constant"), ("random", "objective", "constant"),
                                              ("random", "objective", "linear"), ("clustering", "off", "constant")])
def test_tracked_child_leaves_equal_direct_routing(monkeypatch, digits, init, guard, leaf):
    """The pass's fast path: the leaves a decision node's rows reach through each child (from the
    tracked leaf of the path and one routing of the other child) and the side they go now are
    exactly what routing every row down both children gives, at every level of every pass."""
    X, y = digits
    X, y = X[:600], y[:600]
    sw = ones(len(y))
    cfg = TAOConfig(task="classification", n_outputs=10, l1_penalty=0.1, guard=guard, leaf=leaf, max_iter=3, tol=0.0)
    rng = np.random.default_rng(3)
    if init == "random":
        tree, assigned = random_init(X, y, sw, cfg, 4, rng), None
    else:
        tree, assigned = clustering_init(X, y, sw, cfg, 4, rng)
    real = loop.fit_decisions
    seen = []

    def checked(tree_, X_, Y_, sw_, cfg_, groups, child_leaves=None):
        assert child_leaves is not None
        rows = np.concatenate([idx for _, idx in groups])
        owner = np.concatenate([np.full(idx.size, n) for n, idx in groups])
        via_left, via_right, goes_right = child_leaves
        np.testing.assert_array_equal(via_left, tree_.apply(X_[rows], tree_.left[owner]))
        np.testing.assert_array_equal(via_right, tree_.apply(X_[rows], tree_.right[owner]))
        if goes_right is not None:
            np.testing.assert_array_equal(goes_right, tree_.decision_values(X_[rows], np.arange(rows.size), owner) > 0)
        else:
            seen.append("assigned")
        fast = reduced_problems(tree_, X_, Y_, sw_, cfg_, groups, child_leaves)
        direct = reduced_problems(tree_, X_, Y_, sw_, cfg_, groups)
        for a, b in zip(fast, direct):
            assert a.node == b.node and (a.n_left_now, a.n_right_now) == (b.n_left_now, b.n_right_now)
            for f in ("X", "y", "v"):
                np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        seen.append(len(groups))
        return real(tree_, X_, Y_, sw_, cfg_, groups, child_leaves)

    monkeypatch.setattr(loop, "fit_decisions", checked)
    train(tree, X, y, sw, cfg, initial_leaf=assigned, finalize=False)
    assert len(seen) >= 3 * 4
    assert ("assigned" in seen) == (init == "clustering")


def test_group_rows_equals_stable_argsort():
    """The counting sort groups exactly as a stable argsort (labels, indices and their order)."""
    rng = np.random.default_rng(0)
    cases = [rng.integers(-1, 40, 2000), rng.integers(0, 3, 7).astype(np.int32), np.array([5]),
             rng.integers(-10**12, 10**12, 300), np.array([2, 2, -1, 0, -1, 2])]
    for labels in cases:
        order = np.argsort(labels, kind="stable")
        expected = [(v, order[labels[order] == v]) for v in np.unique(labels)]
        got = group_rows(labels)
        assert [g for g, _ in got] == [v for v, _ in expected]
        for (_, a), (_, b) in zip(got, expected):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------- λ and structure
def separable(seed=0, n=400, D=20, margin=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3 * n, D))
    w = np.zeros(D)
    w[:3] = [1.0, -1.0, 0.5]
    s = X @ w / np.linalg.norm(w)
    keep = np.flatnonzero(np.abs(s) > margin)[:n]
    return X[keep], (s[keep] > 0).astype(int)


def test_depth1_separable_zero_error():
    X, y = separable()
    nnz = []
    for lam in (1e-3, 1e-2, 1e-1, 1.0):
        model = TAOClassifier(depth=1, l1_penalty=lam, init="cart", max_iter=1, solver="sklearn").fit(X, y)
        assert model.history_[0]["train_error"] == 0.0, lam
        assert model.score(X, y) == 1.0
        nnz.append(model.to_tree().n_nonzero_weights())
    assert all(a >= b for a, b in itertools.pairwise(nnz)), nnz


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_depth1_random_init_never_crashes(seed):
    X, y = separable()
    model = TAOClassifier(depth=1, l1_penalty=1e-2, init="random", max_iter=3, solver="sklearn",
                          random_state=seed).fit(X, y)
    tree = model.to_tree()
    assert model.score(X, y) == 1.0 or tree.n_nodes == 1  # 0 error, or collapsed to one leaf


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_nnz_decreases_with_lambda():
    # pixels in [0, 1] as the thesis uses them (standardised pixels make liblinear very slow at
    # λ = 1e-3); 8 iterations instead of 15 to keep the test fast
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rows = []
    for lam in (1e-3, 1e-1, 10.0, 100.0):
        model = TAOClassifier(depth=6, l1_penalty=lam, init="random", max_iter=8, guard="off", solver="sklearn",
                              random_state=0).fit(X, y)
        rows.append((model.tao_tree_.n_nonzero(), model.tao_tree_.decision_nodes().size, 1 - model.score(X, y)))
    nnz, nodes, err = map(np.array, zip(*rows))
    assert np.all(np.diff(nnz) < 0), rows
    assert nodes[-1] < nodes[0], rows
    assert np.all(np.diff(err) >= -1.0 / len(y)), rows  # training error grows with λ (1-point tolerance)


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_huge_lambda_collapses(iris, leaf):
    X, y = iris
    if leaf == "constant":
        yc = np.r_[y[:120], np.zeros(30, int)]  # class 0 is the majority
        model = TAOClassifier(depth=3, l1_penalty=1e6, init="random", max_iter=3, solver="sklearn").fit(X, yc)
        tree = model.to_tree()
        assert tree.n_nodes == 1
        assert np.all(model.predict(X) == 0)
        np.testing.assert_allclose(tree.leaf_value[0], np.bincount(yc) / len(yc))
    else:
        from models.tao.estimators import TAORegressor

        target = X[:, 0] * 2.0 + 1.0
        model = TAORegressor(depth=3, l1_penalty=1e6, leaf="linear", init="random", max_iter=3,
                             solver="sklearn").fit(X[:, 1:], target)
        tree = model.to_tree()
        assert tree.n_nodes == 1 and tree.leaf_weight is not None
        # a single (here fully sparse) linear model: the Lasso with a huge λ keeps no feature
        assert np.count_nonzero(tree.leaf_weight) == 0
        np.testing.assert_allclose(model.predict(X[:, 1:]), target.mean())


# ---------------------------------------------------------------------------- pruning
def _random_tree(X, y, depth=3, seed=0, task="classification", K=3):
    cfg = TAOConfig(task=task, n_outputs=K)
    tree = random_init(X, y, ones(len(y)), cfg, depth, np.random.default_rng(seed))
    assert len(tree.members(X)) == tree.n_slots  # no node starts dead (median biases)
    return tree, cfg


def _descendants(tree, node):
    out, stack = set(), [node]
    while stack:
        v = stack.pop()
        out.add(v)
        if tree.left[v] >= 0:
            stack += [int(tree.left[v]), int(tree.right[v])]
    return out


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_dead_branch_removed(iris, task):
    X, y = iris
    Y = y if task == "classification" else np.column_stack([X[:, 0], y.astype(float)])
    tree, cfg = _random_tree(X, Y, task=task, K=3 if task == "classification" else 2)
    # make the leaves distinct so no subtree is pure
    for i, leaf in enumerate(tree.leaves()):
        tree.value[leaf] = one_hot(i % 3) + 0.01 * i if task == "classification" else [i, -i]
    tree.weight[1] = 0.0
    tree.bias[1] = 1.0  # node 1 sends everything right: its left subtree is dead
    dead = _descendants(tree, int(tree.left[1]))
    before = predict_scores(tree, X)
    removed = prune(tree, X, Y, ones(len(y)), cfg)
    nodes = set(tree.reachable().tolist())
    assert removed >= len(dead) + 1 and not (nodes & dead) and 1 not in nodes
    members = tree.members(X)
    assert all(int(v) in members and members[int(v)].size > 0 for v in nodes)
    after = predict_scores(tree, X)
    if task == "classification":
        np.testing.assert_array_equal(np.argmax(after, axis=1), np.argmax(before, axis=1))
    else:
        np.testing.assert_array_equal(after, before)  # bit-identical


def test_zero_weight_node_removed_for_any_input(iris):
    X, y = iris
    tree, cfg = _random_tree(X, y)
    for i, leaf in enumerate(tree.leaves()):
        tree.value[leaf] = one_hot(i % 3)
    tree.weight[2] = 0.0
    tree.bias[2] = -0.5  # everything left at node 2
    Z = np.random.default_rng(0).normal(scale=2.0, size=(1000, 4))
    before = tree.apply(Z)
    prune(tree, X, y, ones(len(y)), cfg)
    assert 2 not in tree.reachable()
    np.testing.assert_array_equal(np.argmax(predict_scores(tree, Z), 1), np.argmax(tree.value[before], 1))


def test_pure_subtree_collapsed(iris):
    X, y = iris
    tree, cfg = _random_tree(X, y, depth=3, seed=1)
    for i, leaf in enumerate(tree.leaves()):
        tree.value[leaf] = one_hot(i % 3)
    under = sorted(_descendants(tree, 1) & set(tree.leaves().tolist()))
    for leaf in under:
        tree.value[leaf] = one_hot(2) * 0.6 + one_hot(leaf % 2) * 0.2  # all predict class 2
    Z = np.random.default_rng(0).normal(scale=2.0, size=(1000, 4))
    before = np.argmax(predict_scores(tree, Z), axis=1)
    before_train = np.argmax(predict_scores(tree, X), axis=1)
    prune(tree, X, y, ones(len(y)), cfg)
    assert 1 in tree.reachable() and tree.left[1] < 0, "node 1 became a leaf"
    assert np.argmax(tree.value[1]) == 2
    np.testing.assert_array_equal(np.argmax(predict_scores(tree, Z), axis=1), before)
    np.testing.assert_array_equal(np.argmax(predict_scores(tree, X), axis=1), before_train)


def test_linear_leaves_are_never_pure(iris):
    X, y = iris
    cfg = TAOConfig(task="classification", n_outputs=3, leaf="linear")
    tree = random_init(X, y, ones(len(y)), cfg, 2, np.random.default_rng(0))
    for leaf in tree.leaves():
        tree.value[leaf] = one_hot(0)
    n = tree.reachable().size
    assert prune(tree, X, y, ones(len(y)), cfg) == 0 and tree.reachable().size == n


def _is_ancestor(anc, node):
    while node > anc:
        node = (node - 1) // 2  # heap numbering of complete_tree / random_init
    return node == anc


def test_prune_idempotent_and_structure_subset(digits):
    X, y = digits
    cfg = TAOConfig(task="classification", n_outputs=10, l1_penalty=3.0, max_iter=3, guard="off")
    sw = ones(len(y))
    tree = random_init(X, y, sw, cfg, 5, np.random.default_rng(0))
    initial = set(tree.reachable().tolist())
    train(tree, X, y, sw, cfg, finalize=False)
    prune(tree, X, y, sw, cfg)
    once = tree.copy()
    assert prune(tree, X, y, sw, cfg) == 0
    for a, b in zip((once.left, once.right, once.weight, once.bias, once.value, [once.root]),
                    (tree.left, tree.right, tree.weight, tree.bias, tree.value, [tree.root])):
        np.testing.assert_array_equal(a, b)
    nodes = set(tree.reachable().tolist())
    assert nodes < initial  # λ = 3 prunes something
    # parent-child links of the pruned tree are ancestor-descendant links of the initial tree
    for v in tree.decision_nodes():
        assert _is_ancestor(int(v), int(tree.left[v])) and _is_ancestor(int(v), int(tree.right[v]))
        assert _is_ancestor(2 * int(v) + 1, int(tree.left[v])) and _is_ancestor(2 * int(v) + 2, int(tree.right[v]))


def test_estimator_node_origin_maps_into_the_initial_tree(digits):
    X, y = digits
    model = TAOClassifier(depth=4, l1_penalty=3.0, init="random", max_iter=3, solver="sklearn").fit(X, y)
    origin = model.node_origin_
    tree = model.to_tree()
    assert origin.size == tree.n_nodes < 31
    assert len(set(origin.tolist())) == origin.size and origin.min() >= 0 and origin.max() < 31
    for v in tree.decision_nodes:
        assert _is_ancestor(2 * origin[v] + 1, origin[tree.children_left[v]])
        assert _is_ancestor(2 * origin[v] + 2, origin[tree.children_right[v]])
    assert tree.meta["node_origin"] == origin.tolist()


# ---------------------------------------------------------------------------- initial trees
@pytest.mark.parametrize("depth", [2, 4])
def test_cart_conversion_exact(depth):
    rng = np.random.default_rng(depth)
    X = np.round(rng.standard_normal((300, 5)), 3) * np.array([1.0, 10.0, 0.1, 1e3, 1.0])
    y = ((X[:, 0] + 0.1 * X[:, 1] > 0).astype(int) + (X[:, 3] > 100).astype(int))
    cfg = TAOConfig(task="classification", n_outputs=3)
    tree = cart_init(X, y, ones(len(y)), cfg, depth, 7)
    sk = DecisionTreeClassifier(max_depth=depth, random_state=7).fit(X, y)
    np.testing.assert_array_equal(tree.apply(X), sk.apply(X))
    np.testing.assert_array_equal(np.argmax(predict_scores(tree, X), 1), sk.predict(X))
    # inputs exactly at (and next to) every threshold, in float64 and float32 terms
    st = sk.tree_
    probes = []
    for node in np.flatnonzero(st.children_left >= 0):
        j, t = st.feature[node], float(st.threshold[node])
        t32 = np.float32(st.threshold[node])
        for v in (t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf), float(np.nextafter(t32, np.float32(np.inf))),
                  float(np.nextafter(t32, np.float32(-np.inf))), float(float64_threshold(np.array([t]))[0]),
                  0.5 * (t + float(np.nextafter(t32, np.float32(np.inf))))):
            for row in X[::60]:
                x = row.copy()
                x[j] = v
                probes.append(x)
    P = np.array(probes)
    np.testing.assert_array_equal(tree.apply(P), sk.apply(P))
    np.testing.assert_array_equal(np.argmax(predict_scores(tree, P), 1), sk.predict(P))


def test_cart_conversion_exact_on_iris(iris):
    X, y = load_iris(return_X_y=True)  # raw units: thresholds like 2.45
    tree = cart_init(X, y, ones(len(y)), TAOConfig(task="classification", n_outputs=3), 3, 0)
    sk = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(tree.apply(X), sk.apply(X))
    w = tree.weight[tree.decision_nodes()]
    assert np.all(np.count_nonzero(w, axis=1) == 1)


@pytest.mark.parametrize("depth", [1, 4])
def test_random_init_unit_norm(cancer, depth):
    X, y = cancer
    cfg = TAOConfig(task="classification", n_outputs=2)
    tree = random_init(X, y, ones(len(y)), cfg, depth, np.random.default_rng(0))
    dec = tree.decision_nodes()
    assert dec.size == 2**depth - 1 and tree.leaves().size == 2**depth
    np.testing.assert_allclose(np.linalg.norm(tree.weight[dec], axis=1), 1.0, rtol=1e-12)
    assert np.all(tree.depths()[tree.leaves()] == depth)  # complete
    members = tree.members(X)
    assert all(int(v) in members and members[int(v)].size > 0 for v in tree.reachable())
    # median bias: each node splits its reduced set about in half
    for v in dec:
        idx = members[int(v)]
        right = members[int(tree.right[v])].size
        assert abs(right - idx.size / 2) <= 1


def test_random_init_median_uses_sample_weights():
    """Integer sample weights act as repeated samples in the initial biases."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = rng.integers(0, 2, size=60)
    sw = rng.integers(1, 4, size=60).astype(float)
    cfg = TAOConfig(task="classification", n_outputs=2)
    a = random_init(X, y, sw, cfg, 3, np.random.default_rng(5))
    b = random_init(np.repeat(X, sw.astype(int), axis=0), np.repeat(y, sw.astype(int)), ones(int(sw.sum())), cfg, 3,
                    np.random.default_rng(5))
    np.testing.assert_array_equal(a.weight, b.weight)
    np.testing.assert_array_equal(a.bias, b.bias)
    np.testing.assert_array_equal(a.value, b.value)


def brute_greedy_pairs(means):
    """Greedy pairing written out: scan every remaining pair, merge the closest, repeat."""
    remaining = list(range(len(means)))
    pairs = []
    while remaining:
        best = None
        for i in remaining:
            for j in remaining:
                if i < j:
                    d = float(np.sum((means[i] - means[j]) ** 2))
                    if best is None or d < best[0]:
                        best = (d, i, j)
        pairs.append((best[1], best[2]))
        remaining = [k for k in remaining if k not in best[1:]]
    return pairs


@pytest.mark.parametrize("seed", range(4))
def test_greedy_level_pairs_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((16, 3))
    counts = rng.integers(1, 20, size=16).astype(float)
    pairs, new_means, new_counts = greedy_level_pairs(means, counts)
    assert pairs == brute_greedy_pairs(means)
    for k, (a, b) in enumerate(pairs):
        assert new_counts[k] == counts[a] + counts[b]
        np.testing.assert_allclose(new_means[k], (counts[a] * means[a] + counts[b] * means[b]) / new_counts[k])


def test_clustering_init_balanced():
    X, y = make_blobs(n_samples=16 * 30, centers=16, n_features=6, cluster_std=0.5, random_state=0)
    cfg = TAOConfig(task="classification", n_outputs=16, leaf="softmax", leaf_classes=4)
    sw = ones(len(y))
    tree, leaf_of = clustering_init(X, y, sw, cfg, 3, np.random.default_rng(0))
    leaves = tree.leaves()
    assert leaves.size == 8 and np.all(tree.depths()[leaves] == 3)
    assert set(np.unique(leaf_of)) == set(leaves.tolist())  # every leaf gets instances
    for c in range(16):  # prototype variant: every class goes to exactly one leaf
        assert np.unique(leaf_of[y == c]).size == 1
    # level by level, siblings are the greedy nearest pairs of the clusters' (weighted) means
    groups = {int(leaf): idx for leaf, idx in group_rows(leaf_of)}
    level = sorted(groups)
    means = np.stack([X[groups[v]].mean(axis=0) for v in level])
    counts = np.array([groups[v].size for v in level], dtype=float)
    while len(level) > 1:
        pairs = brute_greedy_pairs(means)
        parents = []
        for a, b in pairs:
            pa, pb = (level[a] - 1) // 2, (level[b] - 1) // 2
            assert pa == pb, "greedy pair are siblings"
            parents.append(pa)
        means = np.stack([(counts[a] * means[a] + counts[b] * means[b]) / (counts[a] + counts[b]) for a, b in pairs])
        counts = np.array([counts[a] + counts[b] for a, b in pairs])
        level = parents
    assert level == [0]


def test_clustering_init_trains(digits):
    X, y = digits
    model = TAOClassifier(depth=3, init="clustering", leaf="softmax", leaf_classes=3, l1_penalty=1.0, max_iter=2,
                          solver="sklearn").fit(X[:600], y[:600])
    assert model.score(X[:600], y[:600]) > 0.5


# ---------------------------------------------------------------------------- softmax-tree leaves
def test_st_leaf_topk():
    rng = np.random.default_rng(0)
    K, D, k = 5, 3, 2
    counts = [10, 30, 25, 5, 25]  # top 2: class 1, then the 2-vs-4 tie goes to the smaller id (2)
    Y = np.repeat(np.arange(K), counts)
    X = rng.standard_normal((Y.size, D)) + Y[:, None] * 0.5
    for guard in ("off", "objective"):
        cfg = TAOConfig(task="classification", n_outputs=K, leaf="softmax", leaf_classes=k, l1_penalty=0.1,
                        guard=guard)
        tree = complete_tree(0, D, K, linear_leaves=True)
        fit_leaves(tree, X, Y, ones(Y.size), cfg, [(0, np.arange(Y.size))])
        modelled = np.flatnonzero(tree.value[0] > ABSENT)
        np.testing.assert_array_equal(modelled, [1, 2])
        assert np.all(tree.leaf_weight[0][[0, 3, 4]] == 0)
        Z = rng.normal(scale=3.0, size=(500, D))
        proba = class_probabilities(tree, predict_scores(tree, Z))
        assert np.all(proba[:, [0, 3, 4]] == 0.0)  # exactly zero, not small
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert set(np.argmax(proba, axis=1)) <= {1, 2}


def test_st_constant_fallback_respects_k():
    """A leaf too small for a softmax, or a first pass rejected by the guard, still models ≤ k classes."""
    cfg = TAOConfig(task="classification", n_outputs=4, leaf="softmax", leaf_classes=2)
    tree = complete_tree(0, 2, 4, linear_leaves=True)
    value = constant_leaf(tree, np.array([0, 1, 1, 2, 3, 3, 3]), ones(7), cfg)
    np.testing.assert_array_equal(np.flatnonzero(value > ABSENT), [1, 3])
    np.testing.assert_allclose(np.exp(value[[1, 3]]), [2 / 5, 3 / 5])


@pytest.mark.parametrize("guard", ["off", "objective"])
def test_softmax_tree_leaves_model_k_classes(digits, guard):
    X, y = digits
    X, y = X[:700], y[:700]
    k = 3
    model = TAOClassifier(depth=2, leaf="softmax", leaf_classes=k, l1_penalty=1.0, max_iter=2, init="cart",
                          guard=guard, solver="sklearn").fit(X, y)
    tree = model.tao_tree_
    leaf_of = tree.apply(X)
    pred = model.predict(X)
    proba = model.predict_proba(X)
    for leaf in tree.leaves():
        modelled = np.flatnonzero(tree.value[leaf] > ABSENT)
        assert 1 <= modelled.size <= k
        at = leaf_of == leaf
        assert set(pred[at]) <= set(model.classes_[modelled])
        assert np.all(proba[np.ix_(at, np.setdiff1d(np.arange(10), modelled))] == 0.0)
        if guard == "off" and at.any():  # leaves refitted on the final routing: exactly its top k
            counts = np.bincount(y[at], minlength=10)
            top = np.sort(np.argsort(-counts, kind="stable")[:k])
            np.testing.assert_array_equal(modelled, top[counts[top] > 0])


# ---------------------------------------------------------------------------- losses reaching the solvers
@pytest.mark.parametrize("loss", ["zero_one", "cross_entropy"])
def test_st_infinite_loss_handling(monkeypatch, digits, loss):
    X, y = digits
    X, y = X[:500], y[:500]
    seen = {"problems": [], "solver_calls": 0}
    real_rp, real_solver = decisions.reduced_problems, liblinear.l1_logistic_sklearn

    def rp(*args, **kwargs):
        out = real_rp(*args, **kwargs)
        seen["problems"] += out
        return out

    def solver(X_, y_, v_, lam, **kwargs):
        seen["solver_calls"] += 1
        for a in (X_, y_, v_):
            assert np.all(np.isfinite(a))
        assert np.all(v_ > 0)
        return real_solver(X_, y_, v_, lam, **kwargs)

    monkeypatch.setattr(decisions, "reduced_problems", rp)
    monkeypatch.setattr(liblinear, "l1_logistic_sklearn", solver)
    model = TAOClassifier(depth=2, leaf="softmax", leaf_classes=3, loss=loss, beta=100.0, l1_penalty=0.1,
                          max_iter=2, init="cart", solver="sklearn").fit(X, y)
    assert seen["problems"] and seen["solver_calls"] > 0
    v = np.concatenate([p.v for p in seen["problems"]])
    assert np.all(np.isfinite(v)) and v.size > 0
    if loss == "zero_one":
        assert set(np.unique(v)) <= {1.0}  # don't-care points (v = 0) dropped, the rest weigh 1
    else:
        assert np.all((v > 0) & (v <= 100.0))  # |l_left - l_right| with both losses capped at β
        assert np.any(v != np.round(v))
    assert np.all(np.isfinite(model.predict_proba(X)))


def test_cross_entropy_caps_absent_classes_at_beta():
    cfg = TAOConfig(task="classification", n_outputs=3, leaf="softmax", leaf_classes=2, loss="cross_entropy",
                    beta=7.0)
    tree = complete_tree(0, 1, 3, linear_leaves=True)
    scores = np.array([[0.0, 0.0, ABSENT], [0.0, 0.0, ABSENT]])
    loss = sample_loss(tree, scores, np.array([0, 2]), cfg)
    np.testing.assert_allclose(loss, [np.log(2.0), 7.0])


# ---------------------------------------------------------------------------- counts (Appendix A)
def test_param_and_flops_count_hand_built():
    from models.ground.tree import Tree

    D, K = 5, 3
    left = [1, -1, 3, -1, -1]
    right = [2, -1, 4, -1, -1]
    weight = np.zeros((5, D))
    weight[0] = [1.0, 0.0, 2.0, 0.0, -1.0]  # nnz 3 -> 4 params
    weight[2] = [0.0, 0.5, 0.0, 0.0, 0.25]  # nnz 2 -> 3 params
    bias = np.array([0.0, 0.0, -1.0, 0.0, 0.0])
    leaf_value = np.full((5, K), np.nan)
    leaf_value[[1, 3, 4]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    leaf_weight = np.zeros((5, K, D))
    leaf_weight[3, 0, 1] = leaf_weight[3, 1, 2] = leaf_weight[3, 2, 0] = leaf_weight[3, 2, 4] = 1.0  # nnz 4
    tree = Tree(children_left=left, children_right=right, weight=weight, bias=bias, leaf_value=leaf_value,
                leaf_weight=leaf_weight)
    # decision 4 + 3, constant leaves (no leaf weight) K each, linear leaf nnz + K
    assert tree.n_params() == 4 + 3 + K + (4 + K) + K
    assert tree.n_nonzero_weights() == 5
    X = np.array([[-1.0, 0, 0, 0, 0], [0, 0, 0, 0, 1.0], [1.0, 4.0, 0, 0, 0], [1.0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(tree.apply(X), [1, 1, 4, 3])
    assert tree.flops(X) == pytest.approx((3 + 3 + (3 + 2 + 4) + (3 + 2)) / 4)
    constant = Tree(children_left=left, children_right=right, weight=weight, bias=bias, leaf_value=leaf_value)
    assert constant.n_params() == 4 + 3 + 3 * K
    assert constant.flops(X) == pytest.approx((3 + 3 + 5 + 5) / 4)


@pytest.mark.parametrize("depth", [3, 5])
def test_cart_flops_equal_mean_path_length(cancer, depth):
    X, y = cancer
    cfg = TAOConfig(task="classification", n_outputs=2)
    tao, _ = compact(cart_init(X, y, ones(len(y)), cfg, depth, 0))
    tree = tao_tree_to_tree(tao, task="classification", family="tao",
                            feature_names=[f"f{j}" for j in range(X.shape[1])],
                            output_names=["0", "1"], meta={})
    path_len = tree.node_depth[tree.apply(X)]
    assert tree.flops(X) == pytest.approx(path_len.mean())
    assert tree.flops(X) <= depth
    assert tree.n_params() == 2 * tree.decision_nodes.size + 2 * tree.n_leaves
