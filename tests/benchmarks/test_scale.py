"""The scale benchmark (``python -m benchmarks.report.run scale``): its quick path end to end (CART and one
other family, each fit in its own process), the verdicts against the targets, and the CPU-time stop
of a runaway fit. Times are not asserted: speed belongs in the benchmark's results."""

import signal
import subprocess
import sys

import pytest

from benchmarks.speed import scale
from benchmarks.speed.scale_table import make_table
from tests.benchmarks.helpers import quick_run

KEYS = {"family", "n", "fit_s", "wall_s", "peak_mb", "accuracy", "targets", "meets", "misses"}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_scale_benchmark_writes_a_row_per_fit_with_a_verdict(tmp_path, monkeypatch, capsys):
    assert scale.QUICK_FAMILIES[0] == "cart" and len(scale.QUICK_FAMILIES) >= 2
    out, payload = quick_run("scale", tmp_path, monkeypatch, capsys)
    assert "meets" in out
    rows = payload["results"]["rows"]
    assert [(r["family"], r["n"]) for r in rows] == [(f, scale.QUICK_SIZES[0]) for f in scale.QUICK_FAMILIES]
    cart = rows[0]
    for r in rows:
        assert KEYS <= set(r), r
        assert not r.get("error") and not r.get("stopped"), r
        assert r["fit_s"] > 0 and r["peak_mb"] >= 0 and 0.4 < r["accuracy"] <= 1.0
        assert r["meets"] in (True, False) and (r["meets"] is True) == (not r["misses"])
        assert r["targets"]["fit_s"] == 20.0 and r["targets"]["peak_mb"] == 4096.0
    assert cart["targets"]["accuracy"] is None
    assert rows[1]["targets"]["accuracy"] == cart["accuracy"]


def test_verdicts_hold_each_row_to_its_targets_and_to_carts_accuracy():
    def row(family, n, fit_s=1.0, acc=0.9, peak=100.0, **extra):
        return {"family": family, "n": n, "fit_s": fit_s, "peak_mb": peak, "accuracy": acc, **extra}

    rows = scale.judge([
        row("cart", 20_000, acc=0.82), row("skinny", 20_000, fit_s=44.0, acc=0.754), row("tao", 20_000, peak=5000.0),
        row("dgt_forest", 20_000, fit_s=None, acc=None, peak=None, stopped="stopped after 60 s (CPU time)"),
        row("cart", 200_000, fit_s=None, acc=None, peak=None, error="exit status 1"),
        row("tao_forest", 200_000, fit_s=250.0), row("dgt", 200_000, fit_s=250.0)])
    verdicts = {(r["family"], r["n"]): (r["meets"], r["misses"]) for r in rows}
    assert verdicts[("cart", 20_000)] == (True, [])
    assert verdicts[("skinny", 20_000)] == (False, ["fit 44.0 s > 20 s", "accuracy 0.754 < CART's 0.820"])
    assert verdicts[("tao", 20_000)] == (False, ["peak 5000 MB > 4096 MB"])
    assert verdicts[("dgt_forest", 20_000)] == (False, ["stopped after 60 s (CPU time)"])
    assert verdicts[("cart", 200_000)] == (False, ["failed"])
    assert verdicts[("tao_forest", 200_000)] == (None, [])  # no CART accuracy to compare with
    assert verdicts[("dgt", 200_000)] == (False, ["fit 250.0 s > 180 s"])
    assert scale.target_s("dgt_forest", 200_000) == 300.0 and scale.target_s("dgt", 200_000) == 180.0
    assert scale.cpu_limit_s("cart", 20_000) == max(scale.MIN_LIMIT_S, 40.0)
    assert "dgt_bandit" in scale.FAMILIES and scale.FAMILIES[0] == "cart"


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_runaway_fit_is_stopped_by_its_cpu_time():
    code = "from benchmarks.speed.scale_table import limit_cpu\nlimit_cpu(1)\nwhile True:\n    pass\n"
    proc = subprocess.run([sys.executable, "-c", code], timeout=120)
    assert proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL)


def test_the_table_has_the_benchmarks_shape():
    data = make_table(300)
    assert data.X.shape == (300, 20) and set(data.y) == {0, 1, 2}
