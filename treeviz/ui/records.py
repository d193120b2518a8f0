"""Training records thinned for drawing: a live chart redrawn every poll must not grow with the
number of records a job has made (a bandit stream can record every round)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: The most records a live training chart draws; more are thinned evenly (first and last kept).
MAX_PLOTTED_RECORDS = 400


def plot_records(records: Sequence[Mapping[str, Any]],
                 limit: int = MAX_PLOTTED_RECORDS) -> list[Mapping[str, Any]]:
    """At most ``limit`` of ``records``, evenly spaced, the first and the last always kept (the
    curve's shape and its latest value stay), in their order; all of them when there are few."""
    records = list(records)
    if len(records) <= limit:
        return records
    keep = np.unique(np.linspace(0, len(records) - 1, max(2, int(limit))).round().astype(int))
    return [records[i] for i in keep]
