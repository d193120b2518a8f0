"""train_run: fit, score, store; cancellation keeps the work; jobs run it in the background."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import roc_auc_score

from models.base import Callback
from models.ground.errors import TrainingCancelled, TreevizError
from treeviz.services.data.dataset import Dataset
from treeviz.services.data.preprocess import PrepConfig, prepare
from treeviz.services.experiments.training import evaluate, job_fn, model_cost, train_run
from treeviz.services.jobs.manager import JobManager
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore


def breast_cancer() -> Dataset:
    b = load_breast_cancer()
    return Dataset(name="breast_cancer", X=b.data, y=b.target, feature_names=tuple(b.feature_names),
                   task="classification", class_names=tuple(b.target_names))


def diabetes() -> Dataset:
    d = load_diabetes()
    return Dataset(name="diabetes", X=d.data, y=d.target, feature_names=tuple(d.feature_names),
                   task="regression", target_name="progression")


@pytest.fixture(scope="module")
def prepared():
    return prepare(breast_cancer(), PrepConfig(seed=1))


class Spy(Callback):
    def __init__(self, cancel: bool = False):
        self.cancel = cancel
        self.events = []

    def on_train_begin(self, estimator, total):
        self.events.append(("begin", total))

    def on_epoch_end(self, estimator, record):
        self.events.append(("epoch", dict(record)))
        if self.cancel:
            raise TrainingCancelled()

    def on_train_end(self, estimator):
        self.events.append(("end",))


def test_train_without_store_returns_estimator_and_metrics(prepared):
    spy = Spy()
    est, metrics = train_run("cart", "classification", {"max_depth": 3}, prepared, callbacks=[spy])
    assert type(est).__name__ == "CARTClassifier" and est.max_depth == 3
    assert set(metrics) == {"train_accuracy", "val_accuracy", "test_accuracy", "train_auc", "val_auc", "test_auc",
                            "n_nodes", "n_leaves", "depth",
                            "n_decision_nodes", "n_nonzero_weights", "n_params", "flops", "n_features"}
    tree = est.to_tree()
    assert metrics["n_features"] == np.unique(np.nonzero(tree.weight)[1]).size  # features some split uses
    proba = est.predict_proba(prepared.X_test)
    positive = np.asarray(prepared.labels("test")) == est.classes_[1]
    assert metrics["test_auc"] == pytest.approx(roc_auc_score(positive, proba[:, 1]))
    assert metrics["n_decision_nodes"] == tree.decision_nodes.size == metrics["n_nonzero_weights"]
    assert metrics["n_params"] == tree.n_params()
    assert metrics["flops"] == pytest.approx(tree.flops(prepared.X_train))  # one per axis-aligned split met
    expected = np.mean(est.predict(prepared.X_test) == prepared.labels("test"))
    assert metrics["test_accuracy"] == pytest.approx(expected)
    assert 0.8 < metrics["test_accuracy"] <= 1.0 and metrics["depth"] == 3
    assert [e[0] for e in spy.events] == ["begin", "epoch", "end"]
    assert "val_score" in spy.events[1][1]  # the validation split went in as eval_set
    assert set(est.classes_) == set(prepared.dataset.class_names)


def test_train_with_store_saves_a_run(prepared, tmp_path):
    store = RunStore(tmp_path)
    record = train_run("cart", "classification", {"max_depth": 2}, prepared, store=store,
                       device="cuda", name="shallow")  # CART has no device: ignored
    assert isinstance(record, RunRecord) and record.name == "shallow"
    assert record.status == "finished" and record.duration_s >= 0
    assert record.params["max_depth"] == 2 and record.depth == 2
    assert set(record.metrics) == {"train_accuracy", "val_accuracy", "test_accuracy", "train_auc", "val_auc",
                                   "test_auc", "n_decision_nodes", "n_nonzero_weights", "n_params", "flops",
                                   "n_features"}
    est = store.load_model(record.run_id)
    reloaded = store.load_prepared(record.run_id)
    assert {**evaluate(est, reloaded), **model_cost(est, reloaded.X_train)} == record.metrics


def test_regression_metrics_and_empty_validation_split(tmp_path):
    prep = prepare(diabetes(), PrepConfig(val_size=0.0, scaling="none"))
    spy = Spy()
    est, metrics = train_run("cart", "regression", {"max_depth": 3}, prep, callbacks=[spy])
    assert set(metrics) == {"train_r2", "train_rmse", "test_r2", "test_rmse",
                            "n_nodes", "n_leaves", "depth",
                            "n_decision_nodes", "n_nonzero_weights", "n_params", "flops", "n_features"}
    pred = est.predict(prep.X_test)
    rmse = np.sqrt(np.mean((pred - prep.labels("test")) ** 2))
    assert metrics["test_rmse"] == pytest.approx(rmse)
    assert "val_score" not in spy.events[1][1]


def test_a_cancelled_fit_is_still_saved(prepared, tmp_path):
    store = RunStore(tmp_path)
    record = train_run("cart", "classification", {}, prepared, store=store, callbacks=[Spy(cancel=True)])
    assert record.status == "cancelled"
    assert any("stopped at the user's request" in n for n in record.notes)
    assert store.list()[0].status == "cancelled"


@pytest.mark.parametrize("family, task, params, pattern", [
    ("nope", "classification", {}, "no model family"),
    ("cart", "regression", {}, "classification data set"),
    ("cart", "clustering", {}, "does not do clustering"),
    ("cart", "classification", {"max_depth": 0}, "at least 1"),
    ("cart", "classification", {"depth": 3}, "no parameter"),
])
def test_user_errors_are_sentences(prepared, family, task, params, pattern):
    with pytest.raises(TreevizError, match=pattern):
        train_run(family, task, params, prepared)


def test_training_as_a_background_job(prepared, tmp_path):
    store = RunStore(tmp_path)
    manager = JobManager()
    job = manager.submit(job_fn("cart", "classification", {"max_depth": 2}, prepared, store=store),
                         label="CART on breast_cancer")
    assert job.wait(60)
    assert job.status == "finished", job.message
    assert job.progress == 1.0 and len(job.records) == 1
    assert isinstance(job.result, RunRecord)
    assert RunStore(tmp_path).get(job.result.run_id).metrics == job.result.metrics


def test_failing_job_reports_the_sentence(prepared, tmp_path):
    job = JobManager().submit(job_fn("cart", "classification", {"max_depth": -1}, prepared,
                                     store=RunStore(tmp_path)), label="bad")
    assert job.wait(60)
    assert job.status == "failed" and "max_depth" in job.message
    assert RunStore(tmp_path).list() == []
