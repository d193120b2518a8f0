"""How long a training would take, told before it starts.

Each family declares its own cost model (``Family.cost``, see :mod:`models.cost`): arithmetic over
its loop counts and the training split's rows and features, with constants timed on this project's
2-core machine. :func:`long_training_warning` gives the Train page a sentence when the chosen
settings on the chosen table would take more than :data:`LONG_S` seconds, saying what to change.
A family that declares no cost model (a plug-in) gets no estimate and no warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.cost import TimeEstimate
from models.schema import Family
from treeviz.services.data.preprocess import PreparedData

#: Seconds above which the Train page warns before training.
LONG_S = 60.0


def training_time(family: Family, params: Mapping[str, Any], n_rows: int, n_features: int) -> TimeEstimate | None:
    """Estimated time of a fit of ``family`` with ``params`` on ``n_rows`` × ``n_features`` training
    data; None for a family without a cost model or settings it cannot read."""
    if family.cost is None:
        return None
    try:
        return family.cost(params, float(max(n_rows, 1)), float(max(n_features, 1)))
    except (TypeError, ValueError):  # a value the form has not validated yet: no estimate
        return None


def duration_text(seconds: float) -> str:
    """A duration in rounded words: "about 40 s", "about 3 min", "about 1.5 h"."""
    if seconds < 60:
        return f"about {max(1, round(seconds))} s"
    if seconds < 3600:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def long_training_warning(family: Family, task: str, params: Mapping[str, Any], prepared: PreparedData, *,
                          preset: str | None = None, threshold_s: float = LONG_S) -> str | None:
    """A sentence for the Train page when fitting ``family`` with ``params`` on the training split of
    ``prepared`` would take more than ``threshold_s`` seconds, saying what to change; else None.

    ``preset`` is the preset the form starts from (a "quick" preset is suggested unless chosen).
    """
    rows, features = prepared.X_train.shape
    values = {**family.defaults(task), **dict(params)}
    found = training_time(family, values, rows, features)
    if found is None or found.seconds <= threshold_s:
        return None
    titles = {p.name: p.title for p in family.params}
    names = [titles.get(k, k) for k in found.knobs if k in values]
    change = [f"lower {' or '.join(repr(n) for n in names)}"] if names else []
    quick = [name for name in family.presets_for(task) if name.startswith("quick") and name != preset]
    if quick:
        change.append(f"pick the {quick[0]!r} preset")
    change.append("train on a sample of the table's rows")
    advice = f"{', '.join(change[:-1])} or {change[-1]}" if len(change) > 1 else change[0]
    return (f"{family.label} with these settings may take {duration_text(found.seconds)} on {rows:,} training "
            f"rows × {features} features (a rough estimate from timings on a 2-core machine; the job can be "
            f"cancelled). To get a result sooner, {advice}.")
