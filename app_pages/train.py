"""Train page: pick a family and its hyperparameters, train in the background, watch progress."""

import pandas as pd
import streamlit as st

from models.ground.errors import TreevizError
from models.registry import families_for_task, get_family
from models.schema import ANY_DATA_TASKS
from treeviz.plots import training_curves
from treeviz.services.data.split_check import class_counts_by_split, split_warnings
from treeviz.services.experiments.estimate import long_training_warning
from treeviz.services.experiments.training import job_fn, run_warnings
from treeviz.services.jobs.manager import ACTIVE_STATUSES
from treeviz.ui import pages, state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.forms import param_form
from treeviz.ui.job_panel import bar_text, cancel_button
from treeviz.ui.labels import curve_layout, run_headline
from treeviz.ui.records import MAX_PLOTTED_RECORDS, plot_records
from treeviz.ui.run_tables import INACTIVE_NOTE, decision_nodes_text
from treeviz.ui.text import md

st.title("Train")
ds = state.current_dataset()
st.caption(f"Dataset: **{md(ds.name)}** ({ds.task}, {ds.n_samples} rows × {ds.n_features} features). "
           "Change it on the Data page.")

# the families for the data set's task, then those that run on any data set (embeddings)
choices = {f.key: (f, ds.task) for f in families_for_task(ds.task)}
for task in ANY_DATA_TASKS:
    if task != ds.task:
        choices.update({f.key: (f, task) for f in families_for_task(task) if f.key not in choices})
if not choices:
    st.info(f"No model family handles {ds.task} yet; pick a classification or regression dataset.")
    st.stop()

labels = {k: f.label if task == ds.task else f"{f.label} · {task}" for k, (f, task) in choices.items()}
key = st.selectbox("Model family", list(labels), format_func=labels.get, key="train.family")
family, task = choices[key]
st.caption(family.description)
presets = ["defaults", *family.presets_for(task)]
preset = st.selectbox("Preset", presets, key=f"train.preset.{family.key}",
                      help="A starting point for the values below; edit any of them.")
values = family.defaults(task, None if preset == "defaults" else preset)
params = param_form(family, task, values, key=f"train.{family.key}.{preset}")
name = st.text_input("Run name (optional)", key="train.name",
                     help="Shown in the run list; a name like 'CART on iris #3' is made up otherwise.")


def start_training() -> None:
    with user_errors("starting training"):
        clean = family.validate_params(params, task)
        prepared = state.current_prepared()
        fn = job_fn(family.key, task, clean, prepared, store=state.store(), device=state.device(),
                    name=name.strip() or None)
        job = state.jobs().submit(fn, label=f"{family.label} on {ds.name}", meta={"family": family.key})
        st.session_state[state.JOB_ID] = job.id


def split_check() -> None:
    """Rows per class and split, and what in the split makes scores meaningless, before training
    (training stays allowed)."""
    with user_errors("preparing the dataset"):
        prepared = state.current_prepared()
        warnings = split_warnings(prepared)
        rows = class_counts_by_split(prepared)
        for warning in warnings:
            st.warning(md(warning))
        if rows:
            with st.expander(f"Rows per class and split ({len(rows)} classes)", expanded=bool(warnings)):
                st.dataframe(pd.DataFrame(rows), hide_index=True)


def time_check() -> None:
    """Before training: a warning when these settings would take minutes on this table (an estimate
    from a cost model, see treeviz.services.experiments.estimate; training stays allowed)."""
    with user_errors("estimating the training time"):
        warning = long_training_warning(family, task, params, state.current_prepared(),
                                        preset=None if preset == "defaults" else preset)
        if warning:
            st.warning(md(warning))


split_check()
time_check()
st.button("Train", type="primary", on_click=start_training, key="train.start")


def open_run(run_id: str) -> None:
    state.select_run(run_id)


SPLIT_LABELS = {"train": "Train", "val": "Validation", "test": "Test"}


def metric_cards(record) -> None:
    """The run's headline metric on each split and its size as cards; every metric in a table below."""
    found = run_headline(record)
    cards = []
    if found is not None:
        cards += [(f"{label} {found.metric.replace('_', ' ')}", f"{record.metrics[f'{split}_{found.metric}']:.4g}")
                  for split, label in SPLIT_LABELS.items()
                  if isinstance(record.metrics.get(f"{split}_{found.metric}"), (int, float))]
    cards += [(label, str(value)) for label, value in
              (("Nodes", record.n_nodes), ("Leaves", record.n_leaves), ("Depth", record.depth)) if value is not None]
    active, total = record.metrics.get("n_decision_nodes"), None
    if record.n_nodes is not None and record.n_leaves is not None:
        total = record.n_nodes - record.n_leaves
    if isinstance(active, (int, float)):  # the leaderboard's count: the active decision nodes
        cards.append(("Decision nodes", f"{int(active)} of {total}" if total and total > active else str(int(active))))
    kept = features_kept(record)
    if kept is not None:
        cards.append(("Features kept", kept))
    for col, (label, value) in zip(st.columns(max(1, len(cards))), cards, strict=False):
        col.metric(label, value)
    if isinstance(active, (int, float)) and total and total > active:
        st.caption(f"{decision_nodes_text(int(active), total)}. {INACTIVE_NOTE}")
    numbers = {k: v for k, v in record.metrics.items() if isinstance(v, (int, float))}
    if numbers:
        with st.expander(f"All metrics ({len(numbers)})"):
            st.dataframe(pd.DataFrame({"metric": list(numbers), "value": [f"{v:.4g}" for v in numbers.values()]}),
                         hide_index=True)


def features_kept(record) -> str | None:
    """"42 of 64" for a run of a family that selects features (one that declares feature selection:
    the Features page's test), from the run's count of features some tree uses and the data set's
    feature count; None for other families or when either number is missing."""
    try:
        selects = get_family(record.family).offers("features")
    except TreevizError:
        return None
    used, total = record.metrics.get("n_features"), record.dataset.get("n_features")
    if not selects or not isinstance(used, (int, float)) or not isinstance(total, int):
        return None
    return f"{int(used)} of {total}"


def show_job() -> None:
    job = state.current_job()
    if job is None:
        return
    snap = job.snapshot()
    st.subheader(md(snap.label))
    st.progress(min(1.0, snap.progress), text=md(bar_text(snap)))  # "running · 12.3 s · about 40 s left"
    if snap.records:
        # thinned: this chart is redrawn at every poll and after the end, so its size must not grow
        # with a stream that records every round (the stored run keeps every record)
        layout = curve_layout(str(job.meta.get("family", "")))
        show_figure(training_curves(plot_records(snap.records), **layout), key="train.curves",
                    name=(snap.label, "curves"))
        if len(snap.records) > MAX_PLOTTED_RECORDS:
            st.caption(f"{len(snap.records)} records, {MAX_PLOTTED_RECORDS} of them drawn; the saved run "
                       "keeps them all.")
    if snap.status in ACTIVE_STATUSES:  # "cancelling" shows at once, with the button disabled
        cancel_button(snap, "train.cancel")
        return
    if snap.status == "failed":
        st.error(md(snap.message))
        return
    record = snap.result
    if snap.status == "cancelled":
        if record is None:
            st.warning("Training was cancelled before a usable model existed; nothing was saved.")
            return
        st.warning(f"Training was cancelled; the model as it stood was saved as '{md(record.name)}'.")
    else:
        st.success(f"Finished: saved as '{md(record.name)}'.")
    for warning in run_warnings(record):  # a fit that diverged or learned nothing says so
        st.warning(md(warning))
    metric_cards(record)
    if st.button("Open in Tree explorer", key="train.open", on_click=open_run, args=(record.run_id,)):
        pages.switch_to("explorer")


current = state.current_job()
active = current is not None and not current.done


@st.fragment(run_every=1.0 if active else None)  # each poll redraws the chart: not faster
def job_panel() -> None:
    show_job()
    job = state.current_job()
    if job is not None and job.done and st.session_state.get("train.applied_job") != job.id:
        st.session_state["train.applied_job"] = job.id  # once per job
        record = job.snapshot().result
        if record is not None:
            state.select_run_next(record.run_id)  # the new run becomes the one the explorer shows
        st.rerun()  # a full rerun stops the polling and refreshes the sidebar's run list


job_panel()
