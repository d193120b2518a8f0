"""The Tree explorer's node and leaf browser: the rows of the chosen split that reach the selected node,
their values in the data's own columns, their images for image tables, and the misclassified ones
marked (:mod:`treeviz.services.views.node_rows` computes them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from treeviz.plots.export import export_name
from treeviz.plots.row_images import row_images_figure
from treeviz.services.views.node_browser import NodeRows, model_predictions, node_rows
from treeviz.ui import state
from treeviz.ui.figures import show_figure
from treeviz.ui.text import md

#: The most rows drawn as images (the table and the download hold them all).
MAX_IMAGES = 48
#: The most rows the on-screen table holds (the download holds them all).
MAX_TABLE = 5000


@st.cache_resource(show_spinner=False, max_entries=8)
def _predictions(run_id: str, part: str, identity: tuple) -> np.ndarray | None:
    return model_predictions(state.run_view(run_id, part))


@st.cache_resource(show_spinner=False, max_entries=4)  # a node near the root holds most of the split
def _rows(run_id: str, part: str, tree_index: int, node: int, identity: tuple) -> NodeRows:
    view = state.run_view(run_id, part, tree_index)
    return node_rows(view, node, _predictions(run_id, part, identity))


def _summary(rows: NodeRows, is_leaf: bool, n_trees: int) -> str:
    """The sentence above the rows: how many reach the node, how many the model gets wrong."""
    kind = "leaf" if is_leaf else "node"
    text = f"**{rows.n_rows}** {rows.part} rows reach {kind} {rows.node}"
    if rows.n_wrong is not None:
        text += f" · **{rows.n_wrong}** misclassified (the model's prediction differs from the true class)"
    elif rows.error is not None and rows.n_rows:
        text += f" · mean absolute error {float(np.mean(np.abs(rows.error))):.4g}"
    text += "."
    if rows.soft:
        text += (" A soft tree sends each row down every branch with some probability: the rows listed are "
                 "those whose most probable path passes here, and P(reach) is each one's probability of "
                 "reaching the node (the node's count above adds up those probabilities).")
    if n_trees > 1:
        text += " Routing follows this tree; predictions are the whole ensemble's."
    return text


def show_node_rows(record: Any, run_id: str, part: str, node: int, tree_index: int = 0, n_trees: int = 1) -> None:
    """Draw the browser of the rows of ``part`` reaching ``node`` (in an expander)."""
    with st.expander("Rows that reach this node", expanded=False):
        rows = _rows(run_id, part, int(tree_index), int(node), state.run_identity(run_id))
        is_leaf = bool(state.run_view(run_id, part, tree_index).tree.is_leaf[node])
        st.markdown(_summary(rows, is_leaf, n_trees))
        st.caption(f"Rows of the {part} split (choose it in 'Data for statistics' above); values in the "
                   "data's own columns and units, before missing values are filled and features scaled.")
        if rows.wrong is not None and rows.n_wrong:
            if st.checkbox("Only the misclassified rows", value=False, key="explorer.rows_wrong"):
                rows = rows.only_wrong()
        if rows.image_shape is not None and rows.n_rows:
            fig = row_images_figure(rows.values, rows.image_shape, rows.labels(), rows.wrong, rows=rows.data_rows,
                                    max_images=MAX_IMAGES, total=rows.n_rows,
                                    title=f"Node {node}: {part} rows")
            show_figure(fig, key="explorer.row_images", name=(record.name, f"node {node} rows"))
        st.dataframe(rows.table(MAX_TABLE), hide_index=True)
        if rows.n_rows > MAX_TABLE:
            st.caption(f"The first {MAX_TABLE} of {rows.n_rows} rows; the download holds them all.")
        # the file is written when the button is clicked (Streamlit calls the function then), not at every rerun
        st.download_button("Download these rows (CSV)", lambda: rows.table().to_csv(index=False).encode(),
                           file_name=export_name(record.name, f"node {node}", f"{part} rows") + ".csv",
                           mime="text/csv", key="explorer.rows_download", on_click="ignore",
                           help="Every row listed, with its truth, prediction and values.")
        if rows.n_rows == 0:
            st.info(md(f"No {part} row reaches node {node}."))
