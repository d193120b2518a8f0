"""A clustering task starts from the clustering defaults (the paper's clustering setting), not the
classifier's: on the Train page, on the command line and through ``train_run`` without parameters,
and in the estimator itself (issue 52: the classifier's settings put 4 blobs in 2 of 8 leaves)."""

from __future__ import annotations

import json

from models.latent.estimators import LatentTreeClassifier, LatentTreeClustering
from models.registry import get_family
from tests.app.conftest import assert_clean, new_app, open_page
from tests.app.test_page_defaults import form_values
from tests.treeviz.test_cli import run
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import build_estimator
from treeviz.services.store.runs import RunStore

FAMILY = get_family("latent")
PRESET = dict(FAMILY.presets["clustering (paper)"])


def test_the_clustering_preset_is_the_clustering_tasks_defaults_and_not_the_classifiers():
    assert {k: FAMILY.defaults("clustering")[k] for k in PRESET} == PRESET
    assert {k: FAMILY.defaults("classification")[k] for k in PRESET} != PRESET
    estimator = LatentTreeClustering().get_params()
    assert {k: estimator[k] for k in PRESET} == PRESET
    assert LatentTreeClassifier().get_params()["batch_size"] != PRESET["batch_size"]


def test_train_run_without_parameters_builds_the_clustering_preset():
    prepared = prepare(load_dataset("blobs"), PrepConfig(seed=0))
    estimator = build_estimator("latent", "clustering", None, prepared)
    assert {k: estimator.get_params()[k] for k in PRESET} == PRESET


def test_the_command_line_trains_a_clustering_task_with_the_clustering_preset(home, capsys):
    code, out, err = run(capsys, "train", "-d", "blobs", "-f", "latent", "--param", "max_epochs=2", "--json")
    assert code == 0, err
    assert json.loads(out)["task"] == "clustering"
    (record,) = RunStore(home).list()
    assert {k: record.params[k] for k in PRESET} == PRESET


def test_the_train_page_starts_a_clustering_task_from_the_clustering_preset(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("blobs").run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("latent").run()
    assert_clean(at)
    shown = form_values(at, FAMILY, "clustering", "train.latent.defaults")
    assert {k: shown[k] for k in PRESET} == PRESET
    assert shown == FAMILY.defaults("clustering")
