"""Figures of embeddings and of semi-supervised learning, checked on their plotly dicts."""

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from models.ground.errors import TreevizError
from treeviz.plots import (
    embedding_map,
    embedding_objective_curve,
    embedding_panels,
    label_fraction_figure,
    labelled_points_figure,
    leaf_class_bars,
)
from treeviz.plots.embedding import leaf_regions

RNG = np.random.default_rng(0)


def test_leaf_regions_are_the_convex_hulls_of_each_leafs_points():
    Z = RNG.standard_normal((60, 2))
    leaves = np.repeat([3, 5, 8], 20)
    regions = dict(leaf_regions(Z, leaves))
    assert list(regions) == [3, 5, 8]
    for leaf, poly in regions.items():
        pts = Z[leaves == leaf]
        assert np.array_equal(poly[0], poly[-1])  # closed
        hull = ConvexHull(pts)
        assert {tuple(p) for p in poly[:-1]} == {tuple(p) for p in pts[hull.vertices]}


def test_degenerate_leaves_get_a_segment_or_a_point():
    Z = np.array([[0, 0], [1, 1], [2, 2], [5, 5], [5, 5]], dtype=float)
    regions = dict(leaf_regions(Z, np.array([1, 1, 1, 2, 2])))
    assert regions[1].tolist() == [[0, 0], [2, 2]]  # collinear: the extremes
    assert regions[2].tolist() == [[5, 5]]  # a constant leaf maps all its points to one place


def test_embedding_map_colours_by_class_outlines_leaves_and_marks_test_points():
    Z = RNG.standard_normal((40, 2))
    classes = np.array(["b", "a"] * 20)
    fig = embedding_map(Z, classes=classes, leaves=np.repeat([1, 2], 20), test_Z=Z[:5], test_classes=classes[:5])
    d = fig.to_dict()
    names = [t["name"] for t in d["data"]]
    assert names == ["leaf regions", "a (train)", "b (train)", "mapped points", "a (test)", "b (test)"]
    assert [t.get("showlegend") for t in d["data"][-2:]] == [False, False]  # one legend entry for the mapped points
    assert {t["legendgroup"] for t in d["data"][-3:]} == {"mapped"}
    np.testing.assert_array_equal(fig.data[1].x, Z[classes == "a", 0])
    assert d["data"][1]["marker"]["color"] != d["data"][2]["marker"]["color"]
    assert d["data"][4]["marker"]["symbol"] == "diamond-open"
    assert d["layout"]["meta"] == {"n_train": 40, "n_test": 5, "regions": 2}
    assert [a["text"] for a in d["layout"]["annotations"]] == ["<b>1</b>", "<b>2</b>"]
    # a mapped point far away does not squeeze the view: it is counted in the subtitle
    far = embedding_map(Z, test_Z=np.array([[100.0, 100.0], [0.0, 0.0]])).to_dict()
    assert far["layout"]["xaxis"]["range"][1] < 10 and "1 mapped point(s) fall outside" in str(far["layout"]["title"])


def test_embedding_map_refuses_mismatched_inputs_with_sentences():
    with pytest.raises(TreevizError, match="2 columns"):
        embedding_map(np.zeros((5, 1)))
    with pytest.raises(TreevizError, match="class labels"):
        embedding_map(np.zeros((5, 2)), classes=["a"] * 4)
    with pytest.raises(TreevizError, match="leaf ids"):
        embedding_map(np.zeros((5, 2)), leaves=[1, 2])


def test_panels_share_class_colours_and_show_each_objective():
    Z = RNG.standard_normal((30, 2))
    classes = np.array(["x", "y", "z"] * 10)
    fig = embedding_panels([{"title": "tree", "Z": Z, "note": "KL 1.5"}, {"title": "free", "Z": Z * 2}],
                           classes=classes)
    d = fig.to_dict()
    assert d["layout"]["meta"]["panels"] == ["tree", "free"]
    assert len(d["data"]) == 6 and sum(t["showlegend"] for t in d["data"]) == 3  # one legend entry per class
    assert "KL 1.5" in d["layout"]["annotations"][0]["text"]
    first = [t["marker"]["color"] for t in d["data"][:3]]
    assert first == [t["marker"]["color"] for t in d["data"][3:]]


def test_objective_curve_draws_the_path_with_its_references():
    history = [{"step": 0, "E_tree": 2.0, "E_Z": 1.0}, {"step": 1, "E_tree": 1.6, "E_Z": 1.1},
               {"step": 2, "E_tree": 1.7, "E_Z": 1.2}]
    d = embedding_objective_curve(history, free=1.0, direct=2.0, name="KL").to_dict()
    assert d["data"][0]["y"] == [2.0, 1.6, 1.7] and d["data"][1]["y"] == [1.0, 1.1, 1.2]
    assert sorted(s["y0"] for s in d["layout"]["shapes"]) == [1.0, 2.0]
    assert "lowest 1.6 at step 1" in d["layout"]["title"]["subtitle"]["text"]
    assert "No μ steps" in embedding_objective_curve([]).to_dict()["layout"]["annotations"][0]["text"]


def test_label_fraction_figure_gives_mean_and_std_per_method_and_fraction():
    rows = [{"method": "LapTAO", "fraction": 0.05, "error": e} for e in (0.1, 0.3)]
    rows += [{"method": "LapTAO", "fraction": 0.2, "error": 0.05}, {"method": "TAO", "fraction": 0.05, "error": 0.4}]
    d = label_fraction_figure(rows).to_dict()
    lap, tao = d["data"]
    assert lap["x"] == [5.0, 20.0] and lap["y"] == pytest.approx([0.2, 0.05])
    assert lap["error_y"]["array"] == pytest.approx([0.1, 0.0])
    assert tao["x"] == [5.0] and d["layout"]["xaxis"]["type"] == "log"
    assert d["layout"]["meta"]["methods"] == ["LapTAO", "TAO"]


def test_labelled_points_are_marked_and_regions_shaded():
    X = RNG.standard_normal((50, 2))
    labelled = np.zeros(50, bool)
    labelled[[0, 1, 2]] = True
    classes = np.array(["a", "b"] * 25)
    gx, gy = np.linspace(-2, 2, 5), np.linspace(-2, 2, 4)
    grid = (np.arange(20).reshape(4, 5) % 2)
    fig = labelled_points_figure(X, classes=classes, labelled=labelled, regions=(gx, gy, grid))
    assert fig.data[0].type == "heatmap" and np.asarray(fig.data[0].z).shape == (4, 5)
    stars = [t for t in fig.data[1:] if t.marker.symbol == "star"]
    assert sum(len(t.x) for t in stars) == 3
    assert sum(len(t.x) for t in fig.data if "(unlabelled)" in (t.name or "")) == 47
    assert fig.layout.meta == {"labelled": 3, "regions": True}


def test_leaf_class_bars_stack_one_bar_per_leaf():
    fig = leaf_class_bars(np.array([[3, 1], [0, 4]]), [3, 4], ["a", "b"])
    assert fig.layout.barmode == "stack" and [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[0].x) == [3.0, 0.0] and list(fig.data[0].y) == ["leaf 3", "leaf 4"]
    with pytest.raises(TreevizError, match="one row of class counts per leaf"):
        leaf_class_bars(np.ones((3, 2)), [1, 2], ["a", "b"])


def test_the_lambda_path_of_an_embedding_shows_its_5nn_error_or_its_objective():
    from treeviz.plots import lambda_path_figure

    rows = [{"value": lam, "n_nonzero_weights": nz, "n_decision_nodes": 3, "flops": 10.0, "train_objective": e,
             "train_knn_accuracy": acc, "test_knn_accuracy": acc - 0.1}
            for lam, nz, e, acc in ((0.1, 90, 1.5, 0.95), (10.0, 20, 1.9, 0.9))]
    fig = lambda_path_figure(rows, param="l1_penalty")
    errors = [t for t in fig.data if t.legendgroup == "error"]
    assert [t.name for t in errors] == ["train error", "test error"]
    assert list(errors[1].y) == pytest.approx([15.0, 20.0])
    assert fig.layout.yaxis.title.text == "5-NN error in the plane (%)"
    no_classes = [{k: v for k, v in r.items() if "knn" not in k} for r in rows]
    fig = lambda_path_figure(no_classes, param="l1_penalty")
    assert list(next(t for t in fig.data if t.legendgroup == "error").y) == [1.5, 1.9]
    assert fig.layout.yaxis.title.text == "embedding objective E(F(X))"
