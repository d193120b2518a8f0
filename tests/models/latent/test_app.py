"""Latent trees in the app, what only they show: a head that decides instead of the leaves, pruned
nodes (a_t = 0) dashed or hidden, the active nodes along the λ path, and the clustering page's
dendrogram and purity.

What every family does in the app (trained from the Train page, its pages, its run zip, the λ path
page) is checked on the latent trees by tests/app/test_every_family.py; the page helpers come from
tests/app/conftest.py."""


import numpy as np
import pytest

from models.registry import get_family
from tests.app.conftest import (
    app_on,
    assert_clean,
    chart_specs,
    metric_values,
    node_trace,
    run_page,
    stored_run,
    texts,
)
from treeviz.readers.metrics import dendrogram_purity
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.store.runs import RunStore


def tree_nodes(at) -> set[int]:
    """The nodes the explorer's tree diagram draws."""
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    return {int(c[0]) for c in node_trace(spec)["customdata"]}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_explorer_says_the_head_decides_and_how_many_nodes_are_pruned(home):
    quick = {**get_family("latent").presets["quick"], "max_epochs": 4}
    record = stored_run(home, "latent", "classification", "breast_cancer", quick)
    at = run_page(record, "explorer")
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
    # a deep tree on 2-D data: many nodes end pruned (a_t = 0)
    record = stored_run(home, "latent", "classification", "xor",
                        {"depth": 4, "max_epochs": 60, "prune_strength": 5.0})
    tree = RunStore(home).load_model(record.run_id).to_tree()
    pruned = set(np.flatnonzero(tree.active == 0).tolist())
    assert pruned
    at = run_page(record, "explorer")
    at.slider(key="explorer.levels").set_value(4).run()
    assert pruned <= tree_nodes(at)  # dashed by default
    at.radio(key="explorer.pruned").set_value("hidden").run()
    assert_clean(at)
    assert not pruned & tree_nodes(at)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_lambda_path_counts_the_active_nodes_at_each_lambda(home):
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    runs = [r.record for r in run_sweep("latent", "classification", {"max_epochs": 3}, prepared, [0.1, 1.0, 10.0],
                                        store=RunStore(home))]
    at = app_on("lambda_path", "breast_cancer")
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == "prune_strength")
    assert figure["layout"]["meta"]["values"] == [0.1, 1.0, 10.0]
    at.select_slider(key=f"pruning.lambda.{runs[0].sweep['id']}").set_value(10.0).run()
    assert_clean(at)
    tree = RunStore(home).load_model(runs[-1].run_id).to_tree()
    assert tree.n_nodes == 15  # the automatic depth of a two-class tree: 3
    assert metric_values(at)["Active nodes"] == f"{int((tree.active > 0).sum())} / 15"


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_clustering_page_shows_the_dendrogram_and_purity(home):
    record = stored_run(home, "latent", "clustering", "blobs", {"depth": 3, "max_epochs": 20, "target_features": "0"})
    at = app_on("clustering")
    store = RunStore(home)
    model, prepared = store.load_model(record.run_id), store.load_prepared(record.run_id)
    reference = prepared.dataset.y_labels[prepared.test_idx]
    expected = dendrogram_purity(model.to_tree(), prepared.X_test, reference, "standard")
    cards = metric_values(at)
    assert cards["Dendrogram purity"] == f"{expected:.3f}"
    assert float(cards["DP, reference-code variant"]) > 0
    dendro = next(s for s in chart_specs(at) if "ends" in s["layout"].get("meta", {}))
    assert dendro["layout"]["meta"]["ends"], "the dendrogram has end nodes (clusters)"
    assert at.dataframe, "a table of reference classes per leaf"
