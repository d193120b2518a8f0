"""The names the app shows for a run's numbers, given once: metrics, sizes, families, and the headline.

Every page, the sidebar, the report, the command line and the λ path page take their metric and
size labels from here, and
:func:`headline` picks a run's headline metric from its family's declared list
(``Family.metrics``), looking at the test split first, then validation, then training.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from models.ground.errors import TreevizError
from models.registry import families, get_family
from models.schema import DEFAULT_METRICS

SPLITS = ("test", "val", "train")
#: Short and long names of the metrics :func:`treeviz.services.experiments.training.evaluate` computes.
METRIC_LABELS: Mapping[str, tuple[str, str]] = {
    "accuracy": ("acc", "accuracy"),
    "auc": ("AUC", "ROC AUC (two classes; for more, the one-vs-one macro average)"),
    "r2": ("R²", "R²"),
    "rmse": ("RMSE", "RMSE"),
    "dendrogram_purity": ("DP", "dendrogram purity"),
    "dendrogram_purity_code": ("DP (code)", "dendrogram purity (reference-code variant)"),
    "ari": ("ARI", "adjusted Rand index"),
    "knn_accuracy": ("5-NN acc", "5-NN accuracy in the embedding"),
    "trustworthiness": ("trust", "trustworthiness (5 neighbours)"),
    "objective": ("E", "embedding objective E(F(X)) (lower is better)"),
}
#: Names of the size and cost numbers stored with every run and shown along a λ path.
SIZE_LABELS: Mapping[str, str] = {
    "n_nodes": "Nodes",
    "n_leaves": "Leaves",
    "depth": "Depth",
    "n_decision_nodes": "Decision nodes",
    "n_nonzero_weights": "Nonzero weights",
    "n_params": "Parameters",
    "n_features": "Features used",
    "flops": "FLOPs / sample",
    "n_active_nodes": "Active nodes",
    "active_depth": "Depth of the active tree",
}
SIZE_HELP: Mapping[str, str] = {
    "n_features": "Features that some split (or linear leaf) of some tree gives a nonzero weight.",
    "flops": "Nonzero parameters met on the root-to-leaf path, averaged over the training split.",
    "n_active_nodes": "Nodes whose activity a_t is above 0 (not pruned).",
    "active_depth": "Depth of the tree once pruned nodes are removed.",
}


@dataclass(frozen=True)
class Headline:
    """A run's headline metric: ``key`` (e.g. ``test_accuracy``), its split, metric and value."""

    key: str
    split: str
    metric: str
    value: float

    @property
    def label(self) -> str:
        """Short label, e.g. "test acc"."""
        return f"{self.split} {METRIC_LABELS.get(self.metric, (self.metric,))[0]}"

    @property
    def title(self) -> str:
        """Long label, e.g. "test accuracy"."""
        return f"{self.split} {METRIC_LABELS.get(self.metric, (self.metric, self.metric))[1]}"

    def text(self) -> str:
        return f"{self.label} {self.value:.3f}"


def headline(metrics: Mapping[str, Any], family_key: str, task: str) -> Headline | None:
    """The first of the family's headline metrics for ``task`` found in ``metrics`` (test split
    first, then validation, then training), or None."""
    try:
        names = get_family(family_key).headline_metrics(task)
    except TreevizError:  # a run of a family this installation does not have
        names = tuple(DEFAULT_METRICS.get(task, ()))
    for name in names:
        for split in SPLITS:
            value = metrics.get(f"{split}_{name}")
            if isinstance(value, (int, float)) and math.isfinite(value):
                return Headline(f"{split}_{name}", split, name, float(value))
    return None


def run_headline(record: Any) -> Headline | None:
    """:func:`headline` of a stored run (a :class:`treeviz.services.store.runs.RunRecord`)."""
    return headline(record.metrics, record.family, record.task)


def size_label(key: str) -> str:
    return SIZE_LABELS.get(key, key.replace("_", " "))


def format_size(key: str, row: Mapping[str, Any]) -> str:
    """One size number of a sweep row or run, as the λ path page shows it."""
    value = row.get(key)
    if value is None:
        return "–"
    if key == "n_active_nodes" and row.get("n_nodes") is not None:
        return f"{int(value)} / {int(row['n_nodes'])}"
    if isinstance(value, float) and not float(value).is_integer():
        return f"{value:.1f}"
    return str(int(value))


def curve_layout(family_key: str) -> dict[str, Any]:
    """Keyword arguments for :func:`treeviz.plots.training_curves` from the family's declared
    curves (``panels``, ``x`` and ``kept``); empty when the family declares none or is unknown here."""
    try:
        curves = get_family(family_key).curves
    except TreevizError:
        return {}
    if curves is None:
        return {}
    return {"x": curves.x, "panels": [(p.title, p.keys) for p in curves.panels], "kept": curves.kept or None}


def headline_text(record: Any) -> str:
    """The run's headline as a short text ("test acc 0.953"), or "" when it has none."""
    found = run_headline(record)
    return found.text() if found else ""


def family_index(key: str) -> int | None:
    """A family's position in the registry's display order (what fixes its colour in figures), or
    None for an unknown family."""
    return next((i for i, k in enumerate(families()) if k == key), None)


def family_name(key: str) -> str:
    """A family's short display name ("CART", "TAO forest"), or the key of an unknown family."""
    try:
        return get_family(key).short_label
    except TreevizError:
        return key
