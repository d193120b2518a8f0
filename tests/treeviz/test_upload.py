"""The upload path: every bad input gets one plain sentence; good inputs become the right Dataset."""

from __future__ import annotations

import gzip
import io
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from models.ground.errors import TreevizError
from tests.bad_inputs import BAD_INPUT_ENV, BAD_INPUTS, FATAL, NOTE_ONLY, load
from treeviz.services.data.upload import (
    MAX_UPLOAD_MB,
    TableOptions,
    detect_task,
    inspect_table,
    max_upload_mb,
    read_table,
    suggest_target,
    table_to_dataset,
)


def assert_sentence(message: str) -> None:
    """A message for users: one or two plain sentences, no traceback or exception-class dump."""
    assert message and len(message) < 400, message
    assert message[0].isupper() or message[0] == "'", message
    assert message.rstrip().endswith("."), message
    assert "\n" not in message, message
    for bad in ("Traceback", "Error:", "Exception", "errno", "File \"", "pandas", "pyarrow", "C error"):
        assert bad not in message, message


def error_of(func, *args, **kwargs) -> str:
    with pytest.raises(TreevizError) as info:
        func(*args, **kwargs)
    assert_sentence(str(info.value))
    return str(info.value)


def dataset(df: pd.DataFrame, **options) -> object:
    return table_to_dataset(df, "t", TableOptions(**options))


def frame(n: int = 20, **columns) -> pd.DataFrame:
    data = {"a": np.arange(n, dtype=float), "b": np.arange(n) % 3}
    data.update(columns)
    data.setdefault("y", np.where(np.arange(n) % 2, "yes", "no"))
    return pd.DataFrame(data)


# ---------------------------------------------------------------------------- the shared fixtures


@pytest.mark.parametrize("name", sorted(FATAL))
def test_bad_input_stops_with_a_sentence(name, monkeypatch):
    for key, value in BAD_INPUT_ENV.get(name, {}).items():
        monkeypatch.setenv(key, value)
    message = error_of(load, name)
    assert BAD_INPUTS[name][3] in message


@pytest.mark.parametrize("name", sorted(NOTE_ONLY))
def test_tolerable_input_loads_with_a_note(name):
    ds = load(name)
    assert any(BAD_INPUTS[name][3] in note for note in ds.notes), ds.notes
    for note in ds.notes:
        assert_sentence(note)


def test_fixture_table_is_fine_without_the_small_limit():
    filename, data, _, _ = BAD_INPUTS["oversized"]
    assert read_table(filename, data).shape == (2000, 3)


# ---------------------------------------------------------------------------- read_table errors


def test_empty_file():
    assert "empty" in error_of(read_table, "e.csv", b"")


def test_whitespace_only_file():
    assert "empty" in error_of(read_table, "e.csv", b"\n  \r\n\t")


def test_header_only_file():
    message = error_of(read_table, "h.csv", b"a,b,c\n")
    assert "no data rows" in message and "empty" in message


def test_oversized_file_names_its_size_and_the_limit(monkeypatch):
    monkeypatch.setenv("TREEVIZ_MAX_UPLOAD_MB", "0.001")  # read at call time, not import time
    message = error_of(read_table, "big.csv", b"a,b\n" + b"1,2\n" * 1000)
    assert "0.00382 MB" in message and "0.001 MB" in message


def test_default_limit_and_bad_limit_variable(monkeypatch):
    monkeypatch.delenv("TREEVIZ_MAX_UPLOAD_MB", raising=False)
    assert max_upload_mb() == MAX_UPLOAD_MB == 200
    monkeypatch.setenv("TREEVIZ_MAX_UPLOAD_MB", "lots")
    assert "positive number" in error_of(max_upload_mb)


def test_gzip_that_unpacks_beyond_the_limit(monkeypatch):
    monkeypatch.setenv("TREEVIZ_MAX_UPLOAD_MB", "1")
    bomb = gzip.compress(b"a,b\n" + b"0,0\n" * 600_000)
    assert len(bomb) < 1024 * 1024
    assert "unpacks to more than" in error_of(read_table, "bomb.csv.gz", bomb)


def test_png_named_csv():
    assert "PNG image" in error_of(read_table, "x.csv", BAD_INPUTS["png_named_csv"][1])


def test_zip_named_csv():
    assert "zip archive" in error_of(read_table, "x.csv", BAD_INPUTS["zip_named_csv"][1])


def test_nul_bytes():
    assert "binary data" in error_of(read_table, "x.csv", b"a,b\n\x00\x01\x02,3\n")


def test_random_binary_noise():
    noise = np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes()
    assert "binary data" in error_of(read_table, "noise.csv", noise)


def test_unknown_extension():
    assert "not a CSV or Parquet file" in error_of(read_table, "table.json", b'{"a": 1}')


def test_csv_named_parquet():
    assert "not one" in error_of(read_table, "t.parquet", b"a,b\n1,2\n")


def test_truncated_parquet():
    buf = io.BytesIO()
    frame().to_parquet(buf)
    assert "not a readable Parquet file" in error_of(read_table, "t.parquet", buf.getvalue()[:200])


def test_bad_gzip():
    assert "not a valid gzip file" in error_of(read_table, "t.csv.gz", b"\x1f\x8b\x08\x00broken")


def test_latin1_fails_on_auto_and_reads_when_chosen():
    data = BAD_INPUTS["latin1_encoding"][1]
    message = error_of(read_table, "accents.csv", data)
    assert "UTF-8" in message and "latin-1" in message and "line 2" in message
    df = read_table("accents.csv", data, encoding="latin-1")
    assert df["city"].iloc[0] == "Málaga"
    assert read_table("accents.csv", data, encoding="cp1252")["city"].iloc[1] == "Zürich"


def test_cp1252_undefined_byte():
    assert "not valid cp1252" in error_of(read_table, "t.csv", b"a,b\n1,\x81\n", encoding="cp1252")


def test_unknown_encoding_option():
    assert "Unknown encoding" in error_of(read_table, "t.csv", b"a\n1\n", encoding="utf-32")


@pytest.mark.parametrize("encoded", [
    "a,ñ\n1,2\n".encode("utf-8-sig"), "a,ñ\n1,2\n".encode("utf-16"), "a,ñ\n1,2\n".encode(),
])
def test_utf8_bom_and_utf16_bom_are_read(encoded):
    assert list(read_table("t.csv", encoded).columns) == ["a", "ñ"]


def test_unparseable_csv_names_the_line():
    message = error_of(read_table, "r.csv", b"a,b,c\n1,2,3\n4,5,6\n7,8,9,10\n")
    assert "line 4 has 4 fields" in message and "header has 3" in message


def test_row_longer_than_header_everywhere_is_not_silently_an_index():
    message = error_of(read_table, "r.csv", b"a,b\n1,2,3\n4,5,6\n")
    assert "line 2 has 3 fields" in message


def test_unbalanced_quote():
    assert "could not be read as CSV" in error_of(read_table, "q.csv", b'a,b\n"1,2\n3,4\n')


def test_duplicate_columns_named_from_the_raw_header():
    message = error_of(read_table, "d.csv", b"x,a,b,a,x\n1,2,3,4,5\n")
    assert "'a', 'x'" in message and "a.1" not in message


def test_duplicate_columns_after_stripping_spaces():
    assert "'a'" in error_of(read_table, "d.csv", b"a, a\n1,2\n")


def test_duplicate_columns_in_parquet():
    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["x", "x"])
    buf = io.BytesIO()
    pq.write_table(table, buf)
    assert "'x' appear more than once" in error_of(read_table, "d.parquet", buf.getvalue())


def test_duplicate_columns_in_a_dataframe():
    df = pd.DataFrame([[1, 2, 3]] * 12, columns=["a", "a", "y"])
    assert "'a'" in error_of(dataset, df, target="y")


# ---------------------------------------------------------------------------- read_table successes


@pytest.mark.parametrize("filename, data", [
    ("c.csv", b"a,b,c\n1,2,x\n3,4,y\n"),
    ("s.csv", b"a;b;c\n1;2;x\n3;4;y\n"),
    ("t.tsv", b"a\tb\tc\n1\t2\tx\n3\t4\ty\n"),
    ("t.txt", b"a\tb\tc\n1\t2\tx\n3\t4\ty\n"),
    ("q.csv", b'a,b,c\n1,2,"x, with comma"\n3,4,y\n'),
])
def test_delimiters_are_sniffed(filename, data):
    df = read_table(filename, data)
    assert list(df.columns) == ["a", "b", "c"] and df.shape == (2, 3)
    assert df["a"].tolist() == [1, 3]


def test_semicolon_csv_with_decimal_commas():
    df = read_table("eu.csv", b"a;b\n1,5;x\n2,25;y\n")
    assert df["a"].tolist() == [1.5, 2.25]


def test_single_column_csv():
    assert read_table("one.csv", b"value\n1\n2\n3\n")["value"].tolist() == [1, 2, 3]


def test_gzipped_csv():
    df = read_table("t.csv.gz", gzip.compress(b"a,b\n1,2\n3,4\n"))
    assert df.shape == (2, 2)


@pytest.mark.parametrize("filename", ["t.parquet", "t.pq", "renamed.bin"])
def test_parquet_by_extension_or_magic_bytes(filename):
    buf = io.BytesIO()
    frame().to_parquet(buf)
    df = read_table(filename, buf.getvalue())
    assert df.shape == (20, 3)
    assert list(df["y"][:2]) == ["no", "yes"]


def test_column_names_are_stripped():
    assert list(read_table("t.csv", b" a , b\n1,2\n").columns) == ["a", "b"]


# ---------------------------------------------------------------------------- table_to_dataset errors


def test_missing_target_column_lists_available_columns():
    message = error_of(dataset, frame(), target="label")
    assert "'a', 'b', 'y'" in message


def test_missing_target_column_list_is_truncated():
    df = pd.DataFrame({f"c{i}": range(12) for i in range(35)})
    message = error_of(dataset, df, target="nope")
    assert "'c19'" in message and "'c20'" not in message and "and 15 more" in message


def test_target_with_missing_values():
    df = frame(y=["a", None, "b", "a"] * 5)
    message = error_of(dataset, df, target="y")
    assert "5 missing value(s)" in message and "drop rows with a missing target" in message


def test_drop_missing_target_drops_rows_with_a_note():
    df = frame(y=["a", None, "b", "a"] * 5)
    ds = dataset(df, target="y", drop_missing_target=True)
    assert ds.n_samples == 15
    assert "Dropped 5 row(s) whose target 'y' was missing." in ds.notes


def test_single_class():
    assert "single class ('x')" in error_of(dataset, frame(y=["x"] * 20), target="y")


def test_too_many_classes_suggests_regression():
    df = frame(200, y=[f"c{i}" for i in range(200)])
    message = error_of(dataset, df, target="y", task="classification")
    assert "200 distinct values" in message and "regression" in message


def test_single_row():
    assert "only 1 usable row" in error_of(dataset, frame(1), target="y")


def test_fewer_than_min_rows():
    assert "at least 30" in error_of(dataset, frame(20), target="y", min_rows=30)
    assert dataset(frame(20), target="y", min_rows=20).n_samples == 20


def test_rows_left_after_dropping_missing_targets_are_counted():
    df = frame(12, y=["a", "b"] + [None] * 10)
    assert "only 2 usable row" in error_of(dataset, df, target="y", drop_missing_target=True)


def test_infinite_values_name_column_and_count():
    df = frame(a=[np.inf, -np.inf, np.inf, *list(range(17))])
    message = error_of(dataset, df, target="y")
    assert "Column 'a' has 3 infinite value(s)" in message and "empty" in message


def test_infinite_regression_target():
    df = frame(y=[np.inf] + [float(i) for i in range(19)])
    assert "Column 'y' has 1 infinite" in error_of(dataset, df, target="y", task="regression")


def test_no_usable_feature_left():
    df = pd.DataFrame({"const": [1] * 20, "empty": [np.nan] * 20, "y": [0, 1] * 10})
    assert "No usable feature" in error_of(dataset, df, target="y")


def test_only_the_target_column():
    assert "No usable feature" in error_of(dataset, frame()[["y"]], target="y")


def test_non_numeric_regression_target():
    assert "not numeric" in error_of(dataset, frame(), target="y", task="regression")


def test_supervised_task_without_target():
    assert "needs a target column" in error_of(dataset, frame(), target=None, task="regression")


def test_not_a_dataframe():
    assert "DataFrame" in error_of(table_to_dataset, [[1, 2]], "t", TableOptions())


def test_empty_dataframe():
    assert "empty" in error_of(dataset, pd.DataFrame({"a": []}), target=None)


@pytest.mark.parametrize("kwargs, expected", [
    ({"task": "ranking"}, "Unknown task"), ({"image": "maybe"}, "image option"),
    ({"max_levels": 0}, "at least 1"), ({"min_rows": 1}, "at least 2"),
])
def test_bad_options(kwargs, expected):
    assert expected in error_of(TableOptions, **kwargs)


# ---------------------------------------------------------------------------- notes and encoding


def test_all_nan_column_dropped_with_note():
    ds = dataset(frame(e=[np.nan] * 20), target="y")
    assert "e" not in ds.feature_names
    assert any("no values at all: 'e'" in n for n in ds.notes)


def test_constant_column_dropped_with_note():
    ds = dataset(frame(k=[7] * 20, t=["same"] * 20), target="y")
    assert "k" not in ds.feature_names and not any(f.startswith("t=") for f in ds.feature_names)
    assert any("2 constant column(s)" in n and "'k', 't'" in n for n in ds.notes)


def test_high_cardinality_text_left_out_with_levels():
    ds = dataset(frame(60, name=[f"n{i}" for i in range(60)]), target="y")
    assert not any(f.startswith("name") for f in ds.feature_names)
    assert any("'name' (60 levels)" in n for n in ds.notes)
    assert ds.meta["columns_left_out"]["name"].startswith("60 distinct")
    assert "name=n1" in dataset(frame(60, name=[f"n{i}" for i in range(60)]), target="y",
                                max_levels=60).feature_names


def test_one_hot_with_missing_level():
    ds = dataset(frame(colour=["red", None, "blue", "red"] * 5), target="y")
    names = list(ds.feature_names)
    assert names == ["a", "b", "colour=blue", "colour=red", "colour=(missing)"]
    block = ds.X[:, 2:]
    assert np.array_equal(block.sum(axis=1), np.ones(20))
    assert block[1].tolist() == [0, 0, 1] and block[2].tolist() == [1, 0, 0]
    assert any("5 missing value(s), encoded as the level '(missing)'" in n for n in ds.notes)


def test_bool_and_category_columns_are_one_hot():
    df = frame(flag=[True, False] * 10, size=pd.Categorical(["s", "m", "l", "m"] * 5))
    names = dataset(df, target="y").feature_names
    assert {"flag=False", "flag=True", "size=l", "size=m", "size=s"} <= set(names)


def test_numeric_missing_values_stay_nan():
    ds = dataset(frame(a=[np.nan, 1.0, 2.0, np.nan] * 5), target="y")
    assert np.isnan(ds.X[:, 0]).sum() == 10


def test_numeric_looking_strings_become_numbers():
    df = frame(num=[" 1.5", "2", None, "-3e2"] * 5, mixed=["1", "x", "2", "3"] * 5)
    ds = dataset(df.astype({"num": object}), target="y")
    col = ds.feature_names.index("num")
    assert ds.X[:4, col].tolist()[:2] == [1.5, 2.0] and np.isnan(ds.X[2, col]) and ds.X[3, col] == -300
    assert "mixed=x" in ds.feature_names


def test_numeric_text_with_inf_is_reported():
    assert "infinite" in error_of(dataset, frame(v=["1", "inf"] * 10), target="y")


def test_classification_classes_sorted_as_numbers():
    ds = dataset(frame(y=[10, 2, 3, 2] * 5), target="y")
    assert ds.task == "classification" and ds.class_names == ("2", "3", "10")
    assert ds.y[:4].tolist() == [2, 0, 1, 0]
    assert ds.y_labels[:2].tolist() == ["10", "2"]


def test_huge_numeric_class_labels_stay_distinct():
    ds = dataset(frame(y=[1e300, -2e300, 3e20] * 6 + [1e300, 1e300]), target="y")
    assert ds.task == "classification" and ds.class_names == ("-2e+300", "3e+20", "1e+300")
    assert ds.y[:3].tolist() == [2, 0, 1]


def test_integer_classes_with_missing_are_named_without_decimals():
    ds = dataset(frame(y=[1.0, 2.0, None, 1.0] * 5), target="y", drop_missing_target=True)
    assert ds.class_names == ("1", "2")


def test_text_classes_sorted():
    ds = dataset(frame(y=["b", "a", "c", "a"] * 5), target="y")
    assert ds.class_names == ("a", "b", "c") and ds.y[:3].tolist() == [1, 0, 2]


def test_regression_target():
    ds = dataset(frame(y=np.linspace(0, 1, 20)), target="y")
    assert ds.task == "regression" and ds.class_names is None and ds.y.dtype == np.float64


def test_no_target_is_clustering():
    ds = dataset(frame(), target=None)
    assert ds.task == "clustering" and ds.y is None and ds.target_name is None
    assert ds.feature_names == ("a", "b", "y=no", "y=yes")


def test_clustering_with_reference_groups():
    ds = dataset(frame(), target="y", task="clustering")
    assert ds.task == "clustering" and ds.class_names == ("no", "yes")


def test_dataset_records_source_description_and_options():
    ds = table_to_dataset(frame(), "mine.csv", TableOptions(target="y"), source="upload")
    assert ds.source == "upload" and "20 rows, 3 columns" in ds.description
    assert ds.meta["options"]["target"] == "y"


def test_input_frame_is_not_modified():
    df = frame(num=["1", "2"] * 10)
    before = df.copy()
    dataset(df, target="y")
    pd.testing.assert_frame_equal(df, before)


# ---------------------------------------------------------------------------- images


def pixels(side: int, n: int = 12, high: int = 255) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    values = rng.integers(0, high + 1, size=(n, side * side)).astype(float)
    values[:, 0] = 0  # a constant corner pixel, as in real digit images
    df = pd.DataFrame(values, columns=[f"p{i}" for i in range(side * side)])
    df["label"] = ["a", "b"] * (n // 2)
    return df


def test_image_detected_and_constant_pixels_kept():
    ds = dataset(pixels(8), target="label")
    assert ds.image_shape == (8, 8) and ds.n_features == 64
    assert not any("constant" in n for n in ds.notes)


@pytest.mark.parametrize("df", [pixels(7), pixels(8, high=300)])
def test_not_an_image_when_small_or_out_of_range(df):
    ds = dataset(df, target="label")
    assert ds.image_shape is None and ds.n_features == df.shape[1] - 2  # constant pixel dropped


def test_image_option_yes_and_no():
    assert dataset(pixels(7), target="label", image="yes").image_shape == (7, 7)
    assert dataset(pixels(8), target="label", image="no").image_shape is None
    message = error_of(dataset, frame(), target="y", image="yes")
    assert "square number" in message


# ---------------------------------------------------------------------------- helpers


@pytest.mark.parametrize("values, task", [
    (["a", "b"], "classification"), ([True, False], "classification"),
    (pd.Categorical(["x", "y"]), "classification"), ([1, 2, 3, 2], "classification"),
    ([1.0, 2.0, np.nan], "classification"), (list(range(25)), "regression"),
    ([0.5, 1.5, 2.0], "regression"), (["1", "2", "1"], "classification"), (["0.5", "1.25"], "regression"),
])
def test_detect_task(values, task):
    assert detect_task(pd.Series(values)) == task


@pytest.mark.parametrize("columns, expected", [
    (["a", "b", "Species", "c"], "Species"), (["x", "label", "z"], "label"), (["y", "x"], "y"),
    (["a", "income_class", "b"], "income_class"), (["a", "b", "c"], "c"), ([], None),
])
def test_suggest_target(columns, expected):
    assert suggest_target(pd.DataFrame(columns=columns)) == expected


def test_inspect_table_roles_match_the_conversion():
    df = frame(60, e=[np.nan] * 60, k=[1] * 60, name=[f"n{i}" for i in range(60)],
               colour=["r", "g", None] * 20, num=["1", "2"] * 30)
    info = inspect_table(df, target="y").set_index("column")
    assert list(info.columns) == ["dtype", "missing", "distinct", "example", "role", "detail"]
    assert info.loc["y", "role"] == "target candidate"
    assert info.loc["a", "role"] == "feature" and info.loc["num", "role"] == "feature"
    assert info.loc["colour", "role"] == "one-hot" and info.loc["colour", "missing"] == 20
    for col in ("e", "k", "name"):
        assert info.loc[col, "role"] == "left out"
    assert info.loc["name", "distinct"] == 60 and info.loc["a", "example"] == "0.0"
    ds = dataset(df, target="y")
    kept = {re.sub("=.*", "", f) for f in ds.feature_names}
    assert kept == set(info.index[info["role"].isin(["feature", "one-hot"])])


def test_inspect_table_suggests_a_target():
    info = inspect_table(frame()).set_index("column")
    assert info.loc["y", "role"] == "target candidate"


# ---------------------------------------------------------------------------- thousands separators


def test_numbers_with_thousands_separators_are_read_as_numbers():
    df = frame(price=["1,000.5", "-12,345", "7", None, "+1,234,567.25"] * 4)
    ds = dataset(df.astype({"price": object}), target="y")
    col = ds.feature_names.index("price")
    assert ds.X[:5, col].tolist()[:3] == [1000.5, -12345.0, 7.0]
    assert np.isnan(ds.X[3, col]) and ds.X[4, col] == 1234567.25
    assert not any(f.startswith("price=") for f in ds.feature_names)
    assert any("Read column(s) 'price' as numbers written with thousands separators" in n for n in ds.notes)
    for note in ds.notes:
        assert_sentence(note)


def test_thousands_separators_in_an_uploaded_csv_and_a_regression_target():
    rows = "".join(f'{i},"{1000 * i + 250:,}","{i * 1234.5 + 0.25:,.2f}"\n' for i in range(20))
    ds = table_to_dataset(read_table("t.csv", ("a,qty,y\n" + rows).encode()), "t.csv", TableOptions(target="y"))
    assert ds.task == "regression" and ds.y[3] == 3 * 1234.5 + 0.25
    assert ds.X[19, ds.feature_names.index("qty")] == 19250
    assert any("'qty', 'y'" in n and "thousands" in n for n in ds.notes)


@pytest.mark.parametrize("odd", ["1,2,3", "a,b", "1,00", "0,125", "1,000 apples", "1,0000", "1,000.", "1.000,5"])
def test_text_that_is_not_a_grouped_number_stays_text(odd):
    ds = dataset(frame(v=[odd, "1,000", "2,500"] * 5 + ["1,000"] * 5), target="y")
    assert f"v={odd}" in ds.feature_names
    assert not any("thousands" in n for n in ds.notes)


def test_inspect_table_shows_thousands_separators():
    df = frame(price=["1,000.5", "7", "2,000"] * 6 + ["3", "4"])
    info = inspect_table(df, target="y").set_index("column")
    assert info.loc["price", "role"] == "feature" and info.loc["price", "dtype"] == "float64"
    assert "thousands separators" in info.loc["price", "detail"]


# ---------------------------------------------------------------------------- dates


def days(n: int, start: str = "2024-01-01", fmt: str = "%Y-%m-%d") -> list[str]:
    return [d.strftime(fmt) for d in pd.date_range(start, periods=n, freq="11D")]


def test_dates_become_one_decimal_year_feature():
    df = frame(30, order_date=days(30))
    ds = dataset(df, target="y")
    assert ds.feature_names == ("a", "b", "order_date (year)")  # one column, not 30
    col = ds.X[:, 2]
    assert col[0] == 2024.0 and np.all(np.diff(col) > 0)
    assert dataset(frame(order_date=["2024-07-02", "2023-01-01"] * 10), target="y").X[0, 2] == 2024.5
    note = next(n for n in ds.notes if "as dates" in n)
    assert "'order_date'" in note and "'order_date (year)'" in note and "decimal year" in note
    assert_sentence(note)


def test_iso_date_times_with_and_without_time_zones():
    values = ["2024-07-02", "2024-07-02 12:00", "2024-07-02T12:00:00Z", "2024-07-02T14:00:00+02:00",
              "2024-07-02T12:00+0200", None]
    ds = dataset(frame(18, when=values * 3), target="y")
    col = ds.X[:6, ds.feature_names.index("when (year)")]
    noon = 2024.5 + 0.5 / 366
    assert col[0] == 2024.5 and col[1] == noon and col[2] == noon and col[3] == noon
    assert abs(col[4] - (2024.5 + 10 / 24 / 366)) < 1e-9  # 12:00 at +02:00 is 10:00 UTC
    assert np.isnan(col[5])


@pytest.mark.parametrize("values, first", [
    (["07/02/2024", "12/31/2023"], 2024.5),  # month first
    (["02/07/2024", "31/12/2023"], 2024.5),  # a first number above 12: day first
    (["7/2/2024 12:00", "1/1/2024"], 2024.5 + 0.5 / 366),
    (["2024/07/02", "2023/1/1"], 2024.5),  # year first, as ISO
    (["2024/7/2 12:00", "2024-01-01"], 2024.5 + 0.5 / 366),
])
def test_slash_dates(values, first):
    ds = dataset(frame(d=values * 10), target="y")
    assert ds.feature_names[-1] == "d (year)" and ds.X[0, -1] == first


def test_datetime_columns_and_parquet_dates():
    berlin = pd.to_datetime(["2024-07-02 02:00"] * 10 + ["2023-01-01 01:00"] * 10).tz_localize("Europe/Berlin")
    df = frame(naive=pd.to_datetime(["2024-07-02", "2023-01-01"] * 10), aware=berlin,
               day=[pd.Timestamp("2024-07-02").date(), None] * 5 + [pd.Timestamp("2023-01-01").date()] * 10)
    buf = io.BytesIO()
    df.to_parquet(buf)
    for table in (df, read_table("t.parquet", buf.getvalue())):
        ds = dataset(table, target="y")
        names = list(ds.feature_names)
        assert names == ["a", "b", "naive (year)", "aware (year)", "day (year)"]
        assert ds.X[0, 2] == ds.X[0, 3] == ds.X[0, 4] == 2024.5  # 02:00 in Berlin is midnight UTC
        assert ds.X[10, 3] == ds.X[10, 4] == 2023.0 and np.isnan(ds.X[1, 4])


@pytest.mark.parametrize("values", [
    ["A", "B"], ["2024", "2025"], ["20240301", "20240302"], ["2024-01-01", "soon"], ["2024-02-30", "2024-03-01"],
    ["13/13/2024", "01/01/2024"], ["2024/02/30", "2024/03/02"], ["2024/13/01", "2024/03/02"], ["1/2", "3/4"],
])
def test_text_and_numbers_that_are_not_dates(values):
    ds = dataset(frame(v=values * 10), target="y")
    assert not any(n.endswith("(year)") for n in ds.feature_names)
    assert not any("as dates" in n for n in ds.notes)


def test_inspect_table_shows_dates():
    df = frame(30, order_date=days(30), when=pd.to_datetime(days(30)))
    info = inspect_table(df, target="y").set_index("column")
    for col in ("order_date", "when"):
        assert info.loc[col, "role"] == "feature"
        assert "decimal year" in info.loc[col, "detail"] and f"'{col} (year)'" in info.loc[col, "detail"]
    assert info.loc["order_date", "example"] == "2024-01-01"
    ds = dataset(df, target="y")
    assert {"order_date (year)", "when (year)"} <= set(ds.feature_names)


def test_a_date_target_is_read_as_decimal_years():
    ds = dataset(frame(30, due=days(30)), target="due")
    assert ds.task == "regression" and ds.y[0] == 2024.0 and ds.target_name == "due"
    assert ds.feature_names == ("a", "b", "y=no", "y=yes")
    assert any("Read the target 'due' as dates" in n for n in ds.notes)
    assert not any("as one feature" in n for n in ds.notes)


# ---------------------------------------------------------------- issue 19: nothing collides, nothing is mangled


def csv_bytes(df: pd.DataFrame, **kwargs) -> bytes:
    return df.to_csv(**kwargs).encode("utf-8")


def collision_table(n: int = 60) -> pd.DataFrame:
    """A one-hot column 'x' next to a numeric column named 'x=a', and a date column 'when' next to
    a numeric column 'when (year)'; the target depends on all four."""
    rng = np.random.default_rng(3)
    x = rng.choice(["a", "b"], n)
    xa = rng.normal(size=n)
    when = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 3000, n), unit="D")
    when_year = rng.normal(2000, 30, n)
    y = np.where((x == "a") ^ (xa > 0) ^ (when.year > 2023) ^ (when_year > 2000), "p", "q")
    return pd.DataFrame({"x": x, "x=a": xa, "when": when.strftime("%Y-%m-%d"), "when (year)": when_year, "y": y})


def test_derived_feature_names_never_collide_and_the_renaming_is_noted():
    ds = dataset(collision_table(), target="y")
    assert len(set(ds.feature_names)) == len(ds.feature_names), ds.feature_names
    assert ds.feature_names == ("x=a (2)", "x=b", "x=a", "when (year) (2)", "when (year)")
    assert any("'x=a (2)'" in n and "'when (year) (2)'" in n for n in ds.notes), ds.notes


def test_a_derived_name_does_not_take_the_name_of_the_target_or_a_left_out_column():
    df = frame(x=["a", "b"] * 10, **{"x=a": [f"id{i}" for i in range(20)]})
    ds = dataset(df, target="y", max_levels=5)
    assert "x=a (2)" in ds.feature_names and "x=a" not in ds.feature_names


def test_dataset_refuses_duplicate_feature_names():
    from treeviz.services.data.dataset import Dataset
    with pytest.raises(TreevizError, match="more than once"):
        Dataset(name="d", X=np.zeros((3, 2)), y=None, feature_names=("a", "a"), task="clustering")


@pytest.mark.parametrize("with_target", [True, False])
def test_predict_on_the_training_file_agrees_with_the_model(with_target):
    from treeviz.services.data import PrepConfig, prepare
    from treeviz.services.data.encoding import table_to_features
    from treeviz.services.experiments.training import train_run

    data = csv_bytes(collision_table(), index=False)
    ds = table_to_dataset(read_table("t.csv", data), "t.csv", TableOptions(target="y"))
    prepared = prepare(ds, PrepConfig())
    model, _ = train_run("cart", "classification", {}, prepared)
    table = read_table("t.csv", data)
    if not with_target:
        table = table.drop(columns=["y"])
    X, _ = table_to_features(table, ds.feature_names, name="t.csv")
    np.testing.assert_array_equal(X, ds.X)
    np.testing.assert_array_equal(model.predict(prepared.transform(X)), model.predict(prepared.transform(ds.X)))


def test_features_of_a_table_with_a_level_that_looks_renamed():
    from treeviz.services.data.encoding import table_to_features
    df = frame(x=["a", "a (2)", "b", "a"] * 5)
    ds = dataset(df, target="y")
    assert {"x=a", "x=a (2)", "x=b"} <= set(ds.feature_names)
    X, _ = table_to_features(df, ds.feature_names)
    np.testing.assert_array_equal(X, ds.X)


@pytest.mark.parametrize("cell", [[1, 2], {"k": 1}, {3}, (1, 2), np.arange(2)])
def test_columns_of_lists_dicts_or_sets_are_left_out_with_a_note(cell):
    df = frame(nested=[cell if i % 3 else None for i in range(20)])
    ds = dataset(df, target="y")
    assert ds.feature_names == ("a", "b")
    assert any("'nested'" in n and "lists" in n for n in ds.notes), ds.notes
    info = inspect_table(df, target="y").set_index("column")
    assert info.loc["nested", "role"] == "left out"
    assert "lists" in error_of(dataset, df, target="nested")


def test_parquet_list_column_is_left_out():
    table = pa.table({"a": list(range(20)), "tags": [[i, i + 1] for i in range(20)], "y": ["u", "v"] * 10})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    ds = table_to_dataset(read_table("t.parquet", buf.getvalue()), "t", TableOptions(target="y"))
    assert ds.feature_names == ("a",)


@pytest.mark.parametrize("sort", [False, True])
def test_a_to_csv_index_column_is_not_a_feature(sort):
    df = pd.DataFrame({"a": np.random.default_rng(0).normal(size=30), "y": ["p", "q", "r"] * 10})
    if sort:
        df = df.sort_values("y")
    ds = table_to_dataset(read_table("t.csv", csv_bytes(df)), "t", TableOptions(target="y"))
    assert ds.feature_names == ("a",)
    assert any("row numbers" in n and "'Unnamed: 0'" in n for n in ds.notes), ds.notes


def test_a_numbered_column_with_a_name_stays_a_feature():
    ds = dataset(frame(), target="y")
    assert "a" in ds.feature_names  # 'a' is 0..19, but it has a name


def test_short_rows_are_refused_with_the_line():
    data = b"a,b,y\n" + b"1,2,x\n" * 5 + b"3,4\n" + b"5,6,z\n" * 5
    message = error_of(read_table, "t.csv", data)
    assert "line 7 has 2 fields but the header has 3" in message


def test_empty_cells_are_not_short_rows():
    data = b"a,b,y\n" + b"1,,x\n" * 5 + b"\n" + b"5,6,z\n" * 5
    assert read_table("t.csv", data).shape == (10, 3)


def test_a_repeated_header_row_is_dropped_with_a_note():
    block = b"1,2.5,x\n3,4.5,z\n" * 5
    data = b"a,b,y\n" + block + b"a,b,y\n" + block
    df = read_table("t.csv", data)
    assert df.shape == (20, 3) and df["a"].dtype.kind in "if" and df["b"].dtype.kind == "f"
    ds = table_to_dataset(df, "t", TableOptions(target="y"))
    assert ds.feature_names == ("a", "b") and ds.class_names == ("x", "z")
    assert any("repeat the header" in n and "line 12" in n for n in ds.notes), ds.notes


@pytest.mark.parametrize("labels", [
    pd.Series([2**53, 2**53 + 1] * 10, dtype="int64"),
    pd.Series([str(2**70), str(2**70 + 1)] * 10),
])
def test_integer_labels_above_2_53_stay_distinct(labels):
    ds = dataset(frame(y=labels), target="y")
    assert ds.task == "classification" and len(ds.class_names) == 2
    assert set(ds.class_names) == {str(v) for v in labels.unique()}


def test_integer_labels_above_2_53_from_a_csv():
    data = ("a,y\n" + "".join(f"{i},{2**60 + i % 2}\n" for i in range(20))).encode()
    ds = table_to_dataset(read_table("t.csv", data), "t", TableOptions(target="y"))
    assert ds.class_names == (str(2**60), str(2**60 + 1))


def test_decimal_commas_are_read_as_numbers_with_a_note():
    data = ("a,y\n" + "".join(f'"{i}.000,25",{i % 2}\n' for i in range(1, 21))).encode()
    ds = table_to_dataset(read_table("t.csv", data), "t", TableOptions(target="y"))
    assert ds.feature_names == ("a",) and ds.X[0, 0] == 1000.25
    assert any("decimal comma" in n and "'a'" in n for n in ds.notes), ds.notes


def test_decimal_commas_in_a_semicolon_file_with_thousands_points():
    data = ("a;y\n" + "".join(f"{i}.000,5;{i % 2}\n" for i in range(1, 21))).encode()
    ds = table_to_dataset(read_table("t.csv", data), "t", TableOptions(target="y"))
    assert ds.X[:2, 0].tolist() == [1000.5, 2000.5]


@pytest.mark.parametrize("values, expected, unit", [
    ([f"{i} %" for i in range(20)], 3.0, "%"),
    ([f"{i}%" for i in range(20)], 3.0, "%"),
    ([f"${i},000" for i in range(1, 21)], 4000.0, "$"),
    ([f"€{i}.5" for i in range(20)], 3.5, "€"),
    ([f"{i} kg" for i in range(20)], 3.0, "kg"),
])
def test_numbers_with_a_unit_are_read_as_numbers_with_a_note(values, expected, unit):
    ds = dataset(frame(v=values), target="y")
    assert ds.X[3, ds.feature_names.index("v")] == expected
    assert any(f"'{unit}'" in n and "'v'" in n for n in ds.notes), ds.notes


def test_mixed_units_stay_text_and_the_note_says_why():
    ds = dataset(frame(v=[f"{i} kg" if i % 2 else f"{i} lb" for i in range(20)]), target="y")
    assert "v" not in ds.feature_names
    assert any("'v'" in n and "not all numbers" in n for n in ds.notes), ds.notes


def test_mostly_numbers_with_a_stray_word_says_why_it_is_text():
    ds = dataset(frame(v=[str(i) for i in range(19)] + ["n/a"]), target="y")
    assert any("'v'" in n and "'n/a'" in n for n in ds.notes), ds.notes


def test_many_one_row_classes_get_a_warning():
    ds = dataset(frame(60, y=[f"c{i}" for i in range(60)]), target="y")
    assert any("60 of the 60 classes" in n and "a single row" in n for n in ds.notes), ds.notes


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_feature_matrix_too_large_is_refused_before_it_is_built():
    rng = np.random.default_rng(0)
    levels = np.array([f"v{i}" for i in range(50)])
    n = 4000
    df = pd.DataFrame({f"c{j}": levels[rng.integers(0, 50, n)] for j in range(400)})
    df["y"] = np.where(np.arange(n) % 2, "p", "q")
    message = error_of(dataset, df, target="y")
    assert "4,000 rows × 20,000 features" in message and "MB" in message


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_read(codec):
    text = "a,y\n" + "".join(f"{i},{'é' if i % 2 else 'b'}\n" for i in range(12))
    df = read_table("t.csv", text.encode(codec))
    assert df.shape == (12, 2) and set(df["y"]) == {"é", "b"}


def test_a_nul_byte_after_the_first_8_kib_is_binary():
    data = b"a,b,y\n" + b"1,2,x\n" * 2000 + b"1,\x00,x\n"
    assert len(data) > 8192
    assert "binary" in error_of(read_table, "t.csv", data)


def test_a_careless_export_is_read_as_meant():
    ds = load("mangled_columns")
    assert ds.feature_names == ("x=a (2)", "x=b", "x=a", "share", "price")
    assert ds.class_names == ("no", "yes") and ds.n_samples == 20
    assert ds.X[1].tolist() == [0.0, 1.0, 2.0, 1.0, 2001.1]
