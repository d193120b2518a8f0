"""The paper table reads every stored paper row and says which are reduced and which miss."""

import json

import pytest

from benchmarks.common import BACKFILLED
from benchmarks.report.paper_table import markdown, row_protocol, row_run, row_spreads, row_time, table_rows

RUN = {"commit": "c" * 40, "date": "2026-12-07T10:00:00+00:00", "command": "python -m benchmarks.report.run x"}
EARLIER = {"commit": "e" * 40, "date": "2026-11-01T10:00:00+00:00", "command": "python -m benchmarks.report.run x"}


def _write(folder, name, rows, machine):
    (folder / f"{name}.json").write_text(json.dumps({"benchmark": name, "machine": machine, **RUN,
                                                     "results": {"rows": rows}}))


def test_the_table_lists_every_row_with_its_protocol_time_machine_run_and_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    cpu = {"cpus": 2, "cuda": None}
    _write(tmp_path, "dgt", [
        {"name": "letter DGT", "ours_mean": 86.13, "ours_std": 1.01, "paper_mean": 86.13, "paper_std": 0.72,
         "protocol": "full", "protocol_settings": {"depth": 10}, "part_seconds": 6876.4,
         "within_one_std_or_better": True, "machine": cpu, **RUN},
        {"name": "abalone bandit", "ours_mean": 2.249, "ours_std": 0.031, "paper_mean": 2.16, "paper_std": 0.03,
         "protocol": "reduced", "protocol_note": "5 splits x 1 seed", "within_one_std_or_better": False,
         "machine": "NVIDIA H100", **EARLIER, "carried_over": True},
    ], cpu)
    _write(tmp_path, "laptao", [
        {"name": "digits 1% labels: LapTAO", "ours_mean": 80.0, "ours_std": 1.0, "paper_mean": None,
         "paper_std": None, "protocol": "full", "protocol_note": "digits: 1437 train; the word reduced here "
         "means nothing", "machine": {"cpus": 16, "cuda": "NVIDIA H200"}, **RUN},
        {"name": "satimage rows", "ours_mean": None, "ours_std": None, "paper_mean": 90.0, "paper_std": None,
         "protocol": "skipped", "protocol_note": "satimage absent", "machine": cpu, **EARLIER,
         "stamp": BACKFILLED},
    ], cpu)
    rows = table_rows()
    assert [r["row"] for r in rows] == ["letter DGT", "abalone bandit", "digits 1% labels: LapTAO", "satimage rows"]
    letter, bandit, digits, skipped = rows
    assert (letter["protocol"], letter["time"], letter["machine"], letter["within"]) == \
        ("full", "6876 s", "2-core CPU", True)
    assert (letter["run"], letter["origin"]) == ("cccccccccc 2026-12-07", "this run")
    assert letter["ours"] == "86.130 ± 1.010" and letter["paper"] == "86.130 ± 0.720"
    assert bandit["protocol"] == "reduced: 5 splits x 1 seed" and bandit["machine"] == "NVIDIA H100"
    assert bandit["origin"] == "carried over"
    assert digits["protocol"] == "full" and digits["paper"] == "—"  # the field decides, not a word in the note
    assert digits["machine"] == "NVIDIA H200" and digits["within"] is None
    assert (skipped["protocol"], skipped["origin"]) == ("skipped: satimage absent", "backfilled")
    text = markdown(rows)
    assert "| dgt | abalone bandit | 2.249 ± 0.031 | 2.160 ± 0.030 |" in text and "| **no** |" in text
    assert "| eeeeeeeeee 2026-11-01 (carried over) |" in text and "| cccccccccc 2026-12-07 |" in text
    assert text.endswith("4 rows: 1 reduced, 1 skipped, 1 outside the paper's spread; not from their file's own "
                         "run: 1 backfilled, 1 carried over.")


def test_a_row_without_an_explicit_protocol_or_stamp_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="not one of full, reduced, skipped"):
        row_protocol({**RUN, "machine": "m", "protocol": "skipped: satimage absent"})
    with pytest.raises(ValueError, match="no commit"):
        row_protocol({"protocol": "full", "machine": "m", "date": RUN["date"], "command": RUN["command"]})


def test_a_row_stamped_apart_from_its_file_says_whether_it_is_older_or_newer():
    payload = {**RUN}
    assert row_run({**EARLIER}, payload)[1] == "carried over"
    later = {"commit": "f" * 40 + "+dirty", "date": "2026-12-08T00:00:00+00:00"}
    assert row_run(later, payload) == ("ffffffffff+dirty 2026-12-08", "added later")


def test_a_search_row_counts_its_reruns_and_a_missing_time_says_so():
    assert row_time({"search_s": 5026.2, "rerun_s": 114.0}) == "5026 s + 114 s reruns"
    assert row_time({"fit_s_mean": 5.81}) == "6 s per fit"
    assert row_time({"ours_mean": 1.0}) == "—"
    assert row_time({"fit_seconds": [2000.0, 2200.0, 2400.0]}) == "2200 s per fit (3 fits)"
    assert row_time({"fit_seconds": [], "fit_s_mean": 4.0}) == "4 s per fit"
    assert row_time({"estimated_seconds": 21604.4, "estimated_from": {"timed": 200, "of": 12500}}) == \
        "≈ 21604 s (estimated: 200 of 12500 tasks timed)"
    assert row_time({"part_seconds": 7.0, "estimated_seconds": 9.0}) == "7 s"  # a measured total comes first


def test_a_row_compared_on_standard_errors_shows_ours_and_the_papers_as_se():
    # Skinny Trees' Table 1 gives mean ± SE over 25 simulations: our SD beside it would mislead
    row = {"ours_mean": 8.6, "ours_std": 2.263, "ours_se": 0.462, "paper_mean": 8, "paper_std": 0}
    assert row_spreads(row) == ("8.600 ± 0.462 SE", "8.000 ± 0.000 SE")
    # an anchor whose spread is the standard deviation of a few reference runs says so
    assert row_spreads({**row, "paper_spread": "SD"})[1] == "8.000 ± 0.000 SD"
    del row["ours_se"]
    assert row_spreads(row) == ("8.600 ± 2.263", "8.000 ± 0.000")


def test_each_row_names_the_machine_it_ran_on_not_its_files(tmp_path, monkeypatch):
    """A timing-only GPU run rewrites the file's machine; the rows it kept ran on the earlier one."""
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    (tmp_path / "skinny.json").write_text(json.dumps({
        "benchmark": "skinny", "machine": {"cpus": 16, "cuda": "NVIDIA H200"}, **RUN,
        "results": {"device_timing": {"rows": []}, "rows": [
            {"name": "toy accuracy", "ours_mean": 0.977, "ours_std": 0.004, "paper_mean": 0.982, "paper_std": 0.01,
             "protocol": "full", **EARLIER, "machine": {"cpus": 2, "cuda": None}},
            {"name": "Table 1 MSE", "ours_mean": 0.263, "ours_std": 0.009, "paper_mean": 0.26, "paper_std": 0.0,
             "protocol": "full", **EARLIER, "machine": "4-core box"},
        ]}}))
    toy, table1 = table_rows()
    assert toy["machine"] == "2-core CPU" and table1["machine"] == "4-core box"
