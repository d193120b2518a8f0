"""The benchmark runner works end to end in --quick mode (numbers are not asserted: speed belongs
in benchmarks, never in tests)."""


import pytest

from benchmarks.common import format_table
from benchmarks.report import run
from tests.benchmarks.helpers import quick_run


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_quick_cart_benchmark_prints_a_table_and_writes_json(tmp_path, monkeypatch, capsys):
    out, payload = quick_run("cart_tree", tmp_path, monkeypatch, capsys)
    assert "route_vs_sklearn" in out and "breast_cancer" in out
    for name in ("iris", "wine", "breast_cancer"):
        row = payload["results"][name]
        assert row["nodes"] > 1 and row["fit_ms"] > 0 and row["route_vs_sklearn"] > 0


def test_unknown_benchmark_is_refused(capsys):
    with pytest.raises(SystemExit):
        run.main(["nope"])
    assert "unknown benchmark" in capsys.readouterr().err


def test_format_table_aligns_columns():
    text = format_table([{"a": 1, "b": 0.123456}, {"a": 10, "b": 2.0}])
    lines = text.splitlines()
    assert lines[0].split() == ["a", "b"] and len({len(line) for line in lines}) == 1
