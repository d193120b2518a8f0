"""The hierarchy a tree defines over its leaves, drawn as a dendrogram with each leaf's class mix.

For clustering trees (each leaf a cluster, the internal nodes the hierarchy) and any tree whose
leaves group points. Pruned nodes (active == 0) and nodes no point reaches are left out; a node
left with one child is drawn as a straight link to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.errors import TreevizError
from models.ground.tree import NodeStats, Tree
from treeviz.plots import style


def _shown(tree: Tree, stats: NodeStats) -> np.ndarray:
    keep = (tree.active > 0) & (stats.count > 0)
    keep[0] = True
    return keep


def _leaf_order(tree: Tree, keep: np.ndarray) -> list[int]:
    """Nodes that end a branch of the shown hierarchy, left to right (depth-first)."""
    order, stack = [], [0]
    while stack:
        v = stack.pop()
        kids = [] if tree.is_leaf[v] else [int(c) for c in (tree.children_right[v], tree.children_left[v]) if keep[c]]
        if not kids:
            order.append(v)
        stack.extend(kids)
    return order


def dendrogram_figure(tree: Tree, stats: NodeStats, *, class_names: Sequence[str] | None = None,
                      title: str = "Dendrogram", subtitle: str | None = None,
                      height: int | None = None) -> go.Figure:
    """Elbow dendrogram of the shown nodes (root on top, one level per depth) above stacked bars
    of each end node's class counts.

    Parameters
    ----------
    tree : Tree
    stats : NodeStats
        Per-node counts; ``class_counts`` (reference classes) colour the bars when present.
    class_names : names of the columns of ``stats.class_counts``.
    """
    if stats.count.shape[0] != tree.n_nodes:
        raise TreevizError("The statistics do not belong to this tree (node counts differ).")
    keep = _shown(tree, stats)
    ends = _leaf_order(tree, keep)
    x = np.full(tree.n_nodes, np.nan)
    x[ends] = np.arange(len(ends), dtype=float)
    for level in reversed(tree.levels):  # children before parents
        for v in level:
            if keep[v] and not tree.is_leaf[v] and np.isnan(x[v]):
                kids = [c for c in (tree.children_left[v], tree.children_right[v]) if keep[c]]
                x[v] = float(np.mean([x[c] for c in kids]))
    y = -tree.node_depth.astype(float)
    bottom = -float(tree.node_depth[ends].max()) if ends else 0.0
    y_end = np.where(np.isin(np.arange(tree.n_nodes), ends), bottom, y)
    has_classes = stats.class_counts is not None
    fig = make_subplots(rows=2 if has_classes else 1, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        row_heights=[0.7, 0.3] if has_classes else None)
    lx, ly = [], []
    for v in np.flatnonzero(keep):
        if tree.is_leaf[v]:
            continue
        kids = [int(c) for c in (tree.children_left[v], tree.children_right[v]) if keep[c]]
        if not kids:
            continue
        xs = [x[c] for c in kids]
        lx += [min(xs), max(xs), None]
        ly += [y[v], y[v], None]
        for c in kids:
            lx += [x[c], x[c], None]
            ly += [y[v], y_end[c], None]
    fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line=dict(color=style.EDGE, width=2),
                             hoverinfo="skip", showlegend=False, name="links"), row=1, col=1)
    shown = np.flatnonzero(keep)
    labels = None if class_names is None else style.plot_texts(class_names)
    hover = []
    for v in shown:
        line = f"node {v}<br>depth {tree.node_depth[v]}<br>{style.fmt_count(float(stats.count[v]))} points"
        if has_classes and stats.count[v] > 0:
            frac = stats.class_counts[v] / stats.count[v]
            k = int(np.argmax(frac))
            names = labels if labels is not None else [str(i) for i in range(frac.size)]
            line += f"<br>majority {names[k]} ({frac[k]:.0%})"
        line += f"<br>activity a_t {tree.active[v]:.2f}"
        hover.append(line)
    fig.add_trace(go.Scatter(
        x=x[shown].tolist(), y=y_end[shown].tolist(), mode="markers", name="nodes",
        marker=dict(size=9, color=tree.active[shown].tolist(), colorscale="Blues", cmin=0, cmax=1,
                    line=dict(color=style.INK, width=0.5)),
        customdata=[[int(v)] for v in shown], hovertext=hover, hoverinfo="text", showlegend=False,
    ), row=1, col=1)
    if has_classes:
        names = labels if labels is not None else [str(i) for i in range(stats.class_counts.shape[1])]
        for k, name in enumerate(names):
            fig.add_trace(go.Bar(x=list(range(len(ends))), y=stats.class_counts[ends, k].tolist(), name=name,
                                 marker=dict(color=style.class_color(k)),
                                 hovertemplate=f"{name}: %{{y}}<extra></extra>"), row=2, col=1)
        fig.update_layout(barmode="stack")
        fig.update_yaxes(title="points", row=2, col=1)
    style.apply_style(fig, title=style.plot_text(title),
                      subtitle=style.plot_text(subtitle) if subtitle else
                      f"{len(ends)} clusters (end nodes) · {int(keep.sum())} nodes shown", height=height or 520)
    fig.update_xaxes(tickvals=list(range(len(ends))), ticktext=[f"node {v}" for v in ends],
                     showgrid=False, row=2 if has_classes else 1, col=1)
    fig.update_xaxes(showticklabels=not has_classes, showgrid=False, zeroline=False, row=1, col=1)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, title="depth ↓", row=1, col=1)
    fig.update_layout(meta=dict(ends=[int(v) for v in ends], shown=[int(v) for v in shown]))
    return fig
