"""Benchmark parts run apart and merged into a stored results file: the Skinny Trees search
continued from a trial log, and one data set of the embeddings benchmark rerun alone."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import embeddings, skinny
from treeviz.services.search import Trial


class FakeTrials:
    """Stands in for :func:`run_trials`: each trial's validation AUC is its index / 100."""

    def __init__(self, fail_on_call: int | None = None):
        self.calls, self.fail_on_call = [], fail_on_call

    def __call__(self, family_key, task, prepared, settings, *, start=0, **kw):
        self.calls.append((start, len(settings)))
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise RuntimeError("stopped")  # the run is stopped part-way
        return [Trial(start + i, dict(p), {"val_auc": (start + i) / 100, "n_features": 3}) for i, p in
                enumerate(settings)][::-1]  # completion order, not index order


def test_a_logged_search_runs_only_the_trials_its_log_lacks_and_resumes(tmp_path, monkeypatch):
    log = tmp_path / "trials.jsonl"
    log.write_text(json.dumps({"index": 5, "params": {"a": 5}, "metrics": {"val_auc": 0.5}, "error": None}) + "\n")
    settings = [{"a": i} for i in range(4, 10)]
    stopped = FakeTrials(fail_on_call=2)
    monkeypatch.setattr(skinny, "run_trials", stopped)
    with pytest.raises(RuntimeError, match="stopped"):
        skinny._run_logged(None, settings, 4, log, chunk=2)
    assert stopped.calls == [(4, 1), (6, 2)]  # 5 was logged; a chunk never spans a gap
    assert sorted(skinny._logged_trials(log)) == [4, 5]  # the finished chunk was kept
    resumed = FakeTrials()
    monkeypatch.setattr(skinny, "run_trials", resumed)
    trials = skinny._run_logged(None, settings, 4, log, chunk=2)
    assert resumed.calls == [(6, 2), (8, 2)]
    assert [t.index for t in trials] == list(range(4, 10))
    assert [t.params["a"] for t in trials] == list(range(4, 10))
    assert trials[3].metrics == {"val_auc": 0.07, "n_features": 3}
    assert skinny._run_logged(None, settings, 4, log, chunk=2) == trials and resumed.calls[-1] == (8, 2)


def test_one_embedding_data_set_rerun_replaces_only_its_rows_and_history(tmp_path, monkeypatch):
    stored = {"benchmark": "embeddings", "quick": False, "results": {
        "rows": [{"name": "digits t-SNE: UMAP", "ours_mean": 1.0}, {"name": "mnist5k t-SNE: UMAP", "ours_mean": 2.0}],
        "history": [{"dataset": "digits", "step": 1}, {"dataset": "mnist5k", "step": 1},
                    {"dataset": "mnist5k", "step": 2}]}}
    (tmp_path / "embeddings.json").write_text(json.dumps(stored))
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    X, y = np.zeros((4, 2)), np.arange(4)
    monkeypatch.setattr(embeddings, "_datasets", lambda quick: [("digits", X, y), ("mnist5k", X, y)])
    seen = []

    def fake_rows(name, X_, y_, quick):
        seen.append((name, quick))
        return [{"name": f"{name} t-SNE: UMAP", "ours_mean": 3.0}], [{"dataset": name, "step": s} for s in (1, 2, 3)]

    monkeypatch.setattr(embeddings, "_dataset_rows", fake_rows)
    rows = embeddings.dataset_run("mnist5k")
    assert seen == [("mnist5k", False)] and rows[0]["ours_mean"] == 3.0
    results = json.loads((tmp_path / "embeddings.json").read_text())["results"]
    assert {r["name"]: r["ours_mean"] for r in results["rows"]} == {"digits t-SNE: UMAP": 1.0,
                                                                     "mnist5k t-SNE: UMAP": 3.0}
    assert [(h["dataset"], h["step"]) for h in results["history"]] == [("digits", 1), ("mnist5k", 1),
                                                                        ("mnist5k", 2), ("mnist5k", 3)]
    with pytest.raises(SystemExit, match="no data set 'iris'"):
        embeddings.dataset_run("iris")


def test_every_benchmark_data_set_runs_the_theses_schedule():
    for name, params in embeddings.SETTINGS.items():
        assert all(params[k] >= embeddings.FULL[k] for k in ("n_mu", "z_iter", "tao_iter")), name
        assert params["free_iter"] >= 1000, name
