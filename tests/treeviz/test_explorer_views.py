"""The Tree explorer's new views, on their numbers: a node's split histogram (rows reaching the node,
their scores, the two sides), a sample's picture, and decision regions over two features."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models.ground.errors import TreevizError
from models.registry import get_family
from treeviz.plots import style
from treeviz.plots.regions import class_scale, regions_figure, sample_image_figure
from treeviz.plots.split_hist import split_histogram, threshold_bins
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.views.node_split import OBLIQUE_SCORE, node_split, sample_pixels
from treeviz.services.views.regions import decision_regions, default_features
from treeviz.services.views.run_view import RunView


def fitted_view(family: str, task: str, params: dict, data: str, part: str = "train", scaling: str = "standard"):
    prepared = prepare(load_dataset(data), PrepConfig(seed=0, scaling=scaling))
    model = get_family(family).make(task, params)
    model.fit(prepared.X_train, prepared.labels("train"), feature_names=list(prepared.dataset.feature_names))
    return RunView.build(model, prepared, part)


@pytest.fixture(scope="module")
def cart_iris():
    return fitted_view("cart", "classification", {"max_depth": 3}, "iris")


@pytest.fixture(scope="module")
def tao_wine():
    return fitted_view("tao", "classification", {"depth": 2, "max_iter": 3}, "wine", part="test")


def bars_by_side(fig, threshold: float) -> tuple[float, float]:
    """The bar heights of a histogram summed left and right of ``threshold``."""
    above = sum(c for t in fig.data for x, c in zip(t.x, t.y, strict=True) if x > threshold)
    below = sum(c for t in fig.data for x, c in zip(t.x, t.y, strict=True) if x <= threshold)
    return below, above


@pytest.mark.parametrize("which", ["cart_iris", "tao_wine"])
def test_split_counts_are_the_nodes_and_its_childrens(which, request):
    view = request.getfixturevalue(which)
    tree, stats = view.tree, view.stats
    for node in tree.decision_nodes:
        split = node_split(view, node)
        left, right = tree.children_left[node], tree.children_right[node]
        assert split.n_rows == stats.count[node]
        assert (split.n_left, split.n_right) == (stats.count[left], stats.count[right])
        fig = split_histogram(tree, node, split.score, split.y, threshold=split.threshold,
                              right_above=split.right_above, right=split.right, label=split.label)
        assert sum(sum(t.y) for t in fig.data) == stats.count[node]  # every reaching row is in a bar
        below, above = bars_by_side(fig, split.threshold)
        assert (above, below) == ((split.n_right, split.n_left) if split.right_above else (split.n_left, split.n_right))
        for k, trace in enumerate(sorted(fig.data, key=lambda t: t.name)):  # per class: that class's rows
            assert sum(trace.y) == stats.class_counts[node, list(tree.output_names).index(trace.name)], k
        assert f"{split.n_left} go left, {split.n_right} go right" in fig.layout.title.subtitle.text


def test_an_oblique_nodes_score_is_w_x_plus_b_around_zero(tao_wine):
    tree = tao_wine.tree
    node = int(next(n for n in tree.decision_nodes if np.count_nonzero(tree.weight[n]) > 1))
    split = node_split(tao_wine, node)
    assert split.label == OBLIQUE_SCORE and split.threshold == 0.0 and split.feature is None
    X = tao_wine.X[split.rows]
    np.testing.assert_allclose(split.score, X @ tree.weight[node] + tree.bias[node])
    assert np.array_equal(split.right, split.score > 0)


def test_an_axis_aligned_node_shows_its_feature_and_threshold_in_either_unit(cart_iris):
    view, tree = cart_iris, cart_iris.tree
    mean, scale = view.prepared.affine_scaling()
    for original in (True, False):
        split = node_split(view, 0, original_units=original)
        f = split.feature
        assert split.label == tree.feature_names[f]
        raw = view.X[split.rows, f] * scale[f] + mean[f]
        np.testing.assert_allclose(split.score, raw if original else view.X[split.rows, f])
        shown = view.rules_tree(original)
        assert split.threshold == pytest.approx(-shown.bias[0] / shown.weight[0, f])
        assert np.array_equal(split.right, split.score > split.threshold)  # the threshold parts the rows


def test_a_regression_node_draws_target_against_score():
    view = fitted_view("cart", "regression", {"max_depth": 2}, "diabetes")
    split = node_split(view, 0)
    fig = split_histogram(view.tree, 0, split.score, split.y, threshold=split.threshold,
                          right_above=split.right_above, right=split.right, label=split.label)
    points = {t.name: t for t in fig.data}
    assert len(points["went left"].x) == split.n_left and len(points["went right"].x) == split.n_right
    assert sorted(points["went right"].y) == sorted(split.y[split.right].tolist())
    assert fig.layout.yaxis.title.text == "target"


def test_a_leaf_has_no_split(cart_iris):
    leaf = int(cart_iris.tree.leaves[0])
    with pytest.raises(TreevizError, match="leaf"):
        node_split(cart_iris, leaf)


def test_bins_lie_on_one_side_of_the_threshold():
    score = np.array([-1.0, -0.2, 0.0, 1e-9, 0.3, 2.5, np.nan])
    bins, width = threshold_bins(score, 0.0)
    finite = score[np.isfinite(score)]
    assert bins.size == finite.size
    assert np.all((bins >= 0) == (finite > 0))  # 0 itself goes left, as in the tree
    assert np.all((finite > bins * width - 1e-12) & (finite <= (bins + 1) * width + 1e-12))


def test_the_sample_picture_is_the_rows_own_pixels():
    view = fitted_view("cart", "classification", {"max_depth": 2}, "digits", part="test")
    raw = view.prepared.dataset.X[view.prepared.test_idx[5]]
    pixels = sample_pixels(view, 5)
    np.testing.assert_array_equal(pixels, raw)
    fig = sample_image_figure(pixels, view.prepared.dataset.image_shape, title="test row 5")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), raw.reshape(8, 8))
    with pytest.raises(TreevizError):
        sample_pixels(view, view.n_rows)


@pytest.mark.parametrize("which", ["cart_iris", "tao_wine"])
@pytest.mark.parametrize("hold", [None, 3])
def test_region_colour_at_a_grid_point_is_the_models_prediction(which, hold, request):
    view = request.getfixturevalue(which)
    tree = view.tree
    features = default_features(view)
    regions = decision_regions(view, features, hold_row=hold, resolution=25)
    held = np.nanmedian(view.prepared.X_train, axis=0) if hold is None else view.X[hold]
    np.testing.assert_array_equal(regions.held, held)
    fig = regions_figure(regions.shown_x, regions.shown_y, regions.output, kind=regions.kind, names=regions.names,
                         points=regions.points, point_values=regions.point_values,
                         feature_names=regions.feature_names, held_label=regions.held_label)
    heat = fig.data[0]
    scale = {round(v, 9): c for v, c in heat.colorscale[::2]}
    rng = np.random.default_rng(1)
    for i, j in rng.integers(0, 25, size=(12, 2)):
        row = held.copy()
        row[features[0]], row[features[1]] = regions.grid_x[j], regions.grid_y[i]
        predicted = view.model.predict(row[None, :])[0]
        code = list(tree.output_names).index(str(predicted))
        assert heat.z[i][j] == code
        assert scale[round(code / len(regions.names), 9)] == style.class_color(code)  # the class's own colour
    assert len(set(np.asarray(regions.output).ravel())) >= 2  # the grid crosses a boundary


def test_regions_of_a_regression_are_its_predicted_values():
    view = fitted_view("cart", "regression", {"max_depth": 3}, "diabetes")
    regions = decision_regions(view, (2, 8), resolution=10)
    assert regions.kind == "value"
    np.testing.assert_allclose(regions.output.ravel(), view.model.predict(regions.rows()))
    np.testing.assert_allclose(regions.output[4, 7], view.model.predict(regions.row(4, 7)[None, :])[0])


def test_regions_axes_in_the_data_units_and_their_points(cart_iris):
    mean, scale = cart_iris.prepared.affine_scaling()
    regions = decision_regions(cart_iris, (0, 1), resolution=7)
    np.testing.assert_allclose(regions.shown_x, regions.grid_x * scale[0] + mean[0])
    train = cart_iris.prepared.dataset.X[cart_iris.prepared.train_idx]
    np.testing.assert_allclose(regions.points, train[:, :2])
    assert regions.units == "the data's own units"


def test_regions_refuse_an_embedding_and_one_feature_twice(cart_iris):
    with pytest.raises(TreevizError, match="two different features"):
        decision_regions(cart_iris, (1, 1))
    no_predict = dataclasses.replace(cart_iris, model=object())
    with pytest.raises(TreevizError, match="embedding"):
        decision_regions(no_predict, (0, 1))


def test_class_scale_steps_through_the_class_colours():
    scale = class_scale(3)
    assert [c for _, c in scale] == [style.class_color(k) for k in range(3) for _ in range(2)]
    assert [v for v, _ in scale] == [0, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1]


def test_hostile_names_stay_text():
    view = fitted_view("cart", "classification", {"max_depth": 2}, "iris")
    name = "<b>x</b> %{x} & y"
    split = node_split(view, 0)
    fig = split_histogram(view.tree, 0, split.score, split.y, threshold=split.threshold, label=name, part=name)
    regions = regions_figure(np.arange(3.0), np.arange(2.0), np.zeros((2, 3)), names=[name],
                             points=np.zeros((1, 2)), point_values=[0], feature_names=(name, name), held_label=name,
                             units=name)
    texts = [fig.layout.title.text, fig.layout.title.subtitle.text, fig.layout.xaxis.title.text,
             regions.layout.title.subtitle.text, regions.layout.xaxis.title.text, regions.data[1].name,
             regions.data[0].text[0][0]]
    for text in texts:
        assert "<b>x" not in text and "%{x}" not in text, text


def test_a_soft_trees_rows_follow_their_most_probable_path():
    view = fitted_view("skinny", "classification", dict(get_family("skinny").test_params), "wine")
    tree = view.tree
    assert tree.routing == "soft"
    paths = tree.paths(view.X)
    for node in tree.decision_nodes[:3]:
        split = node_split(view, node)
        assert split.soft
        assert set(split.rows.tolist()) == set(np.flatnonzero((paths == node).any(axis=1)).tolist())
        right = (paths[split.rows] == tree.children_right[node]).any(axis=1)
        assert np.array_equal(split.right, right) and split.n_left + split.n_right == split.n_rows
