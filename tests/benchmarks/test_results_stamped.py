"""Every stored benchmark row says what produced it (commit, machine, date, command) and under
which protocol (full, reduced or skipped); write_results stamps the rows it writes and refuses a
row whose protocol is free text."""

import json
from pathlib import Path

import pytest

from benchmarks.common import (
    BACKFILLED,
    PROTOCOLS,
    RESULTS_DIR,
    STAMP_KEYS,
    command_line,
    merge_rows,
    result_rows,
    results_dir,
    row_problems,
    write_results,
)

RESULT_FILES = sorted(RESULTS_DIR.glob("*.json"))


def test_there_are_results_files():
    assert len(RESULT_FILES) >= 10


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: p.stem)
def test_every_stored_row_is_stamped_with_an_explicit_protocol(path):
    payload = json.loads(path.read_text())
    assert payload["commit"] and payload["command"] and payload["date"] and payload["machine"]
    for row in result_rows(payload["results"]):
        assert row_problems(row) == [], (path.name, row.get("name"))
        assert row["protocol"] in PROTOCOLS


def test_the_checker_names_what_a_bad_row_lacks():
    good = {"commit": "abc", "machine": {"cpus": 2}, "date": "2026-01-01T00:00:00+00:00",
            "command": "python -m benchmarks.report.run x", "protocol": "full"}
    assert row_problems(good) == []
    assert row_problems({**good, "commit": ""}) == ["no commit"]
    assert row_problems({k: v for k, v in good.items() if k != "command"}) == ["no command"]
    free_text = row_problems({**good, "protocol": "skipped: satimage absent"})
    assert len(free_text) == 1 and "not one of full, reduced, skipped" in free_text[0]
    assert len(row_problems({"protocol": {"reduced": "fewer seeds"}})) == len(STAMP_KEYS) + 1


def test_write_results_stamps_new_rows_and_keeps_the_stamp_of_carried_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    carried = {"name": "old", "commit": "0" * 40, "date": "2026-01-01T00:00:00+00:00", "machine": "old box",
               "command": "python -m benchmarks.report.run x", "stamp": BACKFILLED, "protocol": "reduced"}
    fresh = {"name": "new", "protocol": "skipped", "protocol_note": "satimage absent"}
    write_results("x", {"rows": [carried, fresh, {"name": "bare"}],
                        "device_timing": {"rows": [{"workload": "w"}]}}, quick=False)
    payload = json.loads((tmp_path / "x.json").read_text())
    rows = {r.get("name", r.get("workload")): r for r in result_rows(payload["results"])}
    assert rows["old"] == carried
    for key in STAMP_KEYS:
        assert rows["new"][key] == rows["bare"][key] == rows["w"][key] == payload[key]
    assert payload["command"] == command_line() and len(payload["commit"].split("+")[0]) == 40
    assert rows["new"]["protocol"] == "skipped" and rows["bare"]["protocol"] == rows["w"]["protocol"] == "full"

    merge_rows([{"name": "merged", "protocol": "full"}], tmp_path / "x.json")
    merged = json.loads((tmp_path / "x.json").read_text())["results"]["rows"][-1]
    assert merged["name"] == "merged" and all(merged[key] for key in STAMP_KEYS)


def test_a_quick_run_marks_rows_without_a_protocol_reduced(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    write_results("q", {"rows": [{"name": "a"}]}, quick=True)
    row = json.loads((tmp_path / "q.json").read_text())["results"]["rows"][0]
    assert row["protocol"] == "reduced" and "quick" in row["protocol_note"]


def test_a_row_beside_a_papers_number_must_say_its_protocol(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    with pytest.raises(ValueError, match="paper_mean but no protocol"):
        write_results("p", {"rows": [{"name": "r", "paper_mean": 0.9, "ours_mean": 0.91}]}, quick=False)
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("protocol", ["skipped: satimage absent", {"depth": 6}, None, "Full"])
def test_write_results_refuses_a_row_whose_protocol_is_not_one_of_the_three(tmp_path, monkeypatch, protocol):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    with pytest.raises(ValueError, match="free text goes to protocol_note"):
        write_results("bad", {"rows": [{"name": "r", "protocol": protocol}]}, quick=False)
    assert not (tmp_path / "bad.json").exists()


def test_a_quick_run_never_writes_over_the_stored_full_results(monkeypatch):
    monkeypatch.delenv("TREEVIZ_BENCH_RESULTS", raising=False)
    assert results_dir() == RESULTS_DIR and results_dir(quick=True) == RESULTS_DIR / "quick"
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", "/elsewhere")
    assert results_dir() == results_dir(quick=True) == Path("/elsewhere")
