"""A model that carries its preprocessing: the fitted steps give the arrays prepare() gave, a model file
stores them (JSON + safetensors), and the file predicts from a table's raw columns in a fresh process
with no run store, as the Predict page's service does, row for row."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
import zipfile
from io import BytesIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import treeviz as tv
from models.ground.errors import TreevizError
from models.persist import model_bytes, zip_bytes
from treeviz.services.data import PrepConfig, TableOptions, prepare, table_to_dataset
from treeviz.services.data.pipeline import Pipeline, Preprocessing, load_model, save_model
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import model_file, run_preprocessing
from treeviz.services.store.runs import RunStore
from treeviz.services.views.predict import predict_table

ROOT = Path(__file__).resolve().parents[2]
PENGUINS = ROOT / "sample_data" / "penguins.csv"
CARS = ROOT / "sample_data" / "cars.csv"


def raw_penguins() -> pd.DataFrame:
    return pd.read_csv(PENGUINS)


def penguins(scaling: str = "standard"):
    return prepare(table_to_dataset(raw_penguins(), "penguins.csv", TableOptions(target="species")),
                   PrepConfig(scaling=scaling))


@pytest.mark.parametrize("scaling", ["none", "standard", "quantile"])
def test_the_fitted_steps_give_the_arrays_prepare_gave_bit_for_bit(scaling):
    prepared = penguins(scaling)  # text columns, missing numbers and a missing level
    steps = Preprocessing.from_prepared(prepared)
    X, notes = steps.transform_table(raw_penguins())
    expected = np.empty_like(X)
    for part in ("train", "val", "test"):
        expected[getattr(prepared, f"{part}_idx")] = prepared.X(part)
    assert np.array_equal(X, expected)
    assert notes == ["Ignored column(s) the model does not use: 'species'."]


def test_feature_names_come_from_the_fitted_steps_not_from_parsing_names():
    # a column named like a one-hot level of another: names alone are ambiguous, the sources are not
    df = pd.DataFrame({"x": ["a", "b"] * 20, "x=a": np.arange(40.0), "y": [0, 1] * 20})
    prepared = prepare(table_to_dataset(df, "t.csv", TableOptions(target="y")), PrepConfig(scaling="none"))
    steps = Preprocessing.from_prepared(prepared)
    assert list(steps.get_feature_names_out()) == list(prepared.dataset.feature_names)
    assert [(c.name, c.kind, c.levels) for c in steps.columns] == [("x", "category", ("a", "b")),
                                                                   ("x=a", "number", ())]
    X, _ = steps.transform_table(df)
    assert np.array_equal(X[:, list(prepared.dataset.feature_names).index("x=a")], np.arange(40.0))


def test_the_steps_round_trip_through_json_and_arrays():
    steps = Preprocessing.from_prepared(penguins("quantile"))
    config, arrays = steps.to_state()
    back = Preprocessing.from_state(json.loads(json.dumps(config)), arrays)
    raw = raw_penguins()
    assert np.array_equal(back.transform(raw), steps.transform(raw))
    with pytest.raises(TreevizError, match="preprocessing"):
        Preprocessing.from_state({**config, "feature_names": config["feature_names"][:-1]}, arrays)
    with pytest.raises(TreevizError, match="malformed"):
        Preprocessing.from_state({"scaling": "standard"}, arrays)


def test_missing_extra_and_unknown_values(tmp_path):
    prepared = penguins()
    model = tv.TAOClassifier(depth=2).fit(prepared.X_train, prepared.labels("train"))
    pipe = Pipeline.from_prepared(prepared, model)
    rows = raw_penguins().head(6).drop(columns="species")
    rows["note"] = "extra"  # an extra column: ignored
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pipe.predict(rows).shape == (6,)
    unknown = rows.assign(island=["Atlantis"] * 6)  # a level training never saw
    with pytest.warns(UserWarning, match=r"never saw in training.*'Atlantis'"):
        X = pipe.features(unknown)
    island = [j for j, n in enumerate(pipe.get_feature_names_out()) if n.startswith("island=")]
    zero = pipe.preprocessing.scale(np.zeros((1, X.shape[1])))[0, island]
    assert np.array_equal(X[:, island], np.tile(zero, (6, 1)))  # every indicator 0, scaled
    with pytest.raises(TreevizError, match=r"lacks the column.*'sex'.*Give every column"):
        pipe.predict(rows.drop(columns="sex"))
    with pytest.raises(TreevizError, match="pandas DataFrame"):
        pipe.predict(rows.to_numpy())


def test_a_model_file_from_a_run_predicts_raw_rows_in_a_fresh_process_as_the_predict_page(tmp_path):
    store = RunStore(tmp_path / "home")
    record = train_run("tao", "classification", {"depth": 3}, penguins("quantile"), store=store)
    raw = raw_penguins()
    page = predict_table(raw, store.load_model(record.run_id), store.load_prepared(record.run_id), proba=True)
    (tmp_path / "model.zip").write_bytes(model_file(store, record.run_id))
    raw.to_csv(tmp_path / "rows.csv", index=False)
    work = tmp_path / "elsewhere"
    work.mkdir()
    code = ("import pandas as pd, treeviz as tv\n"
            "m = tv.load_model('../model.zip')\n"
            "rows = pd.read_csv('../rows.csv')\n"
            "out = pd.DataFrame(m.predict_proba(rows), columns=[f'proba_{c}' for c in m.classes_])\n"
            "out.insert(0, 'prediction', m.predict(rows))\n"
            "out.to_csv('../fresh.csv', index=False)\n")
    env = {"PYTHONPATH": str(ROOT), "TREEVIZ_HOME": str(tmp_path / "no-store"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "no-store").exists()
    fresh = pd.read_csv(tmp_path / "fresh.csv")
    assert fresh["prediction"].tolist() == page.frame["prediction"].tolist()
    columns = [c for c in page.frame.columns if c.startswith("proba_")]
    np.testing.assert_allclose(fresh[columns].to_numpy(), page.frame[columns].to_numpy(), rtol=0, atol=1e-12)


def test_the_run_keeps_its_steps_so_predicting_does_not_rerun_prepare(tmp_path, monkeypatch):
    store = RunStore(tmp_path)
    record = train_run("cart", "classification", {"max_depth": 3}, penguins(), store=store)
    monkeypatch.setattr(RunStore, "load_prepared", lambda *a: pytest.fail("prepare() was rerun"))
    steps = run_preprocessing(store, record.run_id)
    assert steps.scaling == "standard" and len(steps.columns) == 7


def test_an_old_model_file_without_steps_loads_and_says_so(tmp_path):
    store = RunStore(tmp_path)
    prepared = penguins()
    record = train_run("cart", "classification", {"max_depth": 3}, prepared, store=store)
    model = store.load_model(record.run_id)
    old = zip_bytes(model_bytes(model, context=model.model_context_))  # what treeviz wrote before: version 1
    assert json.loads(zipfile.ZipFile(BytesIO(old)).read("config.json"))["version"] == 1
    with pytest.warns(UserWarning, match="carries no preprocessing"):
        loaded = load_model(old)
    assert not isinstance(loaded, Pipeline)
    assert np.array_equal(loaded.predict(prepared.X_test), model.predict(prepared.X_test))
    # an old run (its model file without steps) still downloads a whole model: rebuilt from its data
    folder = store.runs_dir / record.run_id
    (folder / "config.json").write_bytes(zipfile.ZipFile(BytesIO(old)).read("config.json"))
    (folder / "weights.safetensors").write_bytes(zipfile.ZipFile(BytesIO(old)).read("weights.safetensors"))
    whole = load_model(model_file(store, record.run_id))
    assert isinstance(whole, Pipeline)
    assert whole.predict(raw_penguins()).tolist() == model.predict(prepared.transform(prepared.dataset.X)).tolist()


def test_save_model_from_python_with_the_data_it_was_fitted_on(tmp_path):
    data = tv.prepare(tv.load_dataset("cars"), tv.PrepConfig(scaling="standard"))
    model = tv.CARTRegressor(max_depth=3).fit(data.X_train, data.labels("train"))
    path = tv.save_model(model, tmp_path / "cars.zip", prepared=data)
    back = tv.load_model(path)
    assert isinstance(back, tv.Pipeline)
    rows = pd.read_csv(CARS).dropna(subset=["Miles_per_Gallon"])
    assert np.allclose(back.predict(rows), model.predict(data.transform(data.dataset.X)), rtol=0, atol=0)
    bare = tv.load_model(tv.save_model(model, tmp_path / "bare.zip"))  # no data: the estimator, no warning
    assert type(bare).__name__ == "CARTRegressor"
    assert save_model(back, tmp_path / "again.zip") and isinstance(load_model(tmp_path / "again.zip"), Pipeline)


def test_a_pipeline_refuses_steps_that_do_not_fit_its_model():
    data = penguins()
    model = tv.CARTClassifier(max_depth=2).fit(data.X_train[:, :3], data.labels("train"))
    with pytest.raises(TreevizError, match="reads 3 features but the preprocessing gives 11"):
        Pipeline.from_prepared(data, model)


def test_a_pipelines_trees_and_code_read_the_datas_own_units():
    prepared = penguins("standard")
    model = tv.CARTClassifier(max_depth=3).fit(prepared.X_train, prepared.labels("train"))
    pipe = Pipeline.from_prepared(prepared, model)
    assert pipe.tree_units == "input" and pipe.to_tree().feature_names == prepared.dataset.feature_names
    first = tv.export_text(pipe).splitlines()[0]
    assert "bill_length_mm ≤ 4" in first  # millimetres, not a z-score
    namespace: dict = {}
    exec(tv.export_python(pipe), namespace)
    X_raw, _ = pipe.preprocessing.encode(raw_penguins())  # gaps stay NaN: the code fills the medians
    rows = [dict(zip(pipe.get_feature_names_out(), x)) for x in X_raw]
    assert [namespace["predict"](r) for r in rows] == pipe.predict(raw_penguins()).tolist()
    quantile = Pipeline.from_prepared(penguins("quantile"), model)
    assert quantile.tree_units == "model" and quantile.fill_values is None
