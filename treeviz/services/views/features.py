"""Feature selection, read from any model's trees, and the importance baselines it is compared with.

:func:`feature_table` lists every input feature with the weight norm the model's trees give it
(over every decision node of every tree: a Skinny Trees group norm, or for an axis-aligned tree
the square root of its number of splits) and whether it is used at all. :func:`importance_baselines`
selects the same number of features the way tree toolkits do, by feature importance, and refits on
them: a random forest and gradient boosting (scikit-learn), each fitted on every feature, ranked by
``feature_importances_``, and refitted on its top k, then scored on the validation and test splits
with the metrics :func:`treeviz.services.experiments.training.evaluate` reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import r2_score

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers.metrics import class_auc, feature_weight_norms, features_used
from treeviz.services.data import PreparedData


def _ensemble(name: str, **params: Any) -> Any:
    """A scikit-learn ensemble by class name; imported on first use, since every page's state
    imports this module and the ensembles are a quarter second to import."""
    import sklearn.ensemble  # deferred: heavy, and only the Features page's baselines need it

    return getattr(sklearn.ensemble, name)(**params)


#: The importance-based selectors, by name: (classifier, regressor) factories taking a seed.
BASELINES = {
    "random forest importance": (lambda seed: _ensemble("RandomForestClassifier", n_estimators=200, random_state=seed,
                                                        n_jobs=1),
                                 lambda seed: _ensemble("RandomForestRegressor", n_estimators=200, random_state=seed,
                                                        n_jobs=1)),
    "gradient boosting importance": (lambda seed: _ensemble("GradientBoostingClassifier", random_state=seed),
                                     lambda seed: _ensemble("GradientBoostingRegressor", random_state=seed)),
}


@dataclass(frozen=True)
class FeatureRow:
    """One input feature: its index, name, weight norm over all trees, and whether any tree uses it."""

    index: int
    name: str
    norm: float
    used: bool


def feature_table(trees: Sequence[Tree]) -> list[FeatureRow]:
    """Every feature of the trees, strongest first (unused features last, in input order)."""
    if not trees:
        raise TreevizError("The model has no trees to read its features from.")
    norms, used = feature_weight_norms(list(trees)), features_used(list(trees))
    rows = [FeatureRow(j, trees[0].feature_names[j], float(norms[j]), bool(used[j])) for j in range(norms.size)]
    return sorted(rows, key=lambda r: (not r.used, -r.norm, r.index))


def split_scores(predict: Any, predict_proba: Any, classes: np.ndarray | None, prepared: PreparedData,
                 columns: np.ndarray, task: str) -> dict[str, float]:
    """Validation and test scores of a model that reads ``columns`` of the prepared data."""
    out: dict[str, float] = {}
    for part in ("val", "test"):
        X = prepared.X(part)[:, columns]
        if X.shape[0] == 0:
            continue
        y = np.asarray(prepared.labels(part))
        if task == "classification":
            y = y.astype(str)
            out[f"{part}_accuracy"] = float(np.mean(np.asarray(predict(X)).astype(str) == y))
            auc = class_auc(y, predict_proba(X), np.asarray(classes).astype(str))
            if auc is not None:
                out[f"{part}_auc"] = auc
        else:
            pred = np.asarray(predict(X), dtype=np.float64).reshape(y.shape)
            if y.shape[0] >= 2:
                out[f"{part}_r2"] = float(r2_score(y, pred))
            out[f"{part}_rmse"] = float(np.sqrt(np.mean((pred - y.astype(np.float64)) ** 2)))
    return out


@dataclass(frozen=True)
class BaselineResult:
    """An importance-based selection at a budget: the method, the features it kept (indices, most
    important first) and the refitted model's validation and test scores."""

    method: str
    features: tuple[int, ...]
    metrics: dict[str, float]


def importance_baselines(prepared: PreparedData, k: int, task: str, *, seed: int = 0) -> list[BaselineResult]:
    """Each importance baseline at ``k`` features: fit on all, keep the top k, refit, score."""
    if task not in ("classification", "regression"):
        raise TreevizError("Importance baselines compare classification or regression models.")
    p = prepared.X_train.shape[1]
    if not 1 <= k <= p:
        raise TreevizError(f"A budget of {k} features is outside 1 to {p}, the number of features.")
    X, y = prepared.X_train, np.asarray(prepared.labels("train"))
    if task == "classification":
        y = y.astype(str)
    out = []
    for method, (make_classifier, make_regressor) in BASELINES.items():
        make = make_classifier if task == "classification" else make_regressor
        ranking = np.argsort(-make(seed).fit(X, y).feature_importances_, kind="stable")[:k]
        model = make(seed).fit(X[:, ranking], y)
        proba = getattr(model, "predict_proba", None)
        metrics = split_scores(model.predict, proba, getattr(model, "classes_", None), prepared, ranking, task)
        out.append(BaselineResult(method, tuple(int(j) for j in ranking), metrics))
    return out
