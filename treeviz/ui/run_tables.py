"""The tables of runs the Runs and Compare pages show: one labelled row per run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from treeviz.services.store.memo import per_record
from treeviz.services.store.record import RunRecord
from treeviz.services.views.compare import Score
from treeviz.ui.labels import family_name, headline_text


def leaderboard(runs: Sequence[RunRecord], score: Score | None) -> list[dict[str, Any]]:
    """One row per run, best score first (runs without the score last): name, family, score, decision
    nodes, nonzero weights, FLOPs per sample, fit seconds, device, status, run id."""
    rows = []
    for r in runs:
        value = r.metrics.get(score.key) if score else None
        rows.append({"run": r.name, "family": family_name(r.family), "score": value,
                     "decision nodes": r.metrics.get("n_decision_nodes"),
                     "nonzero weights": r.metrics.get("n_nonzero_weights"), "FLOPs / sample": r.metrics.get("flops"),
                     "fit s": round(r.duration_s, 2), "device": r.device or "?", "status": r.status,
                     "run_id": r.run_id})
    sign = 1.0 if score is None or score.higher_is_better else -1.0
    return sorted(rows, key=lambda row: (row["score"] is None, -sign * (row["score"] or 0.0)))


def run_rows(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """One row per run for the Runs page's table: name, family, data set, task, headline metric,
    nodes, depth, status, created, fit seconds and id."""
    return [dict(_run_row(r)) for r in records]


@per_record
def _run_row(r: RunRecord) -> dict[str, Any]:
    return {"name": r.name, "family": family_name(r.family), "dataset": r.dataset_name, "task": r.task,
            "metric": headline_text(r), "nodes": r.n_nodes, "depth": r.depth, "status": r.status,
            "created": r.created_at.strftime("%Y-%m-%d %H:%M"), "seconds": round(r.duration_s, 2),
            "id": r.run_id}
