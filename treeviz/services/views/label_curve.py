"""Error against the fraction of labelled points: a semi-supervised model beside the baselines the
TAO thesis compares it with, on the same labelled subsets (the semi-supervised view).

A family offering the ``"semi_supervised"`` view declares what the view compares it with
(:class:`models.schema.Comparison`, ``family.comparison("semi_supervised")``): its parameter for
the share of the training labels a fit keeps (the role ``"labelled_fraction"``; the rest hidden),
the supervised reference family and the parameters the reference shares with it. Its estimators
record which training points kept their label in ``labelled_``. For every fraction and labelled
subset (seed), :func:`label_curve` fits:

* the semi-supervised model itself, on every training point (its labelled fraction = the
  fraction, ``random_state`` = the seed, the other parameters as given);
* the reference on the labelled points only, with the shared parameters' effective values (for
  LapTAO: supervised TAO, the thesis's *oblique–lbl*, with the same depth, ℓ1 penalty, leaves and
  iterations), the model a user would get without the unlabelled points;
* for classification, label propagation (scikit-learn's ``LabelSpreading``, kNN kernel, 7
  neighbours) on every training point with the same labels, predicting the test points.

Every method is scored on the test split (the validation split when it is empty), which none of
them saw: the error rate for classification, RMSE for regression. The semi-supervised model is
also scored on its own unlabelled training points (transductive), reported as its own row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.registry import family_of_class, get_family
from treeviz.services.data import PreparedData
from treeviz.services.experiments.training import build_estimator
from treeviz.services.jobs.manager import Progress

DEFAULT_FRACTIONS = (0.01, 0.05, 0.2)
PROPAGATION_NEIGHBOURS = 7
PROPAGATION = "label propagation (scikit-learn)"


def _error(task: str, truth: np.ndarray, pred: np.ndarray) -> float:
    if task == "classification":
        return float(np.mean(np.asarray(pred).astype(str) != np.asarray(truth).astype(str)))
    diff = np.asarray(pred, dtype=np.float64).reshape(-1) - np.asarray(truth, dtype=np.float64).reshape(-1)
    return float(np.sqrt(np.mean(diff**2)))


def metric_name(task: str) -> str:
    return "test error" if task == "classification" else "test RMSE"


def supervised_label(family_key: str) -> str:
    """The name of the family's supervised reference in the rows (e.g. "supervised TAO (labelled
    points only)")."""
    return get_family(family_key).comparison("semi_supervised").reference_label


def _supervised_params(params: Mapping[str, Any], model: Any) -> dict[str, Any]:
    """The reference's parameters matching the semi-supervised model: the model's effective values
    of the shared parameters (``params`` over its settings), a value the fit chose (the attribute
    ``<name>_``, such as the depth of an automatic depth) winning over the setting."""
    comparison = family_of_class(type(model)).comparison("semi_supervised")
    values = {**model.get_params(), **dict(params)}
    for name in comparison.shared.values():
        fitted = getattr(model, f"{name}_", None)
        if fitted is not None:
            values[name] = fitted
    return {k: v for k, v in comparison.reference_params(values).items() if v is not None}


def labelled_only_tree(task: str, params: Mapping[str, Any], model: Any, X: np.ndarray, y: np.ndarray,
                       seed: int = 0) -> Any:
    """The family's supervised reference fitted on the points ``model`` kept labelled
    (``model.labelled_``), with the shared parameters' values (for LapTAO: TAO with the same depth,
    penalty, leaves and iterations): what the labelled points alone give."""
    labelled = np.asarray(model.labelled_, dtype=bool)
    reference = family_of_class(type(model)).comparison("semi_supervised").reference
    tree = get_family(reference).make(task, {**_supervised_params(params, model), "random_state": int(seed)})
    return tree.fit(X[labelled], np.asarray(y)[labelled])


def label_curve(family_key: str, task: str, params: Mapping[str, Any], prepared: PreparedData,
                fractions: Sequence[float] = DEFAULT_FRACTIONS, seeds: Sequence[int] = (0, 1), *,
                progress: Progress | None = None, device: str | None = None) -> list[dict[str, Any]]:
    """One row per method, fraction and seed: ``method``, ``fraction``, ``seed``, ``n_labelled``,
    ``error`` (see the module docstring)."""
    family = get_family(family_key)
    if not family.offers("semi_supervised"):
        raise TreevizError(f"{family.label} does not learn from unlabelled points; choose a semi-supervised family.")
    comparison = family.comparison("semi_supervised")
    fraction_param = comparison.param("labelled_fraction")
    if task not in ("classification", "regression"):
        raise TreevizError("Error against labelled points needs a classification or regression data set.")
    fractions = sorted({float(f) for f in fractions})
    if not fractions or not all(0.0 < f <= 1.0 for f in fractions):
        raise TreevizError("Give labelled fractions between 0 and 1 (for example 0.01, 0.05 and 0.2).")
    if not seeds:
        raise TreevizError("Give at least one labelled subset (seed).")
    part = "test" if prepared.X_test.shape[0] else "val"
    X_eval, y_eval = prepared.X(part), prepared.labels(part)
    if X_eval.shape[0] == 0:
        raise TreevizError("This data set's split has no test or validation points to score on; give the "
                           "split a test fraction on the Data page.")
    X, y = prepared.X_train, prepared.labels("train")
    if progress is not None:
        progress.begin(len(fractions) * len(seeds))
    rows: list[dict[str, Any]] = []
    for fraction in fractions:
        for seed in seeds:
            values = {**dict(params), fraction_param: fraction, "random_state": int(seed)}
            model = build_estimator(family_key, task, values, prepared, device=device)
            model.fit(X, y, feature_names=prepared.dataset.feature_names)
            labelled = np.asarray(model.labelled_, dtype=bool)
            n_lab = int(labelled.sum())
            base = {"fraction": fraction, "seed": int(seed), "n_labelled": n_lab}
            rows.append({**base, "method": family.short_label, "error": _error(task, y_eval, model.predict(X_eval))})
            if (~labelled).any():
                rows.append({**base, "method": f"{family.short_label} (its unlabelled training points)",
                             "error": _error(task, y[~labelled], model.predict(X[~labelled]))})
            sup = labelled_only_tree(task, values, model, X, y, seed)
            rows.append({**base, "method": comparison.reference_label,
                         "error": _error(task, y_eval, sup.predict(X_eval))})
            if task == "classification":
                error = _propagation_error(X, y, labelled, X_eval, y_eval)
                rows.append({**base, "method": PROPAGATION, "error": error})
            if progress is not None:
                progress.record({"fraction": fraction, "seed": int(seed), "n_labelled": n_lab})
    return rows


def _propagation_error(X: np.ndarray, y: np.ndarray, labelled: np.ndarray, X_eval: np.ndarray,
                       y_eval: np.ndarray) -> float:
    from sklearn.semi_supervised import LabelSpreading  # deferred: only this view needs it

    names, codes = np.unique(np.asarray(y).astype(str), return_inverse=True)
    partial = np.where(labelled, codes, -1)
    k = int(min(PROPAGATION_NEIGHBOURS, X.shape[0] - 1))
    with np.errstate(divide="ignore", invalid="ignore"):  # a graph component without labels: NaN scores
        model = LabelSpreading(kernel="knn", n_neighbors=k).fit(X, partial)
        pred = names[model.predict(X_eval)]
    return _error("classification", y_eval, pred)


@dataclass(frozen=True)
class LabelCurveJob:
    """A job function for :func:`label_curve` (a plain object, so the job manager can send it to a
    worker process). Returns the rows."""

    family_key: str
    task: str
    params: dict[str, Any]
    prepared: PreparedData
    fractions: tuple[float, ...] = DEFAULT_FRACTIONS
    seeds: tuple[int, ...] = (0, 1)
    device: str | None = None

    def __call__(self, progress: Progress) -> list[dict[str, Any]]:
        return label_curve(self.family_key, self.task, self.params, self.prepared, self.fractions, self.seeds,
                           progress=progress, device=self.device)
