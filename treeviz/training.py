"""Train one model on prepared data, score it, and (optionally) store it as a run.

This is the one training path used by the app's pages, background jobs and the command line::

    prepared = prepare(dataset, PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 3}, prepared, store=RunStore())

In the app the same call runs inside a :class:`treeviz.jobs.JobManager` job, which supplies the
progress / cancel callback (see :func:`job_fn`). A cancelled fit keeps the epochs it finished;
the run is still stored, with status ``"cancelled"``, so no work is lost.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from models.base import Callback
from models.registry import get_family
from treeviz.data.preprocess import PrepConfig, PreparedData, prepare
from treeviz.errors import TrainingCancelled, TreevizError
from treeviz.metrics import dendrogram_purity
from treeviz.runs import FINGERPRINT_RE, RunRecord, RunStore, tree_size

PARTS = ("train", "val", "test")


@dataclass(frozen=True)
class TrainingRequest:
    """What to train, as plain values (for the CLI, job labels and reproducing a run).

    ``dataset`` is a catalogue key (``"iris"``) or the fingerprint of a data set in a run store.
    """

    family: str
    task: str
    dataset: str
    params: dict[str, Any] = field(default_factory=dict)
    prep: PrepConfig = field(default_factory=PrepConfig)
    device: str | None = None
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name or f"{get_family(self.family).label.split(' (')[0]} on {self.dataset}"

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "task": self.task, "dataset": self.dataset,
                "params": dict(self.params), "prep": self.prep.to_dict(), "device": self.device,
                "name": self.name}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TrainingRequest":
        try:
            return cls(family=str(data["family"]), task=str(data["task"]),
                       dataset=str(data["dataset"]), params=dict(data.get("params") or {}),
                       prep=PrepConfig.from_dict(data.get("prep") or {}),
                       device=data.get("device"), name=data.get("name"))
        except KeyError as err:
            raise TreevizError(f"A training request needs a value for {err}.") from None

    def load_prepared(self, store: RunStore | None = None) -> PreparedData:
        """The request's data set (from ``store`` by fingerprint, else the catalogue), prepared."""
        if store is not None and FINGERPRINT_RE.fullmatch(self.dataset) and \
                (store.datasets_dir / self.dataset).is_dir():
            dataset = store.load_dataset(self.dataset)
        else:
            from treeviz.data.catalogue import load_dataset

            dataset = load_dataset(self.dataset)
        return prepare(dataset, self.prep)

    def run(self, prepared: PreparedData | None = None, *, store: RunStore | None = None,
            callbacks: Iterable[Callback] = ()) -> RunRecord | tuple[Any, dict[str, Any]]:
        """:func:`train_run` for this request (preparing the data unless given)."""
        prepared = prepared if prepared is not None else self.load_prepared(store)
        return train_run(self.family, self.task, self.params, prepared, store=store,
                         callbacks=callbacks, device=self.device, name=self.name)


def evaluate(estimator: Any, prepared: PreparedData, task: str | None = None) -> dict[str, float]:
    """Scores of a fitted estimator on every non-empty split.

    Returns
    -------
    dict
        classification: ``{part}_accuracy``; regression: ``{part}_r2`` (splits of 2+ rows) and
        ``{part}_rmse``; clustering with reference classes: ``{part}_ari`` (adjusted Rand index).
        ``part`` is ``train``, ``val`` or ``test``.
    """
    task = task or prepared.dataset.task
    out: dict[str, float] = {}
    for part in PARTS:
        X = prepared.X(part)
        if X.shape[0] == 0:
            continue
        if task == "classification":
            y = np.asarray(prepared.labels(part)).astype(str)
            pred = np.asarray(estimator.predict(X)).astype(str)
            out[f"{part}_accuracy"] = float(np.mean(pred == y))
        elif task == "regression":
            y = np.asarray(prepared.labels(part), dtype=np.float64)
            pred = np.asarray(estimator.predict(X), dtype=np.float64).reshape(y.shape)
            if y.size >= 2:
                from sklearn.metrics import r2_score

                out[f"{part}_r2"] = float(r2_score(y, pred))
            out[f"{part}_rmse"] = float(np.sqrt(np.mean((pred - y) ** 2)))
        elif prepared.dataset.y is not None and hasattr(estimator, "predict"):
            from sklearn.metrics import adjusted_rand_score

            ref = prepared.dataset.y[{"train": prepared.train_idx, "val": prepared.val_idx,
                                      "test": prepared.test_idx}[part]]
            out[f"{part}_ari"] = float(adjusted_rand_score(ref, np.asarray(estimator.predict(X))))
            if hasattr(estimator, "to_tree") and np.bincount(ref).max() >= 2:
                tree = estimator.to_tree()
                out[f"{part}_dendrogram_purity"] = dendrogram_purity(tree, X, ref, "standard")
                out[f"{part}_dendrogram_purity_code"] = dendrogram_purity(tree, X, ref, "code")
    return out


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def train_run(family_key: str, task: str, params: Mapping[str, Any] | None,
              prepared: PreparedData, *, store: RunStore | None = None,
              callbacks: Iterable[Callback] = (), device: str | None = None,
              name: str | None = None, notes: Iterable[str] = ()
              ) -> RunRecord | tuple[Any, dict[str, Any]]:
    """Build, fit and score one estimator; store it as a run when ``store`` is given.

    Parameters
    ----------
    family_key, task, params
        Registry family key, task and hyperparameters (validated by ``Family.make``).
    prepared
        The split, preprocessed data; the fit sees ``X_train`` and ``labels("train")`` (class
        names for classification, None for clustering) and, when the validation split is not
        empty, ``eval_set=(X_val, labels("val"))``.
    store
        Where to save the run; None trains without saving.
    callbacks
        Passed to ``fit`` (a :class:`treeviz.jobs.JobCallback` in the app).
    device
        Passed to the estimator only if it has a ``device`` parameter.
    name, notes
        The run's display name (default "<family> on <data set> #n") and extra notes.

    Returns
    -------
    RunRecord or (estimator, metrics)
        The stored run's record when ``store`` is given, else the fitted estimator and its
        metrics (scores from :func:`evaluate` plus ``n_nodes``, ``n_leaves``, ``depth``).
    """
    estimator = build_estimator(family_key, task, params, prepared, device=device)
    duration, stopped = fit_estimator(estimator, task, prepared, callbacks)
    return finish_run(estimator, prepared, family_key, task, duration, stopped, store=store, name=name,
                      notes=notes)


def build_estimator(family_key: str, task: str, params: Mapping[str, Any] | None,
                    prepared: PreparedData, *, device: str | None = None) -> Any:
    """An unfitted estimator from the registry, checked against the data set's task."""
    family = get_family(family_key)
    cls = family.estimator_class(task)  # a sentence if the family lacks this task
    data_task = prepared.dataset.task
    if task != "clustering" and task != data_task:
        raise TreevizError(
            f"{family.label} was asked for {task}, but '{prepared.dataset.name}' is a {data_task} "
            f"data set; choose a {data_task} model or another data set."
        )
    extra = {"device": device} if device is not None and _accepts(cls.__init__, "device") else {}
    return family.make(task, params or {}, **extra)


def fit_estimator(estimator: Any, task: str, prepared: PreparedData,
                  callbacks: Iterable[Callback] = ()) -> tuple[float, bool]:
    """Fit on the training split (validation split as ``eval_set``); returns (seconds, stopped).

    ``stopped`` is True when a callback cancelled training.
    """
    fit_kwargs: dict[str, Any] = {}
    callbacks = list(callbacks)
    if callbacks:
        if not _accepts(estimator.fit, "callbacks"):
            raise TreevizError(f"{type(estimator).__name__} cannot report progress, so it cannot run as a job.")
        fit_kwargs["callbacks"] = callbacks
    if prepared.X_val.shape[0] > 0 and _accepts(estimator.fit, "eval_set"):
        fit_kwargs["eval_set"] = (prepared.X_val, prepared.labels("val"))
    if _accepts(estimator.fit, "feature_names"):
        fit_kwargs["feature_names"] = prepared.dataset.feature_names
    y_train = None if task == "clustering" else prepared.labels("train")
    start = time.perf_counter()
    estimator.fit(prepared.X_train, y_train, **fit_kwargs)
    return time.perf_counter() - start, bool(getattr(estimator, "stopped_early_", False))


def finish_run(estimator: Any, prepared: PreparedData, family_key: str, task: str, duration: float,
               stopped: bool, *, store: RunStore | None = None, name: str | None = None,
               notes: Iterable[str] = (), sweep: Mapping[str, Any] | None = None
               ) -> RunRecord | tuple[Any, dict[str, Any]]:
    """Score a fitted estimator and store it as a run (or return it with its metrics)."""
    try:
        scores = evaluate(estimator, prepared, task)
    except Exception:
        if stopped:  # cancelled before the model could predict: nothing worth keeping
            raise TrainingCancelled() from None
        raise
    scores.update(model_cost(estimator, prepared.X_train))
    metrics = {**scores, **tree_size(estimator)}
    if store is None:
        return estimator, metrics
    notes = tuple(notes)
    if stopped:
        n = len(getattr(estimator, "history_", []))
        notes += (f"Training was stopped at the user's request after {n} epoch(s).",)
    return store.save(estimator, prepared, name=name, family=family_key, task=task,
                      params=estimator.get_params(deep=False), metrics=scores,
                      duration_s=duration, status="cancelled" if stopped else "finished",
                      notes=notes, sweep=sweep)


def model_cost(estimator: Any, X: np.ndarray) -> dict[str, float]:
    """Size and inference cost of the model's tree(s) (``tao.md`` §10), summed over an ensemble:
    ``n_decision_nodes``, ``n_nonzero_weights``, ``n_params`` and ``flops`` (mean nonzero
    parameters met per sample, over ``X``: the training split). Empty for models without trees."""
    try:
        trees = estimator.to_trees()
    except Exception:  # noqa: BLE001 - a model without a tree still gets stored
        return {}
    out = {"n_decision_nodes": 0, "n_nonzero_weights": 0, "n_params": 0, "flops": 0.0}
    for tree in trees:
        out["n_decision_nodes"] += int(tree.decision_nodes.size)
        out["n_nonzero_weights"] += tree.n_nonzero_weights()
        out["n_params"] += tree.n_params()
        if X.shape[0]:
            out["flops"] += tree.flops(X)
    return out


def job_fn(family_key: str, task: str, params: Mapping[str, Any] | None, prepared: PreparedData,
           *, store: RunStore, device: str | None = None, name: str | None = None
           ) -> Callable[[list[Callback]], RunRecord]:
    """A function for :meth:`treeviz.jobs.JobManager.submit` that trains and stores one run.

    Example: ``manager.submit(job_fn("cart", "classification", {}, prepared, store=store),
    label="CART on iris")``; the job's ``result`` is the :class:`RunRecord`.
    """
    params = dict(params or {})

    def fn(callbacks: list[Callback]) -> RunRecord:
        return train_run(family_key, task, params, prepared, store=store, callbacks=callbacks,
                         device=device, name=name)

    return fn
