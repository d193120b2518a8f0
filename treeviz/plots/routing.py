"""How the classes travel through a tree: a Sankey of class flows and per-node left/right splits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.errors import TreevizError
from models.ground.tree import NodeStats, Tree
from treeviz.plots import style
from treeviz.readers.rules import node_rule

MAX_SPLIT_PANELS = 16
MAX_SPLIT_CLASSES = 15


def _class_stats(tree: Tree, X: Any, y: Any, stats: NodeStats | None) -> NodeStats:
    if tree.task != "classification":
        raise TreevizError("Class routing needs a classification tree.")
    if stats is None:
        if X is None or y is None:
            raise TreevizError("Class routing needs data: pass X and y (or precomputed stats).")
        Xc, yc = style.check_data(tree, X, y)
        stats = tree.node_stats(Xc, yc)
    if stats.class_counts is None:
        raise TreevizError("Class routing needs class labels; the statistics have no class counts.")
    return stats


#: Vertical room between two Sankey nodes: at least one label's height (11 px text), so the labels
#: of two nodes that hold one sample each still do not overlap.
LABEL_PAD = 16


def _flow_height(tree: Tree, nodes: Sequence[int]) -> int:
    """A height that gives every node of the most crowded level a label's room (plotly shrinks the
    padding between nodes when they do not fit, and their labels then overlap)."""
    per_level = np.bincount(np.asarray(tree.node_depth)[list(nodes)]) if len(nodes) else np.zeros(1)
    crowded = int(per_level.max())
    return int(np.clip(150 + (LABEL_PAD + 8) * crowded, 420, 2000))


def _branch_code(tree: Tree, v: int) -> int:
    """The turns from the root to ``v`` as a binary number (left 0, right 1): on one level, the
    nodes' codes increase from the tree's left to its right."""
    code, bit = 0, 1
    while tree.parent[v] >= 0:
        p = int(tree.parent[v])
        code += bit * int(tree.children_right[p] == v)
        bit, v = bit * 2, p
    return code


def _slot_tops(tree: Tree, nodes: Sequence[int], count: np.ndarray) -> dict[int, float]:
    """Where each node's share of the root's samples starts, top to bottom in tree order: a left
    child starts where its parent does, a right child after its sibling's share."""
    top = {int(nodes[0]): 0.0}
    for v in nodes:  # parents come before their children (sorted by depth)
        if tree.is_leaf[v] or v not in top:
            continue
        left, right = int(tree.children_left[v]), int(tree.children_right[v])
        both = float(count[left] + count[right])
        top[left] = top[v]
        top[right] = top[v] + (float(count[v]) * float(count[left]) / both if both > 0 else 0.0)
    return top


def _flow_positions(tree: Tree, nodes: list[int], value: dict[int, float], count: np.ndarray,
                    plot_height: float) -> tuple[list[float], list[float]]:
    """Node centres for the Sankey (fractions of its width and height): x by depth, y by the node's
    place in the tree, so each level reads left to right of the tree from top to bottom and no two
    bands cross.

    Plotly sizes nodes as d3-sankey does (``ky``: the most crowded level fills the height, with
    :data:`LABEL_PAD` pixels between nodes); each node is centred on its share of the root's samples
    and then moved just enough that it keeps that padding to its neighbours and stays inside.
    The last gap between levels is twice the others: plotly writes the deepest level's labels on
    the left of its nodes, where the level before writes its labels on the right.
    """
    depth = {v: int(tree.node_depth[v]) for v in nodes}
    deepest = max(depth.values())
    columns: dict[int, list[int]] = {}
    top = _slot_tops(tree, nodes, count)
    for v in nodes:  # level by level, each in tree order
        columns.setdefault(depth[v], []).append(v)
    pad = float(LABEL_PAD)
    ky = min((plot_height - (len(c) - 1) * pad) / max(sum(value[v] for v in c), 1e-12) for c in columns.values())
    root_count = max(float(count[nodes[0]]), 1e-12)
    centre: dict[int, float] = {}
    for column in columns.values():
        sizes = [value[v] * ky for v in column]
        y0 = [(top[v] + float(count[v]) / 2) / root_count * plot_height - s / 2 for v, s in zip(column, sizes)]
        floor = 0.0
        for i, s in enumerate(sizes):  # down: keep the padding to the node above
            y0[i] = max(y0[i], floor)
            floor = y0[i] + s + pad
        ceiling = plot_height
        for i in range(len(sizes) - 1, -1, -1):  # up: stay inside, keep the padding to the node below
            y0[i] = max(0.0, min(y0[i], ceiling - sizes[i]))
            ceiling = y0[i] - pad
        centre.update({v: (a + s / 2) / plot_height for v, a, s in zip(column, y0, sizes)})
    units = deepest + 1 if deepest > 1 else deepest  # the last gap counts twice
    x = [min(depth[v], units) / units if depth[v] < deepest else 1.0 for v in nodes]
    # plotly ignores a position of exactly 0, so the root column and the top nodes sit a hair inside
    return [max(a, 1e-3) for a in x], [float(np.clip(centre[v], 1e-3, 1.0)) for v in nodes]


def class_flow_figure(
    tree: Tree,
    X: Any,
    y: Any,
    *,
    max_levels: int = 4,
    class_names: Sequence[str] | None = None,
    stats: NodeStats | None = None,
    height: int | None = None,
) -> go.Figure:
    """Sankey diagram of the samples of each class flowing from the root down the tree.

    Parameters
    ----------
    tree : Tree
        A classification tree.
    X, y : array
        Data and class indices (or class names). Ignored when ``stats`` is given.
    max_levels : int
        Show nodes down to this depth (root = depth 0).
    class_names : list of str, optional
        Names for the classes (default: the tree's ``output_names``).
    stats : NodeStats, optional
        Precomputed ``tree.node_stats(X, y)``.

    Returns
    -------
    go.Figure
        One Sankey trace. Its nodes are tree nodes reached by at least one sample (labels
        ``"node i (n=…)"``, ``customdata`` = node id); each link goes parent → child for one class,
        with ``value`` = the number of samples of that class reaching the child and the class
        colour. Links into the nodes of one depth add up, per class, to the samples of that class
        reaching that depth. ``fig.layout.meta["nodes"]`` lists the node id of each Sankey node.
    """
    stats = _class_stats(tree, X, y, stats)
    names = style.class_names(tree, class_names)
    if max_levels < 1:
        raise TreevizError("Show at least one level below the root (max_levels >= 1).")
    count, cc = stats.count, stats.class_counts
    nodes = [int(v) for v in tree.subtree_nodes(0, max_levels) if count[v] > 0]
    nodes.sort(key=lambda v: (tree.node_depth[v], _branch_code(tree, v)))  # level by level, each in tree order
    index = {v: i for i, v in enumerate(nodes)}
    labels = [f"node {v}" for v in nodes]  # every node, the deepest level's too
    node_colors = [style.class_color(int(np.argmax(cc[v]))) for v in nodes]
    src, tgt, val, link_colors, link_labels = [], [], [], [], []
    for v in nodes:
        p = int(tree.parent[v])
        if p < 0 or p not in index:
            continue
        for k in np.flatnonzero(cc[v] > 0):
            src.append(index[p])
            tgt.append(index[v])
            val.append(float(cc[v, k]))
            link_colors.append(style.rgba(style.class_color(int(k)), 0.45))
            link_labels.append(names[k])
    height = height or _flow_height(tree, nodes)
    into = {v: float(cc[v].sum()) for v in nodes}
    out = dict.fromkeys(nodes, 0.0)
    for v in nodes[1:]:
        out[int(tree.parent[v])] += into[v]
    value = {v: max(into[v], out[v]) for v in nodes}  # d3-sankey's node value: the larger of in and out
    node_x, node_y = _flow_positions(tree, nodes, value, count, height - style.MARGIN["t"] - style.MARGIN["b"])
    fig = go.Figure(go.Sankey(
        arrangement="snap",
        # the order given, top to bottom, for the nodes and for the bands at each node (plotly's
        # own order crosses bands); the positions from _flow_positions
        node=dict(label=labels, color=node_colors, customdata=nodes, x=node_x, y=node_y, pad=LABEL_PAD,
                  thickness=16, align="left", sort="input",
                  line=dict(color="white", width=0.5),
                  hovertemplate="<b>node %{customdata}</b><br>%{value:,.4~g} samples<extra></extra>"),
        link=dict(source=src, target=tgt, value=val, color=link_colors, label=link_labels, sort="input",
                  hovertemplate="<b>%{label}</b>: %{value:,.4~g} samples<br>"
                                "node %{source.customdata} → node %{target.customdata}<extra></extra>"),
        textfont=dict(family=style.FONT_FAMILY, size=11, color=style.INK),
    ))
    depth = min(int(max_levels), tree.max_depth)
    style.apply_style(fig, title="Class flow through the tree",
                      subtitle=f"depths 0–{depth} · {style.fmt_count(float(count[0]))} samples · "
                               "link width = samples of one class · nodes in tree order, left child above",
                      height=height)
    # Legend of class colours (the Sankey trace has none of its own).
    for k in sorted({int(k) for k in np.flatnonzero(cc[0] > 0)})[:20]:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=names[k], hoverinfo="skip",
                                 marker=dict(size=11, symbol="square", color=style.class_color(k))))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(meta=dict(nodes=nodes), legend=dict(itemclick=False, itemdoubleclick=False),
                      showlegend=len(fig.data) > 1)
    return fig


def _nice_ticks(lim: float) -> list[float]:
    if lim <= 0:
        return [0.0]
    raw = lim / 3
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 5, 10) if s * mag >= raw)
    n = int(lim // step)
    return [i * step for i in range(-n, n + 1)]


def class_split_bars(
    tree: Tree,
    X: Any,
    y: Any,
    *,
    max_levels: int = 3,
    class_names: Sequence[str] | None = None,
    normalize: bool = False,
    stats: NodeStats | None = None,
    height: int | None = None,
) -> go.Figure:
    """For each decision node, how the samples of every class split left vs right.

    One panel per decision node above depth ``max_levels`` (root first, at most 16 panels). In a
    panel each class is one horizontal bar: the hatched part to the left of zero counts the samples
    of that class that go left, the solid part to the right those that go right.

    Parameters
    ----------
    tree : Tree
        A classification tree.
    X, y : array
        Data and class indices (or class names). Ignored when ``stats`` is given.
    max_levels : int
        Show decision nodes at depths ``0 .. max_levels - 1``.
    class_names : list of str, optional
    normalize : bool
        Show the share of each class going left / right instead of counts.
    stats : NodeStats, optional

    Returns
    -------
    go.Figure
        Two bar traces per panel (``"left"`` with negated values, then ``"right"``);
        ``fig.layout.meta["nodes"]`` lists the panel nodes in order.
    """
    stats = _class_stats(tree, X, y, stats)
    names = style.class_names(tree, class_names)
    cc = stats.class_counts
    nodes = [int(v) for lvl in tree.levels[: max(1, int(max_levels))] for v in lvl
             if not tree.is_leaf[v] and stats.count[v] > 0]
    total = len(nodes)
    nodes = nodes[:MAX_SPLIT_PANELS]
    if not nodes:
        return style.message_figure("No decision node is reached by the data.", title="Class splits")
    cols = min(3, len(nodes))
    rows = math.ceil(len(nodes) / cols)
    titles = []
    for v in nodes:
        t = f"node {v}: right if {node_rule(tree, v, max_terms=2, precision=3)}"
        titles.append(style.plot_text(t if len(t) <= 52 else t[:51] + "…"))  # cut, then Plotly text
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.12,
                        vertical_spacing=min(0.12, 0.3 / rows))
    for i, v in enumerate(nodes):
        r, c = divmod(i, cols)
        present = np.flatnonzero(cc[v] > 0)
        present = np.sort(present[np.argsort(-cc[v, present], kind="stable")][:MAX_SPLIT_CLASSES])
        left = cc[tree.children_left[v], present]
        right = cc[tree.children_right[v], present]
        tot = left + right
        denom = np.where(tot > 0, tot, 1.0)
        ynames = [names[k] for k in present]
        colors = [style.class_color(int(k)) for k in present]
        for side, counts, sign in (("left", left, -1), ("right", right, 1)):
            share = counts / denom
            vals = share if normalize else counts
            fig.add_trace(go.Bar(
                x=(sign * vals).tolist(), y=ynames, orientation="h", name=f"goes {side}",
                legendgroup=side, showlegend=i == 0,
                marker=dict(color=colors, line=dict(width=0),
                            pattern=dict(shape="/" if side == "left" else "", fgcolor="white", solidity=0.3)),
                customdata=np.column_stack([counts, share]).tolist(),
                hovertemplate=f"<b>%{{y}}</b> at node {v}<br>goes {side}: %{{customdata[0]:,.4~g}} "
                              "(%{customdata[1]:.0%} of the class)<extra></extra>",
            ), row=r + 1, col=c + 1)
        lim = 1.0 if normalize else float(max(left.max(initial=0), right.max(initial=0), 1))
        ticks = _nice_ticks(lim)
        fig.update_xaxes(range=[-lim * 1.05, lim * 1.05], tickvals=ticks,
                         ticktext=[f"{abs(t):.0%}" if normalize else f"{abs(t):,.4g}" for t in ticks],
                         zeroline=True, zerolinecolor="#5F6670", zerolinewidth=1.5, row=r + 1, col=c + 1)
        fig.update_yaxes(type="category", autorange="reversed", automargin=True, row=r + 1, col=c + 1)
    sub = "hatched = goes left, solid = goes right"
    sub += " · share of each class" if normalize else " · samples"
    if total > len(nodes):
        sub += f" · first {len(nodes)} of {total} decision nodes"
    style.apply_style(fig, title="How each class splits at each node", subtitle=sub,
                      height=height or int(np.clip(140 + 230 * rows, 360, 1200)))
    fig.update_layout(barmode="relative", bargap=0.2, meta=dict(nodes=nodes), margin=style.MARGIN_SUBPLOTS,
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"))
    fig.update_annotations(font=dict(size=12))
    return fig
