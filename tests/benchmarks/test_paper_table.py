"""The paper table reads every stored paper row and says which are reduced and which miss."""

import json

from benchmarks.paper_table import markdown, row_protocol, row_spreads, row_time, table_rows


def _write(folder, name, rows, machine):
    (folder / f"{name}.json").write_text(json.dumps({"benchmark": name, "machine": machine,
                                                     "results": {"rows": rows}}))


def test_the_table_lists_every_row_with_its_protocol_time_machine_and_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    _write(tmp_path, "dgt", [
        {"name": "letter DGT", "ours_mean": 86.13, "ours_std": 1.01, "paper_mean": 86.13, "paper_std": 0.72,
         "protocol": {"depth": 10}, "part_seconds": 6876.4, "within_one_std_or_better": True},
        {"name": "abalone bandit", "ours_mean": 2.249, "ours_std": 0.031, "paper_mean": 2.16, "paper_std": 0.03,
         "protocol": {"reduced": "5 splits x 1 seed"}, "within_one_std_or_better": False,
         "machine": "NVIDIA H100"},
    ], {"cpus": 2, "cuda": None})
    _write(tmp_path, "laptao", [
        {"name": "digits 1% labels: LapTAO", "ours_mean": 80.0, "ours_std": 1.0, "paper_mean": None,
         "paper_std": None, "protocol": "digits: 1437 train; reduced: the thesis uses 20 mu steps; 5 subsets"},
    ], {"cpus": 16, "cuda": "NVIDIA H200"})
    rows = table_rows()
    assert [r["row"] for r in rows] == ["letter DGT", "abalone bandit", "digits 1% labels: LapTAO"]
    letter, bandit, digits = rows
    assert (letter["protocol"], letter["time"], letter["machine"], letter["within"]) == \
        ("full", "6876 s", "2-core CPU", True)
    assert letter["ours"] == "86.130 ± 1.010" and letter["paper"] == "86.130 ± 0.720"
    assert bandit["protocol"] == "reduced: 5 splits x 1 seed" and bandit["machine"] == "NVIDIA H100"
    assert digits["protocol"] == "reduced: the thesis uses 20 mu steps" and digits["paper"] == "—"
    assert digits["machine"] == "NVIDIA H200" and digits["within"] is None
    text = markdown(rows)
    assert "| dgt | abalone bandit | 2.249 ± 0.031 | 2.160 ± 0.030 |" in text and "| **no** |" in text
    assert text.endswith("3 rows: 2 reduced, 1 outside the paper's spread.")


def test_a_search_row_counts_its_reruns_and_a_missing_time_says_so():
    assert row_time({"search_s": 5026.2, "rerun_s": 114.0}) == "5026 s + 114 s reruns"
    assert row_time({"fit_s_mean": 5.81}) == "6 s per fit"
    assert row_time({"ours_mean": 1.0}) == "—"
    assert row_time({"fit_seconds": [2000.0, 2200.0, 2400.0]}) == "2200 s per fit (3 fits)"
    assert row_time({"fit_seconds": [], "fit_s_mean": 4.0}) == "4 s per fit"
    assert row_time({"estimated_seconds": 21604.4, "estimated_from": {"timed": 200, "of": 12500}}) == \
        "≈ 21604 s (estimated: 200 of 12500 tasks timed)"
    assert row_time({"part_seconds": 7.0, "estimated_seconds": 9.0}) == "7 s"  # a measured total comes first
    assert row_protocol({"protocol": "full size, 10 seeds"}) == "full"


def test_a_row_compared_on_standard_errors_shows_ours_and_the_papers_as_se():
    # Skinny Trees' Table 1 gives mean ± SE over 25 simulations: our SD beside it would mislead
    row = {"ours_mean": 8.6, "ours_std": 2.263, "ours_se": 0.462, "paper_mean": 8, "paper_std": 0}
    assert row_spreads(row) == ("8.600 ± 0.462 SE", "8.000 ± 0.000 SE")
    # an anchor whose spread is the standard deviation of a few reference runs says so
    assert row_spreads({**row, "paper_spread": "SD"})[1] == "8.000 ± 0.000 SD"
    del row["ours_se"]
    assert row_spreads(row) == ("8.600 ± 2.263", "8.000 ± 0.000")


def test_rows_kept_by_a_device_run_name_the_machine_they_ran_on(tmp_path, monkeypatch):
    """A timing-only GPU run rewrites the file's machine; the rows it kept ran on the earlier one."""
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    cpu = {"cpus": 2, "cuda": None}
    (tmp_path / "skinny.json").write_text(json.dumps({
        "benchmark": "skinny", "machine": {"cpus": 16, "cuda": "NVIDIA H200"},
        "results": {"machine_of_cpu_results": cpu, "device_timing": {"rows": []}, "rows": [
            {"name": "toy accuracy", "ours_mean": 0.977, "ours_std": 0.004, "paper_mean": 0.982, "paper_std": 0.01},
            {"name": "Table 1 MSE", "ours_mean": 0.263, "ours_std": 0.009, "paper_mean": 0.26, "paper_std": 0.0,
             "machine": {"cpus": 4, "cuda": None}},
        ]}}))
    toy, table1 = table_rows()
    assert toy["machine"] == "2-core CPU"
    assert table1["machine"] == "4-core CPU"
