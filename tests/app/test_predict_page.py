"""The Predict page: upload rows without labels, pick a run and an id column, preview and download the
predictions (with class probabilities), through the same service as ``treeviz predict``."""

import io

import numpy as np
import pandas as pd
import pytest

from models.registry import get_family
from tests.app.conftest import assert_clean, new_app, open_page, texts
from treeviz.cli.main import main
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


def make_run(home, key="iris", family="cart", task=None, params=None, name=None):
    prepared = prepare(load_dataset(key), PrepConfig(scaling="standard"))
    return train_run(family, task or prepared.dataset.task, params or {"max_depth": 3}, prepared,
                     store=RunStore(home), name=name)


def iris_csv(with_id: bool = True, n: int = 10) -> bytes:
    dataset = load_dataset("iris")
    frame = pd.DataFrame(dataset.X[:n], columns=list(dataset.feature_names))
    if with_id:
        frame.insert(0, "ID", [f"s{i}" for i in range(n)])
    return frame.to_csv(index=False).encode()


def predict_page(rows: bytes | None = None, name: str = "rows.csv"):
    at = open_page(new_app().run(), "predict")
    if rows is not None:
        at.file_uploader(key="predict.upload").set_value((name, rows, "text/csv")).run()
    return at


def preview(at) -> pd.DataFrame:
    return at.dataframe[0].value


def test_without_runs_the_page_says_to_train_one(home):
    at = predict_page()
    assert_clean(at)
    assert any("No runs yet" in i for i in texts(at.info))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_upload_rows_with_an_id_and_see_predictions_and_probabilities(home):
    record = make_run(home)
    at = predict_page()
    assert_clean(at)
    assert at.selectbox(key="predict.run").value == record.run_id
    assert any("Upload a table" in i for i in texts(at.info))
    at.file_uploader(key="predict.upload").set_value(("rows.csv", iris_csv(), "text/csv")).run()
    assert_clean(at)
    assert at.selectbox(key="predict.id").value == "ID"  # taken without asking: it is named like an id
    store = RunStore(home)
    model, prepared = store.load_model(record.run_id), store.load_prepared(record.run_id)
    table = preview(at)
    classes = [str(c) for c in model.classes_]
    assert list(table.columns) == ["ID", "prediction", *[f"proba_{c}" for c in classes]]
    assert table["ID"].tolist() == [f"s{i}" for i in range(10)]
    expected = model.predict(prepared.transform(prepared.dataset.X[:10]))
    assert (table["prediction"].to_numpy() == expected).all()
    np.testing.assert_allclose(table[[f"proba_{c}" for c in classes]].sum(axis=1), 1.0)
    assert any("10 row(s) predicted" in s for s in texts(at.success))
    assert at.get("download_button")
    # without probabilities
    at.checkbox(key="predict.proba").uncheck().run()
    assert list(preview(at).columns) == ["ID", "prediction"]


def test_without_an_id_column_rows_are_numbered_and_any_column_can_be_the_id(home):
    make_run(home)
    at = predict_page(iris_csv(with_id=False, n=5))
    assert_clean(at)
    assert preview(at)["row"].tolist() == [1, 2, 3, 4, 5]
    first = load_dataset("iris").feature_names[0]
    at.selectbox(key="predict.id").set_value(first).run()
    assert_clean(at)
    assert list(preview(at).columns)[:2] == [first, "prediction"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_run_defaults_to_the_sidebars_run_and_can_be_changed(home):
    first = make_run(home, name="first")
    second = make_run(home, key="wine", name="second")
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(first.run_id).run()
    at = open_page(at, "predict")
    assert at.selectbox(key="predict.run").value == first.run_id
    at.selectbox(key="predict.run").set_value(second.run_id).run()
    at.file_uploader(key="predict.upload").set_value(("rows.csv", iris_csv(), "text/csv")).run()
    # iris rows lack wine's features: a sentence, not a traceback, and the page goes on
    assert not at.exception
    assert at.error and "Traceback" not in at.error[0].value
    assert not at.dataframe


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_file_that_is_not_a_table_is_refused_with_a_sentence(home):
    make_run(home)
    at = predict_page(b"\x00\x01\x02 binary", name="rows.csv")
    assert not at.exception
    assert at.error and "Traceback" not in at.error[0].value


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_download_is_the_same_csv_as_the_command_line(home, tmp_path, capsys):
    record = make_run(home)
    at = predict_page(iris_csv())
    rows = tmp_path / "rows.csv"
    rows.write_bytes(iris_csv())
    assert main(["predict", record.run_id, str(rows), "--proba", "--keep", "ID", "-q"]) == 0  # TREEVIZ_HOME: home
    from_cli = pd.read_csv(io.StringIO(capsys.readouterr().out))
    pd.testing.assert_frame_equal(preview(at).reset_index(drop=True), from_cli, check_dtype=False)


@pytest.mark.slow  # an embedding fit takes seconds: the full tier runs it
def test_an_embedding_run_says_it_does_not_predict_and_gives_coordinates(home):
    make_run(home, family="tree_embedding", task="embedding", params=get_family("tree_embedding").test_params)
    at = predict_page(iris_csv())
    assert_clean(at)
    assert any("does not predict" in i for i in texts(at.info))
    assert list(preview(at).columns) == ["ID", "z0", "z1"]
    assert not [c for c in at.checkbox if c.key == "predict.proba"]


def test_the_upload_widgets_state_the_apps_own_limit(home, monkeypatch):
    """With TREEVIZ_MAX_UPLOAD_MB set, the Data and Predict pages' upload widgets take that limit
    (not only their captions): the browser's widget then says the same number."""
    monkeypatch.setenv("TREEVIZ_MAX_UPLOAD_MB", "7")
    train_run("cart", "classification", {"max_depth": 2}, prepare(load_dataset("iris"), PrepConfig(seed=0)),
              store=RunStore(home))  # the Predict page asks for a file once there is a run
    for page in ("data", "predict"):
        at = open_page(new_app().run(), page)
        if page == "data":
            at.radio(key="data.source").set_value("Upload a file").run()
        limits = [u.proto.max_upload_size_mb for u in at.get("file_uploader")]
        assert limits == [7], (page, limits)
