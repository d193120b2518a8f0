"""Train one model on prepared data, score it, and (optionally) store it as a run.

This is the one training path used by the app's pages, background jobs and sweeps::

    prepared = prepare(dataset, PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 3}, prepared, store=RunStore())

In the app the same call runs inside a :class:`treeviz.services.jobs.manager.JobManager` job (see :func:`job_fn`);
:class:`ProgressCallback` turns the estimator's training callbacks into the job's neutral
:class:`~treeviz.services.jobs.manager.Progress` handle. A cancelled fit keeps the epochs it finished; the run is
still stored, with status ``"cancelled"``, so no work is lost.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import adjusted_rand_score, r2_score

from models.base import Callback
from models.ground import compilation
from models.ground.errors import TrainingCancelled, TreevizError
from models.registry import get_family
from models.schema import ANY_DATA_TASKS
from treeviz.readers.metrics import class_auc, dendrogram_purity, features_used, knn_accuracy, trustworthiness_score
from treeviz.services.data.preprocess import PreparedData
from treeviz.services.jobs.manager import COMPILING, Progress
from treeviz.services.store.record import RunRecord, tree_size
from treeviz.services.store.runs import RunStore

PARTS = ("train", "val", "test")
#: Every note that says a fit went wrong starts with this (:func:`fit_warnings`); the app shows
#: such notes as warnings (:func:`run_warnings`).
WARNING = "Warning:"


def evaluate(estimator: Any, prepared: PreparedData, task: str | None = None) -> dict[str, float]:
    """Scores of a fitted estimator on every non-empty split.

    Returns
    -------
    dict
        classification: ``{part}_accuracy`` and, for models with ``predict_proba``, ``{part}_auc``
        (ROC AUC, one-vs-one for more than two classes; left out when the split holds one class);
        regression: ``{part}_r2`` (splits of 2+ rows) and
        ``{part}_rmse``; clustering with reference classes: ``{part}_ari`` (adjusted Rand index);
        embedding: ``train_objective`` (the estimator's ``objective_``, its embedding objective on
        the training points), ``{part}_trustworthiness`` and, on a data set with classes,
        ``{part}_knn_accuracy`` (5-NN vote in the embedding: leave-one-out on the training points,
        voted by the training points for the other splits). ``part`` is ``train``, ``val`` or
        ``test``.
    """
    task = task or prepared.dataset.task
    if task == "embedding":
        return evaluate_embedding(estimator, prepared)
    out: dict[str, float] = {}
    for part in PARTS:
        X = prepared.X(part)
        if X.shape[0] == 0:
            continue
        if task == "classification":
            y = np.asarray(prepared.labels(part)).astype(str)
            pred = np.asarray(estimator.predict(X)).astype(str)
            out[f"{part}_accuracy"] = float(np.mean(pred == y))
            if hasattr(estimator, "predict_proba") and hasattr(estimator, "classes_"):
                auc = class_auc(y, estimator.predict_proba(X), np.asarray(estimator.classes_).astype(str))
                if auc is not None:
                    out[f"{part}_auc"] = auc
        elif task == "regression":
            y = np.asarray(prepared.labels(part), dtype=np.float64)
            pred = np.asarray(estimator.predict(X), dtype=np.float64).reshape(y.shape)
            if y.size >= 2:
                out[f"{part}_r2"] = float(r2_score(y, pred))
            out[f"{part}_rmse"] = float(np.sqrt(np.mean((pred - y) ** 2)))
        elif prepared.dataset.y is not None and hasattr(estimator, "predict"):
            ref = prepared.dataset.y[{"train": prepared.train_idx, "val": prepared.val_idx,
                                      "test": prepared.test_idx}[part]]
            out[f"{part}_ari"] = float(adjusted_rand_score(ref, np.asarray(estimator.predict(X))))
            if hasattr(estimator, "to_tree") and np.bincount(ref).max() >= 2:
                tree = estimator.to_tree()
                out[f"{part}_dendrogram_purity"] = dendrogram_purity(tree, X, ref, "standard")
                out[f"{part}_dendrogram_purity_code"] = dendrogram_purity(tree, X, ref, "code")
    return out


def evaluate_embedding(estimator: Any, prepared: PreparedData) -> dict[str, float]:
    """The embedding scores of :func:`evaluate`: every split is mapped by ``transform``."""
    out: dict[str, float] = {}
    objective = getattr(estimator, "objective_", None)
    if isinstance(objective, (int, float)) and np.isfinite(objective):
        out["train_objective"] = float(objective)
    labelled = prepared.classes("train") is not None
    Z_train = np.asarray(estimator.transform(prepared.X_train))
    for part in PARTS:
        X = prepared.X(part)
        if X.shape[0] == 0:
            continue
        Z = Z_train if part == "train" else np.asarray(estimator.transform(X))
        trust = trustworthiness_score(X, Z)
        if np.isfinite(trust):
            out[f"{part}_trustworthiness"] = trust
        if labelled:
            if part == "train":
                acc = knn_accuracy(Z, prepared.classes("train"))
            else:
                acc = knn_accuracy(Z_train, prepared.classes("train"), Z, prepared.classes(part))
            if np.isfinite(acc):
                out[f"{part}_knn_accuracy"] = acc
    return out


class ProgressCallback(Callback):
    """Reports an estimator's training to a job's :class:`~treeviz.services.jobs.manager.Progress` handle: each fit
    starts a stage, each epoch record is a step (which raises TrainingCancelled once the job is
    asked to stop, so the estimator ends its loop with the epochs done so far), and the work done or
    planned total an estimator reports itself (``on_progress``) goes to ``advance``; ``on_step``,
    asked inside long phases between records, raises it too."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        self.progress.begin(kwargs.get("total"))

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        self.progress.record(kwargs.get("record", {}))

    def on_progress(self, estimator: Any, **kwargs: Any) -> None:
        self.progress.advance(kwargs.get("done"), kwargs.get("total"))

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        if self.progress.cancelled:
            raise TrainingCancelled()

    def on_compile(self, estimator: Any, *, compiling: bool) -> None:
        """A kernel starts (or ends) compiling: the job's phase says so while it lasts."""
        self.progress.phase(COMPILING if compiling else None)


def train_run(family_key: str, task: str, params: Mapping[str, Any] | None,
              prepared: PreparedData, *, store: RunStore | None = None,
              callbacks: Iterable[Callback] = (), device: str | None = None,
              name: str | None = None, notes: Iterable[str] = (), sweep: Mapping[str, Any] | None = None
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
        Passed to ``fit`` (a :class:`ProgressCallback` in the app).
    device
        Passed to the estimator when its family has a ``device`` parameter.
    name, notes
        The run's display name (default "<family> on <data set> #n") and extra notes.
    sweep
        The tag of the sweep or search the run belongs to (stored as ``RunRecord.sweep``).

    Returns
    -------
    RunRecord or (estimator, metrics)
        The stored run's record when ``store`` is given, else the fitted estimator and its
        metrics (scores from :func:`evaluate` plus ``n_nodes``, ``n_leaves``, ``depth``).
    """
    estimator = build_estimator(family_key, task, params, prepared, device=device)
    duration, stopped = fit_estimator(estimator, task, prepared, callbacks)
    return finish_run(estimator, prepared, family_key, task, duration, stopped, store=store, name=name,
                      notes=notes, sweep=sweep)


def build_estimator(family_key: str, task: str, params: Mapping[str, Any] | None,
                    prepared: PreparedData, *, device: str | None = None) -> Any:
    """An unfitted estimator from the registry, checked against the data set's task."""
    family = get_family(family_key)
    family.estimator_class(task)  # a sentence if the family lacks this task
    data_task = prepared.dataset.task
    if task not in ANY_DATA_TASKS and task != data_task:
        raise TreevizError(
            f"{family.label} was asked for {task}, but '{prepared.dataset.name}' is a {data_task} "
            f"data set; choose a {data_task} model or another data set."
        )
    takes_device = any(p.name == "device" for p in family.params_for(task))
    extra = {"device": device} if device is not None and takes_device else {}
    return family.make(task, params or {}, **extra)


def fit_estimator(estimator: Any, task: str, prepared: PreparedData,
                  callbacks: Iterable[Callback] = ()) -> tuple[float, bool]:
    """Fit on the training split (validation split as ``eval_set``, except for an embedding,
    which has no validation loss); returns (seconds, stopped).

    The seconds are the fit's, without the time numba spent compiling kernels during it or loading
    them from its cache: that time is measured apart (:func:`models.ground.compilation.watching`)
    and subtracted, so a first training stores the same time as the next (the app and ``treeviz warmup``
    compile the kernels beforehand, :mod:`treeviz.services.experiments.warmup`; this covers a fit
    that meets a kernel before they are done). What a torch family's first fit in a process would
    import inside the clock is imported before it starts (:func:`first_use_imports`). While a
    kernel compiles, each callback's ``on_compile(estimator, compiling=True/False)`` hook, where it
    has one, is told.

    ``stopped`` is True when a callback cancelled training. Clustering fits get no labels
    (``y=None``); an embedding's fit gets the training rows' classes when the data set has them
    (else None), which it may use only to choose its settings (the tree embedding's depth).
    """
    y_train, fit_kwargs = _fit_inputs(task, prepared)
    callbacks = list(callbacks)
    first_use_imports(estimator)
    with compilation.watching(_compile_notice(estimator, callbacks)) as compiling:
        start = time.perf_counter()
        estimator.fit(prepared.X_train, y_train, callbacks=callbacks, **fit_kwargs)
        seconds = time.perf_counter() - start
    return max(0.0, seconds - compiling.seconds), bool(getattr(estimator, "stopped_early_", False))


def first_use_imports(estimator: Any) -> None:
    """Import now what a torch family's first fit in a process would import inside its clock:
    torch's compiler stack (``torch._dynamo``, which ``torch.optim`` imports when it builds the
    process's first optimizer; 2-3 s, once per process). A torch family is one that takes a
    ``device``; other families import nothing here."""
    if "device" in estimator.get_params(deep=False) and "torch._dynamo" not in sys.modules:
        import torch._dynamo  # noqa: F401  deferred: torch is heavy; only torch families need it


def _compile_notice(estimator: Any, callbacks: Sequence[Any]) -> Callable[[bool], None]:
    """Tells the callbacks that have an ``on_compile`` hook when a kernel starts or ends compiling."""
    def notice(active: bool) -> None:
        for cb in callbacks:
            hook = getattr(cb, "on_compile", None)
            if hook is not None:
                hook(estimator, compiling=active)
    return notice


def _fit_inputs(task: str, prepared: PreparedData) -> tuple[Any, dict[str, Any]]:
    """The training labels (None for clustering; for an embedding the classes, or None) and the keyword
    arguments of :func:`fit_estimator`'s fit, less callbacks: feature names and the validation split."""
    fit_kwargs: dict[str, Any] = {"feature_names": prepared.dataset.feature_names}
    if prepared.X_val.shape[0] > 0 and task != "embedding":
        fit_kwargs["eval_set"] = (prepared.X_val, prepared.labels("val"))
    if task == "embedding":
        return prepared.classes("train"), fit_kwargs
    return (None if task in ANY_DATA_TASKS else prepared.labels("train")), fit_kwargs


def together_hook(estimator_class: type) -> Callable[..., list[str | None]] | None:
    """The estimator class's hook for fitting several estimators as one batched program, or None.

    A family offers it as ``fit_together(estimators, X, y, *, eval_set=None, feature_names=None)``
    on its estimator class (a static or class method): it fits each estimator as its own ``fit``
    would and returns one entry per estimator, None or the error of a fit that failed (that
    estimator left unfitted). ``together_params`` on the class names the parameters that may
    differ among estimators of one batch.
    """
    hook = getattr(estimator_class, "fit_together", None)
    return hook if callable(hook) else None


def fit_together(estimators: Sequence[Any], task: str, prepared: PreparedData) -> tuple[list[str | None], float]:
    """Fit estimators of one class on the training split as :func:`fit_estimator` fits one, through
    the class's :func:`together_hook`; returns each estimator's error (None when it fitted) and
    the seconds the batch took (without compilation)."""
    hook = together_hook(type(estimators[0]))
    if hook is None:
        raise TypeError(f"{type(estimators[0]).__name__} cannot fit several estimators together.")
    y_train, fit_kwargs = _fit_inputs(task, prepared)
    with compilation.watching() as compiling:  # compile time left out, as in fit_estimator
        start = time.perf_counter()
        errors = hook(list(estimators), prepared.X_train, y_train, **fit_kwargs)
        seconds = time.perf_counter() - start
    return list(errors), max(0.0, seconds - compiling.seconds)


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
    notes = tuple(notes) + fit_warnings(estimator, scores, prepared, task)
    if stopped:
        n = len(getattr(estimator, "history_", []))
        notes += (f"Training was stopped at the user's request after {n} epoch(s).",)
    return store.save(estimator, prepared, name=name, family=family_key, task=task,
                      params=estimator.get_params(deep=False), metrics=scores,
                      duration_s=duration, status="cancelled" if stopped else "finished",
                      notes=notes, sweep=sweep)


def fit_warnings(estimator: Any, scores: Mapping[str, float], prepared: PreparedData,
                 task: str) -> tuple[str, ...]:
    """Notes (each starting with :data:`WARNING`) saying that a fit diverged or ended no better
    than a constant predictor on its own training split; none for a fit that learned something.

    ``scores`` are :func:`evaluate`'s. A fit has diverged when a loss or objective in its
    ``history_`` is not a finite number. It is no better than a constant when its training
    accuracy is below the most common class's share, or equal to it with an AUC of at most 0.5
    (classification), or its training R² is at most 0, the R² of predicting the mean (regression).
    """
    out = []
    bad = _non_finite_losses(getattr(estimator, "history_", []))
    if bad:
        out.append(f"{WARNING} training diverged: {', '.join(bad)} became infinite or not a number; the model "
                   f"is not to be trusted{_advice(estimator)}")
    constant = _constant_comparison(scores, prepared, task)
    if constant:
        out.append(f"{WARNING} the model is no better than {constant} on its own training data, so training "
                   f"failed or diverged{_advice(estimator)}")
    return tuple(out)


def run_warnings(record: RunRecord) -> list[str]:
    """The notes of a stored run that say its fit went wrong (:func:`fit_warnings`)."""
    return [note for note in record.notes if note.startswith(WARNING)]


def _non_finite_losses(history: Iterable[Mapping[str, Any]]) -> list[str]:
    """The loss and objective keys of ``history`` with a value that is not a finite number."""
    bad: dict[str, None] = {}
    for record in history:
        for key, value in record.items():
            if ("loss" in key or "objective" in key) and not _finite(value):
                bad[key] = None
    return list(bad)


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def _constant_comparison(scores: Mapping[str, float], prepared: PreparedData, task: str) -> str:
    """What a constant predictor does as well as the model on the training split ("" if it
    does not): ``always predicting <class> (accuracy …)`` or ``predicting the mean (R² …)``."""
    if task == "classification" and "train_accuracy" in scores:
        labels, counts = np.unique(np.asarray(prepared.labels("train")).astype(str), return_counts=True)
        share = float(counts.max() / counts.sum())
        accuracy, auc = float(scores["train_accuracy"]), scores.get("train_auc")
        chance = auc is None or float(auc) <= 0.5
        if share < 1.0 and (accuracy < share - 1e-12 or (accuracy <= share + 1e-12 and chance)):
            shown = "" if auc is None else f", AUC {float(auc):.3g}"
            return (f"always predicting the most common class '{labels[np.argmax(counts)]}' (training accuracy "
                    f"{accuracy:.3g} against its {share:.3g}{shown})")
    if task == "regression" and "train_r2" in scores:
        y = np.asarray(prepared.labels("train"), dtype=np.float64)
        r2 = float(scores["train_r2"])
        if np.ptp(y, axis=0).max() > 0 and not r2 > 1e-9:
            return f"always predicting the mean (training R² {r2:.4g} against its 0)"
    return ""


def _advice(estimator: Any) -> str:
    """The end of a warning's sentence: what to try (a lower learning rate, when there is one)."""
    rate = estimator.get_params(deep=False).get("learning_rate") if hasattr(estimator, "get_params") else None
    if isinstance(rate, (int, float)):
        return f"; lower the learning rate (now {rate:g}) and train again."
    return "; try other settings and train again."


def model_cost(estimator: Any, X: np.ndarray) -> dict[str, float]:
    """Size and inference cost of the model's tree(s), summed over an ensemble:
    ``n_decision_nodes`` (active ones: a pruned node costs nothing), ``n_nonzero_weights``, ``n_params`` (counted as in
    :meth:`models.ground.tree.Tree.n_params`), ``flops`` (nonzero parameters met per sample on its
    root-to-leaf path, averaged over ``X``: the training split) and ``n_features`` (features some
    tree uses)."""
    trees = estimator.to_trees()
    out = {"n_decision_nodes": 0, "n_nonzero_weights": 0, "n_params": 0, "flops": 0.0,
           "n_features": int(features_used(trees).sum())}
    for tree in trees:
        out["n_decision_nodes"] += int(np.count_nonzero(tree.active[tree.decision_nodes] > 0))  # pruned: none
        out["n_nonzero_weights"] += tree.n_nonzero_weights()
        out["n_params"] += tree.n_params()
        if X.shape[0]:
            out["flops"] += tree.flops(X)
    return out


@dataclass(frozen=True)
class TrainingJob:
    """A job function that trains and stores one run. A plain object (not a closure), so the job
    manager can send it to a worker process; call it with a progress handle."""

    family_key: str
    task: str
    params: dict[str, Any]
    prepared: PreparedData
    store: RunStore
    device: str | None = None
    name: str | None = None

    def __call__(self, progress: Progress) -> RunRecord:
        return train_run(self.family_key, self.task, self.params, self.prepared, store=self.store,
                         callbacks=[ProgressCallback(progress)], device=self.device, name=self.name)


def job_fn(family_key: str, task: str, params: Mapping[str, Any] | None, prepared: PreparedData,
           *, store: RunStore, device: str | None = None, name: str | None = None) -> TrainingJob:
    """A function for :meth:`treeviz.services.jobs.manager.JobManager.submit` that trains and stores one run.

    Example: ``manager.submit(job_fn("cart", "classification", {}, prepared, store=store),
    label="CART on iris")``; the job's ``result`` is the :class:`RunRecord`.
    """
    return TrainingJob(family_key, task, dict(params or {}), prepared, store, device, name)
