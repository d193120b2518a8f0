"""The Skinny Trees benchmark runs end to end in --quick mode and writes every row with the fields a
paper comparison needs, and only what it measured (numbers are not asserted: they belong in the full
benchmark)."""

import json
from itertools import pairwise

import pytest

from benchmarks.common import shared_data_dir
from benchmarks.paper import skinny
from benchmarks.paper.skinny_satimage import satimage_split_study

FIELDS = {"name", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std", "protocol", "protocol_note",
          "commit", "date", "command"}


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_quick_skinny_benchmark_writes_rows_beside_the_paper(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert skinny.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "breast_cancer toy: test AUC" in out and "Table 1 N=1000: support F1" in out
    payload = json.loads((tmp_path / "skinny.json").read_text())
    rows = {r["name"]: r for r in payload["results"]["rows"]}
    assert all(FIELDS <= set(r) for r in rows.values())
    assert all(r["protocol"] in ("reduced", "skipped") and "carried_over" not in r for r in rows.values())
    assert rows["breast_cancer toy: test AUC"]["paper_mean"] == 0.9993
    assert "reduced" in rows["Table 1 N=200: test MSE"]["protocol_note"]
    speed = [r for name, r in rows.items() if name.startswith("per epoch,")]
    assert len(speed) == 2 and all(r["ours_mean"] > 0 and r["speedup_vs_plain_path"] > 0 for r in speed)
    assert all("speedup_vs_authors" not in r for r in rows.values())
    compact = next(r for name, r in rows.items() if name.startswith("compact model"))
    assert compact["identical_to_full_model"] is True and compact["dense_ms"] > 0
    assert compact["ours_std"] is None and "no spread" in compact["protocol_note"]  # one best-of time
    # every row says how long it took: each toy fit, each timing's rounds, the compact comparison
    toy = [r for name, r in rows.items() if name.startswith("breast_cancer toy:")]
    assert len(toy) >= 3 and all(len(r["fit_seconds"]) == r["n"] and min(r["fit_seconds"]) > 0 for r in toy)
    assert all(r["row_seconds"] > 0 for r in [*speed, compact])
    assert all("load average" in r["measured"] for r in [*speed, compact])  # under what load it was timed
    data = shared_data_dir()
    if data is not None and (data / "uci" / "satimage.csv.gz").is_file():
        assert rows["satimage Table 4, 25% budget: Skinny Trees"]["paper_mean"] == 98.05
        assert rows["satimage Table 4, 25% budget: XGBoost importance"]["paper_mean"] == 98.23


@pytest.mark.slow
def test_the_split_study_fits_the_chosen_setting_and_xgboost_on_each_split():
    data = shared_data_dir()
    if data is None or not (data / "uci" / "satimage.csv.gz").is_file():
        pytest.skip("satimage is not in the shared data")
    chosen = {"n_trees": 4, "depth": 2, "lambda0": 350.5, "max_epochs": 2, "batch_size": 64}
    study = satimage_split_study(chosen, split_seeds=(0, 1))
    assert [r["split_seed"] for r in study["per_split"]] == [0, 1]
    for r in study["per_split"]:
        assert 50 < r["skinny_auc_pct"] <= 100 and 50 < r["xgboost_auc_pct"] <= 100
        assert r["difference_pct"] == pytest.approx(r["skinny_auc_pct"] - r["xgboost_auc_pct"])
    assert study["difference_pct"]["min"] <= study["difference_pct"]["mean"] <= study["difference_pct"]["max"]


def _small_prepared():
    import numpy as np
    from sklearn.datasets import make_classification

    from treeviz.services.data import Dataset, PrepConfig, prepare

    X, y = make_classification(n_samples=400, n_features=12, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=0)
    dataset = Dataset(name="small", X=X, y=y, feature_names=tuple(f"x{j}" for j in range(12)),
                      task="classification", class_names=("a", "b", "c"), source="test")
    return np.asarray(X), prepare(dataset, PrepConfig(scaling="standard", test_size=0.2, val_size=0.16, seed=8))


@pytest.mark.parametrize("method", ["random forest importance", "XGBoost importance", "LightGBM importance"])
def test_toolkit_trials_draw_from_the_papers_space(method):
    import numpy as np

    from benchmarks.paper.skinny_toolkits import TOOLKIT_SPACE, toolkit_params

    rng = np.random.default_rng(3)
    trials = [toolkit_params(method, rng) for _ in range(200)]
    for key, (lo, hi) in TOOLKIT_SPACE.items():
        values = [t[key] for t in trials if key in t]
        assert all(lo <= v <= hi for v in values), key
    assert all(("learning_rate" in t) == (method != "random forest importance") for t in trials)
    assert all(("bagging_freq" in t) == (method == "LightGBM importance") for t in trials)
    thresholds = np.log10([t["threshold"] for t in trials])  # log-uniform: every decade is drawn
    assert thresholds.min() < -6 and thresholds.max() > -2


@pytest.mark.parametrize("method", ["random forest importance", "XGBoost importance", "LightGBM importance"])
def test_a_toolkit_trial_keeps_the_features_above_its_threshold_within_the_budget(method):
    from benchmarks.paper.skinny_toolkits import toolkit_trial

    _, prepared = _small_prepared()
    params = {"n_estimators": 20, "max_depth": 3, "subsample": 0.8, "learning_rate": 0.3, "bagging_freq": 1}
    loose = toolkit_trial(method, {**params, "threshold": 1e-7}, prepared, 0, budget=3)
    assert loose["n_features"] > 3 and "val_auc" not in loose  # over the budget: never chosen
    strict = toolkit_trial(method, {**params, "threshold": 0.08}, prepared, 0, budget=12)
    assert 1 <= strict["n_features"] < loose["n_features"]
    assert 0.5 < strict["val_auc"] <= 1.0 and 0.5 < strict["test_auc"] <= 1.0


def test_the_toolkit_row_chooses_the_best_validation_trial_within_the_budget():
    from benchmarks.paper.skinny_toolkits import toolkit_row

    _, prepared = _small_prepared()
    row = toolkit_row(prepared, "random forest importance", trials=40, seeds=[0, 1], quick=True)
    assert row["n_trials"] == 40 and 1 <= row["n_valid_trials"] < 40
    assert 1 <= row["search_features"] <= row["budget"] == 3
    assert len(row["values"]) == 2 and row["protocol"] == "reduced" and "reduced:" in row["protocol_note"]
    assert row["paper_mean"] == 97.62
    top = row["top_trials"]
    assert top[0]["params"] == row["chosen"] and top[0]["val_auc"] == row["search_best_val_auc"]
    assert all(a["val_auc"] >= b["val_auc"] for a, b in pairwise(top))
    assert all(1 <= t["n_features"] <= row["budget"] for t in top)


def test_the_selection_study_refits_the_best_trials_within_the_budget_and_resumes(tmp_path, monkeypatch):
    from benchmarks.paper import skinny_satimage

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    _, prepared = _small_prepared()  # 12 inputs: a 25 % budget keeps 3
    monkeypatch.setattr(skinny_satimage, "satimage", lambda: prepared)
    name = next(iter(skinny_satimage.SEARCHED))
    small = {"n_trees": 2, "depth": 2, "max_epochs": 2, "batch_size": 64, "lambda0": 100.0,
             "schedule": "dense_to_sparse"}

    def line(index, val, features, error=None):
        return {"index": index, "error": error, "params": {**small, "random_state": index},
                "metrics": {"val_auc": val, "test_auc": 0.5, "n_features": features}}

    # the best validation AUCs are over the budget (4 features) or failed; ties go to fewer features
    skinny_satimage.search_log(name).add([line(0, 0.99, 4), line(1, 0.98, 0, "diverged"), line(2, 0.90, 3),
                                            line(3, 0.95, 3), line(4, 0.95, 2), line(5, 0.80, 1)])
    study = skinny_satimage.selection_study(name, top=2, seeds=2)
    assert [c["trial"] for c in study["candidates"]] == [4, 3]
    assert study["budget"] == 3 and study["seeds"] == [0, 1]
    for c in study["candidates"]:
        assert "random_state" not in c["params"] and c["search_val_auc_pct"] == 95.0
        assert 0 <= c["within_budget"] <= 1 and 0 < c["test_auc_pct"] <= 100 and c["test_auc_se"] >= 0
    best = max(study["candidates"], key=lambda c: c["val_auc_pct"])
    assert study["chosen_by_mean_val"] == best["trial"]
    fits = skinny_satimage.search_log(name, "_selection")
    assert sorted(r["key"] for r in fits.records()) == ["3/0", "3/1", "4/0", "4/1"]
    assert skinny_satimage.selection_study(name, top=2, seeds=2) == study  # from the log, nothing refitted
    assert len(fits.records()) == 4
    # stored beside the rows with this run's stamp, which a full rerun keeps it with
    (tmp_path / "skinny.json").write_text(json.dumps({"benchmark": "skinny", "quick": False, "results": {"rows": []}}))
    skinny._store_study("satimage_selection_study", study)
    stored = json.loads((tmp_path / "skinny.json").read_text())["results"]["satimage_selection_study"]
    assert all(stored[key] for key in ("commit", "date", "command"))
    assert {k: v for k, v in stored.items() if k not in ("commit", "date", "command", "machine")} == \
        json.loads(json.dumps(study))
    assert "satimage_selection_study" in skinny.STUDIES
