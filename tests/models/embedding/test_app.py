"""Tree embeddings in the app, what only they show: the Embeddings page (the map with leaf regions,
the objectives, the learning curve) and the comparison with the free embedding and the direct fits,
run in the background.

What every family does in the app (trained from the Train page on a classification data set, its
pages, its run zip) is checked on the tree embedding by tests/app/test_every_family.py; the page
helpers come from tests/app/conftest.py."""

import numpy as np
import pytest

from models.registry import get_family
from tests.app.conftest import assert_clean, figure_with, metric_values, run_page, stored_run, wait_for_figure
from treeviz.services.store.runs import RunStore

QUICK = {"depth": 2, "n_mu": 3, "free_iter": 150, "z_iter": 20, "tao_iter": 3}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_tree_embedding_of_a_classification_data_set_shows_its_map(home):
    quick = dict(get_family("tree_embedding").presets["quick"])
    record = stored_run(home, "tree_embedding", "embedding", "wine", quick)
    assert 0.0 <= record.metrics["test_knn_accuracy"] <= 1.0 and "train_objective" in record.metrics
    at = run_page(record, "embeddings")
    store = RunStore(home)
    model, prepared = store.load_model(record.run_id), store.load_prepared(record.run_id)
    cards = metric_values(at)
    assert cards["t-SNE KL of F(X)"] == f"{model.objective_:.4g}"
    assert cards["free embedding Z0"] == f"{model.free_objective_:.4g}"
    the_map = figure_with(at, "regions")
    occupied = np.unique(model.apply(prepared.X_train)).size
    assert the_map["layout"]["meta"] == {"n_train": prepared.X_train.shape[0], "n_test": prepared.X_test.shape[0],
                                         "regions": occupied}
    curve = figure_with(at, "E_tree")
    assert curve["layout"]["meta"]["E_tree"] == pytest.approx([r["E_tree"] for r in model.history_])


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_the_comparison_runs_in_the_background_and_scores_every_embedding(home):
    record = stored_run(home, "tree_embedding", "embedding", "iris", {**QUICK, "perplexity": 10.0})
    at = run_page(record, "embeddings")
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
