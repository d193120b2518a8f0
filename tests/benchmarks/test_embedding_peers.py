"""The side-by-side benchmark of the tree embedding against openTSNE and UMAP
(benchmarks/speed/embedding_peers.py): its rows from the methods' measurements, and a measurement."""

import numpy as np
import pytest

from benchmarks.speed import embedding_peers as peers


def test_rows_pair_each_tree_setting_with_each_peer_and_say_what_stopped():
    runs = {"tree_default": {"cpu_s": 60.0, "free_s": 40.0, "kl": 0.84, "knn": 0.90},
            "opentsne": {"cpu_s": 5.0, "free_s": 4.0, "kl": 0.77, "knn": 0.95},
            "tree_quick": {"cpu_s": None, "note": "stopped after 3600 s of wall time"},
            "umap": {"cpu_s": 20.0, "free_s": None, "kl": None, "knn": 0.94}}
    rows = {r["name"]: r for r in peers.rows_of("digits", runs, "full")}
    assert set(rows) == {f"digits: tree embedding ({s}) vs {p}" for s in ("defaults", "quick")
                         for p in ("opentsne", "umap")}
    row = rows["digits: tree embedding (defaults) vs opentsne"]
    assert row["ratio"] == pytest.approx(12.0) and row["free_ratio"] == pytest.approx(10.0)
    assert (row["ours_s"], row["peer_s"], row["ours_knn"], row["peer_knn"]) == (60.0, 5.0, 0.90, 0.95)
    assert rows["digits: tree embedding (defaults) vs umap"]["free_ratio"] is None  # UMAP has no free embedding
    stopped = rows["digits: tree embedding (quick) vs umap"]
    assert stopped["ratio"] is None and "stopped after" in stopped["note"]


def test_the_split_is_stratified_and_scaled_on_the_training_rows():
    X, y = peers.load("digits", quick=True)
    X_train, X_test, _, y_test = peers.split(X, y)
    assert X_train.shape[0] == 400 and X_test.shape[0] == 100
    assert np.allclose(X_train.mean(axis=0), 0.0) and not np.allclose(X_test.mean(axis=0), 0.0)
    assert set(y_test) == set(y)


@pytest.mark.slow  # two embeddings of 200 rows: seconds
@pytest.mark.parametrize("method", ["tree_quick", "opentsne"])
def test_a_measurement_times_the_fit_and_scores_the_mapped_test_rows(method):
    X, y = peers.load("digits", quick=True)
    X_train, X_test, y_train, y_test = peers.split(X[:250], y[:250])
    out = peers.measure(method, X_train, X_test, y_train, y_test)
    assert out["method"] == method and out["cpu_s"] > 0 and 0.0 < out["free_s"] <= out["cpu_s"]
    assert out["kl"] > 0 and 0.5 < out["knn"] <= 1.0  # digits' classes stay apart in 2-D
