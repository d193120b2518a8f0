"""DGT in the app: trained from the Train page, its hard tree in the explorer and the routing page,
its curves on the Runs page; the forest and the bandit learner through the same frame."""

import numpy as np
import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, node_trace, open_page, wait_for_job
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_train_dgt_then_see_its_hard_tree_in_every_tree_view(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("iris").run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("dgt").run()
    at.selectbox(key="train.preset.dgt").set_value("quick").run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    assert record.family == "dgt" and record.metrics["test_accuracy"] > 0.8
    model = RunStore(home).load_model(record.run_id)
    tree = model.to_tree()
    assert tree.routing == "hard" and tree.n_nodes == 2 ** (model.depth + 1) - 1
    at.run()
    for page in ("explorer", "routing", "runs"):
        open_page(at, page)
        assert_clean(at)
        assert chart_specs(at), page
    # the explorer draws the model's own tree: one node per tree node
    open_page(at, "explorer")
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    shown = {int(c[0]) for c in node_trace(spec)["customdata"]}
    assert shown == set(range(tree.n_nodes)) or shown == set(np.flatnonzero(tree.active > 0).tolist())
    assert any(c.value.startswith("IF ") for c in at.code)  # rules of the hard tree


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_forest_and_bandit_runs_give_trees_and_curves(home):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    store = RunStore(home)
    forest = train_run("dgt_forest", "classification",
                       {"n_trees": 2, "depth": 2, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 20,
                        "min_steps": 0}, prepared, store=store)
    bandit = train_run("dgt_bandit", "classification", {"depth": 2, "n_rounds": 2000, "learning_rate": 1e-2},
                       prepared, store=store)
    for record in (forest, bandit):
        model = store.load_model(record.run_id)
        assert model.to_trees() and np.isfinite(record.metrics["test_accuracy"])
    assert len(store.load_model(forest.run_id).to_trees()) == 2
    history = store.load_model(bandit.run_id).history_
    assert history[-1]["queries"] == 2000
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(bandit.run_id).run()
    open_page(at, "runs")
    assert_clean(at)
    open_page(at, "explorer")
    assert_clean(at)
