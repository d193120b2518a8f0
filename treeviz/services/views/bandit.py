"""Learning from bandit feedback, compared (the Bandit page's work; the ``"bandit"`` view).

A family offering the ``"bandit"`` view has estimators that learn online from bandit feedback:
``fit(X, y, *, callbacks, eval_set, feature_names, comparator)`` plays a stream of the training
rows while the labels stay with an oracle that answers only the loss of what was played, and
records, every few rounds, ``round``, ``queries`` (loss queries so far), ``avg_loss`` (mean loss
incurred since the start), ``regret`` (against ``comparator``), and the held-out ``val_score``
(accuracy, or R²) and, for regression, ``val_rmse`` on ``eval_set``.

The family declares what its bandit view compares (:class:`models.schema.Comparison`, from
``family.comparison("bandit")``): the reference family, with the parameters it shares with the
bandit, and the baselines. For every seed, :func:`bandit_curves` runs, on the same stream length
and held-out points:

* the reference (for DGT-Bandit: supervised DGT, every training label seen, with the same height,
  layers and quantiser), the model one would get with full supervision. Its held-out score is the
  reference line, and its losses on the bandit's own stream are the comparator of the regret;
* the bandit family itself with the parameters given (``random_state`` = the seed);
* every declared baseline (for DGT-Bandit: the online linear model under the same protocol,
  estimator, optimiser and budget). A baseline builder is called as
  ``builder(task, params, random_state, device)`` with the bandit's parameters and returns an
  unfitted learner that fits as the bandit does.

The learners are scored on the test split (the validation split when it is empty). Every record
is published as it is made (``progress.record``), tagged with its ``method`` and ``seed``, so a
page can draw the curves while the job runs; the job returns the same rows. Cancelling stops the
fit in progress and returns the rows made so far. :func:`curve_bands` turns rows into the mean and
95% confidence interval across seeds against the number of loss queries, :func:`reference_band`
the supervised line, :func:`final_table` the last numbers of every method.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from models.base import Callback
from models.devices import resolve_device
from models.ground import threads
from models.ground.errors import TrainingCancelled, TreevizError
from models.registry import get_family
from treeviz.services.data import PreparedData
from treeviz.services.experiments.training import build_estimator
from treeviz.services.jobs.manager import Progress

TASKS = ("classification", "regression")
#: Keys of a record kept in a row (``elapsed_s`` is left out, so equal seeds give equal rows).
RECORD_KEYS = ("round", "queries", "reward", "played_loss", "avg_loss", "regret", "val_score", "val_rmse",
               "val_loss")
#: Records a supervised fit publishes at most (it may record thousands of steps).
SUPERVISED_RECORDS = 50
CONFIDENCE = 0.95


def curve_keys(task: str) -> dict[str, str]:
    """The row key of each figure: the held-out ``score`` (accuracy, or RMSE in the target's units),
    the running average ``reward`` (classification) or loss played (regression), and ``regret``."""
    if task == "classification":
        return {"score": "val_score", "reward": "avg_reward", "regret": "regret"}
    return {"score": "val_rmse", "reward": "avg_loss", "regret": "regret"}


#: The values each curve can take: a confidence band is clipped to them (a t interval over a few seeds
#: near 100% accuracy would otherwise reach past it). Regret has no bound.
RANGES: dict[str, tuple[float, float]] = {"val_score": (0.0, 1.0), "avg_reward": (0.0, 1.0),
                                          "val_rmse": (0.0, math.inf), "avg_loss": (0.0, math.inf)}


def metric_range(key: str) -> tuple[float, float]:
    """The smallest and largest value curve ``key`` can take (see :data:`RANGES`)."""
    return RANGES.get(key, (-math.inf, math.inf))


def metric_name(task: str) -> str:
    """What the held-out curve shows."""
    return "held-out accuracy" if task == "classification" else "held-out RMSE"


def _held_out(prepared: PreparedData) -> tuple[str, np.ndarray, np.ndarray]:
    part = "test" if prepared.X_test.shape[0] else "val"
    X, y = prepared.X(part), prepared.labels(part)
    if X.shape[0] == 0:
        raise TreevizError("This data set's split has no test or validation points to score on; give the split a "
                           "test fraction on the Data page.")
    return part, X, y


def _score(task: str, model: Any, X: np.ndarray, y: np.ndarray) -> float:
    pred = model.predict(X)
    if task == "classification":
        return float(np.mean(np.asarray(pred).astype(str) == np.asarray(y).astype(str)))
    diff = np.asarray(pred, dtype=np.float64).reshape(-1) - np.asarray(y, dtype=np.float64).reshape(-1)
    return float(np.sqrt(np.mean(diff**2)))


class _Publish(Callback):
    """Publishes a bandit learner's records to the job, tagged with its method and seed (each
    fit is one stage of the job); ``Progress.record`` raises once the job is cancelled, which
    ends the fit with the rounds played so far, and so does ``on_step`` between records."""

    def __init__(self, progress: Progress | None, rows: list[dict[str, Any]], tag: dict[str, Any],
                 task: str) -> None:
        self.progress, self.rows, self.tag, self.task = progress, rows, tag, task

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        if self.progress is not None:
            self.progress.begin(kwargs.get("total"))

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        record = kwargs.get("record", {})
        row = {**self.tag, **{k: record[k] for k in RECORD_KEYS if k in record}}
        if self.task == "classification" and "avg_loss" in row:
            row["avg_reward"] = 1.0 - float(row["avg_loss"])
        self.rows.append(row)
        if self.progress is not None:
            self.progress.record(row)

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        if self.progress is not None and self.progress.cancelled:
            raise TrainingCancelled()


class _SupervisedProgress(Callback):
    """Progress of the supervised fit: about :data:`SUPERVISED_RECORDS` steps published (not
    rows of the result), a cancel checked after every epoch and in ``on_step``."""

    def __init__(self, progress: Progress | None, tag: dict[str, Any]) -> None:
        self.progress, self.tag, self.every, self.seen = progress, tag, 1, 0

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        total = kwargs.get("total")
        self.every = max(1, math.ceil(int(total) / SUPERVISED_RECORDS)) if total else 1
        if self.progress is not None:
            self.progress.begin(math.ceil(int(total) / self.every) if total else None)

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        if self.progress is None:
            return
        self.seen += 1
        if self.seen % self.every == 0:
            self.progress.record({**self.tag, "epoch": self.seen})
        else:
            self.on_step(estimator)

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        if self.progress is not None and self.progress.cancelled:
            raise TrainingCancelled()


def bandit_curves(family_key: str, task: str, params: Mapping[str, Any], prepared: PreparedData,
                  seeds: Sequence[int] = (0,), *, baseline: bool = True,
                  supervised_params: Mapping[str, Any] | None = None, progress: Progress | None = None,
                  device: str | None = None) -> list[dict[str, Any]]:
    """The rows of a comparison (see the module docstring).

    Parameters
    ----------
    family_key, task, params
        A family offering the ``"bandit"`` view, ``classification`` or ``regression``, and its
        parameters (``random_state`` and ``device`` are set here).
    prepared
        The data: the stream is its training split, the held-out points its test split (else
        validation split).
    seeds
        One run of every method per seed (the seed of the stream, the draws and the start).
    baseline
        Also run the family's declared baselines.
    supervised_params
        Extra parameters of the reference model (e.g. fewer epochs).
    progress, device
        The job's progress handle; the device of the torch models.

    Returns
    -------
    list of dict
        Curve rows ``method``, ``seed``, ``round``, ``queries``, ``avg_loss``, ``regret``,
        ``val_score`` ... (``avg_reward`` for classification), one per record of each bandit fit;
        and per seed one reference row ``method`` = the declared reference label, ``seed``,
        ``reference`` (its held-out accuracy or RMSE).
    """
    family = get_family(family_key)
    if not family.offers("bandit"):
        raise TreevizError(f"{family.label} does not learn from bandit feedback; choose a bandit family.")
    if task not in TASKS or prepared.dataset.task != task:
        raise TreevizError("Learning from bandit feedback needs a classification or regression data set; choose one "
                           "of those.")
    comparison = family.comparison("bandit")
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise TreevizError("Give at least one seed.")
    _, X_eval, y_eval = _held_out(prepared)
    X, y = prepared.X_train, prepared.labels("train")
    names = prepared.dataset.feature_names
    bandit_params = {k: v for k, v in params.items() if k not in ("random_state", "device")}
    # the bandit's effective parameters (defaults included), checked before anything runs
    full = build_estimator(family_key, task, bandit_params, prepared, device=device).get_params()
    shared = comparison.reference_params(full, y)
    supervised_eval = (prepared.X_val, prepared.labels("val")) if prepared.X_test.shape[0] and \
        prepared.X_val.shape[0] else None
    if progress is not None:
        progress.stages(len(seeds) * (2 + (len(comparison.baselines) if baseline else 0)))
    rows: list[dict[str, Any]] = []

    def stop() -> bool:
        return progress is not None and progress.cancelled

    for seed in seeds:
        # the supervised tree first: its losses on the stream are the regret's comparator
        tag = {"method": comparison.reference_label, "seed": seed}
        reference = get_family(comparison.reference).make(
            task, {**shared, **dict(supervised_params or {}), "random_state": seed},
            **({"device": device} if device is not None else {}))
        # batches of a small tree: on the CPU a second torch thread only adds its synchronisation (the
        # same fit took 0.2 s on one thread and 17 s on two of a busy 2-core machine)
        with threads.limited(1) if resolve_device(device) == "cpu" else contextlib.nullcontext():
            reference.fit(X, y, callbacks=[_SupervisedProgress(progress, tag)], eval_set=supervised_eval,
                          feature_names=names)
        if stop():
            return rows
        row = {**tag, "reference": _score(task, reference, X_eval, y_eval)}
        rows.append(row)
        if progress is not None:
            progress.record(row)
        learners: list[tuple[str, Any]] = [
            (family.short_label, build_estimator(family_key, task, {**bandit_params, "random_state": seed}, prepared,
                                                 device=device))]
        if baseline:
            learners.extend((label, comparison.baseline(label)(task, bandit_params, seed, device))
                            for label in comparison.baselines)
        for method, learner in learners:
            learner.fit(X, y, callbacks=[_Publish(progress, rows, {"method": method, "seed": seed}, task)],
                        eval_set=(X_eval, y_eval), feature_names=names, comparator=reference)
            if stop():
                return rows
    return rows


@dataclass(frozen=True)
class BanditCurveJob:
    """A job function for :func:`bandit_curves` (a plain object, so the job manager can send it to
    a worker process). Returns the rows."""

    family_key: str
    task: str
    params: dict[str, Any]
    prepared: PreparedData
    seeds: tuple[int, ...] = (0,)
    baseline: bool = True
    supervised_params: dict[str, Any] | None = None
    device: str | None = None

    def __call__(self, progress: Progress) -> list[dict[str, Any]]:
        return bandit_curves(self.family_key, self.task, self.params, self.prepared, self.seeds,
                             baseline=self.baseline, supervised_params=self.supervised_params, progress=progress,
                             device=self.device)


# ------------------------------------------------------------------------------- summaries
def _interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and the 95% Student-t confidence interval of the mean (the mean itself for one value)."""
    mean = float(values.mean())
    if values.size < 2:
        return mean, mean, mean
    half = float(student_t.ppf(0.5 + CONFIDENCE / 2, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size))
    return mean, mean - half, mean + half


def _clipped(stats: tuple[float, float, float], bounds: tuple[float, float]) -> tuple[float, float, float]:
    mean, low, high = stats
    return mean, min(max(low, bounds[0]), bounds[1]), max(min(high, bounds[1]), bounds[0])


def methods(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The bandit methods with curve rows, in order of appearance."""
    return list(dict.fromkeys(str(r["method"]) for r in rows if "queries" in r))


def curve_bands(rows: Iterable[Mapping[str, Any]], key: str) -> list[dict[str, Any]]:
    """Per method, ``key`` against the loss queries: ``method``, ``queries``, ``mean``, ``low``,
    ``high`` (the 95% confidence interval of the mean across seeds) and ``n`` (seeds at that
    point; fewer while a job runs or after a cancel). Rows without ``key`` are skipped. The interval
    is clipped to the values ``key`` can take (:func:`metric_range`)."""
    rows = [r for r in rows if "queries" in r and r.get(key) is not None and math.isfinite(float(r[key]))]
    out = []
    for method in methods(rows):
        points: dict[int, list[float]] = {}
        for r in rows:
            if r["method"] == method:
                points.setdefault(int(r["queries"]), []).append(float(r[key]))
        queries = sorted(points)
        stats = [_clipped(_interval(np.asarray(points[q])), metric_range(key)) for q in queries]
        out.append({"method": method, "queries": queries, "mean": [s[0] for s in stats],
                    "low": [s[1] for s in stats], "high": [s[2] for s in stats],
                    "n": [len(points[q]) for q in queries]})
    return out


def reference_band(rows: Iterable[Mapping[str, Any]], task: str | None = None) -> dict[str, Any] | None:
    """The reference's held-out score across seeds: ``method``, ``mean``, ``low``, ``high``,
    ``n``; None before the first one is known. The interval is clipped to the score's range: at
    least 0 (accuracy and RMSE both), at most 1 for a classification ``task`` (by default, the task
    whose score the curve rows carry)."""
    rows = list(rows)
    refs = [r for r in rows if "reference" in r]
    values = np.asarray([float(r["reference"]) for r in refs])
    if values.size == 0:
        return None
    if task is None:
        task = "classification" if any("val_score" in r for r in rows) else "regression"
    key = curve_keys(task)["score"]
    mean, low, high = _clipped(_interval(values), metric_range(key))
    return {"method": str(refs[0]["method"]), "mean": mean, "low": low, "high": high, "n": int(values.size)}


def final_table(rows: Sequence[Mapping[str, Any]], task: str) -> list[dict[str, Any]]:
    """One row per method: the numbers of each seed's last record, averaged (mean and the 95%
    interval's half width of the held-out score), and the supervised reference."""
    keys = curve_keys(task)
    score = metric_name(task)
    reward = "average reward" if task == "classification" else "average loss played"
    out = []
    for method in methods(rows):
        last: dict[int, Mapping[str, Any]] = {}
        for r in rows:
            if r["method"] == method and "queries" in r:
                last[int(r["seed"])] = r
        finals = list(last.values())

        def mean_of(key: str, finals=finals) -> float | None:
            values = [float(r[key]) for r in finals if r.get(key) is not None]
            return float(np.mean(values)) if values else None

        values = np.asarray([float(r[keys["score"]]) for r in finals if r.get(keys["score"]) is not None])
        mean, low, _ = _interval(values) if values.size else (None, None, None)
        out.append({"method": method, "seeds": len(finals), "loss queries": mean_of("queries"), score: mean,
                    "± (95% CI)": None if mean is None else mean - low, reward: mean_of(keys["reward"]),
                    "regret": mean_of("regret")})
    ref = reference_band(rows, task)
    if ref is not None:
        out.append({"method": ref["method"], "seeds": ref["n"], "loss queries": None, score: ref["mean"],
                    "± (95% CI)": ref["mean"] - ref["low"], reward: None, "regret": None})
    return out
