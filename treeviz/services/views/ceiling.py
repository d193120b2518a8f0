"""A black-box ceiling for Compare: scikit-learn's histogram gradient boosting trained on the split the
compared runs were trained on, scored as the runs are (:func:`treeviz.services.experiments.training.evaluate`).

It answers "how much accuracy does the interpretable tree cost?". It is a reference, never a run: it
is not stored, has no tree, and the page keeps it beside the runs (by the prepared data's fingerprint).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.ground.errors import TreevizError
from treeviz.services.data import PreparedData
from treeviz.services.experiments.training import evaluate
from treeviz.services.jobs.manager import Progress
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore

#: What the ceiling is called wherever it is shown.
LABEL = "HistGradientBoosting (black-box ceiling)"
#: The tasks it is trained for.
TASKS = ("classification", "regression")


@dataclass(frozen=True)
class Ceiling:
    """The ceiling's scores on every split (``metrics``, keyed as a run's), the prepared data it was
    trained on (``prepared_fingerprint``), the seed and the fit time in seconds."""

    task: str
    prepared_fingerprint: str
    metrics: dict[str, float]
    seed: int
    fit_s: float
    label: str = LABEL


def shared_split(runs: Sequence[RunRecord]) -> tuple[str, int]:
    """The prepared data (its fingerprint) most of ``runs`` were trained on, and how many were: the
    runs of one data set may differ in their split or scaling, and the ceiling is trained on one."""
    if not runs:
        raise TreevizError("There are no runs to train a ceiling beside; train a model first.")
    [(fingerprint, count)] = Counter(r.prepared_fingerprint for r in runs).most_common(1)
    return fingerprint, count


def ceiling_estimator(task: str, seed: int):
    """The unfitted model: scikit-learn's defaults, seeded (its early stopping on large data draws a
    validation part of the training rows)."""
    from sklearn.ensemble import (  # deferred: scikit-learn's ensembles load only when a ceiling is asked for
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )

    if task == "classification":
        return HistGradientBoostingClassifier(random_state=seed)
    if task == "regression":
        return HistGradientBoostingRegressor(random_state=seed)
    raise TreevizError(f"A black-box ceiling is offered for classification and regression, not {task}.")


def train_ceiling(prepared: PreparedData, task: str) -> Ceiling:
    """Fit the ceiling on ``prepared``'s training rows (the arrays the runs were fitted on), seeded by
    the split's seed, and score it on every split."""
    if prepared.X_train.shape[0] < 2:
        raise TreevizError("The training split has fewer than 2 rows; a ceiling needs more data.")
    seed = int(prepared.config.seed)
    model = ceiling_estimator(task, seed)
    y = prepared.labels("train")
    y = np.asarray(y).astype(str) if task == "classification" else np.asarray(y, dtype=np.float64)
    start = time.perf_counter()
    model.fit(prepared.X_train, y)
    fit_s = time.perf_counter() - start
    return Ceiling(task=task, prepared_fingerprint=prepared.fingerprint, metrics=evaluate(model, prepared, task),
                   seed=seed, fit_s=fit_s)


@dataclass(frozen=True)
class CeilingJob:
    """A job function training the ceiling on a stored run's data (a plain object, so the job manager
    can send it to a worker process). Returns the :class:`Ceiling`."""

    store: RunStore
    run_id: str
    task: str

    def __call__(self, progress: Progress) -> Ceiling:
        progress.begin(1)
        ceiling = train_ceiling(self.store.load_prepared(self.run_id), self.task)
        progress.advance(1, 1)
        return ceiling
