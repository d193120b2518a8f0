"""The sidebar every page shares: current dataset, run selector, device."""

from __future__ import annotations

import streamlit as st

from models.devices import available_devices
from treeviz.services.experiments.training import run_warnings
from treeviz.services.store.memo import per_record
from treeviz.services.store.record import RunRecord
from treeviz.ui import state
from treeviz.ui.labels import headline_text
from treeviz.ui.text import md


@per_record  # the sidebar labels every stored run at every rerun
def run_label(rec: RunRecord) -> str:
    """One line naming a run: its name, status and headline metric."""
    metric = headline_text(rec)
    status = "" if rec.status == "finished" else f" [{rec.status}]"
    status += " [warning]" if run_warnings(rec) else ""
    return f"{rec.name}{status}" + (f" · {metric}" if metric else "")


def render() -> None:
    """Draw the shared sidebar (called by app.py before the page runs)."""
    with st.sidebar:
        ds = state.current_dataset()
        st.markdown(f"**Dataset:** {md(ds.name)}  \n{ds.task}, {ds.n_samples} rows × {ds.n_features} features")
        store = state.store()
        runs = store.list()
        if store.problems:
            st.caption(f"{len(store.problems)} damaged or unfinished run folder(s) left out; the Runs page "
                       "says which and why.")
        if runs:
            ids = [r.run_id for r in runs]
            labels = {r.run_id: run_label(r) for r in runs}
            pending = st.session_state.pop(state.NEXT_RUN_ID, None)
            if pending in labels:
                st.session_state[state.RUN_ID] = pending
            if st.session_state.get(state.RUN_ID) not in labels:
                st.session_state[state.RUN_ID] = ids[0]
            st.selectbox("Run", ids, key=state.RUN_ID, format_func=labels.get,
                         help="The trained model the Tree explorer and Routing pages show.")
            chosen = next(r for r in runs if r.run_id == st.session_state[state.RUN_ID])
            for warning in run_warnings(chosen):
                st.warning(md(warning))  # every page showing this run shows that its fit went wrong
        else:
            st.caption("No runs yet: train one on the Train page.")
        devices = available_devices()
        if st.session_state.get(state.DEVICE) not in devices:
            st.session_state[state.DEVICE] = "auto"
        st.selectbox("Device", devices, key=state.DEVICE,
                     help="Where torch families train: 'auto' uses a CUDA GPU when one is present.")
