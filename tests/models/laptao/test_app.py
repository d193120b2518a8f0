"""LapTAO in the app, what only it shows: a run with hidden labels on the Semi-supervised page
(labelled points marked, decision regions of 2-D data, accuracy on its unlabelled training points)
and its error against the labelled fraction, computed in the background beside supervised TAO and
label propagation.

What every family does in the app (trained from the Train page, its pages, its run zip, the λ path
page) is checked on LapTAO by tests/app/test_every_family.py; the page helpers come from
tests/app/conftest.py."""

import numpy as np
import pytest

from models.registry import get_family
from tests.app.conftest import (
    assert_clean,
    chart_specs,
    figure_with,
    metric_values,
    open_page,
    run_page,
    stored_run,
    texts,
    wait_for_figure,
)
from treeviz.services.store.runs import RunStore

QUICK = {"depth": 3, "n_mu": 4, "tao_iter": 3}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_run_with_hidden_labels_shows_its_labelled_points(home):
    preset = get_family("laptao").presets["quick, 10 % labelled"]
    record = stored_run(home, "laptao", "classification", "moons", dict(preset))
    assert record.params["labelled_fraction"] == 0.1
    store = RunStore(home)
    model, prepared = store.load_model(record.run_id), store.load_prepared(record.run_id)
    n = prepared.X_train.shape[0]
    n_lab = int(model.labelled_.sum())
    per_class = [int(model.labelled_[prepared.labels("train") == c].sum()) for c in prepared.dataset.class_names]
    assert n_lab == sum(round(0.1 * np.sum(prepared.labels("train") == c)) for c in prepared.dataset.class_names)
    assert min(per_class) >= 1  # stratified: every class keeps labels
    at = run_page(record, "semi_supervised")
    cards = metric_values(at)
    assert cards["Labelled training points"] == f"{n_lab} / {n}"
    hidden = ~model.labelled_
    expected = np.mean(model.predict(prepared.X_train[hidden]) == prepared.labels("train")[hidden])
    assert cards["transductive accuracy"] == f"{expected:.3f}"
    # 2-D data: the LapTAO tree's regions beside those of a tree on the labelled points alone
    data = [s for s in chart_specs(at) if "labelled" in s["layout"].get("meta", {})]
    assert [s["layout"]["meta"] for s in data] == [{"labelled": n_lab, "regions": True}] * 2
    assert "TAO on the labelled points only" in str(data[1]["layout"]["title"])
    # the tree in the explorer, with LapTAO's note
    open_page(at, "explorer")
    assert_clean(at)
    assert any("semi-supervised" in c for c in texts(at.caption))


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_error_against_the_labelled_fraction_runs_in_the_background(home):
    record = stored_run(home, "laptao", "classification", "moons", {**QUICK, "labelled_fraction": 0.05})
    at = run_page(record, "semi_supervised")
    at.multiselect(key="semi.fractions").set_value([0.05, 0.2]).run()
    at.number_input(key="semi.seeds").set_value(1).run()
    at.button(key="semi.start").click().run()
    wait_for_figure(at, "methods")
    assert_clean(at)
    curve = figure_with(at, "methods")
    assert curve["layout"]["meta"]["methods"] == ["LapTAO", "LapTAO (its unlabelled training points)",
                                                  "supervised TAO (labelled points only)",
                                                  "label propagation (scikit-learn)"]
    assert curve["data"][0]["x"] == [5.0, 20.0]
    table = at.dataframe[-1].value
    assert set(table["fraction"]) == {"5 %", "20 %"}
    assert ((table["test error (mean)"] >= 0) & (table["test error (mean)"] <= 1)).all()
