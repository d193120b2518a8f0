"""Fuzz the upload path: random small tables and random CSV bytes through ``read_table`` →
``table_to_dataset`` → ``prepare``, then a quick CART run and the predict path's encoding.

The property (see ``tests/fuzz/conftest.py``): every input is either accepted, and then it trains
and ``table_to_features`` encodes the same table exactly as the upload did, or it is refused with a
:class:`TreevizError` sentence; nothing else escapes. The tables mix dtypes and the cells a hostile
upload holds: lists, dicts and sets (a Parquet list column), None, NaN, ±inf, integers beyond
2**53, unicode, empty strings, numbers with units or decimal commas, dates, and repeated column
names.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from models.ground.errors import TreevizError
from treeviz.services.data import PrepConfig, TableOptions, prepare, read_table, suggest_target, table_to_dataset
from treeviz.services.data.encoding import FEATURE_SOURCES, table_to_features
from treeviz.services.experiments.training import train_run

NAMES = st.one_of(st.sampled_from(["a", "x", "x=a", "y", "when", "when (year)", "Unnamed: 0", "", "label", " a "]),
                  st.text(max_size=6))
TEXTS = st.one_of(st.sampled_from(["a", "b", "x=a", "1,000", "1.000,25", "5 %", "$3", "2024-01-31", "n/a", "",
                                   "a (2)", " ", "é", "日本", "True"]), st.text(max_size=6))
NUMBERS = st.one_of(st.integers(-5, 5), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=True, allow_infinity=True, width=64))
CELLS = st.one_of(st.none(), st.just(math.nan), NUMBERS, TEXTS, st.booleans(),
                  st.lists(st.integers(0, 3), max_size=3),
                  st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
                  st.sets(st.integers(0, 3), max_size=3))


@st.composite
def columns(draw, n_rows: int) -> pd.Series:
    """One column: all of one kind (as a real file has), or any cells at all."""
    kind = draw(st.sampled_from(["levels", "levels", "numbers", "numbers", "integers", "text", "dates", "mixed"]))
    if kind == "levels":
        values = draw(st.lists(st.sampled_from(draw(st.lists(TEXTS, min_size=1, max_size=4))),
                               min_size=n_rows, max_size=n_rows))
        return pd.Series(values, dtype=object)
    if kind == "numbers":
        return pd.Series(draw(st.lists(st.floats(-1e6, 1e6) | st.just(math.nan), min_size=n_rows, max_size=n_rows)),
                         dtype=float)
    if kind == "integers":
        return pd.Series(draw(st.lists(st.integers(-3, 3) | st.integers(2**53, 2**53 + 2),
                                       min_size=n_rows, max_size=n_rows)), dtype="int64")
    if kind == "dates":
        days = draw(st.lists(st.integers(0, 3000), min_size=n_rows, max_size=n_rows))
        return pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(days, unit="D"))
    return pd.Series(draw(st.lists(TEXTS if kind == "text" else CELLS, min_size=n_rows, max_size=n_rows)),
                     dtype=object)


@st.composite
def tables(draw) -> pd.DataFrame:
    n_rows = draw(st.integers(0, 9) | st.integers(10, 30) | st.integers(10, 30) | st.integers(10, 30))
    n_cols = draw(st.integers(1, 5))
    df = pd.concat([draw(columns(n_rows)) for _ in range(n_cols)], axis=1) if n_rows else pd.DataFrame(
        index=range(0), columns=range(n_cols))
    df.columns = draw(header_names(n_cols, NAMES))
    return df


def header_names(n_cols: int, names: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """Column names, repeated in one table of eight (refused), else unique once stripped."""
    unique = st.lists(names, min_size=n_cols, max_size=n_cols, unique_by=str.strip)
    return st.one_of(*[unique] * 7, st.lists(names, min_size=n_cols, max_size=n_cols))


OPTIONS = st.fixed_dictionaries({
    "task": st.sampled_from(["auto", "auto", "classification", "regression", "clustering"]),
    "drop_missing_target": st.booleans(),
    "max_levels": st.integers(1, 60),
})


def _csv_field(value: object) -> str:
    text = str(value)
    return f'"{text}"' if any(ch in text for ch in ',;"\n') and not text.startswith('"') else text


@st.composite
def csv_files(draw) -> tuple[str, bytes]:
    """CSV bytes: a header and rows of numbers, text, quoted fields and empty cells, sometimes short
    or long rows, a repeated header, another delimiter, line ending or encoding; or any bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["t.csv", "t.tsv", "t.csv.gz", "t.parquet"])), draw(st.binary(max_size=200))
    delim = draw(st.sampled_from([",", ";", "\t"]))
    n_cols = draw(st.integers(1, 4))
    header = draw(header_names(n_cols, NAMES.filter(lambda n: "\n" not in n and "\r" not in n)))
    any_field = st.one_of(NUMBERS.map(str), TEXTS.filter(lambda t: "\n" not in t and "\r" not in t), st.just(""))
    kinds = [st.integers(0, 3).map(str), st.sampled_from(["a", "b", "5 %", "1.000,5", ""]), any_field]
    fields = [draw(st.sampled_from(kinds)) for _ in range(n_cols + 1)]
    ragged = draw(st.integers(0, 5)) == 0
    rows = [header]
    for _ in range(draw(st.integers(0, 4) | st.integers(10, 25) | st.integers(10, 25))):
        width = n_cols + (draw(st.sampled_from([0, 0, 0, -1, 1])) if ragged else 0)
        rows.append(header if draw(st.integers(0, 30)) == 0 else [draw(fields[j]) for j in range(width)])
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = "".join(delim.join(_csv_field(v) for v in row) + newline for row in rows)
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "latin-1"]))
    return draw(st.sampled_from(["t.csv", "t.txt", "t.tsv"])), text.encode(encoding, errors="replace")


def check_accepted_or_refused(df: pd.DataFrame, options: dict) -> None:
    """The property: refused with a sentence, or a Dataset that prepares, trains and predicts."""
    try:
        dataset = table_to_dataset(df, "fuzz.csv", TableOptions(**options))
        prepared = prepare(dataset, PrepConfig())
    except TreevizError as err:
        assert str(err).rstrip().endswith("."), str(err)
        event(f"table refused: {str(err)[:50]}")
        return
    event(f"accepted: {dataset.task}")
    assert len(set(dataset.feature_names)) == dataset.n_features
    assert np.isfinite(prepared.X_train).all()
    if dataset.task in ("classification", "regression"):
        _, metrics = train_run("cart", dataset.task, {"max_depth": 3}, prepared)
        assert all(math.isfinite(v) for k, v in metrics.items() if k.startswith("train_")), metrics
    if dataset.n_samples == len(df):  # no rows dropped: the predict path encodes the same rows alike
        X, _ = table_to_features(df, dataset.feature_names, name="fuzz.csv",
                                 sources=dataset.meta.get(FEATURE_SOURCES))
        np.testing.assert_array_equal(X, dataset.X)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@given(tables(), OPTIONS, st.data())
def test_any_table_is_accepted_and_trains_or_refused_with_a_sentence(df, options, data):
    names = [str(c).strip() for c in df.columns]
    target = data.draw(st.sampled_from([None, *names]), label="target")
    check_accepted_or_refused(df, {**options, "target": target})


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@given(csv_files(), OPTIONS)
def test_any_csv_bytes_are_read_and_train_or_refused_with_a_sentence(file, options):
    filename, data = file
    try:
        df = read_table(filename, data)
    except TreevizError as err:
        assert str(err).rstrip().endswith("."), str(err)
        event(f"file refused: {str(err)[:60]}")
        return
    check_accepted_or_refused(df, {**options, "target": suggest_target(df)})
