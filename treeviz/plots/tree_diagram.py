"""The tree diagram: nodes as one scatter trace (selectable), edges as a few line traces.

Trace order in the returned figure (``fig.layout.meta`` repeats the important indexes):

1. edge traces, one per width bucket (at most 8), then one dashed trace for edges into pruned
   nodes (``pruned="dashed"``);
2. ``"sample path"`` — the highlighted path, when ``highlight`` is given;
3. ``"selected"`` — a ring around the selected node, just outside its marker and under the node
   ids;
4. ``"nodes"`` — ONE marker trace, one point per shown node, ``customdata[i] = [node id, depth,
   samples]``; this is the only trace with ``customdata``, so a selected point's
   ``customdata[0]`` is the node id (see :func:`node_from_selection`);
5. legend-only entries (class colours, pruned marker) or an invisible trace carrying the
   colour bar; they have no points.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from models.ground.errors import TreevizError
from models.ground.tree import NodeStats, Tree
from treeviz.plots import style
from treeviz.plots.node_info import class_fractions, hover_text, node_values, subtree_sizes
from treeviz.readers.exports import tree_of
from treeviz.readers.layout import layout_arrays
from treeviz.readers.rules import leaf_label, leaf_state

NODE_TRACE_NAME = "nodes"
COLOR_MODES = ("auto", "class", "value", "active")
PRUNED_MODES = ("dashed", "hidden")
MAX_MIX_NODES = 100  # class-mix bars are drawn up to this many shown nodes
MAX_LABEL_LEAVES = 40  # leaf labels are drawn up to this many shown leaves
MAX_ID_LABELS = 127  # node ids are written beside the nodes up to this many shown nodes (depth 6)
_N_WIDTH_BUCKETS = 7  # plus one bucket for edges into empty nodes = at most 8 edge traces
RING_GAP, RING_WIDTH = 2.5, 2  # the selected node's ring: pixels between it and the marker's edge, its line width
_TREE_WORDS = ("tree", "trees")  # a family name holding one of these needs no "tree" after it


def tree_title(family: str | None) -> str:
    """The diagram's name for a tree of ``family`` (a display name, as Plotly text): the name and
    "tree" ("CART tree", "TAO forest tree"), or the name alone when it already says tree ("TAO
    sparse oblique tree", "Latent trees"), so no word is written twice."""
    if not family:
        return "Tree"
    shown = style.plot_text(family)
    words = {word.strip(".,;:()[]").lower() for word in str(family).split()}
    return shown if words & set(_TREE_WORDS) else f"{shown} tree"


def _resolve_mode(tree: Tree, color_by: str) -> str:
    if color_by == "auto":
        if tree.task == "classification":
            return "class"
        if tree.task == "regression":
            return "value"
        return "active"
    if color_by == "class" and tree.task != "classification":
        raise TreevizError("Colouring by class needs a classification tree; use 'value' or 'active'.")
    if color_by == "value" and tree.task != "regression":
        raise TreevizError("Colouring by value needs a regression tree; use 'class' or 'active'.")
    return color_by


def _edge_xy(pairs: Iterable[tuple[int, int]], px: Mapping[int, tuple[float, float]]) -> tuple[list, list]:
    xs: list[float | None] = []
    ys: list[float | None] = []
    for p, c in pairs:
        xs += [px[p][0], px[c][0], None]
        ys += [px[p][1], px[c][1], None]
    return xs, ys


def _scatter(**props: Any) -> dict[str, Any]:
    # Traces are collected as dicts and validated once by go.Figure(data=...): building go.Scatter
    # objects and adding them validates every per-node array twice (slow for 5000-node trees).
    return dict(type="scatter", **props)


def _add_edges(traces: list[dict], edges: list[tuple[int, int, bool]], pos: dict,
               stats: NodeStats | None, root_count: float) -> list[int]:
    """Edge line traces: one per width bucket (width grows with the child's samples), plus one
    dashed trace for edges into pruned nodes. Returns the indexes of the traces added."""
    first = len(traces)
    solid = [(p, c) for p, c, d in edges if not d]
    if stats is not None and root_count > 0:
        buckets: dict[int, list[tuple[int, int]]] = {}
        for p, c in solid:
            f = float(stats.count[c]) / root_count
            b = 0 if f <= 0 else max(1, min(_N_WIDTH_BUCKETS, int(np.ceil(f * _N_WIDTH_BUCKETS - 1e-9))))
            buckets.setdefault(b, []).append((p, c))
        for b in sorted(buckets):
            ex, ey = _edge_xy(buckets[b], pos)
            label = "no samples" if b == 0 else \
                f"{(b - 1) / _N_WIDTH_BUCKETS:.0%}–{b / _N_WIDTH_BUCKETS:.0%} of samples"
            width = 0.8 if b == 0 else 1.0 + 1.5 * (b - 1)
            traces.append(_scatter(x=ex, y=ey, mode="lines", name=f"edges: {label}", hoverinfo="skip",
                                   line=dict(color=style.EDGE, width=width), showlegend=False))
    elif solid:
        ex, ey = _edge_xy(solid, pos)
        traces.append(_scatter(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip",
                               line=dict(color=style.EDGE, width=1.6), showlegend=False))
    dashed = [(p, c) for p, c, d in edges if d]
    if dashed:
        ex, ey = _edge_xy(dashed, pos)
        traces.append(_scatter(x=ex, y=ey, mode="lines", name="edges: pruned", hoverinfo="skip",
                               line=dict(color=style.PRUNED, width=1.2, dash="dash"), showlegend=False))
    return list(range(first, len(traces)))


def _path_xy(path: list[int], shown: set, parent: np.ndarray, pos: dict) -> tuple[list, list]:
    """Polyline through the shown nodes of a path, broken where two are not parent and child."""
    hx: list[float | None] = []
    hy: list[float | None] = []
    prev = None
    for v in path:
        if v not in shown:
            prev = None
            continue
        if prev is not None and parent[v] != prev:
            hx.append(None)
            hy.append(None)
        hx.append(pos[v][0])
        hy.append(pos[v][1])
        prev = v
    return hx, hy


def _mix_shapes(node_list: list[int], fractions: np.ndarray, skip: np.ndarray, pos: dict,
                msize: float) -> list[dict]:
    """Stacked bars of the class mix under each node: 0.7 data units wide (never overlapping,
    since nodes on a level are >= 1 apart), a few pixels high just below the marker."""
    shapes = []
    top, bottom = msize / 2 + 3, msize / 2 + 9
    for i, v in enumerate(node_list):
        frac = fractions[v]
        if skip[i] or not np.isfinite(frac).all():
            continue
        left = pos[v][0] - 0.35
        for k in np.flatnonzero(frac > 0):
            w = 0.7 * float(frac[k])
            shapes.append(dict(type="rect", xref="x", yref="y", ysizemode="pixel", yanchor=pos[v][1],
                               x0=left, x1=left + w, y0=-top, y1=-bottom, line=dict(width=0),
                               fillcolor=style.class_color(int(k)), layer="above"))
            left += w
    return shapes


def _leaf_texts(tree: Tree, leaves: list[int]) -> list[str]:
    """Each leaf's label: its class or value, or why it has none; names cut to 14 characters."""
    out = []
    for v in leaves:
        lv = tree.leaf_value[v]
        if leaf_state(tree, v) in ("pruned", "empty"):  # no class or value to show
            text = leaf_label(tree, v)
        else:
            text = tree.output_names[int(np.argmax(lv))] if tree.task == "classification" else \
                style.fmt_num(lv[0], 3)
        out.append(text if len(text) <= 14 else text[:13] + "…")
    return out


def _leaf_labels(leaves: list[int], texts: list[str], pos: dict, shift: float, angle: int) -> list[dict]:
    return [dict(x=pos[v][0], y=pos[v][1], text=style.plot_text(text), showarrow=False, yanchor="top",
                 yshift=-shift, textangle=angle, font=dict(size=11, color=style.INK))
            for v, text in zip(leaves, texts)]


@dataclass(frozen=True)
class TreeFigureOptions:
    """How :func:`tree_figure` draws a tree: the window shown, the colouring and what is marked.

    Attributes
    ----------
    root, max_levels : int
        The window: the subtree of ``root`` down to ``max_levels`` levels below it (None = all).
    color_by : {"auto", "class", "value", "active"}
        Majority class (with class-mix bars), mean target, or node activity (``active``); "auto" picks
        class / value / active for classification / regression / clustering trees.
    highlight : sequence of int, optional
        Node ids of one sample's path (e.g. ``tree.paths(x)[0]``; -1 entries are ignored); kept as a
        tuple of ints.
    selected : int, optional
        A node drawn with a ring.
    pruned : {"dashed", "hidden"}
        Draw pruned nodes (``active == 0``) hollow and grey with dashed edges, or leave them
        (and their subtrees) out.
    show_mix : bool
        Draw a stacked bar of the class mix under each node (class colouring, at most 100 nodes).
    height : int, optional
        Figure height in pixels (default grows with the number of levels shown).
    family_label : str, optional
        The family's display name ("TAO forest"), which :func:`tree_title` makes the title of; the
        Tree's family key when not given.
    member : (int, int), optional
        ``(k, n)``: the tree is tree ``k`` (counted from 1) of an ensemble of ``n``; the title says
        "tree k of n" after the family's name.
    width : int, optional
        The width in pixels the figure will be drawn at, when the caller knows it is narrow (half a
        page): leaf labels are then written across, up, or not at all, whichever fits between the
        leaves at that width, so no two overlap. Without it, 12 leaves or fewer are labelled across
        and more up.
    """

    root: int = 0
    max_levels: int | None = None
    color_by: str = "auto"
    highlight: tuple[int, ...] | None = None
    selected: int | None = None
    pruned: str = "dashed"
    show_mix: bool = True
    height: int | None = None
    family_label: str | None = None
    member: tuple[int, int] | None = None
    width: int | None = None

    def __post_init__(self) -> None:
        if self.pruned not in PRUNED_MODES:
            raise TreevizError(f"pruned must be 'dashed' or 'hidden', not {self.pruned!r}.")
        if self.color_by not in COLOR_MODES:
            raise TreevizError(f"color_by must be one of {', '.join(COLOR_MODES)}, not {self.color_by!r}.")
        if self.highlight is not None:
            object.__setattr__(self, "highlight", tuple(int(v) for v in self.highlight))


@dataclass(frozen=True)
class _Window:
    """The shown part of a tree, laid out: node ids, positions and what each shown node is."""

    tree: Tree
    stats: NodeStats | None
    root: int
    nodes: np.ndarray  # shown node ids, in layout order
    node_list: list[int]
    x: np.ndarray  # horizontal position of each shown node
    ny: np.ndarray  # minus the level below the window's root
    pos: dict[int, tuple[float, float]]
    dashed: np.ndarray  # drawn as pruned
    is_leaf: np.ndarray
    window_cut: np.ndarray  # decision nodes on the window's last level: their subtrees continue outside it
    cut: np.ndarray  # nodes below each shown node that the window leaves out
    root_count: float
    names: list[str]  # every output's name as Plotly text: the classes, or the target

    @property
    def m(self) -> int:
        return len(self.node_list)


def _window(tree: Tree, stats: NodeStats | None, root: int, options: TreeFigureOptions) -> _Window:
    max_levels = options.max_levels
    keep = tree.active > 0 if options.pruned == "hidden" else None
    nodes, x, ny = layout_arrays(tree, root, max_levels, keep=keep)
    node_list = nodes.tolist()
    m = len(node_list)
    is_leaf = tree.is_leaf[nodes]
    window_cut = ~is_leaf & (max_levels is not None) & (-ny >= (max_levels or 0))
    return _Window(
        tree=tree, stats=stats, root=root, nodes=nodes, node_list=node_list, x=x, ny=ny,
        pos={v: (float(a), float(b)) for v, a, b in zip(node_list, x.tolist(), ny.tolist())},
        dashed=(tree.active[nodes] == 0) if options.pruned == "dashed" else np.zeros(m, dtype=bool),
        is_leaf=is_leaf, window_cut=window_cut, cut=np.where(window_cut, subtree_sizes(tree)[nodes] - 1, 0),
        root_count=float(stats.count[root]) if stats is not None else 0.0,
        names=style.class_names(tree),
    )


def _node_colors(w: _Window, mode: str) -> tuple[list, np.ndarray | None, tuple | None]:
    """(a colour per shown node, the class fractions when colouring by class, the colour bar's
    (scale, low, high, title) when there is one)."""
    tree, stats, nodes, m = w.tree, w.stats, w.nodes, w.m
    fractions = class_fractions(tree, stats) if mode == "class" else None
    colorbar = None
    if mode == "class":
        colors = [style.NEUTRAL] * m
        if fractions is not None:
            for i, v in enumerate(w.node_list):
                if np.isfinite(fractions[v]).all():
                    colors[i] = style.class_color(int(np.argmax(fractions[v])))
    elif mode == "value":
        vals = node_values(tree, stats)[nodes]
        finite = vals[np.isfinite(vals)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        colors = style.scale_colors(vals, style.SEQUENTIAL, lo, hi)
        title = f"mean {w.names[0]}" if stats is not None and stats.value_mean is not None else f"leaf {w.names[0]}"
        colorbar = (style.SEQUENTIAL, lo, hi, title)
    else:
        colors = style.scale_colors(tree.active[nodes], style.ACTIVE_SCALE, 0.0, 1.0)
        colorbar = (style.ACTIVE_SCALE, 0.0, 1.0, "activity")
    # Pruned nodes: white fill (hides the edges behind) with a grey outline.
    return ["white" if d else c for c, d in zip(colors, w.dashed)], fractions, colorbar


def _node_trace(w: _Window, colors: list, on_path: set[int], msize: float) -> dict[str, Any]:
    """The one marker trace of the shown nodes (the only trace with ``customdata``)."""
    tree, stats, nodes, node_list, m = w.tree, w.stats, w.nodes, w.node_list, w.m
    symbols = ["square" if leaf else ("triangle-down" if cut_here else "circle")
               for leaf, cut_here in zip(w.is_leaf, w.window_cut)]
    line_color: Any = "white"
    line_width: Any = 1.0
    if on_path or w.dashed.any():  # per-node outlines only when needed (each array costs validation time)
        line_color = [style.INK if v in on_path else (style.PRUNED if w.dashed[i] else "white")
                      for i, v in enumerate(node_list)]
        line_width = [2.5 if v in on_path else (1.5 if w.dashed[i] else 1.0) for i, v in enumerate(node_list)]
    counts = [None if stats is None else (round(float(c)) if abs(c - round(c)) < 1e-9 else round(float(c), 3))
              for c in (stats.count[nodes].tolist() if stats is not None else [0.0] * m)]
    depth = tree.node_depth[nodes].tolist()
    hover = [hover_text(tree, v, stats, w.root_count, w.names, int(w.cut[i])) for i, v in enumerate(node_list)]
    # node ids beside the markers, so "node 12" in a heatmap or a table can be found in the tree (the
    # hover always names the node; past MAX_ID_LABELS nodes the labels would overlap)
    labelled = m <= MAX_ID_LABELS
    return _scatter(
        x=w.x.tolist(), y=w.ny.tolist(), mode="markers+text" if labelled else "markers", name=NODE_TRACE_NAME,
        **(dict(text=[str(v) for v in node_list], textposition="top right") if labelled else {}),
        textfont=dict(size=9, color=style.EDGE),
        customdata=[[v, d, c] for v, d, c in zip(node_list, depth, counts)],
        hovertext=hover,
        hovertemplate="<b>node %{customdata[0]}</b> · depth %{customdata[1]}<br>%{hovertext}<extra></extra>",
        marker=dict(size=msize, color=colors, symbol=symbols, opacity=1.0,
                    line=dict(color=line_color, width=line_width)),
        showlegend=False,
    )


def _colored_classes(w: _Window, fractions: np.ndarray, mix_drawn: bool) -> list[int]:
    """Every class that has a colour in the figure: the majority class of a coloured node, and,
    when the class-mix bars are drawn, every class in some node's bar."""
    drawn = [v for i, v in enumerate(w.node_list) if not w.dashed[i] and np.isfinite(fractions[v]).all()]
    used = {int(np.argmax(fractions[v])) for v in drawn}
    if mix_drawn and drawn:
        used.update(int(k) for k in np.flatnonzero((fractions[drawn] > 0).any(axis=0)))
    return sorted(used)


def _legend_traces(w: _Window, mode: str, fractions: np.ndarray | None, colorbar: tuple | None,
                   mix_drawn: bool = False) -> list[dict]:
    """Point-less entries: class colours (every class the nodes or the class-mix bars show; ``mix_drawn``
    says whether the bars are drawn), the colour bar, the pruned and the cut-window markers."""
    traces = []
    if mode == "class" and fractions is not None and len(w.names) <= 20:
        for k in _colored_classes(w, fractions, mix_drawn):
            traces.append(_scatter(x=[None], y=[None], mode="markers", name=w.names[k], hoverinfo="skip",
                                   marker=dict(size=11, symbol="square", color=style.class_color(k))))
    if colorbar is not None:
        scale, lo, hi, cb_title = colorbar
        traces.append(_scatter(x=[None], y=[None], mode="markers", name=cb_title, hoverinfo="skip",
                               showlegend=False,
                               marker=dict(color=[lo], cmin=lo, cmax=hi, colorscale=scale, showscale=True,
                                           colorbar=dict(title=dict(text=cb_title), thickness=14, len=0.6,
                                                         y=0.0, yanchor="bottom"))))
    if w.dashed.any():
        traces.append(_scatter(x=[None], y=[None], mode="lines+markers", name="pruned (active = 0)",
                               hoverinfo="skip", line=dict(color=style.PRUNED, dash="dash", width=1.2),
                               marker=dict(size=10, symbol="circle", color="white",
                                           line=dict(color=style.PRUNED, width=1.5))))
    if w.window_cut.any():
        traces.append(_scatter(x=[None], y=[None], mode="markers", name="subtree continues below",
                               hoverinfo="skip",
                               marker=dict(size=10, symbol="triangle-down", color="#5F6670")))
    return traces


#: Pixels per character of a leaf label (font size 11), an upper estimate, and the width a label written
#: upwards takes; the room a legend entry's marker takes beside its text.
_LABEL_CHAR_PX, _UPRIGHT_PX, _LEGEND_MARKER_PX = 7.0, 16.0, 45.0


def _leaf_label_angle(w: _Window, leaves: list[int], texts: list[str], legend: list[str],
                      width: int | None) -> int | None:
    """How the leaf labels are written: 0 (across), -90 (upwards) or None (not at all). Without
    ``width``, across up to 12 leaves and upwards beyond. With it, the narrowest gap between two
    shown leaves is measured in pixels of the plot area (the figure's width less its margins and a
    legend on the right) and the labels are written the first way that fits in it."""
    if not leaves or len(leaves) > MAX_LABEL_LEAVES:
        return None
    if width is None:
        return 0 if len(leaves) <= 12 else -90
    gap = np.inf  # the narrowest gap between two leaves on one level (labels on different levels are apart)
    for level in {w.pos[v][1] for v in leaves}:
        xs = np.sort(np.asarray([w.pos[v][0] for v in leaves if w.pos[v][1] == level], dtype=np.float64))
        if xs.size > 1:
            gap = min(gap, float(np.diff(xs).min()))
    span = float(w.x.max() - w.x.min()) + 1.8  # the x range tree_figure gives the axis
    legend_px = _LEGEND_MARKER_PX + _LABEL_CHAR_PX * max(map(len, legend)) if legend else 0.0
    plot_px = max(width - style.MARGIN["l"] - style.MARGIN["r"] - legend_px, 1.0)
    slot = gap * plot_px / span
    if slot >= _LABEL_CHAR_PX * max(map(len, texts)) + 4:
        return 0
    return -90 if slot >= _UPRIGHT_PX else None


def _subtitle(w: _Window, options: TreeFigureOptions, mode: str, mix_wanted: bool, n_leaves: int,
              labels_fit: bool = True) -> str:
    """What the figure shows: the window, what was left out, and what the colour means."""
    tree, m, root = w.tree, w.m, w.root
    levels = int(-w.ny.min()) + 1 if m else 1
    whole = root == 0 and (options.max_levels is None or options.max_levels >= tree.max_depth)
    d0 = int(tree.node_depth[root])
    if whole:
        window = f"whole tree · {'all ' if m == tree.n_nodes else f'{m} of '}{tree.n_nodes} nodes"
    else:
        window = (f"window: subtree of node {root}, depths {d0}–{d0 + levels - 1} of 0–{tree.max_depth}"
                  f" · {m} of {tree.n_nodes} nodes shown")
    if options.pruned == "hidden" and (tree.active == 0).any():
        window += " · pruned nodes hidden"
    if mix_wanted and m > MAX_MIX_NODES:
        window += f" · class-mix bars only up to {MAX_MIX_NODES} nodes (hover a node for its mix)"
    if n_leaves > MAX_LABEL_LEAVES:
        window += f" · leaf labels only up to {MAX_LABEL_LEAVES} leaves"
    elif not labels_fit:
        window += " · no leaf labels: too many leaves for this width (hover a leaf)"
    mode_text = {"class": "majority class", "value": "mean target", "active": "node activity a_t"}[mode]
    if tree.head_decides:  # the leaves describe their rows; they do not predict
        mode_text += " · a head predicts; leaves describe their rows"
    return f"{window} · colour: {mode_text}"


def tree_figure(tree: Tree, *, X: Any = None, y: Any = None, stats: NodeStats | None = None,
                options: TreeFigureOptions | None = None) -> go.Figure:
    """Draw a tree (or a depth window of it) as an interactive node-link diagram.

    Parameters
    ----------
    tree : Tree
    X, y : array, optional
        Data to route through the tree for per-node statistics (``y`` as class indices or class
        names, or regression targets). Ignored when ``stats`` is given.
    stats : NodeStats, optional
        Precomputed ``tree.node_stats(X, y)``. Without stats or data, only leaf values colour.
    options : TreeFigureOptions, optional
        The window, colouring and marks (default: the whole tree, coloured for its task).

    Returns
    -------
    go.Figure
        See the module docstring for the trace order; ``fig.layout.meta["node_trace"]`` is the
        index of the node trace and ``fig.layout.meta["nodes"]`` the node id of each point.
    """
    options = options or TreeFigureOptions()
    root = style.check_node(tree, options.root)
    if stats is None and X is not None:
        Xc, yc = style.check_data(tree, X, y)
        stats = tree.node_stats(Xc, yc)
    mode = _resolve_mode(tree, options.color_by)
    w = _window(tree, stats, root, options)
    m, node_list, pos, shown = w.m, w.node_list, w.pos, set(w.node_list)
    colors, fractions, colorbar = _node_colors(w, mode)

    traces: list[dict[str, Any]] = []
    parent = tree.parent
    edge_traces = _add_edges(traces, [(int(parent[v]), v, bool(w.dashed[i])) for i, v in enumerate(node_list)
                                   if v != root], pos, stats, w.root_count)
    path = [v for v in (options.highlight or ()) if v >= 0]
    on_path = {v for v in path if v in shown}
    if path:
        hx, hy = _path_xy(path, shown, parent, pos)
        traces.append(_scatter(x=hx, y=hy, mode="lines", name="sample path", hoverinfo="skip",
                               line=dict(color=style.HIGHLIGHT, width=5), opacity=0.95, showlegend=True))
    msize = float(np.clip(30 - 3 * np.log2(m + 1), 7, 20))
    selected = options.selected
    if selected is not None and int(selected) in shown:
        sx, sy = pos[int(selected)]
        # a ring close around the marker (RING_GAP px outside it), inside the distance at which plotly
        # writes the node's id, and drawn under the nodes' trace, whose ids it never covers
        traces.append(_scatter(x=[sx], y=[sy], mode="markers", name="selected", hoverinfo="skip",
                               marker=dict(size=msize + 2 * RING_GAP, symbol="circle-open", color=style.INK,
                                           line=dict(width=RING_WIDTH, color=style.INK)), showlegend=False))
    node_trace = len(traces)
    traces.append(_node_trace(w, colors, on_path, msize))
    # class-mix bars and leaf labels
    mix_wanted = mode == "class" and options.show_mix and fractions is not None
    shapes = _mix_shapes(node_list, fractions, w.dashed, pos, msize) if mix_wanted and m <= MAX_MIX_NODES else []
    traces += _legend_traces(w, mode, fractions, colorbar, mix_drawn=bool(shapes))
    leaves = [v for v, leaf in zip(node_list, w.is_leaf) if leaf]
    texts = _leaf_texts(tree, leaves) if len(leaves) <= MAX_LABEL_LEAVES else []
    legend = [str(t["name"]) for t in traces if t.get("showlegend", True) and t.get("name")]
    angle = _leaf_label_angle(w, leaves, texts, legend, options.width)
    shift = (msize / 2 + 9 if shapes else msize / 2) + 3
    annotations = [] if angle is None else _leaf_labels(leaves, texts, pos, shift, angle)

    levels = int(-w.ny.min()) + 1 if m else 1
    # the family's own name comes from the caller (plots read no registry); the key is the fallback
    title = f"{tree_title(options.family_label or tree.family)} · depth {tree.max_depth}"
    if options.member is not None:  # one tree of an ensemble: the family's name, then which tree
        k, n = options.member
        title = f"{style.plot_text(options.family_label or tree.family)} · tree {k} of {n} · depth {tree.max_depth}"
    fig = go.Figure(data=traces)
    subtitle = _subtitle(w, options, mode, mix_wanted, len(leaves), labels_fit=angle is not None or not leaves)
    style.apply_style(fig, title=title, subtitle=subtitle,
                      height=options.height or int(np.clip(140 + 95 * levels, 380, 900)))
    pad_bottom = 0.9 if annotations and len(leaves) > 12 else (0.6 if annotations or shapes else 0.4)
    xmin, xmax = (float(w.x.min()), float(w.x.max())) if m else (0.0, 0.0)
    max_levels, pruned = options.max_levels, options.pruned
    fig.update_layout(
        shapes=shapes, annotations=annotations, dragmode="pan", hovermode="closest",
        clickmode="event+select", uirevision=f"tree-{root}-{max_levels}-{pruned}",
        legend=dict(itemclick=False, itemdoubleclick=False, bgcolor="rgba(255,255,255,0.8)"),
        meta=dict(node_trace=node_trace, edge_traces=edge_traces, nodes=node_list, color_by=mode,
                  root=root, max_levels=max_levels),
    )
    fig.update_xaxes(visible=False, showgrid=False, zeroline=False, range=[xmin - 0.9, xmax + 0.9])
    fig.update_yaxes(visible=False, showgrid=False, zeroline=False, range=[-(levels - 1) - pad_bottom, 0.45])
    return fig


def node_from_selection(selection: Any) -> int | None:
    """The node id picked in a Streamlit selection event of :func:`tree_figure`, or None.

    Accepts the value returned by ``st.plotly_chart(fig, on_select="rerun")``, its
    ``.selection``, or a plain dict with a ``"points"`` list. The node trace is the only trace
    whose points carry ``customdata``, whose first entry is the node id.
    """
    if selection is None:
        return None
    if not isinstance(selection, Mapping) or "points" not in selection:
        selection = getattr(selection, "selection", None) or (selection.get("selection")
                                                               if isinstance(selection, Mapping) else None)
    points = (selection or {}).get("points", []) if isinstance(selection, Mapping) else \
        getattr(selection, "points", [])
    for point in points or []:
        cd = point.get("customdata") if isinstance(point, Mapping) else None
        if cd is None:
            continue
        first = cd[0] if isinstance(cd, (list, tuple)) else cd
        try:
            return int(first)
        except (TypeError, ValueError):
            continue
    return None


def plot_tree(model_or_tree: Any, X: Any = None, y: Any = None, *, tree: int = 0, **options: Any) -> go.Figure:
    """The Tree explorer's diagram of a fitted estimator (tree ``tree`` of an ensemble) or a Tree, with
    ``X`` and ``y`` routed through it for per-node counts when given; ``options`` are the fields of
    :class:`TreeFigureOptions` (``root``, ``max_levels``, ``color_by``, ...)."""
    return tree_figure(tree_of(model_or_tree, tree), X=X, y=y, options=TreeFigureOptions(**options))
