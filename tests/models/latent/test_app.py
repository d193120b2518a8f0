"""Latent trees in the app: Train page, Tree explorer (a_t, pruned nodes), Pruning and Clustering pages.

The family's own app tests; the page helpers come from tests/app/conftest.py."""


import numpy as np
import pytest

from tests.app.conftest import (
    assert_clean,
    chart_specs,
    new_app,
    node_trace,
    open_page,
    texts,
    wait_for_job,
    wait_for_sweep,
)
from treeviz.readers.metrics import dendrogram_purity
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_train_a_latent_tree_from_the_train_page(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("latent").run()
    at.selectbox(key="train.preset.latent").set_value("quick").run()
    at.number_input(key="train.latent.quick.max_epochs").set_value(4).run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    assert record.family == "latent" and record.params["max_epochs"] == 4
    at.run()
    assert at.sidebar.selectbox(key="treeviz.run_id").value == record.run_id
    open_page(at, "explorer")
    assert_clean(at)
    assert any("A head on the inputs and the path through the tree predicts" in i for i in texts(at.info))
    # the rules say the head decides and how often the model agrees with each leaf, on the test rows
    rules_text = next(c.value for c in at.code if c.value.startswith("IF "))
    assert "THEN the head decides (leaf" in rules_text and "THEN class =" not in rules_text
    assert "of the" in rules_text and "test rows here]" in rules_text
    model = RunStore(home).load_model(record.run_id)
    frozen = int(np.count_nonzero(model.pruning_ == 0))
    (note,) = [c for c in texts(at.caption) if "per training batch" in c]
    assert note.startswith(f"{frozen} of {model.to_tree().n_nodes} nodes pruned")  # frozen vs per batch
    at.selectbox(key="explorer.color").set_value("active").run()
    assert_clean(at)
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    assert spec["layout"]["meta"]["color_by"] == "active"


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_explorer_hides_or_dashes_pruned_nodes(home):
    prepared = prepare(load_dataset("xor"), PrepConfig(seed=0))
    # a deep tree on 2-D data: many nodes end pruned (a_t = 0)
    record = train_run("latent", "classification", {"depth": 4, "max_epochs": 60, "prune_strength": 5.0},
                       prepared, store=RunStore(home))
    tree = RunStore(home).load_model(record.run_id).to_tree()
    pruned = np.flatnonzero(tree.active == 0)
    assert pruned.size > 0
    at = new_app().run()
    open_page(at, "explorer")
    assert_clean(at)
    at.slider(key="explorer.levels").set_value(4).run()

    def shown_nodes():
        spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
        return {int(c[0]) for c in node_trace(spec)["customdata"]}

    assert set(pruned) <= shown_nodes()
    at.radio(key="explorer.pruned").set_value("hidden").run()
    assert_clean(at)
    assert not set(pruned) & shown_nodes()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_pruning_page_runs_and_shows_a_lambda_path(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    open_page(at, "lambda_path")
    assert_clean(at)
    at.number_input(key="pruning.low.latent").set_value(0.1).run()
    at.number_input(key="pruning.high.latent").set_value(10.0).run()
    at.slider(key="pruning.count.latent").set_value(3).run()
    at.number_input(key="pruning.latent.max_epochs").set_value(3).run()
    at.button(key="pruning.start").click().run()
    wait_for_sweep(at, home, 3)
    assert_clean(at)
    runs = RunStore(home).list()
    assert sorted(r.sweep["value"] for r in runs) == [0.1, 1.0, 10.0]
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == "prune_strength")
    assert figure["layout"]["meta"]["values"] == [0.1, 1.0, 10.0]
    sweep_id = runs[0].sweep["id"]
    at.select_slider(key=f"pruning.lambda.{sweep_id}").set_value(10.0).run()
    assert_clean(at)
    labels = {m.label: m.value for m in at.metric}
    assert "Active nodes" in labels and labels["Active nodes"].endswith("/ 15")
    at.button(key="pruning.open").click().run()
    assert_clean(at)
    chosen = next(r for r in runs if r.sweep["value"] == 10.0)
    assert at.sidebar.selectbox(key="treeviz.run_id").value == chosen.run_id
    assert texts(at.title) == ["Tree explorer"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_clustering_page_shows_the_dendrogram_and_purity(home):
    prepared = prepare(load_dataset("blobs"), PrepConfig(seed=0))
    record = train_run("latent", "clustering", {"depth": 3, "max_epochs": 20, "target_features": "0"},
                       prepared, store=RunStore(home))
    at = new_app().run()
    open_page(at, "clustering")
    assert_clean(at)
    model = RunStore(home).load_model(record.run_id)
    test_X = prepared.X_test
    reference = prepared.dataset.y_labels[prepared.test_idx]
    expected = dendrogram_purity(model.to_tree(), test_X, reference, "standard")
    labels = {m.label: m.value for m in at.metric}
    assert labels["Dendrogram purity"] == f"{expected:.3f}"
    assert float(labels["DP, reference-code variant"]) > 0
    dendro = next(s for s in chart_specs(at) if "ends" in s["layout"].get("meta", {}))
    assert dendro["layout"]["meta"]["ends"], "the dendrogram has end nodes (clusters)"
    assert at.dataframe, "a table of reference classes per leaf"
    # a classification run gets an explanation instead
    train_run("cart", "classification", {"max_depth": 2}, prepare(load_dataset("iris")), store=RunStore(home))
    at = new_app().run()
    open_page(at, "clustering")
    assert any("classification run" in i for i in texts(at.info))
