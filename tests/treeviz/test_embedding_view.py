"""The Embeddings page's comparison and the embedding task's scores, on iris."""

import functools
import sys
import threading

import numpy as np
import pytest

from models.ground.errors import TreevizError
from treeviz.readers.metrics import knn_accuracy, trustworthiness_score
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.views.embedding import compare_embeddings

QUICK = {"depth": 2, "perplexity": 10.0, "n_mu": 2, "free_iter": 150, "z_iter": 20, "tao_iter": 3}


@functools.cache
def fitted():
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    model, metrics = train_run("tree_embedding", "embedding", QUICK, prepared)
    return prepared, model, metrics


def test_the_embedding_task_scores_every_split_through_the_tree():
    prepared, model, metrics = fitted()
    Z = model.transform(prepared.X_train)
    assert metrics["train_objective"] == model.objective_
    assert metrics["train_knn_accuracy"] == knn_accuracy(Z, prepared.classes("train"))
    Zt = model.transform(prepared.X_test)
    assert metrics["test_knn_accuracy"] == knn_accuracy(Z, prepared.classes("train"), Zt, prepared.classes("test"))
    assert metrics["test_trustworthiness"] == trustworthiness_score(prepared.X_test, Zt)
    assert {"val_knn_accuracy", "val_trustworthiness", "n_leaves", "n_nonzero_weights"} <= set(metrics)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_comparison_scores_every_embedding_with_the_models_objective():
    prepared, model, _ = fitted()
    result = compare_embeddings(model, prepared, include_umap=True)
    rows = {r["method"]: r for r in result["rows"]}
    assert list(rows) == ["tree embedding F(X)", "free embedding Z0", "direct TAO fit F0(X)", "direct CART fit",
                          "UMAP"]
    assert rows["tree embedding F(X)"]["objective"] == pytest.approx(model.objective_, rel=1e-9)
    assert rows["free embedding Z0"]["objective"] == pytest.approx(model.free_objective_, rel=1e-9)
    assert rows["direct TAO fit F0(X)"]["objective"] == pytest.approx(model.direct_fit_objective_, rel=1e-9)
    # the unconstrained embedding is the lower bound of every embedding of the same points
    assert all(rows["free embedding Z0"]["objective"] <= r["objective"] + 1e-9 for r in rows.values())
    assert rows["free embedding Z0"]["knn_test"] is None and result["test"]["free embedding Z0"] is None
    assert rows["UMAP"]["thesis"] is False and result["test"]["UMAP"].shape == (prepared.X_test.shape[0], 2)
    assert rows["direct CART fit"]["nodes"] >= 1
    np.testing.assert_array_equal(result["train"]["tree embedding F(X)"], model.transform(prepared.X_train))
    assert rows["tree embedding F(X)"]["knn_test"] == pytest.approx(
        knn_accuracy(result["train"]["tree embedding F(X)"], prepared.classes("train"),
                     result["test"]["tree embedding F(X)"], prepared.classes("test")))


def test_a_model_that_is_not_an_embedding_is_refused_with_a_sentence():
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    model, _ = train_run("cart", "classification", {"max_depth": 2}, prepared)
    with pytest.raises(TreevizError, match="not a tree embedding"):
        compare_embeddings(model, prepared)


def test_the_comparison_gives_umap_a_share_of_the_progress_and_a_clock_while_it_fits(monkeypatch):
    from treeviz.services.views import embedding as view

    prepared, model, _ = fitted()
    reports: list[tuple[str, float | None, float | None]] = []
    ticked = threading.Event()

    class Handle:  # the job's progress handle, noting what the comparison reports
        cancelled = False

        def begin(self, total):
            reports.append(("begin", 0.0, total))

        def record(self, values):
            reports.append(("record", None, None))

        def advance(self, done, total=None):
            reports.append(("advance", done, total))
            if len(reports) > 1 and reports[-2][0] == "advance" and reports[-2][2] is not None:
                ticked.set()  # a report of the clock, after the one that gave UMAP its share

    def slow_umap(X_train, X_test, seed):  # a fit that reports nothing until the clock has moved
        assert ticked.wait(30)
        return X_train[:, :2], None if X_test is None else X_test[:, :2], {}

    monkeypatch.setattr(view, "_umap", slow_umap)
    monkeypatch.setattr(view, "umap_seconds", lambda n_rows: 100.0)  # a first fit: compiling
    compare_embeddings(model, prepared, include_umap=True, progress=Handle())
    share = next(r for r in reports if r[0] == "advance" and r[2] is not None)
    done_before, total = share[1], share[2]
    assert total > done_before + 1  # UMAP weighs more than one of the quick methods
    clock = [r[1] for r in reports[reports.index(share) + 1:] if r[0] == "advance"]
    assert clock == sorted(clock) and done_before < clock[0] < total  # it moved while UMAP fitted
    assert clock[-1] == total and reports[-1][0] == "record"  # and ends at the total


def test_umaps_first_fit_in_a_process_is_expected_to_compile(monkeypatch):
    from treeviz.services.views import embedding as view

    monkeypatch.delitem(sys.modules, "umap", raising=False)
    assert view.umap_seconds(1000) >= view.UMAP_FIRST_S  # not imported yet: numba compiles it first
    monkeypatch.setitem(sys.modules, "umap", object())  # as after a first fit in this process
    assert view.umap_seconds(1000) < view.UMAP_FIRST_S
