"""The DGT benchmark runs end to end in --quick mode, writes rows with the required fields, reads
its settings from dgt.toml, a --config file and flags, and keeps rows of parts it did not rerun only
with their own stamp, marked carried over (numbers are not asserted: accuracy against the paper
belongs in the full benchmark)."""

import argparse
import json
import os

import numpy as np
import pytest
import torch

from benchmarks.common import shared_data_dir
from benchmarks.paper import (
    carried,
    dgt,
    dgt_common,
    dgt_config,
    dgt_supervised,
    dgt_table2,
    dgt_table4,
    dgt_table6,
)
from benchmarks.paper.dgt_table6 import two_point_in_batches
from benchmarks.report import run

ROW_FIELDS = {"name", "part", "dataset", "method", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std",
              "n_runs", "n_splits", "n_seeds", "protocol", "protocol_note", "protocol_settings",
              "within_one_std_or_better", "machine", "commit", "date", "command"}
SETTING_FIELDS = {"depth", "n_layers", "l1_penalty", "momentum", "epochs", "batch_size", "device", "tuning",
                  "paper_source"}
NEEDED = tuple(f"dgt/{folder}/{stem}0.npz" for folder, stem in (("abalone", "abalone"), ("cpuactiv", "cpu_act")))


def _require_shared_data():
    root = shared_data_dir()
    if root is None:
        pytest.skip("shared reference data folder absent (../shared/data or TREEVIZ_SHARED_DATA): "
                    "the DGT benchmark needs the Abalone and cpu_act splits")
    missing = [p for p in NEEDED if not (root / p).is_file()]
    if missing:
        pytest.skip(f"shared reference data incomplete at {root}: missing {', '.join(missing)}")


def _settings(quick=False, **changes):
    """The parts' settings from dgt.toml with ``changes`` to its top-level keys."""
    config = dgt_config.read_config()
    config.update(changes)
    return dgt_config.settings(config, quick=quick)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_dgt_benchmark_parts_write_rows_and_carry_the_others_over(tmp_path, monkeypatch, capsys):
    _require_shared_data()
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert dgt.main(["--quick", "--parts", "table1"]) == 0
    out = capsys.readouterr().out
    assert "abalone DGT" in out and "cpu_act CART" in out and "paper" in out
    payload = json.loads((tmp_path / "dgt.json").read_text())
    assert payload["benchmark"] == "dgt" and payload["quick"] is True
    rows = payload["results"]["rows"]
    assert {(r["dataset"], r["method"]) for r in rows} == {("abalone", "DGT"), ("abalone", "CART"),
                                                            ("cpu_act", "DGT"), ("cpu_act", "CART")}
    for r in rows:
        assert ROW_FIELDS <= set(r), r["name"]
        assert r["part"] == "table1" and r["metric"] == "rmse" and "carried_over" not in r
        assert r["ours_mean"] > 0 and r["paper_mean"] > 0 and r["paper_std"] > 0
        assert r["n_runs"] == r["n_splits"] == r["n_seeds"] == 1
        assert r["ours_std"] is None and "one run, so no spread" in r["protocol_note"]  # no spread from one run
        assert isinstance(r["within_one_std_or_better"], bool)
        assert r["protocol"] == "reduced" and "quick" in r["protocol_note"]
        if r["method"] == "DGT":
            assert SETTING_FIELDS <= set(r["protocol_settings"]), r["name"]
            assert r["protocol_settings"]["depth"] == 6 and r["protocol_settings"]["n_layers"] == 3
            assert r["epoch_s_mean"] > 0
    assert payload["results"]["run"]["parts"] == ["table1"]
    first = {r["name"]: r for r in rows}

    # a second run of another part keeps the first run's rows, with their own stamp, marked carried over
    assert dgt.main(["--quick", "--parts", "speed"]) == 0
    assert "s/epoch" in capsys.readouterr().out
    payload = json.loads((tmp_path / "dgt.json").read_text())
    rows = payload["results"]["rows"]
    assert {r["part"] for r in rows} == {"table1", "speed"} and payload["results"]["run"]["parts"] == ["speed"]
    for r in rows:
        if r["part"] == "table1":
            assert r["carried_over"] is True
            assert {k: r[k] for k in ("commit", "date", "command")} == \
                {k: first[r["name"]][k] for k in ("commit", "date", "command")}
        else:
            assert "carried_over" not in r and r["command"] == payload["command"]
    speed = [r for r in rows if r["part"] == "speed"]
    assert speed and all(r["torch_threads"] == 1 and r["device"] == "cpu" for r in speed)
    for r in speed:
        # our own CPU s/epoch only: the side-by-side ratio lives in reference_speed.json, and no
        # speed-up against a figure quoted from elsewhere is claimed here
        assert r["metric"] == "s_per_epoch" and r["ours_mean"] > 0 and r["paper_mean"] is None
        assert "speedup_vs_authors" not in r and r["test_rmse"] > 0
        assert "1 thread, CPU time" in r["protocol_note"] and r["protocol"] == "reduced"


def test_a_run_carries_over_only_stamped_rows_and_sections(tmp_path, monkeypatch, capsys):
    """Rows of parts not rerun stay only with their own commit, date and command, marked carried
    over; rows and a device section without a stamp of their own are left out, and the run says so."""
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    stamp = {"commit": "0" * 40, "date": "2026-01-01T00:00:00+00:00", "command": "python -m benchmarks.report.run dgt"}
    numbers = {"metric": "rmse", "ours_mean": 2.0, "ours_std": None, "paper_mean": 2.15, "paper_std": 0.026,
               "n_runs": 1, "protocol": "reduced"}
    earlier = [{"name": "abalone DGT", "part": "table1", "dataset": "abalone", **numbers, **stamp},
               {"name": "letter DGT", "part": "table2", "dataset": "letter", **numbers, **stamp},
               {"name": "satimage DGT", "part": "table2", "dataset": "satimage", **numbers,
                "run_at": "2026-01-01 00:00:00"}]
    device_rows = [{"workload": "w", **stamp}]
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": True, "results": {
        "rows": earlier, "device_timing": {"rows": device_rows, "at": "then"}}}))
    fresh = {"name": "abalone DGT", "part": "table1", "dataset": "abalone", **numbers, "ours_mean": 1.0}
    monkeypatch.setattr(dgt, "_part_rows", lambda part, datasets, s: [dict(fresh)])
    config = {**dgt_config.read_config(), "parts": ["table1"], "datasets": ["abalone"]}
    results = dgt.run(quick=True, config=config)["results"]
    by_name = {r["name"]: r for r in results["rows"]}
    assert set(by_name) == {"abalone DGT", "letter DGT"}
    assert "carried_over" not in by_name["abalone DGT"] and by_name["abalone DGT"]["ours_mean"] == 1.0
    assert by_name["letter DGT"] == {**earlier[1], "carried_over": True}
    assert results["device_timing"]["carried_over"] is True
    assert results["device_timing"]["rows"] == [{**device_rows[0], "carried_over": True}]
    assert "satimage DGT" in capsys.readouterr().out  # said to be left out
    # an unstamped device section is left out too
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": True, "results": {
        "rows": [], "device_timing": {"rows": [{"workload": "w"}], "at": "then"}}}))
    assert "device_timing" not in dgt.run(quick=True, config=config)["results"]
    assert "device_timing" in capsys.readouterr().out


def test_carrying_keeps_a_stamp_and_marks_it():
    stamp = {"commit": "abc", "date": "2026-01-01", "command": "x"}
    kept, dropped = carried.carry_rows([{"name": "a", **stamp}, {"name": "b", "commit": "abc", "date": "d"},
                                        {"name": "c", **stamp, "command": ""}])
    assert kept == [{"name": "a", **stamp, "carried_over": True}] and dropped == ["b", "c"]
    assert carried.carry_section({"x": 1, **stamp}) == {"x": 1, **stamp, "carried_over": True}
    assert carried.carry_section({"x": 1}) is None and carried.carry_section({"rows": []}) is None
    assert carried.carry_section({"rows": [{"a": 1, **stamp}, {"a": 2}]}) is None


def test_the_settings_come_from_the_toml_a_config_file_and_flags(tmp_path):
    s = dgt_config.settings()  # dgt.toml: the paper's protocol
    assert s["seeds"] == 10 and s["epochs"] == 200 and s["trees"] == 30 and s["l1_grid"] == dgt_common.L1_GRID
    assert s["tune"] == {"table1": True, "table2": True, "table4": True, "table6": True}
    assert s["splits"] == {"table1": 5, "table2": 1, "table4": 1, "table6": 5} and s["bandit_passes"] == 100
    assert s["parts"] == dgt_config.PARTS and s["forest_depths"] == (6, 8)
    mine = tmp_path / "mine.toml"
    mine.write_text('seeds = 2\nparts = ["table2"]\n[table2]\ntune = false\n')
    parser = argparse.ArgumentParser()
    dgt_config.add_arguments(parser)
    args = parser.parse_args(["--config", str(mine), "--datasets", "letter", "--epochs", "30", "--splits", "7",
                              "--l1-grid", "1e-5,0"])
    s = dgt_config.settings(dgt_config.config_from_args(args))
    assert s["seeds"] == 2 and s["parts"] == ("table2",) and s["datasets"] == ("letter",) and s["epochs"] == 30
    assert s["tune"]["table2"] is False and s["tune"]["table1"] is True  # the file changed one key only
    assert s["splits"]["table2"] == 7 and s["splits"]["table1"] == 5  # the shipped shuffles are five
    assert s["l1_grid"] == (1e-5, 0.0)
    quick = dgt_config.settings(dgt_config.config_from_args(args), quick=True)
    assert (quick["seeds"], quick["epochs"], quick["trees"], quick["device"]) == (1, 2, 2, "cpu")
    assert quick["parts"] == ("table2",) and not any(quick["tune"].values())
    mine.write_text("seed = 2\n")
    with pytest.raises(ValueError, match="unknown setting 'seed'"):
        dgt_config.read_config(mine)
    with pytest.raises(ValueError, match="unknown or none: nope"):
        _settings(parts=["nope"])
    with pytest.raises(ValueError, match="seeds must be a positive integer"):
        _settings(seeds=0)


def test_a_bad_setting_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        dgt.main(["--parts", "table5"])
    assert exc.value.code == 2 and "unknown or none: table5" in capsys.readouterr().err
    assert not (tmp_path / "dgt.json").exists()


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
    assert dgt.main(["--quick", "--parts", "table6"]) == 0
    rows = {r["method"]: r for r in json.loads((tmp_path / "dgt.json").read_text())["results"]["rows"]}
    loop = rows["DGT-Bandit (the authors' loop)"]
    assert loop["paper_mean"] == 2.16 and loop["ours_mean"] > 0 and loop["n_runs"] == 1
    assert loop["protocol_settings"]["n_layers"] == 3 and loop["protocol_settings"]["batch_size"] == 128
    assert "smart2p" in loop["protocol_settings"]["why"] and loop["protocol"] == "reduced"
    assert {"DGT-Bandit", "Linear bandit"} <= set(rows)


def test_a_tuned_part_reuses_the_chosen_configurations_tuning_fit_and_marks_a_short_grid(monkeypatch):
    calls = []

    def fake_fit(dataset, k, seed, params, quick):
        calls.append((k, seed, params["l1_penalty"], params["momentum"]))
        return {"split": k, "seed": seed, "val": 80.0 + 10 * params["momentum"], "test": 70.0 + params["momentum"],
                "fit_s": 1.0, "epochs": 2, "best_epoch": 1, "epoch_s_mean": 0.5, "active_leaves": 3,
                "l1_penalty": params["l1_penalty"], "momentum": params["momentum"]}

    monkeypatch.setattr(dgt_supervised, "fit_dgt", fake_fit)
    s = {**_settings(l1_grid=[1e-5], seeds=1, epochs=2, jobs=1, train_device="cpu")}
    (row,) = dgt_table2.rows(("letter",), s)
    assert calls == [(0, 0, 1e-5, 0.0), (0, 0, 1e-5, 0.3), (0, 0, 1e-5, 0.8)]  # no fourth fit for the chosen one
    assert row["protocol_settings"]["momentum"] == 0.8 and row["per_run"] == [70.8]
    assert row["protocol"] == "reduced" and "λ1 grid [1e-05]" in row["protocol_note"]


def test_reused_tuning_fits_only_the_new_grid_points_and_seeds(tmp_path, monkeypatch):
    """``reuse_tuning``: grid points the previous file scored for the same training setup are
    taken from it; only new points and new seeds are fitted, and reused scores say so."""
    calls = []

    def fake_fit(dataset, k, seed, params, quick):
        calls.append((k, seed, params["l1_penalty"], params["momentum"]))
        return {"split": k, "seed": seed, "val": 80.0 + 10 * params["momentum"] - 1e5 * params["l1_penalty"],
                "test": 70.0 + seed, "fit_s": 1.0, "epochs": 2, "best_epoch": 1, "epoch_s_mean": 0.5,
                "active_leaves": 3, "l1_penalty": params["l1_penalty"], "momentum": params["momentum"]}

    monkeypatch.setattr(dgt_supervised, "fit_dgt", fake_fit)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(dgt_supervised, "MOMENTUM_GRID", {"classification": (0.0, 0.3), "regression": (0.0,)})
    base = _settings(epochs=2, jobs=1, train_device="cpu", l1_grid=[1e-5], reuse_tuning=True)
    (first,) = dgt_table2.rows(("letter",), {**base, "seeds": 1})
    assert calls == [(0, 0, 1e-5, 0.0), (0, 0, 1e-5, 0.3)]
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": False,
                                                   "results": {"rows": [{**first, "date": "then"}]}}))
    calls.clear()
    (second,) = dgt_table2.rows(("letter",), {**base, "seeds": 3, "l1_grid": (1e-5, 0.0)})
    # the two old points come from the file; the new λ1 = 0 points and seeds 1, 2 are fitted
    assert calls == [(0, 0, 0.0, 0.0), (0, 0, 0.0, 0.3), (0, 1, 0.0, 0.3), (0, 2, 0.0, 0.3)]
    assert second["protocol_settings"]["l1_penalty"] == 0.0 and second["protocol_settings"]["momentum"] == 0.3
    assert second["per_run"] == [70.0, 71.0, 72.0]
    reused = [t for t in second["tuning_scores"] if "reused_from" in t]
    assert [(t["l1_penalty"], t["momentum"], t["reused_from"]) for t in reused] == [(1e-5, 0.0, "then"),
                                                                                    (1e-5, 0.3, "then")]
    # another training setup (here: more epochs) reuses nothing
    calls.clear()
    dgt_table2.rows(("letter",), {**base, "seeds": 1, "epochs": 3})
    assert len(calls) == 2


def test_the_authors_loop_row_marks_a_short_l1_grid_reduced(monkeypatch):
    def fake_loop(k, seed, epochs, quick, l1_penalty=1e-5, momentum=0.0, learning_rate=1e-2):
        return {"split": k, "seed": seed, "val": 2.0 + l1_penalty + momentum, "test": 2.1 + k / 100, "fit_s": 1.0,
                "best_epoch": 1, "queries": 10, "l1_penalty": l1_penalty, "momentum": momentum,
                "learning_rate": learning_rate}

    monkeypatch.setattr(dgt_table6, "fit_bandit_authors_loop", fake_loop)
    s = _settings(jobs=1)  # the paper's protocol: 10 seeds on 5 splits, the grid
    full = dgt_table6.authors_loop_row({**s, "l1_grid": dgt_common.L1_GRID}, 6, 5)
    assert full["protocol"] == "full" and full["n_runs"] == 50 and "reduced" not in full["protocol_note"]
    short = dgt_table6.authors_loop_row({**s, "l1_grid": (1e-5, 0.0)}, 6, 5)
    assert short["protocol"] == "reduced" and "λ1 grid [1e-05, 0.0]" in short["protocol_note"]


def test_the_authors_loop_reuses_its_earlier_grid_scores(tmp_path, monkeypatch):
    calls = []

    def fake_loop(k, seed, epochs, quick, l1_penalty=1e-5, momentum=0.0, learning_rate=1e-2):
        calls.append((k, seed, l1_penalty, momentum, learning_rate))
        return {"split": k, "seed": seed, "val": 2.0 + l1_penalty + momentum + learning_rate, "test": 2.1 + seed,
                "fit_s": 1.0, "best_epoch": 1, "queries": 10, "l1_penalty": l1_penalty, "momentum": momentum,
                "learning_rate": learning_rate}

    monkeypatch.setattr(dgt_table6, "fit_bandit_authors_loop", fake_loop)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(dgt_table6, "AUTHORS_LOOP_LR", (1e-2, 1e-3))
    s = _settings(jobs=1, l1_grid=[1e-5], reuse_tuning=True)
    first = dgt_table6.authors_loop_row({**s, "seeds": 1}, 6, 1)
    assert len(calls) == 4  # 2 momenta x 2 learning rates; the chosen one's fit is split 0 / seed 0's run
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": False,
                                                   "results": {"rows": [first]}}))
    calls.clear()
    second = dgt_table6.authors_loop_row({**s, "seeds": 2}, 6, 2)
    # nothing of the grid is refitted: only the three runs it lacks (split 0 seed 1, split 1 seeds 0 and 1)
    assert calls == [(0, 1, 1e-5, 0.0, 1e-3), (1, 0, 1e-5, 0.0, 1e-3), (1, 1, 1e-5, 0.0, 1e-3)]
    assert second["per_run"] == [2.1, 3.1, 2.1, 3.1] and second["protocol_settings"]["learning_rate"] == 1e-3
    assert all("reused_from" in t for t in second["tuning_scores"])
    calls.clear()
    dgt_table6.authors_loop_row({**s, "seeds": 1, "epochs": 7}, 6, 1)  # other epochs: nothing reused
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


def test_the_quick_bandit_rounds_benchmark_times_both_learners_and_they_learn_alike():
    from benchmarks.speed import bandit_rounds

    rows = bandit_rounds.run(quick=True)["results"]["rows"]
    assert [r["name"].split()[0] for r in rows] == ["linear", "DGT-Bandit"]
    for row in rows:
        assert row["cpu_s_per_1000_rounds_autograd"] > 0 and row["cpu_s_per_1000_rounds_hand"] > 0
        assert row["mean_loss_played_hand"] == pytest.approx(row["mean_loss_played_autograd"], rel=1e-3)
        assert row["protocol"] == "reduced" and "quick" in row["protocol_note"]
    assert rows[0]["max_parameter_difference"] < 1e-5  # float32 rounding only


def test_forest_chunks_pool_into_the_mean_of_all_their_trees():
    """A forest trained as chunks predicts what one forest holding every chunk's trees predicts."""
    _require_shared_data()
    from models.dgt.forest import DGTForestRegressor

    params = dgt_common.tree_params(2, 2, "cpu", l1_penalty=1e-5, momentum=0.0)
    chunks = [dgt_table4.fit_forest_chunk("abalone", 0, 3, c, n, params, 0.85) for c, n in ((0, 1), (1, 2))]
    pooled = dgt_table4.pooled(chunks, "test_pred")
    Xa, ya, Xv, yv, Xte, yte = dgt_common.regression_split("abalone", 0)
    whole = []
    for c, n in ((0, 1), (1, 2)):  # the same seeded fits again, their trees in one forest
        forest = DGTForestRegressor(n_trees=n, subsample=0.85, **params, random_state=3000 + c)
        whole += forest.fit(Xa, ya, eval_set=(Xv, yv)).estimators_
    forest.estimators_, forest.n_trees = whole, len(whole)
    assert pooled.shape == yte.shape
    assert pooled == pytest.approx(forest.predict(Xte), rel=1e-6)
    assert [c["n_trees"] for c in chunks] == [1, 2] and len(chunks[1]["tree_test"]) == 2
    assert chunks[0]["test_pred"] != chunks[1]["test_pred"]


def _forest_settings(splits, seeds):
    config = {**dgt_config.read_config(), "seeds": seeds, "jobs": 1, "train_device": "cpu"}
    config["table4"] = {**config["table4"], "splits": splits, "tune": True, "trees": 30}
    return dgt_config.settings(config)


def test_the_forest_part_logs_its_chunks_resumes_and_searches_the_papers_grid(tmp_path, monkeypatch):
    """With table4.tune the forests search tree height x momentum x bootstrap fraction on split 0 /
    seed 0 (λ1 from Table 1's choice), the chosen forest is that run, every chunk is logged, and a
    rerun with more seeds fits only what the log lacks. The row is split 0's seeds (Table 4 ran on
    one split); the other splits' seed 0 is reported beside it."""
    rng = np.random.default_rng(0)
    data = tuple(rng.normal(size=n) for n in (6, 6, 5, 5, 4, 4))  # the fake fits only need y_val, y_test
    monkeypatch.setattr(dgt_table4, "regression_split", lambda ds, k: (None, None, None, data[3], None, data[5]))
    calls = []

    def fake_chunk(ds, k, seed, chunk, n_trees, params, subsample):
        calls.append((ds, k, seed, params["momentum"], subsample, params["l1_penalty"], params["depth"]))
        # best: height 6, momentum 0.3, fraction 0.9
        off = abs(params["momentum"] - 0.3) + abs(subsample - 0.9) + abs(params["depth"] - 6) + 0.01 * seed
        return {"n_trees": n_trees, "val_pred": list(data[3] + off), "test_pred": list(data[5] + off + k),
                "tree_test": [1.0] * n_trees, "fit_s": 2.0, "epoch_s": 0.01}

    monkeypatch.setattr(dgt_table4, "fit_forest_chunk", fake_chunk)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    (tmp_path / "dgt.json").write_text(json.dumps({"benchmark": "dgt", "quick": False, "results": {"rows": [
        {"part": "table1", "dataset": "abalone", "method": "DGT", "protocol": "full",
         "protocol_settings": {"l1_penalty": 5e-6}, "tuning_scores": [{"l1_penalty": 5e-6}], "date": "then"}]}}))
    (row,) = dgt_table4.rows(("abalone",), _forest_settings(splits=2, seeds=1))
    assert len(calls) == 2 * 20 + 1  # the grid on split 0 / seed 0 at heights 8 and 6, then split 1 only
    assert [c[6] for c in calls[:20]] == [8] * 20 and [c[6] for c in calls[20:]] == [6] * 21  # the tallest first
    assert {c[5] for c in calls} == {5e-6}  # Table 1's λ1 for abalone
    settings = row["protocol_settings"]
    assert (settings["depth"], settings["momentum"], settings["subsample"]) == (6, 0.3, 0.9)
    assert len(row["tuning_scores"]) == 40 and "5e-06: Table 1's validation choice" in settings["tuning"]
    assert "(run at then)" in settings["tuning"] and "height in [6, 8]" in settings["tuning"]
    assert settings["height_note"].startswith("h=6, chosen on validation from [6, 8]")
    assert row["per_run"] == pytest.approx([0.0])  # the chosen forest's test RMSE on split 0 only
    assert row["across_splits"]["per_split"] == pytest.approx([0.0, 1.0], abs=1e-9)
    assert row["across_splits"]["std"] == pytest.approx(0.5)
    assert row["protocol"] == "reduced" and "grid search" not in row["protocol_note"]
    assert "1 split(s) x 1 seed(s) instead of the paper's 10 seeds" in row["protocol_note"]
    assert "5 splits" not in row["protocol_note"] and "split 0" in settings["splits"]
    assert len((tmp_path / "parts" / "dgt_forest.jsonl").read_text().splitlines()) == 41
    # the row's time is every forest behind it (40 searched, 1 more run) at 2 s each, not this run's wall time
    assert row["row_seconds"] == pytest.approx(41 * 2.0)
    assert "41 chunks (41 forests: the search" in row["row_seconds_of"]
    calls.clear()
    (row,) = dgt_table4.rows(("abalone",), _forest_settings(splits=2, seeds=2))
    assert [(c[1], c[2]) for c in calls] == [(0, 1)]  # only the new seed's forest, on split 0
    assert row["n_runs"] == 2 and row["per_run"] == pytest.approx([0.0, 0.01])
    assert row["row_seconds"] == pytest.approx(42 * 2.0)  # logged forests count, though this run fitted 1
    calls.clear()
    (row,) = dgt_table4.rows(("abalone",), _forest_settings(splits=1, seeds=2))
    assert calls == [] and "across_splits" not in row and row["per_run"] == pytest.approx([0.0, 0.01])


def test_the_forest_heights_setting():
    """Heights to search come from table4.heights (6 and 8 in dgt.toml, searched by the grid);
    several heights without the grid, or a bad list, are refused with a sentence."""
    config = dgt_config.read_config()
    assert dgt_config.settings(config)["forest_depths"] == (6, 8)
    config["table4"]["heights"] = [8, 4]
    assert dgt_config.settings(config)["forest_depths"] == (4, 8)
    config["table4"]["heights"] = ["eight"]
    with pytest.raises(ValueError, match=r"table4\.heights must be a positive integer"):
        dgt_config.settings(config)
    config["table4"].update(heights=[6, 8], tune=False)
    with pytest.raises(ValueError, match=r"only table4\.tune \(the grid\) searches heights"):
        dgt_config.settings(config)  # refused before any part runs
    s = dgt_config.settings({**config, "parts": ["table1"]})  # no forests to run: nothing to refuse
    with pytest.raises(ValueError, match=r"only table4\.tune \(the grid\) searches heights"):
        dgt_table4.rows(("abalone",), {**s, "parts": ("table4",)})
    config["table4"]["heights"] = [8]
    assert dgt_config.settings(config)["forest_depths"] == (8,)
    assert dgt_config.settings(config, quick=True)["forest_depths"] == (4,)


@pytest.mark.slow  # real 2-tree forests of 2 epochs on both data sets
def test_the_quick_forest_part_writes_both_rows_without_a_log(tmp_path, monkeypatch):
    _require_shared_data()
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert dgt.main(["--quick", "--parts", "table4"]) == 0
    rows = json.loads((tmp_path / "dgt.json").read_text())["results"]["rows"]
    assert [r["name"] for r in rows] == ["abalone DGT-Forest", "cpu_act DGT-Forest"]
    for r in rows:
        assert r["ours_mean"] > 0 and r["n_runs"] == 1 and r["protocol_settings"]["trees"] == 2
        assert r["single_tree_test_mean"] > 0 and r["tuning_scores"] == []
        assert "no validation grid search" in r["protocol_note"] and "log" not in r["protocol_settings"]
    assert not (tmp_path / "parts").exists()


def test_the_quick_forest_benchmark_times_both_paths_and_both_layouts_compute_the_same():
    from benchmarks.speed import dgt_forest

    results = dgt_forest.run(quick=True)["results"]
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
    assert all(r["protocol"] == "reduced" and "quick" in r["protocol_note"] for r in results["rows"])
    assert "load average" in results["measured"]


def test_the_table4_splits_study_measures_the_spread_of_splits_and_of_seeds():
    """The study behind Table 4's one-split protocol: each method's spread across splits (seed 0)
    and across seeds on split 0, with the paper's numbers beside them."""
    from benchmarks.paper import dgt_table4_splits as study

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
