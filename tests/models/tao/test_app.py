"""TAO in the app: Train page, node weights (bars and images), the λ path, and the forest summary.

The family's own app tests; the page helpers come from tests/app/conftest.py."""


import numpy as np
import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, open_page, wait_for_job, wait_for_sweep
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_train_a_tao_tree_and_see_its_weights_as_images(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("digits").run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("tao").run()
    at.selectbox(key="train.preset.tao").set_value("quick").run()
    at.number_input(key="train.tao.quick.max_iter").set_value(3).run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    assert record.family == "tao" and record.params["depth"] == 3
    # the history (objective per iteration) is drawn while and after training
    curves = [s for s in chart_specs(at) if any("objective" in (t.get("name") or "") for t in s["data"])]
    assert curves
    at.run()
    open_page(at, "explorer")
    assert_clean(at)
    model = RunStore(home).load_model(record.run_id)
    tree = model.to_tree()
    labels = {m.label: m.value for m in at.metric}
    assert int(labels["Nonzero weights"]) == tree.n_nonzero_weights()
    # node 0 is a decision node: its weights as signed bars and as an 8×8 image
    bars = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("kind") == "top_weights"
                or any(t.get("type") == "bar" and t.get("orientation") == "h" for t in s["data"]))
    assert bars
    image = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("image_shape") == [8, 8])
    z = np.array(image["data"][0]["z"], dtype=float)
    # drawn in the pixels' own units (rules in the data's units is on by default): w / σ
    _mean, scale = RunStore(home).load_prepared(record.run_id).affine_scaling()
    np.testing.assert_allclose(z.reshape(-1), tree.weight[0] / scale)
    assert np.count_nonzero(z) == np.count_nonzero(tree.weight[0])  # zero weights stay exactly zero (white)
    assert image["data"][0]["zmid"] == 0.0
    assert image["data"][0]["zmin"] == -image["data"][0]["zmax"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_tao_lambda_path_on_the_pruning_page(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "lambda_path")
    at.selectbox(key="pruning.family").set_value("tao").run()
    assert_clean(at)
    assert at.checkbox(key="pruning.warm.tao").value is False  # every λ from the same initial tree
    at.number_input(key="pruning.low.tao").set_value(0.01).run()
    at.number_input(key="pruning.high.tao").set_value(100.0).run()
    at.slider(key="pruning.count.tao").set_value(3).run()
    at.button(key="pruning.start").click().run()
    wait_for_sweep(at, home, 3)
    assert_clean(at)
    runs = sorted(RunStore(home).list(), key=lambda r: r.sweep["value"])
    assert [r.sweep["value"] for r in runs] == [0.01, 1.0, 100.0]
    assert not any(r.sweep["warm_start"] for r in runs)
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == "l1_penalty")
    assert figure["layout"]["meta"]["values"] == [0.01, 1.0, 100.0]
    nnz = next(t for t in figure["data"] if t["name"] == "nonzero weights")["y"]
    assert nnz[0] > nnz[-1], "a larger λ gives fewer nonzero weights"
    at.select_slider(key=f"pruning.lambda.{runs[0].sweep['id']}").set_value(100.0).run()
    assert_clean(at)
    labels = {m.label: m.value for m in at.metric}
    tree = RunStore(home).load_model(runs[-1].run_id).to_tree()
    assert int(labels["Nonzero weights"]) == tree.n_nonzero_weights()
    assert int(labels["Decision nodes"]) == tree.decision_nodes.size


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_forest_summary_and_tree_picker_in_the_explorer(home):
    prepared = prepare(load_dataset("wine"), PrepConfig(seed=0))
    record = train_run("tao_forest", "classification", {"n_trees": 3, "depth": 2, "max_iter": 3}, prepared,
                       store=RunStore(home))
    at = new_app().run()
    open_page(at, "explorer")
    assert_clean(at)
    picker = at.selectbox(key=f"explorer.tree_index.{record.run_id}")
    assert picker.options == ["tree 0", "tree 1", "tree 2"]
    forest = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("n_trees") == 3)
    heat = next(t for t in forest["data"] if t["type"] == "heatmap")
    assert np.array(heat["z"]).shape == (3, 3)
    picker.set_value(2).run()
    assert_clean(at)
    model = RunStore(home).load_model(record.run_id)
    labels = {m.label: m.value for m in at.metric}
    assert int(labels["Nonzero weights"]) == model.to_trees()[2].n_nonzero_weights()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_tao_forest_run_exported_from_runs_is_imported_back(home):
    """A forest's family key is its own ("tao_forest"), so its run zip is accepted on import
    (it used to be refused: "describes a TAOForestClassifier but its model is a TAOForestClassifier")."""
    prepared = prepare(load_dataset("wine"), PrepConfig(seed=0))
    record = train_run("tao_forest", "classification", {"n_trees": 2, "depth": 2, "max_iter": 2}, prepared,
                       store=RunStore(home))
    before = RunStore(home).load_model(record.run_id).predict_proba(prepared.X_test)
    archive = export_zip(RunStore(home), record.run_id)
    at = new_app().run()
    open_page(at, "runs")
    at.checkbox(key=f"runs.confirm.{record.run_id}").check().run()
    at.button(key="runs.delete").click().run()
    assert RunStore(home).list() == []
    at.file_uploader(key="runs.import").set_value(("forest.zip", archive, "application/zip")).run()
    at.button(key="runs.import_go").click().run()
    assert_clean(at)
    (imported,) = RunStore(home).list()
    assert imported.family == "tao_forest" and imported.estimator == "TAOForestClassifier"
    after = RunStore(home).load_model(imported.run_id).predict_proba(prepared.X_test)
    assert np.array_equal(before, after)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_lambda_path_keeps_its_name_when_a_run_is_renamed(home):
    """The λ path page names a sweep from its stored label, not by parsing a run's display name."""
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    results = run_sweep("tao", "classification", {"depth": 2, "max_iter": 2}, prepared, [0.01, 1.0, 100.0],
                        store=RunStore(home))
    RunStore(home).rename(results[0].record.run_id, "my favourite point")
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "lambda_path")
    assert_clean(at)
    chooser = at.selectbox(key="pruning.sweep_id")
    shown = chooser.format_func(chooser.value)
    assert shown.startswith("TAO sparse oblique tree on breast_cancer · 3 points"), shown
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == "l1_penalty")
    assert figure["layout"]["meta"]["values"] == [0.01, 1.0, 100.0]
