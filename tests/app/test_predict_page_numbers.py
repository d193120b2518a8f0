"""The Predict page's CSV writes numbers as numbers (a −1/+1 run's class labels, negative ids) and
guards only text against spreadsheet formulas; its notes never call the kept id column ignored."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from tests.app.conftest import assert_clean, new_app, open_page, texts
from treeviz.services.data import PrepConfig, TableOptions, prepare, read_table, table_to_dataset
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


def signed_rows(n: int = 40) -> pd.DataFrame:
    x = np.random.default_rng(1).normal(size=n)
    return pd.DataFrame({"id": np.arange(-n // 2, n - n // 2),
                         "code": [f"-{i}" if i % 2 else f"=A{i}" for i in range(n)], "x": x,
                         "y": np.where(x > 0, 1, -1)})


def test_the_download_writes_negative_labels_and_ids_as_numbers_and_notes_only_true_things(home, downloads):
    rows = signed_rows()
    table = read_table("train.csv", rows[["x", "y"]].to_csv(index=False).encode())
    prepared = prepare(table_to_dataset(table, "signed", TableOptions(target="y")), PrepConfig())
    train_run("cart", "classification", {"max_depth": 2}, prepared, store=RunStore(home))
    at = open_page(new_app().run(), "predict")
    at.file_uploader(key="predict.upload").set_value(("rows.csv", rows.to_csv(index=False).encode(),
                                                       "text/csv")).run()
    assert_clean(at)
    assert at.selectbox(key="predict.id").value == "id"
    captions = [c.replace("\\", "") for c in texts(at.caption) if "Ignored column" in c]  # no markdown escapes
    assert captions and "'id'" not in captions[0], captions  # kept beside the predictions, so not ignored
    assert "'code'" in captions[0] and "'y'" in captions[0]
    text = downloads["rows_predictions.csv"].decode()
    back = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert set(back["prediction"]) == {"-1", "1"}, text[:300]
    assert back["id"].tolist() == [str(i) for i in range(-20, 20)]
    expected = np.where(rows["x"] > 0, 1, -1)
    assert (pd.read_csv(io.StringIO(text))["prediction"].to_numpy() == expected).mean() > 0.9
    # the code column as the id: numbers stay numbers, a formula is still guarded
    at.selectbox(key="predict.id").set_value("code").run()
    assert_clean(at)
    back = pd.read_csv(io.StringIO(downloads["rows_predictions.csv"].decode()), dtype=str, keep_default_na=False)
    assert back["code"].tolist()[:4] == ["'=A0", "-1", "'=A2", "-3"]
    captions = [c.replace("\\", "") for c in texts(at.caption) if "Ignored column" in c]  # no markdown escapes
    assert "'code'" not in captions[0] and "'id'" in captions[0], captions
