"""Machinery every treeviz estimator shares: parameter checks, device, seeds, callbacks, history,
feature and class names, and the hooks that model files use.

Estimators follow the scikit-learn contract (keyword-only ``__init__`` that only stores
parameters, ``fit`` that validates and returns ``self``, learned attributes ending in ``_``). On
top of it each one has

* its family, found from its class through the registry (:attr:`TreeEstimator.family_key`);
  the family's schema checks the parameters once before every ``fit`` (:func:`validated_fit`
  wraps each class's own fitting methods, as :data:`FIT_METHODS` names them, so no ``fit`` calls
  :meth:`TreeEstimator._validate_params` itself);
* ``to_tree()`` (or ``to_trees()`` for ensembles) returning :class:`models.ground.tree.Tree`;
* ``history_``: one record (a plain dict of numbers) per epoch or iteration;
* progress through callbacks passed to ``fit(..., callbacks=[...])``. The training loop calls
  :meth:`~TreeEstimator._begin_training`, :meth:`~TreeEstimator._record` after each epoch and
  :meth:`~TreeEstimator._end_training`; these notify every callback's ``on_train_begin``,
  ``on_epoch_end`` and ``on_train_end`` hooks with keyword arguments. A callback stops training
  by raising :class:`models.ground.errors.TrainingCancelled` (the estimator keeps the epochs done so
  far and sets ``stopped_early_``). Between records, every long inner loop (optimiser steps,
  node levels, iterations, trees) asks :meth:`~TreeEstimator._cancel_requested`, which calls
  the cheap ``on_step`` hook, so a cancel acts within seconds in phases that record nothing;
* scipy.sparse input: the class declares ``_sparse_input`` (``"densify"`` by default, or
  ``"native"``) and :mod:`models.sparse_input` makes the methods that take ``X`` follow it, so a
  family's own input checks see dense arrays only (a densified fit sets ``densified_input_``);
* ``_get_model_state()`` / ``_set_model_state()``: the family's learned arrays and values, which
  :meth:`~TreeEstimator._learned_state` completes with what every estimator stores (feature
  names, classes) for :mod:`models.persist`.

Callbacks are a ``fit`` argument, not a constructor parameter, because ``sklearn.clone``
deep-copies parameters and a callback holds live objects (a job, a threading.Event).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import train_test_split
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from models.devices import device_choice, step_size
from models.ground import display
from models.ground.errors import TrainingCancelled, TreevizError
from models.ground.jsonio import decode_labels, encode_labels, plain
from models.persist import save_model
from models.registry import family_of_class, registered_class
from models.sparse_input import X_METHODS, takes_sparse

if TYPE_CHECKING:  # annotations only: torch is heavy, and only the torch families train on tensors
    import torch


class Callback:
    """Base class for training callbacks: override the hooks you need.

    Every hook receives the estimator and keyword arguments, and should accept ``**kwargs`` so
    that new arguments never break it:

    * ``on_train_begin(estimator, total=...)``: ``total`` is the planned units of work (epochs,
      iterations, μ steps, trees; or None);
    * ``on_epoch_end(estimator, record=...)``: the record just appended to ``history_`` (one unit
      of work, unless the estimator reports its units itself);
    * ``on_progress(estimator, done=..., total=...)``: the units done so far, where they are not
      one per record (a phase of several units, work between records), and/or a revised planned
      total (a fit that predicts it stops early); either may be None (unchanged). At the end of a
      fit that was not cancelled, ``done`` reaches ``total``, so an early stop shows as the end;
    * ``on_step(estimator)``: often, inside long phases between records (optimiser steps, node
      levels, iterations, trees), only to let a callback raise ``TrainingCancelled``. It must be
      cheap and only read a flag: a forest may call it from a helper thread while it waits for
      its worker processes;
    * ``on_train_end(estimator)``: once, also when training was cancelled.
    """

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        """Called once before training."""

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        """Called after each epoch / iteration."""

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        """Called often between records; raise TrainingCancelled to stop training."""

    def on_progress(self, estimator: Any, **kwargs: Any) -> None:
        """Called when the estimator reports its work done or revises its planned total."""

    def on_train_end(self, estimator: Any, **kwargs: Any) -> None:
        """Called once after training."""


class CancelWhen(Callback):
    """Stops a fit once ``stop()`` is true: how an estimator hands its own cancel to a fit nested
    in it (the tree embedding's TAO tree, a forest's trees). Picklable when ``stop`` is."""

    def __init__(self, stop: Callable[[], bool]) -> None:
        self.stop = stop

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        if self.stop():
            raise TrainingCancelled()

    on_epoch_end = on_step


class CancelFlag:
    """Carries a cancel to worker processes (a forest's trees): a flag file that a watcher thread
    creates, within ``every`` seconds, once ``requested()`` is true. Use it as a context manager
    around the parallel work; the object is a picklable ``stop()`` function for the workers (only
    the file's path travels) and true once the flag is set.
    """

    def __init__(self, requested: Callable[[], bool], every: float = 0.1) -> None:
        self._requested, self._every = requested, float(every)
        self.path = ""

    def __enter__(self) -> CancelFlag:
        self._folder = tempfile.mkdtemp(prefix="treeviz-cancel-")
        self.path = os.path.join(self._folder, "cancel")
        self._done = threading.Event()
        if self._requested():  # a cancel that came first is set before any worker looks
            self.set()
        self._watcher = threading.Thread(target=self._watch, name="treeviz-cancel-watch", daemon=True)
        self._watcher.start()
        return self

    def _watch(self) -> None:
        while not self._done.wait(self._every):
            if self._requested():
                self.set()
                return

    def set(self) -> None:
        """Set the flag now (the workers' ``stop()`` becomes true)."""
        open(self.path, "w").close()

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        self._watcher.join()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __call__(self) -> bool:
        return os.path.exists(self.path)

    def __getstate__(self) -> dict[str, str]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, str]) -> None:
        self.path = state["path"]


def seed_everything(random_state: Any) -> np.random.Generator:
    """Seed torch from ``random_state`` and return a numpy Generator.

    ``random_state`` may be None (fresh entropy), an int, or a numpy RandomState/Generator,
    as in scikit-learn.
    """
    if isinstance(random_state, np.random.Generator):
        seed = int(random_state.integers(2**31 - 1))
    elif isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(2**31 - 1))
    elif random_state is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0] % (2**31 - 1))
    elif isinstance(random_state, numbers.Integral):
        seed = int(random_state)
    else:
        raise TreevizError(f"random_state must be None or an integer, got {random_state!r}.")
    import torch  # deferred: torch is heavy

    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def class_targets(estimator: BaseEstimator, X: Any, y: Any, eval_set: tuple[Any, Any] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """Validate a classifier's ``fit`` inputs: X as float64, y as class labels of at least two
    classes (sets ``estimator.classes_``). Returns ``(X, Y, eval_set)`` with Y the class indices and
    the validation set, if any, as (X_val, indices) keeping only rows of classes seen in y."""
    X, y = validate_data(estimator, X, y, dtype=np.float64)
    check_classification_targets(y)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(f"{type(estimator).__name__} needs at least 2 classes; got 1 class ({classes[0]!r}).")
    estimator.classes_ = classes
    ev = None
    if eval_set is not None:
        X_val = validate_data(estimator, eval_set[0], reset=False, dtype=np.float64)
        y_val = np.asarray(eval_set[1])
        known = np.isin(y_val, classes)
        ev = (X_val[known], np.searchsorted(classes, y_val[known]))
    return X, np.searchsorted(classes, y), ev


@dataclass
class TrainingTensors:
    """The tensors a torch family trains on, on the training device: rows X, targets Y, optional
    row weights W and an optional validation set (X_val, Y_val). Each family's training module
    says what its X and Y hold."""

    X: torch.Tensor
    Y: torch.Tensor
    W: torch.Tensor | None = None
    X_val: torch.Tensor | None = None
    Y_val: torch.Tensor | None = None


def hold_out_rows(n: int, n_val: int, rng: np.random.Generator, stratify: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Split rows ``0 … n − 1`` into sorted training and held-out rows (``n_val`` of them), with a
    seed drawn from ``rng``; stratified by ``stratify`` (class indices, or None) unless a class is
    too small to stratify. The early-stopping split of the families that hold out rows."""
    seed = int(rng.integers(2**31 - 1))
    rows = np.arange(n)
    try:
        train, val = train_test_split(rows, test_size=n_val, random_state=seed, stratify=stratify)
    except ValueError:  # a class too small to stratify
        train, val = train_test_split(rows, test_size=n_val, random_state=seed)
    return np.sort(train), np.sort(val)


#: The methods that train: each class's own are wrapped by :func:`validated_fit`.
FIT_METHODS = ("fit", "partial_fit", "fit_transform", "fit_predict")


def _has_family(cls: type) -> bool:
    """Whether the class is, or derives from, a registered estimator (so it has a schema)."""
    try:
        registered_class(cls)
    except TreevizError:
        return False
    return True


def validated_fit(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a fitting method so that the family's schema checks the estimator's parameters once,
    before anything else (a TreevizError sentence naming the parameter if a value is bad), and
    the checked values are kept in ``_checked_params`` for the method to read.

    A fit that calls another fitting method of the same object (``fit_transform`` calling
    ``fit``, a subclass's ``fit`` calling ``super().fit``) is checked once, by the outermost call.
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if vars(self).get("_fitting"):
            return method(self, *args, **kwargs)
        if _has_family(type(self)):
            self._checked_params = self._validate_params()
        else:  # a TreeEstimator of no registered family (a test double, a user's sketch): no schema to check
            self._checked_params = self.get_params(deep=False)
        self._fitting = True
        try:
            return method(self, *args, **kwargs)
        finally:
            vars(self).pop("_fitting", None)

    return wrapper


class TreeEstimator(BaseEstimator):
    """Base class of every treeviz estimator.

    Subclasses implement ``fit`` (which need not check its parameters: :func:`validated_fit`
    does it before every fitting method, and the checked values are in ``_checked_params``),
    ``to_tree`` (or ``to_trees``), ``_get_model_state`` and ``_set_model_state``.
    """

    #: What the class does with a scipy.sparse ``X`` (see :mod:`models.sparse_input`): "densify"
    #: (a dense copy, with a warning) or "native" (CSR/CSC taken as they are when a dense copy
    #: would not fit), and why a fit makes a dense copy (the warning's and ``densified_input_``'s).
    _sparse_input: ClassVar[str] = "densify"
    _densify_reason: ClassVar[str] = "its training computes with dense arrays"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._sparse_input not in ("densify", "native"):
            raise TypeError(f"{cls.__name__}._sparse_input must be 'densify' or 'native'.")
        for name in X_METHODS:
            method = vars(cls).get(name)
            if inspect.isfunction(method):
                setattr(cls, name, takes_sparse(method))
        for name in FIT_METHODS:  # outermost, so bad parameters are refused before the data is read
            method = vars(cls).get(name)
            if inspect.isfunction(method):
                setattr(cls, name, validated_fit(method))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # every estimator takes scipy.sparse input (see above)
        return tags

    # ------------------------------------------------------------------ family and parameters
    @property
    def family_key(self) -> str:
        """The key of this estimator's family, found from its class in the registry."""
        return family_of_class(type(self)).key

    def _validate_params(self) -> dict[str, Any]:
        """Check ``get_params()`` against the family's schema (a TreevizError sentence if a value
        is bad) and return the checked values."""
        family = family_of_class(type(self))
        return family.validate_params(self.get_params(deep=False), family.task_of_class(type(self)),
                                      strict=True)

    # ------------------------------------------------------------------ device
    def _fit_device(self, *, rows: int | None = None, batch: int | None = None, depth: int | None = None,
                    trees: int = 1) -> str:
        """The device this fit trains on: the ``device`` parameter resolved for a step of ``rows``
        / ``batch`` rows on a tree of ``depth`` (see :mod:`models.devices`); sets ``device_`` and
        ``device_reason_`` (why)."""

        size = step_size(rows=rows, batch=batch, depth=depth, trees=trees)
        choice = device_choice(getattr(self, "device", "cpu"), work=(self.family_key, size))
        self.device_, self.device_reason_ = choice.device, choice.reason
        return choice.device

    # ------------------------------------------------------------------ callbacks & history
    def _notify(self, hook: str, **kwargs: Any) -> None:
        for cb in getattr(self, "_callbacks", []):
            method = getattr(cb, hook, None)  # a duck-typed callback may leave hooks out
            if method is not None:
                method(self, **kwargs)

    def _begin_training(self, callbacks: Iterable[Callback] | None, total: float | None) -> None:
        self._callbacks = list(callbacks or [])
        self.history_: list[dict[str, Any]] = []
        self.stopped_early_ = False
        self._planned = total
        self._notify("on_train_begin", total=total)

    def _progress(self, done: float | None = None, total: float | None = None) -> None:
        """Tell the callbacks the units of work done so far (where they are not one per record)
        and/or a revised planned total (see :class:`Callback`); a cancel is not raised here."""
        if total is not None:
            self._planned = total
        try:
            self._notify("on_progress", done=None if done is None else float(done),
                         total=None if total is None else float(total))
        except TrainingCancelled:
            self.stopped_early_ = True

    def _record(self, **record: Any) -> bool:
        """Append a history record and notify callbacks.

        Returns False when a callback asked to stop (raised :class:`TrainingCancelled`, here or
        in an earlier :meth:`_cancel_requested`); the caller should then leave its loop. Values
        are converted to plain Python numbers.
        """
        clean = {k: plain(v) for k, v in record.items()}
        self.history_.append(clean)
        try:
            self._notify("on_epoch_end", record=clean)
        except TrainingCancelled:
            self.stopped_early_ = True
        return not self.stopped_early_

    def _cancel_requested(self) -> bool:
        """Whether a callback asked training to stop (its ``on_step`` raised TrainingCancelled).

        Cheap; long inner loops call it between records and leave when it is True, keeping a
        usable model. Once True it stays True until the next fit (``stopped_early_`` is set).
        Also a ``stop()`` function to hand to helpers and nested fits (:class:`CancelWhen`).
        """
        if getattr(self, "stopped_early_", False):
            return True
        try:
            self._notify("on_step")
        except TrainingCancelled:
            self.stopped_early_ = True
        return self.stopped_early_

    def _end_training(self) -> None:
        planned = getattr(self, "_planned", None)
        if planned and not getattr(self, "stopped_early_", False):  # done: an early stop ends the bar too
            self._progress(done=planned)
        self._notify("on_train_end")
        self._callbacks = []

    # ------------------------------------------------------------------ names
    def _set_feature_names(self, feature_names: Sequence[str] | None, n_features: int) -> None:
        """Store ``feature_names_`` for display (rules, figures): the ``feature_names`` passed to
        ``fit``, else the column names of a DataFrame (``feature_names_in_``), else x0, x1, ..."""
        if feature_names is None:
            names_in = getattr(self, "feature_names_in_", None)
            feature_names = names_in if names_in is not None else [f"x{j}" for j in range(n_features)]
        names = tuple(str(n) for n in feature_names)
        if len(names) != n_features:
            raise TreevizError(f"{len(names)} feature names were given for {n_features} features.")
        self.feature_names_ = names

    # ------------------------------------------------------------------ the Tree
    def to_tree(self):
        """The fitted model's tree; an ensemble gives its first tree (see :meth:`to_trees`).

        A family overrides this (single trees) or :meth:`to_trees` (ensembles)."""
        if type(self).to_trees is TreeEstimator.to_trees:
            raise TreevizError(f"{type(self).__name__} does not describe a tree.")
        return self.to_trees()[0]

    def to_trees(self) -> list:
        """Every tree of the model (a single-tree model gives a list of one)."""
        if type(self).to_tree is TreeEstimator.to_tree:
            raise TreevizError(f"{type(self).__name__} does not describe a tree.")
        return [self.to_tree()]

    # ------------------------------------------------------------------ notebooks
    def _html_repr(self) -> str:
        """The estimator in a notebook (scikit-learn's ``_repr_html_`` and ``_repr_mimebundle_`` call
        this): once fitted, the diagram of its (first) tree under its size and headline metric, drawn
        by the renderer ``import treeviz`` registers (:mod:`models.ground.display`); unfitted, or with
        no renderer, scikit-learn's parameter box."""
        card = self._display_card()
        html = None if card is None else display.card_html(card)
        return html if html is not None else super()._html_repr()

    def _display_card(self) -> display.Card | None:
        """What a notebook shows of the fitted model (None when it is not fitted or has no tree)."""
        try:
            check_is_fitted(self)
            trees = tuple(self.to_trees())
        except (NotFittedError, TreevizError):
            return None
        try:
            family = family_of_class(type(self))
        except TreevizError:  # a class of no registered family (a test double, a user's sketch)
            family = None
        return display.Card(title=type(self).__name__, trees=trees, family_label=family.label if family else "",
                            metric=self._headline_metric(family))

    def _headline_metric(self, family: Any) -> tuple[str, float] | None:
        """The model's score from ``history_`` as (label, value): the validation score, else the
        training score, of the record the model keeps (the lowest of the family's ``curves.kept``
        key, else the last record). None without one, and for histories of one record per tree (a
        forest's records score single trees, not the model)."""
        curves = getattr(family, "curves", None)
        history = [r for r in getattr(self, "history_", None) or [] if isinstance(r, dict)]
        if not history or (curves is not None and curves.x == "tree"):
            return None

        def number(record: dict, key: str) -> float | None:
            value = record.get(key)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            return float(value) if ok else None

        kept = curves.kept if curves is not None else ""
        marked = [r for r in history if kept and number(r, kept) is not None]
        record = min(marked, key=lambda r: number(r, kept)) if marked else history[-1]
        name = "accuracy" if is_classifier(self) else "R²" if is_regressor(self) else "score"
        for key, split in (("val_score", "validation"), ("train_score", "training")):
            value = number(record, key)
            if value is not None:
                return f"{split} {name}", value
        return None

    # ------------------------------------------------------------------ model files
    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The family's JSON-ready learned values and named arrays (see :mod:`models.persist`)."""
        raise TreevizError(f"{type(self).__name__} cannot be saved.")

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Rebuild the fitted state from :meth:`_get_model_state`'s output."""
        raise TreevizError(f"{type(self).__name__} cannot be loaded.")

    def _learned_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything a model file holds: the family's state plus what every estimator stores
        (``n_features_in_``, feature names, ``feature_names_in_``, ``classes_``)."""
        learned, arrays = self._get_model_state()
        common: dict[str, Any] = {
            "n_features_in_": int(self.n_features_in_),
            "feature_names": list(self.feature_names_),
            "has_feature_names_in": hasattr(self, "feature_names_in_"),
        }
        if hasattr(self, "classes_"):
            common["classes_"] = encode_labels(self.classes_)
        return {**learned, **common}, arrays

    def _restore_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`_learned_state` (used by :func:`models.persist.load_model`)."""
        self.n_features_in_ = int(learned["n_features_in_"])
        self.feature_names_ = tuple(str(n) for n in learned["feature_names"])
        if len(self.feature_names_) != self.n_features_in_:
            raise ValueError("feature names")
        if learned.get("has_feature_names_in"):
            self.feature_names_in_ = np.array(self.feature_names_, dtype=object)
        if "classes_" in learned:
            self.classes_ = decode_labels(learned["classes_"])
        self._set_model_state(learned, arrays)

    def save(self, path: str, **context: Any) -> str:
        """Write the model to ``path`` (a folder, or a ``.zip`` file); see :mod:`models.persist`."""
        return save_model(self, path, context=context)
