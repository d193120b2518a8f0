"""Training never lies: a fit that diverged or ended no better than a constant predictor is stored
with a warning note (treeviz.services.experiments.training.fit_warnings), for every family; a normal fit has none."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treeviz.cli.main import main
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import WARNING, build_estimator, fit_warnings, run_warnings, train_run
from treeviz.services.store.runs import RunStore

#: Clearly divergent settings, one per family with a learning rate the probe pushed too far.
DIVERGENT = [
    ("dgt", "regression", {"depth": 3, "learning_rate": 10.0, "max_epochs": 5, "min_steps": 0}),
    ("dgt_forest", "regression", {"n_trees": 2, "depth": 3, "learning_rate": 10.0, "max_epochs": 5, "min_steps": 0,
                                  "n_jobs": 1}),
    ("dgt_bandit", "regression", {"depth": 3, "learning_rate": 10.0, "n_rounds": 2000}),
    ("skinny", "classification", {"n_trees": 4, "depth": 2, "learning_rate": 100.0, "max_epochs": 3}),
]
NORMAL = [
    ("dgt", "regression", {"depth": 3, "max_epochs": 5, "min_steps": 0}),
    ("dgt_forest", "regression", {"n_trees": 2, "depth": 3, "max_epochs": 5, "min_steps": 0, "n_jobs": 1}),
    ("dgt_bandit", "regression", {"depth": 3, "n_rounds": 2000, "learning_rate": 1e-2}),
    ("skinny", "classification", {"n_trees": 4, "depth": 2, "max_epochs": 3}),
    ("cart", "classification", {}),
]


@pytest.fixture(scope="module")
def data():
    return {"regression": prepare(load_dataset("diabetes"), PrepConfig(seed=0)),
            "classification": prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))}


@pytest.mark.parametrize(("family", "task", "params"), DIVERGENT, ids=[c[0] for c in DIVERGENT])
def test_a_divergent_fit_is_stored_with_a_warning(family, task, params, data, tmp_path):
    record = train_run(family, task, params, data[task], store=RunStore(tmp_path))
    warnings = run_warnings(record)
    assert len(warnings) == 1 and "no better than" in warnings[0], record.notes
    assert f"now {params['learning_rate']:g}" in warnings[0]  # says what to change
    assert RunStore(tmp_path).get(record.run_id).notes == record.notes  # the stored run says so too


@pytest.mark.parametrize(("family", "task", "params"), NORMAL, ids=[c[0] for c in NORMAL])
def test_a_normal_fit_has_no_warning(family, task, params, data, tmp_path):
    record = train_run(family, task, params, data[task], store=RunStore(tmp_path))
    assert record.status == "finished" and not run_warnings(record), record.notes
    assert not any(note.startswith(WARNING) for note in record.notes)


def test_a_non_finite_loss_in_the_history_is_reported(data):
    prepared = data["regression"]
    estimator, metrics = train_run("dgt", "regression", NORMAL[0][2], prepared)
    assert fit_warnings(estimator, metrics, prepared, "regression") == ()
    estimator.history_[-1]["val_loss"] = math.inf
    (warning,) = fit_warnings(estimator, metrics, prepared, "regression")
    assert warning.startswith(WARNING) and "diverged" in warning and "val_loss" in warning


def test_a_constant_classifier_is_no_better_than_the_majority_class(data):
    prepared = data["classification"]
    y = np.asarray(prepared.labels("train")).astype(str)
    values, counts = np.unique(y, return_counts=True)
    share = counts.max() / counts.sum()
    estimator = build_estimator("cart", "classification", {}, prepared)
    # as well as always predicting the majority, with an AUC of 0.5: no better than a constant
    (warning,) = fit_warnings(estimator, {"train_accuracy": share, "train_auc": 0.5}, prepared, "classification")
    assert f"'{values[np.argmax(counts)]}'" in warning and "try other settings" in warning
    # as accurate as the majority but ranking well (an imbalanced data set): not flagged
    assert fit_warnings(estimator, {"train_accuracy": share, "train_auc": 0.9}, prepared, "classification") == ()
    # below the majority's share: flagged whatever the AUC
    assert fit_warnings(estimator, {"train_accuracy": share - 0.1, "train_auc": 0.9}, prepared, "classification")


def test_the_command_line_prints_the_warning(home, capsys):
    code = main(["train", "-q", "--data", "diabetes", "--family", "dgt", "--param", "depth=3",
                     "--param", "learning_rate=10", "--param", "max_epochs=5", "--param", "min_steps=0"])
    err = capsys.readouterr().err
    assert code == 0 and f"treeviz: {WARNING} the model is no better than always predicting the mean" in err
