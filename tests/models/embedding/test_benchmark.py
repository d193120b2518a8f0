"""The tree-embedding benchmark runs end to end in --quick mode and writes every row with the fields a
comparison needs (numbers are not asserted: they belong in the full benchmark)."""

import json

import pytest

from tests.benchmarks.helpers import quick_run

FIELDS = {"name", "metric", "ours_mean", "ours_std", "paper_mean", "paper_std", "protocol"}


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_quick_embeddings_benchmark_writes_rows(tmp_path, monkeypatch, capsys):
    out, payload = quick_run("embeddings", tmp_path, monkeypatch, capsys)
    assert "breast_cancer t-SNE: tree embedding" in out
    rows = {r["name"]: r for r in payload["results"]["rows"]}
    assert all(FIELDS <= set(r) for r in rows.values())
    assert rows["breast_cancer t-SNE: direct TAO fit"]["paper_mean"] == 2.218
    tree = rows["breast_cancer t-SNE: tree embedding"]
    assert isinstance(tree["tree_below_direct"], bool) and tree["n_leaves"] >= 1
    assert rows["breast_cancer t-SNE: direct CART fit"]["cart_nodes"] >= 1
    step0 = payload["results"]["history"][0]
    assert step0["step"] == 0
    # every row has a time; the free embedding and the direct fit carry the path's step 0
    assert all(isinstance(r["fit_seconds"], float | list) for r in rows.values() if "t-SNE: " in r["name"])
    for method in ("free embedding", "direct TAO fit"):
        assert rows[f"breast_cancer t-SNE: {method}"]["fit_seconds"] == step0["seconds"] > 0


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_quick_embeddings_scale_benchmark_writes_rows(tmp_path, monkeypatch, capsys):
    _, payload = quick_run("embeddings_scale", tmp_path, monkeypatch, capsys)
    rows = payload["results"]["rows"]
    if not rows:  # no shared data on this machine
        assert payload["results"]["skipped"]
        return
    assert all(FIELDS <= set(r) for r in rows)
    assert all("fft_seconds" in r and "chunked_seconds" in r for r in rows)
    tree = next(r for r in rows if "tree embedding E(F(X))" in r["name"])
    # E(F(X)) is reported exactly for both runs, each with the direct fit it started from
    assert tree["fft_run"]["E_tree_path"][0] == tree["fft_run"]["E_direct_exact"]
    assert tree["exact_value"] == tree["exact_run"]["E_tree_exact"]
    evaluation = next(r for r in rows if "value_and_grad at the free embedding Z0" in r["name"])
    assert evaluation["value_rel_error"] < 1e-3


def test_a_rerun_keeps_the_reference_setting_row_computed_apart(tmp_path, monkeypatch):
    from benchmarks.paper import embeddings

    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert embeddings._kept_reference_setting_row() == []  # no previous file
    stamp = {"commit": "a" * 40, "date": "2026-12-01T00:00:00+00:00",
             "command": "python -m benchmarks.paper.embeddings"}
    kept = {"name": embeddings.REFERENCE_SETTING_ROW, "ours_mean": 0.977, **stamp}
    other = {"name": "digits t-SNE: free embedding", "ours_mean": 0.7, **stamp}
    for quick, expected in ((False, [{**kept, "carried_over": True}]), (True, [])):
        (tmp_path / "embeddings.json").write_text(json.dumps({"benchmark": "embeddings", "quick": quick,
                                                              "results": {"rows": [other, kept]}}))
        assert embeddings._kept_reference_setting_row() == expected
    # a stored row without a stamp of its own is not carried: the new file would stamp it as its own
    unstamped = {k: v for k, v in kept.items() if k != "commit"}
    (tmp_path / "embeddings.json").write_text(json.dumps({"results": {"rows": [unstamped]}}))
    assert embeddings._kept_reference_setting_row() == []


def test_breast_cancer_and_digits_run_the_thesis_s_schedule():
    from benchmarks.paper import embeddings

    for name in ("breast_cancer", "digits"):
        params = embeddings.SETTINGS[name]
        assert all(params[k] >= embeddings.FULL[k] for k in ("n_mu", "z_iter", "tao_iter")), name
        assert params["free_iter"] >= 1000, name
