"""The predict service: the rows of a new table encoded, preprocessed and predicted as the run was
trained, with the rows' id and class probabilities; the command line and the Predict page share it."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models.ground.errors import TreevizError
from models.registry import get_family
from treeviz.services.data import PrepConfig, TableOptions, load_dataset, prepare, read_table, table_to_dataset
from treeviz.services.experiments.training import train_run
from treeviz.services.views.predict import (
    ROW_COLUMN,
    default_id_column,
    offers_proba,
    output_kind,
    predict_table,
    predictions_csv,
    spreadsheet_safe,
)

PENGUINS = Path(__file__).resolve().parents[2] / "sample_data" / "penguins.csv"


@pytest.fixture(scope="module")
def iris_cart():
    prepared = prepare(load_dataset("iris"), PrepConfig(scaling="standard"))
    model, _ = train_run("cart", "classification", {"max_depth": 3}, prepared)
    return model, prepared


def iris_rows(prepared, n=None):
    return pd.DataFrame(prepared.dataset.X[:n], columns=list(prepared.dataset.feature_names))


@pytest.mark.parametrize("columns, expected", [
    (["x", "id", "y"], "id"), (["ID", "x"], "ID"), (["x", "row_id"], "row_id"), (["Row ID", "x"], "Row ID"),
    (["x", "patient_id"], "patient_id"), (["x", "sample-id"], "sample-id"), (["x", "idea", "valid"], None),
    ([], None), (["x", "customer_id", "id"], "id"),
])
def test_the_default_id_column_is_one_named_like_an_id(columns, expected):
    assert default_id_column(columns) == expected


def test_a_classifier_predicts_like_the_run_with_probabilities_and_row_numbers(iris_cart):
    model, prepared = iris_cart
    result = predict_table(iris_rows(prepared), model, prepared, row_numbers=True, proba=True)
    frame = result.frame
    classes = [str(c) for c in model.classes_]
    assert list(frame.columns) == [ROW_COLUMN, "prediction", *[f"proba_{c}" for c in classes]]
    assert frame[ROW_COLUMN].tolist() == list(range(1, len(frame) + 1))
    expected = model.predict(prepared.transform(prepared.dataset.X))
    assert (frame["prediction"].to_numpy() == expected).all()
    np.testing.assert_allclose(frame[[f"proba_{c}" for c in classes]].sum(axis=1), 1.0)
    assert result.output == "prediction" and offers_proba(model)
    assert result.outputs == ("prediction", *[f"proba_{c}" for c in classes])


def test_the_id_column_is_kept_in_front_and_other_columns_are_ignored_with_a_note(iris_cart):
    model, prepared = iris_cart
    rows = iris_rows(prepared, 4)
    rows.insert(0, "id", ["a", "b", "c", "d"])
    rows["comment"] = "x"
    result = predict_table(rows, model, prepared, keep=["id"], name="new.csv")
    assert list(result.frame.columns) == ["id", "prediction"]
    assert result.frame["id"].tolist() == ["a", "b", "c", "d"]
    assert any("comment" in n for n in result.notes)
    assert not any("'id'" in n for n in result.notes)  # kept, so not "ignored"


def test_a_table_missing_a_feature_or_the_kept_column_is_refused_with_a_sentence(iris_cart):
    model, prepared = iris_cart
    rows = iris_rows(prepared, 3)
    with pytest.raises(TreevizError, match="no column 'id' to keep"):
        predict_table(rows, model, prepared, keep=["id"], name="new.csv")
    with pytest.raises(TreevizError) as err:
        predict_table(rows.drop(columns=rows.columns[0]), model, prepared, name="new.csv")
    assert rows.columns[0] in str(err.value)


def test_raw_upload_rows_are_encoded_and_preprocessed_as_in_training():
    df = read_table(PENGUINS.name, PENGUINS.read_bytes())
    dataset = table_to_dataset(df, PENGUINS.name, TableOptions(target="species"))
    prepared = prepare(dataset, PrepConfig(scaling="standard"))
    model, _ = train_run("cart", "classification", {"max_depth": 3}, prepared)
    result = predict_table(df.drop(columns="species"), model, prepared, proba=True)
    expected = model.predict(prepared.transform(prepared.dataset.X))
    assert (result.frame["prediction"].to_numpy() == expected).all()


def test_a_regressor_predicts_without_probabilities_and_refuses_them():
    prepared = prepare(load_dataset("diabetes"), PrepConfig())
    model, _ = train_run("cart", "regression", {"max_depth": 2}, prepared)
    assert not offers_proba(model) and output_kind(model) == "prediction"
    frame = predict_table(iris_rows(prepared, 5), model, prepared).frame
    np.testing.assert_allclose(frame["prediction"], model.predict(prepared.transform(prepared.dataset.X[:5])))
    with pytest.raises(TreevizError, match="Class probabilities need a classifier"):
        predict_table(iris_rows(prepared, 5), model, prepared, proba=True)


def test_a_plain_model_without_preprocessing_takes_the_rows_as_they_are_with_a_note(iris_cart):
    model, prepared = iris_cart
    scaled = pd.DataFrame(prepared.X_test, columns=list(prepared.dataset.feature_names))
    result = predict_table(scaled, model, None, what="model m.zip")
    assert (result.frame["prediction"].to_numpy() == model.predict(prepared.X_test)).all()
    assert any("model m.zip carries no preprocessing" in n for n in result.notes)


@pytest.mark.slow  # an embedding fit takes seconds: the full tier runs it
def test_an_embedding_run_gives_its_coordinates():
    prepared = prepare(load_dataset("iris"), PrepConfig())
    model, _ = train_run("tree_embedding", "embedding", get_family("tree_embedding").test_params, prepared)
    result = predict_table(iris_rows(prepared, 6), model, prepared, row_numbers=True)
    assert result.output == "embedding" and list(result.frame.columns) == [ROW_COLUMN, "z0", "z1"]
    np.testing.assert_allclose(result.frame[["z0", "z1"]], model.transform(prepared.transform(prepared.dataset.X[:6])))


@pytest.mark.slow  # a latent-tree fit takes seconds: the full tier runs it
def test_a_clustering_run_gives_the_cluster_of_each_row():
    prepared = prepare(load_dataset("iris"), PrepConfig())
    model, _ = train_run("latent", "clustering", get_family("latent").test_params, prepared)
    result = predict_table(iris_rows(prepared, 6), model, prepared)
    assert result.output == "cluster" and list(result.frame.columns) == ["cluster"]
    assert (result.frame["cluster"].to_numpy() == model.predict(prepared.transform(prepared.dataset.X[:6]))).all()


def test_the_csv_escapes_cells_a_spreadsheet_would_run_as_formulas():
    frame = pd.DataFrame({"id": ["=cmd", "ok"], "prediction": [-1.5, 2.0]})
    text = predictions_csv(frame)
    assert text.splitlines() == ["id,prediction", "'=cmd,-1.5", "ok,2.0"]
    assert spreadsheet_safe(frame)["prediction"].tolist() == [-1.5, 2.0]
