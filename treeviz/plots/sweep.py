"""A parameter sweep (λ path): tree size and scores against the swept value."""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from treeviz.plots import style

SIZE_KEYS = (("n_active_nodes", "active nodes"), ("active_depth", "depth of the active tree"))


def sweep_figure(rows: Sequence[dict[str, Any]], *, param: str = "prune_strength",
                 metric_keys: Sequence[str] | None = None, selected: float | None = None,
                 log_x: bool = True, height: int | None = None) -> go.Figure:
    """Two panels over the swept value: tree size (active nodes, depth) and scores per split.

    Parameters
    ----------
    rows : list of dict
        One per sweep point, with ``value``, ``n_active_nodes``, ``active_depth`` and metric keys
        (as from :func:`treeviz.sweep.sweep_table`).
    metric_keys : list of str, optional
        Scores to draw (default: every ``train_/val_/test_`` accuracy, R² or dendrogram purity).
    selected : float, optional
        Value marked by a vertical line (the tree shown beside the figure).
    """
    if not rows:
        return style.message_figure("No sweep points yet.", title="Sweep")
    rows = sorted(rows, key=lambda r: r["value"])
    x = [float(r["value"]) for r in rows]
    if metric_keys is None:
        wanted = ("accuracy", "r2", "dendrogram_purity")
        metric_keys = [k for k in rows[0] if k.split("_", 1)[0] in ("train", "val", "test")
                       and k.split("_", 1)[1] in wanted]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("Tree size", "Scores"))
    for i, (key, label) in enumerate(SIZE_KEYS):
        fig.add_trace(go.Scatter(x=x, y=[r.get(key) for r in rows], mode="lines+markers", name=label,
                                 line=dict(color=style.line_color(i)), legendgroup="size",
                                 hovertemplate=f"{param} %{{x:.4g}}<br>{label}: %{{y}}<extra></extra>"),
                      row=1, col=1)
    for i, key in enumerate(metric_keys):
        fig.add_trace(go.Scatter(x=x, y=[r.get(key) for r in rows], mode="lines+markers",
                                 name=key.replace("_", " "), line=dict(color=style.line_color(i + 2)),
                                 legendgroup="score",
                                 hovertemplate=f"{param} %{{x:.4g}}<br>{key}: %{{y:.4f}}<extra></extra>"),
                      row=1, col=2)
    if selected is not None:
        for col in (1, 2):
            fig.add_vline(x=float(selected), line=dict(color=style.HIGHLIGHT, width=2, dash="dot"),
                          row=1, col=col)
    style.apply_style(fig, title=f"Sweep over {param}",
                      subtitle=f"{len(rows)} points · warm-started fits in increasing order",
                      margin=style.MARGIN_SUBPLOTS, height=height or 380)
    fig.update_xaxes(type="log" if log_x and min(x) > 0 else "linear", title=param)
    fig.update_yaxes(title="nodes / levels", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title="score", row=1, col=2)
    fig.update_layout(meta=dict(param=param, values=x, metric_keys=list(metric_keys)))
    return fig
