"""Feature-budget searches: the best model on validation that uses at most k features.

A family that selects features declares, in ``Family.feature_selection.search``, which of its
parameters a search may vary. :func:`budget_search` runs a random search the way the Skinny Trees
paper meets a budget:

1. draw ``n_trials`` settings: the caller's parameters, with each searched parameter the caller
   did not fix drawn from its range (uniform, log-uniform or one of its choices) by a seeded
   generator;
2. train them all, in parallel over the cores (joblib worker processes, one thread each), each
   trial a run in the store when one is given, tagged ``RunRecord.sweep = {"id", "kind":
   "budget_search", "label", "budget", "index", "size", "seed"}``. When the family's estimator
   class can fit several estimators as one batched program (its ``fit_together`` hook, see
   :func:`treeviz.services.experiments.training.together_hook`), the trials that differ only in the class's
   ``together_params`` (seeds, λ, rates: not the shape) train as one batch in one worker, each
   ending as its own fit would; a run's ``duration_s`` is then its share of the batch's time;
3. then (an extension, not in the paper, which ran ~2000 random trials) a few trials that copy the
   best trial within the budget with its λ lowered, so that it may use more of the budget: the
   feature count jumps between nearby λ values, and random trials rarely land just inside the
   budget;
4. keep the trials with 0 < features used ≤ k, and pick the best validation score (validation
   AUC for classification, else validation accuracy; validation R² for regression); ties go to
   the trial with fewer features. Only validation scores are used.

Every trial gets its own ``random_state``, from the search's seed.

A budget is a count of features (a whole number ≥ 1) or a fraction of the input columns (a
number in (0, 1): ⌊fraction·p⌋, at least 1). A trial that fails (a diverging fit, say) is kept
with its error and never chosen; a cancel stops the search after the trials already finished,
which stay stored.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from models.devices import resolve_device
from models.ground import threads
from models.ground.errors import TrainingCancelled, TreevizError
from models.registry import get_family
from models.schema import Family, SearchRange
from treeviz.services.data import PreparedData
from treeviz.services.experiments.sweep import tagged_groups
from treeviz.services.experiments.training import build_estimator, finish_run, fit_together, together_hook, train_run
from treeviz.services.jobs.manager import Progress
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore

KIND = "budget_search"
#: Validation metrics that choose among the trials within the budget, best first.
SELECTION: Mapping[str, tuple[str, ...]] = {
    "classification": ("val_auc", "val_accuracy"),
    "regression": ("val_r2",),
}


def budget_size(budget: float, n_features: int) -> int:
    """k, the most features allowed: a count (a whole number ≥ 1) or a fraction of ``n_features``
    (0 < budget < 1; ⌊budget·p⌋, at least 1)."""
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not math.isfinite(budget) \
            or budget <= 0:
        raise TreevizError(f"A feature budget must be a positive count or a fraction between 0 and 1; got {budget!r}.")
    if budget < 1:
        return max(1, math.floor(budget * n_features))
    if not float(budget).is_integer():
        raise TreevizError(f"A feature budget of 1 or more is a count of features; {budget:g} is not a whole number.")
    return min(int(budget), n_features)


def _draw(rng: np.random.Generator, spec: SearchRange, kind: str) -> Any:
    if spec.choices:
        return spec.choices[int(rng.integers(len(spec.choices)))]
    low, high = float(spec.low), float(spec.high)
    if kind == "int":
        if spec.log:  # log-uniform over [low, high + 1), floored
            return int(min(high, math.floor(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))
        return int(rng.integers(int(low), int(high) + 1))
    value = math.exp(rng.uniform(math.log(low), math.log(high))) if spec.log else rng.uniform(low, high)
    return float(f"{value:.4g}")


def sample_params(family: Family, task: str, params: Mapping[str, Any] | None, n_trials: int,
                  seed: int, search: Mapping[str, SearchRange] | None = None) -> list[dict[str, Any]]:
    """``n_trials`` parameter settings: ``params`` with each searched parameter drawn at random.
    A parameter given in ``params`` is fixed: it is not searched (e.g. ``n_trees=1`` for a single
    tree). ``search`` adds ranges to the family's, or replaces them, by parameter name."""
    if family.feature_selection is None:
        raise TreevizError(f"{family.label} does not select features, so it has no feature-budget search.")
    known = {p.name for p in family.params_for(task)}
    unknown = sorted(set(search or {}) - known)
    if unknown:
        raise TreevizError(f"{family.label} has no parameter {', '.join(map(repr, unknown))} to search; "
                           f"its parameters are {', '.join(sorted(known))}.")
    rng = np.random.default_rng(seed)
    given = dict(params or {})
    ranges = {**family.feature_selection.search, **(search or {})}
    searched = {name: spec for name, spec in ranges.items() if name not in given and name in known}
    out = []
    for i in range(n_trials):
        values = dict(given)
        for name, spec in searched.items():
            values[name] = _draw(rng, spec, family.param(name, task).kind)
        if any(p.name == "random_state" for p in family.params_for(task)):
            values["random_state"] = int(seed) * 1000 + i
        out.append(family.validate_params(values, task))
    return out


def selection_score(metrics: Mapping[str, Any], task: str) -> float | None:
    """The validation number a search maximises (see :data:`SELECTION`), or None."""
    for key in SELECTION.get(task, ()):
        value = metrics.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
    return None


@dataclass(frozen=True)
class Trial:
    """One fit of a search: its parameters, metrics (with ``n_features``), and its run id (stored)
    or estimator (not stored); ``error`` says why a failed trial has no model."""

    index: int
    params: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    estimator: Any = None
    error: str | None = None

    @property
    def n_features(self) -> int | None:
        value = self.metrics.get("n_features")
        return None if value is None else int(value)


def select_best(trials: Sequence[Any], budget: int, task: str) -> Any:
    """The best trial within ``budget`` features (0 < n_features ≤ budget) by validation score,
    fewer features first at a tie; None when no trial qualifies. Works on :class:`Trial` and on
    stored :class:`RunRecord` alike (both have ``metrics``)."""
    best, best_key = None, None
    for trial in trials:
        metrics = trial.metrics
        n = metrics.get("n_features")
        score = selection_score(metrics, task)
        if getattr(trial, "error", None) or n is None or not 0 < int(n) <= budget or score is None:
            continue
        key = (score, -int(n))
        if best_key is None or key > best_key:
            best, best_key = trial, key
    return best


@dataclass(frozen=True)
class SearchResult:
    """A finished (or cancelled) search: its id, budget k, the input width p, and every trial."""

    search_id: str
    task: str
    budget: int
    n_inputs: int
    trials: tuple[Trial, ...]

    @property
    def best(self) -> Trial | None:
        return select_best(self.trials, self.budget, self.task)


def _trial(family_key: str, task: str, index: int, params: dict[str, Any], prepared: PreparedData,
           store: RunStore | None, tag: dict[str, Any] | None, name: str, device: str | None,
           n_threads: int | None) -> Trial:
    """Train one trial (in a worker process under a budget of ``n_threads``, or here); a failed fit
    becomes a Trial with its error."""
    try:
        with _budget(n_threads):
            out = train_run(family_key, task, params, prepared, store=store, device=device, name=name,
                            sweep=_sweep_tag(tag, index))
    except FAILURES as err:
        return Trial(index, params, error=str(err))
    return _as_trial(index, params, out)


def _budget(n_threads: int | None) -> contextlib.AbstractContextManager:
    """The thread budget of a trial in a worker (:func:`models.ground.threads.budget`); None (a
    trial run here, in the caller's thread) leaves the thread as it is."""
    return threads.budget(n_threads) if n_threads is not None else contextlib.nullcontext()


#: The errors that make a trial fail (kept with its error) rather than end the search.
FAILURES = (TreevizError, ValueError, ArithmeticError)


def _sweep_tag(tag: dict[str, Any] | None, index: int) -> dict[str, Any] | None:
    return None if tag is None else {**tag, "index": index, "value": index}


def _as_trial(index: int, params: dict[str, Any], out: RunRecord | tuple[Any, dict[str, Any]]) -> Trial:
    if isinstance(out, RunRecord):
        return Trial(index, params, metrics=dict(out.metrics), run_id=out.run_id)
    estimator, metrics = out
    return Trial(index, params, metrics=dict(metrics), estimator=estimator)


def _trials(calls: list[tuple]) -> list[Trial]:
    """Train a unit of :func:`_units` (in a worker process, or here): one trial as :func:`_trial`
    does, several as one batched fit, each then scored and stored as :func:`_trial` would. When
    the batch as a whole fails (bad input, say), its trials train one at a time, so that each
    keeps its own error."""
    if len(calls) == 1:
        return [_trial(*calls[0])]
    with _budget(calls[0][-1]):
        return _together(calls)


def _together(calls: list[tuple]) -> list[Trial]:
    """:func:`_trials` for several trials, in the caller's thread budget."""
    family_key, task, _, _, prepared, store, _, _, device, _ = calls[0]
    try:
        estimators = [build_estimator(family_key, task, c[3], prepared, device=device) for c in calls]
        errors, seconds = fit_together(estimators, task, prepared)
    except FAILURES:
        return [_trial(*c) for c in calls]
    out = []
    for (_, _, index, params, _, _, tag, name, _, _), estimator, error in zip(calls, estimators, errors, strict=True):
        if error is not None:
            out.append(Trial(index, params, error=str(error)))
            continue
        try:
            done = finish_run(estimator, prepared, family_key, task, seconds / len(calls),
                              bool(getattr(estimator, "stopped_early_", False)), store=store, name=name,
                              sweep=_sweep_tag(tag, index))
        except FAILURES as err:
            out.append(Trial(index, params, error=str(err)))
            continue
        out.append(_as_trial(index, params, done))
    return out


def _units(family: Family, task: str, settings: Sequence[Mapping[str, Any]], together: bool) -> list[list[int]]:
    """The trials (indices into ``settings``) that train as one unit: those whose parameters differ
    only in the estimator class's ``together_params``, when it has a ``fit_together`` hook (and
    ``together``); else each trial alone. Units keep the order of their first trial."""
    cls = family.estimator_class(task)
    if not together or together_hook(cls) is None:
        return [[i] for i in range(len(settings))]
    free = set(getattr(cls, "together_params", ()))
    units: dict[tuple, list[int]] = {}
    for i, params in enumerate(settings):
        key = tuple(sorted((name, repr(value)) for name, value in params.items() if name not in free))
        units.setdefault(key, []).append(i)
    return list(units.values())


def budget_search(family_key: str, task: str, prepared: PreparedData, *, budget: float,
                  n_trials: int | None = None, params: Mapping[str, Any] | None = None, seed: int = 0,
                  n_jobs: int | None = None, store: RunStore | None = None, progress: Progress | None = None,
                  device: str | None = None, name: str | None = None, refine: int | None = None,
                  search: Mapping[str, SearchRange] | None = None, together: bool = True) -> SearchResult:
    """Run a feature-budget search and return every trial with the best one within the budget.

    Parameters
    ----------
    budget : int or float
        At most this many features (a count), or this fraction of the input columns.
    n_trials : int, optional
        Fits to run (default: the family's ``feature_selection.trials``).
    params : dict, optional
        Fixed parameters; the family's searched parameters are drawn on top of them.
    n_jobs : int, optional
        Worker processes (default: every usable core; one on a GPU, where trials run in turn).
    store : RunStore, optional
        Store every trial as a run (tagged as one search); without it trials keep their estimator.
    progress : Progress, optional
        A job's progress handle: one record per finished trial; a cancel stops the search.
    refine : int, optional
        Trials that follow the random ones: the best trial within the budget with its λ lowered
        (:func:`weaker_variants`). Default: a quarter of ``n_trials`` (at least 2) when the search
        draws the family's λ, else none.
    search : dict of SearchRange, optional
        Ranges that widen or replace the family's by parameter name (e.g. also draw
        ``max_epochs``); the family's ``feature_selection.search`` otherwise.
    together : bool
        Train the trials of one shape as one batched fit when the family's estimator class offers
        it (``fit_together``); False trains every trial alone (the same trials, to float rounding).
    """
    family = get_family(family_key)
    if family.feature_selection is None:
        raise TreevizError(f"{family.label} does not select features, so it has no feature-budget search.")
    n_trials = int(n_trials or family.feature_selection.trials)
    if n_trials < 1:
        raise TreevizError("A feature-budget search needs at least one trial.")
    k = budget_size(budget, prepared.X_train.shape[1])
    strength = strength_param(family, search)
    refine = (max(2, n_trials // 4) if strength is not None and n_trials >= 4 else 0) if refine is None else int(refine)
    settings = sample_params(family, task, params, n_trials, seed, search)
    search_id = f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    label = name or f"{family.short_label} on {prepared.dataset.name}, at most {k} features"
    tag = {"id": search_id, "kind": KIND, "label": label, "budget": k, "size": n_trials + refine, "seed": int(seed)}
    tag = tag if store is not None else None
    common = {"n_jobs": n_jobs, "store": store, "tag": tag, "label": label, "progress": progress, "device": device,
              "together": together}
    if progress is not None:
        progress.stages(1)
        progress.begin(n_trials + refine)
    trials = run_trials(family_key, task, prepared, settings, **common)
    if refine and strength is not None:
        trials += run_trials(family_key, task, prepared,
                             weaker_variants(trials, k, task, strength, refine, family.param(strength, task)),
                             start=n_trials, **common)
    trials.sort(key=lambda t: t.index)
    return SearchResult(search_id, task, k, prepared.X_train.shape[1], tuple(trials))


def run_trials(family_key: str, task: str, prepared: PreparedData, settings: Sequence[Mapping[str, Any]], *,
               start: int = 0, n_jobs: int | None = None, store: RunStore | None = None,
               tag: dict[str, Any] | None = None, label: str = "trial", progress: Progress | None = None,
               device: str | None = None, together: bool = True) -> list[Trial]:
    """Train one trial per entry of ``settings`` (indices from ``start``), in ``n_jobs`` worker
    processes (default: every usable core; one on a GPU), batching trials of one shape when the
    family offers it; the finished trials in completion order. :func:`budget_search` runs its
    random and refinement trials through this; a search continued in parts calls it with the
    settings of :func:`sample_params` it has not run yet."""
    family = get_family(family_key)
    on_gpu = device is not None and resolve_device(device).startswith("cuda")
    most = 1 if on_gpu else max(1, int(n_jobs or threads.usable_cores()))
    units = _units(family, task, settings, together)
    workers = min(most, len(units))
    inner = None if workers <= 1 else max(1, threads.usable_cores() // workers)
    calls = [(family_key, task, start + i, dict(p), prepared, store, tag, f"{label} · trial {start + i + 1}", device,
              inner) for i, p in enumerate(settings)]
    trials: list[Trial] = []
    _run_trials([[calls[i] for i in unit] for unit in units], workers, trials, progress, task, done=start)
    return trials


def _run_trials(units: list[list[tuple]], workers: int, trials: list[Trial], progress: Progress | None,
                task: str, done: int = 0) -> None:
    """Run ``units`` (lists of :func:`_trial` calls, see :func:`_trials`; in worker processes when
    ``workers`` > 1), appending each finished trial."""
    if not units:
        return
    results = (_trials(u) for u in units) if workers <= 1 else \
        Parallel(n_jobs=workers, return_as="generator_unordered")(delayed(_trials)(u) for u in units)
    try:
        for unit in results:
            for trial in unit:
                trials.append(trial)
                if progress is not None:
                    progress.record({"trial": done + len(trials), "index": trial.index, "n_features": trial.n_features,
                                     "score": selection_score(trial.metrics, task), "error": trial.error})
    except TrainingCancelled:
        if hasattr(results, "close"):
            results.close()
        raise


def strength_param(family: Family, search: Mapping[str, SearchRange] | None = None) -> str | None:
    """The parameter that sets how many features a model keeps: the family's λ (its λ path's
    parameter), when the budget search draws it; None otherwise."""
    path, selection = family.lambda_path, family.feature_selection
    if path is None or selection is None or path.param not in {**selection.search, **(search or {})}:
        return None
    return path.param


def weaker_variants(trials: Sequence[Trial], budget: int, task: str, strength: str, count: int,
                    spec: Any) -> list[dict[str, Any]]:
    """``count`` copies of the best trial within the budget with its λ lowered (factors 0.9 down to
    0.5), so that they keep more features, up to the budget. Empty when no trial is within it."""
    best = select_best(trials, budget, task)
    if best is None or count < 1:
        return []
    factors = np.geomspace(0.9, 0.5, count) if count > 1 else np.array([0.8])
    out = []
    for i, factor in enumerate(factors):
        values = dict(best.params)
        values[strength] = spec.validate(float(f"{values[strength] * factor:.4g}"))
        if "random_state" in values:
            values["random_state"] = int(values["random_state"]) + 100_000 + i
        out.append(values)
    return out


@dataclass(frozen=True)
class SearchJob:
    """A job function that runs one feature-budget search into a store and returns its id. A
    plain object, so the job manager can send it to a worker process."""

    family_key: str
    task: str
    params: dict[str, Any]
    prepared: PreparedData
    budget: float
    n_trials: int
    store: RunStore
    seed: int = 0
    device: str | None = None

    def __call__(self, progress: Progress) -> str:
        return budget_search(self.family_key, self.task, self.prepared, budget=self.budget, n_trials=self.n_trials,
                             params=self.params, seed=self.seed, store=self.store, progress=progress,
                             device=self.device).search_id


def searches(store: RunStore) -> dict[str, list[RunRecord]]:
    """Stored feature-budget searches: id -> its trials in order (newest search first)."""
    groups = tagged_groups(store, KIND)
    ordered = sorted(groups.items(), key=lambda kv: max(r.created for r in kv[1]), reverse=True)
    return {k: sorted(v, key=lambda r: int(r.sweep.get("index", 0))) for k, v in ordered}


def stored_best(records: Sequence[RunRecord]) -> RunRecord | None:
    """The chosen trial of a stored search (the same rule as :func:`select_best`)."""
    if not records:
        return None
    return select_best(records, int(records[0].sweep["budget"]), records[0].task)
