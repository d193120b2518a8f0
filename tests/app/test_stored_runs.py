"""Runs stored by an earlier layout of the code still open everywhere.

``tests/fixtures/home_7b25476`` is a run store written by main at commit 7b25476, before the
modules moved into their layer folders: one small run of each family (classification, regression,
clustering and embedding runs among them). Run folders and model files name families and
estimator classes, never module paths, so a move of the code must not orphan them. Every run must
load, give its Tree and predict, and every page must render with each run chosen in the sidebar.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from models.ground.tree import Tree
from tests.app.conftest import PAGES, assert_clean, new_app, open_page
from treeviz.services.store.runs import RunStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "home_7b25476"
FAMILIES = {"cart", "latent", "tao", "tao_forest", "laptao", "skinny", "dgt", "dgt_bandit", "tree_embedding"}


@pytest.fixture
def old_home(home):
    shutil.copytree(FIXTURE, home, dirs_exist_ok=True)
    return home


def test_every_stored_run_loads_gives_its_tree_and_predicts(old_home):
    store = RunStore(old_home)
    runs = store.list()
    assert not store.problems, store.problems
    assert {r.family for r in runs} == FAMILIES
    assert len(runs) == 10
    for record in runs:
        model = store.load_model(record.run_id)
        assert type(model).__name__ == record.estimator
        tree = model.to_tree()
        assert isinstance(tree, Tree) and tree.n_nodes >= 1
        prepared = store.load_prepared(record.run_id)
        X = prepared.X_test[:5]
        out = model.transform(X) if record.task == "embedding" else model.predict(X)
        assert len(out) == len(X)
        if record.task != "classification":  # class predictions are the data set's own labels
            assert np.all(np.isfinite(np.asarray(out, dtype=float))), record.name


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_opens_with_each_stored_run(old_home, page):
    runs = RunStore(old_home).list()
    at = open_page(new_app().run(), page)
    assert_clean(at)
    for record in runs:
        at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
        assert_clean(at)
        assert at.sidebar.selectbox(key="treeviz.run_id").value == record.run_id
