"""Pruning / λ path: train one tree per value of a family's λ (latent trees: pruning strength; TAO:
ℓ1 penalty), then see size, sparsity and scores against λ and the tree at each λ."""

import pandas as pd
import streamlit as st

from models.registry import families_for_task
from treeviz.plots import lambda_path_figure, sweep_figure, tree_figure
from treeviz.sweep import run_sweep, value_grid
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.forms import param_form

SWEEP_ID = "pruning.sweep_id"

st.title("Pruning / λ path")
ds = state.current_dataset()
families = [f for f in families_for_task(ds.task) if f.path_param is not None]

with st.expander("Run a new λ path", expanded=not state.store().list()):
    if not families:
        st.info(f"No family with a pruning strength handles {ds.task}; choose another dataset.")
    else:
        labels = {f.key: f.label for f in families}
        key = st.selectbox("Model family", list(labels), format_func=labels.get, key="pruning.family")
        family = next(f for f in families if f.key == key)
        PARAM = family.path_param
        lam_title = family.param(PARAM).title
        # Latent trees trace the path warm-started (same architecture, only λ changes); TAO starts every λ
        # from the same initial tree by default: warm-starting a pruned tree can never regrow nodes.
        warm_default = family.key != "tao"
        st.caption(f"Dataset **{ds.name}** ({ds.task}). One model per value of {lam_title}, fitted in increasing "
                   "order. Warm start: each fit starts from the previous one's result; otherwise every λ starts "
                   "from the same initial model.")
        c1, c2, c3, c4 = st.columns(4)
        default_low, default_high = (0.001, 100.0) if family.key == "tao" else (0.1, 100.0)
        low = c1.number_input("λ from", min_value=1e-6, value=default_low, format="%g", key=f"pruning.low.{key}")
        high = c2.number_input("λ to", min_value=1e-6, value=default_high, format="%g", key=f"pruning.high.{key}")
        count = c3.slider("Points", 2, 12, 6 if family.key == "tao" else 5, key="pruning.count")
        warm = c4.checkbox("Warm start", value=warm_default, key=f"pruning.warm.{key}")
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
    param = str(records[0].sweep.get("param", "prune_strength"))
    sparse = param == "l1_penalty"  # TAO: structure is pruned for real; sizes are nonzeros and nodes
    warm_note = "warm-started from the previous λ" if records[-1].sweep.get("warm_start") else \
        "every λ from the same initial tree"
    lambdas = [r["value"] for r in rows]
    chosen = st.select_slider("λ", options=lambdas, value=lambdas[len(lambdas) // 2], key=f"pruning.lambda.{sweep_id}",
                              format_func=lambda v: f"{v:g}")
    if sparse:
        st.plotly_chart(lambda_path_figure(rows, param=param, selected=chosen), key="pruning.figure")
    else:
        st.plotly_chart(sweep_figure(rows, param=param, selected=chosen), key="pruning.figure")
    st.caption(f"Fits in increasing order of λ, {warm_note}.")
    row = next(r for r in rows if r["value"] == chosen)
    cols = st.columns(4)
    if sparse:
        cols[0].metric("Decision nodes", int(row.get("n_decision_nodes") or 0))
        cols[1].metric("Nonzero weights", int(row.get("n_nonzero_weights") or 0))
        cols[2].metric("FLOPs / sample", f"{row.get('flops', float('nan')):.1f}",
                       help="Nonzero parameters met on the root-to-leaf path, averaged over the training split.")
    else:
        cols[0].metric("Active nodes", f"{row['n_active_nodes']} / {row['n_nodes']}")
        cols[1].metric("Depth of the active tree", row["active_depth"])
    for i, key in enumerate(k for k in ("test_accuracy", "test_r2", "test_dendrogram_purity") if row.get(k) is not None):
        cols[3 if sparse else 2].metric(key.replace("_", " "), f"{row[key]:.3f}")
        break
    view = state.run_view(row["run_id"], "train")
    if sparse:
        st.plotly_chart(tree_figure(view.rules_tree(), stats=view.stats, max_levels=min(view.tree.max_depth, 6) or None),
                        key="pruning.tree")
        st.caption(f"The tree at λ = {chosen:g} after TAO's pruning (zero-weight nodes, dead branches and pure "
                   "subtrees removed). Open it in the Tree explorer for its node weights.")
    else:
        hide = st.radio("Pruned nodes", ("dashed", "hidden"), horizontal=True, key="pruning.pruned")
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
