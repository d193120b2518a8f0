"""The explorer's node and leaf browser (issue 52, item 5): the rows of a split that reach a node, their
values in the data's own columns, the model's predictions and the misclassified ones marked, and the
thumbnails of an image table's rows."""

from __future__ import annotations

import numpy as np
import pytest

from models.ground.errors import TreevizError
from treeviz.plots.row_images import WRONG_COLOR, row_images_figure
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import build_estimator, fit_estimator
from treeviz.services.views.node_browser import ERROR, PREDICTED, ROW, TRUE, WRONG, node_rows
from treeviz.services.views.run_view import RunView


def fitted_view(key: str, part: str, **params) -> RunView:
    prepared = prepare(load_dataset(key), PrepConfig(scaling="standard", seed=0))
    task = prepared.dataset.task
    model = build_estimator("cart", task, {"random_state": 0, **params}, prepared)
    fit_estimator(model, task, prepared)
    return RunView.build(model, prepared, part)


@pytest.fixture(scope="module")
def digits_view() -> RunView:
    return fitted_view("digits", "train", max_depth=3)


def test_every_node_lists_as_many_rows_as_its_sample_count(digits_view):
    view = digits_view
    leaves_seen = 0
    for node in range(view.tree.n_nodes):
        rows = node_rows(view, node)
        assert rows.n_rows == view.stats.count[node]
        leaves_seen += rows.n_rows if view.tree.is_leaf[node] else 0
    assert leaves_seen == view.n_rows  # each row reaches exactly one leaf


def test_misclassified_marks_are_the_models_wrong_predictions(digits_view):
    view = digits_view
    leaf = int(view.tree.leaves[np.argmax(view.stats.count[view.tree.leaves])])
    rows = node_rows(view, leaf)
    predicted = np.asarray(view.model.predict(view.X[rows.positions])).astype(str)
    truth = np.asarray(view.labels)[rows.positions].astype(str)
    assert rows.wrong.tolist() == (predicted != truth).tolist()
    assert 0 < rows.n_wrong < rows.n_rows  # the test is about something: a depth-3 tree errs on digits
    table = rows.table()
    assert len(table) == rows.n_rows
    assert table[WRONG].tolist() == (table[PREDICTED] != table[TRUE]).tolist()
    # the data's own units: the raw pixels (0..16), not the scaled features, at the data set's rows
    raw = view.prepared.dataset.X[table[ROW].to_numpy()]
    assert np.array_equal(table[list(view.prepared.dataset.feature_names)].to_numpy(), raw)
    assert set(np.unique(raw)) <= set(range(17))
    head = rows.table(5)  # what the page shows of a large node: the first rows, the same lines
    assert head.equals(table.head(5))
    wrong = rows.only_wrong()
    assert wrong.n_rows == rows.n_wrong and wrong.wrong.all()


def test_regression_rows_carry_their_error():
    view = fitted_view("diabetes", "test", max_depth=2)
    rows = node_rows(view, 1)
    assert rows.wrong is None and rows.n_rows == view.stats.count[1]
    predicted = np.asarray(view.model.predict(view.X[rows.positions]), dtype=float)
    assert np.allclose(rows.error, predicted - np.asarray(view.labels, dtype=float)[rows.positions])
    assert ERROR in rows.table().columns


def test_a_node_outside_the_tree_is_refused(digits_view):
    with pytest.raises(TreevizError, match="not in this tree"):
        node_rows(digits_view, digits_view.tree.n_nodes)


def test_the_thumbnails_frame_the_misclassified_rows(digits_view):
    rows = node_rows(digits_view, 0)
    fig = row_images_figure(rows.values, rows.image_shape, rows.labels(), rows.wrong, rows=rows.data_rows,
                            max_images=24, total=rows.n_rows)
    meta = fig.layout.meta
    assert meta["rows"] == rows.data_rows[:24].tolist() and meta["wrong"] == rows.wrong[:24].tolist()
    assert meta["total"] == rows.n_rows and meta["image_shape"] == [8, 8]
    frames = [s for s in fig.layout.shapes if s.line.color == WRONG_COLOR]
    assert len(frames) == int(rows.wrong[:24].sum()) > 0
    assert len(fig.data) == 1  # one heatmap, however many thumbnails
    z = np.array(fig.data[0].z, dtype=float)
    assert np.nansum(z) == pytest.approx(rows.values[:24].sum())  # every shown pixel once, in its own units
