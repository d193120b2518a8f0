"""How one decision node splits the rows that reach it: the distribution of the node's score by class,
with the threshold between the two sides.

The score is ``w·x + b`` for an oblique node (threshold 0: a row goes right iff its score is above 0)
or the feature's value for an axis-aligned one (its threshold). The bins are laid from the threshold,
closed on the right, so every bar lies wholly on one side of the line. A regression tree's rows are
drawn as their target against the score instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

from models.ground.tree import Tree
from treeviz.plots import style

#: The most bins of a histogram.
MAX_BINS = 40


def threshold_bins(score: np.ndarray, threshold: float, max_bins: int = MAX_BINS) -> tuple[np.ndarray, float]:
    """The bin of each finite score, and the bins' width: bin ``k`` is
    ``(threshold + k·width, threshold + (k + 1)·width]``, so bins ``k ≥ 0`` lie above the threshold
    and bins ``k < 0`` at or below it."""
    finite = score[np.isfinite(score)]
    if finite.size == 0:
        return np.zeros(0, dtype=np.int64), 1.0
    lo, hi = min(float(finite.min()), threshold), max(float(finite.max()), threshold)
    n_bins = int(min(max_bins, max(5, math.ceil(math.sqrt(finite.size)))))
    width = (hi - lo) / n_bins if hi > lo else 1.0
    return np.ceil((finite - threshold) / width).astype(np.int64) - 1, width


def split_histogram(tree: Tree, node: int, score: Any, y: Any = None, *, threshold: float = 0.0,
                    right_above: bool = True, right: Any = None, label: str = "w·x + b",
                    part: str = "train", soft: bool = False, height: int = 380) -> go.Figure:
    """The rows reaching decision ``node`` of ``tree`` on the node's score axis.

    Parameters
    ----------
    tree : Tree
        The tree (its task and class names; ``node`` names the title).
    node : int
        The decision node.
    score : array (n,)
        Each reaching row's score (NaN for a missing value, left out of the bars and counted in the
        subtitle).
    y : array (n,), optional
        Class indices into ``tree.output_names`` (classification) or targets (regression); without
        it the bars are split by side.
    threshold, right_above : float, bool
        The threshold, and whether rows above it go right.
    right : array of bool (n,), optional
        The side each row went to, from the tree's routing (missing values included), for the
        counts in the subtitle; without it the sides are read from the scores.
    label : str
        The score axis's title (a feature name, or ``w·x + b``).
    part : str
        The split the rows come from, for the title.
    soft : bool
        The tree routes softly: rows are counted on their most probable path (said in the subtitle).
    """
    node = style.check_node(tree, node, decision=True)
    score = np.asarray(score, dtype=np.float64).reshape(-1)
    fig = go.Figure()
    n_missing = int(np.isnan(score).sum())
    if right is None:
        above = int((score > threshold).sum())
        below = int(score.size - n_missing - above)
        n_right, n_left = (above, below) if right_above else (below, above)
    else:
        n_right = int(np.asarray(right, dtype=bool).sum())
        n_left = int(score.size - n_right)
    if tree.task == "regression" and y is not None:
        _target_scatter(fig, score, np.asarray(y, dtype=np.float64).reshape(-1), threshold, right_above, label)
        y_title = "target"
    else:
        _bars(fig, tree, score, None if y is None else np.asarray(y), threshold, right_above, label)
        y_title = f"{style.plot_text(part)} rows"
    what = "target against " if tree.task == "regression" and y is not None else ""
    subtitle = (f"{score.size} {style.plot_text(part)} rows reach node {node}: {n_left} go left, {n_right} go right"
                f" · {what}{style.plot_text(label)}")
    if n_missing:
        subtitle += f" · {n_missing} with a missing value (not drawn)"
    if soft:
        subtitle += " · soft routing: each row counted on its most probable path"
    fig.add_vline(x=threshold, line=dict(color=style.INK, width=2, dash="dash"))
    left_arrow, right_arrow = ("← left", "right →") if right_above else ("← right", "left →")
    for text, anchor in ((left_arrow, "right"), (right_arrow, "left")):
        fig.add_annotation(x=threshold, y=1.0, xref="x", yref="paper", yanchor="bottom", xanchor=anchor,
                           text=f" {text} ", showarrow=False, font=dict(size=12, color="#5F6670"))
    style.apply_style(fig, title=f"Node {node}: how it splits the {style.plot_text(part)} rows",
                      subtitle=subtitle, height=height, barmode="stack", bargap=0.05,
                      margin=dict(style.MARGIN, t=95),
                      xaxis_title=f"{style.plot_text(label)} (threshold {style.fmt_num(threshold)})",
                      yaxis_title=y_title,
                      legend=dict(title=dict(text="class" if y is not None else ""), traceorder="normal"))
    return fig


def _bars(fig: go.Figure, tree: Tree, score: np.ndarray, y: np.ndarray | None, threshold: float,
          right_above: bool, label: str) -> None:
    """Stacked bars per class (or per side without classes), bins laid from the threshold."""
    finite = np.isfinite(score)
    bins, width = threshold_bins(score, threshold)
    if y is not None and tree.task == "classification":
        y_finite = y[finite].astype(np.int64)
        names = style.class_names(tree)
        groups = [(names[k] if k < len(names) else str(k), style.class_color(k), y_finite == k)
                  for k in np.unique(y_finite)]
    else:
        up = bins >= 0
        groups = [("went right", style.POSITIVE, up if right_above else ~up),
                  ("went left", style.NEGATIVE, ~up if right_above else up)]
    name = style.plot_text(label)
    for group, color, mask in groups:
        ks, counts = np.unique(bins[mask], return_counts=True)
        lo = threshold + ks * width
        fig.add_trace(go.Bar(
            x=(lo + width / 2).tolist(), y=counts.tolist(), width=width, name=group,
            marker=dict(color=color, line=dict(width=0)),
            customdata=np.column_stack([lo, lo + width]).tolist(),
            hovertemplate=f"{group}: %{{y}} rows<br>{name} in (%{{customdata[0]:.4g}}, "
                          "%{customdata[1]:.4g}]<extra></extra>"))


def _target_scatter(fig: go.Figure, score: np.ndarray, y: np.ndarray, threshold: float, right_above: bool,
                    label: str) -> None:
    """A regression node's rows: target against score, coloured by the side they go to."""
    up = score > threshold
    right = up if right_above else ~up
    name = style.plot_text(label)
    for group, color, mask in (("went left", style.NEGATIVE, ~right), ("went right", style.POSITIVE, right)):
        mask = mask & np.isfinite(score)
        fig.add_trace(go.Scattergl(
            x=score[mask].tolist(), y=y[mask].tolist(), mode="markers", name=group,
            marker=dict(color=color, size=6, opacity=0.7),
            hovertemplate=f"{group}<br>{name}: %{{x:.4g}}<br>target: %{{y:.4g}}<extra></extra>"))
