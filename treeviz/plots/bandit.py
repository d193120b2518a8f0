"""Learning from bandit feedback: curves against the number of loss queries, each method's mean
across seeds with its 95% confidence band, and the fully supervised tree as a reference line.

The figures read plain numbers: a list of *bands*, one per method, each a dict with ``method``,
``queries``, ``mean``, ``low``, ``high`` (and optionally ``n``, the seeds at each point), and an
optional *reference* dict with ``method``, ``mean``, ``low``, ``high`` and ``n``
(see :func:`treeviz.services.views.bandit.curve_bands` and :func:`treeviz.services.views.bandit.reference_band`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from treeviz.plots import style

REFERENCE_COLOR = "#5F6670"
BAND_ALPHA = 0.18


def _band_traces(fig: go.Figure, band: Mapping[str, Any], color: str, y_title: str, main: bool) -> None:
    x = [int(q) for q in band["queries"]]
    mean = [float(v) for v in band["mean"]]
    low = [float(v) for v in band["low"]]
    high = [float(v) for v in band["high"]]
    n = [int(v) for v in band.get("n", [1] * len(x))]
    name = style.plot_text(band["method"])
    if any(h > lo for h, lo in zip(high, low)):
        fig.add_trace(go.Scatter(x=x + x[::-1], y=high + low[::-1], fill="toself", mode="lines",
                                 line=dict(width=0), fillcolor=style.rgba(color, BAND_ALPHA), hoverinfo="skip",
                                 showlegend=False, legendgroup=name, name=f"{name} 95% CI"))
    fig.add_trace(go.Scatter(
        x=x, y=mean, mode="lines", name=name, legendgroup=name, line=dict(color=color, width=2.5 if main else 1.8),
        customdata=[[lo, h, k] for lo, h, k in zip(low, high, n)],
        hovertemplate=f"{name}<br>%{{x:,}} loss queries<br>{y_title} %{{y:.4g}} "
                      "(95% CI %{customdata[0]:.4g} to %{customdata[1]:.4g}, %{customdata[2]} seed(s))<extra></extra>"))


def _reference_traces(fig: go.Figure, reference: Mapping[str, Any], x_range: tuple[int, int], y_title: str) -> None:
    mean, low, high = float(reference["mean"]), float(reference["low"]), float(reference["high"])
    method = style.plot_text(reference["method"])
    name = f"{method} ({style.fmt_num(mean)})"
    x0, x1 = x_range
    if high > low:
        fig.add_trace(go.Scatter(x=[x0, x1, x1, x0], y=[high, high, low, low], fill="toself", mode="lines",
                                 line=dict(width=0), fillcolor=style.rgba(REFERENCE_COLOR, 0.12), hoverinfo="skip",
                                 showlegend=False, legendgroup="reference", name="reference 95% CI"))
    fig.add_trace(go.Scatter(x=[x0, x1], y=[mean, mean], mode="lines", name=name, legendgroup="reference",
                             line=dict(color=REFERENCE_COLOR, width=1.8, dash="dash"),
                             hovertemplate=f"{method}<br>{y_title} {mean:.4g} "
                                           f"(95% CI {low:.4g} to {high:.4g}, {int(reference.get('n', 1))} seed(s))"
                                           "<extra></extra>"))


def bandit_curve_figure(bands: Sequence[Mapping[str, Any]], *, y_title: str, title: str,
                        subtitle: str | None = None, reference: Mapping[str, Any] | None = None,
                        zero_line: bool = False, kind: str = "curve", height: int = 400) -> go.Figure:
    """Each band's mean against the loss queries with its 95% confidence band (drawn when the
    interval has width), the ``reference`` as a dashed horizontal line with its own band, and,
    with ``zero_line``, the line y = 0. The layout's ``meta`` holds ``bandit`` (= ``kind``),
    ``methods`` and ``reference`` (its mean, or None), for tests and exports."""
    drawn = [b for b in bands if len(b.get("queries", ())) > 0]
    title, y_title = style.plot_text(title), style.plot_text(y_title)
    subtitle = style.plot_text(subtitle) if subtitle else subtitle
    if not drawn:
        return style.message_figure("No rounds recorded yet.", title=title)
    fig = go.Figure()
    for i, band in enumerate(drawn):
        _band_traces(fig, band, style.line_color(i), y_title, i == 0)
    x_all = [int(q) for b in drawn for q in b["queries"]]
    x_range = (0, max(x_all))
    if reference is not None:
        _reference_traces(fig, reference, x_range, y_title)
    if zero_line:
        fig.add_hline(y=0.0, line=dict(color="#B8BEC6", width=1))
    seeds = max((max(b.get("n", [1])) for b in drawn), default=1)
    note = f"mean over {seeds} seeds, 95% confidence band" if seeds > 1 else "one seed"
    style.apply_style(fig, title=title, subtitle=" · ".join(t for t in (subtitle, note) if t), height=height,
                      meta={"bandit": kind, "methods": [str(b["method"]) for b in drawn],
                            "reference": None if reference is None else float(reference["mean"])},
                      legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0.0))
    fig.update_xaxes(title="loss queries", rangemode="tozero", separatethousands=True)
    fig.update_yaxes(title=y_title)
    return fig


def bandit_score_figure(bands: Sequence[Mapping[str, Any]], *, task: str,
                        reference: Mapping[str, Any] | None = None) -> go.Figure:
    """Held-out accuracy (classification) or RMSE (regression) against the loss queries, with the
    fully supervised tree's score as the reference line (the paper's Figs. 2 and 3)."""
    y_title = "held-out accuracy" if task == "classification" else "held-out RMSE"
    fig = bandit_curve_figure(bands, y_title=y_title, title=f"{y_title[0].upper()}{y_title[1:]} against loss queries",
                              reference=reference, kind="score")
    if task == "classification" and bands:
        fig.update_yaxes(rangemode="tozero")
    return fig


def bandit_reward_figure(bands: Sequence[Mapping[str, Any]], *, task: str) -> go.Figure:
    """The running average reward (classification: the share of rounds whose played label was
    right) or the running average loss played (regression), exploration included."""
    if task == "classification":
        return bandit_curve_figure(bands, y_title="average reward", kind="reward",
                                   title="Running average reward (exploration included)")
    return bandit_curve_figure(bands, y_title="average loss played", kind="reward",
                               title="Running average loss of the values played")


def bandit_regret_figure(bands: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Average regret against the supervised tree: the mean loss incurred so far minus the
    supervised tree's mean loss on the same rounds."""
    return bandit_curve_figure(bands, y_title="average regret", kind="regret", zero_line=True,
                               title="Regret against the fully supervised tree",
                               subtitle="mean loss incurred minus the supervised tree's on the same rounds")
