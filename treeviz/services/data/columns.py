"""How one column of a table is read: as numbers (plain, with thousands separators, with a decimal
comma, with a unit), as dates (a decimal year), or as text; the rules are listed in
:mod:`treeviz.services.data.table`."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pandas as pd

from models.ground.errors import TreevizError

_NOT_NUMBER_TEXT = {"boolean", "datetime", "datetime64", "date", "time", "timedelta", "timedelta64",
                    "period", "interval", "bytes", "empty", "categorical"}


def is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def as_float(s: pd.Series) -> np.ndarray:
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


def is_text(s: pd.Series) -> bool:
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


def looks_numeric(text: pd.Series) -> pd.Series:
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
    if present.empty or is_numeric(s) or isinstance(s.dtype, pd.CategoricalDtype) \
            or pd.api.types.is_bool_dtype(s.dtype):
        return ReadColumn(s, "")
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return ReadColumn(_dates(s, present), "dates")
    if not is_text(s):
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


def duplicate_column_error(name: str, duplicates: list[str]) -> TreevizError:
    """The error for a table whose header repeats column names."""
    shown = ", ".join(f"'{d}'" for d in duplicates[:10])
    return TreevizError(f"In '{name}' the column name(s) {shown} appear more than once. "
                        "Rename the columns so every name is unique, then upload again.")


def columns_text(columns: list[str], limit: int = 20) -> str:
    shown = ", ".join(f"'{c}'" for c in columns[:limit])
    return shown + (f" and {len(columns) - limit} more" if len(columns) > limit else "")
