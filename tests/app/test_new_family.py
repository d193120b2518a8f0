"""A family the frame has never heard of works in every page.

The stump family lives in ``tests/families/stump`` (its own package: ``family.py`` and
``estimators.py``) and is registered through ``TREEVIZ_FAMILIES`` by ``tests/conftest.py``; nothing in
``treeviz/``, ``app_pages/`` or ``models/registry.py`` names it. These tests drive it through the
app as a user would: Train, the Tree explorer, Routing, the λ path page and Runs (export and
import), with its own curves, headline metric and λ path.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, open_page, texts, wait_for_job, wait_for_sweep
from treeviz.services.store.archive import export_zip
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_stump_trains_from_the_train_page_and_shows_everywhere(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "train")
    family = at.selectbox(key="train.family")
    assert "Decision stump (test family)" in family.options
    family.set_value("stump").run()
    assert at.selectbox(key="train.preset.stump").options == ["defaults", "strict"]
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    assert record.family == "stump" and record.estimator == "StumpClassifier"
    curves = next(s for s in chart_specs(at) if "groups" in s["layout"].get("meta", {}))
    assert list(curves["layout"]["meta"]["groups"]) == ["Score", "Size"]  # the family's own panels
    at.run()
    assert any("test acc" in o for o in at.sidebar.selectbox(key="treeviz.run_id").options)
    for page in ("explorer", "routing", "runs"):
        open_page(at, page)
        assert_clean(at)
    open_page(at, "explorer")
    labels = {m.label: m.value for m in at.metric}
    assert labels["Nodes"] == "3" and "test accuracy" in labels


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_stumps_lambda_path_and_run_zip(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "lambda_path")
    at.selectbox(key="pruning.family").set_value("stump").run()
    assert at.number_input(key="pruning.low.stump").value == 0.001  # the family's own range
    at.number_input(key="pruning.high.stump").set_value(10.0).run()
    at.button(key="pruning.start").click().run()
    wait_for_sweep(at, home, 3)
    assert_clean(at)
    runs = sorted(RunStore(home).list(), key=lambda r: r.sweep["value"])
    assert [r.sweep["param"] for r in runs] == ["min_gain"] * 3
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == "min_gain")
    assert figure["layout"]["meta"]["values"] == [r.sweep["value"] for r in runs]
    at.select_slider(key=f"pruning.lambda.{runs[0].sweep['id']}").set_value(10.0).run()
    assert_clean(at)
    labels = {m.label: m.value for m in at.metric}
    assert labels["Decision nodes"] == "0"  # no split gains 10: the stump is a single leaf
    # a stump run leaves as a zip and comes back with identical predictions
    store = RunStore(home)
    archive = export_zip(store, runs[0].run_id)
    before = store.load_model(runs[0].run_id).predict_proba(store.load_prepared(runs[0].run_id).X_test)
    store.delete(runs[0].run_id)
    open_page(at, "runs")
    at.file_uploader(key="runs.import").set_value(("stump.zip", archive, "application/zip")).run()
    at.button(key="runs.import_go").click().run()
    assert_clean(at)
    assert any("Imported" in s for s in texts(at.success))
    after = store.load_model(runs[0].run_id).predict_proba(store.load_prepared(runs[0].run_id).X_test)
    assert np.array_equal(before, after)
