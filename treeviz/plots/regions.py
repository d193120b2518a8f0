"""Decision regions over two features, and one sample of an image table as its picture.

:func:`regions_figure` draws a model's output over a grid of two features (classes as filled regions
in the tree's class colours, or a regression's values on a colour scale) with the training points on
top. :func:`sample_image_figure` draws one row of an image table as its pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from models.ground.errors import TreevizError
from treeviz.plots import style

#: How strongly the regions are filled (the points on top keep full colour).
REGION_OPACITY = 0.45


def class_scale(n: int) -> list[list[Any]]:
    """A stepwise colour scale over codes ``0..n-1`` (with ``zmin = -0.5``, ``zmax = n - 0.5``): code
    ``k`` gets :func:`treeviz.plots.style.class_color` ``(k)``."""
    n = max(int(n), 1)
    scale: list[list[Any]] = []
    for k in range(n):
        scale += [[k / n, style.class_color(k)], [(k + 1) / n, style.class_color(k)]]
    return scale


def regions_figure(shown_x: Any, shown_y: Any, output: Any, *, kind: str = "class", names: Sequence[str] = (),
                   points: Any = None, point_values: Any = None, feature_names: Sequence[str] = ("x", "y"),
                   held_label: str = "", units: str = "", height: int = 520) -> go.Figure:
    """The model's output over a grid, with training points.

    Parameters
    ----------
    shown_x, shown_y : arrays (nx,), (ny,)
        The grid's values along each axis, in the units shown.
    output : array (ny, nx)
        Class codes into ``names`` (``kind="class"``) or predicted values (``kind="value"``).
    points : array (m, 2), optional
        Training points in the same units; ``point_values`` their class codes or targets.
    feature_names : (str, str)
        The features along x and y.
    held_label, units : str
        Where the other features are held, and the units of the axes (for the subtitle).
    """
    x, y = np.asarray(shown_x, dtype=np.float64), np.asarray(shown_y, dtype=np.float64)
    z = np.asarray(output)
    if z.shape != (y.size, x.size):
        raise TreevizError(f"The regions' grid is {z.shape}, not {(y.size, x.size)} (y by x).")
    if kind not in ("class", "value"):
        raise TreevizError(f"Decision regions are of classes or values, not {kind!r}.")
    fx, fy = (style.plot_text(f) for f in feature_names)
    fig = go.Figure()
    hover = f"{fx}: %{{x:.4g}}<br>{fy}: %{{y:.4g}}<br>"
    if kind == "class":
        labels = style.plot_texts(names)
        codes = z.astype(np.int64)
        text = np.asarray(labels, dtype=object)[codes] if labels else codes.astype(str)
        fig.add_trace(go.Heatmap(x=x.tolist(), y=y.tolist(), z=codes.tolist(), zmin=-0.5,
                                 zmax=max(len(labels), 1) - 0.5, colorscale=class_scale(len(labels)),
                                 showscale=False, opacity=REGION_OPACITY, text=text.tolist(), name="regions",
                                 hovertemplate=hover + "predicted: %{text}<extra></extra>"))
    else:
        fig.add_trace(go.Heatmap(x=x.tolist(), y=y.tolist(), z=z.astype(np.float64).tolist(), name="regions",
                                 coloraxis="coloraxis", opacity=REGION_OPACITY,
                                 hovertemplate=hover + "predicted: %{z:.4g}<extra></extra>"))
    _points(fig, points, point_values, kind, names, hover)
    subtitle = f"Other features held at {style.plot_text(held_label)}" if held_label else ""
    if units:
        subtitle += f" · axes in {style.plot_text(units)}"
    style.apply_style(fig, title="Decision regions", subtitle=subtitle, height=height,
                      xaxis_title=fx, yaxis_title=fy, legend=dict(title=dict(text="training rows")))
    fig.update_xaxes(range=[float(x.min()), float(x.max())], showgrid=False, zeroline=False)
    fig.update_yaxes(range=[float(y.min()), float(y.max())], showgrid=False, zeroline=False)
    if kind == "value":
        fig.update_layout(coloraxis=dict(colorscale=style.SEQUENTIAL, colorbar=dict(title="value")))
    return fig


def _points(fig: go.Figure, points: Any, values: Any, kind: str, names: Sequence[str], hover: str) -> None:
    if points is None or len(points) == 0:
        return
    P = np.asarray(points, dtype=np.float64)
    outline = dict(color="white", width=0.8)
    if values is None:
        fig.add_trace(go.Scattergl(x=P[:, 0].tolist(), y=P[:, 1].tolist(), mode="markers", name="training rows",
                                   marker=dict(color=style.INK, size=5, line=outline),
                                   hovertemplate=hover + "<extra></extra>"))
        return
    v = np.asarray(values)
    if kind == "value":
        fig.add_trace(go.Scattergl(x=P[:, 0].tolist(), y=P[:, 1].tolist(), mode="markers", name="training rows",
                                   marker=dict(color=v.astype(np.float64).tolist(), coloraxis="coloraxis", size=6,
                                               line=outline),
                                   hovertemplate=hover + "target: %{marker.color:.4g}<extra></extra>"))
        return
    labels = style.plot_texts(names)
    for k in np.unique(v.astype(np.int64)):
        mask = v == k
        label = labels[k] if k < len(labels) else str(k)
        fig.add_trace(go.Scattergl(x=P[mask, 0].tolist(), y=P[mask, 1].tolist(), mode="markers", name=label,
                                   marker=dict(color=style.class_color(k), size=6, line=outline),
                                   hovertemplate=hover + f"class: {label}<extra></extra>"))


def sample_image_figure(pixels: Any, image_shape: Sequence[int], *, title: str = "Sample",
                        subtitle: str = "", height: int = 300) -> go.Figure:
    """One row of an image table as its picture (greyscale, dark = high), pixel values on hover."""
    v = np.asarray(pixels, dtype=np.float64).reshape(-1)
    h, w = (int(s) for s in image_shape)
    if v.size != h * w:
        raise TreevizError(f"Image shape {h}×{w} does not match the {v.size} values of the row.")
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    fig = go.Figure(go.Heatmap(z=v.reshape(h, w).tolist(), colorscale="Greys", zmin=lo, zmax=max(hi, lo + 1e-12),
                               showscale=False, name="pixels",
                               hovertemplate="row %{y}, col %{x}: %{z}<extra></extra>"))
    style.apply_style(fig, title=style.plot_text(title), subtitle=style.plot_text(subtitle) if subtitle else None,
                      height=height, margin=dict(l=10, r=10, t=70, b=10))
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain", **style.FRAME)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed",
                     constrain="domain", scaleanchor="x", scaleratio=1, **style.FRAME)
    return fig
