"""Compare's black-box ceiling (issue 52, item 5): HistGradientBoosting on the split the runs were trained
on, scored as the runs are, drawn as a reference line in the Pareto plot and never stored as a run."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import r2_score

from models.ground.errors import TreevizError
from treeviz.plots.compare import add_reference_line, pareto_figure
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.ceiling import LABEL, shared_split, train_ceiling


def test_the_classification_ceiling_is_hist_gradient_boosting_on_the_same_split():
    prepared = prepare(load_dataset("wine"), PrepConfig(scaling="standard", seed=3))
    ceiling = train_ceiling(prepared, "classification")
    ours = HistGradientBoostingClassifier(random_state=3).fit(prepared.X_train, prepared.labels("train"))
    expected = float(np.mean(ours.predict(prepared.X_test) == prepared.labels("test")))
    assert ceiling.metrics["test_accuracy"] == expected
    assert ceiling.seed == 3 and ceiling.prepared_fingerprint == prepared.fingerprint
    assert {"train_accuracy", "val_accuracy", "test_auc"} <= set(ceiling.metrics)


def test_the_regression_ceiling_scores_r2_as_the_runs_do():
    prepared = prepare(load_dataset("diabetes"), PrepConfig(seed=0))
    ceiling = train_ceiling(prepared, "regression")
    ours = HistGradientBoostingRegressor(random_state=0).fit(prepared.X_train, prepared.labels("train"))
    assert ceiling.metrics["test_r2"] == pytest.approx(r2_score(prepared.labels("test"), ours.predict(prepared.X_test)))


def test_no_ceiling_for_a_clustering():
    prepared = prepare(load_dataset("iris"), PrepConfig())
    with pytest.raises(TreevizError, match="classification and regression"):
        train_ceiling(prepared, "clustering")


def test_the_split_most_runs_share_is_the_ceilings_and_nothing_is_stored(tmp_path):
    store = RunStore(tmp_path)
    iris = load_dataset("iris")
    first, second = prepare(iris, PrepConfig(seed=0)), prepare(iris, PrepConfig(seed=1))
    for prepared, depth in ((first, 2), (second, 2), (second, 3)):
        train_run("cart", "classification", {"max_depth": depth}, prepared, store=store)
    runs = store.list()
    assert shared_split(runs) == (second.fingerprint, 2)
    train_ceiling(store.load_prepared(runs[0].run_id), "classification")
    assert len(store.list()) == 3  # a reference, never a run


def test_the_pareto_figure_gets_a_dashed_reference_line():
    points = [{"size": 3, "score": 0.8, "family": "CART", "name": "a", "front": True},
              {"size": 30, "score": 0.9, "family": "TAO", "name": "b", "front": True}]
    fig = pareto_figure(points, size_label="decision nodes", score_label="test accuracy")
    marked = add_reference_line(fig, 0.97, LABEL)
    [line] = [s for s in marked.layout.shapes if s.name == "reference"]
    assert line.y0 == line.y1 == 0.97 and line.line.dash == "dash" and line.xref == "x domain"
    assert marked.layout.meta["reference"] == {"label": LABEL, "score": 0.97}
    assert marked.layout.meta["front"] == ["a", "b"]  # the runs' meta kept
    assert any(LABEL in a.text for a in marked.layout.annotations)
    assert len(marked.data) == len(pareto_figure(points, size_label="decision nodes",
                                                 score_label="test accuracy").data)  # no point, no trace
