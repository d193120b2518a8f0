"""The Skinny Trees benchmark runs end to end in --quick mode and writes every row with the fields a
paper comparison needs (numbers are not asserted: they belong in the full benchmark)."""

import json

import pytest

from benchmarks import run
from benchmarks.common import shared_data_dir
from benchmarks.skinny import satimage_split_study

FIELDS = {"name", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std", "protocol"}


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_quick_skinny_benchmark_writes_rows_beside_the_paper(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["skinny", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "breast_cancer toy: test AUC" in out and "Table 1 N=1000: support F1" in out
    payload = json.loads((tmp_path / "skinny.json").read_text())
    rows = {r["name"]: r for r in payload["results"]["rows"]}
    assert all(FIELDS <= set(r) for r in rows.values())
    assert rows["breast_cancer toy: test AUC"]["paper_mean"] == 0.9993
    assert "reduced" in rows["Table 1 N=200: test MSE"]["protocol"]
    speed = [r for name, r in rows.items() if name.startswith("per epoch,")]
    assert len(speed) == 2 and all(r["ours_mean"] > 0 and r["speedup_vs_plain_path"] > 0 for r in speed)
    assert all("speedup_vs_authors" not in r for r in rows.values())
    compact = next(r for name, r in rows.items() if name.startswith("compact model"))
    assert compact["identical_to_full_model"] is True and compact["dense_ms"] > 0
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
