"""Clustering: the hierarchy a clustering tree learned, as a dendrogram, with dendrogram purity."""

import pandas as pd
import streamlit as st

from models.ground.tree import NodeStats
from treeviz.plots import TreeFigureOptions, dendrogram_figure, tree_figure
from treeviz.readers.metrics import class_counts_by_node, dendrogram_purity_from_counts
from treeviz.services.views.run_view import PARTS
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.labels import family_name
from treeviz.ui.view_run import offering, view_run

st.title("Clustering")
families = offering("clustering", "clustering", default="a clustering family")
record = view_run("clustering", task="clustering",
                  no_run="No run to show yet: pick a clustering dataset (e.g. Gaussian blobs) on the Data page and "
                         f"train {families} on it.",
                  wrong_run="This is a {task} run. Pick a clustering run in the sidebar, or train one: choose a "
                            f"clustering dataset (Gaussian blobs, or an upload with no target) and {families}.")
run_id = record.run_id

with user_errors("drawing the clustering"):
    part = st.selectbox("Data", PARTS, index=2, key="clustering.part",
                        help="Which split is routed through the tree.")
    view = state.run_view(run_id, part)
    tree, prepared = view.tree, view.prepared
    if view.n_rows == 0:
        st.info(f"The {part} split of this run is empty; choose another split.")
        st.stop()
    idx = {"train": prepared.train_idx, "val": prepared.val_idx, "test": prepared.test_idx}[part]
    reference = None
    if prepared.dataset.y is not None and prepared.dataset.class_names is not None:
        reference = prepared.dataset.y_labels[idx]
    counts = view.stats.count
    cols = st.columns(5)
    cols[0].metric("Clusters (occupied leaves)", int(((counts > 0) & tree.is_leaf).sum()))
    cols[1].metric("Active nodes", f"{int((tree.active > 0).sum())} / {tree.n_nodes}")
    cols[2].metric("Empty active nodes", int(((tree.active > 0) & (counts == 0)).sum()),
                   help="Nodes that are not pruned but that no point of this split reaches.")
    class_counts, names = (None, None)
    if reference is not None:
        class_counts, names = class_counts_by_node(tree, view.X, reference)
        if class_counts[0].max() >= 2:
            cols[3].metric("Dendrogram purity", f"{dendrogram_purity_from_counts(tree, class_counts, 'standard'):.3f}",
                           help="Expected purity of the lowest common ancestor of two points of the same "
                                "reference class (distinct pairs).")
            cols[4].metric("DP, reference-code variant",
                           f"{dendrogram_purity_from_counts(tree, class_counts, 'code'):.3f}",
                           help="Ordered pairs including self-pairs, as the paper's code computed it.")
    else:
        st.caption("This dataset has no reference classes, so dendrogram purity cannot be computed.")
    stats = NodeStats(count=counts, class_counts=class_counts)
    show_figure(dendrogram_figure(tree, stats, class_names=names,
                                  subtitle=f"{part} split · {view.n_rows} points · bars: reference classes"),
                key="clustering.dendrogram", name=(record.name, "dendrogram"))
    options = TreeFigureOptions(color_by="active", pruned="hidden", max_levels=min(tree.max_depth, 6) or None,
                                family_label=family_name(record.family))
    show_figure(tree_figure(tree, stats=view.stats, options=options),
                key="clustering.tree", name=(record.name, "tree"))
    if class_counts is not None:
        leaves = [int(v) for v in tree.leaves if counts[v] > 0]
        table = pd.DataFrame(class_counts[leaves].astype(int), columns=names,
                             index=[f"leaf {v}" for v in leaves])
        st.dataframe(table)
