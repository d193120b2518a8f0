"""Routing: how the samples of each class travel from the root to the leaves."""

import streamlit as st

from treeviz.plots import class_flow_figure, class_split_bars
from treeviz.services.views.run_view import PARTS
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.labels import family_name
from treeviz.ui.text import md

st.title("Routing")
run_id = state.current_run_id()
if run_id is None:
    st.info("No run to show yet: train a model on the Train page, or pick a run in the sidebar.")
    st.stop()

with user_errors("routing the data"):
    record = state.store().get(run_id)
    st.caption(f"**{md(record.name)}** · {family_name(record.family)} · trained on {md(record.dataset_name)}")
    if record.task != "classification":
        st.info("Class routing follows the classes of a classification run. For this "
                f"{record.task} run, the Tree explorer colours each node by its mean target instead.")
        st.stop()
    c1, c2, c3 = st.columns(3)
    part = c1.selectbox("Data", PARTS, key="routing.part")
    view = state.run_view(run_id, part)
    tree = view.tree
    if view.stats is None:
        st.info(f"The {part} split of this run is empty; choose another split.")
        st.stop()
    deepest = max(1, tree.max_depth)
    flow_levels = c2.slider("Sankey depth", 1, max(2, deepest), min(4, deepest), key="routing.levels",
                            disabled=deepest < 2)
    normalize = c3.checkbox("Bars as fractions of each class", key="routing.normalize")
    shown = view.rules_tree()  # split rules in the data's own units where the scaling allows
    show_figure(class_flow_figure(shown, None, None, stats=view.stats, max_levels=min(flow_levels, deepest)),
                key="routing.flow", name=(record.name, "flow"))
    st.caption("Each band is the samples of one class going from a node to its child; band width is "
               "the number of samples.")
    show_figure(class_split_bars(shown, None, None, stats=view.stats, max_levels=min(3, deepest),
                                 normalize=normalize), key="routing.splits", name=(record.name, "splits"))
