"""The plan for a table's feature columns: what each becomes (a feature, one-hot levels, or left
out, and why), whether the table is an image, and whether the feature matrix fits."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from models.ground.errors import TreevizError
from treeviz.services.data.columns import is_numeric
from treeviz.services.data.encoding import MISSING_LEVEL

#: Largest feature matrix (float64, in MB) an upload may become; estimated before it is built.
MAX_MATRIX_MB = 512


_MB = 1024 * 1024


def image_shape(features: pd.DataFrame, mode: str) -> tuple[int, int] | None:
    if mode == "no" or features.shape[1] == 0:
        return None
    d = features.shape[1]
    side = math.isqrt(d)
    numeric = all(is_numeric(features[c]) for c in features.columns)
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


def feature_plan(col: str, s: pd.Series, max_levels: int, is_image: bool, read_as: str = "") -> ColumnPlan:
    if is_image:
        return ColumnPlan(col, "feature", "pixel", "pixel of an image (kept even if constant)", 1)
    n_missing = int(s.isna().sum())
    if n_missing == len(s):
        return ColumnPlan(col, "left out", "empty", "no values at all")
    if read_as == "nested":
        return ColumnPlan(col, "left out", "nested", "lists, sets or dicts, not single values")
    n_levels = int(s.nunique(dropna=True))
    constant = ColumnPlan(col, "left out", "constant", "a single distinct value")
    if is_numeric(s):
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


def check_matrix_size(n_rows: int, plan: list[ColumnPlan]) -> None:
    """Refuse a table whose feature matrix would be too large, before building it."""
    width = sum(p.width for p in plan)
    size = n_rows * width * 8
    if size > MAX_MATRIX_MB * _MB:
        raise TreevizError(f"The table would become {n_rows:,} rows × {width:,} features ({size / _MB:,.0f} MB "
                           f"of numbers), over the limit of {MAX_MATRIX_MB} MB. Lower the largest number of "
                           "levels a text column may have, leave out wide text columns, or use fewer rows.")
