"""λ-path and forest figures, and the ensemble vote agreement they show."""

import numpy as np
import pytest

from models.ground.tree import Tree
from treeviz.plots import forest_summary_figure, lambda_path_figure
from treeviz.readers.metrics import tree_votes, vote_agreement


def stump(feature: int, threshold: float, left_class: int, n_features: int = 2, k: int = 2) -> Tree:
    w = np.zeros((3, n_features))
    w[0, feature] = 1.0
    leaf = np.full((3, k), np.nan)
    leaf[1] = np.eye(k)[left_class]
    leaf[2] = np.eye(k)[1 - left_class]
    return Tree(children_left=[1, -1, -1], children_right=[2, -1, -1], weight=w, bias=[-threshold, 0, 0],
                leaf_value=leaf, output_names=("a", "b"))


ROWS = [
    {"value": 0.01, "train_accuracy": 1.0, "test_accuracy": 0.9, "n_nonzero_weights": 40, "n_decision_nodes": 7,
     "flops": 20.0},
    {"value": 1.0, "train_accuracy": 0.95, "test_accuracy": 0.92, "n_nonzero_weights": 12, "n_decision_nodes": 3,
     "flops": 8.0},
    {"value": 100.0, "train_accuracy": 0.6, "test_accuracy": 0.55, "n_nonzero_weights": 0, "n_decision_nodes": 0,
     "flops": 0.0},
]


def test_lambda_path_figure_plots_error_nonzeros_nodes_and_flops():
    fig = lambda_path_figure(list(reversed(ROWS)), param="l1_penalty", selected=1.0, baseline={"test_accuracy": 0.8,
                                                                          "n_nonzero_weights": 7})
    spec = fig.to_dict()
    by_name = {t["name"]: t for t in spec["data"]}
    assert list(by_name["test error"]["x"]) == [0.01, 1.0, 100.0]  # sorted by λ
    np.testing.assert_allclose(by_name["test error"]["y"], [10.0, 8.0, 45.0])  # error in %, from accuracy
    assert list(by_name["nonzero weights"]["y"]) == [40, 12, 0]
    assert list(by_name["decision nodes"]["y"]) == [7, 3, 0]
    assert list(by_name["FLOPs / sample"]["y"]) == [20.0, 8.0, 0.0]
    assert spec["layout"]["xaxis"]["type"] == "log"
    assert spec["layout"]["meta"]["param"] == "l1_penalty"
    shapes = spec["layout"]["shapes"]
    assert sum(s.get("x0") == 1.0 for s in shapes) == 3  # the selected λ marked in each panel
    dashed = [s for s in shapes if s.get("line", {}).get("dash") == "dash"]
    assert sorted(round(s["y0"], 9) for s in dashed) == [7, 20.0]  # initial tree: 20 % error, 7 nonzeros


def test_lambda_path_figure_for_regression_uses_rmse():
    rows = [{"value": 0.1, "train_rmse": 2.0, "test_rmse": 3.0, "n_nonzero_weights": 5, "n_decision_nodes": 2},
            {"value": 10.0, "train_rmse": 4.0, "test_rmse": 4.5, "n_nonzero_weights": 1, "n_decision_nodes": 1}]
    spec = lambda_path_figure(rows, param="l1_penalty").to_dict()
    assert [list(t["y"]) for t in spec["data"] if t["name"] == "test error"] == [[3.0, 4.5]]
    assert spec["layout"]["yaxis"]["title"]["text"] == "RMSE"
    assert "No λ path" in str(lambda_path_figure([], param="l1_penalty").to_dict()["layout"])


def test_vote_agreement_counts_equal_votes():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    trees = [stump(0, 0.5, 0), stump(0, 1.5, 0), stump(0, 2.5, 0)]
    votes = tree_votes(trees, X)
    assert votes.tolist() == [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]]
    agree = vote_agreement(trees, X)
    np.testing.assert_allclose(agree["pairwise"], [[1, 0.75, 0.5], [0.75, 1, 0.75], [0.5, 0.75, 1]])
    # majority per sample: 0, 0, 1, 1
    np.testing.assert_allclose(agree["with_ensemble"], [0.75, 1.0, 0.75])
    assert agree["mean_pairwise"] == pytest.approx((0.75 + 0.5 + 0.75) / 3)
    assert vote_agreement(trees[:1], X)["mean_pairwise"] == 1.0


def test_forest_summary_figure_shows_sizes_and_agreement():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    trees = [stump(0, 0.5, 0), stump(1, 1.5, 0), stump(0, 2.5, 1)]
    spec = forest_summary_figure(trees, X).to_dict()
    bars = {t["name"]: list(t["y"]) for t in spec["data"] if t["type"] == "bar"}
    assert bars == {"decision nodes": [1, 1, 1], "nonzero weights": [1, 1, 1], "depth": [1, 1, 1]}
    heat = next(t for t in spec["data"] if t["type"] == "heatmap")
    z = np.array(heat["z"])
    agree = vote_agreement(trees, X)
    np.testing.assert_allclose(np.diag(z), agree["with_ensemble"])
    np.testing.assert_allclose(z[0, 1], agree["pairwise"][0, 1])
    assert spec["layout"]["meta"]["n_trees"] == 3


def test_weight_image_shapes_for_tao_trees():
    """Spec test 26: digits weights are 8×8 images, MNIST-like ones 28×28; limits symmetric around 0,
    zero is white, and the legend says positive pushes right."""
    from sklearn.datasets import load_digits

    from models.tao.estimators import TAOClassifier
    from treeviz.plots import weight_image_figure
    from treeviz.plots.style import DIVERGING

    X, y = load_digits(return_X_y=True)
    tree = TAOClassifier(depth=2, l1_penalty=1.0, max_iter=3).fit(X[:600] / 16.0, y[:600]).to_tree()
    node = int(tree.decision_nodes[0])
    hm = weight_image_figure(tree, node, (8, 8)).to_dict()["data"][0]
    assert np.asarray(hm["z"]).shape == (8, 8)
    assert hm["zmin"] == -hm["zmax"] and hm["zmid"] == 0
    assert dict(DIVERGING)[0.5] == "#FFFFFF"
    assert "pushes right" in hm["colorbar"]["title"]["text"]
    assert np.count_nonzero(hm["z"]) == np.count_nonzero(tree.weight[node]) < 64  # ℓ1: sparse pixels

    w = np.zeros((3, 784))
    w[0, [0, 400, 783]] = [0.5, -2.0, 1.0]
    leaf = np.full((3, 2), np.nan)
    leaf[1], leaf[2] = [1, 0], [0, 1]
    mnist_like = Tree(children_left=[1, -1, -1], children_right=[2, -1, -1], weight=w, bias=[0.1, 0, 0],
                      leaf_value=leaf)
    hm = weight_image_figure(mnist_like, 0, (28, 28)).to_dict()["data"][0]
    z = np.asarray(hm["z"])
    assert z.shape == (28, 28) and z[14, 8] == -2.0 and z[27, 27] == 1.0
    assert hm["zmax"] == 2.0 and hm["zmin"] == -2.0
