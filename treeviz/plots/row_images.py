"""The rows that reach a node, drawn as small images (image tables such as digits): the explorer's node
and leaf browser."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from models.ground.errors import TreevizError
from treeviz.plots import style

#: The frame around a misclassified row's image.
WRONG_COLOR = "#D62728"


def row_images_figure(values: np.ndarray, image_shape: Sequence[int], labels: Sequence[str],
                      wrong: Sequence[bool] | None = None, *, rows: Sequence[int] | None = None,
                      max_images: int = 48, columns: int = 12, title: str = "Rows that reach the node",
                      total: int | None = None) -> go.Figure:
    """The first ``max_images`` rows of ``values`` as greyscale thumbnails in one grid, each titled by
    its label, a red frame around those ``wrong`` marks.

    The thumbnails are tiles of one heatmap (one trace, however many rows), one pixel of space between
    them, on one grey scale over the shown pixels (in the data's own units). ``rows`` are the rows'
    numbers in the data set (for the hover and ``layout.meta``); ``total`` the number of rows there
    are, when more than those passed. ``layout.meta`` holds ``rows``, ``wrong`` and ``image_shape``
    of the thumbnails shown.
    """
    X = np.asarray(values, dtype=np.float64)
    h, w = (int(v) for v in image_shape)
    if X.ndim != 2 or X.shape[1] != h * w:
        raise TreevizError(f"Image shape {h}×{w} does not match {X.shape[-1]} features.")
    n = min(int(max_images), X.shape[0])
    total = X.shape[0] if total is None else int(total)
    if n == 0:
        return style.message_figure("No rows reach this node.", title=title, height=200)
    flags = [bool(v) for v in wrong[:n]] if wrong is not None else [False] * n
    numbers = [int(v) for v in rows[:n]] if rows is not None else list(range(n))
    cols = min(int(columns), n)
    lines = math.ceil(n / cols)
    gap = max(2, round(0.4 * h))  # room above each image for its label
    z = np.full((lines * (h + gap), cols * (w + 1) - 1), np.nan)
    hover = np.full(z.shape, "", dtype=object)
    fig = go.Figure()
    for i in range(n):
        top, left = (i // cols) * (h + gap) + gap, (i % cols) * (w + 1)
        z[top:top + h, left:left + w] = X[i].reshape(h, w)
        hover[top:top + h, left:left + w] = style.plot_text(labels[i])
        color = WRONG_COLOR if flags[i] else style.INK
        fig.add_annotation(x=left + (w - 1) / 2, y=top - 0.5 - gap / 2, showarrow=False, yanchor="middle",
                           text=style.plot_text(labels[i].split(" · ", 1)[-1]), font=dict(size=10, color=color))
        if flags[i]:
            fig.add_shape(type="rect", x0=left - 0.5, x1=left + w - 0.5, y0=top - 0.5, y1=top + h - 0.5,
                          line=dict(color=WRONG_COLOR, width=2))
    shown = X[:n][np.isfinite(X[:n])]
    lo, hi = (float(shown.min()), float(shown.max())) if shown.size else (0.0, 1.0)
    fig.add_trace(go.Heatmap(z=z.tolist(), customdata=hover.tolist(), colorscale="Greys", zmin=lo, zmax=hi,
                             showscale=False, hoverongaps=False,
                             hovertemplate="%{customdata}<br>pixel value %{z:.4g}<extra></extra>"))
    n_wrong = sum(flags)
    subtitle = (f"{n} of {total} rows" if total > n else f"{n} rows") + f" · {h}×{w} pixels, the data's own values"
    if wrong is not None:
        subtitle += f" · red frame: misclassified ({n_wrong} shown)"
    style.apply_style(fig, title=title, subtitle=subtitle, height=int(lines * 64 + 130),
                      margin=dict(l=20, r=20, t=90, b=20),
                      meta={"rows": numbers, "wrong": flags, "image_shape": [h, w], "total": total})
    fig.update_xaxes(visible=False, range=[-0.5, z.shape[1] - 0.5], constrain="domain")
    fig.update_yaxes(visible=False, range=[z.shape[0] - 0.5, -0.5], scaleanchor="x", scaleratio=1,
                     constrain="domain")
    return fig
