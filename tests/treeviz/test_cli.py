"""The command line (``python -m treeviz``): every command on sample data, in-process through
``treeviz.cli.main.main`` with a private ``TREEVIZ_HOME``, plus real subprocesses for exit codes, stderr and Ctrl-C."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models.ground.errors import TreevizError
from models.persist import save_model
from models.registry import families, get_family
from treeviz.cli import common, predict, progress
from treeviz.cli import train as train_command
from treeviz.cli.main import main
from treeviz.readers.rules import rules
from treeviz.services.data import load_dataset, read_table
from treeviz.services.data.encoding import FEATURE_SOURCES, table_to_features
from treeviz.services.experiments.sweep import sweeps
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip
from treeviz.services.store.runs import RunStore
from treeviz.services.views.run_view import RunView

ROOT = Path(__file__).resolve().parents[2]
PENGUINS = ROOT / "sample_data" / "penguins.csv"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``main(argv)``: its exit status, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def train(capsys, *argv: str) -> str:
    """Train quietly and return the new run id."""
    code, out, err = run(capsys, "train", "-q", *argv)
    assert code == 0, err
    return out.strip()


def param_args(values) -> list[str]:
    out = []
    for name, value in values.items():
        text = "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        out += ["--param", f"{name}={text}"]
    return out


def assert_clean_error(code: int, err: str, expected: int, words: str) -> None:
    assert code == expected
    assert "Traceback" not in err
    assert words in err
    if expected == common.USER_ERROR:
        assert err.count("\n") == 1 and err.startswith("treeviz: error: ")


# ---------------------------------------------------------------------------- help


def test_help_lists_every_family_with_its_parameters_and_the_exit_codes(capsys):
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0
    for family in families().values():
        assert f"{family.key}: {family.label}" in out
        assert f"tasks: {', '.join(family.tasks)}" in out
        for param in family.params:
            assert f"      {param.name}" in out
    assert "max_depth: int 1 to 64, or none (unlimited); default none (unlimited)" in out
    assert "Deepest level the tree may grow to." in out
    for code_, _ in common.EXIT_CODES:
        assert f"  {code_} " in out
    code, top, _ = run(capsys, "--help")
    assert code == 0 and all(f"  {k}: " in top for k in families()) and "130" in top


def test_families_and_help_params_describe_one_family_per_task(capsys):
    code, out, _ = run(capsys, "train", "--family", "tao", "--task", "regression", "--help-params")
    assert code == 0
    assert "depth [regression]: int 0 to 16; default 4" in out and "[classification]" not in out
    assert "λ path (sweep): l1_penalty from 0.001 to 100, 6 points" in out
    code, out, _ = run(capsys, "families", "cart", "--json")
    (cart,) = json.loads(out)
    assert cart["key"] == "cart" and {p["name"] for p in cart["params"]} >= {"max_depth", "ccp_alpha"}
    code, out, err = run(capsys, "train", "--help-params")
    assert_clean_error(code, err, common.USAGE, "--help-params needs --family")


def test_param_values_follow_the_schema():
    cart, tao = get_family("cart"), get_family("tao")
    depth = cart.param("max_depth")
    assert common.parse_param_value(depth, "unlimited") is None and common.parse_param_value(depth, "None") is None
    assert common.parse_param_value(tao.param("warm_start"), "yes") is True
    assert common.parse_param_value(tao.param("warm_start"), "0") is False
    assert common.parse_param_value(tao.param("random_state"), "random") is None
    with pytest.raises(TreevizError, match="true or false"):
        common.parse_param_value(tao.param("warm_start"), "maybe")
    params = common.model_params(cart, "classification", "quick", [("max_depth", "5"), ("criterion", "entropy")])
    assert params["max_depth"] == 5 and params["criterion"] == "entropy"
    with pytest.raises(TreevizError, match="no preset"):
        common.model_params(cart, "classification", "nope", [])


# ---------------------------------------------------------------------------- train


def test_a_run_trained_on_the_command_line_is_stored_as_the_app_stores_runs(home, capsys):
    code, out, err = run(capsys, "train", "--data", "iris", "--family", "cart", "--param", "max_depth=3",
                         "--name", "from the shell", "--json")
    assert code == 0, err
    shown = json.loads(out)
    store = RunStore(home)
    (record,) = store.list()
    assert shown["run_id"] == record.run_id and record.name == "from the shell"
    assert shown["headline"]["key"] == "test_accuracy"
    # the app's training job calls train_run on the same prepared data with the store
    prepared = store.load_prepared(record.run_id)
    app = train_run("cart", "classification", {"max_depth": 3}, prepared, store=store, device="auto")
    same = ("family", "estimator", "task", "params", "dataset", "dataset_fingerprint", "prep",
            "prepared_fingerprint", "metrics", "n_nodes", "n_leaves", "depth", "status", "sweep")
    assert {k: getattr(record, k) for k in same} == {k: getattr(app, k) for k in same}
    assert len(store.list()) == 2
    text_code, text, _ = run(capsys, "train", "-d", "iris", "-f", "cart", "-p", "max_depth=2")
    assert text_code == 0 and text.startswith("run       ") and "name      CART on iris #2" in text
    assert "headline  test accuracy" in text


@pytest.mark.parametrize("key", list(families()))
def test_every_family_trains_with_its_test_settings(home, capsys, key):
    family = get_family(key)
    code, out, err = run(capsys, "train", "-d", "iris", "-f", key, "--json", *param_args(family.test_params))
    assert code == 0, err
    record = json.loads(out)
    expected = "classification" if "classification" in family.tasks else family.tasks[0]
    assert record["task"] == expected and record["family"] == key
    assert [r.run_id for r in RunStore(home).list()] == [record["run_id"]]


def test_train_reads_a_table_file_like_an_upload(home, capsys, tmp_path):
    rows = tmp_path / "penguins.tsv"
    rows.write_text(PENGUINS.read_text().replace(",", "\t"))
    code, out, err = run(capsys, "train", "-d", rows, "-f", "cart", "--scaling", "none", "--test-size", "0.3",
                         "--seed", "3", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["dataset"]["name"] == "penguins.tsv" and record["dataset"]["target_name"] == "species"
    assert record["prep"] == {"scaling": "none", "test_size": 0.3, "val_size": 0.1, "seed": 3}
    assert "missing" in err  # the data set's notes go to stderr
    code, out, err = run(capsys, "train", "-d", rows, "--no-target", "-f", "latent", "--json",
                         *param_args(get_family("latent").test_params))
    assert code == 0, err
    assert json.loads(out)["task"] == "clustering"


def test_bad_arguments_get_one_clean_sentence_and_a_nonzero_status(home, capsys, tmp_path):
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "nope")
    assert_clean_error(code, err, common.USAGE, "invalid choice: 'nope'")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "-p", "max_depth")
    assert_clean_error(code, err, common.USAGE, "expected NAME=VALUE")
    code, _, err = run(capsys, "train", "-f", "cart")
    assert_clean_error(code, err, common.USAGE, "required: --data")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "-p", "depth=3")
    assert_clean_error(code, err, common.USER_ERROR, "has no parameter(s) depth")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "-p", "max_depth=deep")
    assert_clean_error(code, err, common.USER_ERROR, "Parameter 'max_depth' must be a whole number")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "-p", "max_depth=0")
    assert_clean_error(code, err, common.USER_ERROR, "must be at least 1")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "--preset", "huge")
    assert_clean_error(code, err, common.USER_ERROR, "has no preset 'huge'")
    code, _, err = run(capsys, "train", "-d", tmp_path / "missing.csv", "-f", "cart")
    assert_clean_error(code, err, common.USER_ERROR, "There is no file")
    code, _, err = run(capsys, "train", "-d", "irises", "-f", "cart")
    assert_clean_error(code, err, common.USER_ERROR, "neither a table file, a built-in data set")
    code, _, err = run(capsys, "train", "-d", "iris", "--target", "species", "-f", "cart")
    assert_clean_error(code, err, common.USER_ERROR, "--target applies only to a table file")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "--task", "clustering")
    assert_clean_error(code, err, common.USER_ERROR, "does not do clustering")
    code, _, err = run(capsys, "train", "-d", "blobs", "-f", "cart")
    assert_clean_error(code, err, common.USER_ERROR, "does not do clustering")
    unknown = "20200101-000000-000000-abcdef"
    for argv in (("export", unknown), ("export", unknown, "--rules"), ("report", unknown),
                 ("predict", unknown, PENGUINS)):
        code, _, err = run(capsys, *argv)
        assert_clean_error(code, err, common.USER_ERROR, f"There is no run {unknown}")
    code, _, err = run(capsys, "export", "not-a-run")
    assert_clean_error(code, err, common.USER_ERROR, "is not a run id")
    code, _, err = run(capsys, "import", tmp_path / "none.zip")
    assert_clean_error(code, err, common.USER_ERROR, "There is no file")
    assert RunStore(home).list() == []


# ---------------------------------------------------------------------------- Ctrl-C


def interrupt_at(monkeypatch, epoch: int, times: int = 1) -> None:
    """Make the progress bar receive SIGINT (as from Ctrl-C) ``times`` times at an epoch."""
    original = progress.ProgressBar.on_epoch_end

    def on_epoch_end(self, estimator, **kwargs):
        if self.epochs + 1 == epoch:
            for _ in range(times):
                signal.raise_signal(signal.SIGINT)
        return original(self, estimator, **kwargs)

    monkeypatch.setattr(progress.ProgressBar, "on_epoch_end", on_epoch_end)


def test_ctrl_c_stores_the_run_as_cancelled_and_exits_130(home, capsys, monkeypatch):
    interrupt_at(monkeypatch, epoch=2)
    # what was there before (Python's default, or SIG_IGN in a process started in the background)
    before = signal.getsignal(signal.SIGINT)
    code, out, err = run(capsys, "train", "-d", "iris", "-f", "tao", "-p", "depth=2", "-p", "max_iter=20", "-q")
    assert code == common.INTERRUPTED
    (record,) = RunStore(home).list()
    assert out.strip() == record.run_id and record.status == "cancelled"
    assert len(RunStore(home).history(record.run_id)) == 2
    assert "stored as cancelled" in err
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def test_a_second_ctrl_c_stops_at_once_and_stores_nothing(home, capsys, monkeypatch):
    interrupt_at(monkeypatch, epoch=1, times=2)
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "tao", "-p", "depth=2", "-p", "max_iter=20")
    assert code == common.INTERRUPTED and "interrupted" in err and "Traceback" not in err
    assert RunStore(home).list() == []


def test_the_progress_bar_counts_epochs_and_shows_the_curves():
    buffer = io.StringIO()
    bar = progress.ProgressBar(get_family("latent"), enabled=True, file=buffer)
    bar.on_train_begin(None, total=3)
    for loss in (0.9, 0.5, 0.25):
        bar.on_epoch_end(None, record={"epoch": 1, "loss": loss})
    bar.on_train_end(None)
    text = buffer.getvalue()
    assert "3/3" in text and "loss=0.25" in text and "epoch" in text


# ---------------------------------------------------------------------------- sweep


def test_sweep_stores_one_run_per_value_as_one_lambda_path(home, capsys):
    code, out, err = run(capsys, "sweep", "-d", "iris", "-f", "tao", "--values", "0.01,1", "--param", "max_iter=2",
                         "--param", "depth=2", "--json")
    assert code == 0, err
    points = json.loads(out)
    assert [p["value"] for p in points] == [0.01, 1.0]
    store = RunStore(home)
    (path,) = sweeps(store).values()
    assert [r.run_id for r in path] == [p["run_id"] for p in points]
    assert all(r.sweep["param"] == "l1_penalty" for r in path)
    code, out, err = run(capsys, "sweep", "-d", "iris", "-f", "stump")  # the family's own grid
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("λ path 'Decision stump on iris' over min_gain (3 of 3 points")
    assert lines[1].split()[:4] == ["min_gain", "run", "status", "headline"] and len(lines) == 5
    code, _, err = run(capsys, "sweep", "-d", "iris", "-f", "cart")
    assert_clean_error(code, err, common.USER_ERROR, "has no λ path")
    code, _, err = run(capsys, "sweep", "-d", "iris", "-f", "stump", "--values", "1", "--low", "0.1")
    assert_clean_error(code, err, common.USAGE, "either --values or --low/--high/--count")
    code, _, err = run(capsys, "sweep", "-d", "iris", "-f", "stump", "-p", "min_gain=0.1")
    assert_clean_error(code, err, common.USER_ERROR, "conflicts with the sweep")


# ---------------------------------------------------------------------------- predict


@pytest.fixture
def penguin_run(home, capsys):
    return train(capsys, "-d", PENGUINS, "-f", "cart", "-p", "max_depth=3")


def test_predict_encodes_raw_rows_as_at_upload_and_applies_the_runs_preprocessing(home, capsys, tmp_path,
                                                                                  penguin_run):
    store = RunStore(home)
    prepared, model = store.load_prepared(penguin_run), store.load_model(penguin_run)
    expected = model.predict(prepared.transform(prepared.dataset.X))
    code, out, err = run(capsys, "predict", penguin_run, PENGUINS, "--proba", "--keep", "species")
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out))
    assert list(table.columns[:2]) == ["species", "prediction"]
    assert (table["prediction"].to_numpy() == expected).all()
    proba = table[[f"proba_{c}" for c in model.classes_]].to_numpy()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert "Ignored column" not in err  # species, the one column the model does not read, is kept
    # a few raw rows, one with a level never seen and missing numbers, written to a file
    rows = pd.read_csv(PENGUINS).drop(columns="species").head(3)
    rows.loc[0, "island"] = "Atlantis"
    rows.loc[1, "bill_length_mm"] = np.nan
    rows.to_csv(tmp_path / "rows.csv", index=False)
    code, _, err = run(capsys, "predict", penguin_run, tmp_path / "rows.csv", "--out", tmp_path / "pred.csv")
    assert code == 0, err
    assert len(pd.read_csv(tmp_path / "pred.csv")) == 3 and "never saw in training ('Atlantis')" in err
    code, _, err = run(capsys, "predict", penguin_run, tmp_path / "rows.csv", "--keep", "id")
    assert_clean_error(code, err, common.USER_ERROR, "--keep names column(s) 'id'")


def test_predict_from_a_run_zip_a_run_folder_and_a_plain_model_file(home, capsys, tmp_path, penguin_run):
    store = RunStore(home)
    code, direct, _ = run(capsys, "predict", penguin_run, PENGUINS, "-q")
    zip_path = tmp_path / "run.zip"
    zip_path.write_bytes(export_zip(store, penguin_run))
    for source in (zip_path, store.run_path(penguin_run)):
        code, out, err = run(capsys, "predict", source, PENGUINS, "-q")
        assert code == 0 and out == direct and err == ""
    # a plain model file carries no preprocessing: the rows are taken as the model's inputs
    prepared, model = store.load_prepared(penguin_run), store.load_model(penguin_run)
    save_model(model, tmp_path / "model")
    scaled = pd.DataFrame(prepared.X_test, columns=list(prepared.dataset.feature_names))
    scaled.to_csv(tmp_path / "scaled.csv", index=False)
    code, out, err = run(capsys, "predict", tmp_path / "model", tmp_path / "scaled.csv")
    assert code == 0 and "carries no preprocessing" in err
    assert (pd.read_csv(io.StringIO(out))["prediction"].to_numpy() == model.predict(prepared.X_test)).all()


def test_predict_maps_an_embedding_run_through_transform(home, capsys, tmp_path):
    family = get_family("tree_embedding")
    run_id = train(capsys, "-d", "iris", "-f", "tree_embedding", *param_args(family.test_params))
    store = RunStore(home)
    prepared = store.load_prepared(run_id)
    pd.DataFrame(prepared.dataset.X[:5], columns=list(prepared.dataset.feature_names)).to_csv(
        tmp_path / "iris.csv", index=False)
    code, out, err = run(capsys, "predict", run_id, tmp_path / "iris.csv")
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out))
    expected = store.load_model(run_id).transform(prepared.transform(prepared.dataset.X[:5]))
    np.testing.assert_allclose(table[["z0", "z1"]].to_numpy(), expected, rtol=1e-9)
    code, _, err = run(capsys, "predict", run_id, tmp_path / "iris.csv", "--proba")
    assert_clean_error(code, err, common.USER_ERROR, "--proba needs a classifier")


def test_table_to_features_follows_the_upload_encoding():
    weather = load_dataset("seattle_weather")
    table = read_table("w.csv", (ROOT / "sample_data" / "seattle_weather.csv").read_bytes())
    X, notes = table_to_features(table.head(20), weather.feature_names)
    np.testing.assert_array_equal(X, weather.X[:20])  # the date column becomes the decimal year
    assert notes == ["Ignored column(s) the model does not use: 'weather'."]
    penguins = load_dataset("penguins")
    encoded = pd.DataFrame(penguins.X[:4], columns=list(penguins.feature_names))  # already the features
    X, notes = table_to_features(encoded, penguins.feature_names)
    np.testing.assert_array_equal(np.nan_to_num(X, nan=-1), np.nan_to_num(penguins.X[:4], nan=-1))
    assert notes == []
    numbers_with_gaps = pd.DataFrame({"level": [1.0, np.nan, 2.0], "x": [0.5, 1.5, 2.5]})
    X, notes = table_to_features(numbers_with_gaps, ("level=1", "level=2", "level=(missing)", "x"))
    np.testing.assert_array_equal(X, [[1, 0, 0, 0.5], [0, 0, 1, 1.5], [0, 1, 0, 2.5]])
    with pytest.raises(TreevizError, match="lacks the column"):
        table_to_features(numbers_with_gaps, ("y",), name="rows.csv")
    with pytest.raises(TreevizError, match="holds text such as 'abc'"):
        table_to_features(pd.DataFrame({"x": ["abc", "1"]}), ("x",))
    with pytest.raises(TreevizError, match="infinite"):
        table_to_features(pd.DataFrame({"x": [np.inf, 1.0]}), ("x",))


# ---------------------------------------------------------------------------- export, import, report, list


def test_export_a_zip_and_import_it_into_another_store(home, capsys, tmp_path, penguin_run):
    store = RunStore(home)
    target = tmp_path / "out.zip"
    code, _, err = run(capsys, "export", penguin_run, "--out", target)
    assert code == 0 and target.read_bytes() == export_zip(store, penguin_run) and str(target) in err
    other = tmp_path / "other-home"
    code, out, err = run(capsys, "import", target, "--home", other, "-q")
    assert code == 0, err
    (imported,) = RunStore(other).list()
    assert out.strip() == imported.run_id == penguin_run and imported.metrics == store.get(penguin_run).metrics
    code, _, err = run(capsys, "import", PENGUINS, "--home", other)
    assert_clean_error(code, err, common.USER_ERROR, "not a zip archive")


def test_export_rules_in_the_datas_own_units(home, capsys, penguin_run):
    store = RunStore(home)
    code, out, err = run(capsys, "export", penguin_run, "--rules")
    assert code == 0, err
    view = RunView.build(store.load_model(penguin_run), store.load_prepared(penguin_run), "train")
    lines = out.splitlines()
    assert lines[1] == "# Thresholds are in the data's own units."
    assert lines[2:] == rules(view.rules_tree(original_units=True))
    code, out, _ = run(capsys, "export", penguin_run, "--rules", "--model-units")
    assert out.splitlines()[2:] == rules(view.tree)


def test_export_rules_of_every_tree_of_a_forest(home, capsys):
    run_id = train(capsys, "-d", "iris", "-f", "tao_forest", *param_args(get_family("tao_forest").test_params))
    code, out, _ = run(capsys, "export", run_id, "--rules")
    assert code == 0 and "# tree 0 of 2" in out and "# tree 1 of 2" in out
    code, _, err = run(capsys, "export", run_id, "--rules", "--tree", "5")
    assert_clean_error(code, err, common.USER_ERROR, "choose --tree from 0 to 1")


def test_export_python_and_sql_predict_raw_rows_like_the_run(home, capsys, tmp_path, penguin_run):
    store = RunStore(home)
    prepared, model = store.load_prepared(penguin_run), store.load_model(penguin_run)
    names = list(prepared.dataset.feature_names)
    X_raw = prepared.dataset.X  # the upload's features in the data's own units, NaN kept
    expected = model.predict(prepared.transform(X_raw))
    code, source, err = run(capsys, "export", penguin_run, "--python")
    assert code == 0, err
    namespace: dict = {}
    exec(compile(source, "tree.py", "exec"), namespace)
    got = [namespace["predict"](dict(zip(names, row))) for row in X_raw]
    assert (np.asarray(got) == expected).all()
    code, _, err = run(capsys, "export", penguin_run, "--sql", "--table", "rows", "--out", tmp_path / "tree.sql")
    assert code == 0, err
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE rows (" + ", ".join(f'"{n}" REAL' for n in names) + ")")
    db.executemany(f"INSERT INTO rows VALUES ({', '.join('?' * len(names))})",
                   [[None if np.isnan(v) else float(v) for v in row] for row in X_raw])
    got = [r[0] for r in db.execute((tmp_path / "tree.sql").read_text())]
    assert (np.asarray(got) == expected).all()
    code, _, err = run(capsys, "export", penguin_run, "--sql", "--rules")
    assert_clean_error(code, err, common.USAGE, "not allowed with argument")


def test_export_code_of_a_forest_tree_and_of_a_latent_tree_says_what_it_gives(home, capsys):
    forest = train(capsys, "-d", "iris", "-f", "tao_forest", *param_args(get_family("tao_forest").test_params))
    code, source, err = run(capsys, "export", forest, "--python", "--tree", "1")
    assert code == 0 and "tree 1 of the 2" in err and "Tree 1 of the 2 of the ensemble." in source
    latent = train(capsys, "-d", "iris", "-f", "latent", *param_args(get_family("latent").test_params))
    code, source, err = run(capsys, "export", latent, "--python")
    assert code == 0 and "the code gives each row's leaf" in err and "def leaf(row)" in source
    skinny = train(capsys, "-d", "iris", "-f", "skinny", *param_args(get_family("skinny").test_params))
    code, _, err = run(capsys, "export", skinny, "--sql")
    assert code == common.USER_ERROR and err.startswith("treeviz: error: ") and "Traceback" not in err


def test_report_writes_the_runs_html_page(home, capsys, tmp_path, penguin_run):
    code, _, err = run(capsys, "report", penguin_run, "--out", tmp_path / "report.html")
    assert code == 0, err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.lower().startswith("<!doctype html") and "CART on penguins.csv #1" in page


def test_list_shows_runs_with_their_headline_and_filters(home, capsys, penguin_run):
    iris = train(capsys, "-d", "iris", "-f", "tao", "-p", "depth=2", "-p", "max_iter=2")
    code, out, _ = run(capsys, "list")
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["id", "name", "family", "task"]
    assert lines[1].startswith(iris) and lines[2].startswith(penguin_run)  # newest first
    assert "test acc" in lines[1]
    code, out, _ = run(capsys, "list", "--family", "cart", "--json")
    (only,) = json.loads(out)
    assert only["run_id"] == penguin_run and only["headline"]["key"] == "test_accuracy"
    code, out, _ = run(capsys, "list", "--dataset", "iris", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [iris]


# ---------------------------------------------------------------------------- real processes


def treeviz(*argv: str, home: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "TREEVIZ_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "treeviz", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, **kwargs)


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_python_m_treeviz_exit_codes_and_stderr(tmp_path):
    ok = treeviz("train", "-d", "iris", "-f", "cart", "-p", "max_depth=2", "-q", home=tmp_path)
    assert ok.returncode == 0 and ok.stderr == ""
    assert [r.run_id for r in RunStore(tmp_path).list()] == [ok.stdout.strip()]
    usage = treeviz("train", "-d", "iris", "-f", "nope", home=tmp_path)
    assert usage.returncode == 2 and "invalid choice: 'nope'" in usage.stderr and usage.stdout == ""
    refused = treeviz("train", "-d", "iris", "-f", "cart", "-p", "max_depth=0", home=tmp_path)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == "treeviz: error: Parameter 'max_depth' must be at least 1; got '0'.\n"


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_ctrl_c_in_a_real_process_stores_a_cancelled_run(tmp_path):
    env = {**os.environ, "TREEVIZ_HOME": str(tmp_path)}
    argv = [sys.executable, "-m", "treeviz", "train", "-d", "iris", "-f", "latent", "-p", "max_epochs=100000",
            "-p", "patience=0", "--progress", "-q"]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait for a state, not a time: the bar has started, so training runs (100 000 epochs: it is
    # still running when the signal comes); the limits only end waits that would never end
    seen, deadline = b"", time.monotonic() + 600
    while b"epoch" not in seen and time.monotonic() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    assert b"epoch" in seen, seen.decode()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, (seen + err).decode()
    (record,) = RunStore(tmp_path).list()
    assert record.status == "cancelled" and out.decode().strip() == record.run_id


# ---------------------------------------------------------------------------- refusals, crashes, the file system


@pytest.mark.parametrize("argv, words", [
    (("train", "-d", "iris", "-f", "cart", "--seed", "-1"), "argument --seed: expected a whole number from 0"),
    (("train", "-d", "iris", "-f", "cart", "--seed", str(2**32)), "argument --seed"),
    (("train", "-d", "iris", "-f", "cart", "--device", "evil"), "argument --device: expected auto, cpu, cuda"),
    (("train", "-d", "iris", "-f", "tao", "--device", "cuda:x"), "argument --device"),
    (("grid", "-d", "iris", "-f", "cart", "-g", "max_depth=1,2", "--jobs", "-5"), "argument -j/--jobs: expected -1"),
    (("grid", "-d", "iris", "-f", "cart", "-g", "max_depth=1,2", "--jobs", "0"), "argument -j/--jobs"),
    (("export", "20200101-000000-000000-abcdef", "--rules", "--max-terms", "-3"), "argument --max-terms"),
    (("export", "20200101-000000-000000-abcdef", "--rules", "--tree", "-1"), "argument --tree"),
    (("export", "20200101-000000-000000-abcdef", "--sql", "--table", ""), "argument --table: expected the name"),
    (("export", "20200101-000000-000000-abcdef", "--sql", "--table", "  "), "argument --table"),
    (("list", "-n", "-3"), "argument -n/--limit: expected a whole number of at least 0"),
    (("sweep", "-d", "iris", "-f", "tao", "--count", "1000000000"), "argument --count"),
    (("sweep", "-d", "iris", "-f", "tao", "--count", "0"), "argument --count"),
    (("delete",), "give the run id(s) to delete, or --leftovers"),
    (("list", "--home", "a\x00b"), "holds a NUL character"),
    (("train", "-d", "iris\x00.csv", "-f", "cart"), "holds a NUL character"),
])
def test_out_of_range_options_are_refused_with_a_sentence(home, capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert_clean_error(code, err, common.USAGE, words)
    assert out == "" and RunStore(home).list() == []


def test_device_is_checked_for_every_family_and_ignored_with_a_note_where_there_is_none(home, capsys):
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "--device", "CPU", "-p", "max_depth=2")
    assert code == 0, err
    assert "CART (scikit-learn) has no device setting" in err and "--device is ignored" in err


def test_a_home_that_is_not_a_folder_is_refused_with_a_sentence(capsys, tmp_path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("not a store")
    for home in (a_file, Path(os.devnull)):
        for argv in (("list",), ("datasets",), ("train", "-d", "iris", "-f", "cart")):
            code, _, err = run(capsys, *argv, "--home", home)
            assert_clean_error(code, err, common.USER_ERROR, f"The run store {home} is not a folder")
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "--home", a_file / "sub")
    assert_clean_error(code, err, common.USER_ERROR, "Not a directory")


def test_a_home_it_may_not_write_to_is_refused_with_a_sentence(capsys):
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart", "--home", "/proc/1")
    assert code == common.USER_ERROR and err.count("\n") == 1
    assert err.startswith("treeviz: error: ") and "(/proc/1/" in err and "Traceback" not in err


def test_a_full_disk_is_a_sentence_not_a_traceback(home, capsys, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(home / "runs" / ".tmp-x"))

    monkeypatch.setattr(train_command, "train_run", full)
    code, _, err = run(capsys, "train", "-d", "iris", "-f", "cart")
    assert_clean_error(code, err, common.USER_ERROR, "No space left on device")
    assert "free some space" in err and str(home) in err


def test_a_crash_has_its_own_exit_code_and_one_line_and_debug_adds_the_traceback(home, capsys, monkeypatch,
                                                                                   tmp_path):
    def broken(data):
        raise zlib.error("Error -3 while decompressing data: invalid block type")

    monkeypatch.setattr(predict, "load_model", broken)
    model = tmp_path / "model.zip"
    model.write_bytes(b"PK\x03\x04 not really")
    code, out, err = run(capsys, "predict", model, PENGUINS)
    assert code == common.CRASH != common.USER_ERROR and out == "" and "Traceback" not in err
    assert err.count("\n") == 1
    assert err.startswith("treeviz: internal error: error: Error -3 while decompressing data")
    assert "--debug" in err
    for argv in (("--debug", "predict", model, PENGUINS), ("predict", model, PENGUINS, "--debug")):
        code, _, err = run(capsys, *argv)
        assert code == common.CRASH and "Traceback" in err and "zlib.error" in err


def test_the_crash_code_is_documented_in_the_help_and_the_readme(capsys):
    _, out, _ = run(capsys, "--help")
    assert f"  {common.CRASH} " in out and "--debug" in out
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Command line"):readme.index("### Sweeps on a cluster")]
    for code_, _ in common.EXIT_CODES:
        assert re.search(rf"[ ;]{code_}\s", section), code_
    assert "--debug" in section and "delete --leftovers" in section


def test_a_malformed_scheduler_address_is_refused_before_the_data_is_read(home, capsys, tmp_path):
    code, _, err = run(capsys, "grid", "-d", tmp_path / "missing.csv", "-f", "cart", "-g", "max_depth=1,2",
                       "--scheduler", "notaurl")
    assert_clean_error(code, err, common.USER_ERROR, "'notaurl' is not a Dask scheduler address")


def test_a_table_over_the_upload_limit_is_refused_before_it_is_read_whole(home, capsys, monkeypatch, tmp_path):
    def read_whole(self):
        raise AssertionError(f"{self} was read whole")

    monkeypatch.setattr(Path, "read_bytes", read_whole)
    monkeypatch.setenv("TREEVIZ_MAX_UPLOAD_MB", "0.001")  # 1048 bytes
    big = tmp_path / "big.csv"
    big.write_text("a,b\n" + "1,2\n" * 1000)
    for data in (big, "/dev/zero"):
        code, _, err = run(capsys, "train", "-d", data, "-f", "cart")
        assert_clean_error(code, err, common.USER_ERROR, "is larger than the upload limit of 0.001 MB")
    code, _, err = run(capsys, "predict", "20200101-000000-000000-abcdef", "/dev/zero")
    assert code == common.USER_ERROR  # the run is looked up first; the table is never read
    monkeypatch.setattr(common, "MAX_IMPORT_BYTES", 4096)
    code, _, err = run(capsys, "import", "/dev/zero")
    assert_clean_error(code, err, common.USER_ERROR, "/dev/zero is larger than")


def test_predict_escapes_cells_a_spreadsheet_would_run_as_formulas(home, capsys, tmp_path, penguin_run):
    rows = pd.read_csv(PENGUINS).head(7)
    rows.insert(0, "id", ["=1+2", "+SUM(A1)", "-x", "@cmd", "\tq", "=HYPERLINK(\"x\")", "plain"])
    rows.insert(1, "score", [-1.5, 2, 3, 4, 5, 6, 7])
    rows.to_csv(tmp_path / "rows.csv", index=False)
    code, out, err = run(capsys, "predict", penguin_run, tmp_path / "rows.csv", "--keep", "id", "--keep", "score")
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out), keep_default_na=False)
    assert list(table["id"]) == ["'=1+2", "'+SUM(A1)", "'-x", "'@cmd", "'\tq", "'=HYPERLINK(\"x\")", "plain"]
    assert table["score"].iloc[0] == -1.5  # numbers, negative ones too, are left as they are
    frame = predict.spreadsheet_safe(pd.DataFrame({"=a": ["=b", "\rc", "d"], "n": [-1, 2, 3]}))
    assert list(frame.columns) == ["'=a", "n"] and list(frame["'=a"]) == ["'=b", "'\rc", "d"]
    assert list(frame["n"]) == [-1, 2, 3]


def test_delete_removes_runs_even_damaged_ones_and_the_leftovers_of_crashes(home, capsys):
    first = train(capsys, "-d", "iris", "-f", "cart", "-p", "max_depth=1")
    second = train(capsys, "-d", "iris", "-f", "cart", "-p", "max_depth=2")
    store = RunStore(home)
    (store.run_path(second) / "run.json").write_text("{ crafted")  # the Runs page cannot open it
    unknown = "20200101-000000-000000-abcdef"
    code, _, err = run(capsys, "delete", first, unknown)
    assert_clean_error(code, err, common.USER_ERROR, f"There is no run {unknown}")
    assert store.exists(first)  # every id is checked before any run is deleted
    code, out, err = run(capsys, "delete", first, second)
    assert code == 0, err
    assert out.splitlines() == [f"deleted run {first}", f"deleted run {second}"]
    assert not store.exists(first) and not store.exists(second)
    leftover = home / "runs" / ".tmp-crashed"
    leftover.mkdir()
    recent = home / "runs" / ".tmp-saving-now"
    recent.mkdir()
    old = time.time() - 3600
    os.utime(leftover, (old, old))
    code, out, err = run(capsys, "delete", "--leftovers")
    assert code == 0 and out.startswith("removed 1 folder(s) left in")
    assert not leftover.exists() and recent.exists()  # a save still under way is left alone


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_output_into_a_device_is_written_into_it_not_replaced(home, capsys, tmp_path, penguin_run):
    device = tmp_path / "null"
    try:  # a private copy of /dev/null (character device 1, 3), so the real one is never at risk
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError:
        pytest.skip("this machine does not allow creating a device node")
    for argv in (("export", penguin_run, "--rules"), ("report", penguin_run), ("predict", penguin_run, PENGUINS)):
        code, _, err = run(capsys, *argv, "--out", device)
        assert code == 0, err
        assert stat.S_ISCHR(device.stat().st_mode)  # still the device, not a file renamed over it
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "treeviz-home") == ["null"]


def test_predict_quotes_the_value_that_is_not_a_number(home, capsys, tmp_path, penguin_run):
    rows = pd.read_csv(PENGUINS).head(3)
    rows["bill_length_mm"] = rows["bill_length_mm"].astype(object)
    rows.loc[2, "bill_length_mm"] = "long"
    rows.to_csv(tmp_path / "rows.csv", index=False)
    code, _, err = run(capsys, "predict", penguin_run, tmp_path / "rows.csv")
    assert_clean_error(code, err, common.USER_ERROR, "Column 'bill_length_mm' of 'rows.csv' holds text such as 'long'")


def test_predict_reads_features_whose_names_are_ambiguous_as_at_upload(home, capsys, tmp_path):
    # Column 'x=a' one-hot encoded ('x=a=0', 'x=a=a', ...) next to a numeric column 'x': read by name,
    # 'x=a=0' could also be column 'x' at level 'a=0' (the fuzz test found predict reading it so, every
    # indicator 0). The upload records each feature's column, and predict uses it.
    rows = [[i % 3, i % 2, ["0", "a", ""][i % 3], i % 2] for i in range(30)]
    path = tmp_path / "ambiguous.csv"
    pd.DataFrame(rows, columns=["a", "x", "x=a", "y"]).to_csv(path, index=False)
    run_id = train(capsys, "--data", path, "--target", "y", "--family", "cart")
    store = RunStore(home)
    prepared, model = store.load_prepared(run_id), store.load_model(run_id)
    assert "x=a=a" in prepared.dataset.feature_names
    expected = model.predict(prepared.transform(prepared.dataset.X))
    code, out, err = run(capsys, "predict", run_id, path)
    assert code == 0, err
    predicted = pd.read_csv(io.StringIO(out), dtype=str)["prediction"].to_numpy()
    assert (predicted == expected.astype(str)).all()
    X, _ = table_to_features(pd.read_csv(path), prepared.dataset.feature_names,
                             sources=prepared.dataset.meta[FEATURE_SOURCES])
    np.testing.assert_array_equal(X, prepared.dataset.X)
