"""The DGT benchmark runs end to end in --quick mode, writes rows with the required fields and
merges the rows of parts run separately (numbers are not asserted: accuracy against the paper
belongs in the full benchmark)."""

import json
import os

import numpy as np
import pytest
import torch

from benchmarks import dgt as dgt_benchmark
from benchmarks import run
from benchmarks.common import shared_data_dir
from benchmarks.dgt import two_point_in_batches

ROW_FIELDS = {"name", "part", "dataset", "method", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std",
              "n_runs", "n_splits", "n_seeds", "protocol", "within_one_std_or_better", "machine", "run_at"}
PROTOCOL_FIELDS = {"depth", "n_layers", "l1_penalty", "momentum", "epochs", "batch_size", "device", "tuning",
                   "paper_source", "summary", "reduced"}
NEEDED = tuple(f"dgt/{folder}/{stem}0.npz" for folder, stem in (("abalone", "abalone"), ("cpuactiv", "cpu_act")))


def _require_shared_data():
    root = shared_data_dir()
    if root is None:
        pytest.skip("shared reference data folder absent (../shared/data or TREEVIZ_SHARED_DATA): "
                    "the DGT benchmark needs the Abalone and cpu_act splits")
    missing = [p for p in NEEDED if not (root / p).is_file()]
    if missing:
        pytest.skip(f"shared reference data incomplete at {root}: missing {', '.join(missing)}")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_dgt_benchmark_parts_write_rows_and_merge(tmp_path, monkeypatch, capsys):
    _require_shared_data()
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setenv("TREEVIZ_DGT_PARTS", "table1")
    assert run.main(["dgt", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "abalone DGT" in out and "cpu_act CART" in out and "paper" in out
    payload = json.loads((tmp_path / "dgt.json").read_text())
    assert payload["benchmark"] == "dgt" and payload["quick"] is True
    rows = payload["results"]["rows"]
    assert {(r["dataset"], r["method"]) for r in rows} == {("abalone", "DGT"), ("abalone", "CART"),
                                                            ("cpu_act", "DGT"), ("cpu_act", "CART")}
    for r in rows:
        assert ROW_FIELDS <= set(r), r["name"]
        assert r["part"] == "table1" and r["metric"] == "rmse"
        assert r["ours_mean"] > 0 and r["ours_std"] >= 0 and r["paper_mean"] > 0 and r["paper_std"] > 0
        assert r["n_runs"] == r["n_splits"] == r["n_seeds"] == 1
        assert isinstance(r["within_one_std_or_better"], bool)
        assert "reduced" in r["protocol"]["summary"] and "quick" in r["protocol"]["reduced"]
        if r["method"] == "DGT":
            assert PROTOCOL_FIELDS <= set(r["protocol"]), r["name"]
            assert r["protocol"]["depth"] == 6 and r["protocol"]["n_layers"] == 3
            assert r["epoch_s_mean"] > 0

    # a second run of another part keeps the first run's rows
    monkeypatch.setenv("TREEVIZ_DGT_PARTS", "speed")
    assert run.main(["dgt", "--quick"]) == 0
    assert "s/epoch" in capsys.readouterr().out
    payload = json.loads((tmp_path / "dgt.json").read_text())
    rows = payload["results"]["rows"]
    assert {r["part"] for r in rows} == {"table1", "speed"} and len(payload["results"]["runs"]) == 2
    speed = [r for r in rows if r["part"] == "speed"]
    assert speed and all(r["torch_threads"] == 1 and r["device"] == "cpu" for r in speed)
    for r in speed:
        # our own CPU s/epoch only: the side-by-side ratio lives in reference_speed.json, and no
        # speed-up against a figure quoted from elsewhere is claimed here
        assert r["metric"] == "s_per_epoch" and r["ours_mean"] > 0 and r["paper_mean"] is None
        assert "speedup_vs_authors" not in r and r["test_rmse"] > 0
        assert "1 thread, CPU time" in r["protocol"]["summary"]


def test_the_two_point_loss_in_batches_gives_the_squared_losss_gradient_whatever_the_sign():
    """The authors' code's bandit mode: for the squared loss the two-point estimate is the exact
    derivative 2(ŷ − y), so the surrogate's gradient is that of the mean squared error."""
    y = torch.tensor([[0.2], [0.9], [0.4], [0.0]])
    for seed in range(4):  # both signs u are drawn over these seeds
        out = torch.tensor([[0.5], [0.1], [0.45], [0.3]], requires_grad=True)
        two_point_in_batches(0.5, torch.Generator().manual_seed(seed))(out, y, None).backward()
        reference = out.detach().clone().requires_grad_(True)
        ((reference - y) ** 2).mean().backward()
        torch.testing.assert_close(out.grad, reference.grad)


@pytest.mark.slow
def test_quick_bandit_part_runs_the_authors_loop_row(tmp_path, monkeypatch):
    _require_shared_data()
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setenv("TREEVIZ_DGT_PARTS", "table6")
    assert run.main(["dgt", "--quick"]) == 0
    rows = {r["method"]: r for r in json.loads((tmp_path / "dgt.json").read_text())["results"]["rows"]}
    loop = rows["DGT-Bandit (the authors' loop)"]
    assert loop["paper_mean"] == 2.16 and loop["ours_mean"] > 0 and loop["n_runs"] == 1
    assert loop["protocol"]["n_layers"] == 3 and loop["protocol"]["batch_size"] == 128
    assert "smart2p" in loop["protocol"]["why"]
    assert {"DGT-Bandit", "Linear bandit"} <= set(rows)


def test_a_tuned_part_reuses_the_chosen_configurations_tuning_fit_and_marks_a_short_grid(monkeypatch):
    calls = []

    def fake_fit(dataset, k, seed, params, quick):
        calls.append((k, seed, params["l1_penalty"], params["momentum"]))
        return {"split": k, "seed": seed, "val": 80.0 + 10 * params["momentum"], "test": 70.0 + params["momentum"],
                "fit_s": 1.0, "epochs": 2, "best_epoch": 1, "epoch_s_mean": 0.5, "active_leaves": 3,
                "l1_penalty": params["l1_penalty"], "momentum": params["momentum"]}

    monkeypatch.setattr(dgt_benchmark, "fit_dgt", fake_fit)
    monkeypatch.setenv("TREEVIZ_DGT_L1_GRID", "1e-5")
    s = {**dgt_benchmark.settings(False), "tune_table2": True, "seeds": 1, "splits_classification": 1,
         "epochs_table2": 2, "jobs": 1, "device": "cpu"}
    (row,) = dgt_benchmark._supervised_part("table2", ("letter",), s)
    assert calls == [(0, 0, 1e-5, 0.0), (0, 0, 1e-5, 0.3), (0, 0, 1e-5, 0.8)]  # no fourth fit for the chosen one
    assert row["protocol"]["momentum"] == 0.8 and row["per_run"] == [70.8]
    assert "λ1 grid [1e-05]" in row["protocol"]["reduced"]


def test_reused_tuning_fits_only_the_new_grid_points_and_seeds(tmp_path, monkeypatch):
    """``TREEVIZ_DGT_REUSE_TUNING=1``: grid points the previous file scored for the same training
    setup are taken from it; only new points and new seeds are fitted, and reused scores say so."""
    calls = []

    def fake_fit(dataset, k, seed, params, quick):
        calls.append((k, seed, params["l1_penalty"], params["momentum"]))
        return {"split": k, "seed": seed, "val": 80.0 + 10 * params["momentum"] - 1e5 * params["l1_penalty"],
                "test": 70.0 + seed, "fit_s": 1.0, "epochs": 2, "best_epoch": 1, "epoch_s_mean": 0.5,
                "active_leaves": 3, "l1_penalty": params["l1_penalty"], "momentum": params["momentum"]}

    monkeypatch.setattr(dgt_benchmark, "fit_dgt", fake_fit)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(dgt_benchmark, "MOMENTUM_GRID", {"classification": (0.0, 0.3), "regression": (0.0,)})
    base = {**dgt_benchmark.settings(False), "tune_table2": True, "splits_classification": 1,
            "epochs_table2": 2, "jobs": 1, "device": "cpu", "l1_grid": (1e-5,), "reuse_tuning": True}
    (first,) = dgt_benchmark._supervised_part("table2", ("letter",), {**base, "seeds": 1})
    assert calls == [(0, 0, 1e-5, 0.0), (0, 0, 1e-5, 0.3)]
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": False,
                                                   "results": {"rows": [first]}}))
    calls.clear()
    (second,) = dgt_benchmark._supervised_part("table2", ("letter",),
                                               {**base, "seeds": 3, "l1_grid": (1e-5, 0.0)})
    # the two old points come from the file; the new λ1 = 0 points and seeds 1, 2 are fitted
    assert calls == [(0, 0, 0.0, 0.0), (0, 0, 0.0, 0.3), (0, 1, 0.0, 0.3), (0, 2, 0.0, 0.3)]
    assert second["protocol"]["l1_penalty"] == 0.0 and second["protocol"]["momentum"] == 0.3
    assert second["per_run"] == [70.0, 71.0, 72.0]
    reused = [t for t in second["tuning_scores"] if "reused_from" in t]
    assert [(t["l1_penalty"], t["momentum"]) for t in reused] == [(1e-5, 0.0), (1e-5, 0.3)]
    # another training setup (here: more epochs) reuses nothing
    calls.clear()
    dgt_benchmark._supervised_part("table2", ("letter",), {**base, "seeds": 1, "epochs_table2": 3})
    assert len(calls) == 2


def test_the_authors_loop_row_marks_a_short_l1_grid_reduced(monkeypatch):
    def fake_loop(k, seed, epochs, quick, l1_penalty=1e-5, momentum=0.0, learning_rate=1e-2):
        return {"split": k, "seed": seed, "val": 2.0 + l1_penalty + momentum, "test": 2.1, "fit_s": 1.0,
                "best_epoch": 1, "queries": 10, "l1_penalty": l1_penalty, "momentum": momentum,
                "learning_rate": learning_rate}

    monkeypatch.setattr(dgt_benchmark, "fit_bandit_authors_loop", fake_loop)
    s = {**dgt_benchmark.settings(False), "seeds": 10, "jobs": 1, "tune_table1": True}
    full = dgt_benchmark._authors_loop_row({**s, "l1_grid": dgt_benchmark.L1_GRID}, 6, 5)
    assert "reduced" not in full["protocol"] and full["n_runs"] == 50
    short = dgt_benchmark._authors_loop_row({**s, "l1_grid": (1e-5, 0.0)}, 6, 5)
    assert "λ1 grid [1e-05, 0.0]" in short["protocol"]["reduced"]


def test_the_authors_loop_reuses_its_earlier_grid_scores(tmp_path, monkeypatch):
    calls = []

    def fake_loop(k, seed, epochs, quick, l1_penalty=1e-5, momentum=0.0, learning_rate=1e-2):
        calls.append((k, seed, l1_penalty, momentum, learning_rate))
        return {"split": k, "seed": seed, "val": 2.0 + l1_penalty + momentum + learning_rate, "test": 2.1 + seed,
                "fit_s": 1.0, "best_epoch": 1, "queries": 10, "l1_penalty": l1_penalty, "momentum": momentum,
                "learning_rate": learning_rate}

    monkeypatch.setattr(dgt_benchmark, "fit_bandit_authors_loop", fake_loop)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(dgt_benchmark, "AUTHORS_LOOP_LR", (1e-2, 1e-3))
    s = {**dgt_benchmark.settings(False), "jobs": 1, "tune_table1": True, "l1_grid": (1e-5,), "reuse_tuning": True}
    first = dgt_benchmark._authors_loop_row({**s, "seeds": 1}, 6, 1)
    assert len(calls) == 4  # 2 momenta x 2 learning rates; the chosen one's fit is split 0 / seed 0's run
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": False,
                                                   "results": {"rows": [first]}}))
    calls.clear()
    second = dgt_benchmark._authors_loop_row({**s, "seeds": 2}, 6, 2)
    # nothing of the grid is refitted: only the three runs it lacks (split 0 seed 1, split 1 seeds 0 and 1)
    assert calls == [(0, 1, 1e-5, 0.0, 1e-3), (1, 0, 1e-5, 0.0, 1e-3), (1, 1, 1e-5, 0.0, 1e-3)]
    assert second["per_run"] == [2.1, 3.1, 2.1, 3.1] and second["protocol"]["learning_rate"] == 1e-3
    assert all("reused_from" in t for t in second["tuning_scores"])
    calls.clear()
    dgt_benchmark._authors_loop_row({**s, "seeds": 1, "epochs": 7}, 6, 1)  # other epochs: nothing reused
    assert len(calls) == 4


def test_the_quick_denormals_benchmark_times_both_modes_and_they_train_alike(tmp_path, monkeypatch):
    from models import denormals

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["denormals", "--quick"]) == 0
    rows = json.loads((tmp_path / "denormals.json").read_text())["results"]["rows"]
    assert [r["name"].split()[0] for r in rows] == ["DGT", "Skinny"]
    for row in rows:
        assert row["cpu_s_per_epoch_default_handling"] > 0 and row["cpu_s_per_epoch_flushed"] > 0
        assert row["speedup"] == pytest.approx(row["cpu_s_per_epoch_default_handling"] / row["cpu_s_per_epoch_flushed"])
        assert row["final_loss_flushed"] == pytest.approx(row["final_loss_default_handling"], rel=1e-5)
    assert denormals.ENABLED is True  # the switch is put back


def test_the_quick_bandit_rounds_benchmark_times_both_learners_and_they_learn_alike(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["bandit_rounds", "--quick"]) == 0
    rows = json.loads((tmp_path / "bandit_rounds.json").read_text())["results"]["rows"]
    assert [r["name"].split()[0] for r in rows] == ["linear", "DGT-Bandit"]
    for row in rows:
        assert row["cpu_s_per_1000_rounds_autograd"] > 0 and row["cpu_s_per_1000_rounds_hand"] > 0
        assert row["mean_loss_played_hand"] == pytest.approx(row["mean_loss_played_autograd"], rel=1e-3)
    assert rows[0]["max_parameter_difference"] < 1e-5  # float32 rounding only


def test_forest_chunks_pool_into_the_mean_of_all_their_trees():
    """A forest trained as chunks predicts what one forest holding every chunk's trees predicts."""
    _require_shared_data()
    from models.dgt.forest import DGTForestRegressor

    params = dgt_benchmark._tree_params(2, 2, "cpu", l1_penalty=1e-5, momentum=0.0)
    chunks = [dgt_benchmark.fit_forest_chunk("abalone", 0, 3, c, n, params, 0.85) for c, n in ((0, 1), (1, 2))]
    pooled = dgt_benchmark._pooled(chunks, "test_pred")
    Xa, ya, Xv, yv, Xte, yte = dgt_benchmark.regression_split("abalone", 0)
    whole = []
    for c, n in ((0, 1), (1, 2)):  # the same seeded fits again, their trees in one forest
        forest = DGTForestRegressor(n_trees=n, subsample=0.85, **params, random_state=3000 + c)
        whole += forest.fit(Xa, ya, eval_set=(Xv, yv)).estimators_
    forest.estimators_, forest.n_trees = whole, len(whole)
    assert pooled.shape == yte.shape
    assert pooled == pytest.approx(forest.predict(Xte), rel=1e-6)
    assert [c["n_trees"] for c in chunks] == [1, 2] and len(chunks[1]["tree_test"]) == 2
    assert chunks[0]["test_pred"] != chunks[1]["test_pred"]


def test_the_forest_part_logs_its_chunks_resumes_and_searches_the_papers_grid(tmp_path, monkeypatch):
    """With TREEVIZ_DGT_TUNE=grid the forests search tree height x momentum x bootstrap fraction on
    split 0 / seed 0 (λ1 from Table 1's choice), the chosen forest is that run, every chunk is
    logged, and a rerun with more seeds fits only what the log lacks. The row is split 0's seeds
    (Table 4 ran on one split); the other splits' seed 0 is reported beside it."""
    rng = np.random.default_rng(0)
    data = tuple(rng.normal(size=n) for n in (6, 6, 5, 5, 4, 4))  # the fake fits only need y_val, y_test
    monkeypatch.setattr(dgt_benchmark, "regression_split", lambda ds, k: (None, None, None, data[3], None, data[5]))
    calls = []

    def fake_chunk(ds, k, seed, chunk, n_trees, params, subsample):
        calls.append((ds, k, seed, params["momentum"], subsample, params["l1_penalty"], params["depth"]))
        # best: height 6, momentum 0.3, fraction 0.9
        off = abs(params["momentum"] - 0.3) + abs(subsample - 0.9) + abs(params["depth"] - 6) + 0.01 * seed
        return {"n_trees": n_trees, "val_pred": list(data[3] + off), "test_pred": list(data[5] + off + k),
                "tree_test": [1.0] * n_trees, "fit_s": 2.0, "epoch_s": 0.01}

    monkeypatch.setattr(dgt_benchmark, "fit_forest_chunk", fake_chunk)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": False, "results": {"rows": [
        {"part": "table1", "dataset": "abalone", "method": "DGT", "protocol": {"l1_penalty": 5e-6},
         "tuning_scores": [{"l1_penalty": 5e-6}], "run_at": "then"}]}}))
    for key, value in {"TREEVIZ_DGT_TUNE": "grid", "TREEVIZ_DGT_SPLITS": "2", "TREEVIZ_DGT_SEEDS": "1",
                       "TREEVIZ_DGT_TREES": "30", "TREEVIZ_DGT_JOBS": "1", "TREEVIZ_DGT_DEVICE": "cpu"}.items():
        monkeypatch.setenv(key, value)
    (row,) = dgt_benchmark._forest_part(("abalone",), dgt_benchmark.settings(False))
    assert len(calls) == 2 * 20 + 1  # the grid on split 0 / seed 0 at heights 8 and 6, then split 1 only
    assert [c[6] for c in calls[:20]] == [8] * 20 and [c[6] for c in calls[20:]] == [6] * 21  # the tallest first
    assert {c[5] for c in calls} == {5e-6}  # Table 1's λ1 for abalone
    assert (row["protocol"]["depth"], row["protocol"]["momentum"], row["protocol"]["subsample"]) == (6, 0.3, 0.9)
    assert len(row["tuning_scores"]) == 40 and "5e-06: Table 1's validation choice" in row["protocol"]["tuning"]
    assert "height in [6, 8]" in row["protocol"]["tuning"]
    assert row["protocol"]["height_note"].startswith("h=6, chosen on validation from [6, 8]")
    assert row["per_run"] == pytest.approx([0.0])  # the chosen forest's test RMSE on split 0 only
    assert row["across_splits"]["per_split"] == pytest.approx([0.0, 1.0], abs=1e-9)
    assert row["across_splits"]["std"] == pytest.approx(0.5)
    assert "grid search" not in row["protocol"]["reduced"]
    assert "1 split(s) x 1 seed(s) instead of the paper's 10 seeds" in row["protocol"]["reduced"]
    assert "5 splits" not in row["protocol"]["reduced"] and "split 0" in row["protocol"]["splits"]
    assert len((tmp_path / "parts" / "dgt_forest.jsonl").read_text().splitlines()) == 41
    # the row's time is every forest behind it (40 searched, 1 more run) at 2 s each, not this run's wall time
    assert row["row_seconds"] == pytest.approx(41 * 2.0)
    assert "41 chunks (41 forests: the search" in row["row_seconds_of"]
    calls.clear()
    monkeypatch.setenv("TREEVIZ_DGT_SEEDS", "2")
    (row,) = dgt_benchmark._forest_part(("abalone",), dgt_benchmark.settings(False))
    assert [(c[1], c[2]) for c in calls] == [(0, 1)]  # only the new seed's forest, on split 0
    assert row["n_runs"] == 2 and row["per_run"] == pytest.approx([0.0, 0.01])
    assert row["row_seconds"] == pytest.approx(42 * 2.0)  # logged forests count, though this run fitted 1
    calls.clear()
    monkeypatch.setenv("TREEVIZ_DGT_SPLITS", "1")
    (row,) = dgt_benchmark._forest_part(("abalone",), dgt_benchmark.settings(False))
    assert calls == [] and "across_splits" not in row and row["per_run"] == pytest.approx([0.0, 0.01])


def test_the_forest_heights_setting(monkeypatch):
    """Heights to search come from TREEVIZ_DGT_FOREST_DEPTH (6 and 8 by default with the grid, 8
    without); several heights without the grid, or a bad list, are refused with a sentence."""
    monkeypatch.setenv("TREEVIZ_DGT_TUNE", "grid")
    assert dgt_benchmark.settings(False)["forest_depths"] == (6, 8)
    monkeypatch.setenv("TREEVIZ_DGT_FOREST_DEPTH", "8, 4")
    assert dgt_benchmark.settings(False)["forest_depths"] == (4, 8)
    monkeypatch.setenv("TREEVIZ_DGT_FOREST_DEPTH", "eight")
    with pytest.raises(ValueError, match="comma list of heights"):
        dgt_benchmark.settings(False)
    monkeypatch.setenv("TREEVIZ_DGT_FOREST_DEPTH", "6,8")
    monkeypatch.setenv("TREEVIZ_DGT_TUNE", "fixed")
    with pytest.raises(ValueError, match="only TREEVIZ_DGT_TUNE=grid searches heights"):
        dgt_benchmark._forest_part(("abalone",), dgt_benchmark.settings(False))
    monkeypatch.delenv("TREEVIZ_DGT_FOREST_DEPTH")
    assert dgt_benchmark.settings(False)["forest_depths"] == (8,)
    assert dgt_benchmark.settings(True)["forest_depths"] == (4,)


@pytest.mark.slow  # real 2-tree forests of 2 epochs on both data sets
def test_the_quick_forest_part_writes_both_rows_without_a_log(tmp_path, monkeypatch):
    _require_shared_data()
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setenv("TREEVIZ_DGT_PARTS", "table4")
    assert run.main(["dgt", "--quick"]) == 0
    rows = json.loads((tmp_path / "dgt.json").read_text())["results"]["rows"]
    assert [r["name"] for r in rows] == ["abalone DGT-Forest", "cpu_act DGT-Forest"]
    for r in rows:
        assert r["ours_mean"] > 0 and r["n_runs"] == 1 and r["protocol"]["trees"] == 2
        assert r["single_tree_test_mean"] > 0 and r["tuning_scores"] == []
        assert "no validation grid search" in r["protocol"]["reduced"] and "log" not in r["protocol"]
    assert not (tmp_path / "parts").exists()


def test_the_quick_forest_benchmark_times_both_paths_and_both_layouts_compute_the_same(tmp_path, monkeypatch):
    from benchmarks import dgt_forest

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["dgt_forest", "--quick"]) == 0
    results = json.loads((tmp_path / "dgt_forest.json").read_text())["results"]
    epochs = [r for r in results["rows"] if "threads" in r]
    layout = [r for r in results["rows"] if "threads" not in r]
    assert [r["threads"] for r in epochs] == sorted({1, min(os.cpu_count(), dgt_forest.MAX_THREADS)})
    assert epochs[0]["clock"] == "process CPU time"
    for r in epochs:
        assert r["batched_s"] > 0 and r["one_at_a_time_s"] > 0 and r["forest_s"] > 0
        assert r["forest_s_estimate"] == pytest.approx(r["forest_s"] * dgt_forest.FOREST_TREE_EPOCHS)
        assert r["speedup_one_at_a_time"] == pytest.approx(r["batched_s"] / r["one_at_a_time_s"])
    assert [r["name"].split(",")[0] for r in layout] == ["forward", "first layers' gradient", "outer product"]
    for r in layout:  # the same products in both layouts: equal to float rounding
        assert r["transposed_s"] > 0 and r["untransposed_s"] > 0
        assert r["max_abs_diff"] <= 1e-5 * r["max_abs"]
    assert "load average" in results["measured"]


def test_the_table4_splits_study_measures_the_spread_of_splits_and_of_seeds():
    """The study behind Table 4's one-split protocol: each method's spread across splits (seed 0)
    and across seeds on split 0, with the paper's numbers beside them."""
    from benchmarks import dgt_table4_splits as study

    assert study.spread([2.0, 2.0])["prints_as_zero"] and study.spread([2.0, 2.004])["prints_as_zero"]
    assert study.spread([2.0, 2.02]) == {"values": [2.0, 2.02], "mean": pytest.approx(2.01),
                                         "std": pytest.approx(0.01), "prints_as_zero": False}
    fits = []
    both = study._both_spreads(lambda k, s: fits.append((k, s)) or 2.0 + k + s / 100, splits=3, seeds=2)
    assert sorted(fits) == [(0, 0), (0, 1), (1, 0), (2, 0)]  # split 0 with seed 0 is fitted once
    assert both["across_splits"]["values"] == [2.0, 3.0, 4.0]
    assert both["across_seeds_on_split_0"]["values"] == [2.0, 2.01]
    _require_shared_data()
    rows = study.study(splits=2, seeds=2, trees=5)
    assert [(r["dataset"], r["method"]) for r in rows] == [(ds, m) for ds in study.DATASETS
                                                          for m in ("Ridge", "XGBoost", "AdaBoost")]
    for r in rows:
        assert len(r["across_splits"]["values"]) == 2 and r["across_splits"]["std"] > 0  # the splits differ
        assert (r["paper_mean"], r["paper_std"]) == study.PAPER[(r["dataset"], r["method"])]
        if r["method"] == "Ridge":
            assert r["across_seeds_on_split_0"] is None  # deterministic: no seeds
        else:  # split 0 with seed 0 is the same fit in both lists
            assert r["across_seeds_on_split_0"]["values"][0] == pytest.approx(r["across_splits"]["values"][0])
