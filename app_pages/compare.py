"""Compare: the runs on one data set, of every family, in a leaderboard and on the accuracy–size Pareto
front; and two runs' trees and routing side by side."""

import numpy as np
import pandas as pd
import streamlit as st

from treeviz.plots import TreeFigureOptions, class_flow_figure, tree_figure
from treeviz.services.views.compare import SIZES, groups, pareto_mask, score_of
from treeviz.ui import state
from treeviz.ui.ceiling import ceiling_section, with_ceiling
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.labels import family_index, family_name
from treeviz.ui.run_tables import leaderboard, leaderboard_widths, side_caption
from treeviz.ui.text import md

st.title("Compare")
store = state.store()
runs = store.list()
for problem in store.problems:
    st.warning(md(problem))
found = groups(runs)
if not found:
    st.info("No runs yet. Train models of several families on one data set on the Train page; they line up here.")
    st.stop()

by_label = {g.label: g for g in found}
current = state.current_dataset().fingerprint
default = next((i for i, g in enumerate(found) if g.fingerprint == current), 0)
group = by_label[st.selectbox("Data set", list(by_label), index=default, key="compare.group",
                              help="Runs compare when trained on the same data (its fingerprint) and task.")]
score = score_of(group.task, group.runs)

# ------------------------------------------------------------------ leaderboard
rows = leaderboard(group.runs, score)
label = score.label if score else "score"
table = pd.DataFrame(rows).rename(columns={"score": label}).drop(columns=["run_id"])
st.subheader(f"Leaderboard · {md(group.dataset)} ({group.task})")
widths = leaderboard_widths(rows)  # a long run name is shown whole, not cut to its column's typical width
st.dataframe(table, hide_index=True, column_config={
    column: st.column_config.TextColumn(width=px, pinned=column == "run") for column, px in widths.items()})
st.caption(f"Ranked by {label} ({'higher' if score is None or score.higher_is_better else 'lower'} is better). "
           "Nonzero weights and FLOPs count the parameters a prediction touches, a head on top of the tree "
           "included (latent trees; FLOPs: per sample, on the root-to-leaf path, averaged over the training "
           "split); fit time is wall time on the device shown.")
ceiling = ceiling_section(group, score)  # a reference line, never a run or a tree

# ------------------------------------------------------------------ Pareto fronts
if score is not None:
    left, right = st.columns(2)
    for box, size_key in ((left, "n_nonzero_weights"), (right, "n_decision_nodes")):
        size = [r.metrics.get(size_key) for r in group.runs]
        value = [r.metrics.get(score.key) for r in group.runs]
        front = pareto_mask([np.nan if s is None else s for s in size], [np.nan if v is None else v for v in value],
                            higher_is_better=score.higher_is_better)
        points = [{"size": s, "score": v, "family": family_name(r.family), "family_index": family_index(r.family),
                   "name": r.name, "front": bool(f)} for r, s, v, f in zip(group.runs, size, value, front)]
        with user_errors("drawing the Pareto front"):
            pareto = state.pareto_figure(points, size_label=SIZES[size_key], score_label=score.label,
                                         higher_is_better=score.higher_is_better)
            show_figure(with_ceiling(pareto, ceiling, score),
                        key=f"compare.pareto.{size_key}", name=(group.dataset, "pareto", size_key), where=box)

# ------------------------------------------------------------------ two runs side by side
#: The width a tree gets in one of two columns of a 1400 px window (the main column is 940 px): leaf
#: labels are written only where they fit at that width.
HALF_WIDTH = 460
st.subheader("Two runs side by side")
names = {r.run_id: f"{r.name} · {family_name(r.family)}" for r in group.runs}
ids = [row["run_id"] for row in rows]
if len(ids) < 2:
    st.info("Train a second model on this data set to compare two trees.")
    st.stop()
c1, c2 = st.columns(2)
chosen = [c1.selectbox("Left", ids, index=0, format_func=names.get, key="compare.left"),
          c2.selectbox("Right", ids, index=1, format_func=names.get, key="compare.right")]
routing = group.task == "classification" and st.checkbox("Show the class routing", value=True, key="compare.routing")
for side, box, run_id in zip(("left", "right"), (c1, c2), chosen):
    with box, user_errors("drawing the run"):
        view = state.run_view(run_id, "test" if state.run_prepared(run_id).X_test.shape[0] else "train")
        tree = view.tree
        record = next(r for r in group.runs if r.run_id == run_id)
        n_trees = len(state.run_model(run_id).to_trees())
        st.caption(side_caption(tree, record.metrics, n_trees, view.part))
        options = TreeFigureOptions(max_levels=min(tree.max_depth, 5) or None, family_label=family_name(record.family),
                                    member=(1, n_trees) if n_trees > 1 else None, width=HALF_WIDTH)
        show_figure(tree_figure(tree, stats=view.stats, options=options),
                    key=f"compare.tree.{side}", name=(record.name, "tree"))
        if routing and tree.task == "classification" and view.stats is not None:
            show_figure(class_flow_figure(tree, None, None, stats=view.stats, max_levels=min(tree.max_depth, 3) or 1),
                        key=f"compare.routing.{side}", name=(record.name, "routing"))
