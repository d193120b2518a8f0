"""What a table cell or a listed value shows: one format for every page's tables.

A missing value reads "—" (never "None" or "nan"), a float 4 significant digits, a list its items
joined; the Runs page's tables and the Embeddings page's comparison say it the same way.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

NONE = "—"  # what a table cell with no value shows (not "None")


def value_text(value: Any) -> str:
    """A parameter or metric value for people: "—" for none, 4 significant digits, lists joined."""
    if value is None:
        return NONE
    if isinstance(value, float):
        return NONE if value != value else f"{value:.4g}"  # NaN is a missing value too
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value) or NONE
    if isinstance(value, dict):
        return ", ".join(f"{k}={value_text(v)}" for k, v in value.items()) or NONE
    return str(value)


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """The table with "—" in place of missing values (columns holding one become text, each value
    written by :func:`value_text`); columns without a missing value keep their type."""
    for column in table.columns:
        if table[column].isna().any():
            table[column] = [NONE if pd.isna(v) else value_text(v) for v in table[column]]
    return table
