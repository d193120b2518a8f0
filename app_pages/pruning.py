"""Pruning / λ path: train one tree per pruning strength, then see size and scores against λ and
the tree at each λ."""

import pandas as pd
import streamlit as st

from models.registry import families_for_task
from treeviz.plots import sweep_figure, tree_figure
from treeviz.sweep import run_sweep, value_grid
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.forms import param_form

PARAM = "prune_strength"
SWEEP_ID = "pruning.sweep_id"

st.title("Pruning / λ path")
ds = state.current_dataset()
families = [f for f in families_for_task(ds.task) if any(p.name == PARAM for p in f.params_for(ds.task))]

with st.expander("Run a new λ path", expanded=not state.store().list()):
    if not families:
        st.info(f"No family with a pruning strength handles {ds.task}; choose another dataset.")
    else:
        labels = {f.key: f.label for f in families}
        key = st.selectbox("Model family", list(labels), format_func=labels.get, key="pruning.family")
        family = next(f for f in families if f.key == key)
        st.caption(f"Dataset **{ds.name}** ({ds.task}). One model per λ, fitted in increasing order of λ, "
                   "each starting from the previous one's weights (warm start).")
        c1, c2, c3, c4 = st.columns(4)
        low = c1.number_input("λ from", min_value=1e-4, value=0.1, format="%g", key="pruning.low")
        high = c2.number_input("λ to", min_value=1e-4, value=100.0, format="%g", key="pruning.high")
        count = c3.slider("Points", 2, 12, 5, key="pruning.count")
        warm = c4.checkbox("Warm start", value=True, key="pruning.warm")
        with st.expander("Other parameters (shared by every point)"):
            values = family.defaults(ds.task, "quick" if "quick" in family.presets else None)
            params = param_form(family, ds.task, values, key=f"pruning.{family.key}")
        params.pop(PARAM, None)

        def start_sweep() -> None:
            with user_errors("starting the λ path"):
                grid = value_grid(float(low), float(high), int(count))
                clean = family.validate_params(params, ds.task)
                prepared = state.current_prepared()
                store, device = state.store(), state.device()

                def fn(callbacks):
                    results = run_sweep(family.key, ds.task, clean, prepared, grid, param=PARAM,
                                        warm_start=warm, store=store, callbacks=callbacks, device=device)
                    return results[0].record.sweep["id"] if results else None

                job = state.jobs().submit(fn, label=f"λ path of {family.label} on {ds.name}")
                st.session_state["pruning.job_id"] = job.id

        st.button("Run λ path", type="primary", on_click=start_sweep, key="pruning.start")


def current_sweep_job():
    job_id = st.session_state.get("pruning.job_id")
    try:
        return state.jobs().get(job_id) if job_id else None
    except Exception:  # noqa: BLE001 - the job list is gone after an app restart
        return None


sweep_job = current_sweep_job()
active = sweep_job is not None and not sweep_job.done


@st.fragment(run_every=1.0 if active else None)
def job_panel() -> None:
    job = current_sweep_job()
    if job is None:
        return
    snap = job.snapshot()
    st.progress(min(1.0, snap.progress), text=f"{snap.label}: {snap.status} · {snap.elapsed:.1f} s")
    if snap.status in ("queued", "running"):
        st.button("Cancel", on_click=state.jobs().cancel, args=(snap.id,), key="pruning.cancel")
    elif snap.status == "failed":
        st.error(snap.message)
    elif snap.status == "cancelled":
        st.warning("The λ path was cancelled; the points finished before are kept.")
    if active and job.done:
        if snap.result:
            st.session_state["pruning.select_next"] = snap.result
        st.rerun()  # a full rerun lists the new λ path


job_panel()
if "pruning.select_next" in st.session_state:  # before the selectbox exists in this run
    st.session_state[SWEEP_ID] = st.session_state.pop("pruning.select_next")

# ---------------------------------------------------------------- explore stored λ paths
with user_errors("showing the λ paths"):
    all_sweeps = state.sweeps()
    if not all_sweeps:
        st.info("No λ path yet: run one above. Each point is also a normal run (Runs page).")
        st.stop()
    ids = list(all_sweeps)
    label = {i: f"{all_sweeps[i][0].name.split(' · ')[0]} · {len(all_sweeps[i])} points · {i[:15]}" for i in ids}
    if st.session_state.get(SWEEP_ID) not in ids:
        st.session_state[SWEEP_ID] = ids[0]
    sweep_id = st.selectbox("λ path", ids, format_func=label.get, key=SWEEP_ID)
    records = all_sweeps[sweep_id]
    rows = state.sweep_rows(sweep_id, tuple(r.run_id for r in records))
    lambdas = [r["value"] for r in rows]
    chosen = st.select_slider("λ", options=lambdas, value=lambdas[len(lambdas) // 2], key=f"pruning.lambda.{sweep_id}",
                              format_func=lambda v: f"{v:g}")
    st.plotly_chart(sweep_figure(rows, param=PARAM, selected=chosen), key="pruning.figure")
    row = next(r for r in rows if r["value"] == chosen)
    cols = st.columns(4)
    cols[0].metric("Active nodes", f"{row['n_active_nodes']} / {row['n_nodes']}")
    cols[1].metric("Depth of the active tree", row["active_depth"])
    for i, key in enumerate(k for k in ("test_accuracy", "test_r2", "test_dendrogram_purity") if row.get(k) is not None):
        cols[2 + i].metric(key.replace("_", " "), f"{row[key]:.3f}")
        break
    hide = st.radio("Pruned nodes", ("dashed", "hidden"), horizontal=True, key="pruning.pruned")
    view = state.run_view(row["run_id"], "train")
    st.plotly_chart(tree_figure(view.rules_tree(), stats=view.stats, color_by="active", pruned=hide,
                                max_levels=min(view.tree.max_depth, 6) or None),
                    key="pruning.tree")
    st.caption("Node colour = pruning value a_t solved on the training data with λ scaled to the batch size; "
               "predictions come from the predictor on [x; z], not from leaf values.")

    def open_run() -> None:
        state.select_run(row["run_id"])

    if st.button("Open this λ in the Tree explorer", on_click=open_run, key="pruning.open"):
        st.switch_page("app_pages/explorer.py")
    st.dataframe(pd.DataFrame(rows).drop(columns=["run_id"]), hide_index=True)
