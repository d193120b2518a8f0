"""Weight figures, class routing figures and training curves, checked on ``fig.to_dict()``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.registry import get_family
from models.tao.family import SIZE_PANEL
from treeviz.plots import (
    class_flow_figure,
    class_split_bars,
    top_weights_figure,
    training_curves,
    weight_image_figure,
    weight_images_grid,
    weights_heatmap,
)
from treeviz.plots.style import DIVERGING, NEGATIVE, POSITIVE, class_color, rgba
from treeviz.ui.labels import curve_layout


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return CARTClassifier(max_depth=4).fit(X, y).to_tree(), X, y


@pytest.fixture(scope="module")
def oblique():
    """A small oblique tree with sparse random weights (mixed signs) on 12 named features."""
    rng = np.random.default_rng(0)
    left = np.array([1, 3, 5, -1, -1, -1, -1])
    right = np.array([2, 4, 6, -1, -1, -1, -1])
    weight = np.zeros((7, 12))
    for v in (0, 1, 2):
        weight[v] = rng.normal(size=12) * (rng.random(12) < 0.6)
    weight[:, 11] = 0.0  # a feature no node uses
    leaf_value = np.full((7, 3), np.nan)
    leaf_value[3:] = rng.dirichlet(np.ones(3), size=4)
    bias = np.array([0.5, -1, 2, 0, 0, 0, 0])
    return Tree(children_left=left, children_right=right, weight=weight, bias=bias, leaf_value=leaf_value,
                feature_names=tuple(f"f{j}" for j in range(12)), output_names=("a", "b", "c"))


# --------------------------------------------------------------------------- required test (b)


def test_weight_image_of_a_cart_node_on_digits(digits):
    tree, _, _ = digits
    node = int(tree.children_left[0])
    assert not tree.is_leaf[node]
    d = weight_image_figure(tree, node, (8, 8)).to_dict()
    assert len(d["data"]) == 1
    hm = d["data"][0]
    assert hm["type"] == "heatmap"
    z = np.asarray(hm["z"], dtype=float)
    assert z.shape == (8, 8)
    feature = int(np.flatnonzero(tree.weight[node])[0])
    r, c = divmod(feature, 8)
    assert np.count_nonzero(z) == 1
    assert z[r, c] == tree.weight[node, feature]
    assert hm["zmid"] == 0
    assert hm["zmin"] == -hm["zmax"]
    assert "pushes right" in hm["colorbar"]["title"]["text"]
    assert d["layout"]["yaxis"]["autorange"] == "reversed"
    assert d["layout"]["yaxis"]["scaleanchor"] == "x"
    assert hm["customdata"][r][c] == tree.feature_names[feature]


def test_diverging_scale_is_red_white_blue():
    stops = dict(DIVERGING)
    assert stops[0.5] == "#FFFFFF"
    assert DIVERGING[-1][1].upper() in ("#053061",) and POSITIVE in [c for _, c in DIVERGING[5:]]
    assert NEGATIVE in [c for _, c in DIVERGING[:5]]


def test_weight_image_not_symmetric_keeps_zero_white(oblique):
    d = weight_image_figure(oblique, 0, (3, 4), symmetric=False).to_dict()
    hm = d["data"][0]
    assert hm["zmid"] == 0 and "zmin" not in hm


def test_weight_image_errors(digits):
    tree, _, _ = digits
    with pytest.raises(TreevizError, match="does not match"):
        weight_image_figure(tree, 0, (7, 8))
    with pytest.raises(TreevizError, match="leaf"):
        weight_image_figure(tree, int(tree.leaves[0]), (8, 8))


def test_weight_images_grid(digits):
    tree, _, _ = digits
    d = weight_images_grid(tree, (8, 8), max_nodes=4, shared_scale=True).to_dict()  # the shared option
    assert len(d["data"]) == 4
    titles = [a["text"] for a in d["layout"]["annotations"]]
    assert titles == [f"node {v}" for v in d["layout"]["meta"]["nodes"]]
    assert d["layout"]["meta"]["nodes"][0] == 0
    for t in d["data"]:
        assert np.asarray(t["z"]).shape == (8, 8) and t["coloraxis"] == "coloraxis"
    ca = d["layout"]["coloraxis"]
    assert ca["cmid"] == 0 and ca["cmin"] == -ca["cmax"]
    full = weight_images_grid(tree, (8, 8)).to_dict()
    assert len(full["data"]) == min(16, tree.decision_nodes.size)


# --------------------------------------------------------------------------- top weights, heatmap


def test_top_weights_bars(oblique):
    node = 0
    w = oblique.weight[node]
    d = top_weights_figure(oblique, node, k=4).to_dict()
    bar = d["data"][0]
    assert len(bar["x"]) == min(4, np.count_nonzero(w))
    order = np.argsort(-np.abs(w), kind="stable")[:4]
    assert bar["y"][::-1] == [oblique.feature_names[j] for j in order]  # largest at the top
    assert bar["x"][::-1] == pytest.approx(w[order].tolist())
    for x, col in zip(bar["x"], bar["marker"]["color"]):
        assert col == (POSITIVE if x > 0 else NEGATIVE)
    assert "bias = 0.5" in d["layout"]["title"]["subtitle"]["text"]
    assert "pushes right" in d["layout"]["xaxis"]["title"]["text"]
    with pytest.raises(TreevizError):
        top_weights_figure(oblique, 4)


def test_weights_heatmap_shape_and_scale(oblique):
    used = np.flatnonzero(np.any(oblique.weight[[0, 1, 2]] != 0, axis=0))
    d = weights_heatmap(oblique).to_dict()
    hm = d["data"][0]
    z = np.asarray(hm["z"], dtype=float)
    assert z.shape == (3, used.size)
    assert hm["y"] == ["node 0", "node 1", "node 2"]
    assert hm["x"] == [oblique.feature_names[j] for j in used]
    assert np.array_equal(z, oblique.weight[[0, 1, 2]][:, used])
    assert hm["zmid"] == 0 and hm["zmin"] == -hm["zmax"] == -np.abs(z).max()
    assert "%{z" in hm["hovertemplate"] and "%{y}" in hm["hovertemplate"]
    full = np.asarray(weights_heatmap(oblique, drop_zero=False).to_dict()["data"][0]["z"])
    assert full.shape == (3, 12)
    few = weights_heatmap(oblique, nodes=[2, 0, 5], max_features=3).to_dict()
    assert np.asarray(few["data"][0]["z"]).shape == (2, 3)  # leaf 5 skipped
    assert few["layout"]["meta"]["nodes"] == [2, 0]


def test_weights_heatmap_cart_digits(digits):
    tree, _, _ = digits
    d = weights_heatmap(tree).to_dict()
    z = np.asarray(d["data"][0]["z"], dtype=float)
    assert z.shape[0] == tree.decision_nodes.size
    assert (np.count_nonzero(z, axis=1) == 1).all()  # axis-aligned: one weight per node


# --------------------------------------------------------------------------- routing


def test_class_flow_link_values_sum_to_class_counts(digits):
    tree, X, y = digits
    max_levels = 3
    assert tree.node_depth[tree.leaves].min() > max_levels  # every sample reaches depth 3
    d = class_flow_figure(tree, X, y, max_levels=max_levels).to_dict()
    sk = d["data"][0]
    assert sk["type"] == "sankey"
    nodes = d["layout"]["meta"]["nodes"]
    assert sk["node"]["customdata"] == nodes
    link = sk["link"]
    names = list(tree.output_names)
    target_depth = [tree.node_depth[nodes[t]] for t in link["target"]]
    for level in range(1, max_levels + 1):
        for k in range(10):
            total = sum(v for v, lab, dep in zip(link["value"], link["label"], target_depth)
                        if dep == level and lab == names[k])
            assert total == pytest.approx(np.sum(y == k))
    # link colours are the class colours, semi-transparent
    for lab, col in zip(link["label"], link["color"]):
        assert col == rgba(class_color(names.index(lab)), 0.45)
    assert sk["node"]["label"][0] == "node 0"  # its samples are in the hover
    assert "samples" in sk["node"]["hovertemplate"]
    for s, t in zip(link["source"], link["target"]):
        assert tree.parent[nodes[t]] == nodes[s]


def test_class_flow_with_shallow_leaves_counts_samples_reaching_each_depth():
    X, y = load_breast_cancer(return_X_y=True)
    tree = CARTClassifier(max_depth=5).fit(X, y).to_tree()
    d = class_flow_figure(tree, X, y, max_levels=4, class_names=["malignant", "benign"]).to_dict()
    link = d["data"][0]["link"]
    nodes = d["layout"]["meta"]["nodes"]
    paths = tree.paths(X)
    for level in range(1, 5):
        reach = paths[:, level] >= 0
        for k, name in enumerate(["malignant", "benign"]):
            total = sum(v for v, lab, t in zip(link["value"], link["label"], link["target"])
                        if tree.node_depth[nodes[t]] == level and lab == name)
            assert total == np.sum(reach & (y == k))


def test_class_flow_needs_classification():
    X, y = load_iris(return_X_y=True)
    from models.cart.estimators import CARTRegressor

    tree = CARTRegressor(max_depth=2).fit(X, y.astype(float)).to_tree()
    with pytest.raises(TreevizError):
        class_flow_figure(tree, X, y)


def test_class_split_bars_left_plus_right_equals_node_counts(digits):
    tree, X, y = digits
    d = class_split_bars(tree, X, y, max_levels=2).to_dict()
    nodes = d["layout"]["meta"]["nodes"]
    assert nodes == [0, 1, int(tree.children_right[0])]
    assert len(d["data"]) == 2 * len(nodes)
    stats = tree.node_stats(X, y)
    names = list(tree.output_names)
    for i, v in enumerate(nodes):
        left, right = d["data"][2 * i], d["data"][2 * i + 1]
        assert left["name"] == "goes left" and right["name"] == "goes right"
        assert all(x <= 0 for x in left["x"]) and all(x >= 0 for x in right["x"])
        for cls, lv, rv in zip(left["y"], left["x"], right["x"]):
            k = names.index(cls)
            assert -lv + rv == pytest.approx(stats.class_counts[v, k])
            assert -lv == pytest.approx(stats.class_counts[tree.children_left[v], k])
    assert d["layout"]["barmode"] == "relative"
    share = class_split_bars(tree, X, y, max_levels=1, normalize=True).to_dict()
    lefts, rights = share["data"][0]["x"], share["data"][1]["x"]
    assert [-a + b for a, b in zip(lefts, rights)] == pytest.approx([1.0] * len(lefts))


# --------------------------------------------------------------------------- training curves


HISTORY = [
    {"epoch": i, "loss": 1 / i, "train_score": 1 - 0.5 / i, "val_score": 1 - 0.6 / i,
     "n_active_nodes": 31 - i, "nnz": 200 - 3 * i, "lambda": 0.1, "note": "text"}
    for i in range(1, 16)
]


def traces_by_name(d):
    return {t["name"]: t for t in d["data"]}


def test_training_curves_many_records():
    d = training_curves(HISTORY).to_dict()
    tr = traces_by_name(d)
    assert set(tr) == {"loss", "train_score", "val_score", "n_active_nodes", "nnz", "lambda"}
    for t in tr.values():
        assert "markers" in t["mode"] and "lines" in t["mode"]
        assert t["x"] == list(range(1, 16))
    # keys sharing a scale share a panel; different kinds get different panels
    assert tr["train_score"]["yaxis"] == tr["val_score"]["yaxis"]
    assert tr["n_active_nodes"]["yaxis"] == tr["nnz"]["yaxis"]
    assert len({tr[k]["yaxis"] for k in ("loss", "train_score", "nnz", "lambda")}) == 4
    assert tr["loss"]["y"] == pytest.approx([1 / i for i in range(1, 16)])
    assert d["layout"]["meta"]["groups"]["Score"] == ["train_score", "val_score"]
    assert d["layout"]["meta"]["x"] == "epoch" and d["layout"]["xaxis"]["tickformat"] == "d"


def test_training_curves_one_record_is_visible():
    d = training_curves(HISTORY[:1]).to_dict()
    assert len(d["data"]) == 6
    for t in d["data"]:
        assert len(t["x"]) == 1 and "markers" in t["mode"] and t["marker"]["size"] >= 6


def test_training_curves_empty():
    for h in ([], None):
        d = training_curves(h).to_dict()
        assert d["data"] == [] or all(not t.get("x") for t in d["data"])
        assert "no training history" in d["layout"]["annotations"][0]["text"]


def test_training_curves_keys_gaps_and_missing_x():
    h = [{"loss": 1.0, "val_score": 0.5}, {"loss": 0.5}, {"loss": float("nan"), "val_score": 0.7}]
    d = training_curves(h, keys=["loss", "val_score"]).to_dict()
    tr = traces_by_name(d)
    assert tr["loss"]["x"] == [1, 2, 3]  # no "epoch": record numbers
    assert tr["loss"]["y"] == [1.0, 0.5, None]
    assert tr["val_score"]["y"] == [0.5, None, 0.7]
    with pytest.raises(TreevizError):
        training_curves(h, keys=["accuracy"])


def test_bookkeeping_is_not_drawn_and_errors_are_not_scores():
    """TAO's history: the iteration is the (whole-number) axis, timings and counters of changed
    nodes are not curves, and an error never shares a panel with a score."""
    history = [{"iteration": i, "objective": 10.0 / i, "train_error": 0.3 / i, "val_score": 0.8,
                "time_s": 0.01 * i, "seconds": 0.5} for i in range(1, 5)]
    d = training_curves(history).to_dict()
    assert d["layout"]["meta"]["x"] == "iteration"
    assert {t["name"] for t in d["data"]} == {"objective", "train_error", "val_score"}
    groups = d["layout"]["meta"]["groups"]
    assert groups["Score"] == ["val_score"] and groups["Error"] == ["train_error"]
    assert all(t["x"] == [1, 2, 3, 4] for t in d["data"])
    assert d["layout"]["xaxis"]["tickformat"] == "d" and d["layout"]["xaxis"]["dtick"] == 1


def test_a_familys_declared_panels_are_drawn_in_order():
    """The panels a family declares (losses, then scores, then counts) are the ones drawn."""
    X, y = load_iris(return_X_y=True)
    est = get_family("tao").make("classification", {"depth": 2, "max_iter": 3}).fit(X, y, eval_set=(X, y))
    d = training_curves(est.history_, **curve_layout("tao")).to_dict()
    groups = d["layout"]["meta"]["groups"]
    assert list(groups) == ["Objective", "Score", SIZE_PANEL]  # sizes say they precede the final pruning
    assert groups["Score"] == ["train_score", "val_score"]
    assert groups[SIZE_PANEL] == ["n_nonzero", "n_decision_nodes", "n_leaves"]
    assert d["layout"]["meta"]["x"] == "iteration"
    names = {t["name"] for t in d["data"]}
    assert not names & {"iteration", "time_s", "n_changed", "n_rejected"}


def test_the_curves_mark_the_record_a_model_keeps():
    """Latent trees restore the epoch of lowest validation loss: a dotted line marks it, and the
    active nodes drawn there are the stored tree's (the curves' last value need not be)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    est = get_family("latent").make("classification", {"depth": 3, "max_epochs": 12, "patience": 4,
                                                       "prune_strength": 3.0, "learning_rate": 0.05}).fit(X, y)
    fig = training_curves(est.history_, **curve_layout("latent"))
    kept = min(est.history_, key=lambda r: r["val_loss"])["epoch"]
    assert kept == est.best_epoch_
    lines = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert lines and {s.x0 for s in lines} == {kept}
    assert f"the stored model keeps epoch {kept} (lowest val_loss)" in fig.layout.title.subtitle.text
    at_kept = next(r for r in est.history_ if r["epoch"] == kept)["n_active_nodes"]
    assert at_kept == int(np.count_nonzero(est.to_tree().active > 0))
    assert not [s for s in training_curves(est.history_).layout.shapes if s.line.dash == "dot"]


def test_cart_history_renders():
    X, y = load_iris(return_X_y=True)
    est = CARTClassifier(max_depth=2).fit(X, y)
    d = training_curves(est.history_).to_dict()
    assert {t["name"] for t in d["data"]} >= {"train_score", "n_leaves", "depth"}


# --------------------------------------------------------------------------- labels


def test_class_indices_follow_the_estimators_class_order():
    from treeviz.plots.style import class_indices

    X, y = load_iris(return_X_y=True)
    keep = y != 1  # the estimator never sees class 1: output_names ("0", "2")
    tree = CARTClassifier(max_depth=2).fit(X[keep], y[keep]).to_tree()
    assert tree.output_names == ("0", "2")
    assert class_indices(tree, np.array([0, 2, 2])).tolist() == [0, 1, 1]
    with pytest.raises(TreevizError, match="not one of this tree's outputs"):
        class_indices(tree, y)  # label 1 is unknown to the tree
    named = Tree.from_dict({**tree.to_dict(), "output_names": ["setosa", "virginica"]})
    assert class_indices(named, np.array([1, 0])).tolist() == [1, 0]  # indices
    assert class_indices(named, np.array(["virginica", "setosa"])).tolist() == [1, 0]  # names
    with pytest.raises(TreevizError):
        class_indices(named, np.array([0, 5]))
    d = class_flow_figure(tree, X[keep], y[keep], max_levels=1).to_dict()
    assert sum(d["data"][0]["link"]["value"]) == keep.sum()
