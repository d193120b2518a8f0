"""Feature selection: features kept during training, the selected set, budget searches, baselines.

* :func:`feature_trajectory_figure`: features kept after each epoch, with the selection strength
  (a λ0 ramp, say) on a second axis;
* :func:`feature_ranking_figure`: every feature's weight norm over all trees, ranked, removed
  features in grey;
* :func:`feature_mask_figure`: the same norms as an image, for image data (removed pixels grey and
  crossed out, kept ones on a blue scale);
* :func:`budget_trials_figure`: validation (and test) score against features used, one point
  per trial of a budget search, with the budget line and the chosen trial;
* :func:`selection_comparison_figure`: test scores of several selections at the same budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.errors import TreevizError
from treeviz.plots import style

KEPT = style.POSITIVE
REMOVED = style.PRUNED


def feature_trajectory_figure(history: Sequence[Mapping[str, Any]], *, count: str = "n_features",
                              x: str = "epoch", schedule: str | None = None, schedule_label: str = "",
                              n_inputs: int | None = None, height: int | None = None) -> go.Figure:
    """Features kept against the epoch (a step line), and the selection strength on a right axis."""
    rows = [r for r in history if isinstance(r.get(count), (int, float))]
    if not rows:
        return style.message_figure("This run recorded no feature counts.", title="Features kept")
    xs = [r.get(x, i + 1) for i, r in enumerate(rows)]
    x_title = style.plot_text(x)
    fig = make_subplots(specs=[[{"secondary_y": schedule is not None}]])
    fig.add_trace(go.Scatter(x=xs, y=[r[count] for r in rows], mode="lines", line=dict(color=KEPT, width=3,
                                                                                     shape="hv"),
                             name="features kept",
                             hovertemplate=f"{x_title} %{{x}}<br>%{{y}} features<extra></extra>"),
                  secondary_y=False)
    if schedule is not None:
        label = style.plot_text(schedule_label or schedule)
        values = [r.get(schedule) for r in rows]
        fig.add_trace(go.Scatter(x=xs, y=values, mode="lines", line=dict(color=style.line_color(3), dash="dash"),
                                 name=label, hovertemplate=f"{x_title} %{{x}}<br>{label}: %{{y:.4g}}<extra></extra>"),
                      secondary_y=True)
        fig.update_yaxes(title=label, secondary_y=True, rangemode="tozero", showgrid=False)
    last = rows[-1][count]
    of = f" of {n_inputs}" if n_inputs else ""
    style.apply_style(fig, title="Features kept during training",
                      subtitle=f"{int(last)}{of} features at the end · a feature is removed when its weights in "
                               "every node of every tree are zero", height=height or 360,
                      legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title=x_title, tickformat="d")
    fig.update_yaxes(title="features kept", secondary_y=False, rangemode="tozero", tickformat="d")
    fig.update_layout(meta=dict(count=[r[count] for r in rows], x=xs))
    return fig


def feature_ranking_figure(names: Sequence[str], norms: Sequence[float], used: Sequence[bool], *,
                           top: int = 40, height: int | None = None) -> go.Figure:
    """Horizontal bars of each feature's weight norm, strongest at the top; at most ``top`` bars
    (the strongest), removed features in grey with zero length."""
    norms = np.asarray(norms, dtype=np.float64)
    used = np.asarray(used, dtype=bool)
    if norms.size == 0:
        return style.message_figure("No features.", title="Selected features")
    order = sorted(range(norms.size), key=lambda j: (not used[j], -norms[j], j))[:top]
    shown = list(reversed(order))  # plotly draws the first bar at the bottom
    colors = [KEPT if used[j] else REMOVED for j in shown]
    fig = go.Figure(go.Bar(
        x=[float(norms[j]) for j in shown], y=[style.plot_text(names[j]) for j in shown], orientation="h",
        marker=dict(color=colors), customdata=[["kept" if used[j] else "removed"] for j in shown],
        hovertemplate="%{y}: %{customdata[0]}<br>weight norm %{x:.4g}<extra></extra>",
    ))
    k = int(used.sum())
    more = f" · strongest {len(order)} shown" if norms.size > len(order) else ""
    style.apply_style(fig, title="Selected features, ranked",
                      subtitle=f"{k} of {norms.size} kept · bar = the feature's weight norm over every node of every "
                               f"tree · grey = removed{more}",
                      height=height or max(320, 22 * len(order) + 120))
    fig.update_xaxes(title="weight norm", rangemode="tozero")
    fig.update_yaxes(automargin=True)
    fig.update_layout(meta=dict(order=[int(j) for j in order], kept=k))
    return fig


#: Kept pixels' colour scale: it starts at a clear light blue, so a kept pixel of small weight is
#: never drawn white (the page's background) or grey (a removed pixel).
KEPT_SCALE = [[0.0, "#B7D4EA"], [0.5, "#4A90C4"], [1.0, "#08306B"]]
#: Removed pixels: a grey cell crossed out (the legend's "removed").
REMOVED_FILL = "#E3E5E8"
REMOVED_MARK = "#6B7079"


def feature_mask_figure(norms: Sequence[float], image_shape: Sequence[int], *, height: int | None = None) -> go.Figure:
    """The feature norms as an H×W image (pixels in row-major order).

    Kept pixels are coloured by their weight norm on a scale that starts at light blue; removed
    pixels (norm exactly zero: weights zero in every node of every tree) are grey cells crossed
    out, named "removed" in the legend, so a kept pixel of low weight never looks removed. The
    first trace holds the kept norms (NaN where removed); ``layout.meta`` has ``kept``, ``shape``
    and the ``removed`` pixel indices."""
    norms = np.asarray(norms, dtype=np.float64)
    h, w = (int(v) for v in image_shape)
    if h * w != norms.size:
        raise TreevizError(f"An image of {h}×{w} pixels needs {h * w} features; this model has {norms.size}.")
    z = norms.reshape(h, w)
    removed = z == 0
    shown = np.where(removed, np.nan, z)
    top = float(np.nanmax(shown)) if (~removed).any() else 1.0
    fig = go.Figure(go.Heatmap(z=shown.tolist(), x=list(range(w)), y=list(range(h)), colorscale=KEPT_SCALE,
                               zmin=0.0, zmax=top, name="kept",
                               colorbar=dict(title=dict(text="weight norm (kept)", side="right"), thickness=14),
                               hovertemplate="row %{y}, column %{x}<br>kept · weight norm %{z:.4g}<extra></extra>"))
    rows, cols = np.nonzero(removed)
    fig.add_trace(go.Heatmap(z=np.where(removed, 1.0, np.nan).tolist(), x=list(range(w)), y=list(range(h)),
                             colorscale=[[0.0, REMOVED_FILL], [1.0, REMOVED_FILL]], showscale=False, name="removed",
                             hovertemplate="row %{y}, column %{x}<br>removed (weights zero in every tree)"
                                           "<extra></extra>"))
    fig.add_trace(go.Scatter(x=cols.tolist(), y=rows.tolist(), mode="markers", name="removed", showlegend=True,
                             marker=dict(symbol="x-thin", size=12, line=dict(width=2, color=REMOVED_MARK),
                                         color=REMOVED_MARK),
                             hoverinfo="skip"))
    k = int(np.count_nonzero(~removed))
    style.apply_style(fig, title=f"Selected pixels ({h}×{w})",
                      subtitle=f"{k} of {h * w} pixels kept · blue = kept, darker = larger weight norm · grey ✕ = "
                               "removed", height=height or 420,
                      legend=dict(orientation="h", y=-0.08))
    fig.update_xaxes(showgrid=False, zeroline=False, showticklabels=False, constrain="domain", range=[-0.5, w - 0.5],
                     **style.FRAME)
    fig.update_yaxes(showgrid=False, zeroline=False, showticklabels=False, autorange="reversed",
                     scaleanchor="x", scaleratio=1, constrain="domain", **style.FRAME)
    fig.update_layout(meta=dict(kept=k, shape=[h, w], removed=[int(j) for j in np.flatnonzero(removed.ravel())]))
    return fig


def budget_trials_figure(trials: Sequence[Mapping[str, Any]], *, budget: int, score: str, score_label: str,
                         test_score: str | None = None, chosen: int | None = None,
                         height: int | None = None) -> go.Figure:
    """Each trial of a budget search: ``score`` (and ``test_score``) against features used.

    ``trials`` are dicts with ``index``, ``n_features`` and the score keys; trials without a count
    or a score (failed fits) are left out. ``chosen`` is the index of the selected trial."""
    done = [t for t in trials if t.get("n_features") is not None and t.get(score) is not None]
    score_label = style.plot_text(score_label)
    if not done:
        return style.message_figure("No finished trial yet.", title="Budget search")
    fig = go.Figure()
    within = [t for t in done if 0 < t["n_features"] <= budget]
    outside = [t for t in done if not 0 < t["n_features"] <= budget]
    for group, name, color in ((within, "within the budget", KEPT), (outside, "over the budget", REMOVED)):
        if group:
            fig.add_trace(go.Scatter(
                x=[t["n_features"] for t in group], y=[t[score] for t in group], mode="markers", name=name,
                marker=dict(color=color, size=10, line=dict(color="white", width=1)),
                customdata=[[t["index"] + 1] for t in group],
                hovertemplate=f"trial %{{customdata[0]}}<br>%{{x}} features<br>{score_label}: %{{y:.4f}}"
                              "<extra></extra>"))
    if test_score is not None:
        tested = [t for t in done if t.get(test_score) is not None]
        fig.add_trace(go.Scatter(
            x=[t["n_features"] for t in tested], y=[t[test_score] for t in tested], mode="markers",
            name=style.plot_text(test_score.replace("_", " ")),
            marker=dict(symbol="circle-open", color=style.line_color(2), size=9),
            hovertemplate=f"%{{x}} features<br>{style.plot_text(test_score.replace('_', ' '))}: %{{y:.4f}}"
                          "<extra></extra>"))
    if chosen is not None:
        best = next((t for t in done if t["index"] == chosen), None)
        if best is not None:
            fig.add_trace(go.Scatter(x=[best["n_features"]], y=[best[score]], mode="markers", name="chosen",
                                     marker=dict(symbol="star", color=style.HIGHLIGHT, size=18,
                                                 line=dict(color=style.INK, width=1)),
                                     hovertemplate="chosen: trial " + str(chosen + 1) + "<extra></extra>"))
    fig.add_vline(x=budget, line=dict(color=style.INK, dash="dash", width=1),
                  annotation_text=f"budget {budget}", annotation_position="top right")
    style.apply_style(fig, title="Trials of the budget search",
                      subtitle=f"{len(done)} trials · {len(within)} within the budget of {budget} features · "
                               "the chosen trial has the best validation score within the budget",
                      height=height or 400, legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title="features used", rangemode="tozero", tickformat="d")
    fig.update_yaxes(title=score_label)
    fig.update_layout(meta=dict(budget=budget, chosen=chosen, n_trials=len(done)))
    return fig


def selection_comparison_figure(rows: Sequence[Mapping[str, Any]], *, metrics: Sequence[str],
                                height: int | None = None) -> go.Figure:
    """Grouped bars: one group per metric, one bar per selection method (``rows`` have ``method``,
    ``n_features`` and the metric keys)."""
    if not rows:
        return style.message_figure("Nothing to compare yet.", title="At the same budget")
    fig = go.Figure()
    labels = [style.plot_text(m.replace("_", " ")) for m in metrics]
    for i, row in enumerate(rows):
        method = style.plot_text(row["method"])
        fig.add_trace(go.Bar(x=labels, y=[row.get(m) for m in metrics], name=f"{method} ({row['n_features']})",
                             marker=dict(color=style.line_color(i)),
                             hovertemplate="%{x}: %{y:.4f}<extra>" + method + "</extra>"))
    values = [float(row[m]) for row in rows for m in metrics if row.get(m) is not None]
    low = max(0.0, min(values) - 0.05) if values else 0.0
    style.apply_style(fig, title="Selections at the same budget",
                      subtitle="each selection's model refitted on its own features · number of features in brackets",
                      height=height or 380, barmode="group", legend=dict(orientation="h", y=-0.2))
    fig.update_yaxes(range=[low, 1.0] if values and max(values) <= 1.0 else None, title="score")
    return fig
