"""Runs page: every trained model on disk; open, rename, delete, export and import."""

import pandas as pd
import streamlit as st

from treeviz.plots import training_curves
from treeviz.plots.export import export_name
from treeviz.services.data.preprocess import describe_prep
from treeviz.services.store.archive import export_zip, import_zip, model_file, run_onnx
from treeviz.ui import pages, state
from treeviz.ui.cells import NONE, readable, value_text
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.labels import curve_layout
from treeviz.ui.records import plot_records
from treeviz.ui.report import run_report
from treeviz.ui.run_tables import run_rows
from treeviz.ui.text import md

st.title("Runs")
state.show_flash()  # "Renamed ...", "Deleted ...", "Imported ..." after the rerun that redraws the sidebar
store = state.store()
st.caption(f"Runs are kept in {md(store.root)} (set TREEVIZ_HOME to use another folder). This app has no "
           "accounts: everyone who can open it sees, exports and deletes every run and data set stored here.")

# keyed, so the browser keeps the panel open across reruns: without a key it was redrawn closed whenever
# the elements above it changed (the "Imported ..." message of the previous import, then none), and choosing
# a second zip hid the panel and its Import button
with st.expander("Import a run (.zip exported from treeviz)", key="runs.import_panel"):
    upload = st.file_uploader("Run archive", type=["zip"], key="runs.import")
    if upload is not None and st.button("Import", key="runs.import_go"):
        with user_errors("importing the run"):
            record = import_zip(store, upload.getvalue())
            state.select_run_next(record.run_id)
            st.session_state[state.FLASH] = f"Imported '{record.name}'."
            st.rerun()  # the sidebar, drawn before this page, lists the new run

runs = store.list()
for problem in store.problems:
    st.warning(md(problem))
if not runs:
    st.info("No runs yet. Train a model on the Train page; it is saved here automatically.")
    st.stop()

table = readable(pd.DataFrame(run_rows(runs)))
st.dataframe(table, hide_index=True)

ids = [r.run_id for r in runs]
by_id = {r.run_id: r for r in runs}
chosen = state.current_run_id()
run_id = st.selectbox("Run", ids, index=ids.index(chosen) if chosen in ids else 0,
                      format_func=lambda i: by_id[i].name, key="runs.chosen")
rec = by_id[run_id]


def open_in_explorer() -> None:
    state.select_run(run_id)


c1, c2, c3, c4, c5 = st.columns(5)
if c1.button("Open in Tree explorer", key="runs.open", on_click=open_in_explorer):
    pages.switch_to("explorer")
c4.download_button(
    "Download report (.html)",
    data=lambda: run_report(store, run_id),
    file_name=f"{export_name(rec.name, 'report')}.html",
    mime="text/html",
    key="runs.report",
    on_click="ignore",
    help="One HTML file that opens offline: data, preparation, parameters, metrics, curves, the tree, its "
         "weights, routing, features, λ path and rules.",
)
c2.download_button(
    "Download run (.zip)",
    data=lambda: export_zip(store, run_id),
    file_name=f"{export_name(rec.name)}.zip",
    mime="application/zip",
    key="runs.download",
    on_click="ignore",  # like every download: a rerun beside the deferred file could lose the download
    help="Model (config.json + weights.safetensors), run record, history and its data set.",
)
c3.download_button(
    "Download model (.zip)",
    data=lambda: model_file(store, run_id),
    file_name=f"{export_name(rec.name, 'model')}.zip",
    mime="application/zip",
    key="runs.model",
    on_click="ignore",
    help="The model with its preprocessing (JSON + safetensors, no pickle): treeviz.load_model(path).predict(df) "
         "takes a table with the uploaded file's own columns, on any machine, without this app's run store.",
)
with c4.popover("ONNX"):
    st.caption("An ONNX model with the preprocessing inside: one input per column of the table (numbers as "
               "doubles, text as strings, an empty cell as NaN or ''), served by onnxruntime without treeviz.")
    if st.button("Build the ONNX model", key="runs.onnx_build"):
        with user_errors("exporting the run to ONNX"):
            st.session_state["runs.onnx"] = (run_id, run_onnx(store, run_id))
    built = st.session_state.get("runs.onnx")
    if built is not None and built[0] == run_id:
        st.download_button("Download ONNX (.onnx)", built[1], file_name=f"{export_name(rec.name)}.onnx",
                           mime="application/octet-stream", key="runs.onnx_download", on_click="ignore")
with c5.popover("Rename or delete"):
    new_name = st.text_input("New name", value=rec.name, key=f"runs.name.{run_id}")
    if st.button("Rename", key="runs.rename"):
        with user_errors("renaming the run"):
            renamed = store.rename(run_id, new_name)
            st.session_state[state.FLASH] = f"Renamed '{rec.name}' to '{renamed.name}'."
            st.rerun()  # the sidebar, drawn before this page, shows the new name
    confirm = st.checkbox("Yes, delete this run for good", key=f"runs.confirm.{run_id}")
    if st.button("Delete", key="runs.delete", disabled=not confirm):
        with user_errors("deleting the run"):
            store.delete(run_id)
            st.session_state[state.FLASH] = f"Deleted '{rec.name}'."
            st.rerun()  # the sidebar, drawn before this page, drops the run

left, right = st.columns(2)
with left:
    st.markdown(f"**Preparation:** {md(describe_prep(rec.prep))}")
    st.markdown("**Parameters:** " + md(" · ".join(f"{k}: {value_text(v)}" for k, v in rec.params.items())
                                         or NONE))
    st.markdown("**Metrics**")
    st.dataframe(pd.DataFrame({"metric": list(rec.metrics),
                               "value": [value_text(v) for v in rec.metrics.values()]}), hide_index=True)
    st.caption(f"Dataset {md(rec.dataset_name)} (fingerprint {rec.dataset_fingerprint}).")
    for note in rec.notes:
        st.info(md(note))
with right, user_errors("reading the training history"):
    # thinned like the Train page's chart: a stream that recorded every round stays quick to draw
    show_figure(training_curves(plot_records(store.history(run_id)), **curve_layout(rec.family)),
                key="runs.curves", name=(rec.name, "curves"))
