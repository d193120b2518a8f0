"""The run a view page shows (Clustering, Embeddings, Semi-supervised): the sidebar's run when its
family offers the page's view, else a sentence that says what to train, and the page stops."""

from __future__ import annotations

import streamlit as st

from models.ground.errors import TreevizError
from models.registry import families_offering
from treeviz.services.store.record import RunRecord
from treeviz.ui import state
from treeviz.ui.labels import family_name
from treeviz.ui.text import md


def offering(view: str, task: str | None = None, *, default: str) -> str:
    """The short names of the families offering ``view`` ("LapTAO or ..."), or ``default``."""
    return " or ".join(f.short_label for f in families_offering(view, task)) or default


def view_run(view: str, *, no_run: str, wrong_run: str, task: str | None = None) -> RunRecord:
    """The selected run, with its name, family and data set as a caption.

    Without a selected run the page shows ``no_run``; when the run's family does not offer
    ``view`` (or, with ``task``, the run is of another task) it shows ``wrong_run``, in which
    ``{task}`` stands for the run's task. Either way the page stops there.
    """
    run_id = state.current_run_id()
    if run_id is None:
        st.info(no_run)
        st.stop()
    try:
        record = state.store().get(run_id)
    except TreevizError as err:
        st.error(md(err))
        st.stop()
    st.caption(f"**{md(record.name)}** · {family_name(record.family)} · trained on {md(record.dataset_name)}")
    offered = any(f.key == record.family for f in families_offering(view))
    if not offered or (task is not None and record.task != task):
        st.info(wrong_run.format(task=record.task))
        st.stop()
    return record
