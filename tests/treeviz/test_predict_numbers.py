"""Predictions' CSV: numbers are written as numbers and text is guarded against spreadsheet formulas,
never the other way round; and ``treeviz predict``'s notes say only true things about the columns.

A class label is text in the model (``classes_`` holds the names), but a label like "-1" is a number to
anyone reading the CSV: a −1/+1 target must come out as ``-1`` next to ``1``, not ``'-1``."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from treeviz.cli.main import main
from treeviz.services.data import PrepConfig, TableOptions, prepare, read_table, table_to_dataset
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.predict import predict_table, predictions_csv, spreadsheet_safe

#: Text a spreadsheet would read as a number: written as it is.
NUMBERS = ["-1", "-0.5", "-1e3", "-1E+03", "-2.5e-7", "-.5", "-1.", "-0", "0", "1", "3.25", "1e3", "007"]
#: Text starting with a formula character that is not a plain number: guarded with a quote.
FORMULAS = ["=1", "-1+2", "-2*A1", "+1", "+SUM(A1)", "@x", "\t1", "\r1", "-x", "-", "--1", "-1e", "-e3", "-.",
            "-1e3x", "-inf", "-Infinity", "-nan", "-1_000", "-1,5", "-1 ", "-0x10", "-\u0661", "-１",
            "-1" + "0" * 400, "-1e999", "=-1", "-1\n"]


@pytest.mark.parametrize("text", NUMBERS)
def test_a_plain_number_is_a_number(text):
    assert spreadsheet_safe(pd.DataFrame({"c": [text, "x"]}))["c"].tolist() == [text, "x"]


@pytest.mark.parametrize("text", FORMULAS)
def test_text_that_starts_like_a_formula_is_guarded(text):
    assert spreadsheet_safe(pd.DataFrame({"c": [text, "x"]}))["c"].tolist() == ["'" + text, "x"]


def test_numbers_inside_text_columns_and_as_column_names_stay_numbers():
    frame = pd.DataFrame({"id": ["-1", "a-2", "-3", "=4"], "-1": [1, 2, 3, 4], "=x": ["a", "b", "c", "d"],
                          "mixed": [-1, "-2", -3.5, "-x"], "prediction": ["-1", "1", "-1", "1"]})
    safe = spreadsheet_safe(frame)
    assert list(safe.columns) == ["id", "-1", "'=x", "mixed", "prediction"]
    assert safe["id"].tolist() == ["-1", "a-2", "-3", "'=4"]
    assert safe["mixed"].tolist() == [-1, "-2", -3.5, "'-x"]
    assert safe["prediction"].tolist() == ["-1", "1", "-1", "1"]
    back = pd.read_csv(io.StringIO(predictions_csv(frame)))
    assert back["prediction"].tolist() == [-1, 1, -1, 1]  # one numeric column again, not mixed text


def signed_table(n: int = 60) -> pd.DataFrame:
    """A -1/+1 target, a numeric id with negative numbers, an id of mixed text, and a comment column."""
    x = np.random.default_rng(0).normal(size=n)
    return pd.DataFrame({"id": np.arange(-n // 2, n - n // 2),
                         "code": [f"-{i}" if i % 3 else f"k-{i}" for i in range(n)], "x": x,
                         "comment": ["=HYPERLINK(1)"] * n, "y": np.where(x > 0, 1, -1)})


def test_negative_class_labels_and_ids_come_out_as_numbers_in_the_service():
    table = read_table("signed.csv", signed_table().to_csv(index=False).encode())
    dataset = table_to_dataset(table, "signed", TableOptions(target="y"))
    assert dataset.class_names == ("-1", "1")
    prepared = prepare(dataset, PrepConfig())
    model, _ = train_run("cart", "classification", {"max_depth": 2}, prepared)
    result = predict_table(table.drop(columns="y"), model, prepared, keep=["id", "code"], proba=True)
    text = predictions_csv(result.frame)
    back = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert set(back["prediction"]) == {"-1", "1"}, text[:300]
    assert back["id"].tolist() == [str(i) for i in range(-30, 30)]
    assert back["code"].tolist()[:4] == ["k-0", "-1", "-2", "k-3"]
    assert list(back.columns) == ["id", "code", "prediction", "proba_-1", "proba_1"]


@pytest.fixture
def signed_run(home, tmp_path, capsys):
    """A run trained on x and y only; the rows to predict also have an id, a code and a comment."""
    train, path = tmp_path / "train.csv", tmp_path / "signed.csv"
    signed_table()[["x", "y"]].to_csv(train, index=False)
    signed_table().to_csv(path, index=False)
    assert main(["train", "-q", "-d", str(train), "--target", "y", "-f", "cart", "-p", "max_depth=2"]) == 0
    return capsys.readouterr().out.strip(), path


def test_predict_keep_writes_negative_labels_and_ids_as_numbers(signed_run, home, capsys):
    run_id, path = signed_run
    assert main(["predict", run_id, str(path), "--keep", "id", "--keep", "code", "--proba"]) == 0
    out = capsys.readouterr().out
    back = pd.read_csv(io.StringIO(out), dtype=str, keep_default_na=False)
    assert set(back["prediction"]) == {"-1", "1"}, out[:300]
    assert back["id"].tolist() == [str(i) for i in range(-30, 30)]
    assert back["code"].tolist()[:4] == ["k-0", "-1", "-2", "k-3"]
    numeric = pd.read_csv(io.StringIO(out))
    assert numeric["prediction"].dtype.kind == "i" and numeric["id"].dtype.kind == "i"
    store = RunStore(home)
    model, prepared = store.load_model(run_id), store.load_prepared(run_id)
    expected = model.predict(prepared.transform(prepared.dataset.X)).astype(int)  # the same rows, trained on
    assert (numeric["prediction"].to_numpy() == expected).all()


def test_predict_notes_do_not_call_a_kept_column_ignored(signed_run, capsys):
    run_id, path = signed_run
    assert main(["predict", run_id, str(path), "--keep", "id"]) == 0
    _, err = capsys.readouterr()
    ignored = [line for line in err.splitlines() if "Ignored column" in line]
    assert ignored, err
    assert "'id'" not in ignored[0], ignored[0]  # kept, so not ignored: the model does not read it
    assert "'code'" in ignored[0] and "'comment'" in ignored[0] and "'y'" in ignored[0]
    assert main(["predict", run_id, str(path), "--keep", "id", "--keep", "code", "--keep", "comment",
                 "--keep", "y"]) == 0
    _, err = capsys.readouterr()
    assert "Ignored column" not in err, err
    assert main(["predict", run_id, str(path)]) == 0  # nothing kept: the id is ignored, and said so
    _, err = capsys.readouterr()
    assert "'id'" in next(line for line in err.splitlines() if "Ignored column" in line)


def test_a_kept_feature_column_is_kept_and_still_read(signed_run, capsys):
    run_id, path = signed_run
    assert main(["predict", run_id, str(path), "--keep", "x"]) == 0
    out, err = capsys.readouterr()
    back = pd.read_csv(io.StringIO(out))
    assert list(back.columns) == ["x", "prediction"]
    assert (back["prediction"].to_numpy() == np.where(back["x"] > 0, 1, -1)).mean() > 0.9
    assert "'x'" not in next(line for line in err.splitlines() if "Ignored column" in line)


def test_kept_whole_number_ids_with_a_gap_stay_whole_numbers(signed_run, capsys, tmp_path):
    # pandas reads a column of whole numbers with an empty cell as floats: the ids must not come back as -30.0
    run_id, _ = signed_run
    rows = signed_table()
    rows["id"] = rows["id"].astype(object)
    rows.loc[1, "id"] = None
    rows["ratio"] = np.linspace(-1, 1, len(rows))  # a kept column of real fractions stays as it is
    rows.loc[2, "ratio"] = np.nan
    rows.to_csv(tmp_path / "gap.csv", index=False)
    assert main(["predict", run_id, str(tmp_path / "gap.csv"), "--keep", "id", "--keep", "ratio", "-q"]) == 0
    back = pd.read_csv(io.StringIO(capsys.readouterr().out), dtype=str, keep_default_na=False)
    assert back["id"].tolist()[:4] == ["-30", "", "-28", "-27"]
    assert back["ratio"].tolist()[:3] == ["-1.0", str(-1 + 2 / 59), ""]
