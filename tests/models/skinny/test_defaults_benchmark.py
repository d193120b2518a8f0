"""The Skinny defaults benchmark runs end to end in --quick mode and writes its digits and held-out
rows (numbers are not asserted here: they belong in the full benchmark's results)."""

import json

import pytest

from benchmarks.paper import skinny_defaults


@pytest.mark.slow  # tens of seconds: the full tier runs it
def test_quick_defaults_benchmark_writes_digits_and_held_out_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert skinny_defaults.main(["--quick"]) == 0
    payload = json.loads((tmp_path / "skinny_defaults.json").read_text())["results"]
    digits = [r for r in payload["rows"] if r["name"].startswith("digits seed")]
    assert len(digits) == 1 and digits[0]["n_features"] == 64
    assert digits[0]["constant_pixels_removed"] is True and digits[0]["features_kept"] < 64
    assert digits[0]["compression"] == pytest.approx(64 / digits[0]["features_kept"])
    held = {r["dataset"] for r in payload["rows"] if "CART" in r["name"]}
    assert held == {"digits", "iris", "wine"}
    assert all(r["commit"] and r["protocol"] in ("full", "reduced") for r in payload["rows"])
    assert "at_least_cart" in capsys.readouterr().out
