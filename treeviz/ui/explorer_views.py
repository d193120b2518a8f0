"""The Tree explorer's views of one node's split, one sample's picture and two features' decision regions.

Each function draws one section of the page from the run's :class:`RunView` (the computations are the
views room's: :mod:`treeviz.services.views.node_split`, :mod:`treeviz.services.views.regions`; the figures
are :mod:`treeviz.plots.split_hist` and :mod:`treeviz.plots.regions`), through
:func:`treeviz.ui.figures.show_figure`, so each figure has the page's download menu.
"""

from __future__ import annotations

import streamlit as st

from treeviz.plots.regions import regions_figure, sample_image_figure
from treeviz.plots.split_hist import split_histogram
from treeviz.services.views.node_split import node_split, sample_pixels
from treeviz.services.views.predict import output_kind
from treeviz.services.views.regions import decision_regions, default_features
from treeviz.services.views.run_view import RunView
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.text import md

HOLD = {"median": "the training rows' median", "row": "the row chosen above"}


def split_section(view: RunView, node: int, *, run_name: str, original_units: bool) -> None:
    """How the selected decision node splits the rows of the page's split that reach it: the class
    distributions of its score (``w·x + b``, or the feature), the threshold drawn."""
    tree = view.tree
    if tree.is_leaf[node] or view.n_rows == 0:
        return
    with user_errors("drawing the node's split"):
        split = node_split(view, node, original_units=original_units)
        fig = split_histogram(tree, node, split.score, split.y, threshold=split.threshold,
                              right_above=split.right_above, right=split.right, label=split.label,
                              part=view.part, soft=split.soft)
        show_figure(fig, key="explorer.split_hist", name=(run_name, f"node {node} split"))
        axis = ("the feature's value" if split.feature is not None else
                "the node's score w·x + b (a row goes right when it is above 0)")
        counts = ("each row counted where its most probable path goes (the node's count above sums the "
                  "rows' probabilities of reaching it)." if split.soft else "as many as reach its two children.")
        st.caption(f"The {view.part} rows that reach node {node} ({split.n_rows}; the split is chosen under "
                   f"\"Data for statistics\") on {axis}: {split.n_left} go left and {split.n_right} go right, "
                   + counts)


def sample_image(view: RunView, row: int, *, run_name: str) -> None:
    """The highlighted sample's own picture, for an image table (nothing otherwise)."""
    shape = view.prepared.dataset.image_shape
    if shape is None or not 0 <= row < view.n_rows:
        return
    with user_errors("drawing the sample's image"):
        truth = view.true_label(row)
        subtitle = (f"true {truth} · " if truth is not None else "") + f"predicted {view.predicted_label(row)}"
        fig = sample_image_figure(sample_pixels(view, row), shape, title=f"{view.part} row {row}",
                                  subtitle=subtitle, height=280)
        box = st.columns([1, 2])[0]
        show_figure(fig, key="explorer.sample_image", name=(run_name, f"{view.part} row {row}"), where=box)
        box.caption("The sample's pixels in the data's own units (dark = high).")


def regions_section(view: RunView, run_id: str, row: int, *, run_name: str, original_units: bool) -> None:
    """The model's predictions over two chosen features, the others held at the training median or at
    the row chosen for the path, with the training rows on top."""
    st.subheader("Decision regions")
    tree = view.tree
    if tree.n_features < 2:
        st.caption("Decision regions need two features; this data set has one.")
        return
    if output_kind(view.model) == "embedding":
        st.caption("An embedding maps rows to coordinates and predicts no class or value, so it has no "
                   "decision regions.")
        return
    names = tree.feature_names
    first, second = default_features(view)
    cols = st.columns([1, 1, 2])
    fx = cols[0].selectbox("Feature across", range(len(names)), index=first, format_func=lambda f: names[f],
                           key=f"explorer.regions_x.{run_id}")
    fy = cols[1].selectbox("Feature up", range(len(names)), index=second, format_func=lambda f: names[f],
                           key=f"explorer.regions_y.{run_id}")
    hold = cols[2].radio("Other features held at", tuple(HOLD), format_func=HOLD.get, horizontal=True,
                         key="explorer.regions_hold", disabled=view.n_rows == 0,
                         help="The row is the one whose path is highlighted (its number is above the tree).")
    if fx == fy:
        st.info("Pick two different features.")
        return
    with user_errors("drawing the decision regions"):
        at_row = hold == "row" and view.n_rows > 0
        regions = decision_regions(view, (fx, fy), hold_row=row if at_row else None, original_units=original_units)
        fig = regions_figure(regions.shown_x, regions.shown_y, regions.output, kind=regions.kind,
                             names=regions.names, points=regions.points, point_values=regions.point_values,
                             feature_names=regions.feature_names, held_label=regions.held_label,
                             units=regions.units)
        show_figure(fig, key="explorer.regions", name=(run_name, "decision regions"))
        st.caption(f"What the model predicts over a {regions.grid_x.size} × {regions.grid_y.size} grid of "
                   f"{md(names[fx])} and {md(names[fy])}, every other feature held at {md(regions.held_label)}; "
                   f"the dots are training rows ({regions.points.shape[0]}), drawn at their own values of the two "
                   "features, so a dot may sit in another class's region where its other features differ.")
