"""The explorer offers every hard tree as rules, a Python function and a SQL CASE; a soft tree says why not."""

import pytest

from tests.app.conftest import assert_clean, new_app, open_page, texts
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


def explorer_for(home, family, task, data, params):
    record = train_run(family, task, params, prepare(load_dataset(data), PrepConfig(seed=0)), store=RunStore(home))
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, "explorer")
    assert_clean(at)
    return at


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_hard_tree_downloads_as_rules_python_and_sql(home):
    at = explorer_for(home, "cart", "classification", "iris", {"max_depth": 2})
    keys = {b.key for b in at.get("download_button")}
    assert {"explorer.rules_download", "explorer.python_download", "explorer.sql_download"} <= keys
    assert any("the data's own units" in c.value for c in at.caption)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_latent_tree_exports_its_leaves(home):
    at = explorer_for(home, "latent", "classification", "iris", {"depth": 2, "max_epochs": 3})
    assert "explorer.python_download" in {b.key for b in at.get("download_button")}
    assert any("the code gives each row's leaf" in c for c in texts(at.caption))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_soft_tree_says_why_it_has_no_code(home):
    at = explorer_for(home, "skinny", "classification", "iris", {"n_trees": 2, "depth": 2, "max_epochs": 3})
    assert "explorer.python_download" not in {b.key for b in at.get("download_button")}
    assert any("has no if-then code" in c for c in texts(at.caption))
