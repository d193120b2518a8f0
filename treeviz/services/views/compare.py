"""Runs of every family on one data set, side by side: their groups, the score they are ranked by and
the accuracy–size Pareto front (the Compare page; the tables it shows are :mod:`treeviz.ui.run_tables`).

Runs compare when they were trained on the same data set (its fingerprint) and task. The score is
the task's common test metric (:data:`SCORES`), so families whose own headline metric differs
still line up; sizes are what every run records: decision nodes, nonzero weights and inference
FLOPs per sample (:func:`treeviz.services.experiments.training.model_cost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from treeviz.services.store.record import RunRecord


@dataclass(frozen=True)
class Score:
    """The metric runs of a task are ranked by: its key in ``RunRecord.metrics``, label and direction."""

    key: str
    label: str
    higher_is_better: bool = True


#: The common test metric of each task (the first one a run has is used, see :func:`score_of`).
SCORES: dict[str, tuple[Score, ...]] = {
    "classification": (Score("test_accuracy", "test accuracy"), Score("val_accuracy", "validation accuracy")),
    "regression": (Score("test_r2", "test R²"), Score("test_rmse", "test RMSE", higher_is_better=False)),
    "clustering": (Score("test_ari", "test adjusted Rand index"),
                   Score("test_dendrogram_purity", "test dendrogram purity")),
    "embedding": (Score("test_knn_accuracy", "test 5-NN accuracy in the embedding"),
                  Score("test_trustworthiness", "test trustworthiness")),
}
#: The sizes a Pareto front is drawn against.
SIZES = {"n_nonzero_weights": "nonzero weights", "n_decision_nodes": "decision nodes", "flops": "FLOPs / sample"}


@dataclass(frozen=True)
class DataGroup:
    """Runs on one data set and task."""

    fingerprint: str
    dataset: str
    task: str
    runs: tuple[RunRecord, ...]

    @property
    def label(self) -> str:
        return f"{self.dataset} · {self.task} · {len(self.runs)} run(s)"


def groups(records: Sequence[RunRecord]) -> list[DataGroup]:
    """The stored runs grouped by data set and task, the group with the most runs first."""
    by_key: dict[tuple[str, str], list[RunRecord]] = {}
    for r in records:
        by_key.setdefault((r.dataset_fingerprint, r.task), []).append(r)
    out = [DataGroup(fp, runs[0].dataset_name, task, tuple(runs)) for (fp, task), runs in by_key.items()]
    return sorted(out, key=lambda g: (-len(g.runs), g.dataset, g.task))


def score_of(task: str, runs: Sequence[RunRecord]) -> Score | None:
    """The first of the task's scores that some run has."""
    for score in SCORES.get(task, ()):
        if any(isinstance(r.metrics.get(score.key), (int, float)) for r in runs):
            return score
    return None


def pareto_mask(size: Sequence[float], score: Sequence[float], *, higher_is_better: bool = True) -> np.ndarray:
    """Which points are on the Pareto front of small size and good score: no other point is at
    least as small and at least as good, and strictly better in one of the two. NaN points never are."""
    size = np.asarray(size, dtype=np.float64)
    good = np.asarray(score, dtype=np.float64) * (1.0 if higher_is_better else -1.0)
    ok = np.flatnonzero(np.isfinite(size) & np.isfinite(good))
    out = np.zeros(size.shape, dtype=bool)
    if not ok.size:
        return out
    # One sort, not a pass over all points per point: by size, the best score first within a size. A
    # point is on the front when it is the best of its size (ties included) and better than every
    # strictly smaller point.
    order = ok[np.lexsort((-good[ok], size[ok]))]
    s, g = size[order], good[order]
    first = np.r_[True, s[1:] != s[:-1]]  # the best point of each size
    group = np.cumsum(first) - 1
    best = g[first]
    before = np.r_[-np.inf, np.maximum.accumulate(best)[:-1]]  # the best score of all smaller sizes
    out[order] = (g == best[group]) & (g > before[group])
    return out

