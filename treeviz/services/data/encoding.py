"""Encoding a table's columns as features and targets: one-hot levels, class indices, feature names
that never collide, and the map from each feature back to the column it came from (so a new table is
encoded as the training table was, :func:`table_to_features`)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from models.ground.errors import TreevizError
from treeviz.services.data.columns import (
    as_float,
    columns_text,
    duplicate_column_error,
    is_numeric,
    looks_numeric,
    read_column,
)

MISSING_LEVEL = "(missing)"


def _level_strings(s: pd.Series) -> pd.Series:
    return s.astype(str).where(s.notna(), MISSING_LEVEL)


def one_hot(col: str, s: pd.Series) -> tuple[np.ndarray, list[str]]:
    text = _level_strings(s)
    levels = sorted(set(text) - {MISSING_LEVEL}) + ([MISSING_LEVEL] if (text == MISSING_LEVEL).any() else [])
    codes = pd.Categorical(text, categories=levels).codes
    block = (codes[:, None] == np.arange(len(levels))[None, :]).astype(np.float64)
    return block, [f"{col}={lvl}" for lvl in levels]


def _unique_labels(values: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]] | None:
    try:
        uniq, y = np.unique(values, return_inverse=True)
    except TypeError:  # labels of mixed types cannot be ordered
        return None
    names = tuple(str(u) for u in uniq)
    return (y, names) if len(set(names)) == len(names) else None


def _exact_integers(raw: pd.Series) -> np.ndarray | None:
    """The integers of a column of integers or integer text, exactly (also beyond 2**53); else None."""
    if pd.api.types.is_integer_dtype(raw.dtype):
        return raw.to_numpy()
    try:
        return np.asarray([int(str(v).strip().replace(",", "")) for v in raw], dtype=object)
    except ValueError:
        return None


def encode_classes(s: pd.Series, raw: pd.Series | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class indices into the sorted unique labels (numbers sorted as numbers, 2 before 10).

    ``raw`` is the column as uploaded (``s`` as read): integer labels beyond 2**53, which floats
    would merge, are taken from it exactly."""
    values = s.to_numpy()
    if is_numeric(s):
        values = as_float(s)
        if np.all(values == np.round(values)) and np.all(np.abs(values) < 2.0**53):  # exact in int64
            values = values.astype(np.int64)  # "3", not "3.0", as the class name
        elif np.all(values == np.round(values)) and raw is not None \
                and (exact := _exact_integers(raw)) is not None:
            values = exact
    found = _unique_labels(values)
    if found is None:  # mixed types, or labels that are equal as text (1 and "1")
        found = _unique_labels(np.asarray([str(v) for v in values], dtype=object))
    y, names = found
    return np.asarray(y, dtype=np.int64).ravel(), names


_NUMBERED = re.compile(r"(.*) \(([2-9]|[1-9]\d+)\)", re.DOTALL)


def _numbered(name: str, k: int) -> str:
    return f"{name} ({k})"


def unique_feature_names(names: list[str], derived: list[bool],
                         columns: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Feature names made unique: a derived name (``column=level``, ``column (year)``) that a column
    of the table or an earlier feature already has gets the first free number, ``"x=a (2)"``.

    Parameters
    ----------
    names : list of str
        The features' names as derived, in order; a numeric column's feature has the column's name.
    derived : list of bool
        Which names are derived (the others are column names, unique already).
    columns : list of str
        Every column of the table, the target and left-out ones included.

    Returns
    -------
    names : list of str
        Unique names.
    renamed : list of (str, str)
        ``(derived name, new name)`` for each renamed feature.
    """
    taken = set(columns)
    out, renamed = [], []
    for name, is_derived in zip(names, derived):
        new, k = name, 2
        while is_derived and new in taken:
            new, k = _numbered(name, k), k + 1
        if new != name:
            renamed.append((name, new))
        taken.add(new)
        out.append(new)
    return out, renamed


#: ``Dataset.meta`` key of the upload's feature sources: ``[kind, column, level]`` per feature.
FEATURE_SOURCES = "feature_sources"


_SOURCE_KINDS = ("column", "dates", "one-hot")


def _derived_sources(name: str, present: set[str], order: dict[str, int]) -> list[tuple[str, str, str]]:
    """The ways a derived feature ``name`` can come from the table's columns: ``("dates", column, "")``
    for ``"<column> (year)"``, ``("one-hot", column, level)`` for ``"column=level"``; in column order."""
    found = [("one-hot", name[:i], name[i + 1:]) for i, ch in enumerate(name) if ch == "=" and name[:i] in present]
    if name.endswith(" (year)") and name[:-7] in present:
        found.append(("dates", name[:-7], ""))
    return sorted(found, key=lambda source: order[source[1]])


def feature_sources(feature_names: tuple[str, ...] | list[str],
                    columns: list[str]) -> list[tuple[str, str, str] | None]:
    """Where each of a model's features comes from in a table with these columns, undoing
    :func:`unique_feature_names`.

    A feature that is a column's name is that column (``("column", name, "")``): derived names never
    take a column's name. Otherwise it is derived (see :func:`_derived_sources`); a name ending in a
    number, ``"x=a (2)"``, whose unnumbered name is a column or another feature, is first read as
    that name renamed, and each source gives one feature. None where no column fits.
    """
    present = set(columns)
    order = {c: i for i, c in enumerate(columns)}
    known = present | set(feature_names)
    used: set[tuple[str, str, str]] = set()
    sources: list[tuple[str, str, str] | None] = []
    for feature in map(str, feature_names):
        if feature in present:
            sources.append(("column", feature, ""))
            continue
        numbered = _NUMBERED.fullmatch(feature)
        candidates = _derived_sources(numbered[1], present, order) if numbered and numbered[1] in known else []
        candidates += _derived_sources(feature, present, order)
        source = next((c for c in candidates if c not in used), None)
        if source is not None:
            used.add(source)
        sources.append(source)
    return sources


def _level_texts(s: pd.Series, known: set[str]) -> pd.Series:
    """The one-hot level of each value, as at upload; a float that is a whole number also matches
    its integer text ("3.0" matches the level "3": a column with missing cells is read as floats)."""
    text = _level_strings(s)
    if is_numeric(s):
        values = as_float(s)
        whole = np.isfinite(values) & (values == np.round(values)) & (np.abs(values) < 2.0**53)
        as_int = pd.Series([str(int(v)) if w else "" for v, w in zip(values, whole)], index=s.index)
        text = text.where(text.isin(known) | ~as_int.isin(known), as_int)
    return text


def _stored_sources(stored: Any, feature_names: tuple[str, ...] | list[str],
                    columns: list[str]) -> list[tuple[str, str, str]] | None:
    """The sources an upload recorded (``Dataset.meta[FEATURE_SOURCES]``), when they are well formed,
    one per feature, and every column they name is in the table; else None (names are read instead)."""
    if not isinstance(stored, list | tuple) or len(stored) != len(feature_names):
        return None
    present = set(columns)
    out = []
    for item in stored:
        if (not isinstance(item, list | tuple) or len(item) != 3 or not all(isinstance(v, str) for v in item)
                or item[0] not in _SOURCE_KINDS or item[1] not in present):
            return None
        out.append((item[0], item[1], item[2]))
    return out if len(set(out)) == len(out) else None


def table_to_features(df: pd.DataFrame, feature_names: tuple[str, ...] | list[str], *,
                      name: str = "table", sources: Any = None) -> tuple[np.ndarray, list[str]]:
    """New rows of a table as the features a model was trained on, encoded as :func:`table_to_dataset`
    encodes an upload.

    Each feature is found by name: a column of that name (numbers, also written as text or with
    thousands separators); ``"<column> (year)"`` from a date column ``<column>``; ``"column=level"``
    as the one-hot indicator of ``level`` in ``column`` (a missing value is the level
    ``(missing)``; a level the model never saw sets none of the column's indicators). So a table
    laid out like the uploaded one works, and so does a table whose columns are already the
    model's feature names. Other columns (the target, ids) are ignored.

    Parameters
    ----------
    df : pandas.DataFrame
        The rows, e.g. from :func:`treeviz.services.data.upload.read_table`.
    feature_names : sequence of str
        The model's features, in order (``Dataset.feature_names`` of its training data).
    name : str
        How messages name the table (usually its file name).
    sources : list, optional
        Where each feature came from at upload (``Dataset.meta[FEATURE_SOURCES]``: ``[kind, column,
        level]`` each). Names alone can be ambiguous (a column ``x`` next to a column ``x=a``); when
        these are given, well formed and every column they name is in the table, they are used
        instead of reading the names.

    Returns
    -------
    X : numpy.ndarray
        ``(n_rows, n_features)`` float64, NaN where a numeric value is missing (the run's
        preprocessing imputes it).
    notes : list of str
        Sentences about ignored columns and unseen levels.

    Raises
    ------
    TreevizError
        When a feature has no column, a numeric feature's column holds text, a value is infinite,
        or the table repeats a column name.
    """
    if not isinstance(df, pd.DataFrame):
        raise TreevizError("The table must be a DataFrame; read files with read_table first.")
    columns = [str(c).strip() for c in df.columns]
    dups = sorted({c for c in columns if columns.count(c) > 1})
    if dups:
        raise duplicate_column_error(name, dups)
    df = df.set_axis(columns, axis=1).reset_index(drop=True)
    X = np.full((len(df), len(feature_names)), np.nan)
    used: set[str] = set()
    missing: list[str] = []
    unseen: dict[str, set[str]] = {}
    levels: dict[str, set[str]] = {}
    one_hot: dict[int, tuple[str, str]] = {}
    found = _stored_sources(sources, feature_names, columns) or feature_sources(feature_names, columns)
    for j, (feature, source) in enumerate(zip(map(str, feature_names), found)):
        if source is None:
            missing.append(feature)
            continue
        kind, column, level = source
        if kind == "one-hot":
            one_hot[j] = (column, level)
            levels.setdefault(column, set()).add(level)
            continue
        values = read_column(df[column]).values
        if not is_numeric(values) and values.notna().any():
            text = values.dropna().astype(str)
            not_numbers = text[~looks_numeric(text.str.strip())]  # quote a value that is no number
            example = (not_numbers if len(not_numbers) else text).iloc[0][:40]
            raise TreevizError(f"Column '{column}' of '{name}' holds text such as '{example}', but the model "
                               f"reads '{feature}' as a number. Give numbers (or dates) in that column.")
        X[:, j] = as_float(values) if is_numeric(values) else np.nan
        used.add(column)
    if missing:
        raise TreevizError(f"The table '{name}' lacks the column(s) the model needs for "
                           f"{columns_text(missing, 10)}. Give the columns of the training data (or the "
                           "model's feature names).")
    texts = {c: _level_texts(df[c], known) for c, known in levels.items()}
    for j, (column, level) in one_hot.items():
        X[:, j] = (texts[column] == level).to_numpy(dtype=np.float64)
        used.add(column)
    for column, known in levels.items():
        if new := set(texts[column]) - known:
            unseen[column] = new
    n_inf = int(np.isinf(X).sum())
    if n_inf:
        raise TreevizError(f"The table '{name}' has {n_inf} infinite value(s) (inf or -inf) in the "
                           "model's columns. Replace them with numbers, or leave those cells empty.")
    notes = []
    if ignored := [c for c in columns if c not in used]:
        notes.append(f"Ignored column(s) the model does not use: {columns_text(ignored, 10)}.")
    for column, new in unseen.items():
        shown = ", ".join(f"'{v}'" for v in sorted(new)[:5]) + (" ..." if len(new) > 5 else "")
        notes.append(f"Column '{column}' has value(s) the model never saw in training ({shown}); "
                     "their one-hot features are all 0.")
    return X, notes
