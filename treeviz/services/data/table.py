"""A table (pandas DataFrame) to a :class:`~treeviz.services.data.dataset.Dataset`.

The second half of the upload path (:mod:`treeviz.services.data.upload` reads the file and re-exports
everything here). Rules, stated once:

* numbers written as text become numbers when the whole non-missing column converts;
* so do numbers written with comma thousands separators, when every non-missing value is a
  number and at least one is written that way: ``"1,000.5"`` is 1000.5, ``"-12,345"`` is -12345,
  and plain numbers such as ``"7"`` may be mixed in. The groups after the first must have exactly
  three digits and the first group no leading zero, so ``"1,2,3"``, ``"1,00"`` and ``"0,125"``
  stay text. A note names the columns read this way;
* so do numbers written with a decimal comma and optional thousands points (``"1.000,25"`` is
  1000.25, ``"12,5"`` is 12.5), when every value is one, one has a comma, and none could also be
  read with comma thousands separators (``"2,500"``: then the column stays text);
* and numbers that all carry the same currency sign or unit (``"$1,000"``, ``"5 %"``, ``"12 kg"``),
  read without it (5 % is 5). A note names the unit. A text column of mostly numbers (a stray
  ``"n/a"``, mixed units) gets a note naming a value that kept it text;
* dates become one numeric feature, the date as a decimal year (the year plus the fraction of it
  gone by: 2024-07-02 is 2024.5), named ``"<column> (year)"``, so rules read like
  ``order_date (year) <= 2024.37``. A column is read as dates when it has a datetime dtype
  (Parquet), holds date objects, or every non-missing value is an ISO date or date-time text
  (``2024-03-01``, ``2024-03-01 12:30``, ``2024-03-01T12:30:00Z``, ``2024-03-01T12:30+02:00``) or
  a slash date (``03/01/2024``, optionally with a time), read month first unless some first
  number is above 12, then day first, or a year-first slash date (``2024/03/01``, read as ISO).
  Time-zone-aware values are converted to UTC first; naive ones are taken as they are. A column
  with any other value (or an impossible date such as 2024-02-30) stays text. A note names the columns read as dates;
* other non-numeric columns (text, categorical, boolean) with at most ``max_levels`` distinct
  values are one-hot encoded into features named ``column=level``; a missing value becomes its own
  level ``(missing)``; columns with more levels are left out;
* a derived name (``column=level``, ``<column> (year)``) that a column of the table or an earlier
  feature already has gets the first free number, ``"x=a (2)"``, with a note, so feature names never
  collide; :func:`feature_sources` maps the names back for :func:`table_to_features`;
* columns holding lists, sets or dicts (a Parquet list column) are left out with a note, and
  refused as the target; an unnamed column (``Unnamed: 0``) whose values are the row numbers, the
  index ``DataFrame.to_csv`` writes, is left out with a note (it would let a model learn the row
  order);
* the feature matrix's size is estimated from the plan before it is built; more than
  :data:`~treeviz.services.data.plan.MAX_MATRIX_MB` is refused;
* columns with no values, and constant columns, are dropped, except in image data where every
  pixel is kept so the image keeps its shape;
* numeric missing values stay NaN here (imputed on the training split by ``prepare``);
* infinite values are refused; any finite value is accepted, but features above 1e15 in magnitude
  get a note (the models need standard or quantile scaling for them, see
  :mod:`treeviz.services.data.preprocess`), and regression targets above 1e150 in magnitude are refused;
* classification targets become indices into the sorted unique labels (as text); integer labels
  are kept exact, also beyond 2**53; classes with a single row get a warning in the notes.

Problems that stop the conversion raise :class:`~models.ground.errors.TreevizError`; the rest become
the Dataset's ``notes``. :func:`inspect_table` runs the same column reading and plan, so what the
Data page promises is what :func:`table_to_dataset` does.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from models.ground.errors import TreevizError
from treeviz.services.data.columns import (
    ReadColumn,
    as_float,
    columns_text,
    duplicate_column_error,
    is_numeric,
    is_text,
    looks_numeric,
    read_column,
)
from treeviz.services.data.dataset import TASKS, Dataset
from treeviz.services.data.encoding import (
    FEATURE_SOURCES,
    MISSING_LEVEL,
    encode_classes,
    one_hot,
    unique_feature_names,
)
from treeviz.services.data.names import unsafe_names, visible
from treeviz.services.data.plan import (
    ColumnPlan,
    check_matrix_size,
    feature_name,
    feature_plan,
    image_shape,
)
from treeviz.services.data.preprocess import MAX_MODEL_INPUT

#: The key of ``DataFrame.attrs`` under which :func:`treeviz.services.data.upload.read_table` leaves notes
#: (rows it dropped) for :func:`table_to_dataset`.
READ_NOTES = "treeviz_notes"
MAX_CLASSES = 100
MAX_INTEGER_CLASSES = 20
#: Largest regression target magnitude accepted (squared errors must stay finite).
MAX_TARGET = 1e150
_TARGET_NAMES = ("target", "label", "labels", "class", "classes", "y", "species", "outcome", "response",
                 "category", "diagnosis", "survived", "churn", "quality", "grade")


@dataclass(frozen=True)
class TableOptions:
    """How a table becomes a Dataset.

    Parameters
    ----------
    target : str or None
        The target column; None means no target (the task becomes clustering).
    task : {"auto", "classification", "regression", "clustering"}
        ``"auto"`` uses :func:`detect_task`. With ``"clustering"`` and a target, the target is kept
        only as reference groups for evaluation.
    drop_missing_target : bool
        Drop rows whose target is missing (with a note) instead of stopping with a message.
    max_levels : int
        Non-numeric columns with more distinct values than this are left out.
    image : {"auto", "yes", "no"}
        Treat the features as a square grey-scale image (pixels kept even when constant).
    min_rows : int
        Fewest rows a usable table has.
    """

    target: str | None = None
    task: str = "auto"
    drop_missing_target: bool = False
    max_levels: int = 50
    image: str = "auto"
    min_rows: int = 10

    def __post_init__(self) -> None:
        if self.task not in ("auto", *TASKS):
            raise TreevizError(f"Unknown task {self.task!r}; use auto, {', '.join(TASKS)}.")
        if self.image not in ("auto", "yes", "no"):
            raise TreevizError(f"The image option must be auto, yes or no, not {self.image!r}.")
        if int(self.max_levels) < 1:
            raise TreevizError("The largest number of categorical levels must be at least 1.")
        if int(self.min_rows) < 2:
            raise TreevizError("The smallest number of rows must be at least 2.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (for run records)."""
        return asdict(self)


def detect_task(series: pd.Series) -> str:
    """Guess the task a target column implies.

    Parameters
    ----------
    series : pandas.Series
        The target column.

    Returns
    -------
    str
        ``"classification"`` for text, boolean, categorical or integer-valued columns with at most
        20 distinct values; ``"regression"`` for other numeric columns.
    """
    s = read_column(pd.Series(series)).values
    if not is_numeric(s):
        return "classification"
    values = as_float(s)
    values = values[np.isfinite(values)]
    if values.size and np.all(values == np.round(values)) and np.unique(values).size <= MAX_INTEGER_CLASSES:
        return "classification"
    return "regression"


def suggest_target(df: pd.DataFrame) -> str | None:
    """Guess which column is the target.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.

    Returns
    -------
    str or None
        A column named like target, label, class, y, species, outcome, diagnosis, ... (or ending in
        ``_target``/``_label``/``_class``); otherwise the last column; None without columns.
    """
    columns = [str(c) for c in df.columns]
    if not columns:
        return None
    lowered = {c.strip().lower(): c for c in columns}
    for wanted in _TARGET_NAMES:
        if wanted in lowered:
            return lowered[wanted]
    for c in columns:
        if re.search(r"(^|_)(target|label|class)$", c.strip().lower()):
            return c
    return columns[-1]


def _check_infinite(df: pd.DataFrame) -> None:
    for col in df.columns:
        if is_numeric(df[col]):
            n_inf = int(np.isinf(as_float(df[col])).sum())
            if n_inf:
                raise TreevizError(f"Column '{col}' has {n_inf} infinite value(s) (inf or -inf). "
                                   "Replace them with numbers, or leave those cells empty so they count "
                                   "as missing.")


def _resolve_target(df: pd.DataFrame, options: TableOptions, notes: list[str]) -> tuple[pd.DataFrame, str]:
    """Check the target column and its missing values; returns the kept rows and the task."""
    target = options.target
    if target is None:
        if options.task in ("classification", "regression"):
            raise TreevizError(f"{options.task.capitalize()} needs a target column. "
                               "Choose one, or choose clustering as the task.")
        return df, "clustering"
    if target not in df.columns:
        raise TreevizError(f"There is no column '{target}' in the table. "
                           f"Choose the target from: {columns_text(list(df.columns))}.")
    n_missing = int(df[target].isna().sum())
    if n_missing and not options.drop_missing_target:
        raise TreevizError(f"The target column '{target}' has {n_missing} missing value(s). Fill them in, "
                           "or tick 'drop rows with a missing target' to leave those rows out.")
    if n_missing:
        df = df.loc[df[target].notna()].reset_index(drop=True)
        notes.append(f"Dropped {n_missing} row(s) whose target '{target}' was missing.")
    task = detect_task(df[target]) if options.task == "auto" else options.task
    return df, task


def _target_array(s: pd.Series, task: str, raw: pd.Series) -> tuple[np.ndarray, tuple[str, ...] | None]:
    name = s.name
    if task == "regression":
        if not is_numeric(s):
            raise TreevizError(f"The target '{name}' is not numeric, so it cannot be used for regression. "
                               "Choose classification as the task, or another target column.")
        values = as_float(s)
        largest = float(np.max(np.abs(values), initial=0.0))
        if largest > MAX_TARGET:
            raise TreevizError(f"The regression target '{name}' has values up to {largest:.3g} in magnitude, "
                               f"too large to fit a model on (at most {MAX_TARGET:.0e}). Rescale the column, "
                               "for example to other units or to its logarithm, and upload again.")
        return values, None
    y, class_names = encode_classes(s, raw)
    if len(class_names) > MAX_CLASSES:
        raise TreevizError(f"The target '{name}' has {len(class_names)} distinct values, too many classes "
                           f"(at most {MAX_CLASSES}). If it is a quantity, choose regression as the task.")
    if len(class_names) < 2 and task == "classification":
        raise TreevizError(f"The target '{name}' has a single class ('{class_names[0]}'), so there is "
                           "nothing to classify. Choose another target or a table with at least two classes.")
    return y, class_names


def _plan(features: pd.DataFrame, options: TableOptions,
          read_as: dict[str, str]) -> tuple[list[ColumnPlan], tuple[int, int] | None]:
    """The plan for every feature column, and the image shape (or None)."""
    shape = image_shape(features, options.image)
    is_image = shape is not None
    plan = [feature_plan(c, features[c], int(options.max_levels), is_image, read_as.get(c, ""))
            for c in features.columns]
    return plan, shape


def _reading_notes(read: dict[str, ReadColumn], target: str | None) -> list[str]:
    """Which columns were read as numbers written in some form, and which as dates."""
    def read_as(how: str) -> list[str]:
        return [c for c, r in read.items() if r.read_as == how and (c != target or how != "dates")]

    notes = []
    if thousands := read_as("thousands"):
        notes.append(f"Read column(s) {columns_text(thousands, 10)} as numbers written with thousands "
                     "separators ('1,000.5' is 1000.5).")
    if commas := read_as("decimal comma"):
        notes.append(f"Read column(s) {columns_text(commas, 10)} as numbers written with a decimal comma "
                     "('1.000,25' is 1000.25).")
    for c in read_as("unit"):
        notes.append(f"Read column '{c}' as numbers in '{read[c].unit}', without the unit ('{read[c].unit}' "
                     "removed from every value).")
    if dates := read_as("dates"):
        notes.append(f"Read column(s) {columns_text(dates, 10)} as dates, each as one feature named like "
                     f"'{feature_name(dates[0], 'dates')}': the date as a decimal year (2024-07-02 is 2024.5), "
                     "with time-zone-aware times taken in UTC.")
    if target in read and read[target].read_as == "dates":
        notes.append(f"Read the target '{target}' as dates, each as a decimal year (2024-07-02 is 2024.5), "
                     "with time-zone-aware times taken in UTC.")
    return notes


def _plan_notes(plan: list[ColumnPlan], features: pd.DataFrame) -> list[str]:
    def named(reason: str) -> list[str]:
        return [p.column for p in plan if p.reason == reason]

    notes: list[str] = []
    if empty := named("empty"):
        notes.append(f"Dropped {len(empty)} column(s) with no values at all: {columns_text(empty, 10)}.")
    if const := named("constant"):
        notes.append(f"Dropped {len(const)} constant column(s) (a single distinct value): "
                     f"{columns_text(const, 10)}.")
    if wide := named("too many levels"):
        shown = ", ".join(f"'{c}' ({features[c].nunique()} levels)" for c in wide[:10])
        notes.append(f"Left out {len(wide)} non-numeric column(s) with too many distinct values to one-hot "
                     f"encode: {shown}.")
    if nested := named("nested"):
        notes.append(f"Left out {len(nested)} column(s) holding lists, sets or dicts instead of single values: "
                     f"{columns_text(nested, 10)}. Spread such a column over columns of single values to use it.")
    for c in named("levels"):
        if n_missing := int(features[c].isna().sum()):
            notes.append(f"Column '{c}' has {n_missing} missing value(s), encoded as the level "
                         f"'{MISSING_LEVEL}'.")
    for p in plan:
        if p.reason in ("levels", "too many levels") and (note := _text_number_note(p, features[p.column])):
            notes.append(note)
    return notes


def _text_number_note(p: ColumnPlan, s: pd.Series) -> str | None:
    """Why a column of mostly numbers is read as text, when it is."""
    if not is_text(s):
        return None
    values = pd.Series(s.dropna().astype(str).str.strip().unique()[:1000])
    looks = looks_numeric(values)
    plain = pd.to_numeric(values, errors="coerce").notna()
    if not values.size or looks.mean() < 0.5 or plain.all():
        return None
    example = values[~looks].iloc[0] if not looks.all() else values[~plain].iloc[0]
    what = "one-hot encoded" if p.role == "one-hot" else "left out"
    return (f"Column '{p.column}' holds numbers, but not all numbers in one form (for example '{example[:40]}'), "
            f"so it is read as text ({what}). To read it as numbers, write every value as a number with the "
            "same unit or none, and leave a missing value's cell empty.")


def _size_notes(X: np.ndarray, names: list[str]) -> list[str]:
    """A note naming the features too large for the models unless they are scaled."""
    with np.errstate(invalid="ignore"):
        magnitude = np.nanmax(np.abs(X), axis=0, initial=0.0)
    big = [names[j] for j in np.flatnonzero(magnitude > MAX_MODEL_INPUT)]
    if not big:
        return []
    note = (f"Column(s) {columns_text(big, 10)} have values up to {float(magnitude.max()):.3g} in magnitude, "
            "too large for the models without scaling; standard and quantile scaling handle them.")
    return [note]


_BLANK_HEADER = re.compile(r"(?:Unnamed: \d+)?")  # how pandas names a column without a header
#: Why a row-number column is left out, as the Data page's Columns table and the Dataset's
#: ``columns_left_out`` both say it.
ROW_NUMBERS = "the row numbers, in a column with no name"


def _row_number_columns(df: pd.DataFrame, target: str | None) -> list[str]:
    """Columns without a name whose values are the row numbers 0..n-1 or 1..n in some order."""
    found = []
    for c in df.columns:
        if c == target or not _BLANK_HEADER.fullmatch(c) or not is_numeric(df[c]):
            continue
        values = np.sort(as_float(df[c]))
        if np.array_equal(values, np.arange(len(df))) or np.array_equal(values, np.arange(1, len(df) + 1)):
            found.append(c)
    return found


def _class_notes(y: np.ndarray, class_names: tuple[str, ...], target: str) -> list[str]:
    """A warning when some classes have a single row."""
    single = int((np.bincount(y, minlength=len(class_names)) == 1).sum())
    if not single:
        return []
    return [f"{single} of the {len(class_names)} classes of the target '{target}' have a single row: a model "
            "cannot learn a class from one example, and its row is either in training or in the test "
            "split, so accuracy will be low. Merge rare classes, or choose regression if the target is "
            "a quantity."]


def table_to_dataset(df: pd.DataFrame, name: str, options: TableOptions, *, source: str = "") -> Dataset:
    """Turn a table into a :class:`Dataset` (numeric features, encoded target, notes).

    Parameters
    ----------
    df : pandas.DataFrame
        The table, e.g. from :func:`read_table`. It is not modified.
    name : str
        Name of the resulting dataset (usually the file name).
    options : TableOptions
        Target column, task and encoding choices.
    source : str
        Provenance shown in the app and stored in run records.

    Returns
    -------
    Dataset
        Features as float64 with missing values left as NaN (imputed later by
        :func:`treeviz.services.data.preprocess.prepare`); one-hot columns are named ``column=level``.

    Raises
    ------
    TreevizError
        For a missing target column, missing target values, too few rows, infinite values, a
        single or too many classes, a non-numeric regression target, or no usable feature.
    """
    if not isinstance(df, pd.DataFrame):
        raise TreevizError("The table must be a DataFrame; read files with read_table first.")
    notes: list[str] = list(df.attrs.get(READ_NOTES, []))
    # a file's name only labels the data set (and its source says where it came from): their control
    # characters as escapes
    name, source = visible(name), visible(source)
    columns = [str(c).strip() for c in df.columns]
    if unsafe := unsafe_names(columns):
        raise TreevizError(f"In '{name}' the column name(s) {', '.join(unsafe[:10])} hold control characters (shown "
                           "as \\x.. or \\u....), which no page or terminal shows as text. Rename the columns, then "
                           "upload again.")
    dups = sorted({c for c in columns if columns.count(c) > 1})
    if dups:
        raise duplicate_column_error(name, dups)
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise TreevizError(f"The table '{name}' is empty. Choose a table with a header row and data rows.")
    raw = df.set_axis(columns, axis=1).reset_index(drop=True)
    read = {c: read_column(raw[c]) for c in columns}
    df = pd.DataFrame({c: r.values for c, r in read.items()})
    read_as = {c: r.read_as for c, r in read.items() if r.read_as}
    target = options.target
    if read_as.get(target) == "nested":
        raise TreevizError(f"The target '{target}' holds lists, sets or dicts, not single values. Choose "
                           "another target column, or give one label per row.")
    notes.extend(_reading_notes(read, target))
    if row_numbers := _row_number_columns(df, target):
        df = df.drop(columns=row_numbers)
        notes.append(f"Left out column(s) {columns_text(row_numbers, 10)}: no name, and the row numbers as "
                     "values (the index that a DataFrame's to_csv writes), which would let a model learn the row order "
                     "instead of the data.")
    n_uploaded = len(df)
    df, task = _resolve_target(df, options, notes)
    if len(df) < options.min_rows:
        raise TreevizError(f"The table has only {len(df)} usable row(s), but at least {options.min_rows} are "
                           "needed to train and test a model. Add more rows.")
    _check_infinite(df)
    y, class_names = (None, None)
    if target is not None:
        kept = raw[target].dropna().reset_index(drop=True) if len(df) < n_uploaded else raw[target]
        y, class_names = _target_array(df[target], task, kept)
        if class_names is not None and (unsafe := unsafe_names(class_names)):
            raise TreevizError(f"The target '{target}' has class label(s) {', '.join(unsafe[:10])} holding control "
                               "characters (shown as \\x.. or \\u....), which no page or terminal shows as text. "
                               "Change those labels in the file, then upload again.")
        notes.extend(_class_notes(y, class_names, target) if task == "classification" else [])
    features = df.drop(columns=[target]) if target is not None else df
    plan, shape = _plan(features, options, read_as)
    notes.extend(_plan_notes(plan, features))
    check_matrix_size(len(features), plan)
    blocks, names, derived, sources = [], [], [], []
    for col, role, *_ in plan:
        if role == "feature":
            blocks.append(as_float(features[col])[:, None])
            names.append(feature_name(col, read_as.get(col, "")))
            derived.append(read_as.get(col) == "dates")
            sources.append(["dates" if read_as.get(col) == "dates" else "column", col, ""])
        elif role == "one-hot":
            block, block_names = one_hot(col, features[col])
            blocks.append(block)
            names.extend(block_names)
            derived.extend([True] * len(block_names))
            sources.extend(["one-hot", col, n[len(col) + 1:]] for n in block_names)
    if not blocks:
        raise TreevizError("No usable feature column is left (empty, constant and high-cardinality "
                           "columns are left out). Upload a table with at least one numeric column or "
                           "a text column with few distinct values.")
    names, renamed = unique_feature_names(names, derived, columns)
    if renamed:
        shown = ", ".join(f"'{new}' (was '{old}')" for old, new in renamed[:10])
        notes.append(f"Renamed {len(renamed)} feature(s) whose name a column or another feature already had, "
                     f"so that every name is unique: {shown}.")
    X = np.hstack(blocks)
    notes.extend(_size_notes(X, names))
    left_out = {p.column: p.detail for p in plan if p.role == "left out"}
    left_out.update(dict.fromkeys(row_numbers, ROW_NUMBERS))
    return Dataset(
        name=name, X=X, y=y, feature_names=tuple(names), task=task, target_name=target,
        class_names=class_names, image_shape=shape, source=source, notes=tuple(notes),
        description=f"Table '{name}': {n_uploaded} rows, {len(columns)} columns.",
        meta={"columns_left_out": left_out, "rows_in_table": n_uploaded, "options": options.to_dict(),
              FEATURE_SOURCES: sources},
    )


def _distinct(s: pd.Series) -> int:
    try:
        return int(s.nunique(dropna=True))
    except TypeError:  # unhashable cells (lists, dicts, sets): count them by their text
        return int(s.dropna().astype(str).nunique())


def inspect_table(df: pd.DataFrame, target: str | None = None, *, max_levels: int = 50,
                  options: TableOptions | None = None) -> pd.DataFrame:
    """One row per column describing what the upload would do with it (for the Data page).

    It reads the columns, leaves out the row-number columns and plans the rest as
    :func:`table_to_dataset` does, so a column it lists as a feature is one the conversion keeps.

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read by :func:`read_table`.
    target : str, optional
        The target column; defaults to :func:`suggest_target`. Ignored when ``options`` is given.
    max_levels : int
        Same meaning as :attr:`TableOptions.max_levels`. Ignored when ``options`` is given.
    options : TableOptions, optional
        The options the conversion will use (its target, None for none, and its image and level
        choices); give them to describe exactly that conversion.

    Returns
    -------
    pandas.DataFrame
        Columns ``column, dtype, missing, distinct, example, role, detail``; ``role`` is one of
        ``"target candidate"``, ``"feature"``, ``"one-hot"``, ``"left out"``.
    """
    if options is None:
        options = TableOptions(target=suggest_target(df) if target is None else target, max_levels=max_levels)
    target = options.target
    read = {str(c).strip(): read_column(df[c]) for c in df.columns}
    table = pd.DataFrame({c: r.values for c, r in read.items()})
    read_as = {c: r.read_as for c, r in read.items() if r.read_as}
    row_numbers = _row_number_columns(table, target)
    features = table.drop(columns=[c for c in table.columns if c == target or c in row_numbers])
    plan, _ = _plan(features, options, read_as)
    roles = {p.column: (p.role, p.detail) for p in plan}
    roles.update(dict.fromkeys(row_numbers, ("left out", ROW_NUMBERS)))
    rows = []
    for raw_col, col in zip(df.columns, table.columns):
        s = df[raw_col]
        present = s.dropna()
        if col == target:
            role, why = "target candidate", detect_task(s)
        else:
            role, why = roles.get(col, ("left out", ""))
        rows.append({
            "column": col, "dtype": str(table[col].dtype), "missing": int(s.isna().sum()),
            "distinct": _distinct(s),
            "example": str(present.iloc[0])[:40] if len(present) else "", "role": role, "detail": why,
        })
    return pd.DataFrame(rows, columns=["column", "dtype", "missing", "distinct", "example", "role", "detail"])
