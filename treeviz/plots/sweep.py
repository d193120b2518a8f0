"""A parameter sweep (λ path): tree size and scores against the swept value.

Two figures, named in :data:`PATH_FIGURES` so a family's λ path can say which one draws it:
``"activity"`` (active nodes and the depth of the active tree, for trees whose nodes are switched
off by a pruning strength) and ``"sparsity"`` (error, nonzero weights, decision nodes and FLOPs,
for trees that a sparsity penalty really shrinks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from treeviz.plots import style

SIZE_KEYS = (("n_active_nodes", "active nodes"), ("active_depth", "depth of the active tree"))


def sweep_figure(rows: Sequence[dict[str, Any]], *, param: str,
                 metric_keys: Sequence[str] | None = None, selected: float | None = None,
                 log_x: bool = True, height: int | None = None) -> go.Figure:
    """Two panels over the swept value: tree size (active nodes, depth) and scores per split.

    Parameters
    ----------
    rows : list of dict
        One per sweep point, with ``value``, ``n_active_nodes``, ``active_depth`` and metric keys
        (as from :func:`treeviz.services.experiments.sweep.sweep_table`).
    metric_keys : list of str, optional
        Scores to draw (default: every ``train_/val_/test_`` accuracy, R² or dendrogram purity).
    selected : float, optional
        Value marked by a vertical line (the tree shown beside the figure).
    """
    if not rows:
        return style.message_figure("No sweep points yet.", title="Sweep")
    rows = sorted(rows, key=lambda r: r["value"])
    x = [float(r["value"]) for r in rows]
    shown = style.plot_text(param)  # a sweep's parameter name comes from its runs, which a zip can carry
    if metric_keys is None:
        wanted = ("accuracy", "r2", "dendrogram_purity")
        metric_keys = [k for k in rows[0] if k.split("_", 1)[0] in ("train", "val", "test")
                       and k.split("_", 1)[1] in wanted]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("Tree size", "Scores"))
    for i, (key, label) in enumerate(SIZE_KEYS):
        fig.add_trace(go.Scatter(x=x, y=[r.get(key) for r in rows], mode="lines+markers", name=label,
                                 line=dict(color=style.line_color(i)), legendgroup="size",
                                 hovertemplate=f"{shown} %{{x:.4g}}<br>{label}: %{{y}}<extra></extra>"),
                      row=1, col=1)
    for i, key in enumerate(metric_keys):
        label = style.plot_text(key)
        fig.add_trace(go.Scatter(x=x, y=[r.get(key) for r in rows], mode="lines+markers",
                                 name=label.replace("_", " "), line=dict(color=style.line_color(i + 2)),
                                 legendgroup="score",
                                 hovertemplate=f"{shown} %{{x:.4g}}<br>{label}: %{{y:.4f}}<extra></extra>"),
                      row=1, col=2)
    if selected is not None:
        for col in (1, 2):
            fig.add_vline(x=float(selected), line=dict(color=style.HIGHLIGHT, width=2, dash="dot"),
                          row=1, col=col)
    style.apply_style(fig, title=f"Sweep over {shown}",
                      subtitle=f"{len(rows)} points · fits in increasing order",
                      margin=style.MARGIN_SUBPLOTS, height=height or 380)
    fig.update_xaxes(type="log" if log_x and min(x) > 0 else "linear", title=shown)
    fig.update_yaxes(title="nodes / levels", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title="score", row=1, col=2)
    fig.update_layout(meta=dict(param=param, values=x, metric_keys=list(metric_keys)))
    return fig


def _error_keys(rows: Sequence[dict[str, Any]]) -> tuple[list[tuple[str, str]], str, bool]:
    """(metric key, label) pairs for the error panel, its axis title, and whether the values are
    accuracies shown as errors in %: classification error (from accuracy), RMSE (regression), or
    for an embedding the error of a 5-NN vote in the plane, else its objective E(F(X))."""
    first = rows[0]

    def present(metric: str) -> list[tuple[str, str]]:
        return [(f"{p}_{metric}", p) for p in ("train", "val", "test") if first.get(f"{p}_{metric}") is not None]

    if acc := present("accuracy"):
        return acc, "error (%)", True
    if rmse := present("rmse"):
        return rmse, "RMSE", False
    if knn := present("knn_accuracy"):
        return knn, "5-NN error in the plane (%)", True
    return present("objective"), "embedding objective E(F(X))", False


def lambda_path_figure(rows: Sequence[dict[str, Any]], *, param: str, selected: float | None = None,
                       baseline: dict[str, Any] | None = None, height: int | None = None) -> go.Figure:
    """The sparsity path of a sparse tree: error, nonzero weights, decision nodes and FLOPs against
    λ on a log axis.

    Parameters
    ----------
    rows : list of dict
        One per λ (as from :func:`treeviz.services.experiments.sweep.sweep_table`) with ``value``,
        ``n_nonzero_weights``,
        ``n_decision_nodes``, ``flops`` and the split metrics (``*_accuracy``, ``*_rmse``, or an embedding's
        ``*_knn_accuracy`` / ``train_objective``).
    selected : float, optional
        λ marked by a vertical line (the tree shown beside the figure).
    baseline : dict, optional
        The same keys for a reference tree (e.g. the initial CART tree), drawn as dashed
        horizontal lines.

    Returns
    -------
    go.Figure
        Three panels: "Error" (train/val/test error in %, or RMSE), "Nonzero weights" and
        "Decision nodes and FLOPs / sample".
    """
    if not rows:
        return style.message_figure("No λ path yet.", title="λ path")
    rows = sorted(rows, key=lambda r: r["value"])
    x = [float(r["value"]) for r in rows]
    err_keys, err_title, as_error = _error_keys(rows)
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08,
                        subplot_titles=("Error", "Nonzero weights", "Decision nodes<br>and FLOPs / sample"))

    def err(r: dict[str, Any], key: str) -> float | None:
        v = r.get(key)
        if v is None:
            return None
        return 100.0 * (1.0 - float(v)) if as_error else float(v)

    for i, (key, part) in enumerate(err_keys):
        fig.add_trace(go.Scatter(x=x, y=[err(r, key) for r in rows], mode="lines+markers", name=f"{part} error",
                                 line=dict(color=style.line_color(i)), legendgroup="error",
                                 hovertemplate=f"λ %{{x:.4g}}<br>{part}: %{{y:.4g}}<extra></extra>"), row=1, col=1)
    size_series = (("n_nonzero_weights", "nonzero weights", 2), ("n_decision_nodes", "decision nodes", 3),
                   ("flops", "FLOPs / sample", 3))
    for i, (key, label, col) in enumerate(size_series):
        fig.add_trace(go.Scatter(x=x, y=[r.get(key) for r in rows], mode="lines+markers", name=label,
                                 line=dict(color=style.line_color(len(err_keys) + i),
                                           dash="dot" if key == "flops" else None),
                                 hovertemplate=f"λ %{{x:.4g}}<br>{label}: %{{y:.4g}}<extra></extra>"), row=1, col=col)
    if baseline:
        lines = [(1, err(baseline, k), f"initial tree, {p}") for k, p in err_keys if baseline.get(k) is not None]
        lines += [(2, baseline.get("n_nonzero_weights"), "initial tree"),
                  (3, baseline.get("n_decision_nodes"), "initial tree")]
        for col, yv, label in lines:
            if yv is not None:
                fig.add_hline(y=float(yv), line=dict(color=style.EDGE, dash="dash", width=1), row=1, col=col,
                              annotation_text=label, annotation_font_size=10)
    if selected is not None:
        for col in (1, 2, 3):
            fig.add_vline(x=float(selected), line=dict(color=style.HIGHLIGHT, width=2, dash="dot"), row=1, col=col)
    style.apply_style(fig, title="λ path", subtitle=f"{len(rows)} values of {style.plot_text(param)} · one tree per λ",
                      margin=style.MARGIN_SUBPLOTS, height=height or 380)
    # the x labels stand off a little, so the first one clears the y axis's "0" at the corner
    log = min(x) > 0
    fig.update_xaxes(type="log" if log else "linear", title="λ", ticklabelstandoff=6)
    if log:  # decades only: the 2 and 5 between them crowd a third of a narrow page
        fig.update_xaxes(dtick=1)
    fig.update_yaxes(title=err_title, row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title="nonzero weights", row=1, col=2, rangemode="tozero")
    fig.update_yaxes(title="decision nodes, FLOPs", row=1, col=3, rangemode="tozero")  # the two traces it holds
    fig.update_layout(meta=dict(param=param, values=x, error_keys=[k for k, _ in err_keys]))
    return fig


#: The λ path figures by name (``LambdaPath.figure``); each takes ``(rows, *, param, selected)``.
PATH_FIGURES = {"activity": sweep_figure, "sparsity": lambda_path_figure}
