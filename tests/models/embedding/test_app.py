"""Tree embeddings in the app: trained from the Train page on a classification data set, shown on the
Embeddings page (map with leaf regions, tree, learning curve) and compared in the background with
the free embedding, the direct fits and UMAP. The family's own app tests; the page helpers come
from tests/app/conftest.py."""

import numpy as np
import pytest

from tests.app.conftest import (
    assert_clean,
    figure_with,
    new_app,
    open_page,
    wait_for_figure,
    wait_for_job,
)
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore

QUICK = {"depth": 2, "n_mu": 3, "free_iter": 150, "z_iter": 20, "tao_iter": 3}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_train_a_tree_embedding_from_the_train_page_and_see_its_map(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("wine").run()
    open_page(at, "train")
    family = at.selectbox(key="train.family")
    assert "Tree embedding (t-SNE / EE) · embedding" in family.options  # offered on a classification data set
    family.set_value("tree_embedding").run()
    at.selectbox(key="train.preset.tree_embedding").set_value("quick").run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    assert record.task == "embedding" and record.family == "tree_embedding"
    assert 0.0 <= record.metrics["test_knn_accuracy"] <= 1.0 and "train_objective" in record.metrics
    at.run()
    open_page(at, "embeddings")
    assert_clean(at)
    model = RunStore(home).load_model(record.run_id)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["t-SNE KL of F(X)"] == f"{model.objective_:.4g}"
    assert metrics["free embedding Z0"] == f"{model.free_objective_:.4g}"
    prepared = RunStore(home).load_prepared(record.run_id)
    the_map = figure_with(at, "regions")
    occupied = np.unique(model.apply(prepared.X_train)).size
    assert the_map["layout"]["meta"] == {"n_train": prepared.X_train.shape[0], "n_test": prepared.X_test.shape[0],
                                         "regions": occupied}
    curve = figure_with(at, "E_tree")
    assert curve["layout"]["meta"]["E_tree"] == pytest.approx([r["E_tree"] for r in model.history_])
    # the explorer and the runs page take the embedding run as any other
    open_page(at, "explorer")
    assert_clean(at)
    open_page(at, "runs")
    assert_clean(at)


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_the_comparison_runs_in_the_background_and_scores_every_embedding(home):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("tree_embedding", "embedding", {**QUICK, "perplexity": 10.0}, prepared, store=RunStore(home))
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, "embeddings")
    assert_clean(at)
    at.checkbox(key="embeddings.umap").uncheck().run()  # UMAP's numba start-up is covered by test_embedding_view
    at.button(key="embeddings.compare").click().run()
    wait_for_figure(at, "panels")
    assert_clean(at)
    panels = figure_with(at, "panels")
    assert panels["layout"]["meta"]["panels"] == ["tree embedding F(X)", "free embedding Z0", "direct TAO fit F0(X)",
                                                  "direct CART fit"]
    table = at.dataframe[-1].value
    model = RunStore(home).load_model(record.run_id)
    objective = table.set_index("method")["t-SNE KL (train)"]
    assert objective["tree embedding F(X)"] == pytest.approx(model.objective_, rel=1e-9)
    assert objective["free embedding Z0"] == pytest.approx(model.free_objective_, rel=1e-9)
    assert objective["direct TAO fit F0(X)"] == pytest.approx(model.direct_fit_objective_, rel=1e-9)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_classification_run_gets_a_sentence_not_a_map(home):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 2}, prepared, store=RunStore(home))
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, "embeddings")
    assert_clean(at)
    assert any("This is a classification run" in i.value for i in at.info)
