"""Dendrogram purity: hand-computed toy cases and the fast formula against the pair loop."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers.metrics import (
    class_auc,
    dendrogram_purity,
    dendrogram_purity_bruteforce,
    feature_weight_norms,
    features_used,
)

NAN = np.nan


def depth2_tree():
    """x0 splits at the root, x1 below: leaves 3, 4, 5, 6 (heap order)."""
    left = [1, 3, 5, -1, -1, -1, -1]
    right = [2, 4, 6, -1, -1, -1, -1]
    w = np.zeros((7, 2))
    w[0, 0] = w[1, 1] = w[2, 1] = 1.0
    leaf = np.where(np.arange(7)[:, None] < 3, NAN, 0.0)
    return Tree(left, right, w, np.zeros(7), leaf, task="clustering")


QUADRANTS = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=float)


def points(per_leaf):
    """Rows in the leaves 3..6 (quadrants) with the given counts."""
    return np.vstack([np.repeat(QUADRANTS[k : k + 1], n, axis=0) for k, n in enumerate(per_leaf)])


@pytest.mark.parametrize("variant", ["standard", "code"])
def test_toy_cases(variant):
    tree = depth2_tree()
    X = points([3, 3, 3, 3])
    assert dendrogram_purity(tree, X, ["a"] * 12, variant) == pytest.approx(1.0)  # one class
    pure = ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"] * 3
    assert dendrogram_purity(tree, X, pure, variant) == pytest.approx(1.0)  # pure leaves
    # every leaf holds two classes half and half, and so does every node: purity 0.5
    X2 = points([4, 4, 4, 4])
    half = (["a", "a", "b", "b"]) * 4
    assert dendrogram_purity(tree, X2, half, variant) == pytest.approx(0.5)
    # ten classes in equal shares everywhere: constant purity 0.1
    X3 = points([10, 10, 10, 10])
    tenth = [str(k) for k in range(10)] * 4
    assert dendrogram_purity(tree, X3, tenth, variant) == pytest.approx(0.1)


@pytest.mark.parametrize("variant", ["standard", "code"])
def test_fast_formula_equals_the_pair_loop(variant):
    rng = np.random.default_rng(0)
    tree = depth2_tree()
    for _ in range(5):
        X = rng.normal(size=(40, 2))
        labels = rng.integers(0, 3, 40)
        fast = dendrogram_purity(tree, X, labels, variant)
        slow = dendrogram_purity_bruteforce(tree, X, labels, variant)
        assert fast == pytest.approx(slow, abs=1e-12)


def test_the_code_variant_counts_self_pairs():
    tree = depth2_tree()
    X = points([2, 1, 0, 0])
    labels = ["a", "a", "a"]
    # standard: pairs (0,1) in leaf 3 -> purity 1; (0,2), (1,2) via LCA node 1 -> purity 1: DP = 1
    assert dendrogram_purity(tree, X, labels, "standard") == pytest.approx(1.0)
    X = points([1, 1, 0, 0])
    labels = ["a", "b"]
    with pytest.raises(TreevizError, match="two points of one class"):
        dendrogram_purity(tree, X, labels, "standard")
    # the code variant scores each point with itself (leaf purity 1): DP = 1
    assert dendrogram_purity(tree, X, labels, "code") == pytest.approx(1.0)


def test_class_auc_as_the_papers_report_it():
    rng = np.random.default_rng(0)
    y2 = rng.choice(["no", "yes"], 100)
    p2 = rng.dirichlet([1, 1], 100)
    assert class_auc(y2, p2, np.array(["no", "yes"])) == pytest.approx(roc_auc_score(y2 == "yes", p2[:, 1]), abs=1e-12)
    y3 = rng.integers(0, 3, 100)
    p3 = rng.dirichlet([1, 1, 1], 100)
    assert class_auc(y3, p3, np.arange(3)) == pytest.approx(roc_auc_score(y3, p3, multi_class="ovo"), abs=1e-12)
    assert class_auc(np.zeros(5, int), p3[:5], np.arange(3)) is None
    # a class absent from the split: AUC over the two present, probabilities renormalised
    two = y3 != 1
    expected = roc_auc_score(y3[two] == 2, p3[two][:, 2] / (p3[two][:, 0] + p3[two][:, 2]))
    assert class_auc(y3[two], p3[two], np.arange(3)) == pytest.approx(expected)


def test_class_auc_equals_scikit_learns_with_ties_and_ten_classes():
    # a tree's probabilities: a few distinct rows (its leaves), so scores tie often
    rng = np.random.default_rng(1)
    leaves = rng.dirichlet(np.ones(10), 7)
    for n in (30, 500):
        proba = leaves[rng.integers(0, 7, n)]
        y = rng.integers(0, 10, n)
        y[:10] = np.arange(10)  # every class present
        assert class_auc(y, proba, np.arange(10)) == pytest.approx(roc_auc_score(y, proba, multi_class="ovo"),
                                                                   abs=1e-12)
        assert class_auc(y % 2, proba[:, :2] / proba[:, :2].sum(1, keepdims=True), np.arange(2)) == pytest.approx(
            roc_auc_score(y % 2, proba[:, 1] / proba[:, :2].sum(1)), abs=1e-12)


def test_class_auc_when_a_row_puts_all_its_mass_on_an_absent_class():
    # four classes, class 3 absent from the split; the last row is sure of class 3 (a CART leaf)
    labels = np.array([0, 1, 2, 0, 1, 2])
    proba = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0.5, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1.0]])
    auc = class_auc(labels, proba, np.arange(4))
    assert auc is not None and 0 <= auc <= 1


def test_features_used_and_weight_norms_read_every_tree():
    def stump(weights):
        w = np.zeros((3, 4))
        w[0] = weights
        leaf = np.full((3, 1), np.nan)
        leaf[1:] = [[0.0], [1.0]]
        return Tree(children_left=[1, -1, -1], children_right=[2, -1, -1], weight=w, bias=[0.0, 0, 0],
                    leaf_value=leaf, task="regression")

    trees = [stump([3.0, 0, 0, 0]), stump([4.0, 0, 2.0, 0])]
    assert features_used(trees).tolist() == [True, False, True, False]
    np.testing.assert_allclose(feature_weight_norms(trees), [5.0, 0.0, 2.0, 0.0])


# ---------------------------------------------------------------------------- embedding quality

def test_knn_accuracy_leave_one_out_by_hand():
    from treeviz.readers.metrics import knn_accuracy

    # two tight groups and one point of class b sitting in group a
    Z = np.array([[0, 0], [0, 0.1], [0.1, 0], [0.05, 0.05], [10, 10], [10, 10.1], [10.1, 10]], dtype=float)
    labels = np.array(["a", "a", "a", "b", "b", "b", "b"])
    # k = 3: each point of group a sees the other three of its group (2 a + 1 b, or 3 a for the b point)
    acc = knn_accuracy(Z, labels, k=3)
    assert acc == pytest.approx(6 / 7)  # only the b point among the a's is outvoted
    # new points are voted on by all the given points, nothing left out
    assert knn_accuracy(Z, labels, np.array([[0.02, 0.02], [9.9, 9.9]]), np.array(["a", "b"]), k=3) == 1.0


def test_knn_accuracy_is_the_share_of_correct_votes_like_scikit_learn():
    from sklearn.neighbors import KNeighborsClassifier

    from treeviz.readers.metrics import knn_accuracy

    rng = np.random.default_rng(0)
    Z, labels = rng.standard_normal((80, 2)), rng.integers(0, 3, 80)
    Q, truth = rng.standard_normal((30, 2)), rng.integers(0, 3, 30)
    expected = KNeighborsClassifier(5).fit(Z, labels).score(Q, truth)
    assert knn_accuracy(Z, labels, Q, truth) == pytest.approx(expected)


def test_trustworthiness_is_one_for_an_isometry_and_lower_for_a_shuffle():
    from treeviz.readers.metrics import trustworthiness_score

    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 2))
    rotation = np.array([[0.6, -0.8], [0.8, 0.6]])
    assert trustworthiness_score(X, X @ rotation) == pytest.approx(1.0)
    assert trustworthiness_score(X, rng.permutation(X)) < 0.7
    # above the cap it is computed on a seeded sample: the same value twice, in [0, 1]
    big = rng.standard_normal((400, 3))
    a = trustworthiness_score(big, big[:, :2], max_points=150, seed=3)
    assert a == trustworthiness_score(big, big[:, :2], max_points=150, seed=3) and 0 < a < 1
    assert np.isnan(trustworthiness_score(X[:8], X[:8]))  # too few points for 5 neighbours
