"""What the Embeddings page compares: a tree embedding beside the other embeddings of the same
training points, each scored with the same measures.

A family offering the ``"embedding"`` view has estimators with ``transform`` (the tree mapping
F), ``apply`` (each point's leaf), ``free_embedding_`` (Z0, the free embedding of the training
points), ``direct_embedding_`` and ``direct_transform`` (the direct fit F0: the tree fitted to
Z0, the start of the path), ``embedding_objective(X)`` (the objective E of points X with the
model's settings), ``objective_``, ``free_objective_`` and ``direct_fit_objective_`` (E of the
three training embeddings) and ``history_`` records with ``step`` and ``E_tree``.

:func:`compare_embeddings` puts beside the tree embedding F(X): the free embedding Z0, the
direct fit F0(X), the baselines the family declares (``family.comparison("embedding")``; for the
tree embedding, as in the thesis, a CART regression tree fitted to Z0, its depth chosen on a 30 %
validation split) and UMAP (umap-learn, 15 neighbours), the embedding a user would otherwise pick.
A baseline builder is called as ``builder(X_train, Z0, random_state)`` and returns a fitted
regressor whose ``predict`` maps points (its size is read from scikit-learn's ``tree_`` and
``get_depth`` when it has them). Each gets the model's embedding objective E on the training points (the thesis's
only measure) and, marked as not from the thesis, 5-NN accuracy in 2-D (leave-one-out on the
training points; test points mapped through the mapping and voted on by the training points) and
trustworthiness. The free embedding has no mapping, so no test points. :class:`ComparisonJob`
runs it as a background job.

Progress: one unit a method (and one for the affinities), except UMAP, which reports nothing while
it fits and can take a minute: its first fit in a process compiles umap-learn's numba code (53.9 s
on digits, measured), later fits take seconds. Its share is its expected seconds
(:func:`umap_seconds`) at the pace of the methods before it, and while it fits the bar moves with
the time against that expectation (up to :data:`UMAP_CAP` of its share), so the time left counts
down instead of growing.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.registry import family_of_class
from treeviz.readers.metrics import knn_accuracy, trustworthiness_score
from treeviz.services.data import PreparedData
from treeviz.services.jobs.manager import Progress
from treeviz.services.store.runs import RunStore

#: The model's own methods, in the order shown (all compared in the thesis); the family's declared
#: baselines follow (the thesis's too), then :data:`UMAP`, which the thesis does not compare.
OWN_METHODS = ("tree embedding F(X)", "free embedding Z0", "direct TAO fit F0(X)")
UMAP = "UMAP"
OBJECTIVE_NAMES = {"tsne": "t-SNE KL", "ee": "elastic embedding E"}
#: UMAP's neighbours (its default), seed fixed for reproducible maps.
UMAP_NEIGHBOURS = 15
#: Seconds of UMAP's first fit in a process spent importing and compiling umap-learn (numba; its
#: cache is not kept), and seconds a training row once compiled (digits: 53.9 s for the first fit).
UMAP_FIRST_S = 50.0
UMAP_ROW_S = 0.003
#: How much of UMAP's share of the progress the clock may fill while it fits.
UMAP_CAP = 0.95


def umap_seconds(n_rows: int) -> float:
    """The seconds UMAP is expected to take on ``n_rows`` training rows in this process (its first
    fit here compiles umap-learn first)."""
    return (0.0 if "umap" in sys.modules else UMAP_FIRST_S) + 1.0 + UMAP_ROW_S * n_rows


class _Clock:
    """While a stage that reports nothing runs, advances the progress with the time against the
    seconds it is expected to take (from ``start`` units, by up to ``UMAP_CAP`` of ``units``)."""

    def __init__(self, progress: Progress, start: float, units: float, seconds: float) -> None:
        self._progress, self._start, self._units, self._seconds = progress, start, units, seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="treeviz-umap-clock", daemon=True)

    def _run(self) -> None:
        began = time.perf_counter()
        while not self._stop.wait(0.5):
            share = min(UMAP_CAP, (time.perf_counter() - began) / self._seconds)
            self._progress.advance(self._start + share * self._units)

    def __enter__(self) -> _Clock:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()  # no report of it may follow the stage's own


def objective_name(model: Any) -> str:
    """What E is called for this model ("t-SNE KL", "elastic embedding E")."""
    return OBJECTIVE_NAMES.get(str(getattr(model, "method", "")), "E")


def _baseline(builder: Any, X_train: np.ndarray, Z0: np.ndarray, X_test: np.ndarray | None, seed: int) -> tuple:
    fitted = builder(X_train, Z0, random_state=seed)
    size = {}
    if hasattr(fitted, "tree_"):
        size["nodes"] = int(fitted.tree_.node_count)
    if hasattr(fitted, "get_depth"):
        size["depth"] = int(fitted.get_depth())
    return fitted.predict(X_train), None if X_test is None else fitted.predict(X_test), size


def _umap(X_train: np.ndarray, X_test: np.ndarray | None, seed: int) -> tuple:
    from umap import UMAP  # deferred: umap-learn compiles with numba on first import (seconds)

    neighbours = int(min(UMAP_NEIGHBOURS, X_train.shape[0] - 1))
    reducer = UMAP(n_neighbors=neighbours, random_state=seed, n_jobs=1).fit(X_train)
    return np.asarray(reducer.embedding_), None if X_test is None else np.asarray(reducer.transform(X_test)), {}


def compare_embeddings(model: Any, prepared: PreparedData, *, include_umap: bool = True, seed: int = 0,
                       progress: Progress | None = None) -> dict[str, Any]:
    """The comparison table and coordinates of every method (see the module docstring).

    The test points are those of the test split (the validation split when the test split is
    empty). Returns a plain dict: ``objective_name``, ``test_part``, ``rows`` (one per method:
    ``method``, ``thesis``, ``objective``, ``knn_train``, ``knn_test``, ``trustworthiness``,
    ``seconds``, ``nodes``, ``depth``), ``train`` and ``test`` (method → coordinates, None
    where there are none) and ``classes`` (training and test class labels, or None).
    """
    for name in ("free_embedding_", "direct_embedding_", "direct_transform", "embedding_objective"):
        if not hasattr(model, name):
            raise TreevizError(f"{type(model).__name__} is not a tree embedding; pick an embedding run.")
    X_train = prepared.X_train
    test_part = "test" if prepared.X_test.shape[0] else ("val" if prepared.X_val.shape[0] else None)
    X_test = None if test_part is None else prepared.X(test_part)
    y_train = prepared.classes("train")
    y_test = None if test_part is None else prepared.classes(test_part)
    comparison = family_of_class(type(model)).comparison("embedding")
    baselines = list(comparison.baselines)
    methods = [*OWN_METHODS, *baselines, *([UMAP] if include_umap else [])]
    began = time.perf_counter()
    if progress is not None:
        progress.begin(len(methods) + 1)
    objective = model.embedding_objective(X_train)
    if progress is not None:
        progress.record({"stage": "affinities"})
    free = np.asarray(model.free_embedding_)
    builders = {
        "tree embedding F(X)": lambda: (model.transform(X_train),
                                        None if X_test is None else model.transform(X_test), {}),
        "free embedding Z0": lambda: (free, None, {}),
        "direct TAO fit F0(X)": lambda: (model.direct_transform(X_train),
                                         None if X_test is None else model.direct_transform(X_test), {}),
        **{label: (lambda label=label: _baseline(comparison.baseline(label), X_train, free, X_test, seed))
           for label in baselines},
        UMAP: lambda: _umap(X_train, X_test, seed),
    }
    rows, train, test = [], {}, {}
    for i, name in enumerate(methods):
        thesis = name != UMAP
        start = time.perf_counter()
        if name == UMAP and progress is not None:
            Z, Zt, size = _timed_stage(progress, builders[name], done=i + 1.0, pace=(i + 1.0) / (start - began),
                                       seconds=umap_seconds(X_train.shape[0]))
        else:
            Z, Zt, size = builders[name]()
        seconds = time.perf_counter() - start
        Z = np.asarray(Z, dtype=np.float64)
        row = {"method": name, "thesis": thesis, "objective": float(objective.embedding_value(Z)),
               "trustworthiness": trustworthiness_score(X_train, Z, seed=seed),
               "knn_train": None, "knn_test": None, "seconds": seconds if name not in OWN_METHODS else None,
               "nodes": size.get("nodes"), "depth": size.get("depth")}
        if y_train is not None:
            row["knn_train"] = knn_accuracy(Z, y_train)
            if Zt is not None and y_test is not None:
                row["knn_test"] = knn_accuracy(Z, y_train, Zt, y_test)
        rows.append({k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()})
        train[name] = Z
        test[name] = None if Zt is None else np.asarray(Zt, dtype=np.float64)
        if progress is not None:
            progress.record({"stage": name})
    return {"objective_name": objective_name(model), "test_part": test_part, "rows": rows, "train": train,
            "test": test, "classes": None if y_train is None else (np.asarray(y_train).astype(str),
                                                                    None if y_test is None else
                                                                    np.asarray(y_test).astype(str))}


def _timed_stage(progress: Progress, build: Any, *, done: float, pace: float, seconds: float) -> tuple:
    """Run ``build()``, the last stage, which reports nothing, as ``seconds`` of work at ``pace``
    units a second (the pace so far); the clock advances meanwhile."""
    units = max(1.0, seconds * pace)
    progress.advance(done, done + units)
    with _Clock(progress, done, units, seconds):
        out = build()
    progress.advance(done + units)
    return out


@dataclass(frozen=True)
class ComparisonJob:
    """A job function comparing a stored tree-embedding run with the other embeddings (a plain
    object, so the job manager can send it to a worker process). Returns ``(run_id, result)``."""

    store: RunStore
    run_id: str
    include_umap: bool = True

    def __call__(self, progress: Progress) -> tuple[str, dict[str, Any]]:
        model = self.store.load_model(self.run_id)
        prepared = self.store.load_prepared(self.run_id)
        return self.run_id, compare_embeddings(model, prepared, include_umap=self.include_umap, progress=progress)
