"""The look shared by every treeviz figure: palettes, colour scales, fonts and small helpers.

* :data:`CLASS_PALETTE` — 12 colours for classes, built from the Okabe–Ito set (safe for the
  common forms of colour blindness) extended with dark colours from Paul Tol's "muted" set; class
  ``k`` always gets ``CLASS_PALETTE[k % 12]`` in every figure.
* :data:`DIVERGING` — red (negative) → white (zero) → blue (positive), ColorBrewer RdBu with a
  pure white centre. Use it with symmetric limits (``zmid=0``) so white means exactly zero.
* :data:`SEQUENTIAL` (viridis) for continuous values, :data:`ACTIVE_SCALE` for node activity (``Tree.active``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from models.ground.errors import TreevizError

CLASS_PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#332288",  # indigo
    "#882255",  # wine
    "#999933",  # olive
    "#AA4499",  # purple
    "#117733",  # dark green
)

# Curves: the class palette without yellow, which is too faint for a thin line on white.
LINE_PALETTE: tuple[str, ...] = tuple(c for c in CLASS_PALETTE if c != "#F0E442")

POSITIVE = "#2166AC"  # weights that push a sample right
NEGATIVE = "#B2182B"  # weights that push a sample left
DIVERGING: list[list[Any]] = [
    [0.0, "#67001F"],
    [0.1, "#B2182B"],
    [0.2, "#D6604D"],
    [0.3, "#F4A582"],
    [0.4, "#FDDBC7"],
    [0.5, "#FFFFFF"],
    [0.6, "#D1E5F0"],
    [0.7, "#92C5DE"],
    [0.8, "#4393C3"],
    [0.9, "#2166AC"],
    [1.0, "#053061"],
]
SEQUENTIAL = "Viridis"
ACTIVE_SCALE: list[list[Any]] = [[0.0, "#DEEBF7"], [0.5, "#6BAED6"], [1.0, "#08306B"]]

NEUTRAL = "#C9CED6"  # nodes without a colour (no data reached them)
PRUNED = "#A0A4AB"  # pruned / inactive nodes and their edges
EDGE = "#9AA3AE"
#: One sample's path (and a chosen value on a sweep): a violet no class has, far from every class
#: colour for the common colour-vision deficiencies too (tests/treeviz/test_figure_defects.py measures it).
HIGHLIGHT = "#9922FF"
INK = "#262730"  # text (Streamlit's default text colour)
FONT_FAMILY = "Inter, 'Source Sans Pro', 'Segoe UI', Helvetica, Arial, sans-serif"
FONT = dict(family=FONT_FAMILY, size=13, color=INK)
MARGIN = dict(l=40, r=30, t=70, b=40)
MARGIN_SUBPLOTS = dict(l=40, r=30, t=110, b=40)  # room for title, subtitle and panel titles
FRAME = dict(showline=True, mirror=True, linecolor="#B8BEC6", linewidth=1)  # box around images


def class_color(k: int) -> str:
    """The colour of class index ``k`` (the palette repeats after 12 classes)."""
    return CLASS_PALETTE[int(k) % len(CLASS_PALETTE)]


def line_color(i: int) -> str:
    """The colour of the ``i``-th curve."""
    return LINE_PALETTE[int(i) % len(LINE_PALETTE)]


def family_color(family: str, index: int | None = None) -> str:
    """The colour of a model family, the same on every visit and in every figure: the family's
    position in the registry's display order when given (``index``), else one picked by a checksum
    of its name (stable across processes, unlike ``hash``)."""
    if index is None:
        index = zlib.crc32(str(family).encode("utf-8"))
    return line_color(index)


def class_colors(n: int) -> list[str]:
    """Colours of classes ``0..n-1``."""
    return [class_color(k) for k in range(n)]


def rgba(color: str, alpha: float) -> str:
    """``'#RRGGBB'`` (or ``'rgb(r, g, b)'``) as an ``'rgba(r, g, b, alpha)'`` string."""
    c = color.strip()
    if c.startswith("#") and len(c) == 7:
        r, g, b = (int(c[i : i + 2], 16) for i in (1, 3, 5))
    elif c.startswith("rgb"):
        r, g, b = (int(float(v)) for v in c[c.index("(") + 1 : c.index(")")].split(",")[:3])
    else:
        raise ValueError(f"Unsupported colour {color!r}.")
    return f"rgba({r}, {g}, {b}, {alpha:g})"


def scale_colors(values: np.ndarray, scale: Any, vmin: float, vmax: float,
                 missing: str = NEUTRAL) -> list[str]:
    """Colours of ``values`` on a plotly colour scale over ``[vmin, vmax]`` (NaN -> ``missing``)."""
    values = np.asarray(values, dtype=np.float64)
    span = vmax - vmin if vmax > vmin else 1.0
    t = np.clip((values - vmin) / span, 0.0, 1.0)
    finite = np.isfinite(t)
    out = [missing] * values.size
    if finite.any():
        sampled = sample_colorscale(scale, t[finite].tolist())
        for i, col in zip(np.flatnonzero(finite).tolist(), sampled):
            out[i] = col
    return out


def symmetric_limit(values: np.ndarray) -> float:
    """``max |values|`` (1 when all are zero), for colour limits symmetric around 0."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    m = float(np.max(np.abs(finite))) if finite.size else 0.0
    return m if m > 0 else 1.0


def fmt_num(v: float, digits: int = 4) -> str:
    """A number in ``digits`` significant digits, with a proper minus sign."""
    if v is None or not np.isfinite(v):
        return "–"
    return f"{v:.{digits}g}".replace("-", "−")


def fmt_count(v: float) -> str:
    """A sample count: an integer when it is one (hard routing), else one decimal (soft)."""
    if abs(v - round(v)) < 1e-9:
        return f"{round(float(v)):,}"
    return f"{v:,.1f}"


def plot_text(value: Any) -> str:
    """A user's string (a feature, class, data set or run name, a rule that quotes one) as Plotly
    text that shows exactly that string.

    Plotly reads its HTML subset in every text it draws (titles, ticks, legends, hovers,
    annotations, Sankey labels): ``<span style=…url(…)>`` would make the browser fetch a URL,
    ``<a href=…>`` would become a live link and ``<b>`` bold. ``&``, ``<`` and ``>`` become
    entities, and ``%`` becomes ``&#37;`` so that ``%{x}`` in a name is not a hover template's
    placeholder. Line breaks become spaces (Plotly ignores them; ``<br>`` is its break). Every name a
    figure builder draws goes through this function (or :func:`class_names` /
    :func:`feature_names`, which call it); ``tests/test_contract_names.py`` checks every builder
    with a corpus of hostile names.
    """
    text = str(value)
    for raw, entity in _PLOT_ENTITIES:
        text = text.replace(raw, entity)
    return text


_PLOT_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("%", "&#37;"), ("\r\n", " "), ("\n", " "),
                  ("\r", " "))


def plot_texts(values: Iterable[Any]) -> list[str]:
    """:func:`plot_text` of each value."""
    return [plot_text(v) for v in values]


def class_names(tree: Any, names: Sequence[str] | None = None) -> list[str]:
    """Class names for the figures, as Plotly text (:func:`plot_text`): ``names`` if given, else
    the tree's ``output_names``."""
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != tree.n_outputs:
            raise TreevizError(
                f"The tree has {tree.n_outputs} classes but {len(names)} class names were given."
            )
        return plot_texts(names)
    return plot_texts(tree.output_names)


def feature_names(tree: Any) -> list[str]:
    """The tree's feature names as Plotly text (:func:`plot_text`)."""
    return plot_texts(tree.feature_names)


def class_indices(tree: Any, y: Any) -> np.ndarray:
    """Class indices ``0..K-1`` (positions in ``tree.output_names``) from ``y``.

    ``y`` may hold class labels equal to the tree's ``output_names`` (compared as strings, so the
    estimator's class order is respected even when it differs from a data set's), or class
    indices when the names are not numbers (e.g. ``("malignant", "benign")`` with ``y`` in 0/1).
    """
    y = np.asarray(y).reshape(-1)
    if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    names = list(tree.output_names)
    try:
        return tree.class_index(y)
    except TreevizError:
        if y.dtype.kind not in "iu" or all(_is_int(n) for n in names):
            raise
    if y.size and (y.min() < 0 or y.max() >= len(names)):
        raise TreevizError(f"Class indices must lie in 0..{len(names) - 1} for this tree.")
    return y.astype(np.int64)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def check_data(tree: Any, X: Any, y: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``X`` as a float array and ``y`` as class indices (classification) or floats."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, :]
    if y is None:
        return X, None
    y = class_indices(tree, y) if tree.task == "classification" else np.asarray(y, dtype=np.float64)
    if y.shape[0] != X.shape[0]:
        raise TreevizError(f"The data has {X.shape[0]} rows but {y.shape[0]} labels.")
    return X, y


def tick_number(v: float) -> str:
    """A tick label written in full: "0.002", "50", "1,000" (powers beyond 10⁶ or below 10⁻⁴ as "1e6")."""
    if v >= 1e6 or v < 1e-4:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e−").replace("e+", "e").replace("e-", "e−")
    if v >= 1:
        return f"{v:,.0f}"
    return f"{v:.{int(-np.floor(np.log10(v) + 1e-9))}f}"


def log_axis_ticks(values: Iterable[float]) -> dict[str, Any]:
    """Tick values and labels for a log axis over ``values``, in full numbers at readable steps.

    Plotly's own labels on a short log axis are bare mantissas ("5 10 2 5 100 2"). These ticks sit
    at 1-2-5 steps over a span of up to about two decades (1, 2, 3, 5, 7 within a factor of 4), at
    each power of ten up to six decades, and at every k-th power beyond; each label is the whole
    number. Returns ``{}`` (plotly's ticks) when no value is positive.
    """
    v = np.asarray([float(x) for x in values if x is not None], dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return {}
    lo, hi = float(v.min()), float(v.max())
    span = np.log10(hi / lo)
    if span <= 0.6:
        steps, every = (1, 2, 3, 5, 7), 1
    elif span <= 2.3:
        steps, every = (1, 2, 5), 1
    else:
        steps, every = (1,), max(1, int(np.ceil(span / 6)))
    first, last = int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1
    ticks = [float(f"{m}e{e}") for e in range(first, last + 1) if e % every == 0 for m in steps]
    # keep one tick beyond each end (the axis pads its range a little), drop the rest
    below = [t for t in ticks if t < lo]
    above = [t for t in ticks if t > hi]
    ticks = below[-1:] + [t for t in ticks if lo <= t <= hi] + above[:1]
    return dict(tickmode="array", tickvals=ticks, ticktext=[tick_number(t) for t in ticks])


def apply_style(fig: go.Figure, *, title: str | None = None, subtitle: str | None = None,
                height: int | None = None, **layout: Any) -> go.Figure:
    """Apply the shared template, fonts, margins and hover style to ``fig`` (in place)."""
    ttl: dict[str, Any] = dict(x=0.01, xanchor="left", font=dict(size=16))
    if title is not None:
        ttl["text"] = title
    if subtitle:
        ttl["subtitle"] = dict(text=subtitle, font=dict(size=12, color="#5F6670"))
    fig.update_layout(
        template="plotly_white",
        font=FONT,
        title=ttl,
        margin=MARGIN,
        hoverlabel=dict(bgcolor="white", bordercolor="#D0D4DA", font=dict(family=FONT_FAMILY, size=12,
                                                                         color=INK), align="left"),
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    if height is not None:
        fig.update_layout(height=int(height))
    if layout:
        fig.update_layout(**layout)
    return fig


def message_figure(message: str, *, title: str | None = None, height: int = 320) -> go.Figure:
    """An empty figure that says ``message`` in its middle (e.g. "no training history")."""
    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=15, color="#5F6670"))
    apply_style(fig, title=title, height=height)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def check_node(tree: Any, node: int, *, decision: bool = False) -> int:
    """``node`` as an int, checked to exist (and to be a decision node when asked)."""
    node = int(node)
    if not 0 <= node < tree.n_nodes:
        raise TreevizError(f"Node {node} does not exist; the tree has nodes 0..{tree.n_nodes - 1}.")
    if decision and tree.is_leaf[node]:
        raise TreevizError(f"Node {node} is a leaf and has no split weights; pick a decision node.")
    return node
