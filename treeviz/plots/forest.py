"""An ensemble of trees at a glance: size per tree and how often the trees vote alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.tree import Tree
from treeviz.plots import style
from treeviz.readers.metrics import vote_agreement


def forest_summary_figure(trees: Sequence[Tree], X: Any, *, height: int | None = None) -> go.Figure:
    """Per-tree size (decision nodes, nonzero weights, depth) and the trees' vote agreement on ``X``.

    Parameters
    ----------
    trees : list of Tree
        The ensemble's trees (same features and outputs).
    X : array (n_samples, n_features)
        Data to compare the trees' predictions on.

    Returns
    -------
    go.Figure
        Left: grouped bars per tree (decision nodes, nonzero weights / 10, depth). Right: a
        heatmap of pairwise agreement (fraction of samples two trees predict alike), the diagonal
        showing each tree's agreement with the ensemble's majority.
    """
    if not trees:
        return style.message_figure("The ensemble has no trees.", title="Forest")
    X = np.asarray(X, dtype=np.float64)
    names = [f"tree {i}" for i in range(len(trees))]
    agree = vote_agreement(trees, X) if X.shape[0] else None
    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.12,
                        subplot_titles=("Size of each tree", "Vote agreement"))
    bars = (("decision nodes", [int(t.decision_nodes.size) for t in trees]),
            ("nonzero weights", [t.n_nonzero_weights() for t in trees]),
            ("depth", [t.max_depth for t in trees]))
    for i, (label, values) in enumerate(bars):
        fig.add_trace(go.Bar(x=names, y=values, name=label, marker_color=style.line_color(i),
                             hovertemplate=f"%{{x}}<br>{label}: %{{y}}<extra></extra>"), row=1, col=1)
    if agree is not None:
        matrix = agree["pairwise"].copy()
        np.fill_diagonal(matrix, agree["with_ensemble"])
        zmin, zmax = agreement_range(matrix)
        fig.add_trace(go.Heatmap(z=matrix.tolist(), x=names, y=names, zmin=zmin, zmax=zmax, colorscale="Blues",
                                 colorbar=dict(title=dict(text="agreement", side="right"), thickness=12, x=1.02),
                                 hovertemplate="%{y} vs %{x}: %{z:.3f}<extra></extra>"), row=1, col=2)
        fig.update_yaxes(autorange="reversed", row=1, col=2)
        sub = (f"{len(trees)} trees · mean pairwise agreement {agree['mean_pairwise']:.3f} · "
               f"diagonal: agreement with the ensemble's vote · colours span {zmin:.3f} to {zmax:.3f}")
    else:
        sub = f"{len(trees)} trees"
    style.apply_style(fig, title="Forest summary", subtitle=sub, margin=style.MARGIN_SUBPLOTS,
                      height=height or 400)
    # the bars' legend goes under the bars: on the right it would lie over the heatmap's colour bar
    fig.update_layout(barmode="group", meta=dict(n_trees=len(trees)),
                      legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.16, yanchor="top"),
                      margin=dict(style.MARGIN_SUBPLOTS, b=90))
    return fig


def agreement_range(matrix: np.ndarray) -> tuple[float, float]:
    """The colour scale's ends for an agreement matrix: the smallest and largest value shown
    (pairwise off the diagonal, agreement with the ensemble on it), not 0 and 1. Trees of one
    forest mostly agree on 90-100% of samples, and on a 0-1 scale every cell looks the same. Equal
    values get a span of up to 0.01 around them, within [0, 1]."""
    values = np.asarray(matrix, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 0.0, 1.0
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-9:
        low, high = max(0.0, low - 0.005), min(1.0, high + 0.005)
    return low, high
