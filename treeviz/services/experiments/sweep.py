"""Parameter sweeps: train one model per value of a parameter (a λ path) and compare them.

:func:`run_sweep` fits the values in increasing order. The parameter is the family's λ
(``Family.lambda_path.param``) unless another is named. With ``warm_start`` (the family's
default, or the caller's choice) and an estimator that supports it, each fit after the first
starts from the previous result: only λ changes between points, so the previous optimum is a
sound starting point and the path is traced much faster. Without it every λ starts from the same
initial model. Every point is stored as its own run, tagged with ``RunRecord.sweep = {"id",
"label", "param", "value", "index", "size", "warm_start"}``; ``label`` names the whole sweep
("TAO on breast_cancer"), so renaming one of its runs never renames the sweep.
:func:`sweep_table` gathers a stored sweep back into rows (value, active nodes, depth of the
active tree, metrics) for the λ path page.

Local and sequential by design: each point may warm-start from the previous one.
"""

from __future__ import annotations

import copy
import math
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from models.base import Callback
from models.ground.errors import TrainingCancelled, TreevizError
from models.ground.tree import Tree
from models.registry import get_family
from treeviz.services.data import PreparedData
from treeviz.services.experiments.training import ProgressCallback, build_estimator, finish_run, fit_estimator
from treeviz.services.jobs.manager import Progress
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore


def value_grid(low: float, high: float, count: int, *, log: bool = True) -> list[float]:
    """``count`` values from ``low`` to ``high`` (geometric when ``log``), rounded to 4 digits."""
    if count < 1:
        raise TreevizError("A sweep needs at least one value.")
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        raise TreevizError(f"The sweep range [{low}, {high}] is not valid; the end must not be below the start.")
    if log and low <= 0:
        raise TreevizError("A logarithmic sweep needs a positive start value.")
    values = np.geomspace(low, high, count) if log else np.linspace(low, high, count)
    return sorted({float(f"{v:.4g}") for v in values})


def active_depth(tree: Tree) -> int:
    """Depth of the tree once pruned nodes (active == 0) are removed (0: only the root is left)."""
    alive = tree.active > 0
    if not alive[0]:
        return 0
    depths = tree.node_depth[alive]
    return int(depths.max())


@dataclass(frozen=True)
class SweepResult:
    """One point of a sweep: the value, its stored run (if a store was given) and summary."""

    value: float
    record: RunRecord | None
    metrics: dict[str, Any]
    n_active_nodes: int
    active_depth: int
    estimator: Any = None


@dataclass(frozen=True)
class SweepJob:
    """A job function that runs one λ path (:func:`run_sweep`) and returns its sweep id (None if
    no point was trained). A plain object, so the job manager can send it to a worker process."""

    family_key: str
    task: str
    params: dict[str, Any]
    prepared: PreparedData
    values: tuple[float, ...]
    store: RunStore
    warm_start: bool | None = None
    device: str | None = None

    def __call__(self, progress: Progress) -> str | None:
        results = run_sweep(self.family_key, self.task, self.params, self.prepared, self.values,
                            warm_start=self.warm_start, store=self.store, progress=progress, device=self.device)
        return results[0].record.sweep["id"] if results else None


def run_sweep(family_key: str, task: str, params: Mapping[str, Any] | None, prepared: PreparedData,
              values: Sequence[float], *, param: str | None = None, warm_start: bool | None = None,
              store: RunStore | None = None, callbacks: Iterable[Callback] = (),
              progress: Progress | None = None, device: str | None = None,
              name: str | None = None) -> list[SweepResult]:
    """Train one model per value of ``param`` (ascending), warm-started where asked and possible.

    ``param`` defaults to the family's λ and ``warm_start`` to its λ path's default. With a job's
    ``progress`` handle, progress spans every point. A cancel stops the sweep after the point
    being trained (that point is kept, as a cancelled run); the points finished before it are
    returned and stored as usual.
    """
    family = get_family(family_key)
    path = family.lambda_path
    if param is None:
        if path is None:
            raise TreevizError(f"{family.label} has no λ path; name the parameter to sweep.")
        param = path.param
    if warm_start is None:
        warm_start = path.warm_start if path is not None and path.param == param else False
    if param not in {p.name for p in family.params_for(task, form_only=True)}:
        raise TreevizError(f"{family.label} has no parameter '{param}' to sweep.")
    values = sorted({family.param(param, task).validate(v) for v in values})
    if not values:
        raise TreevizError("A sweep needs at least one value.")
    callbacks = list(callbacks)
    if progress is not None:
        progress.stages(len(values))
        callbacks.append(ProgressCallback(progress))
    estimator = build_estimator(family_key, task, {**dict(params or {}), param: values[0]}, prepared,
                                device=device)
    can_warm = warm_start and "warm_start" in estimator.get_params()
    sweep_id = f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    base = name or f"{family.short_label} on {prepared.dataset.name}"
    results: list[SweepResult] = []
    for index, value in enumerate(values):
        estimator.set_params(**{param: value})
        if can_warm:
            estimator.set_params(warm_start=index > 0)
        duration, stopped = fit_estimator(estimator, task, prepared, callbacks)
        tag = {"id": sweep_id, "label": base, "param": param, "value": value, "index": index,
               "size": len(values), "warm_start": bool(can_warm and index > 0)}
        try:
            out = finish_run(estimator, prepared, family_key, task, duration, stopped, store=store,
                             name=f"{base} · {param}={value:g}", sweep=tag)
        except TrainingCancelled:
            break
        tree = estimator.to_tree()
        if store is not None:
            record, metrics = out, dict(out.metrics)
        else:
            record, metrics = None, dict(out[1])
        results.append(SweepResult(value=value, record=record, metrics=metrics,
                                   n_active_nodes=int((tree.active > 0).sum()),
                                   active_depth=active_depth(tree),
                                   estimator=None if store is not None else _copy(estimator)))
        if stopped:
            break
    return results


def _copy(estimator: Any) -> Any:
    """A snapshot of a fitted estimator (warm starts keep changing the original)."""
    return copy.deepcopy(estimator)


def sweep_label(records: Sequence[RunRecord]) -> str:
    """The name of a stored sweep (its tag's label; sweeps stored before labels existed take the
    family and data set of their first run)."""
    first = records[0]
    label = first.sweep.get("label") if first.sweep else None
    if label:
        return str(label)
    try:
        family = get_family(first.family).short_label
    except TreevizError:
        family = first.family
    return f"{family} on {first.dataset_name}"


def tagged_groups(store: RunStore, kind: str) -> dict[str, list[RunRecord]]:
    """Runs tagged with a ``sweep`` of ``kind`` ("lambda_path", the default of older tags, or
    "budget_search"), grouped by the tag's id."""
    groups: dict[str, list[RunRecord]] = {}
    for record in store.list():
        if record.sweep and record.sweep.get("id") and record.sweep.get("kind", "lambda_path") == kind:
            groups.setdefault(str(record.sweep["id"]), []).append(record)
    return groups


def sweeps(store: RunStore) -> dict[str, list[RunRecord]]:
    """Stored λ paths: sweep id -> its runs ordered by value (newest sweep first)."""
    groups = tagged_groups(store, "lambda_path")
    ordered = sorted(groups.items(), key=lambda kv: max(r.created for r in kv[1]), reverse=True)
    return {k: sorted(v, key=lambda r: float(r.sweep["value"])) for k, v in ordered}


def sweep_table(store: RunStore, records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """One row per point: value, active nodes, active depth, node count and every metric."""
    rows = []
    for record in records:
        tree = store.load_model(record.run_id).to_tree()
        rows.append({"value": float(record.sweep["value"]), "run_id": record.run_id, "name": record.name,
                     "n_active_nodes": int((tree.active > 0).sum()), "n_nodes": tree.n_nodes,
                     "active_depth": active_depth(tree), "status": record.status, **record.metrics})
    return rows
