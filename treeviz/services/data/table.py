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
  :data:`MAX_MATRIX_MB` is refused;
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

import math
import re
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from models.ground.errors import TreevizError
from treeviz.services.data.dataset import TASKS, Dataset
from treeviz.services.data.names import unsafe_names, visible
from treeviz.services.data.preprocess import MAX_MODEL_INPUT

MISSING_LEVEL = "(missing)"
#: The key of ``DataFrame.attrs`` under which :func:`treeviz.services.data.upload.read_table` leaves notes
#: (rows it dropped) for :func:`table_to_dataset`.
READ_NOTES = "treeviz_notes"
#: Largest feature matrix (float64, in MB) an upload may become; estimated before it is built.
MAX_MATRIX_MB = 512
_MB = 1024 * 1024
MAX_CLASSES = 100
MAX_INTEGER_CLASSES = 20
#: Largest regression target magnitude accepted (squared errors must stay finite).
MAX_TARGET = 1e150
_TARGET_NAMES = ("target", "label", "labels", "class", "classes", "y", "species", "outcome", "response",
                 "category", "diagnosis", "survived", "churn", "quality", "grade")
_NOT_NUMBER_TEXT = {"boolean", "datetime", "datetime64", "date", "time", "timedelta", "timedelta64",
                    "period", "interval", "bytes", "empty", "categorical"}


def duplicate_column_error(name: str, duplicates: list[str]) -> TreevizError:
    """The error for a table whose header repeats column names."""
    shown = ", ".join(f"'{d}'" for d in duplicates[:10])
    return TreevizError(f"In '{name}' the column name(s) {shown} appear more than once. "
                        "Rename the columns so every name is unique, then upload again.")


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


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def _as_float(s: pd.Series) -> np.ndarray:
    return s.to_numpy(dtype=np.float64, na_value=np.nan)


# "1,000.5", "-12,345": groups of exactly three digits, the first of one to three without a leading 0
_THOUSANDS = r"[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?"
_ISO_DATE = (r"\d{4}-\d{2}-\d{2}"
             r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?")
_SLASH_DATE = r"(\d{1,2})/(\d{1,2})/(\d{4})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?)?"
#: The date part of a year-first slash date (2012/01/31, 2012/1/31), rewritten as ISO before parsing.
_YEAR_FIRST = r"^(\d{4})/(\d{1,2})/(\d{1,2})(?=$|[T ])"
_YEAR_FIRST_DATE = r"\d{4}/\d{1,2}/\d{1,2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"


class ReadColumn(NamedTuple):
    """A table column as the conversion reads it."""

    values: pd.Series
    read_as: str  # "" (as it is, or plain numbers), "thousands", "decimal comma", "unit", "dates", "nested"
    unit: str = ""  # the unit removed, when read_as is "unit"


#: Cells that are containers, not values (a Parquet list column, or a DataFrame built from dicts).
_NESTED = (list, tuple, dict, set, frozenset, np.ndarray)
# "1.000,25", "12,5", "-3": groups of three digits after points, a decimal comma
_DECIMAL_COMMA = r"[+-]?(?:[1-9]\d{0,2}(?:\.\d{3})+|\d+)(?:,\d+)?"
_GROUPED_INTEGER = r"[+-]?[1-9]\d{0,2}(?:,\d{3})+"
# "$1,000", "5 %", "12.5kg", "-€3": one number with a currency sign before it or a unit after it
_WITH_UNIT = (r"(?P<sign>[+-]?)(?P<pre>[$€£¥]?)\s*(?P<num>(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
              r"\s*(?P<post>%|[^\W\d_][^\W_]*(?:/[^\W\d_]+)?)?")


def _is_text(s: pd.Series) -> bool:
    return pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)


def _float_series(like: pd.Series, present: pd.Series, values: np.ndarray) -> pd.Series:
    """``values`` (one per row of ``present``) placed in a float column shaped like ``like``."""
    out = pd.Series(np.nan, index=like.index, name=like.name, dtype=np.float64)
    out[present.index] = np.asarray(values, dtype=np.float64)
    return out


def _plain_numbers(s: pd.Series, present: pd.Series) -> pd.Series | None:
    if pd.api.types.infer_dtype(present, skipna=True) in _NOT_NUMBER_TEXT:
        return None
    converted = pd.to_numeric(present.astype(str).str.strip(), errors="coerce")
    return None if converted.isna().any() else _float_series(s, present, converted.to_numpy())


def _thousands_numbers(s: pd.Series, text: pd.Series) -> pd.Series | None:
    """Numbers with comma thousands separators ("1,000.5"), plain numbers ("7") mixed in."""
    if not any(ch.isdigit() for ch in text.iloc[0]):
        return None  # the common case, text that is no number, without scanning the whole column
    grouped = text.str.fullmatch(_THOUSANDS)
    if not grouped.any():
        return None
    plain = text.where(~grouped, text.str.replace(",", "", regex=False))
    converted = pd.to_numeric(plain, errors="coerce")
    return None if converted.isna().any() else _float_series(s, text, converted.to_numpy())


def _has_nested(present: pd.Series) -> bool:
    return bool(present.map(lambda v: isinstance(v, _NESTED)).any())


def _decimal_comma_numbers(s: pd.Series, text: pd.Series) -> pd.Series | None:
    """Numbers written with a decimal comma and optional thousands points ("1.000,25" is 1000.25),
    when every value is one, at least one has a decimal comma, and none could be a number with comma
    thousands separators ("2,500": 2.5 or 2500?)."""
    if not any(ch.isdigit() for ch in text.iloc[0]) or not text.str.contains(",", regex=False).any():
        return None
    if not text.str.fullmatch(_DECIMAL_COMMA).all() or text.str.fullmatch(_GROUPED_INTEGER).any():
        return None
    plain = text.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    return _float_series(s, text, pd.to_numeric(plain).to_numpy())


def _unit_numbers(s: pd.Series, text: pd.Series) -> tuple[pd.Series, str] | None:
    """Numbers that all carry the same currency sign or unit ("$1,000", "5 %", "12 kg"), as numbers
    without it, and the unit; None when some value is not one, or the units differ."""
    if not any(ch.isdigit() for ch in text.iloc[0]):
        return None
    parts = text.str.extract(f"^{_WITH_UNIT}$")
    if parts["num"].isna().any():
        return None
    units = (parts["pre"].fillna("") + parts["post"].fillna("")).unique()
    if len(units) != 1 or not units[0] or (parts["pre"].fillna("").ne("") & parts["post"].notna()).any():
        return None
    numbers = pd.to_numeric(parts["sign"].fillna("") + parts["num"].str.replace(",", "", regex=False))
    return _float_series(s, text, numbers.to_numpy()), str(units[0])


def _looks_numeric(text: pd.Series) -> pd.Series:
    """Which values are a number, with or without a unit (to explain a column read as text)."""
    plain = pd.to_numeric(text, errors="coerce").notna()
    return plain | text.str.fullmatch(_WITH_UNIT) | text.str.fullmatch(_DECIMAL_COMMA)


def _decimal_year(times: pd.Series) -> np.ndarray:
    """Naive (UTC) datetimes as decimal years: the year plus the fraction of it gone by."""
    t = np.asarray(times.to_numpy(), dtype="datetime64[us]")
    year = t.astype("datetime64[Y]")
    start = year.astype("datetime64[us]")
    length = (year + 1).astype("datetime64[us]") - start
    with np.errstate(invalid="ignore"):
        out = year.astype(np.int64) + 1970 + (t - start) / length
    out[np.isnat(t)] = np.nan
    return out


def _as_utc(times: pd.Series) -> pd.Series:
    if getattr(times.dtype, "tz", None) is not None:
        return times.dt.tz_convert("UTC").dt.tz_localize(None)
    return times


def _year_first_as_iso(match: re.Match[str]) -> str:
    return f"{match[1]}-{int(match[2]):02d}-{int(match[3]):02d}"


def _text_dates(text: pd.Series) -> pd.Series | None:
    """ISO dates/date-times and slash dates as naive UTC datetimes; None if some value is not one."""
    first = text.iloc[0]
    if not any(re.fullmatch(p, first) for p in (_ISO_DATE, _SLASH_DATE, _YEAR_FIRST_DATE)):
        return None  # the common case, text that is no date, without scanning the whole column
    text = text.str.replace(_YEAR_FIRST, _year_first_as_iso, regex=True)  # 2012/1/31 -> 2012-01-31
    iso = text.str.fullmatch(_ISO_DATE)
    slash = text.where(~iso).str.extract(f"^{_SLASH_DATE}$")
    if not (iso | slash[0].notna()).all():
        return None
    if slash[0].notna().any():
        first, second = slash[0].astype(float), slash[1].astype(float)
        day_first = bool((first > 12).any())
        day, month = (first, second) if day_first else (second, first)
        clock = (slash[3].fillna("0").str.zfill(2) + ":" + slash[4].fillna("00") + ":"
                 + slash[5].fillna("00"))
        rewritten = (slash[2] + "-" + month.map("{:02.0f}".format) + "-" + day.map("{:02.0f}".format)
                     + "T" + clock)
        text = text.where(iso, rewritten)
    times = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    return None if times.isna().any() else _as_utc(times)


def _dates(s: pd.Series, present: pd.Series) -> pd.Series | None:
    """A column of dates as decimal years, or None when it is not one."""
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return _float_series(s, present, _decimal_year(_as_utc(present)))
    try:
        if pd.api.types.infer_dtype(present, skipna=True) in ("date", "datetime"):  # date objects (Parquet)
            times = _as_utc(pd.to_datetime(present, utc=True))
        else:
            times = _text_dates(present.astype(str).str.strip())
    except (ValueError, TypeError, OverflowError):  # out-of-range or unreadable dates stay as they are
        return None
    return None if times is None else _float_series(s, present, _decimal_year(times))


def read_column(s: pd.Series) -> ReadColumn:
    """How the conversion reads one column (the rules are in the module docstring).

    Parameters
    ----------
    s : pandas.Series
        A table column.

    Returns
    -------
    ReadColumn
        ``values``: floats for numbers written as text (plain or with thousands separators) and for
        dates (as decimal years), else the column unchanged; ``read_as``: ``"thousands"``,
        ``"dates"`` or ``""``.
    """
    present = s.dropna()
    if present.empty or _is_numeric(s) or isinstance(s.dtype, pd.CategoricalDtype) \
            or pd.api.types.is_bool_dtype(s.dtype):
        return ReadColumn(s, "")
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return ReadColumn(_dates(s, present), "dates")
    if not _is_text(s):
        return ReadColumn(s, "")
    if _has_nested(present):
        return ReadColumn(s, "nested")
    if (numbers := _plain_numbers(s, present)) is not None:
        return ReadColumn(numbers, "")
    text = present.astype(str).str.strip()
    if (numbers := _thousands_numbers(s, text)) is not None:
        return ReadColumn(numbers, "thousands")
    if (numbers := _decimal_comma_numbers(s, text)) is not None:
        return ReadColumn(numbers, "decimal comma")
    if (found := _unit_numbers(s, text)) is not None:
        return ReadColumn(found[0], "unit", found[1])
    if (dates := _dates(s, present)) is not None:
        return ReadColumn(dates, "dates")
    return ReadColumn(s, "")


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
    if not _is_numeric(s):
        return "classification"
    values = _as_float(s)
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


def _image_shape(features: pd.DataFrame, mode: str) -> tuple[int, int] | None:
    if mode == "no" or features.shape[1] == 0:
        return None
    d = features.shape[1]
    side = math.isqrt(d)
    numeric = all(_is_numeric(features[c]) for c in features.columns)
    if mode == "yes":
        if not numeric or side * side != d:
            raise TreevizError(f"Image data needs a square number of numeric feature columns (like "
                               f"64 = 8×8), but this table has {d} feature column(s). Set the image "
                               "option to no.")
        return side, side
    if not numeric or side * side != d or side < 8:
        return None
    values = features.to_numpy(dtype=np.float64, na_value=np.nan)
    if np.isfinite(values).all() and values.min() >= 0 and values.max() <= 255:
        return side, side
    return None


class ColumnPlan(NamedTuple):
    """What the conversion does with one feature column."""

    column: str
    role: str  # "feature", "one-hot" or "left out"
    reason: str  # "numeric", "pixel", "levels", "empty", "constant", "too many levels" or "nested"
    detail: str  # a short phrase for the Data page
    width: int = 0  # how many features it becomes


_READ_AS_DETAIL = {
    "": "numeric",
    "thousands": "numbers written with thousands separators ('1,000.5' is 1000.5)",
    "decimal comma": "numbers written with a decimal comma ('1.000,25' is 1000.25)",
    "unit": "numbers written with a unit, read without it",
    "dates": "dates, as one feature: the decimal year",
}


def feature_name(column: str, read_as: str) -> str:
    """The feature a numeric column becomes: ``"<column> (year)"`` for dates, else the column."""
    return f"{column} (year)" if read_as == "dates" else column


def _feature_plan(col: str, s: pd.Series, max_levels: int, is_image: bool, read_as: str = "") -> ColumnPlan:
    if is_image:
        return ColumnPlan(col, "feature", "pixel", "pixel of an image (kept even if constant)", 1)
    n_missing = int(s.isna().sum())
    if n_missing == len(s):
        return ColumnPlan(col, "left out", "empty", "no values at all")
    if read_as == "nested":
        return ColumnPlan(col, "left out", "nested", "lists, sets or dicts, not single values")
    n_levels = int(s.nunique(dropna=True))
    constant = ColumnPlan(col, "left out", "constant", "a single distinct value")
    if _is_numeric(s):
        if n_levels <= 1:
            return constant
        detail = _READ_AS_DETAIL[read_as]
        if read_as == "dates":
            detail += f" '{feature_name(col, read_as)}'"
        return ColumnPlan(col, "feature", "numeric", detail, 1)
    if n_levels > max_levels:
        return ColumnPlan(col, "left out", "too many levels",
                          f"{n_levels} distinct values, more than {max_levels}")
    if n_levels + (n_missing > 0) <= 1:
        return constant
    extra = f" plus '{MISSING_LEVEL}'" if n_missing else ""
    return ColumnPlan(col, "one-hot", "levels", f"{n_levels} level(s){extra}", n_levels + (n_missing > 0))


def _level_strings(s: pd.Series) -> pd.Series:
    return s.astype(str).where(s.notna(), MISSING_LEVEL)


def _one_hot(col: str, s: pd.Series) -> tuple[np.ndarray, list[str]]:
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


def _encode_classes(s: pd.Series, raw: pd.Series | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class indices into the sorted unique labels (numbers sorted as numbers, 2 before 10).

    ``raw`` is the column as uploaded (``s`` as read): integer labels beyond 2**53, which floats
    would merge, are taken from it exactly."""
    values = s.to_numpy()
    if _is_numeric(s):
        values = _as_float(s)
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


def _columns_text(columns: list[str], limit: int = 20) -> str:
    shown = ", ".join(f"'{c}'" for c in columns[:limit])
    return shown + (f" and {len(columns) - limit} more" if len(columns) > limit else "")


def _check_infinite(df: pd.DataFrame) -> None:
    for col in df.columns:
        if _is_numeric(df[col]):
            n_inf = int(np.isinf(_as_float(df[col])).sum())
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
                           f"Choose the target from: {_columns_text(list(df.columns))}.")
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
        if not _is_numeric(s):
            raise TreevizError(f"The target '{name}' is not numeric, so it cannot be used for regression. "
                               "Choose classification as the task, or another target column.")
        values = _as_float(s)
        largest = float(np.max(np.abs(values), initial=0.0))
        if largest > MAX_TARGET:
            raise TreevizError(f"The regression target '{name}' has values up to {largest:.3g} in magnitude, "
                               f"too large to fit a model on (at most {MAX_TARGET:.0e}). Rescale the column, "
                               "for example to other units or to its logarithm, and upload again.")
        return values, None
    y, class_names = _encode_classes(s, raw)
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
    shape = _image_shape(features, options.image)
    is_image = shape is not None
    plan = [_feature_plan(c, features[c], int(options.max_levels), is_image, read_as.get(c, ""))
            for c in features.columns]
    return plan, shape


def _reading_notes(read: dict[str, ReadColumn], target: str | None) -> list[str]:
    """Which columns were read as numbers written in some form, and which as dates."""
    def read_as(how: str) -> list[str]:
        return [c for c, r in read.items() if r.read_as == how and (c != target or how != "dates")]

    notes = []
    if thousands := read_as("thousands"):
        notes.append(f"Read column(s) {_columns_text(thousands, 10)} as numbers written with thousands "
                     "separators ('1,000.5' is 1000.5).")
    if commas := read_as("decimal comma"):
        notes.append(f"Read column(s) {_columns_text(commas, 10)} as numbers written with a decimal comma "
                     "('1.000,25' is 1000.25).")
    for c in read_as("unit"):
        notes.append(f"Read column '{c}' as numbers in '{read[c].unit}', without the unit ('{read[c].unit}' "
                     "removed from every value).")
    if dates := read_as("dates"):
        notes.append(f"Read column(s) {_columns_text(dates, 10)} as dates, each as one feature named like "
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
        notes.append(f"Dropped {len(empty)} column(s) with no values at all: {_columns_text(empty, 10)}.")
    if const := named("constant"):
        notes.append(f"Dropped {len(const)} constant column(s) (a single distinct value): "
                     f"{_columns_text(const, 10)}.")
    if wide := named("too many levels"):
        shown = ", ".join(f"'{c}' ({features[c].nunique()} levels)" for c in wide[:10])
        notes.append(f"Left out {len(wide)} non-numeric column(s) with too many distinct values to one-hot "
                     f"encode: {shown}.")
    if nested := named("nested"):
        notes.append(f"Left out {len(nested)} column(s) holding lists, sets or dicts instead of single values: "
                     f"{_columns_text(nested, 10)}. Spread such a column over columns of single values to use it.")
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
    if not _is_text(s):
        return None
    values = pd.Series(s.dropna().astype(str).str.strip().unique()[:1000])
    looks = _looks_numeric(values)
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
    note = (f"Column(s) {_columns_text(big, 10)} have values up to {float(magnitude.max()):.3g} in magnitude, "
            "too large for the models without scaling; standard and quantile scaling handle them.")
    return [note]


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


_BLANK_HEADER = re.compile(r"(?:Unnamed: \d+)?")  # how pandas names a column without a header


def _row_number_columns(df: pd.DataFrame, target: str | None) -> list[str]:
    """Columns without a name whose values are the row numbers 0..n-1 or 1..n in some order."""
    found = []
    for c in df.columns:
        if c == target or not _BLANK_HEADER.fullmatch(c) or not _is_numeric(df[c]):
            continue
        values = np.sort(_as_float(df[c]))
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


def _check_matrix_size(n_rows: int, plan: list[ColumnPlan]) -> None:
    """Refuse a table whose feature matrix would be too large, before building it."""
    width = sum(p.width for p in plan)
    size = n_rows * width * 8
    if size > MAX_MATRIX_MB * _MB:
        raise TreevizError(f"The table would become {n_rows:,} rows × {width:,} features ({size / _MB:,.0f} MB "
                           f"of numbers), over the limit of {MAX_MATRIX_MB} MB. Lower the largest number of "
                           "levels a text column may have, leave out wide text columns, or use fewer rows.")


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
        notes.append(f"Left out column(s) {_columns_text(row_numbers, 10)}: no name, and the row numbers as "
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
    _check_matrix_size(len(features), plan)
    blocks, names, derived, sources = [], [], [], []
    for col, role, *_ in plan:
        if role == "feature":
            blocks.append(_as_float(features[col])[:, None])
            names.append(feature_name(col, read_as.get(col, "")))
            derived.append(read_as.get(col) == "dates")
            sources.append(["dates" if read_as.get(col) == "dates" else "column", col, ""])
        elif role == "one-hot":
            block, block_names = _one_hot(col, features[col])
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
    left_out.update(dict.fromkeys(row_numbers, "the row numbers, in a column with no name"))
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


def inspect_table(df: pd.DataFrame, target: str | None = None, *, max_levels: int = 50) -> pd.DataFrame:
    """One row per column describing what the upload would do with it (for the Data page).

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read by :func:`read_table`.
    target : str, optional
        The target column; defaults to :func:`suggest_target`.
    max_levels : int
        Same meaning as :attr:`TableOptions.max_levels`.

    Returns
    -------
    pandas.DataFrame
        Columns ``column, dtype, missing, distinct, example, role, detail``; ``role`` is one of
        ``"target candidate"``, ``"feature"``, ``"one-hot"``, ``"left out"``.
    """
    if target is None:
        target = suggest_target(df)
    read = {str(c).strip(): read_column(df[c]) for c in df.columns}
    table = pd.DataFrame({c: r.values for c, r in read.items()})
    read_as = {c: r.read_as for c, r in read.items() if r.read_as}
    features = table.drop(columns=[target]) if target in table.columns else table
    plan, _ = _plan(features, TableOptions(max_levels=max_levels), read_as)
    roles = {p.column: (p.role, p.detail) for p in plan}
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
    if _is_numeric(s):
        values = _as_float(s)
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
        if not _is_numeric(values) and values.notna().any():
            text = values.dropna().astype(str)
            not_numbers = text[~_looks_numeric(text.str.strip())]  # quote a value that is no number
            example = (not_numbers if len(not_numbers) else text).iloc[0][:40]
            raise TreevizError(f"Column '{column}' of '{name}' holds text such as '{example}', but the model "
                               f"reads '{feature}' as a number. Give numbers (or dates) in that column.")
        X[:, j] = _as_float(values) if _is_numeric(values) else np.nan
        used.add(column)
    if missing:
        raise TreevizError(f"The table '{name}' lacks the column(s) the model needs for "
                           f"{_columns_text(missing, 10)}. Give the columns of the training data (or the "
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
        notes.append(f"Ignored column(s) the model does not use: {_columns_text(ignored, 10)}.")
    for column, new in unseen.items():
        shown = ", ".join(f"'{v}'" for v in sorted(new)[:5]) + (" ..." if len(new) > 5 else "")
        notes.append(f"Column '{column}' has value(s) the model never saw in training ({shown}); "
                     "their one-hot features are all 0.")
    return X, notes
