"""Benchmark parts run apart and merged into a stored results file: the Skinny Trees search
continued from a trial log, and one data set of the embeddings benchmark rerun alone."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.common import PartLog, memo, retime, run_keyed, same_result
from benchmarks.paper import embeddings, skinny, skinny_satimage, skinny_table1
from treeviz.services.experiments.search import Trial


class FakeTrials:
    """Stands in for :func:`run_trials`: each trial's validation AUC is its index / 100."""

    def __init__(self, fail_on_call: int | None = None):
        self.calls, self.fail_on_call = [], fail_on_call

    def __call__(self, family_key, task, prepared, settings, *, start=0, **kw):
        self.calls.append((start, len(settings)))
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise RuntimeError("stopped")  # the run is stopped part-way
        return [Trial(start + i, dict(p), {"val_auc": (start + i) / 100, "n_features": 3}) for i, p in
                enumerate(settings)][::-1]  # completion order, not index order


def test_a_logged_search_runs_only_the_trials_its_log_lacks_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    log = PartLog("trials")
    log.add([{"index": 5, "params": {"a": 5}, "metrics": {"val_auc": 0.5}, "error": None}])
    assert log.path == tmp_path / "parts" / "trials.jsonl"
    settings = [{"a": i} for i in range(4, 10)]
    stopped = FakeTrials(fail_on_call=2)
    monkeypatch.setattr(skinny_satimage, "run_trials", stopped)
    with pytest.raises(RuntimeError, match="stopped"):
        skinny_satimage.run_logged(None, settings, 4, log, chunk=2)
    assert stopped.calls == [(4, 1), (6, 2)]  # 5 was logged; a chunk never spans a gap
    assert sorted(skinny_satimage.logged_trials(log)) == [4, 5]  # the finished chunk was kept
    resumed = FakeTrials()
    monkeypatch.setattr(skinny_satimage, "run_trials", resumed)
    trials = skinny_satimage.run_logged(None, settings, 4, log, chunk=2)
    assert resumed.calls == [(6, 2), (8, 2)]
    assert [t.index for t in trials] == list(range(4, 10))
    assert [t.params["a"] for t in trials] == list(range(4, 10))
    assert trials[3].metrics == {"val_auc": 0.07, "n_features": 3}
    assert skinny_satimage.run_logged(None, settings, 4, log, chunk=2) == trials and resumed.calls[-1] == (8, 2)


def test_one_embedding_data_set_rerun_replaces_only_its_rows_and_history(tmp_path, monkeypatch):
    stored = {"benchmark": "embeddings", "quick": False, "results": {
        "rows": [{"name": "digits t-SNE: UMAP", "ours_mean": 1.0}, {"name": "mnist5k t-SNE: UMAP", "ours_mean": 2.0}],
        "history": [{"dataset": "digits", "step": 1}, {"dataset": "mnist5k", "step": 1},
                    {"dataset": "mnist5k", "step": 2}]}}
    (tmp_path / "embeddings.json").write_text(json.dumps(stored))
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    X, y = np.zeros((4, 2)), np.arange(4)
    monkeypatch.setattr(embeddings, "_datasets", lambda quick: [("digits", X, y), ("mnist5k", X, y)])
    seen = []

    def fake_rows(name, X_, y_, quick):
        seen.append((name, quick))
        return [{"name": f"{name} t-SNE: UMAP", "ours_mean": 3.0}], [{"dataset": name, "step": s} for s in (1, 2, 3)]

    monkeypatch.setattr(embeddings, "_dataset_rows", fake_rows)
    rows = embeddings.dataset_run("mnist5k")
    assert seen == [("mnist5k", False)] and rows[0]["ours_mean"] == 3.0
    results = json.loads((tmp_path / "embeddings.json").read_text())["results"]
    assert {r["name"]: r["ours_mean"] for r in results["rows"]} == {"digits t-SNE: UMAP": 1.0,
                                                                     "mnist5k t-SNE: UMAP": 3.0}
    assert [(h["dataset"], h["step"]) for h in results["history"]] == [("digits", 1), ("mnist5k", 1),
                                                                        ("mnist5k", 2), ("mnist5k", 3)]
    with pytest.raises(SystemExit, match="no data set 'iris'"):
        embeddings.dataset_run("iris")


def test_every_benchmark_data_set_runs_the_theses_schedule():
    for name, params in embeddings.SETTINGS.items():
        assert all(params[k] >= embeddings.FULL[k] for k in ("n_mu", "z_iter", "tao_iter")), name
        assert params["free_iter"] >= 1000, name


def _serial(n_jobs=None):
    return lambda calls: [f(*a, **k) for f, a, k in calls]


def test_the_table4_search_draws_the_papers_s53_space_and_resumes_from_its_log(tmp_path, monkeypatch):
    from treeviz.services.data import PrepConfig, load_dataset, prepare

    name = "satimage Table 4, 25% budget: Skinny Trees"
    plan = skinny_satimage.SEARCHED[name]
    assert plan.trials == 2000 and plan.fixed == {"lambda0": 100.0, "schedule": "dense_to_sparse"}
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    (tmp_path / "skinny.json").write_text(json.dumps({"benchmark": "skinny", "results": {"rows": []}}))
    monkeypatch.setattr(skinny_satimage, "satimage", lambda: prepare(load_dataset("breast_cancer"), PrepConfig(seed=0)))
    fake = FakeTrials()
    monkeypatch.setattr(skinny_satimage, "run_trials", fake)
    monkeypatch.setattr(skinny_satimage, "rerun", lambda params, prepared, seed: (0.9, 3))
    monkeypatch.setattr(skinny_satimage, "Parallel", _serial)
    short = skinny_satimage.logged_search(name, total=30, chunk=50, reruns=2)
    assert fake.calls == [(0, 30)] and short["n_trials"] == 30
    assert short["protocol"] == "reduced" and "S5.3" in short["protocol_note"]
    assert "reduced: the paper used 2000 random trials" in short["protocol_note"]
    longer = skinny_satimage.logged_search(name, total=60, chunk=50, reruns=2)
    assert fake.calls[1:] == [(30, 30)]  # the first 30 trials come from the log
    assert longer["n_trials"] == 60 and longer["chosen"] == {k: v for k, v in
                                                             skinny_satimage.search_log(name).records()[-1]["params"].items()
                                                             if k != "random_state"}
    drawn = [r["params"] for r in skinny_satimage.search_log(name).records()]
    assert all(d["lambda0"] == 100.0 and d["schedule"] == "dense_to_sparse" for d in drawn)  # gamma = 100/p
    assert all(1 <= d["n_trees"] <= 100 and 1 <= d["depth"] <= 5 and d["batch_size"] in (16, 64, 256, 1024)
               and 5 <= d["max_epochs"] <= 500 and d["max_epochs"] % 5 == 0 for d in drawn)
    assert all(1e-4 <= d["temperature"] <= 0.1 and 1e-3 <= d["lambda2"] <= 1.0 and 1e-2 <= d["learning_rate"] <= 10
               for d in drawn)
    assert max(d["n_trees"] for d in drawn) > 50 and max(d["learning_rate"] for d in drawn) > 1.0  # beyond treeviz's


def _square(x):
    return x * x


def test_a_logged_grid_of_fits_runs_only_the_keys_its_log_lacks(tmp_path, monkeypatch):
    from joblib import delayed


    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    log = PartLog("grid")
    log.add([{"key": "k1", "result": 100}])  # not 1: proves k1 is read back, not recomputed
    tasks = [(f"k{i}", delayed(_square)(i)) for i in range(4)]
    assert run_keyed(tasks, log) == {"k0": 0, "k1": 100, "k2": 4, "k3": 9}
    assert sorted(r["key"] for r in log.records()) == ["k0", "k1", "k2", "k3"]
    assert run_keyed(tasks, None) == {"k0": 0, "k1": 1, "k2": 4, "k3": 9}  # no log: everything runs
    # each task run here logs its time; k1, logged without one, leaves the sum unknown
    assert all(r["seconds"] >= 0.0 for r in log.records() if r["key"] != "k1")
    assert log.seconds(["k0", "k2", "k3"]) == sum(r["seconds"] for r in log.records() if r["key"] != "k1")
    assert log.seconds(["k0", "k1"]) is None and log.seconds(["k9"]) is None and log.seconds([]) is None


def _timed_square(x):
    return {"value": x * x, "seconds": 0.25}


def _by_number(x):
    return {x: (x, x * x)}  # JSON makes the key a string and the tuple a list


def test_retime_compares_a_rerun_as_the_log_holds_it(tmp_path, monkeypatch):
    from joblib import delayed

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    log = PartLog("json")
    run_keyed([("a", delayed(_by_number)(3))], log)
    assert log.records()[0]["result"] == {"3": [3, 9]}
    log.add([{"key": "a", "result": {"3": [3, 9]}}])  # as an older run, without a time
    assert retime([("a", delayed(_by_number)(3))], log, n_jobs=1)["differ"] == []


def test_retime_times_untimed_tasks_that_reproduce_their_logged_result(tmp_path, monkeypatch):
    from joblib import delayed

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    log = PartLog("old")
    # k0-k3 logged by an older run without times; k2's logged result is not what the code gives now
    log.add([{"key": f"k{i}", "result": 99 if i == 2 else i * i} for i in range(4)])
    log.add([{"key": "k4", "result": 16, "seconds": 3.0}])
    tasks = [(f"k{i}", delayed(_square)(i)) for i in range(5)]
    keys = [key for key, _ in tasks]
    assert log.seconds(keys) is None
    assert log.estimate(keys) == {"seconds": 15.0, "timed": 1, "of": 5, "se_seconds": None}  # one time: no spread
    got = retime(tasks, log, n_jobs=1)
    assert got["untimed"] == 4 and got["retimed"] == 3 and got["differ"] == ["k2"]
    assert sorted(got["seconds"]) == ["k0", "k1", "k3"]
    times = log.times()
    assert times["k2"] is None and times["k4"] == 3.0 and all(times[k] >= 0.0 for k in ("k0", "k1", "k3"))
    # the logged results stand; nothing was re-run twice
    assert run_keyed(tasks, log) == {"k0": 0, "k1": 1, "k2": 99, "k3": 9, "k4": 16}
    assert retime(tasks, log, n_jobs=1)["retimed"] == 0  # k2 still differs; the rest are timed
    estimate = log.estimate(keys)
    known = [times[k] for k in ("k0", "k1", "k3", "k4")]
    assert estimate["timed"] == 4 and estimate["seconds"] == pytest.approx(sum(known) + sum(known) / 4)
    assert estimate["se_seconds"] == pytest.approx(np.std(known, ddof=1) / 2)  # one untimed key, 4 timed
    assert log.estimate(["k0", "missing"]) is None and log.estimate([]) is None


def test_retime_can_time_a_random_sample_and_a_task_can_time_itself(tmp_path, monkeypatch):
    from joblib import delayed

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    log = PartLog("sample")
    log.add([{"key": f"k{i}", "result": i * i} for i in range(10)])
    tasks = [(f"k{i}", delayed(_square)(i)) for i in range(10)]
    first = retime(tasks, log, sample=3, seed=1, n_jobs=1)
    assert first["untimed"] == 10 and first["retimed"] == 3
    assert retime(tasks, log, sample=3, seed=1, n_jobs=1)["untimed"] == 7  # the timed ones are not drawn again
    assert log.estimate([key for key, _ in tasks])["timed"] == 6
    own = PartLog("own")
    own.add([{"key": "a", "result": {"value": 1, "seconds": 0.25}}])
    assert own.times() == {"a": 0.25} and own.seconds(["a"]) == 0.25  # a fit that timed itself
    # ... and a re-run compares everything but needs no time of its own
    assert retime([("a", delayed(_timed_square)(1))], own, n_jobs=1)["untimed"] == 0


def test_same_result_compares_numbers_to_a_relative_tolerance_and_the_rest_exactly():
    assert same_result({"a": [1.0, 2.0], "b": "x"}, {"a": [1.0, 2.0 + 1e-12], "b": "x"})
    assert not same_result({"a": [1.0, 2.0]}, {"a": [1.0, 2.001]})
    assert not same_result({"a": 1.0}, {"a": 1.0, "b": 2.0}) and not same_result([1, 2], [1, 2, 3])
    assert same_result(float("inf"), float("inf")) and same_result(float("nan"), float("nan"))
    assert not same_result(float("inf"), 1e308) and not same_result("x", "y") and same_result(0.0, 0)
    assert not same_result(True, 1.0)  # a flag is not a number


def test_a_changed_grid_or_schedule_starts_a_new_fit_log(tmp_path, monkeypatch):
    from benchmarks.paper import laptao

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    base = laptao._fit_log("MNIST 5k", laptao.GRID, laptao.THESIS_LAPTAO, 5).path
    assert base.parent == tmp_path / "parts" and base.name.startswith("laptao_mnist5k_")
    assert base == laptao._fit_log("MNIST 5k", dict(laptao.GRID), dict(laptao.THESIS_LAPTAO), 5).path
    for other in (laptao._fit_log("MNIST 5k", {**laptao.GRID, "depths": (4, 5)}, laptao.THESIS_LAPTAO, 5),
                  laptao._fit_log("MNIST 5k", laptao.GRID, {**laptao.THESIS_LAPTAO, "n_mu": 10}, 5),
                  laptao._fit_log("MNIST 5k", laptao.GRID, laptao.THESIS_LAPTAO, 2),
                  laptao._fit_log("digits", laptao.GRID, laptao.THESIS_LAPTAO, 5)):
        assert other.path != base


def test_table1_trials_draw_the_papers_synthetic_space():
    rng = np.random.default_rng([200, 1])
    drawn = [skinny_table1.table1_params(rng) for _ in range(400)]
    assert {d["depth"] for d in drawn} == {1, 2, 3, 4, 5}
    assert {d["batch_size"] for d in drawn} == {16 * b for b in range(1, 9)}
    assert min(d["n_trees"] for d in drawn) == 1 and max(d["n_trees"] for d in drawn) == 50
    assert all(5 <= d["max_epochs"] <= 500 for d in drawn)
    for key, low, high in (("temperature", 1e-4, 0.1), ("lambda2", 1e-2, 1e2), ("learning_rate", 1e-3, 1e-1)):
        values = np.log10([d[key] for d in drawn])
        assert np.log10(low) - 0.01 <= values.min() and values.max() <= np.log10(high) + 0.01
        assert np.median(values) == pytest.approx((np.log10(low) + np.log10(high)) / 2, abs=0.3)  # log-uniform
    again = np.random.default_rng([200, 1])
    assert [skinny_table1.table1_params(again) for _ in range(3)] == drawn[:3]  # each simulation's draws are fixed


def test_the_single_tree_search_draws_the_papers_space_without_refinements(tmp_path, monkeypatch):
    from treeviz.services.data import PrepConfig, load_dataset, prepare

    name = "satimage Table 2, 50% budget: single Skinny Tree"
    plan = skinny_satimage.SEARCHED[name]
    assert plan.trials == 500 and plan.fixed == {"n_trees": 1, "schedule": "fixed"}
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    (tmp_path / "skinny.json").write_text(json.dumps({"benchmark": "skinny", "results": {"rows": []}}))
    monkeypatch.setattr(skinny_satimage, "satimage", lambda: prepare(load_dataset("breast_cancer"), PrepConfig(seed=0)))
    fake = FakeTrials()
    monkeypatch.setattr(skinny_satimage, "run_trials", fake)
    monkeypatch.setattr(skinny_satimage, "rerun", lambda params, prepared, seed: (0.8, 2))
    monkeypatch.setattr(skinny_satimage, "Parallel", _serial)
    row = skinny_satimage.logged_search(name, total=40, chunk=50, reruns=2)
    assert fake.calls == [(0, 40)]  # no refinement trials
    assert row["n_trials"] == 40 and row["chosen"]["n_trees"] == 1
    assert "40 random trials," in row["protocol_note"] and "lowered" not in row["protocol_note"]
    assert row["protocol"] == "reduced" and "reduced: the paper used 500 random trials" in row["protocol_note"]
    drawn = [r["params"] for r in skinny_satimage.search_log(name).records()]
    assert all(d["schedule"] == "fixed" and 1 <= d["depth"] <= 5 and d["batch_size"] % 64 == 0 for d in drawn)
    assert all(1e-3 * 36 <= d["lambda0"] <= 10 * 36 and 5 <= d["max_epochs"] <= 1000 for d in drawn)
    assert max(d["batch_size"] for d in drawn) > 256  # batch 64b, b up to 64


def test_table1_runs_and_writes_only_the_sizes_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    rows = skinny_table1.synthetic_rows(True, sizes=(200,))
    assert [r["name"] for r in rows] == ["Table 1 N=200: test MSE", "Table 1 N=200: features",
                                         "Table 1 N=200: support F1"]
    assert all(r["protocol"] == "reduced" and r["machine"]["cuda"] is None for r in rows)
    assert rows[0]["paper_mean"] == 0.31 and len(rows[0]["values"]) == 1
    assert not (tmp_path / "parts").exists()  # --quick logs nothing


def test_table1_time_sums_the_logged_times_or_estimates_them_from_a_retimed_sample(tmp_path, monkeypatch):
    from joblib import delayed

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    log = PartLog("skinny_table1")
    log.add([{"key": f"k{i}", "result": i * i} for i in range(6)])  # an older run: no times
    tasks = [(f"k{i}", delayed(_square)(i)) for i in range(6)]
    assert skinny_table1._table1_time(log, tasks, 0) == {}  # nothing timed, nothing asked: no time at all
    sampled = skinny_table1._table1_time(log, tasks, 2)
    assert sampled["estimated_from"]["timed"] == 2 and sampled["estimated_from"]["of"] == 6
    assert sampled["estimated_seconds"] == pytest.approx(3 * sum(log.times()[k] or 0.0 for k in log.times()))
    log.add([{"key": key, "result": int(key[1:]) ** 2, "seconds": 1.5} for key, _ in tasks])
    assert skinny_table1._table1_time(log, tasks, 2) == {"part_seconds": 9.0}  # all timed: the sum, nothing re-run


def test_a_full_run_keeps_the_searched_rows_run_apart_only_with_their_own_stamp(tmp_path, monkeypatch):
    from treeviz.services.data import PrepConfig, load_dataset, prepare

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    first, second = skinny_satimage.SEARCHED
    stamp = {"commit": "0" * 40, "date": "2026-01-01T00:00:00+00:00", "command": "python -m benchmarks.skinny --table4"}
    stored = [{"name": first, "ours_mean": 90.0, "protocol": "full", **stamp},
              {"name": second, "ours_mean": 91.0, "protocol": "full"}]  # written before rows were stamped
    (tmp_path / "skinny.json").write_text(json.dumps({"benchmark": "skinny", "quick": False,
                                                      "results": {"rows": stored}}))
    monkeypatch.setattr(skinny, "shared_data_dir", lambda: tmp_path)
    (tmp_path / "uci").mkdir()
    (tmp_path / "uci" / "satimage.csv.gz").write_bytes(b"")
    monkeypatch.setattr(skinny, "satimage", lambda: prepare(load_dataset("breast_cancer"), PrepConfig(seed=0)))
    monkeypatch.setattr(skinny, "toolkit_rows", lambda prepared, quick: [])
    searched = []
    monkeypatch.setattr(skinny, "logged_search", lambda name, **kw: searched.append(name) or {"name": name})
    assert skinny.satimage_rows(False) == [{**stored[0], "carried_over": True}, {"name": second}]
    assert searched == [second]  # the row without a stamp of its own is searched again, not carried


def test_a_whole_run_writes_what_it_measured_and_carries_only_stamped_studies(tmp_path, monkeypatch, capsys):
    """The studies and the device section of the previous file stay only with their own stamp, marked
    carried over; the rows are this run's."""
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    for part in ("toy_rows", "speed_rows", "compact_rows", "synthetic_rows", "satimage_rows"):
        monkeypatch.setattr(skinny, part, lambda quick, part=part: [
            {"name": part, "metric": "AUC", "ours_mean": 1.0, "paper_mean": None, "paper_std": None,
             "protocol": "full"}])
    stamp = {"commit": "0" * 40, "date": "2026-01-01T00:00:00+00:00", "command": "python -m benchmarks.skinny"}
    (tmp_path / "skinny.json").write_text(json.dumps({"benchmark": "skinny", "quick": False, "results": {
        "rows": [{"name": "an old row", "protocol": "full", **stamp}],
        "satimage_split_study": {"per_split": [1.0], **stamp}, "satimage_selection_study": {"candidates": []},
        "device_timing": {"rows": [{"workload": "w"}]}}}))
    results = skinny.run()["results"]
    assert [r["name"] for r in results["rows"]] == ["toy_rows", "speed_rows", "compact_rows", "synthetic_rows",
                                                    "satimage_rows"]
    assert results["satimage_split_study"] == {"per_split": [1.0], **stamp, "carried_over": True}
    assert "satimage_selection_study" not in results and "device_timing" not in results
    out = capsys.readouterr().out
    assert "satimage_selection_study" in out and "device_timing" in out  # said to be left out


def test_memo_computes_once_per_arguments_and_keeps_the_last_few():
    from benchmarks import common

    calls = []

    def draw(n):
        calls.append(n)
        return [n]

    common._MEMO.clear()
    first = memo(draw, 1)
    assert memo(draw, 1) is first and calls == [1]  # the second call reads the kept result
    for n in range(2, 2 + common._MEMO_SIZE):
        memo(draw, n)
    assert len(common._MEMO) == common._MEMO_SIZE
    memo(draw, 1)  # the oldest was dropped: drawn again
    assert calls == [1, *range(2, 2 + common._MEMO_SIZE), 1]
    common._MEMO.clear()
