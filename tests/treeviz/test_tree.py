"""The shared Tree: structure checks, routing (hard and soft, missing values), statistics, paths,
counts, JSON."""

import json

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from models.cart.estimators import float64_threshold
from models.ground import routing as tree_routing
from models.ground.errors import TreevizError
from models.ground.tree import Tree, sigmoid, smoothstep

NAN = np.nan


def small_tree(**kw):
    """Root splits on a (x0 > 0.5); node 2 splits on b (x1 > 0.5).

         0
        / \\
       1   2
          / \\
         3   4
    """
    args = {
        "children_left": [1, -1, 3, -1, -1],
        "children_right": [2, -1, 4, -1, -1],
        "weight": [[1.0, 0.0], [0, 0], [0.0, 1.0], [0, 0], [0, 0]],
        "bias": [-0.5, 0, -0.5, 0, 0],
        "leaf_value": [[NAN, NAN], [1.0, 0.0], [NAN, NAN], [0.0, 1.0], [0.25, 0.75]],
        "feature_names": ("a", "b"),
        "output_names": ("no", "yes"),
    }
    args.update(kw)
    return Tree(**args)


def random_tree(rng, depth, d, k=3, routing="hard", activation="sigmoid"):
    """A complete oblique tree with random weights, in breadth-first numbering."""
    n = 2 ** (depth + 1) - 1
    left = np.array([2 * i + 1 if 2 * i + 1 < n else -1 for i in range(n)])
    right = np.array([2 * i + 2 if 2 * i + 2 < n else -1 for i in range(n)])
    internal = left >= 0
    weight = rng.normal(size=(n, d)) * internal[:, None]
    bias = rng.normal(size=n) * internal
    leaf_value = np.where(internal[:, None], NAN, rng.random((n, k)))
    return Tree(left, right, weight, bias, leaf_value, routing=routing, activation=activation)


# ---------------------------------------------------------------- structure
def test_structure_properties():
    t = small_tree()
    assert t.n_nodes == 5 and t.n_features == 2 and t.n_outputs == 2
    assert t.leaves.tolist() == [1, 3, 4]
    assert t.decision_nodes.tolist() == [0, 2]
    assert t.parent.tolist() == [-1, 0, 0, 2, 2]
    assert t.node_depth.tolist() == [0, 1, 1, 2, 2]
    assert t.max_depth == 2
    assert [lv.tolist() for lv in t.levels] == [[0], [1, 2], [3, 4]]
    assert t.ancestors(4) == [0, 2, 4]
    assert t.subtree_nodes(2).tolist() == [2, 3, 4]
    assert t.subtree_nodes(0, max_levels=1).tolist() == [0, 1, 2]
    assert t.is_axis_aligned().tolist() == [True, False, True, False, False]


@pytest.mark.parametrize(
    "left,right,msg",
    [
        ([1, -1, -1], [-1, -1, -1], "two children or none"),
        ([1, 1, -1], [2, 2, -1], "exactly one parent"),
        ([1, -1, 0], [2, -1, 1], "non-root|parent"),
        ([5, -1, -1], [2, -1, -1], "existing"),
    ],
)
def test_invalid_structures_are_rejected(left, right, msg):
    n = len(left)
    with pytest.raises(ValueError, match=msg):
        Tree(left, right, np.zeros((n, 1)), np.zeros(n), np.zeros((n, 1)))


def test_leaf_values_must_be_finite():
    with pytest.raises(ValueError, match="finite leaf_value"):
        small_tree(leaf_value=[[NAN, NAN], [NAN, 0.0], [NAN, NAN], [0, 1], [0, 1]])


def test_arrays_are_read_only():
    t = small_tree()
    with pytest.raises(ValueError):
        t.weight[0, 0] = 3.0


# ---------------------------------------------------------------- routing
def test_hard_routing_follows_the_rule_right_iff_positive():
    t = small_tree()
    X = np.array([[0.2, 0.9], [0.9, 0.1], [0.9, 0.9], [0.5, 0.9], [0.51, 0.5]])
    # x0 = 0.5 gives s = 0 exactly: goes LEFT (s > 0 is required to go right)
    assert t.apply(X).tolist() == [1, 3, 4, 1, 3]
    paths = t.paths(X)
    assert paths.tolist() == [[0, 1, -1], [0, 2, 3], [0, 2, 4], [0, 1, -1], [0, 2, 3]]
    ind = t.decision_path(X).toarray()
    assert ind.tolist()[2] == [1, 0, 1, 0, 1]


def test_routing_matches_a_naive_loop_on_random_oblique_trees():
    rng = np.random.default_rng(0)
    for depth in (1, 3, 6):
        dense = random_tree(rng, depth, d=5)
        # nodes with 0..5 nonzero weights exercise the padded per-level evaluation
        mask = rng.random(dense.weight.shape) < rng.random((dense.n_nodes, 1))
        t = Tree(dense.children_left, dense.children_right, dense.weight * mask, dense.bias,
                 dense.leaf_value)
        X = rng.normal(size=(300, 5))
        expect = []
        for x in X:
            node = 0
            while t.children_left[node] >= 0:
                s = t.weight[node] @ x + t.bias[node]
                node = t.children_right[node] if s > 0 else t.children_left[node]
            expect.append(node)
        assert t.apply(X).tolist() == expect
        steps = t.sample_path(X[0])
        assert [st.node for st in steps] + [expect[0]] == [v for v in t.paths(X[:1])[0] if v >= 0]
        S = t.decision_values(X[:1])[0]
        np.testing.assert_allclose([st.value for st in steps], S[[st.node for st in steps]], atol=1e-12)


def test_sparse_and_dense_decision_values_agree():
    rng = np.random.default_rng(1)
    n, d = 31, 200
    t_dense = random_tree(rng, 4, d)
    # one-hot rows make the weight matrix sparse (density < 10%), switching the code path
    w = np.zeros((n, d))
    w[np.arange(n), rng.integers(0, d, n)] = 1.0
    w[t_dense.is_leaf] = 0.0
    t_sparse = Tree(t_dense.children_left, t_dense.children_right, w, t_dense.bias, t_dense.leaf_value)
    assert t_sparse._sparse_weight is not None and t_dense._sparse_weight is None
    X = rng.normal(size=(50, d))
    np.testing.assert_allclose(t_sparse.decision_values(X), X @ w.T + t_dense.bias, atol=1e-12)


def test_soft_routing_reach_probabilities():
    rng = np.random.default_rng(2)
    for activation in ("sigmoid", "smoothstep"):
        t = random_tree(rng, 4, d=3, routing="soft", activation=activation)
        X = rng.normal(size=(40, 3))
        reach = t.reach_probability(X)
        assert reach.shape == (40, t.n_nodes)
        np.testing.assert_allclose(reach[:, t.leaves].sum(axis=1), 1.0, atol=1e-12)
        # every node's reach equals the sum over its two children
        for i in t.decision_nodes:
            np.testing.assert_allclose(
                reach[:, i], reach[:, t.children_left[i]] + reach[:, t.children_right[i]], atol=1e-12
            )


def test_soft_routing_hand_example_from_the_skinny_trees_spec():
    # Depth 2, S(root)=0.7, S(1)=0.2, S(2)=0.9 are probabilities of going LEFT in the paper;
    # the Tree stores the negated scores so that it gives P(right) = 1 - S.
    def logit(p):
        return np.log(p / (1 - p))

    p_left = {0: 0.7, 1: 0.2, 2: 0.9}
    bias = np.zeros(7)
    for node, p in p_left.items():
        bias[node] = -logit(p)
    t = Tree(
        [1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1], np.zeros((7, 1)), bias,
        np.eye(7)[:, 3:] * 1.0 + np.where(np.arange(7)[:, None] < 3, NAN, 0.0), routing="soft",
    )
    reach = t.reach_probability(np.zeros((1, 1)))[0, 3:]
    np.testing.assert_allclose(reach, [0.14, 0.56, 0.27, 0.03], atol=1e-12)


def test_smoothstep_values_and_hard_routing_outside_the_band():
    t_vals = np.array([-0.6, -0.5, -0.25, 0, 0.25, 0.5, 0.6])
    np.testing.assert_allclose(smoothstep(t_vals), [0, 0, 0.15625, 0.5, 0.84375, 1, 1], atol=0)
    assert sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist() == [0.0, 0.5, 1.0]
    # with |s| >= width/2 everywhere, a smooth-step tree routes exactly like a hard one
    t = small_tree(routing="soft", activation="smoothstep", activation_width=0.1)
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    reach = t.reach_probability(X)
    assert set(np.unique(reach)) <= {0.0, 1.0}
    np.testing.assert_array_equal(t.predict_value(X), small_tree().predict_value(X))


def test_predict_value_hard_soft_and_linear_leaves():
    t = small_tree()
    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(t.predict_value(X), [[1, 0], [0, 1], [0.25, 0.75]])
    lw = np.zeros((5, 2, 2))
    lw[3] = [[1.0, 0.0], [0.0, 2.0]]
    t_lin = small_tree(leaf_weight=lw)
    np.testing.assert_allclose(t_lin.predict_value(X)[1], [0.0 + 1.0, 1.0 + 0.0])
    soft = small_tree(routing="soft")
    out = soft.predict_value(X)
    reach = soft.reach_probability(X)
    np.testing.assert_allclose(out, reach[:, soft.leaves] @ soft.leaf_value[soft.leaves])


def test_bad_inputs_to_routing_are_sentences():
    t = small_tree()
    with pytest.raises(TreevizError, match="expects 2 features"):
        t.apply(np.zeros((3, 4)))
    with pytest.raises(TreevizError, match="infinite values"):
        t.apply(np.array([[np.inf, 0.0]]))
    with pytest.raises(TreevizError, match="infinite values"):
        t.decision_values(np.array([[0.0, -np.inf]]))


# ---------------------------------------------------------------- missing values
def test_missing_values_route_by_missing_right():
    # root: a missing goes right; node 2: b missing goes left (the default)
    t = small_tree(missing_right=[True, False, False, False, False])
    X = np.array([[NAN, 0.9], [NAN, 0.1], [0.9, NAN], [0.1, NAN], [NAN, NAN]])
    assert t.apply(X).tolist() == [4, 3, 3, 1, 3]
    assert t.paths(X).tolist() == [[0, 2, 4], [0, 2, 3], [0, 2, 3], [0, 1, -1], [0, 2, 3]]
    assert t.decision_path(X).toarray()[0].tolist() == [1, 0, 1, 0, 1]
    S = t.decision_values(X)
    assert np.isnan(S[:, 0]).tolist() == [True, True, False, False, True]
    assert np.isnan(S[:, 2]).tolist() == [False, False, True, True, True]
    assert S[0, 2] == pytest.approx(0.4) and S[2, 0] == pytest.approx(0.4)
    np.testing.assert_array_equal(t.reach_probability(X), t.decision_path(X).toarray())
    np.testing.assert_array_equal(t.predict_value(X), t.leaf_value[t.apply(X)])
    s = t.node_stats(X, np.array([0, 1, 1, 0, 1]))
    assert s.count.tolist() == [5, 1, 4, 3, 1]
    assert s.class_counts.tolist() == [[2, 3], [1, 0], [1, 3], [0, 3], [1, 0]]
    # the other way round: a missing goes left, b missing goes right
    flipped = small_tree(missing_right=[False, False, True, False, False])
    assert flipped.apply(X).tolist() == [1, 1, 4, 1, 1]
    steps = t.sample_path(X[2])
    assert [(st.node, st.goes_right, st.p_right) for st in steps] == [(0, True, 1.0), (2, False, 0.0)]
    assert steps[0].value == pytest.approx(0.4) and np.isnan(steps[1].value)
    steps = flipped.sample_path(X[2])
    assert [(st.node, st.goes_right, st.p_right) for st in steps] == [(0, True, 1.0), (2, True, 1.0)]


def test_soft_routing_sends_missing_values_with_probability_zero_or_one():
    t = small_tree(routing="soft", missing_right=[True, False, False, False, False])
    X = np.array([[NAN, 0.9], [0.9, NAN], [0.2, 0.7]])
    reach = t.reach_probability(X)
    np.testing.assert_allclose(reach[:, t.leaves].sum(axis=1), 1.0, atol=1e-12)
    assert reach[0, 1] == 0.0 and reach[0, 2] == 1.0  # a missing: right for sure
    assert reach[1, 3] == reach[1, 2] and reach[1, 4] == 0.0  # b missing: left for sure
    assert 0 < reach[2, 1] < 1 and 0 < reach[2, 3] < 1  # nothing missing: soft as usual
    p = t.right_probability(t.decision_values(X))
    assert p[0, 0] == 1.0 and p[1, 2] == 0.0
    assert t.right_probability([NAN, 0.0], nodes=[0, 2]).tolist() == [1.0, 0.5]
    smooth = small_tree(routing="soft", activation="smoothstep", activation_width=0.1,
                        missing_right=[False, False, True, False, False])
    assert smooth.reach_probability(X[1:2])[0].tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    stats = t.node_stats(X, np.array([0, 1, 1]))
    np.testing.assert_allclose(stats.count, reach.sum(axis=0))


def test_nan_in_a_feature_with_zero_weight_is_ignored():
    rng = np.random.default_rng(6)
    for d in (4, 200):  # dense and sparse decision values
        dense = random_tree(rng, 4, d=d)
        # feature 1 has weight 0 in every node; features 0 and 2 only in some
        w = dense.weight * (rng.random(dense.weight.shape) < 0.5)
        w[:, 1] = 0.0
        w[:, 3:] *= rng.random((dense.n_nodes, d - 3)) < 0.02
        t = Tree(dense.children_left, dense.children_right, w, dense.bias, dense.leaf_value,
                 missing_right=rng.random(dense.n_nodes) < 0.5)
        X = rng.normal(size=(200, d))
        X_nan = X.copy()
        X_nan[:, 1] = np.nan
        np.testing.assert_array_equal(t.decision_values(X_nan), t.decision_values(X))
        np.testing.assert_array_equal(t.apply(X_nan), t.apply(X))
        np.testing.assert_array_equal(tree_routing.route(t, X_nan)[1], tree_routing.route(t, X)[1])
        # NaN in a used feature: missing exactly at the nodes with a nonzero weight on it
        X_nan[:, 0] = np.nan
        missing = np.isnan(t.decision_values(X_nan))
        np.testing.assert_array_equal(missing, np.broadcast_to(w[:, 0] != 0, missing.shape))
        expect = []
        for x in X_nan:
            node = 0
            while t.children_left[node] >= 0:
                if t.weight[node, 0] != 0:
                    right = t.missing_right[node]
                else:
                    right = t.weight[node] @ np.nan_to_num(x) + t.bias[node] > 0
                node = t.children_right[node] if right else t.children_left[node]
            expect.append(node)
        assert t.apply(X_nan).tolist() == expect


def test_linear_leaves_ignore_nan_in_features_they_do_not_use():
    lw = np.zeros((5, 2, 2))
    lw[1] = [[1.0, 0.0], [2.0, 0.0]]  # leaf 1 uses a only
    X = np.array([[0.2, NAN]])
    for routing in ("hard", "soft"):
        t = small_tree(leaf_weight=lw, routing=routing, activation="smoothstep", activation_width=0.1)
        np.testing.assert_allclose(t.predict_value(X), [[1.2, 0.4]])
    hard = small_tree(leaf_weight=lw, missing_right=[False] * 5)
    assert np.isnan(hard.predict_value(np.array([[NAN, 0.0]]))).all()


def _tree_from_sklearn_with_missing(model, task):
    """A Tree with scikit-learn's node ids, one-hot splits and missing-value directions."""
    st = model.tree_
    n, d = st.node_count, model.n_features_in_
    internal = st.children_left >= 0
    weight = np.zeros((n, d))
    weight[np.flatnonzero(internal), st.feature[internal]] = 1.0
    bias = np.zeros(n)
    # A split of missing from present values has threshold +inf (every number goes left); the
    # largest finite float routes every finite input the same way and can be written as JSON.
    bias[internal] = -np.minimum(float64_threshold(st.threshold[internal]), np.finfo(np.float64).max)
    if task == "classification":
        leaf_value = np.array(st.value[:, 0, :], dtype=np.float64)
    else:
        leaf_value = np.array(st.value[:, :, 0], dtype=np.float64)
    leaf_value[internal] = NAN
    missing_right = internal & (st.missing_go_to_left == 0)
    return Tree(st.children_left, st.children_right, weight, bias, leaf_value, task=task,
                missing_right=missing_right)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_routing_with_missing_values_matches_sklearn(task):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 6)) * [1, 10, 0.1, 1, 1000, 1]
    signal = X[:, 0] + X[:, 1] / 10 - X[:, 2] * 10 + (X[:, 3] > 0.5)
    # missing values carry information in feature 0, so some splits send them right
    X[rng.random(X.shape) < np.array([0.3, 0.1, 0.2, 0.05, 0.0, 0.4])] = NAN
    signal = np.where(np.isnan(X[:, 0]), 2.0, signal)
    if task == "classification":
        y = np.digitize(signal + rng.normal(scale=0.3, size=signal.size), [-1.0, 0.5, 1.5])
        model = DecisionTreeClassifier(max_depth=10, random_state=0).fit(X, y)
    else:
        y = signal + rng.normal(scale=0.3, size=signal.size)
        model = DecisionTreeRegressor(max_depth=10, random_state=0).fit(X, y)
    tree = _tree_from_sklearn_with_missing(model, task)
    assert np.isinf(model.tree_.threshold).any()  # some splits separate missing from present values
    assert tree.missing_right.any() and not tree.missing_right[tree.decision_nodes].all()
    X_test = rng.normal(size=(5000, 6)) * [1, 10, 0.1, 1, 1000, 1]
    X_test[rng.random(X_test.shape) < 0.25] = NAN
    X_test[:20] = NAN  # rows with every feature missing
    for data in (X, X_test):
        assert np.isnan(data).any()
        np.testing.assert_array_equal(tree.apply(data), model.apply(data))
        assert (tree.decision_path(data) != model.decision_path(data)).nnz == 0
        expect = model.predict_proba(data) if task == "classification" else model.predict(data)[:, None]
        np.testing.assert_allclose(tree.predict_value(data), expect, rtol=0, atol=1e-12)
    # the JSON round trip keeps the directions
    back = Tree.from_json(tree.to_json())
    assert back.equals(tree)
    np.testing.assert_array_equal(back.apply(X_test), model.apply(X_test))


# ---------------------------------------------------------------- statistics
def test_node_stats_classification_and_regression():
    t = small_tree()
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    y = np.array([0, 0, 1, 1, 0])
    s = t.node_stats(X, y)
    assert s.count.tolist() == [5, 2, 3, 1, 2]
    assert s.class_counts.tolist() == [[3, 2], [2, 0], [1, 2], [0, 1], [1, 1]]
    np.testing.assert_allclose(s.class_fraction[2], [1 / 3, 2 / 3])
    reg = small_tree(task="regression", leaf_value=[[NAN], [1.0], [NAN], [2.0], [3.0]], output_names=("v",))
    yv = np.array([1.0, 3.0, 2.0, 4.0, 6.0])
    r = reg.node_stats(X, yv)
    np.testing.assert_allclose(r.value_mean, [3.2, 2.0, 4.0, 2.0, 5.0])
    np.testing.assert_allclose(r.value_std[1], 1.0)


def test_soft_node_stats_sum_reach_probabilities():
    rng = np.random.default_rng(3)
    t = random_tree(rng, 3, d=2, k=2, routing="soft")
    X = rng.normal(size=(30, 2))
    y = rng.integers(0, 2, 30)
    s = t.node_stats(X, y)
    np.testing.assert_allclose(s.count, t.reach_probability(X).sum(axis=0))
    np.testing.assert_allclose(s.class_counts.sum(axis=1), s.count)
    assert s.count[0] == pytest.approx(30)


# ---------------------------------------------------------------- paths
def test_sample_path_lists_the_decision_nodes_with_values_and_branches():
    t = small_tree()
    steps = t.sample_path(np.array([0.9, 0.1]))
    assert [(s.node, s.depth, s.goes_right, s.p_right) for s in steps] == [(0, 0, True, 1.0), (2, 1, False, 0.0)]
    assert steps[0].value == pytest.approx(0.4)
    assert steps[1].value == pytest.approx(-0.4)
    with pytest.raises(TreevizError, match="exactly one sample"):
        t.sample_path(np.zeros((2, 2)))


# ---------------------------------------------------------------- counts
def test_parameter_nonzero_and_flop_counts_by_hand():
    t = small_tree()
    # decision nodes: 2 x (1 nonzero + 1 bias) = 4; constant leaves: 3 x 2 outputs = 6
    assert t.n_params() == 10
    assert t.n_nonzero_weights() == 2
    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    # paths visit 1, 2, 2, 1 decision nodes with one nonzero each
    assert t.flops(X) == pytest.approx(1.5)
    obl = small_tree(weight=[[0.5, -1.5], [0, 0], [0.0, 1.0], [0, 0], [0, 0]])
    assert obl.n_params() == 3 + 2 + 6
    # pruned nodes do not count
    pruned = small_tree(active=[1, 1, 0, 0, 0])
    assert pruned.n_params() == 2 + 2
    # linear leaves count their nonzeros and are paid for on the path
    lw = np.zeros((5, 2, 2))
    lw[1] = [[1.0, 0.0], [0.0, 2.0]]
    lin = small_tree(leaf_weight=lw)
    assert lin.n_params() == 10 + 2
    assert lin.flops(np.array([[0.0, 0.0]])) == pytest.approx(1 + 2)


# ---------------------------------------------------------------- JSON
def test_json_round_trip_is_exact():
    rng = np.random.default_rng(4)
    t = random_tree(rng, 5, d=7, routing="soft", activation="smoothstep")
    t = Tree(
        t.children_left, t.children_right, t.weight, t.bias, t.leaf_value,
        active=rng.random(t.n_nodes), routing="soft", activation="smoothstep", activation_width=0.7,
        feature_names=[f"f{i}" for i in range(7)], output_names=["a", "b", "c"],
        task="classification", family="test", meta={"note": "hi", "lambda": 0.1},
    )
    text = t.to_json()
    json.loads(text)  # standard JSON: NaN written as null
    assert "NaN" not in text
    back = Tree.from_json(text)
    assert back.equals(t)
    X = rng.normal(size=(20, 7))
    np.testing.assert_array_equal(back.predict_value(X), t.predict_value(X))


def test_meta_is_kept_in_its_json_form():
    # tuples and numpy numbers in meta come back from JSON as lists and plain numbers; the Tree
    # stores them that way from the start, so a round trip gives an equal Tree
    t = small_tree(meta={"notes": ("one", "two"), "lambda": np.float64(0.5), "origin": np.arange(3)})
    assert t.meta == {"notes": ["one", "two"], "lambda": 0.5, "origin": [0, 1, 2]}
    assert Tree.from_json(t.to_json()).equals(t)
    with pytest.raises(ValueError, match="JSON values"):
        small_tree(meta={"model": object()})
    with pytest.raises(ValueError, match="JSON values"):
        small_tree(meta={"score": float("nan")})


def test_json_with_and_without_missing_right():
    t = small_tree(missing_right=[True, True, False, True, True])
    assert t.missing_right.tolist() == [True, False, False, False, False]  # False at leaves
    d = json.loads(t.to_json())
    assert d["missing_right"] == [True, False, False, False, False]
    back = Tree.from_dict(d)
    assert back.equals(t) and back.missing_right.dtype == bool
    assert not back.equals(small_tree())
    # a description written before the field existed: missing values go left
    del d["missing_right"]
    old = Tree.from_dict(d)
    assert old.missing_right.tolist() == [False] * 5
    assert old.equals(small_tree()) and old.apply(np.array([[NAN, 1.0]])).tolist() == [1]
    d["missing_right"] = None
    assert Tree.from_dict(d).equals(small_tree())
    for bad in ([1, 0, 0, 0, 0], "yes", [True, False]):
        d["missing_right"] = bad
        with pytest.raises(TreevizError, match="inconsistent"):
            Tree.from_dict(d)
    with pytest.raises(ValueError, match="missing_right has 2 entries"):
        small_tree(missing_right=[True, False])
    # in_input_units keeps the directions
    assert t.in_input_units([1.0, 2.0], [2.0, 3.0]).missing_right.tolist() == t.missing_right.tolist()


def test_from_json_rejects_foreign_documents():
    with pytest.raises(TreevizError, match="not valid JSON"):
        Tree.from_json("{nope")
    with pytest.raises(TreevizError, match="not a treeviz tree"):
        Tree.from_json('{"a": 1}')
    d = small_tree().to_dict()
    d["children_left"] = [1, 1, 3, -1, -1]
    with pytest.raises(TreevizError, match="inconsistent"):
        Tree.from_dict(d)
    d = small_tree().to_dict()
    d["version"] = 99
    with pytest.raises(TreevizError, match="newer treeviz"):
        Tree.from_dict(d)


def test_class_index_maps_labels_by_name():
    t = small_tree()
    assert t.class_index(["yes", "no", "yes"]).tolist() == [1, 0, 1]
    assert t.class_index(np.array([], dtype=object)).tolist() == []
    with pytest.raises(TreevizError, match="'maybe' is not one of"):
        t.class_index(["maybe"])


def test_in_input_units_rewrites_hyperplanes_exactly_in_raw_units():
    rng = np.random.default_rng(5)
    t = random_tree(rng, 4, d=3)
    mean, scale = np.array([10.0, -3.0, 0.5]), np.array([2.0, 0.1, 5.0])
    raw = rng.normal(size=(500, 3)) * scale + mean
    scaled = (raw - mean) / scale
    t_raw = t.in_input_units(mean, scale)
    np.testing.assert_allclose(t_raw.decision_values(raw), t.decision_values(scaled), atol=1e-9)
    assert np.array_equal(t_raw.apply(raw), t.apply(scaled))
    # an axis-aligned threshold reads in raw units: z > 0.5 with z = (x - 10) / 2  <=>  x > 11
    axis = small_tree(bias=[-0.5, 0, -0.5, 0, 0])
    shown = axis.in_input_units([10.0, 0.0], [2.0, 1.0])
    assert -shown.bias[0] / shown.weight[0, 0] == pytest.approx(11.0)
    lw = np.zeros((5, 2, 2))
    lw[3] = [[1.0, 2.0], [0.5, 0.0]]
    lin = small_tree(leaf_weight=lw)
    lin_raw = lin.in_input_units(mean[:2], scale[:2])
    np.testing.assert_allclose(lin_raw.predict_value(raw[:, :2]), lin.predict_value(scaled[:, :2]), atol=1e-9)
    with pytest.raises(TreevizError, match="nonzero"):
        t.in_input_units(mean, np.array([1.0, 0.0, 1.0]))
