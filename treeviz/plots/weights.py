"""Split weights of decision nodes: signed top-k bars, a nodes × features heatmap, weight images.

Sign convention (one for every family, see :mod:`models.ground.tree`): a sample goes right when
``weight @ x + bias > 0``, so a positive weight (blue) pushes a sample with a large feature value
to the right, a negative weight (red) to the left. Zero is white, colour limits are symmetric.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.plots import style

WEIGHT_AXIS_TITLE = "weight (+ pushes right)"


def top_weights_figure(tree: Tree, node: int, k: int = 10, *, height: int | None = None) -> go.Figure:
    """Signed horizontal bars of the ``k`` largest-|weight| features of one decision node.

    Parameters
    ----------
    tree : Tree
    node : int
        A decision node.
    k : int
        Number of features to show (fewer when the node has fewer nonzero weights).

    Returns
    -------
    go.Figure
        One bar trace, largest |weight| at the top; positive bars blue, negative red. The title
        gives the bias and how many weights are nonzero.
    """
    node = style.check_node(tree, node, decision=True)
    if k < 1:
        raise TreevizError("Show at least one feature (k >= 1).")
    w = tree.weight[node]
    nz = np.flatnonzero(w)
    order = nz[np.argsort(-np.abs(w[nz]), kind="stable")][:k]
    shown = order[::-1]  # plotly draws the first category at the bottom
    names = style.plot_texts(tree.feature_names[j] for j in shown)
    vals = w[shown]
    fig = go.Figure(go.Bar(
        x=vals.tolist(), y=names, orientation="h", name="weight",
        marker=dict(color=[style.POSITIVE if v > 0 else style.NEGATIVE for v in vals], line=dict(width=0)),
        customdata=[[int(j)] for j in shown],
        hovertemplate="<b>%{y}</b> (feature %{customdata[0]})<br>weight %{x:.4g}<extra></extra>",
    ))
    bias = float(tree.bias[node])
    title = f"Node {node}: top {order.size} of {nz.size} nonzero weights"
    subtitle = (f"bias = {style.fmt_num(bias)} · goes right if w·x + b > 0 · "
                f"{nz.size} of {tree.n_features} features used")
    style.apply_style(fig, title=title, subtitle=subtitle,
                      height=height or int(np.clip(130 + 28 * max(order.size, 1), 300, 800)))
    if nz.size == 0:
        fig.add_annotation(text="all weights are zero: a constant split", x=0.5, y=0.5, xref="paper",
                           yref="paper", showarrow=False)
    lim = style.symmetric_limit(vals) * 1.08
    fig.update_xaxes(title=dict(text=WEIGHT_AXIS_TITLE), range=[-lim, lim], zeroline=True,
                     zerolinecolor="#8A9099", zerolinewidth=1.5)
    fig.update_yaxes(automargin=True, type="category")
    fig.update_layout(bargap=0.25, showlegend=False, meta=dict(node=node, features=[int(j) for j in order]))
    return fig


def weights_heatmap(
    tree: Tree,
    nodes: Sequence[int] | None = None,
    max_features: int = 60,
    *,
    drop_zero: bool = True,
    height: int | None = None,
) -> go.Figure:
    """Decision nodes × features heatmap of split weights (diverging, white = 0).

    Parameters
    ----------
    tree : Tree
    nodes : list of int, optional
        Decision nodes to show (default: all, in id order). Leaves are skipped.
    max_features : int
        At most this many feature columns; when there are more, the ones with the largest total
        |weight| over the shown nodes are kept (in their original order).
    drop_zero : bool
        Leave out features whose weights are zero at every shown node.

    Returns
    -------
    go.Figure
        One heatmap; ``z`` has shape (n_nodes_shown, n_features_shown), rows labelled
        ``"node i"``. ``fig.layout.meta`` lists the node ids and feature indexes shown.
    """
    if nodes is None:
        nodes = tree.decision_nodes
    nodes = [style.check_node(tree, v) for v in nodes]
    nodes = [v for v in nodes if not tree.is_leaf[v]]
    if not nodes:
        return style.message_figure("This tree has no decision nodes to show.", title="Split weights")
    W = tree.weight[nodes]
    feats = np.arange(tree.n_features)
    if drop_zero:
        feats = feats[np.any(W != 0, axis=0)]
    n_used = feats.size
    if feats.size > max_features:
        total = np.abs(W[:, feats]).sum(axis=0)
        keep = np.sort(np.argsort(-total, kind="stable")[:max_features])
        feats = feats[keep]
    if feats.size == 0:
        return style.message_figure("All split weights of these nodes are zero.", title="Split weights")
    z = W[:, feats]
    lim = style.symmetric_limit(z)
    fnames = style.plot_texts(tree.feature_names[j] for j in feats)
    rows = [f"node {v}" for v in nodes]
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=fnames, y=rows, zmin=-lim, zmax=lim, zmid=0.0, colorscale=style.DIVERGING,
        xgap=1 if feats.size <= 80 else 0, ygap=1 if len(nodes) <= 60 else 0,
        colorbar=dict(title=dict(text=WEIGHT_AXIS_TITLE, side="right"), thickness=14),
        hovertemplate="<b>%{y}</b><br>feature: %{x}<br>weight: %{z:.4g}<extra></extra>",
    ))
    sub = f"{len(nodes)} decision nodes × {feats.size} features"
    if feats.size < n_used:
        sub += f" (the {feats.size} of {n_used} nonzero features with the largest total |weight|)"
    elif drop_zero and n_used < tree.n_features:
        sub += f" ({tree.n_features - n_used} all-zero features left out)"
    style.apply_style(fig, title="Split weights per node", subtitle=sub,
                      height=height or int(np.clip(160 + 22 * len(nodes), 320, 900)))
    fig.update_xaxes(type="category", tickangle=-45 if feats.size > 8 else 0, showgrid=False, automargin=True)
    fig.update_yaxes(type="category", autorange="reversed", showgrid=False, automargin=True)
    fig.update_layout(plot_bgcolor="#F2F3F5",
                      meta=dict(nodes=[int(v) for v in nodes], features=[int(j) for j in feats]))
    return fig


def _image_shape(tree: Tree, image_shape: Sequence[int]) -> tuple[int, int]:
    if len(image_shape) != 2:
        raise TreevizError("The image shape must be (height, width).")
    h, w = int(image_shape[0]), int(image_shape[1])
    if h * w != tree.n_features:
        raise TreevizError(
            f"An image of {h}×{w} = {h * w} pixels does not match the tree's {tree.n_features} features."
        )
    return h, w


def _pixel_names(tree: Tree, h: int, w: int) -> np.ndarray:
    return np.asarray(style.feature_names(tree), dtype=object).reshape(h, w)


def weight_image_figure(
    tree: Tree,
    node: int,
    image_shape: Sequence[int],
    *,
    symmetric: bool = True,
    height: int | None = None,
) -> go.Figure:
    """One decision node's weight vector drawn as an image (H×W heatmap).

    Parameters
    ----------
    tree : Tree
    node : int
        A decision node.
    image_shape : (H, W)
        ``H * W`` must equal the number of features (pixels in row-major order).
    symmetric : bool
        Colour limits ``±max|w|`` (white = 0 exactly). If False, the limits follow the data but
        zero stays white (``zmid=0``).

    Returns
    -------
    go.Figure
        One heatmap with ``z`` of shape (H, W): blue = positive (pushes right), red = negative,
        white = zero; equal aspect, y axis reversed like an image.
    """
    node = style.check_node(tree, node, decision=True)
    h, w = _image_shape(tree, image_shape)
    z = tree.weight[node].reshape(h, w)
    lim = style.symmetric_limit(z)
    limits = dict(zmin=-lim, zmax=lim) if symmetric else {}
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=list(range(w)), y=list(range(h)), zmid=0.0, colorscale=style.DIVERGING, **limits,
        customdata=_pixel_names(tree, h, w).tolist(),
        colorbar=dict(title=dict(text=WEIGHT_AXIS_TITLE, side="right"), thickness=14),
        hovertemplate="row %{y}, column %{x}<br>%{customdata}<br>weight: %{z:.4g}<extra></extra>",
    ))
    nnz = int(np.count_nonzero(z))
    style.apply_style(fig, title=f"Node {node} weights as a {h}×{w} image",
                      subtitle=f"bias = {style.fmt_num(float(tree.bias[node]))} · {nnz} of {h * w} "
                               "pixels nonzero · blue pushes right, red pushes left",
                      height=height or 460)
    fig.update_xaxes(showgrid=False, zeroline=False, showticklabels=False, constrain="domain", **style.FRAME)
    fig.update_yaxes(showgrid=False, zeroline=False, showticklabels=False, autorange="reversed",
                     scaleanchor="x", scaleratio=1, constrain="domain", **style.FRAME)
    fig.update_layout(meta=dict(node=node, image_shape=[h, w]))
    return fig


def weight_images_grid(
    tree: Tree,
    image_shape: Sequence[int],
    nodes: Sequence[int] | None = None,
    max_nodes: int = 16,
    *,
    shared_scale: bool = False,
    height: int | None = None,
) -> go.Figure:
    """Weight images of several decision nodes side by side, each on its own colour scale by default.

    Parameters
    ----------
    tree : Tree
    image_shape : (H, W)
    nodes : list of int, optional
        Decision nodes (default: all, root first, level by level).
    max_nodes : int
        At most this many images (the first ones).
    shared_scale : bool
        False (default): each image has its own limits ``±max|w|`` of that node, so the pattern of
        every node shows even when the root's weights are far larger than the others'. True: one
        colour bar, limits symmetric around 0 over all shown nodes, so colours compare across nodes.

    Returns
    -------
    go.Figure
        One heatmap per node in a grid of subplots titled ``"node i"``; zero is white in both
        modes. ``fig.layout.meta`` holds the node ids, ``shared_scale`` and each node's ``±max|w|``.
    """
    h, w = _image_shape(tree, image_shape)
    if nodes is None:
        nodes = [int(v) for lvl in tree.levels for v in lvl if not tree.is_leaf[v]]
    nodes = [v for v in (style.check_node(tree, v) for v in nodes) if not tree.is_leaf[v]]
    total = len(nodes)
    nodes = nodes[: max(1, int(max_nodes))]
    if not nodes:
        return style.message_figure("This tree has no decision nodes to show.", title="Weight images")
    cols = min(4, math.ceil(math.sqrt(len(nodes))))
    rows = math.ceil(len(nodes) / cols)
    limits = [style.symmetric_limit(tree.weight[v]) for v in nodes]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"node {v}" for v in nodes],
                        horizontal_spacing=0.03, vertical_spacing=0.08 if rows > 1 else 0.1)
    names = _pixel_names(tree, h, w)
    for i, v in enumerate(nodes):
        r, c = divmod(i, cols)
        # per node: own symmetric limits and no colour bar (one bar per image would crowd the grid;
        # the hover gives the value and the node's limit)
        scale = (dict(coloraxis="coloraxis") if shared_scale else
                 dict(zmin=-limits[i], zmax=limits[i], zmid=0.0, colorscale=style.DIVERGING, showscale=False))
        fig.add_trace(go.Heatmap(
            z=tree.weight[v].reshape(h, w).tolist(), customdata=names.tolist(), name=f"node {v}", **scale,
            hovertemplate=f"node {v}<br>row %{{y}}, column %{{x}}<br>%{{customdata}}<br>"
                          "weight: %{z:.4g}" + ("" if shared_scale else
                                                 f" (scale ±{style.fmt_num(limits[i], 3)})")
                          + "<extra></extra>",
        ), row=r + 1, col=c + 1)
    sub = f"{len(nodes)} of {total} decision nodes" if total > len(nodes) else f"{total} decision nodes"
    sub += (" · one colour scale for all nodes" if shared_scale else
            " · each node on its own scale ±max|w| of that node")
    style.apply_style(fig, title="Node weights as images", subtitle=sub + " · blue pushes right, red left",
                      height=height or int(np.clip(120 + 200 * rows, 300, 1100)))
    if shared_scale:
        lim = style.symmetric_limit(tree.weight[nodes])
        fig.update_layout(coloraxis=dict(colorscale=style.DIVERGING, cmin=-lim, cmax=lim, cmid=0.0,
                                         colorbar=dict(title=dict(text=WEIGHT_AXIS_TITLE, side="right"),
                                                       thickness=14)))
    fig.update_layout(meta=dict(nodes=nodes, image_shape=[h, w], shared_scale=bool(shared_scale),
                                limits=[float(lim) for lim in limits]),
                      margin=style.MARGIN_SUBPLOTS)
    fig.update_annotations(font=dict(size=12))
    fig.update_xaxes(showgrid=False, zeroline=False, showticklabels=False, constrain="domain", **style.FRAME)
    for i in range(len(nodes)):
        suffix = "" if i == 0 else str(i + 1)
        fig.layout[f"yaxis{suffix}"].update(showgrid=False, zeroline=False, showticklabels=False,
                                            autorange="reversed", scaleanchor=f"x{suffix}", scaleratio=1,
                                            constrain="domain", **style.FRAME)
    return fig
