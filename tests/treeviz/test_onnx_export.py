"""ONNX export with the preprocessing inside the graph: fed a table's raw columns (numbers as doubles,
text as strings, gaps as NaN or ""), onnxruntime gives treeviz's predictions on every row, with
probabilities within 1e-5, for every family on three tables (penguins and cars have text columns and
missing values), and refuses what it cannot compute exactly with a sentence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

import treeviz as tv  # noqa: E402
from models.ground.errors import TreevizError  # noqa: E402
from models.registry import get_family  # noqa: E402
from treeviz.cli.main import main  # noqa: E402
from treeviz.services.data import PrepConfig, TableOptions, load_dataset, prepare, table_to_dataset  # noqa: E402
from treeviz.services.data.onnx_export import onnx_feed  # noqa: E402
from treeviz.services.data.pipeline import Pipeline  # noqa: E402
from treeviz.services.experiments.training import train_run  # noqa: E402
from treeviz.services.store.runs import RunStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ATOL = 1e-5


def _table(name: str, target: str) -> tuple[pd.DataFrame, object]:
    raw = pd.read_csv(ROOT / "sample_data" / f"{name}.csv")
    options = TableOptions(target=target, drop_missing_target=True)
    prepared = prepare(table_to_dataset(raw, f"{name}.csv", options), PrepConfig())
    return raw.dropna(subset=[target]).reset_index(drop=True), prepared


@pytest.fixture(scope="module")
def tables():
    """name -> (the raw rows, prepared data): two uploads with text columns and gaps, and iris as
    the built-in arrays (its columns are its features)."""
    iris = load_dataset("iris")
    return {"penguins": _table("penguins", "species"), "cars": _table("cars", "Miles_per_Gallon"),
            "iris": (pd.DataFrame(iris.X, columns=list(iris.feature_names)), prepare(iris, PrepConfig()))}


def raw_feed(session, rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """The graph's inputs straight from the table: each input is the column of that name."""
    feed = {}
    for spec in session.get_inputs():
        values = rows[spec.name]
        if spec.type == "tensor(string)":
            feed[spec.name] = np.asarray(values.astype(str).where(values.notna(), ""), dtype=object)
        else:
            feed[spec.name] = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return feed


TAO = {"depth": 3, "max_iter": 4}
DGT = {"depth": 3, "max_epochs": 10, "min_steps": 0, "batch_size": 64, "learning_rate": 0.05}
SKINNY = {"n_trees": 3, "depth": 2, "max_epochs": 4, "batch_size": 32, "learning_rate": 0.2, "lambda0": 1.0}
LATENT = {"depth": 2, "max_epochs": 5, "learning_rate": 0.05, "batch_size": 32}
FOREST = {"n_trees": 3, "n_jobs": 1}
#: (id, family, parameters, extra parameters by task, None: not for that task): each runs on penguins and iris
#: (classification) and cars (regression)
FAMILIES = [
    ("cart", "cart", {"max_depth": 4}, {}),
    ("tao-constant", "tao", TAO, {}),
    ("tao-linear", "tao", {**TAO, "leaf": "linear"}, {}),
    ("tao-softmax", "tao", {**TAO, "leaf": "softmax", "leaf_classes": 2}, {"regression": None}),  # classes only
    ("tao-forest", "tao_forest", {**FOREST, **TAO}, {}),
    ("dgt", "dgt", DGT, {}),
    ("dgt-forest", "dgt_forest", {**FOREST, **DGT}, {}),
    ("skinny", "skinny", SKINNY, {}),
    ("latent", "latent", LATENT, {}),
]
CASES = [(fid, key, params, {**params, **extra.get(task, {})}, table, task)
         for fid, key, params, extra in FAMILIES
         for table, task in (("penguins", "classification"), ("iris", "classification"), ("cars", "regression"))
         if extra.get(task, {}) is not None]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[4]}" for c in CASES])
def test_the_onnx_model_fed_raw_columns_predicts_as_treeviz(case, tables):
    _, key, _, params, table, task = case
    rows, prepared = tables[table]
    estimator = get_family(key).estimator_class(task)(**params)
    estimator.fit(prepared.X_train, prepared.labels("train"))
    pipe = Pipeline.from_prepared(prepared, estimator)
    session = ort.InferenceSession(tv.export_onnx(pipe), providers=["CPUExecutionProvider"])
    assert sorted(i.name for i in session.get_inputs()) == sorted(c.name for c in pipe.preprocessing.columns)
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, raw_feed(session, rows))))
    if task == "classification":
        assert (outputs["label"] == pipe.predict(rows)).all()
        np.testing.assert_allclose(outputs["probabilities"], pipe.predict_proba(rows), rtol=0, atol=ATOL)
    else:
        np.testing.assert_allclose(outputs["prediction"], pipe.predict(rows), rtol=0, atol=ATOL)
    assert len(rows) > 100


def test_gaps_and_unknown_levels_go_where_treeviz_sends_them(tables):
    rows, prepared = tables["penguins"]
    model = tv.TAOClassifier(depth=3, max_iter=4).fit(prepared.X_train, prepared.labels("train"))
    pipe = Pipeline.from_prepared(prepared, model)
    odd = rows.head(40).copy()
    odd.loc[::2, "bill_length_mm"] = np.nan  # gaps where training had some
    odd.loc[::3, "year"] = np.nan  # and where it had none: the training median too
    odd.loc[::4, "island"] = "Atlantis"  # a level training never saw: every indicator 0
    odd.loc[1::4, "sex"] = None  # the (missing) level
    session = ort.InferenceSession(tv.export_onnx(pipe))
    label, proba = session.run(None, onnx_feed(odd, pipe))
    with pytest.warns(UserWarning, match="Atlantis"):
        expected = pipe.predict_proba(odd)
    np.testing.assert_allclose(proba, expected, rtol=0, atol=ATOL)
    assert (label == model.classes_[np.argmax(expected, axis=1)]).all()


def test_refusals_are_sentences(tables):
    _, prepared = tables["penguins"]
    model = tv.CARTClassifier(max_depth=2).fit(prepared.X_train, prepared.labels("train"))
    quantile = prepare(prepared.dataset, PrepConfig(scaling="quantile"))
    with pytest.raises(TreevizError, match=r"quantile transform.*Retrain with standard or no scaling"):
        tv.export_onnx(model, prepared=quantile)
    weather = prepare(load_dataset("seattle_weather"), PrepConfig())
    dated = tv.CARTClassifier(max_depth=2).fit(weather.X_train, weather.labels("train"))
    with pytest.raises(TreevizError, match=r"'date'.*hold dates"):
        tv.export_onnx(dated, prepared=weather)
    with pytest.raises(TreevizError, match="not fitted"):
        tv.export_onnx(tv.CARTClassifier())


def test_a_model_alone_takes_its_features_and_the_file_is_written(tables, tmp_path):
    _, prepared = tables["iris"]
    model = tv.CARTClassifier(max_depth=3).fit(prepared.X_train, prepared.labels("train"))
    blob = tv.export_onnx(model, tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx").read_bytes() == blob
    session = ort.InferenceSession(blob)
    assert [i.name for i in session.get_inputs()] == ["X"]
    assert (session.run(["label"], {"X": prepared.X_test})[0] == model.predict(prepared.X_test)).all()
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["treeviz.classes"]) == ["setosa", "versicolor", "virginica"]


def test_an_output_named_like_a_column_is_renamed():
    df = pd.DataFrame({"label": np.r_[np.zeros(30), np.ones(30)] + np.linspace(0, .5, 60), "y": [0] * 30 + [1] * 30})
    prepared = prepare(table_to_dataset(df, "t.csv", TableOptions(target="y")), PrepConfig())
    model = tv.CARTClassifier(max_depth=1).fit(prepared.X_train, prepared.labels("train"))
    session = ort.InferenceSession(tv.export_onnx(model, prepared=prepared))
    assert [o.name for o in session.get_outputs()] == ["label_out", "probabilities"]
    assert [i.name for i in session.get_inputs()] == ["label"]


def test_treeviz_export_onnx_writes_the_runs_graph(home, tmp_path, capsys):
    rows, prepared = _table("penguins", "species")
    record = train_run("cart", "classification", {"max_depth": 3}, prepared, store=RunStore(home))
    out = tmp_path / "run.onnx"
    assert main(["export", record.run_id, "--onnx", "--out", str(out)]) == 0
    assert "wrote the ONNX model" in capsys.readouterr().err
    session = ort.InferenceSession(out.read_bytes())
    label = session.run(["label"], raw_feed(session, rows))[0]
    model = tv.load_model(RunStore(home).runs_dir / record.run_id)
    assert (label == model.predict(rows)).all()
