"""Data page: choose a sample, upload a file, or reopen a saved dataset; set preprocessing."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from models.ground.errors import TreevizError
from treeviz.plots import class_balance_figure, sample_images_figure, target_histogram
from treeviz.services.data import (
    PrepConfig,
    TableOptions,
    inspect_table,
    list_datasets,
    max_upload_mb,
    read_table,
    suggest_target,
    table_to_dataset,
)
from treeviz.services.data.preprocess import MISSING_VALUE_POLICY, SCALINGS
from treeviz.services.data.split_check import class_counts_by_split, split_warnings
from treeviz.services.data.upload import ENCODINGS
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.text import md

SOURCES = ("Sample dataset", "Upload a file", "Saved dataset")
STICKY_TARGET = "data.sticky_target"  # the target column chosen for the last uploaded file
#: The sample chosen last: the sample picker's own key is dropped while an upload or a saved data set is
#: shown, and coming back to "Sample dataset" returns to this sample, not to the first of the list.
LAST_SAMPLE = "data.last_sample"
NO_TARGET = "(none: clustering)"

st.title("Data")
state.show_flash()
current = state.current_dataset()
origin = "Sample dataset" if current.meta.get("catalogue_key") else "Saved dataset"
source = st.radio("Source", SOURCES, index=SOURCES.index(origin), horizontal=True, key="data.source")


def sample_picker() -> None:
    entries = list_datasets()
    keys = [e.key for e in entries]
    labels = {e.key: f"{e.label} · {e.task} ({e.group})" for e in entries}
    now = current.meta.get("catalogue_key") or st.session_state.get(LAST_SAMPLE)
    key = st.selectbox("Sample dataset", keys, index=keys.index(now) if now in keys else 0,
                       format_func=labels.get, key="data.sample")
    st.session_state[LAST_SAMPLE] = key
    entry = next(e for e in entries if e.key == key)
    st.caption(f"{entry.description} Source: {entry.source}. Licence: {entry.licence}.")
    with user_errors("loading the sample dataset"):
        ds = state.catalogue_dataset(key)
        if ds.fingerprint != current.fingerprint:
            state.set_dataset(ds)


def _table_for(upload, encoding: str) -> pd.DataFrame:
    """Parse an upload once per file and encoding (kept in session state, not re-read per rerun)."""
    cache_key = (upload.file_id, encoding)
    cached = st.session_state.get("data.table")
    if cached is None or cached[0] != cache_key:
        st.session_state.pop("data.table", None)
        df = read_table(upload.name, upload.getvalue(), encoding=encoding)
        st.session_state["data.table"] = (cache_key, df)
    return st.session_state["data.table"][1]


def _target_for(upload, df: pd.DataFrame) -> str | None:
    """The target to preselect for a file: the one used for the previous file if this file has
    that column (re-uploading a corrected file keeps its target), else a suggestion. When the
    previous target is missing, the library's sentence says so."""
    sticky = st.session_state.get(STICKY_TARGET)
    if st.session_state.get("data.target_file") != upload.file_id:  # a new file
        st.session_state["data.target_file"] = upload.file_id
        st.session_state.pop("data.target", None)  # new columns: reset the selectbox
        st.session_state.pop("data.target_note", None)
        if sticky is not None and sticky not in df.columns:
            try:
                table_to_dataset(df, upload.name, TableOptions(target=sticky))
            except TreevizError as err:
                st.session_state["data.target_note"] = (
                    f"{err} The target is now '{suggest_target(df)}'; change it below if needed."
                )
    note = st.session_state.get("data.target_note")
    if note:
        st.warning(md(note))
    if sticky is not None and sticky in df.columns:
        return sticky
    return suggest_target(df)


def upload_form() -> None:
    st.caption(
        f"CSV, TSV or Parquet, up to {max_upload_mb():g} MB. One row per sample, one column per "
        "feature; pick the target column below (none for clustering)."
    )
    upload = st.file_uploader("Data file", key="data.upload",
                              max_upload_size=math.ceil(max_upload_mb()))  # the widget states this limit
    encoding = st.selectbox("Text encoding", ENCODINGS, key="data.encoding",
                            help="'auto' reads UTF-8 (with or without BOM) and UTF-16 with BOM.")
    if upload is None:
        return
    with user_errors("reading the file"):
        df = _table_for(upload, encoding)
        columns = list(df.columns)
        suggested = _target_for(upload, df)
        options = [NO_TARGET, *columns]
        c1, c2, c3 = st.columns(3)
        target = c1.selectbox("Target column", options,
                              index=options.index(suggested) if suggested in options else 0,
                              key="data.target")
        st.session_state[STICKY_TARGET] = None if target == NO_TARGET else target
        task = c2.selectbox("Task", ("auto", "classification", "regression", "clustering"), key="data.task")
        image = c3.selectbox("Image data", ("auto", "yes", "no"), key="data.image",
                             help="Image data (an n×n pixel table) lets node weights be drawn as images.")
        drop = st.checkbox("Drop rows with a missing target", key="data.drop_missing",
                           help="Otherwise a missing target value stops the upload with a message.")
        opts = TableOptions(target=None if target == NO_TARGET else target, task=task,
                            drop_missing_target=drop, image=image)
        with st.expander(f"Columns of {md(upload.name)} ({len(df)} rows × {len(columns)} columns)"):
            st.dataframe(inspect_table(df, options=opts), hide_index=True)  # the conversion's own plan
        ds = table_to_dataset(df, upload.name, opts, source=f"upload: {upload.name}")
        if ds.fingerprint != current.fingerprint:
            state.store().store_dataset(ds)
            state.set_dataset(ds, f"Using {upload.name}: {ds.n_samples} rows, {ds.n_features} features, "
                                  f"{ds.task}.")


def saved_picker() -> None:
    with user_errors("listing saved datasets"):
        saved = state.store().list_datasets()
        if not saved:
            st.info("No saved datasets yet: uploaded files and the data of every run are kept here.")
            return
        fps = [s["fingerprint"] for s in saved]
        labels = {s["fingerprint"]: f"{s['name']} · {s['task']} · {s['n_samples']}×{s['n_features']}"
                  for s in saved}
        fp = st.selectbox("Saved dataset", fps, format_func=labels.get, key="data.saved",
                          index=fps.index(current.fingerprint) if current.fingerprint in fps else 0)
        if fp != current.fingerprint:
            state.set_dataset(state.store().load_dataset(fp))


{"Sample dataset": sample_picker, "Upload a file": upload_form, "Saved dataset": saved_picker}[source]()

# ------------------------------------------------------------------ preprocessing
ds = state.current_dataset()
prep = state.current_prep()
st.subheader("Preprocessing and split")
c1, c2, c3, c4 = st.columns(4)
scaling = c1.selectbox("Scaling", SCALINGS, index=SCALINGS.index(prep.scaling), key="data.scaling",
                       help="standard: z-score; quantile: z-score then a normal quantile transform. "
                            "Fitted on the training split only.")
test_size = c2.slider("Test fraction", 0.0, 0.5, prep.test_size, 0.05, key="data.test_size")
val_size = c3.slider("Validation fraction", 0.0, 0.4, prep.val_size, 0.05, key="data.val_size")
seed = c4.number_input("Split seed", 0, 2**31 - 1, prep.seed, step=1, key="data.seed")
with user_errors("setting the split"):
    new_prep = PrepConfig(scaling=scaling, test_size=float(test_size), val_size=float(val_size), seed=int(seed))
    if new_prep != prep:
        st.session_state[state.PREP] = new_prep
st.caption(MISSING_VALUE_POLICY)

# ------------------------------------------------------------------ the current dataset
st.subheader(f"Current dataset: {md(ds.name)} ({ds.task})")
with user_errors("preparing the dataset"):
    prepared = state.current_prepared()
    cols = st.columns(6)
    cols[0].metric("Rows", ds.n_samples)
    cols[1].metric("Features", ds.n_features)
    cols[2].metric("Classes", ds.n_classes if ds.class_names else "–",
                   help=None if ds.class_names else f"Target: {md(ds.target_name or 'none')}")
    cols[3].metric("Train rows", prepared.train_idx.size)
    cols[4].metric("Validation rows", prepared.val_idx.size)
    cols[5].metric("Test rows", prepared.test_idx.size)
    st.caption(f"Fingerprint {ds.fingerprint} · {md(ds.source or 'built in')}"
               + (f" · image {ds.image_shape[0]}×{ds.image_shape[1]}" if ds.image_shape else ""))
    for note in prepared.notes:
        st.info(md(note))
    for warning in split_warnings(prepared):  # what in this split makes scores meaningless
        st.warning(md(warning))
    counts = class_counts_by_split(prepared)
    if counts:
        with st.expander(f"Rows per class and split ({len(counts)} classes)"):
            st.dataframe(pd.DataFrame(counts), hide_index=True)
    left, right = st.columns(2)
    with left:
        if ds.class_names is not None and ds.y is not None:
            show_figure(class_balance_figure(np.bincount(ds.y, minlength=ds.n_classes), ds.class_names),
                        key="data.balance", name=(ds.name, "balance"))
        elif ds.y is not None:
            show_figure(target_histogram(ds.y, name=ds.target_name or "target"),
                        key="data.hist", name=(ds.name, "hist"))
    with right:
        if ds.image_shape is not None:
            labels = None if ds.y_labels is None else [str(v) for v in ds.y_labels[:12]]
            show_figure(sample_images_figure(ds.X[:12], ds.image_shape, labels),
                        key="data.images", name=(ds.name, "images"))
    preview = pd.DataFrame(ds.X[:100], columns=list(ds.feature_names))
    if ds.y is not None:
        preview.insert(0, ds.target_name or "target", ds.y_labels[:100])
    st.dataframe(preview, height=260)
