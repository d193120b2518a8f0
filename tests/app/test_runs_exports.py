"""The Runs page hands out the run's model file (the model with its preprocessing) and, on request, its
ONNX model, which onnxruntime runs on the table's raw columns as treeviz predicts."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.app.conftest import assert_clean, new_app, open_page
from treeviz.services.data import PrepConfig, TableOptions, prepare, read_table, table_to_dataset
from treeviz.services.data.pipeline import load_model
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import model_file
from treeviz.services.store.runs import RunStore

ort = pytest.importorskip("onnxruntime")
PENGUINS = Path(__file__).resolve().parents[2] / "sample_data" / "penguins.csv"


def test_the_onnx_popover_builds_a_graph_fed_raw_columns(home, downloads):
    df = read_table(PENGUINS.name, PENGUINS.read_bytes())
    prepared = prepare(table_to_dataset(df, PENGUINS.name, TableOptions(target="species")), PrepConfig())
    record = train_run("tao", "classification", {"depth": 2, "max_iter": 3}, prepared, store=RunStore(home),
                       name="penguin tree")
    at = open_page(new_app().run(), "runs")
    assert_clean(at)
    assert not [b for b in at.get("download_button") if b.proto.label == "Download ONNX (.onnx)"]
    at.button(key="runs.onnx_build").click().run()
    assert_clean(at)
    blob = downloads["penguin-tree.onnx"]
    session = ort.InferenceSession(blob)
    rows = pd.read_csv(PENGUINS)
    feed = {i.name: (np.asarray(rows[i.name].astype(str).where(rows[i.name].notna(), ""), dtype=object)
                     if i.type == "tensor(string)" else rows[i.name].to_numpy(dtype=np.float64))
            for i in session.get_inputs()}
    pipe = load_model(model_file(RunStore(home), record.run_id))
    assert (session.run(["label"], feed)[0] == pipe.predict(rows)).all()
    assert len(blob) > 1000
