"""Runs of several families on one data set: score against model size, with the Pareto front."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from treeviz.plots import style

#: Plotly's codes of the two marker symbols (``marker.symbol`` takes a name or its number).
CIRCLE, STAR = 0, 17


def _bytes(values: Sequence[int]) -> dict[str, str]:
    """Small whole numbers (0-255) as Plotly's typed-array form (``dtype`` and base64 ``bdata``),
    which Plotly takes without checking each value: a list of 5 000 marker symbols was checked
    one by one, twice per draw (when built, and again by ``st.plotly_chart``), about 0.1 s."""
    return {"dtype": "u1", "bdata": base64.b64encode(np.asarray(values, dtype=np.uint8).tobytes()).decode("ascii")}


def pareto_figure(points: Sequence[Mapping[str, Any]], *, size_label: str, score_label: str,
                  higher_is_better: bool = True, log_x: bool = True) -> go.Figure:
    """Each run as a point (``size``, ``score``), one colour per ``family`` (its ``family_index``, the
    registry's order, when the points carry one: see :func:`treeviz.plots.style.family_color`, so a
    family keeps its colour whichever runs are shown), hover ``name``; the
    points with ``front`` True joined by the Pareto front's staircase (the best score reachable at
    each size). Runs without a size or a score are left out and counted in the subtitle."""
    size_label, score_label = style.plot_text(size_label), style.plot_text(score_label)
    title = f"{score_label} against {size_label}"
    usable = [p for p in points if p.get("size") is not None and p.get("score") is not None]
    if not usable:
        return style.message_figure("No run has both numbers yet.", title=title)
    families = list(dict.fromkeys(str(p["family"]) for p in usable))
    fig = go.Figure()
    front = sorted((p for p in usable if p.get("front")), key=lambda p: float(p["size"]))
    if front:
        xs, ys = [], []
        for p in front:  # a staircase: the score holds until the next, larger model improves it
            if xs:
                xs.append(float(p["size"]))
                ys.append(ys[-1])
            xs.append(float(p["size"]))
            ys.append(float(p["score"]))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="Pareto front", hoverinfo="skip",
                                 line=dict(color=style.EDGE, width=2, dash="dot")))
    for family in families:
        mine = [p for p in usable if str(p["family"]) == family]
        color = style.family_color(family, mine[0].get("family_index"))
        shown = style.plot_text(family)
        fig.add_trace(go.Scatter(
            x=[float(p["size"]) for p in mine], y=[float(p["score"]) for p in mine], mode="markers", name=shown,
            text=style.plot_texts(p["name"] for p in mine),
            marker=dict(color=color, size=_bytes([13 if p.get("front") else 9 for p in mine]),
                        symbol=_bytes([STAR if p.get("front") else CIRCLE for p in mine]),
                        line=dict(width=1, color="white")),
            hovertemplate=f"%{{text}}<br>{size_label} %{{x:,.4g}}<br>{score_label} %{{y:.4g}}<extra>{shown}</extra>"))
    left_out = len(points) - len(usable)
    sizes = np.array([float(p["size"]) for p in usable])
    subtitle = (f"{len(usable)} runs · stars: on the Pareto front ({'higher' if higher_is_better else 'lower'} "
                "is better, smaller is simpler)" + (f" · {left_out} without both numbers left out" if left_out else ""))
    style.apply_style(fig, title=title, subtitle=subtitle, height=420,
                      meta={"front": [str(p["name"]) for p in front], "families": families})
    log = log_x and bool((sizes > 0).all())
    fig.update_xaxes(title=size_label, type="log" if log else "linear", **(style.log_axis_ticks(sizes) if log else {}))
    fig.update_yaxes(title=score_label)
    return fig


#: The colour of a reference line (a black-box ceiling): no family has it.
REFERENCE_COLOR = "#555B66"


def add_reference_line(fig: go.Figure, score: float, label: str) -> go.Figure:
    """``fig`` (a :func:`pareto_figure`) with a horizontal dashed line at ``score`` named ``label``: a
    reference model that is not a tree (a black-box ceiling), so it has no size and no point. The
    line is a layout shape named ``"reference"``, written at the right end, and ``layout.meta``
    gains ``reference`` (label and score). Changes ``fig`` and returns it."""
    text = style.plot_text(label)
    fig.add_hline(y=float(score), line=dict(color=REFERENCE_COLOR, width=1.5, dash="dash"), name="reference",
                  annotation=dict(text=f"{text}: {float(score):.4g}", font=dict(size=11, color=REFERENCE_COLOR)),
                  annotation_position="top right")
    meta = dict(fig.layout.meta or {})
    meta["reference"] = {"label": str(label), "score": float(score)}
    fig.update_layout(meta=meta)
    return fig
