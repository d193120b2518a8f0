"""Figures of a data set before any model: class balance, target distribution, sample images."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.errors import TreevizError
from treeviz.plots import style


def class_balance_figure(counts: Sequence[float], class_names: Sequence[str], *,
                         title: str = "Rows per class", height: int | None = None) -> go.Figure:
    """Bar chart of the number of rows per class, each bar in its class colour."""
    counts = np.asarray(counts, dtype=np.float64)
    names = style.plot_texts(class_names)
    if counts.shape[0] != len(names):
        raise TreevizError(f"{counts.shape[0]} class counts were given for {len(names)} classes.")
    total = counts.sum() or 1.0
    fig = go.Figure(go.Bar(
        x=names, y=counts.tolist(), marker=dict(color=style.class_colors(len(names))),
        customdata=(counts / total * 100).tolist(),
        hovertemplate="<b>%{x}</b><br>%{y} rows (%{customdata:.1f}%)<extra></extra>",
    ))
    style.apply_style(fig, title=style.plot_text(title),
                      subtitle=f"{style.fmt_count(float(counts.sum()))} rows, {len(names)} classes",
                      height=height or 320)
    fig.update_xaxes(type="category")
    fig.update_yaxes(title="rows")
    return fig


def target_histogram(y: Sequence[float], *, name: str = "target", bins: int = 40,
                     height: int | None = None) -> go.Figure:
    """Histogram of a regression target."""
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    name = style.plot_text(name)
    if y.size == 0:
        return style.message_figure("No target values to show.", title=f"Distribution of {name}")
    fig = go.Figure(go.Histogram(x=y.tolist(), nbinsx=bins, marker=dict(color=style.class_color(0)),
                                 hovertemplate=f"{name} %{{x}}<br>%{{y}} rows<extra></extra>"))
    style.apply_style(fig, title=f"Distribution of {name}",
                      subtitle=f"mean {style.fmt_num(float(y.mean()))} · sd {style.fmt_num(float(y.std()))}",
                      height=height or 320)
    fig.update_xaxes(title=name)
    fig.update_yaxes(title="rows")
    return fig


def sample_images_figure(X: np.ndarray, image_shape: Sequence[int], labels: Sequence[str] | None = None,
                         *, max_images: int = 12, columns: int = 6, height: int | None = None) -> go.Figure:
    """The first rows of image-shaped data drawn as greyscale images, titled by their labels."""
    X = np.asarray(X, dtype=np.float64)
    h, w = (int(v) for v in image_shape)
    if X.ndim != 2 or X.shape[1] != h * w:
        raise TreevizError(f"Image shape {h}×{w} does not match {X.shape[-1]} features.")
    n = min(max_images, X.shape[0])
    if n == 0:
        return style.message_figure("No rows to show.", title="Sample images")
    cols = min(columns, n)
    rows = math.ceil(n / cols)
    titles = [style.plot_text(labels[i]) if labels is not None else f"row {i}" for i in range(n)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.02,
                        vertical_spacing=0.08)
    finite = X[:n][np.isfinite(X[:n])]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    for i in range(n):
        fig.add_trace(go.Heatmap(z=X[i].reshape(h, w).tolist(), colorscale="Greys", zmin=lo, zmax=hi,
                                 showscale=False, hovertemplate="row %{y}, col %{x}: %{z}<extra></extra>"),
                      row=i // cols + 1, col=i % cols + 1)
    style.apply_style(fig, title="Sample images", subtitle=f"{h}×{w} pixels", margin=style.MARGIN_SUBPLOTS,
                      height=height or 140 * rows + 120)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed",
                     constrain="domain")
    for i in range(n):
        suffix = "" if i == 0 else str(i + 1)
        fig.layout[f"yaxis{suffix}"].update(scaleanchor=f"x{suffix}", scaleratio=1)
    return fig
