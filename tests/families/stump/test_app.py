"""The stump in the app, what only it shows: at a λ no split gains, the stump is a single leaf.

The stump is the test-only family registered from outside the repository (``tests/conftest.py``);
the app contract it meets like every family is ``tests/app/test_every_family.py``."""

import pytest

from tests.app.conftest import app_on, assert_clean, metric_values
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_lambda_that_no_split_gains_leaves_a_single_leaf(home):
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    (first, *_) = run_sweep("stump", "classification", {}, prepared, [0.001, 0.1, 10.0], store=RunStore(home))
    at = app_on("lambda_path")
    slider = at.select_slider(key=f"pruning.lambda.{first.record.sweep['id']}")
    for value, decision_nodes in ((0.001, "1"), (10.0, "0")):  # no split gains 10
        slider.set_value(value).run()
        assert_clean(at)
        assert metric_values(at)["Decision nodes"] == decision_nodes
