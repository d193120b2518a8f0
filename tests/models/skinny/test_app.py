"""Skinny Trees in the app: Train → Features page (trajectory, ranking, pixel mask, importance
baselines), a feature-budget search in the background, and the soft trees in the explorer.

The family's own app tests; the page helpers come from tests/app/conftest.py."""

import time

import numpy as np
import pytest

from tests.app.conftest import WAIT_S, assert_clean, chart_specs, new_app, open_page, wait_for_job
from treeviz.readers.metrics import feature_weight_norms
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.search import stored_best
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_train_skinny_trees_then_see_the_selected_features(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("skinny").run()
    at.selectbox(key="train.preset.skinny").set_value("quick").run()
    at.number_input(key="train.skinny.quick.lambda0").set_value(600.0).run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    assert record.family == "skinny" and 0 < record.metrics["n_features"] < 30
    assert "test_auc" in record.metrics
    at.run()
    open_page(at, "features")
    assert_clean(at)
    model = RunStore(home).load_model(record.run_id)
    labels = {m.label: m.value for m in at.metric}
    assert labels["Features kept"] == f"{model.selected_features_.size} / 30"
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
    # the soft trees in the explorer
    open_page(at, "explorer")
    assert_clean(at)
    assert at.selectbox(key=f"explorer.tree_index.{record.run_id}").options[0] == "tree 0"


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_selected_pixels_of_digits_as_an_image(home):
    prepared = prepare(load_dataset("digits"), PrepConfig(seed=0))
    record = train_run("skinny", "classification", {"n_trees": 4, "depth": 2, "max_epochs": 8, "lambda0": 3000.0},
                       prepared, store=RunStore(home))
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, "features")
    assert_clean(at)
    mask = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("shape") == [8, 8])
    z = np.array(mask["data"][0]["z"], dtype=float)
    norms = feature_weight_norms(RunStore(home).load_model(record.run_id).to_trees()).reshape(8, 8)
    np.testing.assert_allclose(np.nan_to_num(z), norms)
    assert np.all(np.isnan(z[norms == 0]))  # removed pixels are blank
    assert mask["layout"]["meta"]["kept"] == record.metrics["n_features"] < 64


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_a_budget_search_runs_in_the_background_and_chooses_within_the_budget(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "features")
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
