"""Learning from bandit feedback, compared (the Bandit page's background job): DGT-Bandit, the online
linear model under the same protocol, and supervised DGT as reference and regret comparator."""

import time

import numpy as np
import pytest

from models.ground.errors import TreevizError
from models.registry import get_family
from treeviz.plots import bandit_regret_figure, bandit_reward_figure, bandit_score_figure
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.jobs.manager import JobManager
from treeviz.services.views.bandit import (
    BanditCurveJob,
    bandit_curves,
    curve_bands,
    curve_keys,
    final_table,
    reference_band,
)

#: What DGT-Bandit declares its bandit view compares with: the baseline and the reference's labels.
COMPARISON = get_family("dgt_bandit").comparison("bandit")
(LINEAR,) = COMPARISON.baselines
SUPERVISED = COMPARISON.reference_label
QUICK = {"n_rounds": 1000, "eval_every": 50, "learning_rate": 1e-2}
SUPERVISED_QUICK = {"max_epochs": 30, "min_steps": 300}
#: The most a wait for a job's state lasts, in seconds (it needs seconds on a quiet machine).
WAIT_S = 600


@pytest.fixture(scope="module")
def iris():
    return prepare(load_dataset("iris"), PrepConfig(seed=0))


@pytest.fixture(scope="module")
def iris_rows(iris):
    return bandit_curves("dgt_bandit", "classification", QUICK, iris, seeds=(0, 1),
                         supervised_params=SUPERVISED_QUICK, device="cpu")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_rows_per_method_and_seed_on_one_grid_of_queries(iris_rows):
    curves = [r for r in iris_rows if "queries" in r]
    refs = [r for r in iris_rows if "reference" in r]
    assert [(r["method"], r["seed"]) for r in refs] == [(SUPERVISED, 0), (SUPERVISED, 1)]
    for method in ("DGT-Bandit", LINEAR):
        for seed in (0, 1):
            mine = [r for r in curves if r["method"] == method and r["seed"] == seed]
            assert [r["round"] for r in mine] == list(range(50, 1001, 50))
            assert [r["queries"] for r in mine] == [r["round"] for r in mine]  # one query a round
            assert all(0.0 <= r["val_score"] <= 1.0 and r["avg_reward"] == pytest.approx(1 - r["avg_loss"])
                       for r in mine)
            assert all("regret" in r and "elapsed_s" not in r for r in mine)
    bands = curve_bands(iris_rows, "val_score")
    assert [b["method"] for b in bands] == ["DGT-Bandit", LINEAR]
    for band in bands:
        assert band["queries"] == list(range(50, 1001, 50)) and band["n"] == [2] * 20
        assert all(lo <= m <= hi for lo, m, hi in zip(band["low"], band["mean"], band["high"]))


def test_the_supervised_tree_is_above_the_bandit_start_and_the_bandit_learns(iris_rows):
    ref = reference_band(iris_rows)
    assert ref["n"] == 2 and ref["mean"] >= 0.9
    (tree, _) = curve_bands(iris_rows, "val_score")
    assert ref["mean"] > tree["mean"][0]
    assert np.mean(tree["mean"][-5:]) > tree["mean"][0]
    # the regret is against the supervised tree's own losses on the same rounds: it falls as the tree learns
    (regret, _) = curve_bands(iris_rows, "regret")
    assert regret["mean"][-1] < regret["mean"][0]


def test_the_final_table_and_the_figures(iris_rows):
    table = final_table(iris_rows, "classification")
    assert [r["method"] for r in table] == ["DGT-Bandit", LINEAR, SUPERVISED]
    assert table[0]["loss queries"] == 1000 and table[0]["seeds"] == 2 and table[2]["loss queries"] is None
    assert table[2]["held-out accuracy"] == pytest.approx(reference_band(iris_rows)["mean"])
    keys = curve_keys("classification")
    score = bandit_score_figure(curve_bands(iris_rows, keys["score"]), task="classification",
                                reference=reference_band(iris_rows)).to_dict()
    assert score["layout"]["meta"]["bandit"] == "score"
    assert score["layout"]["meta"]["methods"] == ["DGT-Bandit", LINEAR]
    names = [t.get("name") for t in score["data"] if t.get("showlegend") is not False]
    assert names[:2] == ["DGT-Bandit", LINEAR] and names[2].startswith(SUPERVISED)
    bands = [t for t in score["data"] if t.get("fill") == "toself"]
    assert len(bands) >= 2  # two seeds: confidence bands drawn
    reward = bandit_reward_figure(curve_bands(iris_rows, keys["reward"]), task="classification").to_dict()
    assert reward["layout"]["meta"]["bandit"] == "reward"
    regret = bandit_regret_figure(curve_bands(iris_rows, keys["regret"])).to_dict()
    assert regret["layout"]["meta"]["reference"] is None
    assert "No rounds" in str(bandit_score_figure([], task="classification").to_dict()["layout"]["annotations"])


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_same_seeds_give_the_same_rows(iris, iris_rows):
    again = bandit_curves("dgt_bandit", "classification", QUICK, iris, seeds=(0, 1),
                          supervised_params=SUPERVISED_QUICK, device="cpu")
    assert again == iris_rows


def test_regression_counts_two_queries_a_round_for_the_two_point_estimator():
    prepared = prepare(load_dataset("diabetes"), PrepConfig(seed=0))
    params = {**QUICK, "n_rounds": 400, "eval_every": 100}
    rows = bandit_curves("dgt_bandit", "regression", {**params, "estimator": "two_point"}, prepared, seeds=(0,),
                         baseline=False, supervised_params=SUPERVISED_QUICK, device="cpu")
    curves = [r for r in rows if "queries" in r]
    assert {r["method"] for r in curves} == {"DGT-Bandit"}
    assert [r["queries"] for r in curves] == [200, 400, 600, 800]
    assert all(r["val_rmse"] > 10 and "avg_reward" not in r for r in curves)  # RMSE in the target's units
    assert reference_band(rows)["mean"] > 10
    one = bandit_curves("dgt_bandit", "regression", {**params, "estimator": "one_point", "loss": "huber"}, prepared,
                        seeds=(0,), supervised_params=SUPERVISED_QUICK, device="cpu")
    assert [r["queries"] for r in one if r["method"] == LINEAR] == [100, 200, 300, 400]
    table = final_table(one, "regression")
    assert "held-out RMSE" in table[0] and "average loss played" in table[0]


def test_cancel_stops_the_job_and_keeps_the_rounds_played(iris):
    """Cancelled once DGT-Bandit has recorded rounds, the job stops part way (fewer than its 400 000
    rounds) and keeps the rounds played; the baseline and the second seed never run. The waits are
    for those states, with a limit far above what they need (no time is asserted)."""
    manager = JobManager(max_workers=1)
    job = manager.submit(BanditCurveJob("dgt_bandit", "classification",
                                        {"n_rounds": 400_000, "eval_every": 100, "learning_rate": 1e-2}, iris,
                                        seeds=(0, 1), supervised_params=SUPERVISED_QUICK, device="cpu"),
                         label="bandit")
    try:
        deadline = time.monotonic() + WAIT_S
        while not (any(r.get("method") == "DGT-Bandit" for r in job.records) or job.done):
            assert time.monotonic() < deadline, "DGT-Bandit recorded no rounds"
            job.wait(0.05)
        assert manager.cancel(job.id), "the job ended before the cancel"
        assert job.wait(WAIT_S), "the job did not stop after its cancel"
        snap = job.snapshot()
        assert snap.status == "cancelled"
        rows = snap.result
        played = [r for r in rows if r.get("method") == "DGT-Bandit"]
        assert played and played[-1]["round"] < 400_000
        assert not any(r.get("method") == LINEAR or r.get("seed") == 1 for r in rows)
    finally:
        manager.shutdown()


def test_bad_requests_get_sentences(iris):
    with pytest.raises(TreevizError, match="does not learn from bandit feedback"):
        bandit_curves("dgt", "classification", {}, iris)
    with pytest.raises(TreevizError, match="classification or regression"):
        bandit_curves("dgt_bandit", "clustering", {}, prepare(load_dataset("blobs")))
    with pytest.raises(TreevizError, match="at least one seed"):
        bandit_curves("dgt_bandit", "classification", QUICK, iris, seeds=())
    no_test = prepare(load_dataset("iris"), PrepConfig(test_size=0.0, val_size=0.0))
    with pytest.raises(TreevizError, match="no test or validation points"):
        bandit_curves("dgt_bandit", "classification", QUICK, no_test)
