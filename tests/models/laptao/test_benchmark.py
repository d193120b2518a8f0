"""The LapTAO benchmark runs end to end in --quick mode and writes every row with the fields a
comparison needs (numbers are not asserted: they belong in the full benchmark)."""

import json

import pytest

from benchmarks.common import merge_rows
from benchmarks.paper.laptao import CLAIM_SUFFIX, METHODS, _first_best, _kept_thesis_claim_rows, thesis_claim
from tests.benchmarks.helpers import quick_run

FIELDS = {"name", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std", "protocol"}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_laptao_benchmark_writes_rows(tmp_path, monkeypatch, capsys):
    out, payload = quick_run("laptao", tmp_path, monkeypatch, capsys)
    assert "digits 5% labels: LapTAO" in out
    rows = {r["name"]: r for r in payload["results"]["rows"]}
    assert all(FIELDS <= set(r) for r in rows.values())
    for pct in ("1%", "5%", "20%"):
        for method in METHODS:
            row = rows[f"digits {pct} labels: {method}"]
            assert 0.0 <= row["ours_mean"] <= 100.0 and len(row["values"]) == len(row["n_labelled"]) >= 1
            assert row["protocol"] == "reduced" and "quick run" in row["protocol_note"]
    assert min(rows["digits 1% labels: LapTAO"]["n_labelled"]) >= 10  # at least one label per class
    # digits runs the thesis's protocol: every method's setting is chosen on the cross-validation set
    assert "cross-validation set" in rows["digits 5% labels: LapTAO"]["protocol_note"]
    for method, keys in (("LapTAO", {"depth", "alpha"}), ("supervised TAO (labelled only)", {"depth", "alpha"}),
                         ("label spreading (kNN)", {"n_neighbors"}),
                         ("self-training (decision tree)", {"depth", "threshold"})):
        for chosen in rows[f"digits 20% labels: {method}"]["chosen"]:
            assert keys | {"cv_accuracy"} <= set(chosen) and 0.0 <= chosen["cv_accuracy"] <= 100.0
    ceiling = rows["digits: TAO on every training label (oblique-all)"]
    assert len(ceiling["grid"]) == 2 and ceiling["chosen"]["cv_accuracy"] == max(g["cv"] for g in ceiling["grid"])
    assert ceiling["ours_mean"] == next(g["test"] for g in ceiling["grid"] if g["cv"] == max(
        h["cv"] for h in ceiling["grid"]))
    assert all(r["part_seconds"] > 0 for r in rows.values() if r["name"].startswith("digits"))
    ordering = rows["digits: ordering, LapTAO best among semi-supervised tree methods"]
    assert isinstance(ordering["laptao_best_among_tree_methods"], bool)
    assert isinstance(rows["digits: convergence as labels grow (LapTAO at 20% vs oblique-all)"]["monotone"], bool)
    reference = rows["digits 5% labels: LapTAO vs linear surrogate"]
    assert reference["paper_mean"] == 86.2 and "surrogate" in reference["protocol_note"]
    assert isinstance(reference["meets_reference"], bool)
    # MNIST rows when the shared data is there, a skip row with its reason when it is not
    assert "MNIST 5k 20% labels: LapTAO" in rows or rows["MNIST 5k rows"]["protocol"] == "skipped"


def test_ties_on_the_cross_validation_set_go_to_the_first_and_simplest_setting():
    assert _first_best([80.0, 93.3, 93.3, 86.7]) == 1
    assert _first_best([50.0]) == 0


def test_merge_rows_replaces_rows_of_the_same_name_in_place_and_keeps_the_rest(tmp_path):
    path = tmp_path / "laptao.json"
    path.write_text(json.dumps({"benchmark": "laptao", "results": {"rows": [
        {"name": "a", "ours_mean": 1.0}, {"name": "b", "ours_mean": 2.0}, {"name": "d", "ours_mean": 5.0}]}}))
    merge_rows([{"name": "b", "ours_mean": 3.0}, {"name": "c", "ours_mean": 4.0}], path)
    payload = json.loads(path.read_text())
    assert payload["benchmark"] == "laptao"
    # the table keeps its order: b where it stood, the new c at the end
    assert [(r["name"], r["ours_mean"]) for r in payload["results"]["rows"]] == [
        ("a", 1.0), ("b", 3.0), ("d", 5.0), ("c", 4.0)]


def test_the_thesis_claim_says_so_when_mnist_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_SHARED_DATA", str(tmp_path))
    (row,) = thesis_claim()
    assert row["ours_mean"] is None and row["paper_mean"] == 0.0
    assert row["protocol"] == "skipped" and "absent" in row["protocol_note"]


def test_a_rerun_keeps_the_thesis_claim_rows_computed_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert _kept_thesis_claim_rows() == []  # no previous file
    stamp = {"commit": "a" * 40, "date": "2026-12-01T00:00:00+00:00", "command": "python -m benchmarks.paper.laptao"}
    claim = {"name": f"MNIST 5k 20% labels: LapTAO{CLAIM_SUFFIX}", "ours_mean": 80.0, **stamp}
    other = {"name": "digits 1% labels: LapTAO", "ours_mean": 83.0, **stamp}
    for quick, expected in ((False, [{**claim, "carried_over": True}]), (True, [])):
        (tmp_path / "laptao.json").write_text(json.dumps({"benchmark": "laptao", "quick": quick,
                                                           "results": {"rows": [other, claim]}}))
        assert _kept_thesis_claim_rows() == expected


def test_rows_of_a_run_done_in_parts_carry_the_fits_own_times_or_no_total():
    from benchmarks.paper.laptao import RESUMED_NOTE, _time_fields

    # fits logged with their times: their sum, however many parts (the wall time of the last is ignored)
    assert _time_fields({"fits_seconds": 9000.0, "resumed": True}, 60.0)["part_seconds"] == 9000.0
    # one part, no log (quick): the wall time covers every fit
    assert _time_fields({"fits_seconds": None, "resumed": False}, 60.0) == {"part_seconds": 60.0}
    # resumed from fits logged without times: the last part's wall time is not the rows' time
    resumed = _time_fields({"fits_seconds": None, "resumed": True}, 60.0)
    assert "part_seconds" not in resumed and resumed["this_part_seconds"] == 60.0
    assert resumed["part_seconds_note"] == RESUMED_NOTE
