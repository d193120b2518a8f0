"""Predictions for the rows of a new table: the one service behind ``treeviz predict`` and the Predict page.

A table laid out like the run's training data (or with the model's feature names as columns) is
encoded as at upload and preprocessed as the run was, by the fitted
:class:`~treeviz.services.data.pipeline.Preprocessing` (the run's, or the one a model file carries: the
same steps, so the page, ``treeviz predict`` and a downloaded model give the same numbers), and given to
the model. The output frame holds the columns kept from the input (an id), then what the model gives:
``prediction`` (classifiers and regressors), ``cluster`` (clustering: the cluster/leaf id) or ``z0``,
``z1``, ... (embeddings: the coordinates of ``transform``), then one ``proba_<class>`` column per
class when asked for and the model has them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from models.ground.errors import TreevizError
from models.registry import get_family
from treeviz.services.data import PreparedData
from treeviz.services.data.encoding import table_to_features
from treeviz.services.data.pipeline import Preprocessing, pipeline_parts

#: What preprocesses a table's rows for a model: a run's prepared data, the fitted steps, or none.
Prep = PreparedData | Preprocessing | None

#: The column of 1-based row numbers when the table has no id column to keep.
ROW_COLUMN = "row"
#: Column names taken for an id without asking (compared lower-case, spaces and dashes as underscores).
ID_NAMES = ("id", "row_id", "rowid", "sample_id", "record_id", "index", "key")
#: Text cells starting with one of these are formulas to a spreadsheet (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: A number as a spreadsheet reads it: an optional minus, ASCII digits with an optional decimal point, an
#: optional exponent; nothing else (no spaces, signs after the first, underscores, "inf" or "nan").
PLAIN_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Predictions:
    """What :func:`predict_table` returns.

    Attributes
    ----------
    frame : pandas.DataFrame
        The kept columns (or ``row``), then the model's outputs, one row per input row.
    notes : list of str
        Sentences about the input: ignored columns, levels never seen in training, no preprocessing.
    output : {"prediction", "cluster", "embedding"}
        What the model's columns are.
    outputs : tuple of str
        The names of the model's columns in ``frame`` (probabilities included).
    """

    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    output: str = "prediction"
    outputs: tuple[str, ...] = ()


def model_task(model: Any) -> str:
    """The task of a fitted model ("classification", "regression", "clustering", "embedding", ...)."""
    return get_family(model.family_key).task_of_class(type(model))


def output_kind(model: Any) -> str:
    """What the model gives for a row: "prediction", "cluster" (clustering) or "embedding" (no
    ``predict``, only ``transform``: coordinates)."""
    if not hasattr(model, "predict"):
        return "embedding"
    return "cluster" if model_task(model) == "clustering" else "prediction"


def offers_proba(model: Any) -> bool:
    """Whether the model gives class probabilities (a classifier with ``predict_proba`` and ``classes_``)."""
    return hasattr(model, "predict_proba") and hasattr(model, "classes_")


def _id_name(column: Any) -> str:
    return re.sub(r"[\s\-]+", "_", str(column).strip().lower())


def default_id_column(columns: Sequence[Any]) -> str | None:
    """The column to keep as the rows' id without asking: the first named like an id (``id``,
    ``ID``, ``row_id``, ``Sample ID``, ...), else the first ending in ``_id``; None when none is.

    Examples
    --------
    >>> default_id_column(["x", "Row ID", "y"])
    'Row ID'
    >>> default_id_column(["x", "patient_id"])
    'patient_id'
    >>> default_id_column(["x", "idea"]) is None
    True
    """
    names = [_id_name(c) for c in columns]
    for wanted in ID_NAMES:
        if wanted in names:
            return str(columns[names.index(wanted)])
    return next((str(c) for c, n in zip(columns, names) if n.endswith("_id")), None)


def _may_feed(column: str, model: Any, prep: Preprocessing | None) -> bool:
    """Whether ``column`` may be read for a feature: one of that name, a one-hot level (``column=level``),
    a date part (``column (year)``) or the column a recorded feature source names."""
    names = prep.feature_names if prep is not None else tuple(model.feature_names_)
    if any(n == column or n.startswith((f"{column}=", f"{column} (")) for n in names):
        return True
    return prep is not None and prep.sources is not None and any(s[1] == column for s in prep.sources)


def table_features(df: pd.DataFrame, model: Any, prepared: Prep, *,
                   name: str = "table", what: str = "the model") -> tuple[np.ndarray, list[str]]:
    """The table's rows as the model's inputs: encoded as at upload, then preprocessed as in training.

    Parameters
    ----------
    df : pandas.DataFrame
        The rows (e.g. from :func:`treeviz.services.data.upload.read_table`); extra columns are ignored.
    model : estimator or Pipeline
        The fitted model (its ``feature_names_`` name the columns when there is no preprocessing); a
        :class:`Pipeline` brings its own preprocessing.
    prepared : PreparedData, Preprocessing or None
        The run's prepared training data or its fitted preprocessing; None for a model file without
        preprocessing, whose rows then go to the model as they are.
    name, what : str
        How messages name the table and the model.

    Returns
    -------
    X : numpy.ndarray
        ``(n_rows, n_features)`` inputs for the model.
    notes : list of str
        Sentences about the input.
    """
    model, prep = pipeline_parts(model, prepared)
    if prep is not None:
        return prep.transform_table(df, name=name)
    X_raw, notes = table_to_features(df, tuple(model.feature_names_), name=name)
    notes = [*notes, f"{what} carries no preprocessing, so the rows go to the model as they are; give the "
                     "values it was trained on (scaled ones, if its data was scaled)."]
    return X_raw, notes


def model_outputs(model: Any, X: np.ndarray, *, proba: bool = False, what: str = "the model") -> dict[str, np.ndarray]:
    """The model's columns for inputs ``X``, by name, in order (see the module's docstring).

    Raises
    ------
    TreevizError
        When ``proba`` is asked of a model without class probabilities, or the model refuses the rows
        (its own input checks, e.g. a missing value a family cannot route).
    """
    if proba and not offers_proba(model):
        raise TreevizError(f"Class probabilities need a classifier; {what} is a model for {model_task(model)}.")
    out: dict[str, np.ndarray] = {}
    try:
        kind = output_kind(model)
        if kind == "embedding":
            Z = np.asarray(model.transform(X))
            out.update({f"z{j}": Z[:, j] for j in range(Z.shape[1])})
        else:
            out[kind] = np.asarray(model.predict(X))
        if proba:
            P = np.asarray(model.predict_proba(X))
            out.update({f"proba_{c}": P[:, j] for j, c in enumerate(np.asarray(model.classes_).astype(str))})
    except TreevizError:
        raise
    except ValueError as err:  # the model's own input checks (for example NaN a family cannot route)
        raise TreevizError(f"The model could not predict these rows ({err}).") from None
    return out


def predict_table(df: pd.DataFrame, model: Any, prepared: Prep, *, keep: Sequence[str] = (),
                  row_numbers: bool = False, proba: bool = False, name: str = "table",
                  what: str = "the model") -> Predictions:
    """The model's outputs for every row of ``df``, beside the columns ``keep`` names.

    Parameters
    ----------
    df : pandas.DataFrame
        The rows to predict, laid out like the training table (the label column may be absent).
    model, prepared
        As for :func:`table_features`.
    keep : sequence of str
        Input columns copied to the front of the output (e.g. an id), in order.
    row_numbers : bool
        Put a ``row`` column of 1-based row numbers first (when the table has no id to keep).
    proba : bool
        Add one ``proba_<class>`` column per class (classifiers only).
    name, what : str
        How messages name the table and the model.

    Returns
    -------
    Predictions

    Raises
    ------
    TreevizError
        When ``keep`` names a column the table lacks, a feature's column is missing or unreadable, or
        the model cannot predict the rows.

    Examples
    --------
    >>> from treeviz.services.data import PrepConfig, load_dataset, prepare
    >>> from treeviz.services.experiments.training import train_run
    >>> prepared = prepare(load_dataset("iris"), PrepConfig())
    >>> model, _ = train_run("cart", "classification", {"max_depth": 2}, prepared)
    >>> rows = pd.DataFrame(prepared.dataset.X[:2], columns=list(prepared.dataset.feature_names))
    >>> list(predict_table(rows, model, prepared, row_numbers=True, proba=True).frame.columns)[:2]
    ['row', 'prediction']
    """
    missing = [c for c in keep if c not in df.columns]
    if missing:
        raise TreevizError(f"{name} has no column {', '.join(repr(c) for c in missing)} to keep.")
    # a kept column the model does not read is not "ignored" (the note would say so): leave it out
    model, prep = pipeline_parts(model, prepared)
    unread = [c for c in keep if not _may_feed(c, model, prep)]
    X, notes = table_features(df.drop(columns=unread), model, prep, name=name, what=what)
    frame = pd.DataFrame({c: _kept_column(df[c]) for c in keep})
    if row_numbers:
        frame.insert(0, ROW_COLUMN, np.arange(1, len(df) + 1))
    outputs = model_outputs(model, X, proba=proba, what=what)
    for column, values in outputs.items():
        frame[column] = values
    return Predictions(frame=frame, notes=notes, output=output_kind(model), outputs=tuple(outputs))


def _kept_column(column: pd.Series) -> pd.Series:
    """A kept input column as the table holds it, except whole numbers that pandas read as floats only
    because a cell is empty (an id column with a gap): those stay whole numbers (``-3``, not ``-3.0``)."""
    values = column.reset_index(drop=True)
    if values.dtype.kind != "f" or not values.isna().any():
        return values
    present = values.dropna().to_numpy()
    if len(present) and np.isfinite(present).all() and (present == np.round(present)).all() \
            and (np.abs(present) < 2**53).all():
        return values.astype("Int64")
    return values


def plain_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal number (``-1``, ``-0.5``, ``-1e3``, ``.5``): the strict form of
    :data:`PLAIN_NUMBER` and a finite float. Such text is a number to a spreadsheet, never a formula.

    Examples
    --------
    >>> [plain_number(t) for t in ("-1", "-0.5", "-1e3", "-1+2", "-2*A1", "=1", "-inf", "-1 ", "-1_000")]
    [True, True, True, False, False, False, False, False, False]
    """
    if not PLAIN_NUMBER.fullmatch(text):
        return False
    return math.isfinite(float(text))  # "-1e999" matches the form but is no number a spreadsheet holds


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell and column name that a spreadsheet would run as a formula
    prefixed with a single quote. Numbers are left as they are: numeric columns, numbers in a column of
    mixed values, and text that is a plain number (:func:`plain_number`), such as a class label "-1"
    (a -1/+1 target's predictions stay one column of numbers). Text such as "-1+2" or "=1" is guarded."""
    def cell(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not plain_number(value):
            return "'" + value
        return value

    out = frame.rename(columns=lambda c: cell(str(c)))
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column].dtype):
            out[column] = out[column].map(cell)
    return out


def predictions_csv(frame: pd.DataFrame) -> str:
    """The predictions as CSV text, safe to open in a spreadsheet (:func:`spreadsheet_safe`)."""
    return spreadsheet_safe(frame).to_csv(index=False)
