"""A model that carries its preprocessing: the fitted steps that turn a table's raw columns into the
features a model was trained on, then the model.

:class:`Preprocessing` is what :func:`~treeviz.services.data.preprocess.prepare` fitted, held as plain
numbers: where each feature comes from in the table (a column, a date column's decimal year, or one
level of a text column, recorded at upload), the training medians that fill missing values, and the
scaling (z-score, or z-score then the normal-output quantile map). :class:`Pipeline` puts it in front
of a fitted estimator, so ``pipeline.predict(df)`` takes a DataFrame with the original columns.

What a table may hold (the documented defaults):

* **extra columns** (the target, an id, anything the model does not read) are ignored;
* **missing columns** the model reads stop with a sentence naming them;
* **missing values** in a numeric column are filled with the training median; in a text column they are
  the level ``(missing)``, as at upload;
* **unknown categories** (a level training never saw) set none of the column's one-hot features: the row
  goes where an all-zero indicator sends it, and a warning (a note on the Predict page) names the levels.

Nothing here is pickled: :meth:`Preprocessing.to_state` gives JSON and arrays, which a model file stores
beside the estimator (:func:`save_model`, :func:`load_model`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from models import persist
from models.ground.errors import TreevizError
from treeviz.services.data.columns import columns_text
from treeviz.services.data.encoding import FEATURE_SOURCES, table_to_features
from treeviz.services.data.preprocess import NoisyQuantileScaler, PreparedData, SafeStandardScaler

#: The kinds of feature source: a numeric column as it is, a date column's decimal year, a one-hot level.
SOURCE_KINDS = ("column", "dates", "one-hot")
#: sklearn's QuantileTransformer bound: values within it of the training extremes map to them.
_BOUNDS = 1e-7


@dataclass(frozen=True)
class InputColumn:
    """One column of the raw table that the preprocessing reads.

    Attributes
    ----------
    name : str
        The column's name in the table.
    kind : {"number", "dates", "category"}
        Numbers (missing: NaN), dates (read as the decimal year), or text levels one-hot encoded.
    levels : tuple of str
        The levels a category column had in training (``(missing)`` among them when it had gaps).
    """

    name: str
    kind: str
    levels: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Preprocessing:
    """The fitted steps from a table's raw columns to a model's features (see the module docstring).

    Attributes
    ----------
    feature_names : tuple of str
        The features the model sees, in order (:meth:`get_feature_names_out`).
    sources : tuple of (kind, column, level), or None
        Where each feature comes from; None for a data set uploaded before treeviz recorded it (its
        features are then found by name in each new table).
    fill : numpy.ndarray or None
        Per feature, the training median that replaces a missing value (None: a missing value stays NaN).
    scaling : {"none", "standard", "quantile"}
    center, spread : numpy.ndarray or None
        The z-score ``(X * 2**-exponent - center) / spread`` (standard and quantile scaling).
    exponent : numpy.ndarray or None
        The power of two each column is divided by before the z-score (0 for ordinary columns).
    quantiles, references : numpy.ndarray or None
        The quantile map of quantile scaling: per feature, the z-scores at ``references`` (in [0, 1]).
    """

    feature_names: tuple[str, ...]
    sources: tuple[tuple[str, str, str], ...] | None = None
    fill: np.ndarray | None = None
    scaling: str = "none"
    center: np.ndarray | None = None
    spread: np.ndarray | None = None
    exponent: np.ndarray | None = None
    quantiles: np.ndarray | None = None
    references: np.ndarray | None = None

    def __post_init__(self) -> None:
        d = len(self.feature_names)
        if self.sources is not None and len(self.sources) != d:
            raise TreevizError(f"The preprocessing names {d} features but gives {len(self.sources)} sources.")
        if self.sources is not None and any(len(s) != 3 or s[0] not in SOURCE_KINDS for s in self.sources):
            raise TreevizError("The preprocessing has a malformed feature source.")
        if self.scaling not in ("none", "standard", "quantile"):
            raise TreevizError(f"The preprocessing has an unknown scaling {self.scaling!r}.")
        for name in ("fill", "center", "spread", "exponent"):
            value = getattr(self, name)
            if value is not None and np.shape(value) != (d,):
                raise TreevizError(f"The preprocessing's {name} has shape {np.shape(value)}, not ({d},).")
        if self.scaling != "none" and (self.center is None or self.spread is None or self.exponent is None):
            raise TreevizError("The preprocessing's scaling lacks its centre, spread or exponent.")
        if self.scaling == "quantile":
            q, r = self.quantiles, self.references
            if q is None or r is None or np.ndim(q) != 2 or np.shape(q)[1] != d or np.shape(r) != (np.shape(q)[0],):
                raise TreevizError("The preprocessing's quantile map is missing or malformed.")

    # -- what it reads and gives ---------------------------------------------------------------------

    def get_feature_names_out(self) -> np.ndarray:
        """The names of the features the model sees, in order (as scikit-learn's transformers give them)."""
        return np.asarray(self.feature_names, dtype=object)

    @property
    def columns(self) -> tuple[InputColumn, ...]:
        """The raw columns the preprocessing reads, in the order of their first feature."""
        if self.sources is None:
            return tuple(InputColumn(n, "number") for n in self.feature_names)
        kinds: dict[str, str] = {}
        levels: dict[str, list[str]] = {}
        for kind, column, level in self.sources:
            kinds.setdefault(column, {"column": "number", "dates": "dates", "one-hot": "category"}[kind])
            if kind == "one-hot":
                levels.setdefault(column, []).append(level)
        return tuple(InputColumn(c, k, tuple(levels.get(c, ()))) for c, k in kinds.items())

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The raw columns read, by name (scikit-learn's name for a transformer's input columns)."""
        return np.asarray([c.name for c in self.columns], dtype=object)

    # -- applying it ---------------------------------------------------------------------------------

    def encode(self, df: pd.DataFrame, *, name: str = "table") -> tuple[np.ndarray, list[str]]:
        """The table's rows as raw features (one-hot levels, numbers, decimal years; NaN where missing),
        with sentences about ignored columns and unknown levels."""
        if not isinstance(df, pd.DataFrame):
            raise TreevizError("The rows must be a pandas DataFrame with the table's original columns.")
        sources = None if self.sources is None else [list(s) for s in self.sources]
        if self.sources is not None:
            present = {str(c).strip() for c in df.columns}
            missing = [c.name for c in self.columns if c.name not in present]
            if missing and set(self.feature_names) <= present:  # the features themselves, as columns
                sources, missing = None, []
            if missing:
                raise TreevizError(f"The table '{name}' lacks the column(s) {columns_text(missing, 10)} that the "
                                   "model reads. Give every column of the training table (extra columns are "
                                   "ignored; leave cells empty where a value is unknown).")
        return table_to_features(df, self.feature_names, name=name, sources=sources)

    def scale(self, X_raw: np.ndarray) -> np.ndarray:
        """Fill missing values and scale raw features as in training."""
        X = np.array(X_raw, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.feature_names):
            raise TreevizError(f"Expected rows of {len(self.feature_names)} features, got shape {X.shape}.")
        if self.fill is not None:
            gaps = np.isnan(X)
            X[gaps] = np.broadcast_to(self.fill, X.shape)[gaps]
        if self.scaling == "none":
            return X
        with np.errstate(over="ignore"):
            Z = (np.ldexp(X, -self.exponent) - self.center) / self.spread
        return Z if self.scaling == "standard" else self._quantile_map(Z)

    def _quantile_map(self, Z: np.ndarray) -> np.ndarray:
        """The normal-output quantile map, column by column, as scikit-learn's QuantileTransformer
        computes it (interpolated both ways and averaged, so tied quantiles map to their middle)."""
        top = np.finfo(np.float64).max
        Z = np.clip(Z, -top, top)
        out = np.empty_like(Z)
        r = self.references
        low, high = stats.norm.ppf(_BOUNDS - np.spacing(1)), stats.norm.ppf(1 - (_BOUNDS - np.spacing(1)))
        for j in range(Z.shape[1]):
            q, z = self.quantiles[:, j], Z[:, j]
            u = 0.5 * (np.interp(z, q, r) - np.interp(-z, -q[::-1], -r[::-1]))
            u[z + _BOUNDS > q[-1]] = 1.0
            u[z - _BOUNDS < q[0]] = 0.0
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, j] = np.clip(stats.norm.ppf(u), low, high)
        return out

    def affine(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(mean, scale)`` with ``model input = (raw feature - mean) / scale``, or None when the scaling
        is not affine (quantile)."""
        d = len(self.feature_names)
        if self.scaling == "none":
            return np.zeros(d), np.ones(d)
        if self.scaling == "standard":
            return np.ldexp(self.center, self.exponent), np.ldexp(self.spread, self.exponent)
        return None

    def transform_table(self, df: pd.DataFrame, *, name: str = "table") -> tuple[np.ndarray, list[str]]:
        """The model's inputs for the table's rows, and sentences about the table."""
        X_raw, notes = self.encode(df, name=name)
        return self.scale(X_raw), notes

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """The model's inputs for the table's rows (unknown levels are warned about)."""
        X, notes = self.transform_table(df)
        _warn_unseen(notes)
        return X

    # -- building and storing it ---------------------------------------------------------------------

    @classmethod
    def from_prepared(cls, prepared: PreparedData) -> Preprocessing:
        """The preprocessing :func:`~treeviz.services.data.preprocess.prepare` fitted for ``prepared``."""
        dataset = prepared.dataset
        # the training medians fill a missing value (the missing-value policy), also in a column that had
        # no gaps in training (prepare() fitted no imputer then: the medians are those of its values)
        if prepared.imputer is not None:
            fill = np.asarray(prepared.imputer.statistics_, dtype=np.float64)
        else:
            fill = np.median(np.asarray(dataset.X, dtype=np.float64)[prepared.train_idx], axis=0)
        scaling = prepared.config.scaling
        standard = prepared.scaler.standard if isinstance(prepared.scaler, NoisyQuantileScaler) else prepared.scaler
        parts: dict[str, Any] = {}
        if isinstance(standard, SafeStandardScaler):
            parts = {"center": np.asarray(standard._mean, dtype=np.float64),
                     "spread": np.asarray(standard._scale, dtype=np.float64),
                     "exponent": np.asarray(standard.exponent_, dtype=np.int64)}
        if isinstance(prepared.scaler, NoisyQuantileScaler):
            parts["quantiles"] = np.asarray(prepared.scaler.quantile.quantiles_, dtype=np.float64)
            parts["references"] = np.asarray(prepared.scaler.quantile.references_, dtype=np.float64)
        return cls(feature_names=tuple(map(str, dataset.feature_names)), sources=_dataset_sources(dataset),
                   fill=fill, scaling=scaling, **parts)

    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON and arrays that :meth:`from_state` reads back (what a model file stores)."""
        config = {"feature_names": list(self.feature_names), "scaling": self.scaling,
                  "sources": None if self.sources is None else [list(s) for s in self.sources]}
        arrays = {k: np.asarray(v) for k in ("fill", "center", "spread", "exponent", "quantiles", "references")
                  if (v := getattr(self, k)) is not None}
        return config, arrays

    @classmethod
    def from_state(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> Preprocessing:
        """The preprocessing a model file stored; a sentence when its parts do not fit together."""
        try:
            names = tuple(str(n) for n in config["feature_names"])
            sources = config.get("sources")
            sources = None if sources is None else tuple((str(a), str(b), str(c)) for a, b, c in sources)
            extra = set(arrays) - {"fill", "center", "spread", "exponent", "quantiles", "references"}
            if extra:
                raise ValueError(f"unknown arrays {sorted(extra)}")
            parts = {k: np.asarray(v, dtype=np.int64 if k == "exponent" else np.float64) for k, v in arrays.items()}
            return cls(feature_names=names, sources=sources, scaling=str(config.get("scaling", "none")), **parts)
        except TreevizError:
            raise
        except (KeyError, TypeError, ValueError) as err:
            raise TreevizError(f"The model file's preprocessing is malformed ({err}); "
                               "export the model again.") from None


def _dataset_sources(dataset: Any) -> tuple[tuple[str, str, str], ...] | None:
    """Where each feature of a data set comes from: as its upload recorded it; each feature its own
    column for a data set that was never a table (a built-in array); None for an upload that did not
    record them (older runs: features are then found by name)."""
    stored = dataset.meta.get(FEATURE_SOURCES)
    n = len(dataset.feature_names)
    if isinstance(stored, list | tuple) and len(stored) == n and all(
            isinstance(s, list | tuple) and len(s) == 3 and s[0] in SOURCE_KINDS for s in stored):
        return tuple((str(a), str(b), str(c)) for a, b, c in stored)
    if "options" in dataset.meta:  # a table upload from before the sources were recorded
        return None
    return tuple(("column", str(name), "") for name in dataset.feature_names)


def _warn_unseen(notes: Sequence[str]) -> None:
    for text in notes:
        if "never saw" in text:
            warnings.warn(text, UserWarning, stacklevel=3)


class Pipeline:
    """A fitted preprocessing, then a fitted estimator: predicts from a table's original columns.

    Parameters
    ----------
    preprocessing : Preprocessing
    model : estimator
        Fitted on the features ``preprocessing`` gives.

    Examples
    --------
    >>> import pandas as pd
    >>> import treeviz as tv
    >>> data = tv.prepare(tv.load_dataset("penguins"))
    >>> model = tv.CARTClassifier(max_depth=2).fit(data.X_train, data.labels("train"))
    >>> pipe = tv.Pipeline.from_prepared(data, model)
    >>> list(pipe.feature_names_in_)[:3]
    ['island', 'bill_length_mm', 'bill_depth_mm']
    >>> rows = pd.DataFrame({"island": ["Dream"], "bill_length_mm": [45.1], "bill_depth_mm": [None],
    ...                      "flipper_length_mm": [200], "body_mass_g": [4000], "sex": [None], "year": [2008]})
    >>> pipe.predict(rows).shape
    (1,)
    """

    def __init__(self, preprocessing: Preprocessing, model: Any):
        n_in = getattr(model, "n_features_in_", None)
        if n_in is not None and int(n_in) != len(preprocessing.feature_names):
            raise TreevizError(f"The model reads {n_in} features but the preprocessing gives "
                               f"{len(preprocessing.feature_names)}; they were not fitted together.")
        self.preprocessing = preprocessing
        self.model = model

    @classmethod
    def from_prepared(cls, prepared: PreparedData, model: Any) -> Pipeline:
        """The pipeline of a model fitted on ``prepared``'s arrays."""
        return cls(Preprocessing.from_prepared(prepared), model)

    @property
    def tree_units(self) -> str:
        """The units of :meth:`to_trees`: "input" (the data's own, after encoding: the scaling is affine)
        or "model" (the model's inputs: quantile scaling cannot be folded into the splits)."""
        return "model" if self.preprocessing.affine() is None else "input"

    @property
    def fill_values(self) -> np.ndarray | None:
        """The values that replace missing inputs of :meth:`to_trees` (the training medians, in the
        data's own units; None when the trees are in the model's units)."""
        return self.preprocessing.fill if self.tree_units == "input" else None

    def to_trees(self) -> list[Any]:
        """The model's trees, their features named by the preprocessing, in the data's own units when the
        scaling is affine (:attr:`tree_units`): what the plots and the rule and code exports read."""
        names = tuple(self.preprocessing.feature_names)
        trees = [replace(tree, feature_names=names) for tree in self.model.to_trees()]
        affine = self.preprocessing.affine()
        return trees if affine is None else [tree.in_input_units(*affine) for tree in trees]

    def to_tree(self) -> Any:
        """The first of :meth:`to_trees` (the tree of a single-tree model)."""
        return self.to_trees()[0]

    def _repr_html_(self) -> str | None:
        show = getattr(self.model, "_repr_html_", None)
        return show() if callable(show) else None

    def __repr__(self) -> str:
        cols = len(self.preprocessing.columns)
        return f"Pipeline({cols} column(s) -> {len(self.preprocessing.feature_names)} feature(s) -> {self.model!r})"

    def __getattr__(self, name: str) -> Any:
        # the estimator's learned attributes (classes_, history_, to_trees, ...) read through the pipeline
        if name.startswith("__") or name in ("preprocessing", "model"):
            raise AttributeError(name)
        return getattr(self.model, name)

    def get_feature_names_out(self) -> np.ndarray:
        """The features the model sees (from the fitted preprocessing)."""
        return self.preprocessing.get_feature_names_out()

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The raw columns the pipeline reads."""
        return self.preprocessing.feature_names_in_

    def features(self, df: pd.DataFrame) -> np.ndarray:
        """The model's inputs for the rows of ``df`` (:meth:`Preprocessing.transform`)."""
        return self.preprocessing.transform(df)

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """The model's predictions (classes, values or clusters) for the rows of ``df``."""
        return self.model.predict(self.features(df))

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        """Class probabilities for the rows of ``df`` (classifiers)."""
        return self.model.predict_proba(self.features(df))

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """The model's ``transform`` (an embedding's coordinates) for the rows of ``df``."""
        return self.model.transform(self.features(df))


def pipeline_parts(model: Any, prepared: PreparedData | Preprocessing | None = None
                   ) -> tuple[Any, Preprocessing | None]:
    """The estimator and the fitted preprocessing that feeds it: a :class:`Pipeline`'s own, else
    ``prepared``'s (a run's prepared data, or the steps themselves); None when there is none."""
    if isinstance(model, Pipeline):
        return model.model, model.preprocessing
    if isinstance(prepared, PreparedData):
        return model, Preprocessing.from_prepared(prepared)
    return model, prepared


def save_model(model: Any, path: str | os.PathLike, *, prepared: PreparedData | None = None,
               context: dict[str, Any] | None = None) -> str:
    """Write a model file: ``model`` (an estimator or a :class:`Pipeline`) to a ``.zip`` or a folder.

    Give ``prepared`` (the data it was fitted on) to store the preprocessing with it, so the file
    predicts from a table's original columns (:func:`load_model` gives a :class:`Pipeline`).
    JSON and safetensors only, never pickle.
    """
    if isinstance(model, Pipeline) and prepared is None:
        prepared = model.preprocessing
    model, preprocessing = pipeline_parts(model.model if isinstance(model, Pipeline) else model, prepared)
    state = None if preprocessing is None else preprocessing.to_state()
    return persist.save_model(model, path, context=context, preprocessing=state)


def load_model(path_or_bytes: str | os.PathLike | bytes) -> Any:
    """Load a model file: a :class:`Pipeline` when it carries its preprocessing, else the estimator.

    A file without preprocessing (saved from Python without data, or by an older treeviz) takes the
    features the model was trained on (scaled and encoded as in training); when the file came from a
    run, whose data was preprocessed, a warning says so.
    """
    estimator, state = persist.load_parts(path_or_bytes)
    if state is None:
        if getattr(estimator, "model_context_", {}).get("prepared_fingerprint"):
            warnings.warn("This model file carries no preprocessing (it was saved by an older treeviz): it takes "
                          "the scaled, encoded features it was trained on, not the table's columns. Download the "
                          "model again from the app (or `treeviz export RUN --model`) to get one that does.",
                          UserWarning, stacklevel=2)
        return estimator
    return Pipeline(Preprocessing.from_state(*state), estimator)
