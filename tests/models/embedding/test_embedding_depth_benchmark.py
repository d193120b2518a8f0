"""The embedding-depth benchmark (the tree embedding's defaults beside openTSNE's and UMAP's
transforms) runs end to end in --quick mode and writes its rows (numbers are not asserted: they
belong in the full run)."""

import pytest

from tests.benchmarks.helpers import quick_run


@pytest.mark.slow  # about a minute: four small embeddings, UMAP's first use among them
def test_quick_embedding_depth_benchmark_writes_rows(tmp_path, monkeypatch, capsys):
    pytest.importorskip("openTSNE")
    out, payload = quick_run("embedding_depth", tmp_path, monkeypatch, capsys)
    assert "openTSNE transform" in out
    results = payload["results"]
    rows = {r["name"]: r for r in results["rows"]}
    assert set(rows) == {"digits: tree embedding, defaults", "digits: openTSNE transform", "digits: UMAP transform",
                         "digits: tree embedding, depth 3 and λ 0.1 (the previous defaults)"}
    assert all(0.0 <= r["ours_mean"] <= 1.0 and r["seconds"] > 0 and r["protocol"] == "reduced"
               for r in rows.values())
    tree = rows["digits: tree embedding, defaults"]
    assert tree["gap_to_opentsne"] == pytest.approx(rows["digits: openTSNE transform"]["ours_mean"]
                                                    - tree["ours_mean"])
    assert isinstance(results["within_margin"], bool)
