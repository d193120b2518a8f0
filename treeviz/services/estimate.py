"""How long a training would take, told before it starts: a cost model per built-in family.

A family's defaults can be fine on a small table and take many minutes on a larger one (the tree
embedding's defaults ran 36 minutes on a 2 310-row table and were cancelled after 6 of 20 μ steps).
:func:`long_training_warning` gives the Train page a sentence when the chosen settings on the
chosen table would take more than :data:`LONG_S` seconds, saying what to change.

The estimate is arithmetic, not a trial fit, so it costs microseconds: each built-in family's loop
structure (its declared iteration counts, the rows n and features d of the training split) counts
units of work, and a constant per unit, measured by timing small fits of that family on this
project's 2-core CPU machine (synthetic 19-feature tables of 300 to 2 310 rows, other jobs sharing
the cores, so the same fit timed twice differed by up to 3 times), turns them into seconds. Early
stopping (patience, tolerances) is ignored, so the estimate is of the planned work, an upper side
guess; a GPU, a faster or idler machine or a fit that converges early takes less, a loaded machine
more. The warning says it is a rough estimate; its use is telling seconds from many minutes.

The models are keyed by family key (:data:`MODELS`): the one place in the frame that knows the
built-in families' loops, by name only (nothing here imports a family). A family without a model
(a plug-in) gets no estimate and no warning; a declared cost hint on :class:`~models.schema.Family`
would let families carry their own.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from models.schema import Family
from treeviz.services.data.preprocess import PreparedData

#: Seconds above which the Train page warns before training.
LONG_S = 60.0


@dataclass(frozen=True)
class TimeEstimate:
    """Estimated seconds of one fit and the settings that drive them.

    ``knobs`` names the parameters whose lowering shortens the fit most, for the warning's advice.
    """

    seconds: float
    knobs: tuple[str, ...]


def _get(params: Mapping[str, Any], name: str, default: float) -> float:
    value = params.get(name)
    return float(default if value is None else value)


def _workers(params: Mapping[str, Any]) -> int:
    """Trees a forest trains at once: ``n_jobs`` (-1: the cores)."""
    cores = os.cpu_count() or 1
    n_jobs = int(_get(params, "n_jobs", -1))
    return max(1, min(cores, cores if n_jobs < 0 else n_jobs))


def _forest(p: Mapping[str, Any], one: float) -> float:
    """A forest's seconds from one tree's: the trees in rounds of ``workers``, plus the processes' start."""
    workers = _workers(p)
    start = FOREST_START_S if workers > 1 else 0.0
    return start + one * math.ceil(_get(p, "n_trees", 10) / workers)


def _steps(n: float, batch: float, epochs: float) -> float:
    return epochs * math.ceil(max(n, 1.0) / max(batch, 1.0))


# --------------------------------------------------------------------------- measured constants
# Seconds per unit of work, from fits on 1 200 rows × 19 features unless said otherwise (the largest
# of the sizes timed where the cost per unit grew with n, so larger tables are not underestimated).
CART_S = 2e-8  # per row × feature × log2(rows) (15 ms at 1 200 rows)
TAO_S = 9e-7  # per TAO iteration × row × feature × level (10 iterations at depth 4: 0.83 s; LapTAO alike)
FOREST_START_S = 9.0  # a forest's worker processes starting (2 trees in 2 processes: 18 s, in one: 0.5 s)
#: Seconds per optimiser step of a DGT of depth 6 with 1, 2, 3 layers (200 epochs, 1 600 steps: 0.24 s;
#: 80 steps with 2 layers 0.12 s, with 3 layers 3.7 s); each further layer is taken as 30 times dearer.
DGT_STEP_S = (1.5e-4, 1.5e-3, 4.6e-2)
LATENT_STEP_S = 3e-3  # per optimiser step (10 epochs, 170 steps: 0.5 s)
SKINNY_STEP_S = 1e-3  # per SGD step of a 20-tree ensemble (5 epochs, 375 steps: 0.36 s)
BANDIT_ROUND_S = 5e-5  # per round (20 000 rounds: 0.86 s)
# The tree embedding, timed at 1 600 and 2 310 rows: 2 000 free iterations took 216 s at 2 310 rows;
# a μ step (100 Z iterations, 15 TAO iterations) 14 s at 1 600 rows and 16 s at 2 310, almost all of
# it the Z step (with no Z iterations two μ steps took no measurable time); the set-up (affinities,
# the spectral direction's factorisation) about 9 s at 1 600 rows.
EMB_SETUP_S = 2.2e-9  # per row³
FREE_S = 2.0e-8  # per free-embedding iteration × pair of rows
Z_S = 4.0e-8  # per Z-step iteration × pair of rows
EMB_TAO_S = 1e-7  # tree embedding: per tree-step TAO iteration × row × feature × level


def _cart(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    return TimeEstimate(CART_S * n * d * math.log2(n + 1), ())


def _tao_units(p: Mapping[str, Any], n: float, d: float, iters: float) -> float:
    return iters * n * d * max(1.0, _get(p, "depth", 4))


def _tao(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    return TimeEstimate(TAO_S * _tao_units(p, n, d, _get(p, "max_iter", 20)), ("max_iter", "depth"))


def _tao_forest(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    one = TAO_S * _tao_units(p, n * _get(p, "subsample", 1.0), d, _get(p, "max_iter", 20))
    return TimeEstimate(_forest(p, one), ("n_trees", "max_iter", "depth"))


def _laptao(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    units = _get(p, "n_mu", 20) * _tao_units(p, n, d, _get(p, "tao_iter", 15))
    return TimeEstimate(TAO_S * units, ("n_mu", "tao_iter"))


def _dgt_seconds(p: Mapping[str, Any], n: float) -> float:
    n_fit = n * (1.0 - _get(p, "validation_fraction", 0.2))
    steps = max(_steps(n_fit, _get(p, "batch_size", 128), _get(p, "max_epochs", 200)), _get(p, "min_steps", 0))
    # a step's cost grows with the tree's nodes (2^depth), beyond a fixed overhead, and steeply with layers
    layers = max(1, int(_get(p, "n_layers", 1)))
    per_step = DGT_STEP_S[min(layers, len(DGT_STEP_S)) - 1] * 30.0 ** max(0, layers - len(DGT_STEP_S))
    return per_step * steps * (0.5 + 2.0 ** _get(p, "depth", 6) / 128.0)


def _dgt(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    return TimeEstimate(_dgt_seconds(p, n), ("max_epochs", "min_steps"))


def _dgt_forest(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    one = _dgt_seconds(p, n * _get(p, "subsample", 1.0))
    return TimeEstimate(_forest(p, one), ("n_trees", "max_epochs"))


def _latent(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    n_fit = n * (1.0 - _get(p, "validation_fraction", 0.1))
    steps = _steps(n_fit, _get(p, "batch_size", 64), _get(p, "max_epochs", 100))
    return TimeEstimate(LATENT_STEP_S * steps, ("max_epochs", "batch_size"))


def _skinny(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    batch = _get(p, "batch_size", 16)
    per_epoch = math.ceil(max(n, 1.0) / max(batch, 1.0))
    epochs = p.get("max_epochs") or min(300, max(10, math.ceil(10_000 / per_epoch)))  # the family's "auto"
    trees = _get(p, "n_trees", 20) / 20.0
    return TimeEstimate(SKINNY_STEP_S * float(epochs) * per_epoch * max(trees, 0.05), ("max_epochs", "n_trees"))


def _bandit(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    rounds = p.get("n_rounds") or min(1_000_000, max(20_000, 10 * n))  # the family's "10 passes"
    return TimeEstimate(BANDIT_ROUND_S * float(rounds), ("n_rounds",))


def _tree_embedding(p: Mapping[str, Any], n: float, d: float) -> TimeEstimate:
    pairs = n * n
    free = FREE_S * _get(p, "free_iter", 2000) * pairs
    tree = EMB_TAO_S * _get(p, "tao_iter", 15) * n * d * max(1.0, _get(p, "depth", 3))
    step = Z_S * _get(p, "z_iter", 100) * pairs + tree
    setup = EMB_SETUP_S * n ** 3
    return TimeEstimate(setup + free + _get(p, "n_mu", 20) * step, ("n_mu", "free_iter", "z_iter"))


#: The cost model of each built-in family, by family key.
MODELS: dict[str, Callable[[Mapping[str, Any], float, float], TimeEstimate]] = {
    "cart": _cart, "tao": _tao, "tao_forest": _tao_forest, "laptao": _laptao, "dgt": _dgt,
    "dgt_forest": _dgt_forest, "latent": _latent, "skinny": _skinny, "dgt_bandit": _bandit,
    "tree_embedding": _tree_embedding,
}


def training_time(family_key: str, params: Mapping[str, Any], n_rows: int, n_features: int
                  ) -> TimeEstimate | None:
    """Estimated time of a fit of ``family_key`` with ``params`` on ``n_rows`` × ``n_features``
    training data; None for a family without a cost model or settings it cannot read."""
    model = MODELS.get(family_key)
    if model is None:
        return None
    try:
        return model(params, float(max(n_rows, 1)), float(max(n_features, 1)))
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
    found = training_time(family.key, values, rows, features)
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
