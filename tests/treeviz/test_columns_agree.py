"""The Data page's Columns table describes the conversion the upload does (issue 52, view defect 14),
and missing table cells read "—" on every page (defect 12)."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from treeviz.services.data import TableOptions, inspect_table, read_table, table_to_dataset
from treeviz.services.data.table import ROW_NUMBERS
from treeviz.ui.cells import NONE, readable, value_text


def indexed_table() -> pd.DataFrame:
    """A table as DataFrame.to_csv writes it with its index (the first column 'Unnamed: 0')."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"width": rng.normal(size=40), "colour": ["red", "blue"] * 20, "kind": ["a", "b"] * 20})
    buffer = io.StringIO()
    df.to_csv(buffer)
    return read_table("indexed.csv", buffer.getvalue().encode())


def test_the_columns_table_leaves_out_the_row_numbers_the_conversion_leaves_out():
    df = indexed_table()
    options = TableOptions(target="kind")
    info = inspect_table(df, options=options).set_index("column")
    ds = table_to_dataset(df, "indexed.csv", options)
    assert info.loc["Unnamed: 0", "role"] == "left out" and info.loc["Unnamed: 0", "detail"] == ROW_NUMBERS
    assert ds.meta["columns_left_out"] == {"Unnamed: 0": ROW_NUMBERS}
    kept = {re.sub("=.*", "", f) for f in ds.feature_names}
    assert kept == set(info.index[info["role"].isin(["feature", "one-hot"])]) == {"width", "colour"}
    # the old call (a target, no options) agrees too
    assert inspect_table(df, "kind").set_index("column").loc["Unnamed: 0", "role"] == "left out"


def test_no_target_in_the_options_marks_no_target_candidate():
    df = indexed_table()
    info = inspect_table(df, options=TableOptions(target=None)).set_index("column")
    assert "target candidate" not in set(info["role"])
    assert info.loc["kind", "role"] == "one-hot"


def test_missing_cells_read_a_dash():
    assert value_text(None) == value_text(float("nan")) == NONE == "—"
    assert value_text(0.123456) == "0.1235" and value_text([1, None]) == "1, —"
    table = readable(pd.DataFrame({"method": ["tree", "free"], "nodes": [7, None], "s": [0.5, 0.25]}))
    assert list(table["nodes"]) == ["7", "—"] and table["s"].dtype == float
