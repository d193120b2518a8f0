"""Predict: a stored run's predictions for the rows of an uploaded table (no label needed), as CSV.

The page is thin: reading, encoding, preprocessing and predicting are :mod:`treeviz.services.views.predict`,
the service ``treeviz predict`` uses too, so the page and the command line give the same numbers.
"""

import math

import streamlit as st

from treeviz.services.data import max_upload_mb, read_table
from treeviz.services.data.upload import ENCODINGS
from treeviz.services.views.predict import (
    ROW_COLUMN,
    default_id_column,
    offers_proba,
    output_kind,
    predict_table,
    predictions_csv,
)
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.labels import family_name
from treeviz.ui.sidebar import run_label
from treeviz.ui.text import md

NO_ID = f"(none: number the rows 1, 2, …, in a '{ROW_COLUMN}' column)"
PREVIEW_ROWS = 200
OUTPUTS = {
    "prediction": "one prediction per row",
    "cluster": "the cluster (leaf) each row falls in, in a 'cluster' column",
    "embedding": "the row's coordinates in the run's embedding (columns z0, z1, …): an embedding run maps rows, "
                 "it does not predict a label",
}

st.title("Predict")
store = state.store()
runs = store.list()
if not runs:
    st.info("No runs yet. Train a model on the Train page; then upload rows here to predict them.")
    st.stop()

# ------------------------------------------------------------------ the run
labels = {r.run_id: f"{run_label(r)} · {family_name(r.family)}" for r in runs}
ids = [r.run_id for r in runs]
current = state.current_run_id()
if st.session_state.get("predict.run") not in labels:  # a new tab, or the chosen run was deleted
    st.session_state["predict.run"] = current if current in labels else ids[0]
run_id = st.selectbox("Run", ids, key="predict.run", format_func=labels.get,
                      help="The trained model that predicts the rows (the sidebar's run unless you pick another).")
record = next(r for r in runs if r.run_id == run_id)
model = prepared = None
with user_errors("loading the run"):
    model, prepared = state.run_model(run_id), state.run_prepared(run_id)
if model is None or prepared is None:
    st.stop()
dataset = prepared.dataset
kind = output_kind(model)
target = f" The label column ({md(repr(dataset.target_name))}) may be left out." if dataset.target_name else ""
st.caption(f"Trained on {md(dataset.name)}: {dataset.n_features} features. The table needs the columns of that data, "
           f"laid out as when it was uploaded (or the feature names as columns); others are ignored.{target} "
           f"The rows are preprocessed as in training. Output: {OUTPUTS[kind]}.")
if kind == "embedding":
    st.info(f"{md(record.name)} is an embedding run: it does not predict. The download holds each row's 2-D "
            "coordinates from its transform (z0, z1) instead.")

# ------------------------------------------------------------------ the table
st.caption(f"CSV, TSV or Parquet, up to {max_upload_mb():g} MB, one row per sample.")
upload = st.file_uploader("Rows to predict", key="predict.upload",
                          max_upload_size=math.ceil(max_upload_mb()))  # the widget states this limit
encoding = st.selectbox("Text encoding", ENCODINGS, key="predict.encoding",
                        help="'auto' reads UTF-8 (with or without BOM) and UTF-16 with a BOM.")
if upload is None:
    st.info("Upload a table of rows to predict (the label column is not needed).")
    st.stop()

df = None
with user_errors("reading the table"):
    cache_key = (upload.file_id, encoding)
    if st.session_state.get("predict.table_key") != cache_key:  # parse once per file, not on every rerun
        st.session_state["predict.table"] = read_table(upload.name, upload.getvalue(), encoding=encoding)
        st.session_state["predict.table_key"] = cache_key
    df = st.session_state["predict.table"]
if df is None:
    st.stop()

columns = [str(c) for c in df.columns]
choices = [NO_ID, *columns]
if st.session_state.get("predict.id_file") != upload.file_id or st.session_state.get("predict.id") not in choices:
    st.session_state["predict.id_file"] = upload.file_id
    st.session_state["predict.id"] = default_id_column(columns) or NO_ID
id_column = st.selectbox("Id column", choices, key="predict.id",
                         help="Copied to the output beside each prediction, so the rows can be matched back.")
proba = offers_proba(model) and st.checkbox("Class probabilities", value=True, key="predict.proba",
                                            help="One column per class: the probability the model gives it.")

with user_errors("predicting the rows"):
    result = predict_table(df, model, prepared, keep=[] if id_column == NO_ID else [id_column],
                           row_numbers=id_column == NO_ID, proba=proba, name=upload.name,
                           what=f"run '{record.name}'")
    for text in result.notes:
        st.caption(md(text))
    frame = result.frame
    st.success(f"{len(frame):,} row(s) predicted by {md(record.name)}.")
    st.dataframe(frame.head(PREVIEW_ROWS), hide_index=True)
    if len(frame) > PREVIEW_ROWS:
        st.caption(f"The first {PREVIEW_ROWS} of {len(frame):,} rows; the download holds them all.")
    stem = upload.name.rsplit(".", 1)[0] or "rows"
    st.download_button("Download the predictions (CSV)", predictions_csv(frame), file_name=f"{stem}_predictions.csv",
                       mime="text/csv", key="predict.download", on_click="ignore")
