"""Dataset: a table made ready for modelling (numeric features, optional target).

A :class:`Dataset` is what the catalogue and the upload path both produce. Its features are
already numeric (categoricals one-hot encoded) but *not* imputed or scaled: missing values stay
NaN until :func:`treeviz.services.data.preprocess.prepare` fits imputation and scaling on the training
split only.

Targets
-------
* classification: ``y`` holds class indices ``0..K-1`` into ``class_names`` (sorted, as
  ``np.unique`` would sort the original labels);
* regression: ``y`` holds float values;
* clustering: ``y`` is None, or (for synthetic sets with known groups) reference class indices
  used only for evaluation, never for training.

Stored form
-----------
:meth:`Dataset.to_files` and :meth:`Dataset.from_files` define how a data set is kept on disk
(by :class:`treeviz.services.store.runs.RunStore`, and inside a run's export zip): ``dataset.json`` (format
``treeviz.dataset``, version, fingerprint, names, task, class names, provenance, notes, sizes)
and ``arrays.safetensors`` (``X``, NaN kept, and ``y`` when there is one). Nothing is pickled.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load, save

from models.ground.errors import TreevizError
from models.ground.jsonio import check_version, dumps_json, jsonable

TASKS = ("classification", "regression", "clustering")
#: The stored form's file names (see :meth:`Dataset.to_files`).
DATASET_JSON, ARRAYS = "dataset.json", "arrays.safetensors"
DATASET_FORMAT, DATASET_VERSION = "treeviz.dataset", 1
#: The oldest ``dataset.json`` version this treeviz reads; :data:`DATASET_VERSION` is the one it writes.
DATASET_MIN_VERSION = 1


@dataclass(frozen=True, eq=False)
class Dataset:
    """Numeric features and an optional target, with names and provenance."""

    name: str
    X: np.ndarray
    y: np.ndarray | None
    feature_names: tuple[str, ...]
    task: str
    target_name: str | None = None
    class_names: tuple[str, ...] | None = None
    image_shape: tuple[int, int] | None = None
    description: str = ""
    source: str = ""
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2:
            raise TreevizError(f"Dataset '{self.name}' needs a 2-D feature table, got shape {X.shape}.")
        object.__setattr__(self, "X", X)
        if len(self.feature_names) != X.shape[1]:
            raise TreevizError(
                f"Dataset '{self.name}' has {X.shape[1]} feature columns but "
                f"{len(self.feature_names)} names."
            )
        object.__setattr__(self, "feature_names", tuple(str(n) for n in self.feature_names))
        if len(set(self.feature_names)) < len(self.feature_names):
            repeated = sorted({n for n in self.feature_names if self.feature_names.count(n) > 1})
            raise TreevizError(f"Dataset '{self.name}' names the feature(s) {', '.join(map(repr, repeated[:5]))} "
                               "more than once; give every feature its own name.")
        if self.task not in TASKS:
            raise TreevizError(f"Unknown task {self.task!r}; use one of {', '.join(TASKS)}.")
        if self.y is not None:
            y = np.asarray(self.y)
            if y.shape[0] != X.shape[0]:
                raise TreevizError(f"Dataset '{self.name}' has {X.shape[0]} rows but {y.shape[0]} targets.")
            if self.task in ("classification", "clustering"):
                if self.class_names is None:
                    raise TreevizError(f"Dataset '{self.name}' has class indices but no class names.")
                y = y.astype(np.int64)
                if y.size and (y.min() < 0 or y.max() >= len(self.class_names)):
                    raise TreevizError(f"Dataset '{self.name}' has class indices outside its class names.")
            else:
                y = y.astype(np.float64)
            object.__setattr__(self, "y", y)
        elif self.task != "clustering":
            raise TreevizError(f"A {self.task} dataset needs a target column.")
        if self.class_names is not None:
            object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        if self.image_shape is not None:
            h, w = (int(v) for v in self.image_shape)
            if h * w != X.shape[1]:
                raise TreevizError(
                    f"Image shape {h}×{w} does not match the {X.shape[1]} features of '{self.name}'."
                )
            object.__setattr__(self, "image_shape", (h, w))

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        return len(self.class_names) if self.class_names is not None else 0

    @property
    def y_labels(self) -> np.ndarray | None:
        """Class names per row (classification), the values (regression), or None."""
        if self.y is None:
            return None
        if self.class_names is not None:
            return np.asarray(self.class_names, dtype=object)[self.y]
        return self.y

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 (hex, first 16 chars) of the values, names and task: same data, same print."""
        h = hashlib.sha256()
        h.update(json.dumps([self.task, list(self.feature_names), self.target_name,
                             list(self.class_names or ())]).encode())
        h.update(np.ascontiguousarray(self.X).tobytes())
        if self.y is not None:
            h.update(np.ascontiguousarray(self.y).tobytes())
        return h.hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        """Small JSON-ready description (for run records and the UI)."""
        return {
            "name": self.name,
            "task": self.task,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "n_classes": self.n_classes,
            "target_name": self.target_name,
            "image_shape": list(self.image_shape) if self.image_shape else None,
            "fingerprint": self.fingerprint,
            "source": self.source,
            "missing_values": int(np.isnan(self.X).sum()),
        }

    def to_files(self) -> dict[str, bytes]:
        """The stored form of this data set, as file name to content.

        Returns
        -------
        dict of str to bytes
            ``{"dataset.json": ..., "arrays.safetensors": ...}``: the JSON description (format,
            version, fingerprint, names, task, class names, image shape, provenance, notes,
            meta, ``n_samples`` and ``n_features``) and the arrays ``X`` and, if any, ``y``.
            :meth:`from_files` reads them back.
        """
        arrays = {"X": np.ascontiguousarray(self.X)}
        if self.y is not None:
            arrays["y"] = np.ascontiguousarray(self.y)
        info = {
            "format": DATASET_FORMAT, "version": DATASET_VERSION, "fingerprint": self.fingerprint,
            "name": self.name, "task": self.task, "feature_names": list(self.feature_names),
            "target_name": self.target_name,
            "class_names": None if self.class_names is None else list(self.class_names),
            "image_shape": None if self.image_shape is None else list(self.image_shape),
            "description": self.description, "source": self.source,
            "notes": list(self.notes), "meta": jsonable(dict(self.meta)),
            "n_samples": self.n_samples, "n_features": self.n_features,
        }
        return {DATASET_JSON: dumps_json(info), ARRAYS: save(arrays)}

    @classmethod
    def from_files(cls, info_bytes: bytes, arrays_bytes: bytes,
                   fingerprint: str | None = None) -> Dataset:
        """Rebuild a data set from the two files of :meth:`to_files`.

        Parameters
        ----------
        info_bytes
            The content of ``dataset.json``.
        arrays_bytes
            The content of ``arrays.safetensors`` (read as safetensors, never unpickled).
        fingerprint
            The fingerprint the data set was stored under; when given, the rebuilt data set
            must have exactly this fingerprint.

        Returns
        -------
        Dataset
            The data set, validated as any other.

        Raises
        ------
        TreevizError
            If the files are damaged, or the data does not match ``fingerprint``.
        """
        label = "" if fingerprint is None else f" {fingerprint}"
        try:
            info = json.loads(info_bytes.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise TreevizError(f"The stored data set{label} is damaged (its dataset.json is not JSON).") from None
        if not isinstance(info, dict) or info.get("format") != DATASET_FORMAT:
            raise TreevizError(f"The stored data set{label} is not a treeviz data set (its dataset.json has no "
                               f"'{DATASET_FORMAT}' format).")
        check_version(info, what=f"The stored data set{label}'s dataset.json", kind="data sets",
                      oldest=DATASET_MIN_VERSION, newest=DATASET_VERSION,
                      again=f"export the run again with a treeviz that writes version {DATASET_VERSION} "
                            "(this one does)")
        try:
            arrays = load(arrays_bytes)
            dataset = cls(
                name=str(info["name"]), X=arrays["X"], y=arrays.get("y"),
                feature_names=tuple(info["feature_names"]), task=str(info["task"]),
                target_name=info.get("target_name"),
                class_names=None if info.get("class_names") is None else tuple(info["class_names"]),
                image_shape=None if info.get("image_shape") is None else tuple(info["image_shape"]),
                description=str(info.get("description", "")), source=str(info.get("source", "")),
                notes=tuple(str(n) for n in info.get("notes", ())), meta=dict(info.get("meta") or {}),
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, SafetensorError) as err:
            if isinstance(err, TreevizError):
                raise
            raise TreevizError(f"The stored data set{label} is damaged ({err}).") from None
        if fingerprint is not None and dataset.fingerprint != fingerprint:
            raise TreevizError(
                f"The stored data set {fingerprint} does not match its fingerprint; it was changed "
                "after the run was saved, so the run's data cannot be rebuilt exactly."
            )
        return dataset
