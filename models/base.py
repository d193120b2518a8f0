"""Machinery every treeviz estimator shares: device, seeds, callbacks, history, persistence hooks.

Estimators follow the scikit-learn contract (``__init__`` only stores parameters, ``fit``
validates and returns ``self``, learned attributes end in ``_``). On top of it each one has

* ``to_tree()`` (or ``to_trees()`` for ensembles) returning :class:`treeviz.tree.Tree`;
* ``history_``: a list of per-epoch / per-iteration records (plain dicts of numbers);
* progress through callbacks passed to ``fit(..., callbacks=[...])``: the training loop calls
  ``on_train_begin(estimator, total)``, ``on_epoch_end(estimator, record)`` after each epoch and
  ``on_train_end(estimator)``; a callback stops training by raising
  :class:`treeviz.errors.TrainingCancelled` (the estimator is then left in a usable state with
  the epochs done so far, and ``stopped_early_`` set);
* ``_learned_state()`` / ``_restore_state()`` so :mod:`models.persist` can write
  ``config.json`` + ``weights.safetensors`` without pickle.

Callbacks are a ``fit`` argument, not a constructor parameter, because ``sklearn.clone`` deep-copies
parameters and a callback holds live objects (a job, a threading.Event).
"""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Sequence

import numpy as np
from sklearn.base import BaseEstimator

from treeviz.errors import TrainingCancelled, TreevizError


class Callback:
    """Base class for training callbacks; override the hooks you need."""

    def on_train_begin(self, estimator: Any, total: int | None) -> None:
        """Called once before training; ``total`` is the planned number of epochs (or None)."""

    def on_epoch_end(self, estimator: Any, record: dict[str, Any]) -> None:
        """Called after each epoch / iteration with the record just appended to ``history_``."""

    def on_train_end(self, estimator: Any) -> None:
        """Called once after training, also when it was cancelled."""


def resolve_device(device: str | None) -> str:
    """Turn ``"auto"`` / ``"cpu"`` / ``"cuda"`` / ``"cuda:N"`` into a usable torch device name.

    ``"auto"`` picks CUDA when a GPU is visible, else the CPU. Asking for CUDA without a GPU is
    an error the user can fix, not a silent fallback.
    """
    device = "auto" if device is None else str(device).strip().lower()
    if device == "cpu":
        return "cpu"
    if device != "auto" and not device.startswith("cuda"):
        raise TreevizError(f"Unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'.")
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard requirement of the project
        if device == "auto":
            return "cpu"
        raise TreevizError("PyTorch is not installed, so training cannot run on a GPU.")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise TreevizError(
            f"Device {device!r} was requested but no CUDA GPU is available; choose 'cpu' or 'auto'."
        )
    if ":" in device:
        index = device.split(":", 1)[1]
        if not index.isdigit() or int(index) >= torch.cuda.device_count():
            raise TreevizError(
                f"There is no GPU {device!r}; this machine has {torch.cuda.device_count()} GPU(s)."
            )
    return device


def available_devices() -> list[str]:
    """Devices a user can choose from on this machine, ``"auto"`` first."""
    out = ["auto", "cpu"]
    try:
        import torch

        if torch.cuda.is_available():
            out += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    except ImportError:  # pragma: no cover
        pass
    return out


def seed_everything(random_state: Any) -> np.random.Generator:
    """Seed torch (when available) from ``random_state`` and return a numpy Generator.

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
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover
        pass
    return np.random.default_rng(seed)


class TreeEstimator(BaseEstimator):
    """Base class of every treeviz estimator (CART adapter and the five paper families).

    Subclasses set ``family`` (the registry key), implement ``fit``, ``to_tree`` (or
    ``to_trees``), ``_learned_state`` and ``_restore_state``.
    """

    family: str = ""

    # ------------------------------------------------------------------ callbacks & history
    def _begin_training(self, callbacks: Iterable[Callback] | None, total: int | None) -> None:
        self._callbacks = list(callbacks or [])
        self.history_: list[dict[str, Any]] = []
        self.stopped_early_ = False
        for cb in self._callbacks:
            cb.on_train_begin(self, total)

    def _record(self, **record: Any) -> bool:
        """Append a history record and notify callbacks.

        Returns False when a callback asked to stop (raised :class:`TrainingCancelled`); the
        caller should then leave its loop. Values are converted to plain Python numbers.
        """
        clean = {k: _plain(v) for k, v in record.items()}
        self.history_.append(clean)
        try:
            for cb in self._callbacks:
                cb.on_epoch_end(self, clean)
        except TrainingCancelled:
            self.stopped_early_ = True
            return False
        return True

    def _end_training(self) -> None:
        for cb in getattr(self, "_callbacks", []):
            cb.on_train_end(self)
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

    def _restore_feature_names(self, config: dict[str, Any]) -> None:
        """Inverse of the names part of ``_learned_state`` (n_features_in_, feature_names_, and
        feature_names_in_ when the model was fitted on a DataFrame)."""
        self.n_features_in_ = int(config["n_features_in_"])
        self.feature_names_ = tuple(config["feature_names"])
        if config.get("has_feature_names_in"):
            self.feature_names_in_ = np.array(config["feature_names"], dtype=object)

    # ------------------------------------------------------------------ the Tree
    def to_tree(self):  # pragma: no cover - every concrete estimator overrides it
        raise TreevizError(f"{type(self).__name__} does not describe a single tree.")

    def to_trees(self) -> list:
        """Every tree of the model (a single-tree model gives a list of one)."""
        return [self.to_tree()]

    # ------------------------------------------------------------------ persistence hooks
    def _learned_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON-ready learned attributes and named arrays; see :mod:`models.persist`."""
        raise NotImplementedError  # pragma: no cover

    def _restore_state(self, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError  # pragma: no cover

    def save(self, path: str, **context: Any) -> str:
        """Write the model to ``path`` (a folder, or a ``.zip`` file); see :mod:`models.persist`."""
        from models.persist import save_model

        return save_model(self, path, context=context)


def _plain(value: Any) -> Any:
    """numpy / torch scalars -> Python numbers so history records serialise as JSON."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def encode_labels(values: Sequence[Any]) -> list[Any]:
    """Class labels as JSON values (numpy scalars -> Python scalars)."""
    return [_plain(v) for v in np.asarray(values).tolist()]


def decode_labels(values: list[Any]) -> np.ndarray:
    """Inverse of :func:`encode_labels`: an array with the natural dtype of the labels."""
    if values and all(isinstance(v, str) for v in values):
        return np.array(values, dtype=object)
    return np.asarray(values)
