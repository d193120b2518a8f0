"""DGT in the app, what only it shows: the quick preset's complete hard tree, drawn whole; the forest
and the bandit learner through the same frame; and the Bandit feedback page, which runs DGT-Bandit,
the online linear model and supervised DGT in the background on a built-in data set and shows the
curves against the loss queries.

What every family does in the app (trained from the Train page, its pages, its run zip) is checked
on DGT, the DGT forest and DGT-Bandit by tests/app/test_every_family.py; the page helpers come from
tests/app/conftest.py."""

import time

import numpy as np
import pytest

from models.registry import get_family
from tests.app.conftest import WAIT_S, app_on, assert_clean, chart_specs, node_trace, run_page, stored_run
from treeviz.services.store.runs import RunStore

FORM = "bandit.dgt_bandit.{task}.defaults.{name}"


def figures(at) -> dict[str, dict]:
    """The page's bandit figures by kind (score, reward, regret; the live one is also "score")."""
    return {s["layout"]["meta"]["bandit"]: s for s in chart_specs(at) if "bandit" in s["layout"].get("meta", {})}


def compare(at, task: str, rounds: int, seeds: int):
    """Start the comparison with ``rounds`` rounds (not the default 10 passes) and ``seeds`` seeds, and
    rerun until the finished comparison's regret figure is shown (or an error is); nothing broken."""
    at.checkbox(key=FORM.format(task=task, name="n_rounds__none")).uncheck().run()
    at.number_input(key=FORM.format(task=task, name="n_rounds")).set_value(rounds).run()
    at.number_input(key="bandit.seeds").set_value(seeds).run()
    at.button(key="bandit.start").click().run()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        at.run()
        if at.error or "regret" in figures(at):
            assert_clean(at)
            return at
        time.sleep(0.3)
    raise AssertionError("the bandit comparison did not finish in time")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_quick_dgt_is_a_complete_hard_tree_that_the_explorer_draws_whole(home):
    record = stored_run(home, "dgt", "classification", "iris", dict(get_family("dgt").presets["quick"]))
    assert record.metrics["test_accuracy"] > 0.8
    model = RunStore(home).load_model(record.run_id)
    tree = model.to_tree()
    assert tree.routing == "hard" and tree.n_nodes == 2 ** (model.depth + 1) - 1
    at = run_page(record, "explorer")
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    assert {int(c[0]) for c in node_trace(spec)["customdata"]} == set(range(tree.n_nodes))
    assert any(c.value.startswith("IF ") for c in at.code)  # rules of the hard tree


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_forest_and_the_bandit_learner_give_trees_and_curves(home):
    forest = stored_run(home, "dgt_forest", "classification", "iris",
                        {"n_trees": 2, "depth": 2, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 20, "min_steps": 0})
    bandit = stored_run(home, "dgt_bandit", "classification", "iris",
                        {"depth": 2, "n_rounds": 2000, "learning_rate": 1e-2})
    store = RunStore(home)
    for record in (forest, bandit):
        assert store.load_model(record.run_id).to_trees() and np.isfinite(record.metrics["test_accuracy"])
    assert len(store.load_model(forest.run_id).to_trees()) == 2
    assert store.load_model(bandit.run_id).history_[-1]["queries"] == 2000


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_bandit_page_compares_dgt_bandit_with_the_baselines_on_iris(home):
    at = app_on("bandit")
    assert at.selectbox(key="bandit.dataset").value == "iris"
    compare(at, "classification", rounds=600, seeds=2)
    shown = figures(at)
    assert set(shown) == {"score", "reward", "regret"}
    score = shown["score"]
    assert score["layout"]["meta"]["methods"] == ["DGT-Bandit", "linear (bandit feedback)"]
    reference = score["layout"]["meta"]["reference"]
    assert 0.8 <= reference <= 1.0
    first = next(t for t in score["data"] if t.get("name") == "DGT-Bandit")
    assert first["x"][-1] == 600 and first["y"][0] < reference  # one query a round; supervised above the start
    table = at.dataframe[-1].value
    assert table["method"].tolist() == ["DGT-Bandit", "linear (bandit feedback)", "DGT, full supervision"]
    assert table["seeds"].tolist() == [2, 2, 2]
    assert any("Exploration rate" in c.value for c in at.caption)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_regression_offers_the_estimators_and_losses_and_reports_rmse(home):
    at = app_on("bandit")
    at.selectbox(key="bandit.dataset").set_value("diabetes").run()
    assert_clean(at)
    at.selectbox(key=FORM.format(task="regression", name="estimator")).set_value("one_point").run()
    at.selectbox(key=FORM.format(task="regression", name="loss")).set_value("huber").run()
    at.checkbox(key="bandit.baseline").uncheck().run()
    compare(at, "regression", rounds=400, seeds=1)
    score = figures(at)["score"]
    assert score["layout"]["meta"]["methods"] == ["DGT-Bandit"]
    assert score["layout"]["yaxis"]["title"]["text"] == "held-out RMSE"
    first = next(t for t in score["data"] if t.get("name") == "DGT-Bandit")
    assert first["x"][-1] == 400  # one-point: one query a round
    assert at.dataframe[-1].value["held-out RMSE"].iloc[0] > 10  # in the target's units


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_clustering_data_set_falls_back_to_a_built_in_one(home):
    at = app_on("bandit", "blobs")
    assert at.selectbox(key="bandit.dataset").value == "iris"
    assert not any("clustering" in option for option in at.selectbox(key="bandit.dataset").options)
