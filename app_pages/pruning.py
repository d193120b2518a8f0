"""Pruning / λ path: train one tree per value of a family's λ, then see size, sparsity and scores
against λ and the tree at each λ. Everything family-specific comes from ``Family.lambda_path``.
A grid (λ × depth × seed) trains every combination at once, here or on a Dask cluster
(:mod:`treeviz.services.experiments.grid`); its trials are runs like any other."""

import pandas as pd
import streamlit as st

from models.registry import families_offering, get_family
from models.schema import Param
from treeviz.plots import PATH_FIGURES, TreeFigureOptions, tree_figure
from treeviz.services.experiments.grid import SCHEDULER_ENV, GridJob, default_scheduler, grid_rows, grids, parse_values
from treeviz.services.experiments.sweep import SweepJob, sweep_label, value_grid
from treeviz.ui import pages, state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.forms import kept_select, offered_family, param_form
from treeviz.ui.job_panel import job_panel, page_job, start, take_result
from treeviz.ui.labels import SIZE_HELP, family_name, format_size, headline, size_label
from treeviz.ui.text import md

SWEEP_ID = "pruning.sweep_id"
GRID_ID = "grid.grid_id"
#: The depth parameter a grid varies, by the name a family gives it.
DEPTH_PARAMS = ("depth", "max_depth")
#: What the λ path and the grid say when no family offers a λ path for the data set's task.
NO_LAMBDA_PATH = "No family with a λ path handles {task}; choose another dataset."
#: Said above the shared parameters: they start where the Train page's form does.
SAME_DEFAULTS = "Every parameter starts at the family's defaults, as on the Train page; edit any of them."


def value_text(param: Param, extra: int = 0) -> str:
    """The grid's starting values of ``param``: its declared default (its optional label for None)
    and, for a whole-number default, the ``extra`` next values."""
    if param.default is None:
        return str(param.optional_label or "none")
    if param.kind in ("int", "seed") and extra:
        return ", ".join(str(int(param.default) + i) for i in range(extra + 1))
    return f"{param.default:g}" if isinstance(param.default, float) else str(param.default)


def nodes_against_sparsity(rows: list[dict], lam: str) -> str | None:
    """A sentence when the decision nodes grow along the path while the nonzero weights shrink (from
    the smallest λ to the larger λ with the most nodes among those with fewer weights), and why that
    happens; None when the path does not do that or its rows lack either count."""
    points = sorted((float(r["value"]), r.get("n_decision_nodes"), r.get("n_nonzero_weights")) for r in rows)
    if len(points) < 2 or any(nodes is None or weights is None for _, nodes, weights in points):
        return None
    (low, nodes0, weights0), *later = points
    grown = [p for p in later if p[1] > nodes0 and p[2] < weights0]
    if not grown:
        return None
    high, nodes, weights = max(grown, key=lambda p: (p[1], p[0]))
    return (f"From {lam} = {low:g} to {high:g} the decision nodes rise from {nodes0:.0f} to {nodes:.0f} while the "
            f"nonzero weights fall from {weights0:.0f} to {weights:.0f}. The penalty acts on the weights inside each "
            "node, not on the number of nodes: a node leaves the tree only when its weights all reach zero or its "
            "split stops mattering (a branch no point reaches, a subtree that predicts one thing), and a sparser "
            "split separates the points less cleanly, so the fit can keep more nodes, each using fewer features.")


def where_to_run() -> bool:
    """Whether the grid runs on the Dask cluster configured in ``$TREEVIZ_DASK_SCHEDULER``. The page
    never takes an address: a scheduler runs code in this app, so only whoever started it chooses one."""
    scheduler = None
    with user_errors(f"reading {SCHEDULER_ENV}"):
        scheduler = default_scheduler()
    if scheduler is None:
        st.caption(f"Trials run on this machine. A Dask cluster is set by whoever starts the app, with "
                   f"`{SCHEDULER_ENV}` (README, 'Sweeps on a cluster').")
        return False
    choice = st.radio("Run the trials on", ("cluster", "here"), horizontal=True, key="grid.where",
                      format_func={"cluster": f"the configured Dask cluster ({md(scheduler)})",
                                   "here": "this machine"}.get,
                      help=f"The cluster is set by whoever started the app, with `{SCHEDULER_ENV}`; its workers "
                           "fit the trials and this app stores each run as it comes back.")
    return choice == "cluster"


st.title("Pruning / λ path")
ds = state.current_dataset()
families = families_offering("lambda_path", ds.task)

with st.expander("Run a new λ path", expanded=not state.store().list()):
    family = offered_family(families, key="pruning.family", none=NO_LAMBDA_PATH.format(task=ds.task))
    if family is not None:
        key = family.key
        path = family.lambda_path
        lam_title = family.param(path.param, ds.task).title
        st.caption(f"Dataset **{md(ds.name)}** ({ds.task}). One model per value of {lam_title}, fitted in increasing "
                   "order. Warm start: each fit starts from the previous one's result; otherwise every λ starts "
                   "from the same initial model.")
        c1, c2, c3, c4 = st.columns(4)
        low = c1.number_input("λ from", min_value=1e-6, value=path.low, format="%g", key=f"pruning.low.{key}")
        high = c2.number_input("λ to", min_value=1e-6, value=path.high, format="%g", key=f"pruning.high.{key}")
        count = c3.slider("Points", 2, 12, path.count, key=f"pruning.count.{key}")
        warm = c4.checkbox("Warm start", value=path.warm_start, key=f"pruning.warm.{key}")
        with st.expander("Other parameters (shared by every point)"):
            st.caption(SAME_DEFAULTS)
            params = param_form(family, ds.task, family.defaults(ds.task), key=f"pruning.{family.key}",
                                exclude=(path.param,))

        def start_sweep() -> None:
            with user_errors("starting the λ path"):
                grid = value_grid(float(low), float(high), int(count))
                clean = family.validate_params(params, ds.task)
                prepared = state.current_prepared()
                store, device = state.store(), state.device()

                fn = SweepJob(family.key, ds.task, dict(clean), prepared, tuple(grid), store, warm_start=warm,
                              device=device)
                start("pruning", fn, label=f"λ path of {family.label} on {ds.name}")

        st.button("Run λ path", type="primary", on_click=start_sweep, key="pruning.start")


job_panel("pruning", cancelled="The λ path was cancelled; the points finished before are kept.")
take_result("pruning", SWEEP_ID)

# ---------------------------------------------------------------- grids: λ × depth × seed, here or on Dask
with st.expander("Grid (λ × depth × seed)"):
    gfamily = offered_family(families, key="grid.family", none=NO_LAMBDA_PATH.format(task=ds.task))
    if gfamily is not None:
        gkey = gfamily.key
        gpath = gfamily.lambda_path
        form_names = {p.name for p in gfamily.params_for(ds.task, form_only=True)}
        depth = next((n for n in DEPTH_PARAMS if n in form_names), None)
        seed = "random_state" if "random_state" in form_names else None
        st.caption("One run per combination of the values (comma-separated), all independent and trained at once: "
                   "in worker processes here, or on the Dask cluster configured for this app.")
        cols = st.columns(3)
        lam_default = ", ".join(f"{v:g}" for v in value_grid(gpath.low, gpath.high, 3))
        texts = {gpath.param: cols[0].text_input(f"{gfamily.param(gpath.param, ds.task).title} values", lam_default,
                                                  key=f"grid.lambda.{gkey}")}
        if depth is not None:
            dparam = gfamily.param(depth, ds.task)
            texts[depth] = cols[1].text_input(f"{dparam.title} values", value_text(dparam), key=f"grid.depth.{gkey}",
                                              help="Starts at the family's default; add others, comma-separated.")
        if seed is not None:
            sparam = gfamily.param(seed, ds.task)
            texts[seed] = cols[2].text_input("Seeds (random_state)", value_text(sparam, extra=1),
                                             key=f"grid.seed.{gkey}",
                                             help="The family's default seed and the next one.")
        on_cluster = where_to_run()
        with st.expander("Other parameters (shared by every trial)"):
            st.caption(SAME_DEFAULTS)
            gparams = param_form(gfamily, ds.task, gfamily.defaults(ds.task), key=f"grid.{gkey}",
                                 exclude=tuple(texts))

        def start_grid() -> None:
            with user_errors("starting the grid"):
                grid = {name: parse_values(gfamily.param(name, ds.task), text) for name, text in texts.items()}
                clean = gfamily.validate_params(gparams, ds.task)
                fn = GridJob(gfamily.key, ds.task, dict(clean), state.current_prepared(), grid, state.store(),
                             on_cluster=on_cluster, device=state.device())
                where = f" on {fn.scheduler}" if fn.scheduler else ""
                start("grid", fn, label=f"Grid of {gfamily.label} on {ds.name}{where}")

        st.button("Run grid", type="primary", on_click=start_grid, key="grid.start")

job_panel("grid", cancelled="The grid was cancelled; the trials finished before are kept.")
take_result("grid", GRID_ID)
with user_errors("showing the grids"):
    all_grids = grids(state.store())
    if all_grids:
        with st.expander("Grid results", expanded=page_job("grid") is not None):
            glabel = {i: f"{all_grids[i][0].sweep.get('label', i)} · {len(all_grids[i])} of "
                         f"{all_grids[i][0].sweep.get('size', '?')} trials · {all_grids[i][0].sweep.get('where', '')}"
                      for i in all_grids}
            gid = kept_select("Grid", glabel, key=GRID_ID)
            st.dataframe(pd.DataFrame(grid_rows(all_grids[gid])), hide_index=True)
            st.caption("Each trial is also a run of its own: open it from the sidebar or the Runs page.")

# ---------------------------------------------------------------- explore stored λ paths
with user_errors("showing the λ paths"):
    all_sweeps = state.sweeps()
    if not all_sweeps:
        st.info("No λ path yet: run one above. Each point is also a normal run (Runs page).")
        st.stop()
    label = {i: f"{sweep_label(all_sweeps[i])} · {len(all_sweeps[i])} points · {i[:15]}" for i in all_sweeps}
    sweep_id = kept_select("λ path", label, key=SWEEP_ID)
    records = all_sweeps[sweep_id]
    rows = state.sweep_rows(sweep_id, tuple(r.run_id for r in records))
    param = str(records[0].sweep["param"])
    spec = get_family(records[0].family).lambda_path
    if spec is None or spec.param != param:
        st.info(f"This sweep is over '{md(param)}', which is not its family's λ path; its runs are on the Runs page.")
        st.stop()
    warm_note = "warm-started from the previous λ" if records[-1].sweep.get("warm_start") else \
        "every λ from the same initial tree"
    lambdas = [r["value"] for r in rows]
    chosen = st.select_slider("λ", options=lambdas, value=lambdas[len(lambdas) // 2], key=f"pruning.lambda.{sweep_id}",
                              format_func=lambda v: f"{v:g}")
    show_figure(PATH_FIGURES[spec.figure](rows, param=param, selected=chosen),
                key="pruning.figure", name=(records[0].name, "figure"))
    st.caption(f"Fits in increasing order of λ, {warm_note}.")
    trend = nodes_against_sparsity(rows, "λ")
    if trend is not None:
        st.caption(trend)
    row = next(r for r in rows if r["value"] == chosen)
    cols = st.columns(len(spec.sizes) + 1)
    for col, size in zip(cols, spec.sizes):
        col.metric(size_label(size), format_size(size, row), help=SIZE_HELP.get(size))
    score = headline(row, records[0].family, records[0].task)
    if score is not None:
        cols[-1].metric(score.title, f"{score.value:.3f}")
    view = state.run_view(row["run_id"], "train")
    levels = min(view.tree.max_depth, 6) or None
    if spec.tree_view == "activity":
        hide = st.radio("Pruned nodes", ("dashed", "hidden"), horizontal=True, key="pruning.pruned")
        options = TreeFigureOptions(color_by="active", pruned=hide, max_levels=levels,
                                    family_label=family_name(records[0].family))
        figure = tree_figure(view.rules_tree(), stats=view.stats, options=options)
    else:
        options = TreeFigureOptions(max_levels=levels, family_label=family_name(records[0].family))
        figure = tree_figure(view.rules_tree(), stats=view.stats, options=options)
    show_figure(figure, key="pruning.tree", name=(records[0].name, "tree"))
    st.caption(f"λ = {chosen:g}. {spec.note}")

    def open_run() -> None:
        state.select_run(row["run_id"])

    if st.button("Open this λ in the Tree explorer", on_click=open_run, key="pruning.open"):
        pages.switch_to("explorer")
    st.dataframe(pd.DataFrame(rows).drop(columns=["run_id"]), hide_index=True)
