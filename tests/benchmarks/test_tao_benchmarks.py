"""The TAO benchmarks run end to end in --quick mode and write JSON with the required fields
(numbers are not asserted: accuracy against the papers belongs in the full benchmark)."""

import json

import pytest

from benchmarks.report import run
from tests.benchmarks.helpers import quick_run, require_shared_data

ROW_FIELDS = {"name", "dataset", "method", "ours_mean", "ours_std", "paper_mean", "paper_std", "metric",
              "n_seeds", "protocol", "protocol_settings", "within_one_std_or_better"}
PROTOCOL_FIELDS = {"depth", "l1_penalty", "leaves", "iterations", "init", "trees"}
STAMP = {"commit": "a" * 40, "date": "2026-12-01T00:00:00+00:00", "command": "python -m benchmarks.report.run x",
         "machine": {"cpus": 2, "cuda": None}}
NEEDED = ("uci/letter.csv.gz", "uci/satimage.csv.gz", "uci/pendigits.csv.gz",
          *(f"dgt/cpuactiv/cpu_act{k}.npz" for k in range(5)))




@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_tao_paper_benchmark_writes_rows_with_the_required_fields(tmp_path, monkeypatch, capsys):
    require_shared_data(NEEDED, "the TAO paper benchmark needs Letter, SatImage, PenDigits and cpu_act")
    out, payload = quick_run("tao_paper", tmp_path, monkeypatch, capsys)
    assert "letter TAO-c" in out and "cpu_act TAO-l" in out and "paper" in out
    rows = payload["results"]["rows"]
    names = {(r["dataset"], r["method"]) for r in rows}
    assert names == {("letter", "TAO-c"), ("letter", "TAO-l"), ("letter", "CART"), ("letter", "TAO-l forest"),
                     ("satimage", "TAO-c"), ("pendigits", "TAO-c"), ("cpu_act", "TAO-c"), ("cpu_act", "TAO-l")}
    for r in rows:
        assert ROW_FIELDS <= set(r), r["name"]
        assert r["metric"] in ("error_pct", "acc_pct", "rmse")
        assert isinstance(r["within_one_std_or_better"], bool)
        assert r["n_seeds"] == 1 and r["ours_mean"] >= 0 and r["paper_mean"] > 0
        assert PROTOCOL_FIELDS <= set(r["protocol_settings"]), r["name"]
        assert r["protocol"] == "reduced" and "quick" in r["protocol_note"]  # a quick run is never full
    timing = payload["results"]["timing_rows"]
    backends = {t["name"] for t in timing}
    assert {"letter s/iter sklearn-cpu", "letter s/iter torch-cpu-1thread"} <= backends
    for t in timing:
        assert t["ours_mean"] > 0 and t["ratio_to_sklearn"] > 0 and t["metric"] == "s_per_iter"
    assert next(t for t in timing if t["name"].endswith("sklearn-cpu"))["ratio_to_sklearn"] == 1.0


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_tao_solvers_benchmark_writes_gaps_and_ratios(tmp_path, monkeypatch, capsys):
    # falls back to sklearn's digits when Letter is absent, so it never needs the shared data
    out, payload = quick_run("tao_solvers", tmp_path, monkeypatch, capsys)
    assert "speedup" in out and "imodels TaoTreeClassifier" in out
    results = payload["results"]
    assert len(results["levels"]) >= 3
    for lv in results["levels"]:
        assert lv["groups"] >= 1 and lv["sklearn_s"] > 0 and lv["cd_s"] > 0
        assert lv["speedup_level_vs_liblinear"] == pytest.approx(lv["sklearn_s"] / lv["cd_s"])
        for key in ("rel_gap_cd_vs_best", "rel_gap_sklearn_vs_best"):
            assert 0.0 <= lv[key]["mean"] <= lv[key]["max"]
        assert lv["total_rel_gap_cd_minus_sklearn"] <= 1e-4  # the compiled solver reaches liblinear's objective
    (it,) = results["iterations"]
    assert it["sklearn_s_per_iter"] > 0 and it["cd_s_per_iter"] > 0
    assert it["speedup_iteration_vs_liblinear"] == pytest.approx(it["sklearn_s_per_iter"] / it["cd_s_per_iter"])
    models = {r["model"]: r for r in results["imodels"]}
    assert len(models) == 3 and all(0.0 < r["test_accuracy"] <= 1.0 and r["fit_s"] > 0 for r in models.values())


def test_tao_paper_runs_chosen_rows_and_merges_them_into_the_stored_results(tmp_path, monkeypatch):
    from benchmarks.paper import tao_paper

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    stored = {"results": {"rows": [{"name": "letter CART", "ours_mean": 1.0, **STAMP},
                                   {"name": "letter TAO-l forest", "ours_mean": 4.1, **STAMP},
                                   {"name": "letter TAO-c", "ours_mean": 9.0}],  # no stamp of its own
                          "timing_rows": [{"name": "old timing", **STAMP}], "cpu_act_tao_c_init_study": {"depth": 6}}}
    (tmp_path / "tao_paper.json").write_text(json.dumps(stored))
    rows, timing = tao_paper.merged_with_stored([{"name": "letter TAO-l forest", "ours_mean": 2.5},
                                                 {"name": "cpu_act TAO-l", "ours_mean": 2.4}], [])
    assert [(r["name"], r["ours_mean"]) for r in rows] == [("letter CART", 1.0), ("letter TAO-l forest", 2.5),
                                                            ("cpu_act TAO-l", 2.4)]
    assert rows[0] == {"name": "letter CART", "ours_mean": 1.0, **STAMP, "carried_over": True}
    assert "carried_over" not in rows[1] and timing == [{"name": "old timing", **STAMP, "carried_over": True}]
    assert tao_paper.selected_rows("letter TAO-l forest, timing") == {"letter TAO-l forest", "timing"}
    assert tao_paper.selected_rows(None) is None and tao_paper.selected_rows(" , ") is None
    with pytest.raises(ValueError, match="unknown rows"):
        tao_paper.run(quick=True, only={"letter TAO-x"})
    with pytest.raises(SystemExit):
        tao_paper.main(["--rows", "letter TAO-x"])


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_heavy_tailed_table_is_badly_conditioned_and_the_quick_benchmark_times_both_solvers(tmp_path, monkeypatch):
    import numpy as np

    from benchmarks.paper import tao_heavy_tails

    X, y = tao_heavy_tails.heavy_tailed_table()
    assert X.shape == (4600, 57) and set(np.unique(y)) == {0, 1} and 0.25 < y.mean() < 0.6
    z = (X - X.mean(0)) / X.std(0)
    assert np.abs(z).max() > 20  # rows tens of standard deviations out
    assert np.mean(X[:, :54] == 0) > 0.5  # zero-inflated counts
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["tao_heavy_tails", "--quick"]) == 0
    results = json.loads((tmp_path / "tao_heavy_tails.json").read_text())["results"]
    names = [r["name"] for r in results["rows"]]
    assert "TAO defaults, sklearn solver" in names and "TAO defaults, cd solver" in names
    assert all(r["fit_s"] > 0 and 0 < r["test_accuracy"] <= 1 for r in results["rows"])
    assert results["speedup_cd_vs_sklearn (TAO defaults)"] > 0


def test_a_merged_tao_paper_run_totals_every_rows_seconds_not_only_its_own(tmp_path, monkeypatch):
    from benchmarks.paper import tao_paper

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(tao_paper, "load_uci", lambda name: (None, None))
    fresh = {"name": "letter CART", "method": "CART", "metric": "error_pct", "ours_mean": 12.0, "ours_std": 0.1,
             "paper_mean": 13.0, "paper_std": 0.2, "within_one_std_or_better": True, "n_seeds": 5,
             "protocol": "full", "protocol_settings": {}}
    monkeypatch.setattr(tao_paper, "_row", lambda *args: dict(fresh))
    stored = {"name": "letter TAO-l forest", "method": "TAO-l forest", "metric": "error_pct", "ours_mean": 2.4,
              "ours_std": 0.2, "paper_mean": 2.09, "paper_std": 0.1, "within_one_std_or_better": False,
              "n_seeds": 5, "row_seconds": 3952.0, **STAMP,
              "protocol": "full",
              "protocol_settings": {"depth": 7, "l1_penalty": 0.3, "leaves": "linear", "iterations": 20, "trees": 30}}
    (tmp_path / "tao_paper.json").write_text(json.dumps({"results": {"rows": [stored], "timing_rows": []}}))
    results = tao_paper.run(quick=False, only={"letter CART"})["results"]
    (cart,) = [r for r in results["rows"] if r["name"] == "letter CART"]
    assert results["total_seconds"] == pytest.approx(3952.0 + cart["row_seconds"])
    assert results["last_run_seconds"] < 60


def test_quick_tao_high_dim_benchmark_times_both_solvers(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["tao_high_dim", "--quick"]) == 0
    (row,) = json.loads((tmp_path / "tao_high_dim.json").read_text())["results"]["rows"]
    assert row["cpu_s_cd"] > 0 and row["cpu_s_sklearn"] > 0 and row["one_thread"]
    assert row["cd_over_sklearn"] == pytest.approx(row["cpu_s_cd"] / row["cpu_s_sklearn"])
    assert row["objective_cd"] > 0 and row["objective_sklearn"] > 0


def test_the_forest_row_logs_its_tuning_and_each_seed_and_resumes(tmp_path, monkeypatch):
    import types

    import numpy as np

    from benchmarks.paper import tao_paper

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert tao_paper.SETTINGS[("letter", "TAO-l forest")]["max_iter"] == 40  # the top of the thesis's 20-40
    tunings, fits = [], []
    monkeypatch.setattr(tao_paper, "_tune",
                        lambda *a: tunings.append(1) or ((7, 0.3, "random"), [{"val": 3.1, "fit_s": 100.0}]))

    class FakeForest:
        def __init__(self, seed):
            self.seed = seed
            self.history_ = [{"iterations": 40}]
            self.trees_ = [types.SimpleNamespace(decision_nodes=lambda: np.arange(3))]

        def fit(self, X, y):
            fits.append(self.seed)
            if self.seed == stop_at[0]:
                raise RuntimeError("stopped")  # the run is stopped part-way
            return self

    monkeypatch.setattr(tao_paper, "_model", lambda dataset, method, depth, lam, max_iter, seed, n_trees, **kw:
                        FakeForest(seed))
    monkeypatch.setattr(tao_paper, "_metric", lambda metric, model, X, y: 2.0 + model.seed)
    data = (np.zeros((4, 2)), np.zeros((2, 2)), np.zeros(4), np.zeros(2))
    stop_at = [2]
    with pytest.raises(RuntimeError, match="stopped"):
        tao_paper._row("letter", "TAO-l forest", False, lambda seed: data, [0, 1, 2, 3, 4])
    assert tunings == [1] and fits == [0, 1, 2]
    stop_at = [None]
    row = tao_paper._row("letter", "TAO-l forest", False, lambda seed: data, [0, 1, 2, 3, 4])
    assert tunings == [1] and fits == [0, 1, 2, 2, 3, 4]  # neither the tuning nor seeds 0-1 ran again
    assert row["per_seed"] == [2.0, 3.0, 4.0, 5.0, 6.0] and row["protocol_settings"]["iterations"] == 40
    assert row["protocol_settings"]["l1_penalty"] == 0.3 and row["tuning_scores"] == [{"val": 3.1, "fit_s": 100.0}]
    assert row["protocol"] == "full" and "protocol_note" not in row and row["decision_nodes_mean"] == 3.0
    logs = list((tmp_path / "parts").glob("tao_paper_forest_*.jsonl"))
    assert len(logs) == 1 and len(logs[0].read_text().splitlines()) == 6  # the tuning and five seeds
    # the row's time is its logged fits' (the candidates' and every seed's), not only the last run's
    seeds_s = [json.loads(line)["result"][1] for line in logs[0].read_text().splitlines()[1:]]
    assert row["logged_seconds"] == pytest.approx(100.0 + sum(seeds_s))
