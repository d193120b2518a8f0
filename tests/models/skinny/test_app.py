"""Skinny Trees in the app, what only they show: the Features page (trajectory, ranking, pixel mask,
importance baselines) and a feature-budget search in the background.

What every family does in the app (trained from the Train page, its pages, its run zip, the λ path
page, an ensemble's tree picker) is checked on Skinny Trees by tests/app/test_every_family.py; the
page helpers come from tests/app/conftest.py."""

import time

import numpy as np
import pytest

from models.registry import get_family
from tests.app.conftest import WAIT_S, app_on, assert_clean, chart_specs, metric_values, run_page, stored_run
from treeviz.readers.metrics import feature_weight_norms
from treeviz.services.experiments.search import stored_best
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_train_skinny_trees_then_see_the_selected_features(home):
    quick = {**get_family("skinny").presets["quick"], "lambda0": 600.0}
    record = stored_run(home, "skinny", "classification", "breast_cancer", quick)
    assert 0 < record.metrics["n_features"] < 30
    assert "test_auc" in record.metrics
    at = run_page(record, "features")
    model = RunStore(home).load_model(record.run_id)
    assert metric_values(at)["Features kept"] == f"{model.selected_features_.size} / 30"
    specs = chart_specs(at)
    trajectory = next(s for s in specs if "count" in s["layout"].get("meta", {}))
    assert trajectory["layout"]["meta"]["count"] == [r["n_features"] for r in model.history_]
    assert any(t.get("name") == "λ0 / p (dense-to-sparse ramp)" for t in trajectory["data"])
    ranking = next(s for s in specs if "order" in s["layout"].get("meta", {}))
    assert ranking["layout"]["meta"]["kept"] == model.selected_features_.size
    top = ranking["layout"]["meta"]["order"][0]
    assert top == int(np.argmax(model.feature_norms_))  # the strongest group first
    # the same budget by random-forest and gradient-boosting importance
    at.button(key="features.compare").click().run()
    assert_clean(at)
    comparison = next(s for s in chart_specs(at) if s["layout"].get("barmode") == "group")
    assert [t["name"].split(" (")[0] for t in comparison["data"]] == [
        "Skinny Trees", "random forest importance", "gradient boosting importance"]
    k = model.selected_features_.size
    assert [t["name"].rsplit(" ", 1)[1] for t in comparison["data"]] == [f"({k})"] * 3  # all at the same budget


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_selected_pixels_of_digits_as_an_image(home):
    record = stored_run(home, "skinny", "classification", "digits",
                        {"n_trees": 4, "depth": 2, "max_epochs": 8, "lambda0": 3000.0})
    at = run_page(record, "features")
    mask = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("shape") == [8, 8])
    z = np.array(mask["data"][0]["z"], dtype=float)
    norms = feature_weight_norms(RunStore(home).load_model(record.run_id).to_trees()).reshape(8, 8)
    np.testing.assert_allclose(np.nan_to_num(z), norms)
    assert np.all(np.isnan(z[norms == 0]))  # removed pixels are blank
    assert mask["layout"]["meta"]["kept"] == record.metrics["n_features"] < 64


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_a_budget_search_runs_in_the_background_and_chooses_within_the_budget(home):
    at = app_on("features", "breast_cancer")
    at.selectbox(key="features.family").set_value("skinny").run()
    at.number_input(key="features.fraction").set_value(0.25).run()
    at.number_input(key="features.trials.skinny").set_value(4).run()
    at.checkbox(key="features.skinny.max_epochs__none").uncheck().run()  # from "auto" to a count
    at.number_input(key="features.skinny.max_epochs").set_value(20).run()
    assert not any(n.key == "features.skinny.n_trees" for n in at.number_input)  # drawn per trial, not set
    at.button(key="features.start").click().run()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not any(": finished" in (p.proto.text or "") for p in at.get("progress")):
        time.sleep(0.5)
        at.run()
    at.run()
    assert_clean(at)
    runs = RunStore(home).list()
    # 4 random trials, then 2 that lower the best one's λ0 (when one is within the budget)
    assert len(runs) in (4, 6) and {r.sweep["kind"] for r in runs} == {"budget_search"}
    assert {r.sweep["budget"] for r in runs} == {7}  # ⌊0.25 × 30⌋
    figure = next(s for s in chart_specs(at) if "budget" in s["layout"].get("meta", {}))
    assert figure["layout"]["meta"]["budget"] == 7 and figure["layout"]["meta"]["n_trials"] == len(runs)
    best = stored_best(runs)
    if best is not None:
        assert 0 < best.metrics["n_features"] <= 7
        assert figure["layout"]["meta"]["chosen"] == best.sweep["index"]
        assert any("Chosen: trial" in s.value for s in at.success)
        at.button(key="features.open_best").click().run()
        assert at.sidebar.selectbox(key="treeviz.run_id").value == best.run_id
