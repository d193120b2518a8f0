"""How long a fit will take, declared by each family: arithmetic over its loop counts.

A family's defaults can be fine on a small table and take many minutes on a larger one (the tree
embedding's defaults ran 36 minutes on a 2 310-row table and were cancelled after 6 of 20 μ steps).
So each family may declare ``Family.cost``: a function ``cost(params, n_rows, n_features)`` that
returns a :class:`TimeEstimate`, which the Train page turns into a warning before a long fit
(:mod:`treeviz.services.experiments.estimate`).

The estimate is arithmetic, not a trial fit, so it costs microseconds: a family counts units of
work from its own loop structure (its iteration counts, the rows n and features d of the training
split), and a constant per unit, measured by timing small fits of that family on this project's
2-core CPU machine (synthetic 19-feature tables of 300 to 2 310 rows, other jobs sharing the cores,
so the same fit timed twice differed by up to 3 times), turns them into seconds. Early stopping
(patience, tolerances) is ignored, so the estimate is of the planned work, an upper side guess; a
GPU, a faster or idler machine or a fit that converges early takes less, a loaded machine more. Its
use is telling seconds from many minutes.

This module holds what several families share (no heavy imports: family declarations import it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: A forest's worker processes starting (2 trees in 2 processes: 18 s, in one: 0.5 s).
FOREST_START_S = 9.0
#: Seconds per TAO iteration × row × feature × level (10 iterations at depth 4 on 1 200 × 19: 0.83 s;
#: LapTAO alike).
TAO_S = 9e-7


@dataclass(frozen=True)
class TimeEstimate:
    """Estimated seconds of one fit, and the parameters whose lowering shortens it most (``knobs``,
    for the warning's advice)."""

    seconds: float
    knobs: tuple[str, ...] = ()


def value(params: Mapping[str, Any], name: str, default: float) -> float:
    """A parameter as a float, its default when unset or None ("auto")."""
    found = params.get(name)
    return float(default if found is None else found)


def steps(n: float, batch: float, epochs: float) -> float:
    """Optimiser steps of ``epochs`` passes over ``n`` rows in batches of ``batch``."""
    return epochs * math.ceil(max(n, 1.0) / max(batch, 1.0))


def forest_seconds(params: Mapping[str, Any], one: float) -> float:
    """A forest's seconds from one tree's: ``n_trees`` in rounds of the workers ``n_jobs`` allows
    (-1: every core), plus the worker processes' start."""
    cores = os.cpu_count() or 1
    n_jobs = int(value(params, "n_jobs", -1))
    workers = max(1, min(cores, cores if n_jobs < 0 else n_jobs))
    start = FOREST_START_S if workers > 1 else 0.0
    return start + one * math.ceil(value(params, "n_trees", 10) / workers)


def tao_units(params: Mapping[str, Any], n: float, d: float, iterations: float) -> float:
    """TAO's work: iterations × rows × features × levels (each level's nodes see every row once)."""
    return iterations * n * d * max(1.0, value(params, "depth", 4))
