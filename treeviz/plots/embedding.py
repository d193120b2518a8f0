"""Figures of 2-D embeddings and of semi-supervised learning: a map coloured by class with each
leaf's region, side-by-side maps of several embeddings, the embedding objective along the μ path,
error against the fraction of labelled points, and the data with its labelled points marked.

Inputs are plain arrays (coordinates, class labels, leaf ids); nothing here knows a model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from scipy.spatial import ConvexHull, QhullError

from models.ground.errors import TreevizError
from treeviz.plots import style

#: Above this many points, scatters use WebGL and smaller markers.
GL_POINTS = 1500
#: At most this many leaves get a drawn region (the rest are too many to read).
MAX_REGIONS = 64
REGION_LINE = "#5F6670"
TEST_SYMBOL = "diamond-open"


def _check_coords(Z: Any, name: str = "embedding") -> np.ndarray:
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[1] < 2:
        raise TreevizError(f"The {name} must have 2 columns (one row per point); got shape {Z.shape}.")
    return Z[:, :2]


def _class_codes(classes: Any, n: int, names: Sequence[str] | None = None) -> tuple[np.ndarray | None, list[str]]:
    """Class indices into ``names`` (sorted class labels when not given), or None without classes."""
    if classes is None:
        return None, []
    labels = np.asarray(classes).astype(str).reshape(-1)
    if labels.shape[0] != n:
        raise TreevizError(f"There are {n} points but {labels.shape[0]} class labels.")
    order = [str(c) for c in names] if names is not None else sorted(set(labels.tolist()))
    index = {c: i for i, c in enumerate(order)}
    missing = sorted(set(labels.tolist()) - set(index))
    if missing:
        raise TreevizError(f"Class(es) {', '.join(missing[:3])} are not among the class names given.")
    return np.array([index[c] for c in labels.tolist()], dtype=np.int64), order


def _marker_size(n: int) -> float:
    return 7.0 if n <= 300 else 5.0 if n <= GL_POINTS else 3.5


def _scatter_cls(n: int) -> type:
    return go.Scattergl if n > GL_POINTS else go.Scatter


def _points(fig: go.Figure, Z: np.ndarray, codes: np.ndarray | None, names: list[str], *, label: str,
            symbol: str = "circle", size: float | None = None, opacity: float = 0.8, show_legend: bool = True,
            row: int | None = None, col: int | None = None, hover: str = "", group: str | None = None) -> None:
    """One trace per class (or one trace without classes) of the points ``Z``; with ``group`` all
    of them share one legend group (one legend click shows or hides them all)."""
    n = Z.shape[0]
    size = size or _marker_size(n)
    cls = _scatter_cls(n)
    where = {} if row is None else {"row": row, "col": col}
    groups = [(None, np.arange(n))] if codes is None else [(k, np.flatnonzero(codes == k)) for k in range(len(names))]
    for k, idx in groups:
        if idx.size == 0:
            continue
        color = style.class_color(0 if k is None else k)
        name = label if k is None else f"{style.plot_text(names[k])} ({label})"
        fig.add_trace(cls(
            x=Z[idx, 0], y=Z[idx, 1], mode="markers", name=name, legendgroup=group or name, showlegend=show_legend,
            marker=dict(color=color, size=size, symbol=symbol, opacity=opacity,
                        line=dict(width=1.2, color=color) if symbol.endswith("open") else dict(width=0)),
            hovertemplate=f"{name}{hover}<br>(%{{x:.3g}}, %{{y:.3g}})<extra></extra>",
        ), **where)


def leaf_regions(Z: np.ndarray, leaves: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Each occupied leaf's region in the plane: the convex hull of its points' coordinates as a
    closed polygon ``(m + 1, 2)`` (a segment or a point when its points are collinear or equal),
    leaves in increasing id order."""
    Z = _check_coords(Z)
    leaves = np.asarray(leaves).reshape(-1)
    if leaves.shape[0] != Z.shape[0]:
        raise TreevizError(f"There are {Z.shape[0]} points but {leaves.shape[0]} leaf ids.")
    out = []
    for leaf in np.unique(leaves):
        pts = np.unique(Z[leaves == leaf], axis=0)
        if pts.shape[0] >= 3:
            try:
                hull = ConvexHull(pts)
                poly = pts[hull.vertices]
                out.append((int(leaf), np.vstack([poly, poly[:1]])))
                continue
            except QhullError:  # collinear points: draw the segment between the extremes
                pass
        if pts.shape[0] >= 2:
            direction = pts[-1] - pts[0]
            t = pts @ direction
            out.append((int(leaf), np.vstack([pts[np.argmin(t)], pts[np.argmax(t)]])))
        else:
            out.append((int(leaf), pts[:1]))
    return out


def embedding_map(Z: Any, *, classes: Any = None, class_names: Sequence[str] | None = None, leaves: Any = None,
                  test_Z: Any = None, test_classes: Any = None, title: str = "Tree embedding F(X)",
                  subtitle: str | None = None, height: int | None = None) -> go.Figure:
    """A 2-D embedding coloured by class, with each leaf's region and mapped test points.

    Parameters
    ----------
    Z : array (n, 2)
        The training points' coordinates (for a tree embedding, the tree's outputs F(X)).
    classes : array (n,), optional
        Class labels of the points (colours); without them every point has one colour.
    class_names : sequence of str, optional
        The order of the classes (default: sorted labels).
    leaves : array (n,), optional
        The leaf each point reaches: each leaf's region (the convex hull of its points in the
        plane) is outlined and numbered. Leaves partition the *input* space, so regions may
        overlap in the plane.
    test_Z, test_classes : optional
        Points mapped through the tree that it never saw, drawn as open diamonds.
    """
    Z = _check_coords(Z)
    codes, names = _class_codes(classes, Z.shape[0], class_names)
    subtitle = style.plot_text(subtitle) if subtitle else subtitle
    fig = go.Figure()
    if leaves is not None:
        regions = leaf_regions(Z, np.asarray(leaves))
        xs: list[float | None] = []
        ys: list[float | None] = []
        for _, poly in regions[:MAX_REGIONS]:
            xs += [*poly[:, 0].tolist(), None]
            ys += [*poly[:, 1].tolist(), None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="leaf regions", hoverinfo="skip",
                                 line=dict(color=REGION_LINE, width=1.2, dash="dot"),
                                 marker=dict(size=4, color=REGION_LINE)))
        for leaf, poly in regions[:MAX_REGIONS]:
            centre = poly[:-1].mean(axis=0) if poly.shape[0] > 1 else poly[0]
            fig.add_annotation(x=float(centre[0]), y=float(centre[1]), text=f"<b>{leaf}</b>", showarrow=False,
                               font=dict(size=11, color=style.INK), bgcolor="rgba(255,255,255,0.7)")
        if len(regions) > MAX_REGIONS:
            subtitle = (subtitle + " · " if subtitle else "") + f"regions of the first {MAX_REGIONS} leaves"
    _points(fig, Z, codes, names, label="train")
    if test_Z is not None:
        T = _check_coords(test_Z, "test embedding")
        tcodes, _ = _class_codes(test_classes, T.shape[0], names or None) if test_classes is not None else (None, [])
        # one legend entry for every mapped point, whatever its class (the classes' colours are above)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="mapped points", legendgroup="mapped",
                                 marker=dict(symbol=TEST_SYMBOL, size=9, color=REGION_LINE)))
        _points(fig, T, tcodes, names, label="test", symbol=TEST_SYMBOL, size=_marker_size(T.shape[0]) + 2,
                opacity=0.9, show_legend=False, group="mapped")
    if test_Z is not None:  # frame the training points; mapped points far outside are counted, not framed
        T = _check_coords(test_Z, "test embedding")
        low, high = Z.min(axis=0), Z.max(axis=0)
        pad = 0.15 * np.maximum(high - low, 1e-9)
        outside = int(np.sum(np.any((T < low - pad) | (T > high + pad), axis=1)))
        if outside:
            fig.update_xaxes(range=[low[0] - pad[0], high[0] + pad[0]])
            fig.update_yaxes(range=[low[1] - pad[1], high[1] + pad[1]])
            subtitle = (subtitle + " · " if subtitle else "") + (
                f"{outside} mapped point(s) fall outside this view (double-click the plot to see all)")
    style.apply_style(fig, title=style.plot_text(title), subtitle=subtitle, height=height or 560,
                      legend=dict(itemsizing="constant"),
                      meta={"n_train": int(Z.shape[0]), "n_test": 0 if test_Z is None else int(np.shape(test_Z)[0]),
                            "regions": 0 if leaves is None else min(len(regions), MAX_REGIONS)})
    fig.update_xaxes(title="z1", zeroline=False)
    fig.update_yaxes(title="z2", zeroline=False)
    return fig


def embedding_panels(panels: Sequence[Mapping[str, Any]], *, classes: Any = None,
                     class_names: Sequence[str] | None = None, title: str = "Embeddings of the same points",
                     subtitle: str | None = None, columns: int = 3) -> go.Figure:
    """Several embeddings of the same points side by side, coloured by class.

    Each panel is a mapping with ``title`` and ``Z`` (n, 2), and optionally ``note`` (a line under
    the title, e.g. the objective's value).
    """
    if not panels:
        raise TreevizError("There is no embedding to show.")
    n_panels = len(panels)
    cols = max(1, min(int(columns), n_panels))
    rows = math.ceil(n_panels / cols)
    # a note's parts (" · ") each take a line: three panels share a narrow page's width
    notes = [str(p.get("note", "")).split(" · ") for p in panels]
    notes = [[style.plot_text(part) for part in note if part] for note in notes]
    titles = [style.plot_text(p["title"]) + (f"<br><sup>{'<br>'.join(note)}</sup>" if note else "")
              for p, note in zip(panels, notes, strict=True)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.05,
                        vertical_spacing=0.12 if rows > 1 else 0.0)
    names: list[str] = []
    for i, panel in enumerate(panels):
        Z = _check_coords(panel["Z"], f"embedding '{panel['title']}'")
        codes, names = _class_codes(classes, Z.shape[0], class_names)
        _points(fig, Z, codes, names, label="train", show_legend=i == 0, row=i // cols + 1, col=i % cols + 1,
                size=_marker_size(Z.shape[0]) - 1)
    # panel titles with a note take two lines: the top margin leaves them room under the subtitle
    top = style.MARGIN_SUBPLOTS["t"] + 26 * max(len([part for part in note if part]) for note in notes)
    style.apply_style(fig, title=style.plot_text(title), subtitle=style.plot_text(subtitle) if subtitle else None,
                      height=340 * rows + 80 + top - style.MARGIN_SUBPLOTS["t"],
                      margin=dict(style.MARGIN_SUBPLOTS, t=top),
                      meta={"panels": [str(p["title"]) for p in panels]})
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    return fig


def embedding_objective_curve(history: Sequence[Mapping[str, Any]], *, free: float | None = None,
                              direct: float | None = None, name: str = "E",
                              title: str = "Embedding objective along the path") -> go.Figure:
    """E(F(X)) of the tree at each μ step (step 0 is the direct fit), with the free embedding's
    E(Z0) and the direct fit's E(F0(X)) as reference lines; E(Z) of the free coordinates dotted."""
    steps = [int(r["step"]) for r in history if "step" in r and "E_tree" in r]
    if not steps:
        return style.message_figure("No μ steps were recorded.", title=title)
    e_tree = [float(r["E_tree"]) for r in history if "step" in r and "E_tree" in r]
    name, title = style.plot_text(name), style.plot_text(title)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=steps, y=e_tree, mode="lines+markers", name=f"{name}(F(X)): the tree",
                             line=dict(color=style.line_color(0), width=2.5),
                             hovertemplate="step %{x}<br>%{y:.4g}<extra>tree</extra>"))
    e_z = [(int(r["step"]), float(r["E_Z"])) for r in history if "E_Z" in r and "step" in r]
    if e_z:
        fig.add_trace(go.Scatter(x=[s for s, _ in e_z], y=[v for _, v in e_z], mode="lines", name=f"{name}(Z)",
                                 line=dict(color=style.line_color(2), width=1.5, dash="dot"),
                                 hovertemplate="step %{x}<br>%{y:.4g}<extra>Z</extra>"))
    for value, label, dash, color in ((direct, "direct fit F0(X)", "dash", style.line_color(1)),
                                      (free, "free embedding Z0", "dashdot", style.line_color(3))):
        if value is not None and math.isfinite(value):
            fig.add_hline(y=float(value), line=dict(color=color, dash=dash, width=1.5),
                          annotation_text=f"{label}: {value:.4g}", annotation_position="top right")
    best = int(np.argmin(e_tree))
    style.apply_style(fig, title=title, subtitle=f"lowest {e_tree[best]:.4g} at step {steps[best]} · "
                                                  f"last {e_tree[-1]:.4g}", height=380, meta={"E_tree": e_tree})
    fig.update_xaxes(title="μ step (0 = direct fit)", dtick=max(1, len(steps) // 10))
    fig.update_yaxes(title=name)
    return fig


def label_fraction_figure(rows: Sequence[Mapping[str, Any]], *, metric: str = "test error",
                          title: str = "Error against the fraction of labelled points") -> go.Figure:
    """Mean ± standard deviation of ``error`` per ``method`` against the labelled ``fraction``
    (one row per method, fraction and labelled subset), on a log axis."""
    if not rows:
        return style.message_figure("No results yet.", title=title)
    methods = list(dict.fromkeys(str(r["method"]) for r in rows))
    fig = go.Figure()
    shown_metric = style.plot_text(metric)
    for i, method in enumerate(methods):
        fractions = sorted({float(r["fraction"]) for r in rows if r["method"] == method})
        mean, std, count = [], [], []
        for f in fractions:
            values = np.array([float(r["error"]) for r in rows if r["method"] == method and float(r["fraction"]) == f])
            mean.append(float(values.mean()))
            std.append(float(values.std()))
            count.append(int(values.size))
        fig.add_trace(go.Scatter(
            x=[100 * f for f in fractions], y=mean, mode="lines+markers", name=style.plot_text(method),
            error_y=dict(type="data", array=std, visible=True, thickness=1.2),
            line=dict(color=style.line_color(i), width=2.5 if i == 0 else 1.8), customdata=np.c_[std, count],
            hovertemplate=f"{style.plot_text(method)}<br>%{{x:.3g}} % labelled<br>{shown_metric} %{{y:.3f}} "
                          "± %{customdata[0]:.3f} (%{customdata[1]} subsets)<extra></extra>"))
    style.apply_style(fig, title=style.plot_text(title), subtitle="mean ± std over the labelled subsets", height=420,
                      meta={"methods": methods})
    fig.update_xaxes(title="labelled points (% of the training split)", type="log",
                     **style.log_axis_ticks(100 * float(r["fraction"]) for r in rows))
    fig.update_yaxes(title=shown_metric, rangemode="tozero")
    return fig


def labelled_points_figure(X2: Any, *, classes: Any = None, class_names: Sequence[str] | None = None,
                           labelled: Any = None, axes: tuple[str, str] = ("x1", "x2"),
                           regions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                           title: str = "Training points, labelled ones marked",
                           subtitle: str | None = None, height: int | None = None) -> go.Figure:
    """The training points in 2-D (two features, or a projection), coloured by their true class,
    with the points whose label training used drawn large with a black outline.

    ``regions`` = (x grid (gx,), y grid (gy,), class index per grid point (gy, gx)) shades the
    plane by the model's predicted class (for 2-D inputs).
    """
    P = _check_coords(X2, "points")
    codes, names = _class_codes(classes, P.shape[0], class_names)
    mask = np.zeros(P.shape[0], dtype=bool) if labelled is None else np.asarray(labelled, dtype=bool).reshape(-1)
    if mask.shape[0] != P.shape[0]:
        raise TreevizError(f"There are {P.shape[0]} points but {mask.shape[0]} labelled flags.")
    fig = go.Figure()
    if regions is not None:
        gx, gy, grid = regions
        k = max(len(names), int(np.nanmax(grid)) + 1 if np.size(grid) else 1)
        scale = []
        for c in range(k):
            color = style.rgba(style.class_color(c), 0.18)
            scale += [[c / k, color], [(c + 1) / k, color]]
        fig.add_trace(go.Heatmap(x=gx, y=gy, z=np.asarray(grid, dtype=np.float64), zmin=0, zmax=k,
                                 colorscale=scale, showscale=False, hoverinfo="skip", name="predicted class"))
    unl = np.flatnonzero(~mask)
    _points(fig, P[unl], None if codes is None else codes[unl], names, label="unlabelled", opacity=0.45,
            size=_marker_size(P.shape[0]) - 1)
    lab = np.flatnonzero(mask)
    if lab.size:
        n = lab.size
        groups = [(None, lab)] if codes is None else [(k, lab[codes[lab] == k]) for k in range(len(names))]
        for k, idx in groups:
            if idx.size == 0:
                continue
            color = style.class_color(0 if k is None else k)
            name = "labelled" if k is None else f"{style.plot_text(names[k])} (labelled)"
            fig.add_trace(_scatter_cls(n)(x=P[idx, 0], y=P[idx, 1], mode="markers", name=name,
                                          marker=dict(color=color, size=12, symbol="star",
                                                      line=dict(width=1.5, color="black")),
                                          hovertemplate=f"{name}<br>(%{{x:.3g}}, %{{y:.3g}})<extra></extra>"))
    style.apply_style(fig, title=style.plot_text(title),
                      subtitle=style.plot_text(subtitle) if subtitle else f"{int(mask.sum())} of {P.shape[0]} labelled",
                      height=height or 520, legend=dict(itemsizing="constant"),
                      meta={"labelled": int(mask.sum()), "regions": regions is not None})
    fig.update_xaxes(title=style.plot_text(axes[0]), zeroline=False)
    fig.update_yaxes(title=style.plot_text(axes[1]), zeroline=False)
    return fig


def leaf_class_bars(counts: Any, leaves: Sequence[int], class_names: Sequence[str], *,
                    title: str = "Classes in each leaf", subtitle: str | None = None) -> go.Figure:
    """Stacked bars of the points of each class reaching each leaf (``counts``: leaves × classes),
    the class histograms the thesis draws under its tree embeddings' leaves."""
    counts = np.asarray(counts, dtype=np.float64)
    leaves = [int(v) for v in leaves]
    if counts.ndim != 2 or counts.shape != (len(leaves), len(class_names)):
        raise TreevizError(f"Give one row of class counts per leaf: {len(leaves)} leaves × {len(class_names)} "
                           f"classes, got shape {counts.shape}.")
    fig = go.Figure()
    labels = [f"leaf {v}" for v in leaves]
    for k, name in enumerate(style.plot_texts(class_names)):
        fig.add_trace(go.Bar(x=counts[:, k], y=labels, orientation="h", name=name,
                             marker=dict(color=style.class_color(k)),
                             hovertemplate=f"%{{y}}: %{{x:.0f}} × {name}<extra></extra>"))
    style.apply_style(fig, title=style.plot_text(title), subtitle=style.plot_text(subtitle) if subtitle else None,
                      height=max(260, 26 * len(leaves) + 120),
                      barmode="stack")
    fig.update_xaxes(title="points")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig
