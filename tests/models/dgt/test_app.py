"""DGT in the app: the Bandit feedback page runs DGT-Bandit, the online linear model and supervised DGT
in the background on a built-in data set and shows the curves against the loss queries. The
family's own app tests; the page helpers come from tests/app/conftest.py."""

import time

import pytest

from tests.app.conftest import WAIT_S, assert_clean, chart_specs, new_app, open_page

FORM = "bandit.dgt_bandit.{task}.defaults.{name}"


def figures(at) -> dict[str, dict]:
    """The page's bandit figures by kind (score, reward, regret; the live one is also "score")."""
    return {s["layout"]["meta"]["bandit"]: s for s in chart_specs(at) if "bandit" in s["layout"].get("meta", {})}


def wait_for_results(at, timeout: float = WAIT_S):
    """Rerun until the finished comparison's regret figure is shown (or an error is)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        if at.error or "regret" in figures(at):
            return at
        time.sleep(0.3)
    raise AssertionError("the bandit comparison did not finish in time")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_bandit_page_compares_dgt_bandit_with_the_baselines_on_iris(home):
    at = new_app().run()
    open_page(at, "bandit")
    assert_clean(at)
    assert at.selectbox(key="bandit.dataset").value == "iris"
    at.checkbox(key=FORM.format(task="classification", name="n_rounds__none")).uncheck().run()  # default: 10 passes
    at.number_input(key=FORM.format(task="classification", name="n_rounds")).set_value(600).run()
    at.number_input(key="bandit.seeds").set_value(2).run()
    at.button(key="bandit.start").click().run()
    wait_for_results(at)
    assert_clean(at)
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
    at = new_app().run()
    open_page(at, "bandit")
    at.selectbox(key="bandit.dataset").set_value("diabetes").run()
    assert_clean(at)
    at.selectbox(key=FORM.format(task="regression", name="estimator")).set_value("one_point").run()
    at.selectbox(key=FORM.format(task="regression", name="loss")).set_value("huber").run()
    at.checkbox(key=FORM.format(task="regression", name="n_rounds__none")).uncheck().run()  # default: 10 passes
    at.number_input(key=FORM.format(task="regression", name="n_rounds")).set_value(400).run()
    at.number_input(key="bandit.seeds").set_value(1).run()
    at.checkbox(key="bandit.baseline").uncheck().run()
    at.button(key="bandit.start").click().run()
    wait_for_results(at)
    assert_clean(at)
    score = figures(at)["score"]
    assert score["layout"]["meta"]["methods"] == ["DGT-Bandit"]
    assert score["layout"]["yaxis"]["title"]["text"] == "held-out RMSE"
    first = next(t for t in score["data"] if t.get("name") == "DGT-Bandit")
    assert first["x"][-1] == 400  # one-point: one query a round
    assert at.dataframe[-1].value["held-out RMSE"].iloc[0] > 10  # in the target's units


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_clustering_data_set_falls_back_to_a_built_in_one(home):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("blobs").run()
    open_page(at, "bandit")
    assert_clean(at)
    assert at.selectbox(key="bandit.dataset").value == "iris"
    assert not any("clustering" in option for option in at.selectbox(key="bandit.dataset").options)
