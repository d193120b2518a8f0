"""The SQL export and feature names that are one column to a database: ``A`` and ``a`` (SQLite,
MySQL and SQL Server compare column names without case), ``Ä`` and ``ä``, ``x`` and ``X `` (a
trailing space). Such features are read from renamed columns, the SQL's first lines and the export's
notes say which, and the query runs in SQLite on a table with exactly the columns it names, giving
the model's predictions."""

from __future__ import annotations

import re
import sqlite3

import numpy as np
import pandas as pd
import pytest

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError
from treeviz.cli.main import main
from treeviz.readers import codegen
from treeviz.readers.codegen import sql_query
from treeviz.services.store.runs import RunStore
from treeviz.services.views import export as export_service
from treeviz.services.views.export import render, tree_exports

NAMES = ["A", "a", "Ä", "ä", "x", "X "]


def query_columns(sql: str, table: str) -> list[str]:
    """The quoted identifiers the query reads, in order of first use (the table and the outputs left out)."""
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    names = [m.replace('""', '"') for m in re.findall(r'"((?:[^"]|"")*)"', body)]
    return list(dict.fromkeys(n for n in names if n not in (table, "prediction")))


def rows(n: int = 400, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, len(NAMES)))


def labels(X: np.ndarray) -> np.ndarray:
    # every feature decides somewhere, so the tree reads all six
    score = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5) + (X[:, 2] > -0.5) + (X[:, 3] > 0) + (X[:, 4] > 1) \
        + (X[:, 5] > -1)
    return np.where(score >= 4, "hi", "lo")


def sqlite_predictions(sql: str, table: str, columns: list[str], X: np.ndarray, key: str | None = None) -> list:
    db = sqlite3.connect(":memory:")
    quoted = [f'"{c.replace(chr(34), chr(34) * 2)}" REAL' for c in columns]
    if key is not None:
        quoted.insert(0, f'"{key}" INTEGER')
    db.execute(f'CREATE TABLE "{table}" ({", ".join(quoted)})')
    values = [[*([i] if key is not None else []), *map(float, row)] for i, row in enumerate(X)]
    db.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(values[0]))})', values)
    return db.execute(sql).fetchall()


@pytest.fixture(scope="module")
def model():
    X = rows()
    return CARTClassifier(max_depth=8).fit(X, labels(X), feature_names=NAMES), X


def test_the_tree_reads_every_clashing_feature(model):
    est, _ = model
    tree = est.to_tree()
    assert sorted({int(np.flatnonzero(tree.weight[i])[0]) for i in range(tree.n_nodes) if not tree.is_leaf[i]}) \
        == list(range(len(NAMES)))


def test_the_sql_names_no_two_columns_a_database_takes_for_one_and_runs_in_sqlite(model):
    est, _ = model
    sql = sql_query(est.to_tree(), "rows")
    columns = query_columns(sql, "rows")
    assert len(columns) == len(NAMES)
    sqlite3.connect(":memory:").execute(  # a table with exactly the columns the SQL names
        f'CREATE TABLE rows ({", ".join(chr(34) + c.replace(chr(34), chr(34) * 2) + chr(34) for c in columns)})')
    folded = [c.casefold().rstrip() for c in columns]
    assert len(set(folded)) == len(folded), columns  # Ä and ä, x and 'X ': one column in other databases


def test_the_renamed_columns_are_said_in_the_sql_and_keep_other_names(model):
    est, X = model
    sql = sql_query(est.to_tree(), "rows")
    columns = list(codegen.sql_columns(NAMES))
    assert columns == ["A", "a_2", "Ä", "ä_2", "x", "X_2"]
    assert set(query_columns(sql, "rows")) == set(columns)
    header = " ".join(line[3:] for line in sql.splitlines() if line.startswith("-- "))
    for feature, column in (("a", "a_2"), ("ä", "ä_2"), ("X ", "X_2")):
        assert f"'{feature}' from column \"{column}\"" in header, header
    assert "'A' from" not in header and "'x' from" not in header  # the first of each keeps its name
    got = sqlite_predictions(sql, "rows", columns, X)
    assert [r[0] for r in got] == est.predict(X).tolist()


def test_a_new_name_never_takes_another_features_name():
    assert codegen.sql_columns(["a", "A", "A_2", "a_3"]) == ("a", "A_4", "A_2", "a_3")
    assert codegen.sql_columns(["id", "x"], key="ID") == ("id_2", "x")  # the key column is the table's id
    assert codegen.sql_columns(["ID", "x"], key="ID") == ("ID", "x")  # the same column: nothing to rename
    assert codegen.sql_columns(["ﬁt", "fit", "ＦＩＴ"]) == ("ﬁt", "fit_2", "ＦＩＴ_3")  # compatibility forms


def test_a_key_column_that_clashes_with_a_feature_or_an_output(model):
    est, X = model
    tree = est.to_tree()
    sql = sql_query(tree, "rows", key="X")  # a table whose id column is "X" beside feature "x": read from x_2
    assert codegen.sql_columns(NAMES, key="X") == ("A", "a_2", "Ä", "ä_2", "x_2", "X_3")
    got = sqlite_predictions(sql, "rows", list(codegen.sql_columns(NAMES, key="X")), X, key="X")
    assert got == list(enumerate(est.predict(X).tolist()))
    with pytest.raises(TreevizError, match="name of an output column"):
        sql_query(tree, "rows", key="PREDICTION")


@pytest.mark.slow  # trains a run and exports it through the command line: seconds
def test_treeviz_export_sql_of_a_run_on_such_a_table(home, capsys, tmp_path):
    X = rows(300, seed=1)
    frame = pd.DataFrame(X, columns=NAMES)
    frame["y"] = labels(X)
    path = tmp_path / "clash.csv"
    frame.to_csv(path, index=False)
    assert main(["train", "-q", "-d", str(path), "--target", "y", "-f", "cart", "-p", "max_depth=8"]) == 0
    run_id = capsys.readouterr().out.strip()
    store = RunStore(home)
    prepared, model = store.load_prepared(run_id), store.load_model(run_id)
    names = list(prepared.dataset.feature_names)
    assert names == ["A", "a", "Ä", "ä", "x", "X"]  # the upload strips names: 'X ' is 'X'
    assert main(["export", run_id, "--sql", "--table", "rows", "--out", str(tmp_path / "tree.sql")]) == 0
    err = capsys.readouterr().err
    sql = (tmp_path / "tree.sql").read_text()
    columns = list(codegen.sql_columns(names))
    assert columns == ["A", "a_2", "Ä", "ä_2", "x", "X_2"]
    assert "'a' from column \"a_2\"" in err.replace("\n", " ") and "\"X_2\"" in err, err
    X_raw = prepared.dataset.X
    got = sqlite_predictions(sql, "rows", columns, X_raw)
    assert [r[0] for r in got] == model.predict(prepared.transform(X_raw)).tolist()
    # the export service says the same in its notes, and the Python export keeps the names
    [export] = tree_exports(model, prepared, indices=[0])
    notes = export_service.format_notes("sql", [export])
    assert len(notes) == 1 and "'ä' from column \"ä_2\"" in notes[0]
    assert export_service.format_notes("python", [export]) == []
    namespace: dict = {}
    exec(compile(render("python", [export]), "tree.py", "exec"), namespace)  # Python keeps every name as it is
    got = [namespace["predict"](dict(zip(names, row, strict=True))) for row in X_raw]
    assert got == model.predict(prepared.transform(X_raw)).tolist()
