"""The Tree explorer's SQL download of a run trained on features named ``A`` and ``a`` (and ``Ä``/``ä``)
runs in SQLite on a table with the columns it names and gives the run's predictions."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from tests.app.conftest import assert_clean, new_app, open_page
from treeviz.services.data import PrepConfig, TableOptions, prepare, read_table, table_to_dataset
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # trains a run and renders the explorer: seconds
def test_the_explorers_sql_runs_in_sqlite_when_names_differ_only_in_case(home, downloads):
    X = np.random.default_rng(2).normal(size=(200, 4))
    frame = pd.DataFrame(X, columns=["A", "a", "Ä", "ä"])
    frame["y"] = np.where((X[:, 0] > 0) & (X[:, 1] > 0) | (X[:, 2] > 0.5) & (X[:, 3] > -0.5), "hi", "lo")
    table = read_table("clash.csv", frame.to_csv(index=False).encode())
    prepared = prepare(table_to_dataset(table, "clash", TableOptions(target="y")), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 6}, prepared, store=RunStore(home))
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, "explorer")
    assert_clean(at)
    at.text_input(key="explorer.sql_table").input("rows").run()
    [name] = [n for n in downloads if n.endswith(".sql")]
    sql = downloads[name].decode()
    header = " ".join(line[3:] for line in sql.splitlines() if line.startswith("-- "))
    assert "'a' from column \"a_2\"" in header and "'ä' from column \"ä_2\"" in header, header
    db = sqlite3.connect(":memory:")
    db.execute('CREATE TABLE rows ("A" REAL, "a_2" REAL, "Ä" REAL, "ä_2" REAL)')
    db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?)", prepared.dataset.X.tolist())
    got = [r[0] for r in db.execute(sql)]
    model = RunStore(home).load_model(record.run_id)
    assert got == model.predict(prepared.transform(prepared.dataset.X)).tolist()
