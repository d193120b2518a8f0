"""The tables of runs the Runs and Compare pages show: one labelled row per run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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


def decision_nodes_text(active: int, total: int) -> str:
    """The decision nodes of a tree or an ensemble as the leaderboard counts them (the active ones,
    pruned nodes cost nothing), with the total when some are inactive: "42 of 63 decision nodes active"."""
    if total > active:
        return f"{active} of {total} decision nodes active"
    return f"{active} decision nodes"


#: Why a tree has inactive decision nodes, said wherever both numbers are shown.
INACTIVE_NOTE = ("A decision node is inactive when no training row reaches it or training pruned it: it is drawn as "
                 "pruned and counts neither here nor in Compare's leaderboard, which counts the active ones.")


def number(value: float) -> str:
    """A count with its thousands apart: 19 200."""
    return f"{int(value):,}".replace(",", " ")


def side_caption(tree: Any, metrics: dict[str, Any], n_trees: int, part: str) -> str:
    """What Compare says above a run's tree: its depth and sizes as the leaderboard counts them (active
    decision nodes, nonzero weights); for an ensemble, that the drawn tree is its first, with the
    ensemble's sizes (the leaderboard's) beside; why some decision nodes are inactive when some are."""
    active = int(np.count_nonzero(tree.active[tree.decision_nodes] > 0))
    text = (f"depth {tree.max_depth} · {decision_nodes_text(active, int(tree.decision_nodes.size))}, "
            f"{number(tree.n_nonzero_weights())} nonzero weights")
    if n_trees > 1:
        nodes, weights = metrics.get("n_decision_nodes"), metrics.get("n_nonzero_weights")
        whole = "" if nodes is None or weights is None else \
            f" · the ensemble, as in the leaderboard: {number(nodes)} decision nodes, {number(weights)} nonzero weights"
        text = f"Drawn: tree 1 of {n_trees} · this tree: {text}{whole}"
    if active < tree.decision_nodes.size:
        text += f" · {INACTIVE_NOTE}"
    return f"{text} · {part} split routed"


def leaderboard_widths(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Pixel widths for the leaderboard's text columns wide enough for their longest cell (the grid
    otherwise sizes a column for its typical cells and cuts a name twice their length)."""
    out = {}
    for column in ("run", "family"):
        longest = max((len(str(row.get(column) or "")) for row in rows), default=0)
        out[column] = int(min(1000, max(80, 8.5 * longest + 24)))  # 14 px Source Sans, wide letters included
    return out


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
