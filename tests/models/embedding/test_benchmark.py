"""The tree-embedding benchmark runs end to end in --quick mode and writes every row with the fields a
comparison needs (numbers are not asserted: they belong in the full benchmark)."""

import json

from benchmarks import run

FIELDS = {"name", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std", "protocol"}


def test_quick_embeddings_benchmark_writes_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main(["embeddings", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "breast_cancer t-SNE: tree embedding" in out
    payload = json.loads((tmp_path / "embeddings.json").read_text())
    rows = {r["name"]: r for r in payload["results"]["rows"]}
    assert all(FIELDS <= set(r) for r in rows.values())
    assert rows["breast_cancer t-SNE: direct TAO fit"]["paper_mean"] == 2.218
    tree = rows["breast_cancer t-SNE: tree embedding"]
    assert isinstance(tree["tree_below_direct"], bool) and tree["n_leaves"] >= 1
    assert rows["breast_cancer t-SNE: direct CART fit"]["cart_nodes"] >= 1
    assert payload["results"]["history"][0]["step"] == 0
